"""NetworkX's BFS order and parents from BFS levels, level by level in NumPy.

NetworkX's BFS visits a level's vertices in the order it discovered them and, for each, its
neighbours in adjacency order (``G[u]``); a vertex is discovered by the first arc that reaches
it, whose tail becomes its parent. Given the BFS levels, level L + 1 is therefore: the arcs out
of level L's vertices, taken in that order, whose heads lie at level L + 1; each head's first
such arc names its parent and its rank. One pass over the arcs of every level, O(n + m) in all.
"""

from __future__ import annotations

import numpy as np

from blest.reference.bitmaps import concat_ranges

__all__ = ["nx_bfs_order"]


def nx_bfs_order(
    levels: np.ndarray, first: np.ndarray, ptr: np.ndarray, idx: np.ndarray
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """NetworkX's BFS layers and the parent of each vertex in them.

    Parameters
    ----------
    levels : ndarray
        BFS levels from the vertices of ``first`` (-1 for unreached or cut-off vertices).
    first : ndarray
        Layer 0, in NetworkX's order.
    ptr, idx : ndarray
        Adjacency in NetworkX's order (``G[u]`` or ``G.pred[u]``).

    Returns
    -------
    layers, parents : list of ndarray
        ``layers[L]`` holds level L's vertices in discovery order; ``parents[L][i]`` is the
        parent of ``layers[L][i]`` (-1 in layer 0).
    """
    frontier = np.asarray(first, dtype=np.int64)
    layers, parents = [frontier], [np.full(frontier.size, -1, dtype=np.int64)]
    level = 0
    while frontier.size:
        starts = ptr[frontier]
        degree = ptr[frontier + 1] - starts
        heads = idx[concat_ranges(starts, degree)]
        at = np.flatnonzero(levels[heads] == level + 1)
        if not at.size:
            break
        _, first_seen = np.unique(heads[at], return_index=True)
        chosen = at[np.sort(first_seen)]  # positions of the discovering arcs, in order
        owner = np.searchsorted(np.cumsum(degree), chosen, side="right")
        parents.append(frontier[owner])
        frontier = heads[chosen].astype(np.int64)
        layers.append(frontier)
        level += 1
    return layers, parents
