"""Closeness and harmonic centrality for the NetworkX backend, from blest's multi-source BFS.

Both measure distances *to* each node (NetworkX reverses a directed graph), unweighted only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from blest.nx.graph import as_blest

__all__ = ["closeness_centrality", "harmonic_centrality"]


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
    """NetworkX's ``harmonic_centrality`` of the nodes of ``nbunch`` (default: all), with paths
    from every node (``sources`` other than all nodes is not supported)."""
    from blest.centrality import harmonic

    bg = as_blest(G)
    labels, ids = _targets(bg, nbunch)
    if ids.size == 0:
        return {}
    scores = harmonic(bg.graph, ids, device=device)
    return dict(zip(labels, scores.tolist(), strict=True))
