"""The memory guard: refuse a graph before allocating arrays it could not hold.

Two checks run before the per-vertex arrays are built:

- **bytes**: :func:`blest.graph.core.build_nbytes` of the vertex count and arc count must not
  exceed a limit: ``max_bytes`` when given, else the environment variable
  ``BLEST_MAX_GRAPH_BYTES`` (a byte count such as ``8000000000`` or ``8G``, or ``inf``), else
  what this process may still allocate (:mod:`blest.graph.io.memory`: the smallest of
  ``MemAvailable``, the ``ulimit -v`` / ``ulimit -d`` headroom and the control group's
  memory limit less its use).
- **sparse ids**: when the vertex count comes from the largest id, a graph with more than
  ``64 * (2 * records) + 1_000_000`` vertices for ``records`` arcs is mostly isolated vertices
  (a typo, or ids that are hashes or timestamps); it is refused with a hint to pass
  ``relabel=True``. An explicit limit (``max_bytes`` or the environment variable) turns this
  check off and leaves only the byte limit.

The same limit caps the bytes a compressed file may expand to (:func:`content_cap`): text that
decompresses to more than the limit cannot make a graph that fits in it.

A malformed ``BLEST_MAX_GRAPH_BYTES`` or a ``max_bytes`` that is not a positive number is an
:class:`~blest.errors.ArgumentError` naming it.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass

from blest.errors import ArgumentError, GraphLimitError
from blest.graph.core import build_nbytes
from blest.graph.io.memory import available_memory

__all__ = [
    "ENV_MAX_BYTES",
    "check_graph_size",
    "check_max_bytes",
    "content_cap",
    "human_bytes",
    "memory_limit",
    "refuse_content",
]

ENV_MAX_BYTES = "BLEST_MAX_GRAPH_BYTES"
_SPARSE_FACTOR = 64
_SPARSE_SLACK = 1_000_000
_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40, "p": 2**50}
_SIZE = re.compile(r"\s*(\d+(?:\.\d*)?)\s*([kmgtp]?)(?:i?b)?\s*", re.IGNORECASE)


@dataclass(frozen=True)
class Limit:
    """A byte limit (None: none) and where it came from."""

    nbytes: float | None
    origin: str
    explicit: bool


def human_bytes(count: float) -> str:
    """``count`` bytes in binary units, e.g. ``'1.2 GiB'``."""
    value, unit = float(count), "bytes"
    for name in ("KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1024:
            break
        value, unit = value / 1024, name
    return f"{int(value)} bytes" if unit == "bytes" else f"{value:.1f} {unit}"


def _parse_size(text: str) -> float:
    if text.strip().lower() in ("inf", "none", "unlimited"):
        return math.inf
    found = _SIZE.fullmatch(text)
    if not found or not 0 < float(found.group(1)) < math.inf:
        raise ArgumentError(
            f"the environment variable {ENV_MAX_BYTES}={text!r} is not a positive byte count "
            "(e.g. 8000000000, 8G, or inf for no limit)"
        )
    return float(found.group(1)) * _UNITS[found.group(2).lower()]


def check_max_bytes(max_bytes: object) -> float | None:
    """``max_bytes`` as given to a loader: None, or a positive number (``math.inf``: none)."""
    if max_bytes is None:
        return None
    if (
        not isinstance(max_bytes, (int, float))
        or isinstance(max_bytes, bool)
        or not max_bytes > 0  # also refuses NaN
    ):
        raise ArgumentError(
            f"max_bytes must be a positive number of bytes (math.inf for no limit), got "
            f"{max_bytes!r}"
        )
    return float(max_bytes)


def memory_limit(max_bytes: float | None = None) -> Limit:
    """The byte limit in force: ``max_bytes``, else the environment, else what this process
    may still allocate."""
    max_bytes = check_max_bytes(max_bytes)
    if max_bytes is not None:
        return Limit(None if max_bytes == math.inf else max_bytes, "max_bytes", True)
    env = os.environ.get(ENV_MAX_BYTES)
    if env is not None and env.strip():
        value = _parse_size(env)
        return Limit(None if value == math.inf else value, ENV_MAX_BYTES, True)
    room = available_memory()
    if room is None:
        return Limit(None, "no known limit", False)
    return Limit(room.nbytes, room.origin, False)


def content_cap(max_bytes: float | None) -> Limit:
    """The most bytes a compressed graph file may expand to: the memory limit."""
    return memory_limit(max_bytes)


def refuse_content(where: str, cap: Limit) -> GraphLimitError:
    """The error for decompressed content beyond ``cap``."""
    return GraphLimitError(
        f"{where}: the decompressed content exceeds {human_bytes(cap.nbytes or 0)}, the limit "
        f"({cap.origin}); a graph from it could not fit. Raise the limit with max_bytes or "
        f"{ENV_MAX_BYTES} (e.g. {ENV_MAX_BYTES}=64G, or inf) if the file is what you meant"
    )


def check_graph_size(
    n: int,
    records: int,
    *,
    directed: bool,
    where: str,
    max_bytes: float | None,
    relabel: bool = False,
    sparse_ids: bool = True,
) -> None:
    """Refuse a graph of ``n`` vertices and ``records`` arcs that would not fit.

    ``records`` counts arc records before cleaning (an undirected record makes two arcs).
    ``sparse_ids`` applies the sparse-id check (for inputs whose ``n`` is the largest id + 1
    or a declared size); with ``relabel`` the vertex count is at most ``2 * records``.
    """
    if relabel:
        n = min(n, 2 * records)
    need = build_nbytes(n, records, directed=directed)
    limit = memory_limit(max_bytes)
    if sparse_ids and not relabel and not limit.explicit:
        if n > _SPARSE_FACTOR * 2 * records + _SPARSE_SLACK:
            raise GraphLimitError(
                f"{where}: {n:,} vertices (ids up to {n - 1:,}) for only {records:,} arcs, "
                f"which touch at most {2 * records:,} of them: most vertices would be isolated, "
                f"and loading would need about {human_bytes(need)}. Pass relabel=True to number "
                "the ids that occur 0..k-1 (graph.labels keeps the originals), or an explicit "
                f"max_bytes (or {ENV_MAX_BYTES}) to load the ids as they are"
            )
    if limit.nbytes is not None and need > limit.nbytes:
        raise GraphLimitError(
            f"{where}: loading a graph of {n:,} vertices and {records:,} arc records needs "
            f"about {human_bytes(need)}, more than the limit of {human_bytes(limit.nbytes)} "
            f"({limit.origin}); raise it with max_bytes or {ENV_MAX_BYTES}"
            + ("" if relabel else ", or pass relabel=True if many ids are unused")
        )
