"""Closeness and harmonic centrality for the NetworkX backend, from blest's BFSs.

Both measure distances *to* each node (NetworkX reverses a directed graph), unweighted only.
Closeness comes from exact integer sums, so it equals NetworkX's. Harmonic centrality is a sum
of floats, whose last bits depend on the order of the additions: it is summed here in
NetworkX's own order (below), so that it too equals NetworkX's, bit for bit.

NetworkX's order: with ``N`` the nodes to score and ``S`` the sources (both Python sets), when
``|N| >= |S|`` every ``u`` in ``N`` adds ``1 / d(v, u)`` for ``v`` in ``S``'s iteration order;
otherwise (``transposed``) every ``v`` in ``S`` adds ``1 / d(u, v)`` over the nodes ``u`` in the
order a BFS from ``v`` over in-arcs discovers them. The first is one vectorized addition per
source; the second a sequential (``cumsum``) sum along that BFS order.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from blest.nx.graph import BlestGraph, as_blest
from blest.nx.order import nx_bfs_order

__all__ = ["closeness_centrality", "harmonic_centrality", "no_edge_has"]


def no_edge_has(graph: Any, attr: Any) -> bool:
    """Whether no edge of the NetworkX graph ``graph`` carries the attribute ``attr``: then
    NetworkX weighs every edge 1, and the weighted result is the unweighted one."""
    if graph is None or isinstance(graph, BlestGraph) or not isinstance(attr, str):
        return False
    try:
        return not any(attr in data for *_, data in graph.edges(data=True))
    except (AttributeError, TypeError):
        return False


def _unweighted(G: Any, distance: Any) -> None:
    """Refuse edge weights (NetworkX then runs its own code): a :class:`BlestGraph` has
    none, so there ``distance`` weighs every edge 1."""
    if distance is None or isinstance(G, BlestGraph) or no_edge_has(G, distance):
        return
    raise NotImplementedError("blest computes unweighted distances only (distance is a weight)")


def _targets(bg: Any, nodes: Any) -> tuple[list[Any], np.ndarray]:
    if nodes is None:
        return list(bg.nodes), np.arange(len(bg.nodes), dtype=np.int64)
    chosen = [v for v in dict.fromkeys(nodes)]
    missing = [v for v in chosen if v not in bg]
    if missing:
        import networkx as nx

        raise nx.NodeNotFound(f"Node {missing[0]} is not in G")
    return chosen, np.array([bg.index[v] for v in chosen], dtype=np.int64)


def closeness_centrality(
    G: Any, u: Any = None, distance: Any = None, wf_improved: bool = True, *, device: Any = None
) -> Any:
    """NetworkX's ``closeness_centrality``: a dict over the nodes, or the value of node ``u``."""
    from blest.centrality import closeness

    _unweighted(G, distance)
    bg = as_blest(G)
    if len(bg.nodes) == 0:
        return {} if u is None else 0.0
    labels, ids = _targets(bg, None if u is None else [u])
    scores = closeness(bg.graph, ids, wf_improved=wf_improved, device=device)
    if u is not None:
        return float(scores[0])
    return dict(zip(labels, scores.tolist(), strict=True))


def harmonic_centrality(
    G: Any, nbunch: Any = None, distance: Any = None, sources: Any = None, *, device: Any = None
) -> dict:
    """NetworkX's ``harmonic_centrality`` of the nodes of ``nbunch`` (default: all) over paths
    from the nodes of ``sources`` (default: all), with NetworkX's sums (module docstring)."""
    from blest.centrality import engine_for

    _unweighted(G, distance)
    bg = as_blest(G)
    scored = set(bg.nbunch_iter(nbunch))  # built as NetworkX builds them: same iteration order
    starts = set(bg.nbunch_iter(sources))
    centrality: dict[Any, Any] = dict.fromkeys(scored, 0)
    if not scored or not starts:
        return centrality
    transposed = len(scored) < len(starts)
    if transposed:
        scored, starts = starts, scored
    graph = bg.reversed_graph if transposed else bg.graph
    index, n = bg.index, len(bg.nodes)
    wanted = np.zeros(n, dtype=bool)
    wanted[[index[u] for u in scored]] = True
    order = [index[v] for v in starts]
    sums, touched = np.zeros(n), np.zeros(n, dtype=bool)
    with engine_for(graph, device=device) as eng:
        for at in range(0, len(order), _batch(n)):
            batch = order[at : at + _batch(n)]
            for v, levels in zip(batch, eng.bfs_many(batch), strict=True):
                if transposed:
                    sums[v], touched[v] = _along_bfs(bg, v, levels, wanted)
                else:
                    hit = (levels > 0) & wanted
                    sums[hit] += 1.0 / levels[hit]
                    touched |= hit
    nodes = bg.nodes
    for i in np.flatnonzero(touched).tolist():
        if nodes[i] in centrality:
            centrality[nodes[i]] = float(sums[i])
    return centrality


def _batch(n: int) -> int:
    """Sources per ``bfs_many`` call: 32 MiB of levels."""
    return max(1, (32 << 20) // (4 * max(n, 1)))


def _along_bfs(bg: Any, v: int, levels: np.ndarray, wanted: np.ndarray) -> tuple[float, bool]:
    """Sum of ``1 / d(u, v)`` over the wanted nodes ``u``, added in the order a BFS from ``v``
    over in-arcs (NetworkX's, adjacency order) discovers them; and whether any was added."""
    ptr, idx = bg.pred
    layers, _ = nx_bfs_order(levels, np.array([v], dtype=np.int64), ptr, idx)
    if len(layers) < 2:
        return 0.0, False
    found = np.concatenate(layers[1:])
    found = found[wanted[found]]
    if not found.size:
        return 0.0, False
    return float(np.cumsum(1.0 / levels[found])[-1]), True
