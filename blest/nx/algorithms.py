"""The NetworkX functions blest implements, with NetworkX's signatures and results.

Each takes a NetworkX graph (converted once, see :mod:`blest.nx.graph`) or a
:class:`~blest.nx.graph.BlestGraph`, plus ``device=`` (where blest runs: see :func:`blest.bfs`).
Levels come from :func:`blest.bfs`; where NetworkX's result depends on its visiting order (the
edges, parents and layers of its BFS), :func:`~blest.nx.order.nx_bfs_order` rebuilds that order
from the levels, so the results equal NetworkX's, order included. Generators stay generators
and raise, like NetworkX's, when first advanced.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterator
from typing import Any

import numpy as np

from blest.api import bfs as _bfs
from blest.nx.graph import BlestGraph, as_blest
from blest.nx.order import nx_bfs_order

__all__ = [
    "bfs_edges",
    "bfs_layers",
    "bfs_predecessors",
    "bfs_successors",
    "bfs_tree",
    "descendants_at_distance",
    "single_source_shortest_path_length",
]


def _nx() -> Any:
    import networkx

    return networkx


def _limit(depth: Any) -> int | None:
    """NetworkX's depth bound (``cutoff``, ``depth_limit``) as the last level to compute:
    its loops run while ``level < depth``, so ceil(depth), at least 0 (also for NaN, which no
    level is below); None for unbounded."""
    if depth is None:
        return None
    if isinstance(depth, float):
        if math.isnan(depth):
            return 0
        if math.isinf(depth):
            return None if depth > 0 else 0
    return max(0, math.ceil(depth))


def _missing(bg: BlestGraph, node: Any) -> Exception:
    kind = "digraph" if bg.directed else "graph"
    return _nx().NetworkXError(f"The node {node} is not in the {kind}.")


def _layers(
    bg: BlestGraph,
    first: list[int],
    limit: int | None,
    device: Any,
    reverse: bool = False,
    sort_neighbors: Any = None,
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """NetworkX's BFS layers and parents from the vertices ``first`` (in NetworkX's order);
    ``sort_neighbors`` orders each vertex's neighbours as NetworkX's ``bfs_edges`` does."""
    backwards = reverse and bg.directed
    graph = bg.reversed_graph if backwards else bg.graph
    levels = _bfs(graph, first, depth_limit=limit, device=device)
    ptr, idx = bg.pred if backwards else bg.succ
    if sort_neighbors is not None:
        ptr, idx = _sorted_adjacency(bg, ptr, idx, levels, sort_neighbors)
    return nx_bfs_order(levels, np.asarray(first, dtype=np.int64), ptr, idx)


def _sorted_adjacency(
    bg: BlestGraph, ptr: np.ndarray, idx: np.ndarray, levels: np.ndarray, sort_neighbors: Any
) -> tuple[np.ndarray, np.ndarray]:
    """The adjacency with each reached vertex's neighbours in ``sort_neighbors`` order (called,
    as NetworkX calls it, with an iterator over the neighbours' labels)."""
    nodes, index = bg.nodes, bg.index
    rows = [idx[ptr[u] : ptr[u + 1]] for u in range(len(nodes))]
    for u in np.flatnonzero(levels >= 0).tolist():
        labels = [nodes[v] for v in rows[u].tolist()]
        rows[u] = np.array([index[w] for w in sort_neighbors(iter(labels))], dtype=np.int32)
    degree = np.fromiter((r.size for r in rows), dtype=np.int64, count=len(rows))
    out_ptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(degree, out=out_ptr[1:])
    out_idx = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int32)
    return out_ptr, out_idx.astype(np.int32, copy=False)


def single_source_shortest_path_length(
    G: Any, source: Any, cutoff: Any = None, *, device: Any = None
) -> dict:
    """Distances from ``source`` to every node it reaches, as NetworkX returns them."""
    bg = as_blest(G)
    if source not in bg:
        raise _nx().NodeNotFound(f"Source {source} is not in G")
    levels = _bfs(bg.graph, bg.index[source], depth_limit=_limit(cutoff), device=device)
    reached = np.flatnonzero(levels >= 0)
    reached = reached[np.argsort(levels[reached], kind="stable")]
    nodes = bg.nodes
    return dict(zip([nodes[i] for i in reached.tolist()], levels[reached].tolist(), strict=True))


