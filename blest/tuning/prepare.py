"""Preparation: the ordering (looked up by name), the reordered graph and its BVSS per sigma.

Orderings come from :mod:`blest.graph.ordering`: ``compute_ordering(graph, name, **kw)`` when it
offers one, else the names this module knows (natural, rcm). The default follows the paper
(scale-free-like → JaccardWithWindows with W = 2^16, else RCM) through
:mod:`blest.graph.classify` when present; every fallback is returned as a note.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from blest.errors import BlestError
from blest.graph import ordering as _ordering
from blest.graph.bvss import BVSS, build_bvss
from blest.graph.core import Graph
from blest.graph.ordering import Permutation, permute_graph

__all__ = [
    "JACCARD_W",
    "OrderingUnavailable",
    "available_orderings",
    "compute_ordering",
    "default_ordering",
    "Preparation",
    "prepare",
]

JACCARD_W = 1 << 16


class OrderingUnavailable(BlestError):
    """An ordering that this installation (or this machine) cannot compute."""


def available_orderings() -> tuple[str, ...]:
    """Ordering names :mod:`blest.graph.ordering` offers (natural and rcm at least)."""
    names = tuple(getattr(_ordering, "ORDERINGS", ("natural", "rcm")))
    return names if "natural" in names else ("natural", *names)


def ordering_kwargs(name: str, sigma: int = 8) -> dict[str, Any]:
    """Parameters recorded with an ordering (W and sigma for JaccardWithWindows)."""
    return {"W": JACCARD_W, "sigma": sigma} if name == "jaccard" else {}


def compute_ordering(graph: Graph, name: str, **kw: Any) -> Permutation:
    """The permutation of ordering ``name``; :class:`OrderingUnavailable` when it cannot run.

    The result's ``name`` is the ordering actually computed (a fallback may differ) and its
    ``notes`` (when the ordering module gives them) say why; fallback warnings are not shown.
    """
    if name not in available_orderings():
        known = ", ".join(available_orderings())
        raise OrderingUnavailable(f"ordering {name!r} is not available in this blest ({known})")
    fn = getattr(_ordering, "compute_ordering", None)
    if fn is None:
        return _ordering.identity(graph.n) if name == "natural" else _ordering.rcm(graph)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # fallbacks are reported through Permutation.notes
            return fn(graph, name, **kw)
    except (ImportError, RuntimeError, BlestError) as exc:
        raise OrderingUnavailable(f"ordering {name!r} is unavailable here ({exc})") from exc


def default_ordering(graph: Graph) -> tuple[str, list[str]]:
    """The paper's default ordering for ``graph`` and any notes on how it was decided."""
    try:
        from blest.graph import classify  # type: ignore[attr-defined]
    except ImportError:
        return "rcm", ["scale-free classification is not available in this blest: used RCM"]
    rule = getattr(classify, "default_ordering", None)
    if rule is not None:
        return str(rule(graph)), []
    test = getattr(classify, "is_scale_free_like", None)
    if test is not None:
        return ("jaccard" if bool(test(graph)) else "rcm"), []
    return "rcm", ["scale-free classification is not available in this blest: used RCM"]


@dataclass
class Preparation:
    """One ordering of a graph: permutation, reordered graph, BVSS built on demand per sigma."""

    graph: Graph
    ordering: str
    permutation: Permutation
    internal: Graph
    params: dict[str, Any] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    _bvss: dict[tuple[int, str], BVSS] = field(default_factory=dict, repr=False)

    def bvss(self, sigma: int, xp: Any = None) -> BVSS:
        """BVSS of the reordered graph at ``sigma`` (NumPy, or ``xp=cupy`` on the GPU); cached."""
        key = (sigma, "numpy" if xp is None or xp is np else "device")
        if key not in self._bvss:
            t0 = time.perf_counter()
            self._bvss[key] = build_bvss(self.internal, sigma, xp=xp)
            if xp is not None and xp is not np:
                xp.cuda.Device().synchronize()
            self.seconds[f"bvss_sigma{sigma}"] = time.perf_counter() - t0
        return self._bvss[key]

    def host_bvss(self, sigma: int) -> BVSS:
        """NumPy BVSS at ``sigma``: the device one copied back when it was built there."""
        dev = self._bvss.get((sigma, "device"))
        return dev.to_numpy() if dev is not None else self.bvss(sigma)

    def release_device(self) -> None:
        for key in [k for k in self._bvss if k[1] == "device"]:
            del self._bvss[key]


def prepare(graph: Graph, ordering: str, sigma: int = 8) -> Preparation:
    """Compute ``ordering`` (for slice width ``sigma`` where it matters) and the reordered
    graph, timed; BVSS is built on demand. ``Preparation.ordering`` is the ordering actually
    computed and ``notes`` say why when it differs."""
    t0 = time.perf_counter()
    kw = ordering_kwargs(ordering, sigma)
    perm = compute_ordering(graph, ordering, **kw)
    t1 = time.perf_counter()
    internal = graph if perm.is_identity else permute_graph(graph, perm)
    t2 = time.perf_counter()
    actual = perm.name if perm.name in available_orderings() else ordering
    notes = [str(n) for n in getattr(perm, "notes", ())]
    if actual != ordering and not notes:
        notes.append(f"ordering {ordering!r} gave {actual!r}")
    return Preparation(
        graph=graph,
        ordering=actual,
        permutation=perm,
        internal=internal,
        params=kw if actual == ordering else {},
        seconds={"ordering": t1 - t0, "permute": t2 - t1},
        notes=notes,
    )


def prepare_with_fallback(
    graph: Graph, ordering: str, sigma: int = 8, fallbacks: tuple[str, ...] = ("rcm", "natural")
) -> tuple[Preparation, list[str]]:
    """:func:`prepare`, falling back along ``fallbacks`` when an ordering is unavailable;
    the notes say what was replaced and why."""
    failures: list[str] = []
    for name in (ordering, *[f for f in fallbacks if f != ordering]):
        try:
            prep = prepare(graph, name, sigma)
        except OrderingUnavailable as exc:
            failures.append(str(exc))
            continue
        notes = [f"{'; '.join(failures)}: used {name} instead"] if failures else []
        return prep, notes + prep.notes
    raise OrderingUnavailable(f"no ordering could be computed ({'; '.join(failures)})")
