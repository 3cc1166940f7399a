"""SciPy reference BFS: levels from ``scipy.sparse.csgraph.breadth_first_order``.

SciPy returns the BFS order and the predecessor tree; the level of every reached vertex is its
depth in that tree, computed by pointer jumping (each round doubles the jump length, so
O(n log depth) work in ``ceil(log2 depth) + 1`` vectorized rounds, no per-vertex Python loop).
These are the levels every Blest variant must reproduce (Blest paper, Alg. 2/3/4); SciPy's BFS is
also the CPU baseline of the timing protocol (docs/design.md).
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
from scipy.sparse.csgraph import breadth_first_order

from blest.errors import ArgumentError, VertexError

__all__ = ["bfs_levels", "check_source", "tree_depths"]


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


def bfs_levels(graph: Any, src: Any) -> np.ndarray:
    """BFS levels of ``graph`` (a :class:`blest.Graph`) from ``src``: int32, -1 unreachable.

    Follows out-arcs (``graph.out_csr``); ids are the graph's own ids.
    """
    n = int(graph.n)
    s = check_source(src, n)
    order, pred = breadth_first_order(
        graph.out_csr, s, directed=bool(graph.directed), return_predecessors=True
    )
    return tree_depths(order, pred, n)
