"""Preparation for tuning: an ordering (by name), the reordered graph and its BVSS per sigma.

The default ordering follows the paper: scale-free-like graphs get JaccardWithWindows
(W = 2^16), others RCM (:func:`blest.graph.classify.default_ordering`). An ordering that cannot
run here (JaccardWithWindows without a GPU and without Numba) is replaced, and the notes say so.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from blest.defaults import JACCARD_WINDOW
from blest.errors import BlestError
from blest.graph.bvss import BVSS, build_bvss
from blest.graph.classify import default_ordering
from blest.graph.core import Graph
from blest.graph.ordering import ORDERINGS, Permutation, permute_graph
from blest.graph.prepared import Prepared
from blest.runtime.device_ordering import device_ordering
from blest.tuning.config import GraphInfo, PreparationInfo

__all__ = [
    "OrderingUnavailable",
    "available_orderings",
    "default_ordering",
    "graph_info",
    "ordering_kwargs",
    "Preparation",
    "prepare",
    "preparation_info",
    "prepare_with_fallback",
    "upload_all",
]


class OrderingUnavailable(BlestError):
    """An ordering that this installation (or this machine) cannot compute."""


def available_orderings() -> tuple[str, ...]:
    """Ordering names blest offers."""
    return ORDERINGS


def ordering_kwargs(name: str, sigma: int) -> dict[str, Any]:
    """Parameters recorded with an ordering (W and sigma for JaccardWithWindows)."""
    return {"W": JACCARD_WINDOW, "sigma": sigma} if name == "jaccard" else {}


def _ordering(graph: Graph, name: str, **kw: Any) -> Permutation:
    """The permutation of ordering ``name``; :class:`OrderingUnavailable` when it cannot run.

    The result's ``name`` is the ordering actually computed (a fallback may differ) and its
    ``notes`` say why; fallback warnings are not shown.
    """
    if name not in ORDERINGS:
        raise OrderingUnavailable(f"unknown ordering {name!r} (available: {', '.join(ORDERINGS)})")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # fallbacks are reported through Permutation.notes
            return device_ordering(graph, name, **kw)
    except (ImportError, RuntimeError, BlestError) as exc:
        raise OrderingUnavailable(f"ordering {name!r} is unavailable here ({exc})") from exc


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
    # B's BVSSs (hops > 1) by (sigma, where), shared by every Prepared made here, as _bvss is
    _hops: dict[tuple[int, str], dict] = field(default_factory=dict, repr=False)
    _device_in_csr: tuple[Any, Any] | None = field(default=None, repr=False)

    def bvss(self, sigma: int, xp: Any = None) -> BVSS:
        """BVSS of the reordered graph at ``sigma`` (NumPy, or ``xp=cupy`` on the GPU); cached."""
        key = (sigma, "numpy" if xp is None or xp is np else "device")
        if key not in self._bvss:
            t0 = time.perf_counter()
            self._bvss[key] = build_bvss(self.internal, sigma, xp=xp)
            if key[1] == "device":
                xp.cuda.Device().synchronize()
            self.seconds[f"bvss_sigma{sigma}"] = time.perf_counter() - t0
        return self._bvss[key]

    def host_bvss(self, sigma: int) -> BVSS:
        """NumPy BVSS at ``sigma``: the device one copied back when it was built there."""
        dev = self._bvss.get((sigma, "device"))
        return dev.to_numpy() if dev is not None else self.bvss(sigma)

    def prepared(self, sigma: int, xp: Any = None) -> Prepared:
        """The :class:`Prepared` graph at ``sigma``; with ``xp=cupy``, its BVSS and in-CSR on
        the GPU, uploaded once and shared by every engine made from it (an engine would
        otherwise copy the in-CSR of a switching variant from the host: 60 ms of each of the
        tuner's candidates on urand-22)."""
        g = self.internal
        in_ptr, in_idx = g.in_ptr, g.in_idx
        if xp is None:
            bvss = self.host_bvss(sigma)
        else:
            bvss = self.bvss(sigma, xp)
            if xp is not np:
                if self._device_in_csr is None:
                    self._device_in_csr = (
                        xp.asarray(in_ptr, xp.int64),
                        xp.asarray(in_idx, xp.int32),
                    )
                in_ptr, in_idx = self._device_in_csr
        where = "host" if xp is None or xp is np else "device"
        hop_cache = self._hops.setdefault((sigma, where), {})
        return Prepared(self.graph, self.ordering, self.permutation, in_ptr, in_idx, bvss,
                        hop_cache)  # fmt: skip

    def release_device(self) -> None:
        for key in [k for k in self._bvss if k[1] == "device"]:
            del self._bvss[key]
        for key in [k for k in self._hops if k[1] == "device"]:
            del self._hops[key]
        self._device_in_csr = None


def prepare(graph: Graph, ordering: str, sigma: int) -> Preparation:
    """Compute ``ordering`` (for slice width ``sigma`` where it matters) and the reordered
    graph, timed; BVSS is built on demand. ``Preparation.ordering`` is the ordering actually
    computed and ``notes`` say why when it differs."""
    t0 = time.perf_counter()
    kw = ordering_kwargs(ordering, sigma)
    perm = _ordering(graph, ordering, **kw)
    t1 = time.perf_counter()
    internal = graph if perm.is_identity else permute_graph(graph, perm)
    t2 = time.perf_counter()
    actual = perm.name if perm.name in ORDERINGS else ordering
    notes = [str(n) for n in perm.notes]
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
    graph: Graph, ordering: str, sigma: int, fallbacks: tuple[str, ...] = ("rcm", "natural")
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


def upload_all(
    preps: dict[str, Preparation],
    sigmas: tuple[int, ...],
    xp: Any,
    notes: list[str],
    progress: Callable[[str], None],
    hops: dict[str, list[tuple[int, int]]] | None = None,
) -> None:
    """Every (ordering, sigma)'s BVSS and every ordering's in-CSR on the GPU before the search,
    so that the budget times candidates instead of building what they share (on urand-22, 11
    BVSS builds of 0.36 s took 4 of the screen's 10 s at budget 20); ``hops``: the (hops, sigma)
    pairs, by ordering, whose B = A + ... + A^hops is built too (delaunay-20: ~2 s each, which
    cost a budget-20 search its confirmation). Where the GPU runs out of memory, the rest is left to
    the search, which builds on demand and records candidates that cannot run."""
    for name, prep in preps.items():
        for sigma in sigmas:
            progress(f"BVSS {name} sigma={sigma}")
            try:
                prepared = prep.prepared(sigma, xp=xp)
                for k, at in (hops or {}).get(name, ()):
                    if at == sigma:
                        progress(f"B = A + .. + A^{k} {name} sigma={sigma}")
                        prepared.hops_bvss(k)
            except (MemoryError, xp.cuda.memory.OutOfMemoryError) as exc:
                notes.append(f"BVSS built on demand during the search ({_first_line(exc)})")
                return


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0][:200]


def graph_info(graph: Graph, source: str | None) -> GraphInfo:
    """The config's record of the cleaned graph (every workload's tuner writes one)."""
    return GraphInfo(
        hash=graph.content_hash(),
        n=graph.n,
        arcs=graph.nnz,
        directed=graph.directed,
        isolated=graph.isolated,
        source=source,
        self_loops_dropped=graph.report.self_loops,
        duplicates_dropped=graph.report.duplicates,
    )


def preparation_info(
    prep: Preparation, sigma: int, u_div8: float, default: str, all_seconds: dict[str, Any]
) -> PreparationInfo:
    """The config's record of the preparation at ``sigma`` (every workload's tuner writes one)."""
    st = prep.host_bvss(sigma).stats()
    return PreparationInfo(
        ordering=prep.ordering,
        W=prep.params.get("W"),
        sigma=sigma,
        default_ordering=default,
        u_div_sigma8=u_div8,
        u_div=st.u_div,
        compression_ratio=st.compression_ratio,
        n_vss=st.n_vss,
        real_slices=st.real_slices,
        bvss_bytes=st.gpu_bytes,
        seconds=all_seconds,
    )
