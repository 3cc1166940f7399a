"""Shared helpers of the gpu-marked tests: the skip condition and the graph zoo."""

from __future__ import annotations

import numpy as np
import pytest

from blest import Graph
from blest.codegen import toolchain

requires_gpu = pytest.mark.skipif(not toolchain.have_gpu(), reason="needs an NVIDIA GPU with CuPy")


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
    from random_graphs import (
        make_directed,
        make_disconnected,
        make_grid,
        make_hubs,
        make_power_law,
        make_uniform,
    )

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


def sources(rng: np.random.Generator, graph: Graph, k: int = 2) -> list[int]:
    """k sources: one with out-degree > 0 where there is one, one arbitrary (maybe isolated)."""
    active = np.flatnonzero(graph.out_degree > 0)
    picks = [int(rng.choice(active))] if active.size else []
    while len(picks) < k:
        picks.append(int(rng.integers(graph.n)))
    return picks
