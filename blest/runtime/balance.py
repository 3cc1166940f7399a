"""Sources shared over ranks by predicted cost: the cost model and the longest-first assignment.

A rank runs its sources in batches of ``kappa`` consecutive sources (in the engine's internal
order, where consecutive ids are close in the graph). Every source of a batch is one BFS, and
a BFS visits what it reaches: at most its weakly connected component. The searches of a batch
share their level steps but not their vertices and arcs (on a GPU a source in a batch costs
about half a BFS of its own), so the work of a batch grows with the sum of its sources'
reaches; every batch also pays its launches and level steps, about one pass over the vertices.
The model, in vertices and arcs visited::

    cost(batch) = n + sum over its sources s of (vertices + arcs of the component of s)

An isolated vertex costs 1, a source in a small component little, a source in the giant
component of a power-law graph as much as the whole graph. :func:`assign_batches` deals the
batches longest first, each to the least loaded rank (ties: the lowest rank); every rank
computes the same assignment from the same costs, so no messages are needed.
"""

from __future__ import annotations

import heapq

import numpy as np
from scipy.sparse.csgraph import breadth_first_order, connected_components

from blest.graph.core import Graph

__all__ = ["assign_batches", "batch_costs", "component_costs", "share"]


def component_costs(graph: Graph) -> np.ndarray:
    """Per vertex: vertices plus arcs of its weakly connected component (int64).

    Isolated vertices cost 1 without any search. On an undirected graph the giant component is
    found by one BFS from the vertex of highest degree and only the rest goes through SciPy's
    component labelling (a BFS is several times cheaper on a large graph); a directed graph is
    labelled whole (weak connection)."""
    n = int(graph.n)
    out_degree = np.diff(graph.out_ptr).astype(np.int64)
    if graph.directed:
        _, labels = connected_components(graph.out_csr, directed=True, connection="weak")
        labels = labels.astype(np.int64)
    else:
        labels = np.full(n, -1, np.int64)
        isolated = np.flatnonzero(out_degree == 0)
        labels[isolated] = np.arange(isolated.size)
        if isolated.size < n:
            hub = int(np.argmax(out_degree))
            giant = breadth_first_order(
                graph.out_csr, hub, directed=True, return_predecessors=False
            )
            labels[giant] = isolated.size
            rest = np.flatnonzero(labels < 0)
            if rest.size:
                sub = graph.out_csr[rest][:, rest]
                _, found = connected_components(sub, directed=True, connection="weak")
                labels[rest] = found.astype(np.int64) + isolated.size + 1
    if n == 0:
        return np.zeros(0, np.int64)
    vertices = np.bincount(labels)
    arcs = np.bincount(labels, weights=out_degree, minlength=vertices.size).astype(np.int64)
    return (vertices + arcs)[labels]


def batch_costs(costs: np.ndarray, kappa: int, fixed: int) -> np.ndarray:
    """Predicted cost of each batch of ``kappa`` consecutive entries of ``costs`` (the cost of
    each source, in batch order; the last batch may be shorter): ``fixed`` plus their sum."""
    costs = np.asarray(costs, dtype=np.int64)
    starts = np.arange(0, costs.size, kappa)
    if starts.size == 0:
        return np.zeros(0, np.int64)
    return np.add.reduceat(costs, starts) + np.int64(fixed)


def assign_batches(costs: np.ndarray, size: int) -> np.ndarray:
    """The rank of each batch: longest processing time first (costs in decreasing order, ties
    by batch index), each to the least loaded rank so far (ties: the lowest rank)."""
    costs = np.asarray(costs, dtype=np.int64)
    owner = np.empty(costs.size, np.int64)
    loads = [(0, r) for r in range(size)]  # a heap of (load, rank)
    for b in np.lexsort((np.arange(costs.size), -costs)).tolist():
        load, rank = heapq.heappop(loads)
        owner[b] = rank
        heapq.heappush(loads, (load + int(costs[b]), rank))
    return owner


def share(
    graph: Graph,
    new_of_old: np.ndarray,
    users: np.ndarray,
    todo: np.ndarray,
    kappa: int,
    rank: int,
    size: int,
) -> np.ndarray:
    """The positions of ``users`` (vertices, in the user's ids) that ``rank`` of ``size`` runs,
    among the positions ``todo``: those are put in the engine's internal order (``new_of_old``),
    cut into batches of ``kappa`` and the batches assigned by predicted cost. Returned in
    internal order, whole batches one after the other."""
    todo = np.asarray(todo, dtype=np.int64)
    internal = np.asarray(new_of_old)[users[todo]]
    ordered = todo[np.argsort(internal, kind="stable")]
    if size == 1:
        return ordered
    per_source = component_costs(graph)[users[ordered]]
    owner = assign_batches(batch_costs(per_source, kappa, int(graph.n)), size)
    return ordered[owner[np.arange(ordered.size) // kappa] == rank]
