"""CPU BFS: SciPy's ``breadth_first_order`` (the fast path and the reference), a super-source
for several seeds, and an independent vectorized frontier BFS.

SciPy returns the BFS order and the predecessor tree; the level of every reached vertex is its
depth in that tree, computed by pointer jumping (each round doubles the jump length, so
O(n log depth) work in ``ceil(log2 depth) + 1`` vectorized rounds, no per-vertex Python loop).
These are the levels every Blest variant must reproduce (Blest paper, Alg. 2/3/4); SciPy's BFS is
also the CPU baseline of the timing protocol (docs/design.md).

Several seeds (every seed at level 0) run as one SciPy BFS from a virtual super-source: a vertex
``n`` with an arc to every seed; levels are its depths minus one. :func:`frontier_bfs` does the
same level by level in NumPy. On the bundled 114,599-vertex road graph (hundreds of levels; a
2-core CPU) the SciPy path took 8-11 ms from 1 to 1024 seeds and the NumPy frontier 15-70 ms,
2-8 times longer: each NumPy level costs tens of microseconds of overhead whatever its size, so
the gap narrows as more seeds make the search shallower.
"""

from __future__ import annotations

import operator
import threading
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import breadth_first_order

from blest.errors import ArgumentError, GraphLimitError, VertexError
from blest.reference.bitmaps import concat_ranges

__all__ = [
    "ScipyBFS",
    "bfs_levels",
    "check_seeds",
    "check_source",
    "frontier_bfs",
    "is_single_seed",
    "tree_depths",
]


def check_source(src: Any, n: int) -> int:
    """``src`` as a Python int; :class:`~blest.errors.ArgumentError` (not an integer) or
    :class:`~blest.errors.VertexError` (out of range)."""
    if isinstance(src, (bool, np.bool_)):
        raise ArgumentError(f"source vertex must be an integer id, got the boolean {src!r}")
    try:
        s = operator.index(src)
    except TypeError:
        raise ArgumentError(
            f"source vertex must be an integer id, got {src!r} ({type(src).__name__})"
        ) from None
    if n <= 0:
        raise VertexError(f"source vertex {s} is out of range: the graph has no vertices")
    if not 0 <= s < n:
        raise VertexError(
            f"source vertex {s} is out of range for a graph of {n} vertices (ids 0..{n - 1})"
        )
    return s


def is_single_seed(src: Any) -> bool:
    """Whether ``src`` is one vertex id (an integer, NumPy integer or 0-d integer array) rather
    than a sequence of seeds."""
    if isinstance(src, (bool, np.bool_)):
        return True  # check_source refuses it with its own message
    if isinstance(src, np.ndarray):
        return src.ndim == 0
    try:
        operator.index(src)
    except TypeError:
        return not hasattr(src, "__iter__")
    return True


def check_seeds(src: Any, n: int) -> np.ndarray:
    """The seeds of a BFS as an int64 array: one id, or a non-empty sequence of ids (duplicates
    kept). Every seed is checked; :class:`~blest.errors.ArgumentError` for a non-integer or an
    empty sequence, :class:`~blest.errors.VertexError` for an id out of range."""
    if is_single_seed(src):
        return np.array([check_source(src, n)], dtype=np.int64)
    if isinstance(src, (str, bytes, dict)):
        raise ArgumentError(f"seeds must be integer vertex ids, got {type(src).__name__}")
    if hasattr(src, "__cuda_array_interface__") and hasattr(src, "get"):
        src = src.get()  # a CuPy array of seeds
    items = src if isinstance(src, np.ndarray) else list(src)
    arr = np.asarray(items)
    if arr.ndim != 1:
        raise ArgumentError(f"seeds must be a 1-D sequence of vertex ids, got shape {arr.shape}")
    if arr.size == 0:
        raise ArgumentError("at least one seed vertex is needed, got an empty sequence")
    if arr.dtype.kind not in "iu":
        if isinstance(items, np.ndarray) and arr.dtype.kind != "O":
            raise ArgumentError(f"seeds must be integer vertex ids, got dtype {arr.dtype}")
        return np.array([check_source(s, n) for s in items], dtype=np.int64)  # one at a time
    bad = np.flatnonzero((arr < 0) | (arr >= n))
    if bad.size:
        i = int(bad[0])
        raise VertexError(
            f"seed {arr[i]} (position {i}) is out of range for a graph of {n} vertices"
            + (f" (ids 0..{n - 1})" if n > 0 else "")
        )
    return arr.astype(np.int64, copy=False)


def tree_depths(order: np.ndarray, predecessors: np.ndarray, n: int) -> np.ndarray:
    """Depth of each vertex in a BFS tree (int32, -1 where not in the tree).

    ``order[0]`` is the root; ``predecessors[v]`` is v's parent for the other vertices of
    ``order``. Pointer jumping on positions in ``order``: ``dist[i]`` is the tree distance from
    ``i`` to its current ancestor ``anc[i]``; one round sets ``dist += dist[anc]``,
    ``anc = anc[anc]`` until every ancestor is the root.
    """
    order = np.asarray(order, dtype=np.int64)
    levels = np.full(n, -1, dtype=np.int32)
    k = order.size
    if k == 0:
        return levels
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(k, dtype=np.int64)
    anc = np.zeros(k, dtype=np.int64)
    anc[1:] = pos[np.asarray(predecessors, dtype=np.int64)[order[1:]]]
    dist = np.ones(k, dtype=np.int32)
    dist[0] = 0
    while anc.any():
        dist += dist[anc]
        anc = anc[anc]
    levels[order] = dist
    return levels


