"""The pull runner's host side without a GPU: the parents it computes from the levels against
the CPU reference's, the arguments it refuses before touching a GPU, and ``blest.bfs(...,
paths=True, parents=True)`` naming parents by the input's ids, as without ``paths``."""

from __future__ import annotations

import numpy as np
import pytest
from random_graphs import GRAPH_CLASSES, make_hubs, path_like

import blest
from blest.codegen.pullspec import PullSpec
from blest.codegen.spec import VariantSpec
from blest.graph.prepared import Prepared
from blest.reference.paths import bfs_paths
from blest.runtime.pull_runner import PullRunner, first_parents


@pytest.mark.parametrize("cls", [*GRAPH_CLASSES, "hubs", "path_like"])
def test_first_parents_equal_the_reference(rng, cls):
    for _ in range(3):
        n = int(rng.integers(2, 250))
        if cls == "hubs":
            g = make_hubs(rng, n)
        elif cls == "path_like":
            g = path_like(rng, max(n, 30))
        else:
            g = GRAPH_CLASSES[cls](rng, n)
        seeds = rng.choice(g.n, int(rng.integers(1, 4)))
        limit = None if rng.random() < 0.5 else int(rng.integers(0, 5))
        levels, parents, _ = bfs_paths(g, seeds, depth_limit=limit, parents=True)
        got = first_parents(g, levels)
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got, parents)


def test_the_runner_refuses_what_it_cannot_run(rng):
    g = GRAPH_CLASSES["directed"](rng, 50)
    with pytest.raises(blest.ArgumentError, match="Prepared"):
        PullRunner(g)
    with pytest.raises(blest.ArgumentError, match="PullSpec"):
        PullRunner(Prepared.from_graph(g), VariantSpec())
    with pytest.raises(blest.ArgumentError, match="block_size"):
        PullRunner(Prepared.from_graph(g), PullSpec(), block_size=100)


@pytest.mark.parametrize("device", ["cpu", "emulator"])
def test_parents_with_paths_are_the_inputs_ids(device):
    nx = pytest.importorskip("networkx")
    G = nx.les_miserables_graph()
    plain = blest.bfs(G, "Valjean", parents=True, device=device)
    levels, parents, counts = blest.bfs(G, "Valjean", parents=True, paths=True, device=device)
    np.testing.assert_array_equal(levels, plain[0])
    assert parents.dtype == object and parents[list(G).index("Valjean")] is None
    blest.validate(G, "Valjean", levels, parents)
    assert counts.tolist() == [len(list(nx.all_shortest_paths(G, "Valjean", v))) for v in G]
