"""Betweenness centrality for the NetworkX backend: ``betweenness_centrality`` and
``edge_betweenness_centrality``, unweighted, from :func:`blest.betweenness`.

Sampling (``k``) picks the sources exactly as NetworkX does: its ``py_random_state``
decorator turns ``seed`` into a :class:`random.Random` (or a wrapper of a NumPy generator)
before the call reaches a backend, and the sources are ``seed.sample(list(G), k)``; this
module does the same (converting ``seed`` itself when called directly), so the same seed
gives the same sources and the scores agree with NetworkX's to rounding. NetworkX's own
errors come back for a bad ``k``: ``ValueError`` for more than ``len(G)`` or a negative one,
``ZeroDivisionError`` for 0.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from blest.nx.graph import BlestGraph, as_blest

__all__ = ["betweenness_centrality", "edge_betweenness_centrality"]


def _sampled(bg: BlestGraph, k: Any, seed: Any) -> np.ndarray | None:
    """The positions of NetworkX's sampled sources (None for every node)."""
    if k is None:
        return None
    from networkx.utils import create_py_random_state

    nodes = create_py_random_state(seed).sample(list(bg.nodes), k)
    if len(nodes) == 0:  # a list, or an array from a NumPy generator's wrapper
        raise ZeroDivisionError("k=0 samples no source: the scores would divide by zero")
    return np.array([bg.index[v] for v in nodes], dtype=np.int64)


def _unweighted(weight: Any) -> None:
    if weight is not None:
        raise NotImplementedError("the blest backend computes unweighted betweenness only")


def betweenness_centrality(
    G: Any,
    k: Any = None,
    normalized: bool = True,
    weight: Any = None,
    endpoints: bool = False,
    seed: Any = None,
    *,
    device: Any = None,
) -> dict:
    """NetworkX's ``betweenness_centrality`` (unweighted): a dict over the nodes."""
    from blest.brandes import betweenness

    _unweighted(weight)
    bg = as_blest(G)
    if len(bg.nodes) == 0:
        return {}
    if k == len(bg.nodes):
        k = None  # as NetworkX: every node, and the seed is not drawn from
    sources = _sampled(bg, k, seed)
    scores = betweenness(
        bg.graph, sources=sources, normalized=normalized, endpoints=endpoints, device=device
    )
    return dict(zip(bg.nodes, scores.tolist(), strict=True))


def _nx_edges(bg: BlestGraph) -> tuple[np.ndarray, np.ndarray]:
    """(tails, heads) of ``G.edges()`` in NetworkX's order, as positions: every adjacency
    entry of a directed graph; on an undirected one each edge from the end listed first."""
    ptr, idx = bg.succ
    tails = np.repeat(np.arange(len(bg.nodes), dtype=np.int64), np.diff(ptr))
    heads = np.asarray(idx, dtype=np.int64)
    if not bg.directed:
        first = heads >= tails
        tails, heads = tails[first], heads[first]
    return tails, heads


def edge_betweenness_centrality(
    G: Any,
    k: Any = None,
    normalized: bool = True,
    weight: Any = None,
    seed: Any = None,
    *,
    device: Any = None,
) -> dict:
    """NetworkX's ``edge_betweenness_centrality`` (unweighted, not for multigraphs): a dict
    over ``G.edges()``, in its order."""
    from blest.brandes import edge_betweenness

    _unweighted(weight)
    bg = as_blest(G)
    if bg.multigraph:
        raise NotImplementedError("the blest backend's edge betweenness takes no multigraph")
    n = len(bg.nodes)
    if n == 0:
        return {}
    sources = _sampled(bg, k, seed)
    pairs, scores = edge_betweenness(
        bg.graph, sources=sources, normalized=normalized, device=device
    )
    tails, heads = _nx_edges(bg)
    lo, hi = (tails, heads) if bg.directed else (np.minimum(tails, heads), np.maximum(tails, heads))
    keys = pairs[:, 0] * n + pairs[:, 1]  # sorted
    at = np.searchsorted(keys, lo * n + hi)
    found = at < keys.size
    found[found] = keys[at[found]] == (lo * n + hi)[found]
    values = np.zeros(tails.size, dtype=np.float64)  # self loops: on no shortest path
    values[found] = scores[at[found]]
    nodes = bg.nodes
    return {
        (nodes[u], nodes[v]): x
        for u, v, x in zip(tails.tolist(), heads.tolist(), values.tolist(), strict=True)
    }