def _edges(
    G: Any, source: Any, reverse: bool, depth_limit: Any, device: Any, sort_neighbors: Any = None
) -> Iterator[tuple[Any, Any]]:
    bg = as_blest(G)
    if source not in bg:
        raise _missing(bg, source)
    limit = _limit(depth_limit)
    if limit == 0:
        return
    layers, parents = _layers(bg, [bg.index[source]], limit, device, reverse, sort_neighbors)
    nodes = bg.nodes
    tails = np.concatenate(parents[1:] or [np.zeros(0, np.int64)]).tolist()
    heads = np.concatenate(layers[1:] or [np.zeros(0, np.int64)]).tolist()
    yield from zip([nodes[u] for u in tails], [nodes[v] for v in heads], strict=True)


def bfs_edges(
    G: Any,
    source: Any,
    reverse: bool = False,
    depth_limit: Any = None,
    sort_neighbors: Any = None,
    *,
    device: Any = None,
) -> Iterator[tuple[Any, Any]]:
    """The edges of NetworkX's BFS tree from ``source``, in NetworkX's order."""
    return _edges(G, source, reverse, depth_limit, device, sort_neighbors)


def bfs_tree(
    G: Any,
    source: Any,
    reverse: bool = False,
    depth_limit: Any = None,
    sort_neighbors: Any = None,
    *,
    device: Any = None,
) -> Any:
    """NetworkX's BFS tree from ``source`` (a ``DiGraph``)."""
    tree = _nx().DiGraph()
    tree.add_node(source)
    tree.add_edges_from(_edges(G, source, reverse, depth_limit, device, sort_neighbors))
    return tree


def bfs_predecessors(
    G: Any, source: Any, depth_limit: Any = None, sort_neighbors: Any = None, *, device: Any = None
) -> Iterator[tuple[Any, Any]]:
    """``(node, predecessor)`` pairs of NetworkX's BFS from ``source``, in its order."""
    return ((t, s) for s, t in _edges(G, source, False, depth_limit, device, sort_neighbors))


def bfs_successors(
    G: Any, source: Any, depth_limit: Any = None, sort_neighbors: Any = None, *, device: Any = None
) -> Iterator[tuple[Any, list]]:
    """``(node, successors)`` pairs of NetworkX's BFS from ``source``, in its order."""
    return _successors(G, source, depth_limit, device, sort_neighbors)


def _successors(
    G: Any, source: Any, depth_limit: Any, device: Any, sort_neighbors: Any
) -> Iterator[tuple[Any, list]]:
    parent, children = source, []  # grouped exactly as NetworkX groups them
    for p, c in _edges(G, source, False, depth_limit, device, sort_neighbors):
        if p == parent:
            children.append(c)
            continue
        yield (parent, children)
        children, parent = [c], p
    yield (parent, children)


def bfs_layers(G: Any, sources: Any, *, device: Any = None) -> Iterator[list]:
    """NetworkX's BFS layers from ``sources`` (a node or an iterable of nodes)."""
    bg = as_blest(G)
    if sources in bg:
        sources = [sources]
    current = list(set(sources))  # NetworkX's layer 0, in NetworkX's order
    for node in current:
        if node not in bg:
            raise _nx().NetworkXError(f"The node {node} is not in the graph.")
    if not current:
        return
    layers, _ = _layers(bg, [bg.index[v] for v in current], None, device)
    nodes = bg.nodes
    for layer in layers:
        yield [nodes[i] for i in layer.tolist()]


def descendants_at_distance(G: Any, source: Any, distance: Any, *, device: Any = None) -> set:
    """The nodes at exactly ``distance`` from ``source``: NetworkX returns the BFS layer i
    with ``i == distance``, so any number equal to a whole i >= 0 (2.0, True) selects layer
    i, and anything else (NaN, 1.5, -1, a string) none."""
    bg = as_blest(G)
    if source not in bg:
        raise _nx().NetworkXError(f"The node {source} is not in the graph.")
    layer = _layer_number(distance)
    if layer is None or layer >= len(bg):
        return set()
    levels = _bfs(bg.graph, bg.index[source], depth_limit=layer, device=device)
    nodes = bg.nodes
    return {nodes[i] for i in np.flatnonzero(levels == layer).tolist()}


def _layer_number(distance: Any) -> int | None:
    """The whole i >= 0 with ``i == distance``, or None."""
    if not isinstance(distance, numbers.Number):
        return None
    try:
        # numbers.Number declares no conversion: one without it raises TypeError, caught below
        real = complex(distance)  # type: ignore[call-overload]
    except (TypeError, ValueError, OverflowError):
        return None
    if real.imag != 0 or not math.isfinite(real.real) or real.real < 0:
        return None
    if not real.real.is_integer():
        return None
    i = int(real.real)
    try:
        return i if bool(i == distance) else None
    except (TypeError, ValueError):
        return None