class ScipyBFS:
    """BFS levels (and parents) of one graph with SciPy's compiled ``breadth_first_order``.

    Built once per graph: it keeps ``out_csr`` with float64 data and int32 indices, the types
    SciPy's traversal works in, so that calls convert nothing. An undirected graph stores both
    arcs of every edge, so the traversal always follows out-arcs (``directed=True``), which is
    about twice as fast as SciPy's undirected mode. Several seeds: one BFS from a super-source
    (vertex ``n``, arcs to every seed), in buffers allocated at the first such call and shared
    by later ones (under a lock). SciPy's traversal indexes arcs with int32, so graphs of
    2**31 arcs or more are refused.
    """

    def __init__(self, graph: Any) -> None:
        self.n = n = int(graph.n)
        if int(graph.nnz) + n >= np.iinfo(np.int32).max:
            raise GraphLimitError(
                f"SciPy's BFS indexes arcs with int32: {graph.nnz:,} arcs are too many"
            )
        self._idx = np.asarray(graph.out_idx, dtype=np.int32)
        self._ptr = np.asarray(graph.out_ptr, dtype=np.int32)
        self._csr = sp.csr_matrix((np.ones(self._idx.size), self._idx, self._ptr), shape=(n, n))
        self._super: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._lock = threading.Lock()

    def run(
        self, seeds: np.ndarray, *, depth_limit: int | None = None, parents: bool = False
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """(levels, parents or None) from ``seeds`` (checked ids, repeats allowed): int32,
        -1 for unreached vertices and for the parents of seeds."""
        seeds = np.unique(np.asarray(seeds, dtype=np.int64))
        if seeds.size == 1:
            shift = 0
            order, pred = breadth_first_order(
                self._csr, int(seeds[0]), directed=True, return_predecessors=True
            )
        else:
            shift = 1
            with self._lock:
                order, pred = breadth_first_order(
                    self._super_graph(seeds), self.n, directed=True, return_predecessors=True
                )
        levels = tree_depths(order, pred, self.n + shift)[: self.n]
        if shift:
            levels = np.maximum(levels - 1, -1).astype(np.int32)
        if depth_limit is not None:
            levels[levels > depth_limit] = -1
        if not parents:
            return levels, None
        par = pred[: self.n].astype(np.int32)
        par[(levels <= 0) | (par >= self.n)] = -1  # seeds, unreached, the super-source
        return levels, par

    def _super_graph(self, seeds: np.ndarray) -> sp.csr_matrix:
        n, nnz = self.n, self._idx.size
        if self._super is None:
            idx = np.empty(nnz + n, dtype=np.int32)
            idx[:nnz] = self._idx
            ptr = np.empty(n + 2, dtype=np.int32)
            ptr[: n + 1] = self._ptr
            self._super = (idx, ptr, np.ones(nnz + n))
        idx, ptr, data = self._super
        k = seeds.size
        idx[nnz : nnz + k] = seeds
        ptr[n + 1] = nnz + k
        return sp.csr_matrix((data[: nnz + k], idx[: nnz + k], ptr), shape=(n + 1, n + 1))


def frontier_bfs(
    graph: Any, seeds: Any, *, depth_limit: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Levels and parents from ``seeds`` by a level-synchronous NumPy BFS over ``out_csr``.

    Independent of SciPy (a cross-check of :class:`ScipyBFS`). The parent of a vertex first
    reached at level L + 1 is its smallest in-neighbour at level L.
    """
    n = int(graph.n)
    ptr, idx = np.asarray(graph.out_ptr), np.asarray(graph.out_idx)
    levels = np.full(n, -1, dtype=np.int32)
    parents = np.full(n, -1, dtype=np.int32)
    frontier = np.unique(check_seeds(seeds, n))
    levels[frontier] = 0
    level = 0
    while frontier.size and (depth_limit is None or level < depth_limit):
        starts = ptr[frontier]
        degree = ptr[frontier + 1] - starts
        heads = idx[concat_ranges(starts, degree)]
        tails = np.repeat(frontier, degree)
        fresh = levels[heads] < 0
        frontier, first = np.unique(heads[fresh], return_index=True)
        level += 1
        levels[frontier] = level
        parents[frontier] = tails[fresh][first]
    return levels, parents


def bfs_levels(graph: Any, src: Any) -> np.ndarray:
    """BFS levels of ``graph`` (a :class:`blest.Graph`) from ``src`` (one id or several seeds,
    all at level 0): int32, -1 unreachable. Follows out-arcs; ids are the graph's own ids."""
    return ScipyBFS(graph).run(check_seeds(src, int(graph.n)))[0]
