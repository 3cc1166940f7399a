"""CPU multi-source BFS, closeness and harmonic centrality: the exact reference for the GPU.

A BFS from a source ``u`` is summarized by its level histogram ``cnt[L]`` (vertices at level
``L``; ``cnt[0] == 1``). Everything here is computed from that histogram:

* ``reach = sum(cnt)`` (the source included) and ``dist = sum(L * cnt[L])``, exact int64;
* ``harmonic = sum(cnt[L] / L for L >= 1)`` in float64, accumulated as
  ``h = 0.0; for L in 1, 2, ...: h += float(cnt[L]) / float(L)``. That order is part of the
  contract: the GPU engine accumulates the same way, so both give the same bits;
* on request, the *pendant* harmonic sum: the harmonic sum a vertex of degree one hanging off
  ``u`` would get, ``p = 0.0; for L in 0, 1, ...: p += float(cnt[L] - (L == 1)) / float(L + 1)``
  over the levels that hold vertices. A leaf ``v`` of ``u`` sees ``u`` at level 1 and the
  vertices ``u`` sees at level ``L`` (but itself) at level ``L + 1``, so these are exactly the
  terms, in exactly the order, of its own harmonic sum (:mod:`blest.graph.reductions`).

Closeness and harmonic centrality of ``u`` measure distances *to* ``u`` (the convention of
NetworkX's ``closeness_centrality`` and ``harmonic_centrality``), so on a directed graph the
BFS from ``u`` follows in-arcs (``reverse=True``); on an undirected graph the two coincide.

Levels come from SciPy's C breadth-first search, one source at a time, over a float64 CSR
built once per call (SciPy converts any other matrix on every call), with ``directed=True``
even for undirected graphs (their CSR already holds both arcs; SciPy's undirected mode
transposes the matrix on every call).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import breadth_first_order

from blest.graph.core import Graph
from blest.reference.scipy_bfs import check_source, tree_depths

__all__ = [
    "SourceSums",
    "as_sources",
    "bfs_many_levels",
    "closeness",
    "closeness_from_sums",
    "harmonic",
    "harmonic_from_sums",
    "level_counts",
    "source_sums",
    "sums_from_counts",
    "sums_from_levels",
]

#: Levels held at once by :func:`source_sums` when no ``chunk`` is given (32 MiB of int32).
LEVEL_BLOCK_BYTES = 32 << 20

#: Levels of a BFS tree come from level boundaries, one binary search (about 1 us) per level,
#: while the tree is at most ``max(_SEARCH_DEPTH, size // 64)`` deep; deeper trees go to
#: pointer jumping (:func:`blest.reference.scipy_bfs.tree_depths`: log2(depth) passes over the
#: tree at a few ns per vertex), which is then the cheaper.
_SEARCH_DEPTH = 32


@dataclass(frozen=True, eq=False)
class SourceSums:
    """Per-source BFS sums, one entry per source in the order the sources were given.

    Attributes
    ----------
    dist : ndarray of int64, shape (k,)
        Sum of the levels of the vertices reached (``sum(L * cnt[L])``).
    reach : ndarray of int64, shape (k,)
        Number of vertices reached, the source included.
    harmonic : ndarray of float64, shape (k,)
        ``sum(cnt[L] / L)`` over ``L >= 1``, accumulated in increasing ``L``.
    pendant : ndarray of float64, shape (k,), or None
        The pendant harmonic sum (see the module docstring), where it was asked for.
    """

    dist: np.ndarray
    reach: np.ndarray
    harmonic: np.ndarray
    pendant: np.ndarray | None = None

    def __post_init__(self) -> None:
        arrays = [
            np.ascontiguousarray(self.dist, dtype=np.int64),
            np.ascontiguousarray(self.reach, dtype=np.int64),
            np.ascontiguousarray(self.harmonic, dtype=np.float64),
        ]
        names = ["dist", "reach", "harmonic"]
        if self.pendant is not None:
            arrays.append(np.ascontiguousarray(self.pendant, dtype=np.float64))
            names.append("pendant")
        if any(a.ndim != 1 or a.shape != arrays[0].shape for a in arrays):
            raise ValueError(f"{', '.join(names)} must be 1-D arrays of one length")
        for name, a in zip(names, arrays, strict=True):
            object.__setattr__(self, name, a)

    def __len__(self) -> int:
        return int(self.dist.size)

    def arrays(self) -> tuple[np.ndarray, ...]:
        """``(dist, reach, harmonic)``, and ``pendant`` last where there is one."""
        rest = () if self.pendant is None else (self.pendant,)
        return (self.dist, self.reach, self.harmonic, *rest)

    @classmethod
    def zeros(cls, k: int, *, pendant: bool = False) -> SourceSums:
        """``k`` sources, every sum zero (the identity of :meth:`concat` and of summation);
        with a pendant sum of zeros when ``pendant``."""
        return cls(
            np.zeros(k, np.int64),
            np.zeros(k, np.int64),
            np.zeros(k, np.float64),
            np.zeros(k, np.float64) if pendant else None,
        )

    @classmethod
    def concat(cls, parts: Sequence[SourceSums]) -> SourceSums:
        """The sums of several source lists, one after the other (with pendant sums when every
        part has them)."""
        if not parts:
            return cls.zeros(0)
        pendants = [p.pendant for p in parts if p.pendant is not None]
        return cls(
            np.concatenate([p.dist for p in parts]),
            np.concatenate([p.reach for p in parts]),
            np.concatenate([p.harmonic for p in parts]),
            np.concatenate(pendants) if len(pendants) == len(parts) else None,
        )

    def take(self, positions: Any) -> SourceSums:
        """The sums at ``positions`` (any NumPy index of the source axis)."""
        return SourceSums(*(a[positions] for a in self.arrays()))

    def scatter(self, positions: Any, k: int) -> SourceSums:
        """Full-length sums of ``k`` sources: these at ``positions``, zero everywhere else."""
        full = SourceSums.zeros(k, pendant=self.pendant is not None)
        for into, a in zip(full.arrays(), self.arrays(), strict=True):
            into[positions] = a
        return full

    def identical(self, other: SourceSums) -> bool:
        """True when both hold the same sources with bit-identical sums (pendant sums
        included: both or neither must have them)."""
        mine, theirs = self.arrays(), other.arrays()
        return len(mine) == len(theirs) and all(
            a.shape == b.shape and a.tobytes() == b.tobytes()
            for a, b in zip(mine, theirs, strict=True)
        )


# ---------------------------------------------------------------------------- sources
def as_sources(sources: Any, n: int) -> np.ndarray:
    """Validated source ids as a 1-D int64 array (order and duplicates kept).

    Raises
    ------
    ValueError
        ``sources`` is not a 1-D sequence of integers (booleans and floats are refused).
    IndexError
        A source is outside ``0 .. n-1`` (the message names the first such source).
    """
    arr = np.asarray(sources)
    if arr.ndim != 1:
        raise ValueError(f"sources must be a 1-D sequence of vertex ids, got shape {arr.shape}")
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype.kind not in "iu":
        return np.array([check_source(s, n) for s in arr.tolist()], dtype=np.int64)
    bad = np.flatnonzero((arr < 0) | (arr >= n))
    if bad.size:
        check_source(int(arr[bad[0]]), n)  # raises IndexError with the usual message
    return arr.astype(np.int64, copy=False)


def _check_out(out: Any, k: int, n: int) -> np.ndarray:
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a NumPy array, got {type(out).__name__}")
    if out.dtype != np.int32 or out.shape != (k, n):
        raise ValueError(f"out must be int32 of shape {(k, n)}, got {out.dtype} {out.shape}")
    if not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError("out must be C-contiguous and writeable")
    return out


# ---------------------------------------------------------------------------- levels
def _bfs_matrix(graph: Graph, reverse: bool) -> sp.csr_matrix:
    """The CSR SciPy walks: out-arcs, or in-arcs when ``reverse``; float64 ones."""
    ptr, idx = (graph.in_ptr, graph.in_idx) if reverse else (graph.out_ptr, graph.out_idx)
    return sp.csr_matrix((np.ones(idx.size), idx, ptr), shape=(graph.n, graph.n))


def _tree_levels(order: np.ndarray, pred: np.ndarray, row: np.ndarray, pos: np.ndarray) -> None:
    """Write into ``row`` the depth of every vertex of a BFS tree (-1 off the tree).

    Along a BFS order the parents' positions never decrease, so level ``L + 1`` ends where the
    first vertex whose parent lies past level ``L`` stands: one binary search per level.
    ``pos`` is scratch space of length n.
    """
    k = order.size
    pos[order] = np.arange(k)
    ppos = pos[pred[order[1:]]]
    ends = [1]
    if not (ppos[1:] < ppos[:-1]).any():
        max_depth = max(_SEARCH_DEPTH, k // 64)
        while ends[-1] < k and len(ends) <= max_depth:
            ends.append(1 + int(ppos.searchsorted(ends[-1])))
    if ends[-1] < k:  # a deep tree (or an order that is not breadth-first)
        row[...] = tree_depths(order, pred, row.size)
        return
    counts = np.diff(ends, prepend=0)
    row.fill(-1)
    row[order] = np.repeat(np.arange(counts.size, dtype=np.int32), counts)


def bfs_many_levels(
    graph: Graph, sources: Any, *, reverse: bool = False, out: np.ndarray | None = None
) -> np.ndarray:
    """BFS levels from several sources, one row per source.

    Parameters
    ----------
    graph : Graph
    sources : sequence of int
        Source ids, in the order of the rows; repeats are allowed (a repeated source is
        searched once and its row copied).
    reverse : bool
        Follow in-arcs instead of out-arcs (BFS on the transposed graph); no effect on an
        undirected graph.
    out : ndarray, optional
        An int32, C-contiguous ``(len(sources), n)`` array to fill and return; every entry is
        overwritten.

    Returns
    -------
    ndarray of int32, shape (len(sources), n)
        ``levels[i, v]`` is the distance from ``sources[i]`` to ``v``, -1 when unreachable.
    """
    n = int(graph.n)
    srcs = as_sources(sources, n)
    levels = np.empty((srcs.size, n), np.int32) if out is None else _check_out(out, srcs.size, n)
    if srcs.size == 0:
        return levels
    matrix = _bfs_matrix(graph, reverse)
    pos = np.empty(n, dtype=np.int64)
    first: dict[int, int] = {}
    for i, s in enumerate(srcs.tolist()):
        if s in first:
            levels[i] = levels[first[s]]
            continue
        first[s] = i
        order, pred = breadth_first_order(matrix, s, directed=True, return_predecessors=True)
        _tree_levels(order, pred, levels[i], pos)
    return levels


# ---------------------------------------------------------------------------- sums
def level_counts(levels: np.ndarray) -> np.ndarray:
    """Per-row level histogram: ``counts[i, L]`` vertices at level ``L`` in row ``i``.

    Returns an int64 ``(k, depth + 1)`` array, ``depth`` the largest level of any row.
    """
    levels = np.asarray(levels)
    if levels.ndim != 2 or levels.dtype.kind not in "iu":
        raise ValueError("levels must be a 2-D integer array")
    k = levels.shape[0]
    if levels.size == 0:
        return np.zeros((k, 1), np.int64)
    if int(levels.min()) < -1:
        raise ValueError("levels must be >= -1 (-1 marks an unreachable vertex)")
    width = int(levels.max()) + 2  # bin 0 of every row collects the -1 entries
    bins = levels.astype(np.int64) + 1
    bins += np.arange(0, k * width, width, dtype=np.int64)[:, None]
    counts = np.bincount(bins.ravel(), minlength=k * width).reshape(k, width)
    return counts[:, 1:]


def sums_from_levels(levels: np.ndarray, *, pendant: bool = False) -> SourceSums:
    """:class:`SourceSums` of each row of a ``(k, n)`` level array (-1 unreachable).

    ``harmonic`` is accumulated per row in increasing level order, ``0.0 + c1/1 + c2/2 + ...``
    (a running sum along the row, never a pairwise sum), as the contract requires; so is the
    pendant sum, when ``pendant``.
    """
    return sums_from_counts(level_counts(levels), pendant=pendant)


def sums_from_counts(counts: np.ndarray, *, pendant: bool = False) -> SourceSums:
    """:class:`SourceSums` of per-row level histograms (int64 ``(k, width)``, ``counts[i, L]``
    vertices at level ``L``; trailing zeros change nothing), with the float operations of
    :func:`sums_from_levels`; with the pendant sums when ``pendant``."""
    counts = np.asarray(counts, dtype=np.int64)
    if counts.ndim != 2 or counts.shape[1] < 1:
        raise ValueError("counts must be a 2-D array with at least one column")
    k, width = counts.shape
    depths = np.arange(width, dtype=np.int64)
    reach = counts.sum(axis=1)
    dist = counts @ depths
    if width > 1:
        terms = counts[:, 1:] / depths[1:].astype(np.float64)
        harmonic = np.cumsum(terms, axis=1)[:, -1]
    else:
        harmonic = np.zeros(k, np.float64)
    return SourceSums(dist, reach, harmonic, _pendant(counts) if pendant else None)


def _pendant(counts: np.ndarray) -> np.ndarray:
    """Pendant harmonic sums of level histograms: ``(cnt[L] - (L == 1)) / (L + 1)`` over the
    levels ``L >= 0`` that hold vertices, added in increasing ``L`` from 0.0 (a level that holds
    none adds nothing; ``x + 0.0 == x``)."""
    leaf = counts.copy()
    if leaf.shape[1] > 1:
        leaf[:, 1] = np.maximum(leaf[:, 1] - 1, 0)
    terms = leaf / np.arange(1, counts.shape[1] + 1, dtype=np.float64)
    return np.cumsum(terms, axis=1)[:, -1]


def _chunk_rows(n: int, chunk: int | None) -> int:
    if chunk is None:
        return max(1, LEVEL_BLOCK_BYTES // (4 * max(n, 1)))
    if isinstance(chunk, bool) or int(chunk) != chunk or chunk < 1:
        raise ValueError(f"chunk must be a positive integer, got {chunk!r}")
    return int(chunk)


def source_sums(
    graph: Graph,
    sources: Any,
    *,
    reverse: bool,
    chunk: int | None = None,
    pendant: bool = False,
) -> SourceSums:
    """:class:`SourceSums` of a BFS from each source, in the order given.

    Parameters
    ----------
    graph : Graph
    sources : sequence of int
        Source ids; repeats allowed.
    reverse : bool
        Follow in-arcs (distances *to* the source), as closeness on a directed graph needs.
    chunk : int, optional
        Sources whose levels are held at once; by default as many as fit in
        :data:`LEVEL_BLOCK_BYTES` (at least one).
    pendant : bool
        Also the pendant harmonic sums (see the module docstring).
    """
    n = int(graph.n)
    srcs = as_sources(sources, n)
    rows = _chunk_rows(n, chunk)
    buf = np.empty((min(rows, srcs.size), n), dtype=np.int32)
    parts = []
    for at in range(0, srcs.size, rows):
        block = srcs[at : at + rows]
        levels = bfs_many_levels(graph, block, reverse=reverse, out=buf[: block.size])
        parts.append(sums_from_levels(levels, pendant=pendant))
    return SourceSums.concat(parts) if parts else SourceSums.zeros(0, pendant=pendant)


# ---------------------------------------------------------------------------- centrality
def closeness_from_sums(sums: SourceSums, n: int, *, wf_improved: bool = True) -> np.ndarray:
    """Closeness centrality from the sums of BFSs over in-arcs, as NetworkX defines it.

    ``C = (reach - 1) / dist``, times ``(reach - 1) / (n - 1)`` when ``wf_improved`` (the
    Wasserman-Faust scaling for graphs that are not strongly connected); 0.0 when
    ``dist == 0`` or ``n <= 1``. The float operations are NetworkX's, in its order.
    """
    c = np.zeros(len(sums), dtype=np.float64)
    if n <= 1:
        return c
    r1 = sums.reach - 1.0
    ok = sums.dist > 0
    np.divide(r1, sums.dist, out=c, where=ok)
    if wf_improved:
        np.multiply(c, r1 / (n - 1), out=c, where=ok)
    return c


def harmonic_from_sums(sums: SourceSums) -> np.ndarray:
    """Harmonic centrality from the sums of BFSs over in-arcs: ``sum(1 / d(v, u))``."""
    return sums.harmonic.copy()


def _centrality_sources(graph: Graph, sources: Any) -> np.ndarray:
    return np.arange(graph.n, dtype=np.int64) if sources is None else sources


def closeness(graph: Graph, sources: Any = None, *, wf_improved: bool = True) -> np.ndarray:
    """Exact closeness centrality, equal to NetworkX's ``closeness_centrality``.

    Parameters
    ----------
    graph : Graph
    sources : sequence of int, optional
        Vertices to score, in the order wanted (repeats allowed); every vertex by default.
    wf_improved : bool
        Scale by the fraction of the other vertices that reach the vertex.

    Returns
    -------
    ndarray of float64
        One value per source (length n when ``sources`` is None). Distances are measured to
        each vertex, over in-arcs of a directed graph.
    """
    srcs = _centrality_sources(graph, sources)
    sums = source_sums(graph, srcs, reverse=graph.directed)
    return closeness_from_sums(sums, graph.n, wf_improved=wf_improved)


def harmonic(graph: Graph, sources: Any = None) -> np.ndarray:
    """Exact harmonic centrality, ``H(u) = sum over v != u of 1 / d(v, u)``.

    Agrees with NetworkX's ``harmonic_centrality`` up to the order of the float additions
    (here: by increasing distance). ``sources`` and the result are as in :func:`closeness`.
    """
    srcs = _centrality_sources(graph, sources)
    return harmonic_from_sums(source_sums(graph, srcs, reverse=graph.directed))
