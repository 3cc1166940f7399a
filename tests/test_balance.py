"""Sources shared by predicted cost (blest.runtime.balance, partition(costs=...)): the component
cost model against SciPy's labelling, the longest-first assignment, and its properties: every
position exactly once, whole batches, deterministic, one rank takes all, and a skewed graph (a
big component among many isolated vertices) balanced better than round robin."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from random_graphs import make_directed, make_disconnected, make_power_law
from scipy.sparse.csgraph import connected_components

from blest.graph.core import Graph
from blest.runtime.balance import assign_batches, batch_costs, component_costs, share
from blest.runtime.distributed import batches, partition


def _brute_costs(g: Graph) -> np.ndarray:
    _, labels = connected_components(g.out_csr, directed=True, connection="weak")
    out = np.zeros(g.n, np.int64)
    degree = np.diff(g.out_ptr)
    for c in np.unique(labels):
        members = labels == c
        out[members] = members.sum() + degree[members].sum()
    return out


@pytest.mark.parametrize("make", [make_disconnected, make_directed, make_power_law])
def test_component_costs_are_vertices_plus_arcs_of_the_component(rng, make):
    for _ in range(4):
        g = make(rng, int(rng.integers(2, 300)))
        np.testing.assert_array_equal(component_costs(g), _brute_costs(g))


def test_component_costs_of_edge_cases():
    empty = Graph.from_arcs(np.zeros(0, int), np.zeros(0, int), 0, directed=False)
    assert component_costs(empty).size == 0
    lonely = Graph.from_arcs(np.zeros(0, int), np.zeros(0, int), 5, directed=False)
    np.testing.assert_array_equal(component_costs(lonely), np.ones(5))
    pair = Graph.from_arcs(np.array([3]), np.array([1]), 4, directed=True)  # weak: 1 - 3
    np.testing.assert_array_equal(component_costs(pair), [1, 3, 1, 3])


def test_batch_costs_sum_whole_batches_plus_a_fixed_cost():
    np.testing.assert_array_equal(batch_costs(np.arange(7), 3, 10), [13, 22, 16])
    assert batch_costs(np.zeros(0, np.int64), 4, 10).size == 0


def test_assign_batches_is_longest_first_to_the_least_loaded_rank():
    # 9 to rank 0, 8 to rank 1, 7 to rank 1 (8 < 9), then both 3s (ties: batch order) to
    # rank 0 (9, then 12 < 15)
    owner = assign_batches(np.array([3, 9, 3, 8, 7]), 2)
    np.testing.assert_array_equal(owner, [0, 0, 0, 1, 1])
    np.testing.assert_array_equal(assign_batches(np.array([5, 5, 5]), 4), [0, 1, 2])  # ties
    assert assign_batches(np.zeros(0, np.int64), 3).size == 0


@settings(max_examples=200, deadline=None)
@given(
    n_sources=st.integers(0, 300),
    kappa=st.integers(1, 40),
    size=st.integers(1, 9),
    seed=st.integers(0, 2**32 - 1),
)
def test_cost_partition_covers_every_position_once_in_whole_batches(n_sources, kappa, size, seed):
    rng = np.random.default_rng(seed)
    n_batches = len(batches(n_sources, kappa))
    costs = rng.integers(0, 4, n_batches) ** rng.integers(0, 12)  # ties and a skew
    parts = [partition(n_sources, kappa, r, size, costs=costs) for r in range(size)]
    np.testing.assert_array_equal(np.sort(np.concatenate(parts)), np.arange(n_sources))
    for r, positions in enumerate(parts):
        assert positions.dtype == np.int64 and np.all(np.diff(positions) > 0)
        owned = np.unique(positions // kappa)
        np.testing.assert_array_equal(  # whole batches only
            positions, [p for b in owned for p in batches(n_sources, kappa)[b]]
        )
        again = partition(n_sources, kappa, r, size, costs=costs.copy())
        np.testing.assert_array_equal(again, positions)  # deterministic
    np.testing.assert_array_equal(
        partition(n_sources, kappa, 0, 1, costs=costs), np.arange(n_sources)
    )


def test_partition_checks_the_costs():
    with pytest.raises(ValueError, match="batch costs"):
        partition(10, 4, 0, 2, costs=np.ones(2))


def _skewed(rng) -> Graph:
    """A power-law component of 300 vertices among 3,000 isolated ones, ids shuffled."""
    big = make_power_law(rng, 300)
    perm = rng.permutation(3300)
    src = np.repeat(np.arange(big.n), np.diff(big.out_ptr))
    return Graph.from_arcs(perm[src], perm[big.out_idx], 3300, directed=False)


def _loads(g, users, parts, kappa):
    per_source = component_costs(g)[users]
    return [int(per_source[p].sum()) + g.n * len(np.unique(p // kappa)) for p in parts]


def test_a_skewed_graph_is_balanced_better_than_round_robin(rng):
    g = _skewed(rng)
    users = np.arange(g.n, dtype=np.int64)
    kappa, size = 64, 4
    identity = np.arange(g.n)
    every = np.arange(g.n, dtype=np.int64)
    parts = [share(g, identity, users, every, kappa, r, size) for r in range(size)]
    np.testing.assert_array_equal(np.sort(np.concatenate(parts)), every)
    robin = [partition(g.n, kappa, r, size) for r in range(size)]
    # loads counted per batch of the rank's own list, as the rank runs them
    balanced = _loads(g, users, [np.searchsorted(every, p) for p in parts], kappa)
    dealt = _loads(g, users, robin, kappa)
    total = sum(balanced)
    assert max(balanced) < max(dealt)
    assert max(balanced) <= total / size * 1.15, balanced  # within 15% of a perfect split
    assert share(g, identity, users, every, kappa, 0, 1).tolist() == every.tolist()


def test_share_runs_whole_batches_in_internal_order(rng):
    g = make_disconnected(rng, 500)
    new_of_old = rng.permutation(g.n)
    users = rng.choice(g.n, 400)  # repeats allowed
    todo = np.sort(rng.choice(users.size, 300, replace=False))
    kappa, size = 16, 3
    parts = [share(g, new_of_old, users, todo, kappa, r, size) for r in range(size)]
    np.testing.assert_array_equal(np.sort(np.concatenate(parts)), todo)
    ordered = todo[np.argsort(new_of_old[users[todo]], kind="stable")]
    chunks = [ordered[at : at + kappa].tolist() for at in range(0, ordered.size, kappa)]
    for positions in parts:
        internal = new_of_old[users[positions]]
        assert np.all(np.diff(internal) >= 0)
        mine = positions.tolist()
        for at in range(0, len(mine), kappa):
            assert mine[at : at + kappa] in chunks  # a batch of the ordered list, whole
