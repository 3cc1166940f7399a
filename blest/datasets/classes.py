"""Small random graphs of every class the kernels must handle, for tests and sanitizer runs.

Every generator is ``make_<class>(rng, n) -> Graph`` with exactly ``n`` vertices; randomness
comes only from ``rng`` (a ``numpy.random.Generator``). :func:`graph_zoo` draws one graph of each
class, plus the corner cases (one vertex, no edges, ``n % 32 != 0``, slice sets spanning several
VSSs, several hundred BFS levels).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from blest.graph.core import Graph

__all__ = [
    "GRAPH_CLASSES",
    "graph_zoo",
    "path_like",
    "zoo_sources",
    "arcs_of",
    "make_directed",
    "make_disconnected",
    "make_grid",
    "make_hubs",
    "make_power_law",
    "make_uniform",
    "pick_source",
]


def arcs_of(graph: Graph) -> tuple[np.ndarray, np.ndarray]:
    """All arcs (src, dst) of a graph, from its out-adjacency."""
    src = np.repeat(np.arange(graph.n, dtype=np.int64), np.diff(graph.out_ptr))
    return src, graph.out_idx.astype(np.int64)


def _chung_lu_weights(rng: np.random.Generator, n: int) -> np.ndarray:
    gamma = rng.uniform(2.1, 2.8)
    w = (np.arange(n) + 1.0) ** (-1.0 / (gamma - 1.0))
    return w / w.sum()


def make_power_law(rng: np.random.Generator, n: int) -> Graph:
    """Undirected Chung-Lu graph with a heavy-tailed (power-law, gamma in [2.1, 2.8]) degree
    sequence; ids randomly permuted so hubs are anywhere."""
    p = _chung_lu_weights(rng, n)
    m = int(rng.uniform(2.0, 6.0) * n)
    u, v = rng.choice(n, m, p=p), rng.choice(n, m, p=p)
    perm = rng.permutation(n)
    return Graph.from_arcs(perm[u], perm[v], n, directed=False)


def make_uniform(rng: np.random.Generator, n: int) -> Graph:
    """Undirected Erdos-Renyi-like graph, average degree 1.5 .. 8 (low ones fall apart)."""
    m = int(rng.uniform(0.75, 4.0) * n)
    return Graph.from_arcs(rng.integers(0, n, m), rng.integers(0, n, m), n, directed=False)


def make_grid(rng: np.random.Generator, n: int) -> Graph:
    """Road-like: a 2-D grid of random aspect ratio (row-major ids, high diameter) with 5-25%
    of its edges deleted; ids permuted half of the time."""
    width = max(1, int(round(np.sqrt(n) * rng.uniform(0.3, 1.0))))
    ids = np.arange(n, dtype=np.int64)
    right = ids[(ids % width != width - 1) & (ids + 1 < n)]
    down = ids[ids + width < n]
    src = np.concatenate([right, down])
    dst = np.concatenate([right + 1, down + width])
    keep = rng.random(src.size) < rng.uniform(0.75, 0.95)
    src, dst = src[keep], dst[keep]
    if rng.random() < 0.5:
        perm = rng.permutation(n)
        src, dst = perm[src], perm[dst]
    return Graph.from_arcs(src, dst, n, directed=False)


def make_directed(rng: np.random.Generator, n: int) -> Graph:
    """Asymmetric directed graph: arcs from skewed sources to uniform targets, average
    out-degree 1 .. 5; no reciprocal arc is forced."""
    m = int(rng.uniform(1.0, 5.0) * n)
    src = rng.choice(n, m, p=_chung_lu_weights(rng, n))
    dst = rng.integers(0, n, m)
    perm = rng.permutation(n)
    return Graph.from_arcs(perm[src], perm[dst], n, directed=True)


def make_disconnected(rng: np.random.Generator, n: int) -> Graph:
    """2-5 components of the other classes plus isolated vertices (at least one when n > 1),
    ids shuffled; directed when any component is."""
    n_iso = int(rng.integers(1, max(2, n // 6) + 1)) if n > 1 else n
    rest = n - n_iso
    k = min(int(rng.integers(2, 6)), rest) if rest > 0 else 0
    cuts: np.ndarray | list[int] = (
        np.sort(rng.choice(np.arange(1, rest), k - 1, replace=False)) if k > 1 else []
    )
    sizes: np.ndarray | list[int] = (
        np.diff(np.concatenate([[0], cuts, [rest]])).astype(int) if k else []
    )
    makers = [make_power_law, make_uniform, make_grid, make_directed]
    srcs, dsts, directed, offset = [], [], False, 0
    for size in sizes:
        part = makers[int(rng.integers(len(makers)))](rng, int(size))
        s, d = arcs_of(part)
        srcs.append(s + offset)
        dsts.append(d + offset)
        directed |= part.directed
        offset += int(size)
    perm = rng.permutation(n)
    src = perm[np.concatenate(srcs)] if srcs else np.zeros(0, np.int64)
    dst = perm[np.concatenate(dsts)] if dsts else np.zeros(0, np.int64)
    return Graph.from_arcs(src, dst, n, directed=directed)


GRAPH_CLASSES: dict[str, Callable[[np.random.Generator, int], Graph]] = {
    "power_law": make_power_law,
    "uniform": make_uniform,
    "grid": make_grid,
    "directed": make_directed,
    "disconnected": make_disconnected,
}


def pick_source(rng: np.random.Generator, graph: Graph) -> int:
    """A random vertex with out-degree > 0 three times in four (when there is one), else any."""
    active = np.flatnonzero(graph.out_degree > 0)
    if active.size and rng.random() < 0.75:
        return int(rng.choice(active))
    return int(rng.integers(graph.n))


def make_hubs(rng: np.random.Generator, n: int) -> Graph:
    """A sparse random graph plus 2-4 hubs adjacent to most vertices, so that slice sets hold
    more than tau slices and split into several VSSs at every sigma (not a class of its own).
    Directed half of the time."""
    directed = bool(rng.random() < 0.5)
    hubs = rng.choice(n, min(n, int(rng.integers(2, 5))), replace=False)
    src = [rng.integers(0, n, 2 * n)]
    dst = [rng.integers(0, n, 2 * n)]
    for i, h in enumerate(hubs):
        others = np.flatnonzero(rng.random(n) < rng.uniform(0.6, 1.0))
        src.append(np.full(others.size, h))
        dst.append(others)
        if directed and i > 0 and rng.random() < 0.5:  # the first hub is a source, others vary
            src[-1], dst[-1] = dst[-1], src[-1]
    return Graph.from_arcs(np.concatenate(src), np.concatenate(dst), n, directed=directed)


def path_like(rng: np.random.Generator, n: int) -> Graph:
    """A long, thin grid (3 wide) with a few shortcuts removed: several hundred BFS levels."""
    ids = np.arange(n, dtype=np.int64)
    width = 3
    right = ids[(ids % width != width - 1) & (ids + 1 < n)]
    down = ids[ids + width < n]
    src = np.concatenate([right, down])
    dst = np.concatenate([right + 1, down + width])
    perm = rng.permutation(n)
    return Graph.from_arcs(perm[src], perm[dst], n, directed=False)


def graph_zoo(rng: np.random.Generator) -> dict[str, Graph]:
    """Every graph class the kernels must handle, freshly drawn."""
    empty = np.zeros(0, dtype=np.int64)
    return {
        "power_law": make_power_law(rng, 700),
        "uniform": make_uniform(rng, 1000 + int(rng.integers(1, 31))),  # n % 32 != 0
        "road_deep": path_like(rng, 1000),  # >= 300 levels
        "grid": make_grid(rng, 900),
        "directed": make_directed(rng, 800),
        "disconnected": make_disconnected(rng, 600),
        "hubs": make_hubs(rng, 1500),  # slice sets spanning several VSSs
        "single_vertex": Graph.from_arcs(empty, empty, 1, directed=True),
        "zero_edges": Graph.from_arcs(empty, empty, 77, directed=False),
    }


def zoo_sources(rng: np.random.Generator, graph: Graph, k: int = 2) -> list[int]:
    """k sources: one with out-degree > 0 where there is one, one arbitrary (maybe isolated)."""
    active = np.flatnonzero(graph.out_degree > 0)
    picks = [int(rng.choice(active))] if active.size else []
    while len(picks) < k:
        picks.append(int(rng.integers(graph.n)))
    return picks
