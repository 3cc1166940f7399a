"""CPU multi-source BFS, closeness and harmonic centrality (blest.reference.centrality).

Centralities are checked against NetworkX; levels against the single-source SciPy reference
(on the transposed graph for ``reverse=True``); sums against plain-Python loops that spell out
the contract, float order included.
"""

from __future__ import annotations

from collections import Counter

import networkx as nx
import numpy as np
import pytest
from random_graphs import (
    arcs_of,
    make_directed,
    make_disconnected,
    make_grid,
    make_hubs,
    make_power_law,
    make_uniform,
)

from blest import Graph
from blest.reference import bfs_levels
from blest.reference import centrality as C
from blest.reference.centrality import (
    SourceSums,
    bfs_many_levels,
    closeness,
    closeness_from_sums,
    harmonic,
    harmonic_from_sums,
    source_sums,
    sums_from_levels,
)


# ---------------------------------------------------------------------- helpers
def to_networkx(graph: Graph) -> nx.Graph:
    g = nx.DiGraph() if graph.directed else nx.Graph()
    g.add_nodes_from(range(graph.n))
    src, dst = arcs_of(graph)
    g.add_edges_from(zip(src.tolist(), dst.tolist(), strict=True))
    return g


def transposed(graph: Graph) -> Graph:
    src, dst = arcs_of(graph)
    return Graph.from_arcs(dst, src, graph.n, directed=True)


def python_sums(row: list[int]) -> tuple[int, int, float]:
    """(dist, reach, harmonic) of one level row, exactly as the contract states them."""
    cnt = Counter(level for level in row if level >= 0)
    dist = sum(level * c for level, c in cnt.items())
    reach = sum(cnt.values())
    h = 0.0
    for level in range(1, max(cnt, default=0) + 1):
        h += float(cnt.get(level, 0)) / float(level)
    return dist, reach, h


def assert_identical(a: SourceSums, b: SourceSums) -> None:
    assert a.dist.dtype == b.dist.dtype == np.int64
    assert a.harmonic.dtype == b.harmonic.dtype == np.float64
    np.testing.assert_array_equal(a.dist, b.dist)
    np.testing.assert_array_equal(a.reach, b.reach)
    assert a.harmonic.tobytes() == b.harmonic.tobytes(), "harmonic sums differ in some bit"


def path_graph(n: int, *, directed: bool) -> Graph:
    ids = np.arange(n - 1)
    return Graph.from_arcs(ids, ids + 1, n, directed=directed)


def star_with_isolated(n: int) -> Graph:
    """Vertex 0 adjacent to 1 .. n-3; the last two vertices isolated."""
    leaves = np.arange(1, n - 2)
    return Graph.from_arcs(np.zeros_like(leaves), leaves, n, directed=False)


def empty_graph(n: int, *, directed: bool = False) -> Graph:
    return Graph.from_arcs(np.zeros(0, np.int64), np.zeros(0, np.int64), n, directed=directed)


RANDOM_CASES = {
    "power_law": (make_power_law, 220),
    "uniform": (make_uniform, 180),
    "grid": (make_grid, 240),
    "directed": (make_directed, 220),
    "disconnected": (make_disconnected, 200),
    "hubs": (make_hubs, 120),
}

FIXED_CASES = {
    "n1": lambda: empty_graph(1),
    "n2_edge": lambda: Graph.from_arcs([0], [1], 2, directed=False),
    "n2_arc": lambda: Graph.from_arcs([1], [0], 2, directed=True),
    "n2_no_edge": lambda: empty_graph(2, directed=True),
    "zero_edges": lambda: empty_graph(7),
    "deep_directed_path": lambda: path_graph(150, directed=True),
    "star_isolated": lambda: star_with_isolated(40),
}


def case_graph(name: str, rng: np.random.Generator) -> Graph:
    if name in RANDOM_CASES:
        make, n = RANDOM_CASES[name]
        return make(rng, n)
    return FIXED_CASES[name]()


# ---------------------------------------------------------------------- centrality vs NetworkX
@pytest.mark.parametrize("name", [*RANDOM_CASES, *FIXED_CASES])
def test_centrality_matches_networkx(name, rng):
    graph = case_graph(name, rng)
    g = to_networkx(graph)
    for wf in (True, False):
        ref = nx.closeness_centrality(g, wf_improved=wf)
        expected = np.array([ref[v] for v in range(graph.n)])
        got = closeness(graph, wf_improved=wf)
        assert got.dtype == np.float64 and got.shape == (graph.n,)
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=0)
        # Same float operations in the same order as NetworkX: the same bits.
        np.testing.assert_array_equal(got, expected)
    ref = nx.harmonic_centrality(g)
    expected = np.array([ref[v] for v in range(graph.n)], dtype=np.float64)
    np.testing.assert_allclose(harmonic(graph), expected, rtol=1e-12, atol=0)


def test_directed_centrality_uses_in_arcs():
    # 0 -> 1 -> 2: vertex 2 is reached from both others, vertex 0 from none.
    graph = Graph.from_arcs([0, 1], [1, 2], 3, directed=True)
    np.testing.assert_array_equal(harmonic(graph), [0.0, 1.0, 1.5])
    np.testing.assert_array_equal(closeness(graph, wf_improved=False), [0.0, 1.0, 2.0 / 3.0])


def test_sources_subset_keeps_order_and_repeats(rng):
    graph = make_disconnected(rng, 160)
    g = to_networkx(graph)
    isolated = np.flatnonzero((graph.out_degree == 0) & (graph.in_degree == 0))
    sources = np.concatenate([rng.integers(0, graph.n, 25), isolated[:2], [3, 3, 0]])
    rng.shuffle(sources)
    for wf in (True, False):
        ref = nx.closeness_centrality(g, wf_improved=wf)
        got = closeness(graph, sources.tolist(), wf_improved=wf)
        assert got.shape == (sources.size,)
        np.testing.assert_allclose(got, [ref[int(s)] for s in sources], rtol=1e-12, atol=0)
        np.testing.assert_array_equal(got, closeness(graph, wf_improved=wf)[sources])
    ref = nx.harmonic_centrality(g)
    got = harmonic(graph, sources)
    np.testing.assert_allclose(got, [ref[int(s)] for s in sources], rtol=1e-12, atol=0)
    assert harmonic(graph, []).shape == (0,)
    assert closeness(empty_graph(0)).shape == (0,)


def test_from_sums_edge_cases():
    sums = SourceSums(dist=[0, 6, 3], reach=[1, 4, 2], harmonic=[0.0, 2.5, 0.5])
    np.testing.assert_array_equal(closeness_from_sums(sums, 1), [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(
        closeness_from_sums(sums, 5, wf_improved=False), [0.0, 3.0 / 6, 1.0 / 3]
    )
    np.testing.assert_array_equal(
        closeness_from_sums(sums, 5), [0.0, (3.0 / 6) * (3.0 / 4), (1.0 / 3) * (1.0 / 4)]
    )
    h = harmonic_from_sums(sums)
    np.testing.assert_array_equal(h, sums.harmonic)
    assert h is not sums.harmonic


# ---------------------------------------------------------------------- multi-source levels
def random_sources(rng: np.random.Generator, graph: Graph, k: int) -> np.ndarray:
    """k sources with repeats, including isolated vertices when the graph has any."""
    isolated = np.flatnonzero((graph.out_degree == 0) & (graph.in_degree == 0))
    picks = rng.integers(0, graph.n, k)
    picks[: k // 4] = picks[k // 2 : k // 2 + k // 4]  # repeats
    if isolated.size:
        picks[-3:] = rng.choice(isolated, 3)
    rng.shuffle(picks)
    return picks


# _SEARCH_DEPTH: 1 sends every tree deeper than max(1, n // 64) to pointer jumping;
# 10**9 finds the levels of every tree by binary searches.
@pytest.mark.parametrize("search_depth", [1, 10**9, C._SEARCH_DEPTH])
@pytest.mark.parametrize("make", [make_disconnected, make_grid, make_directed, make_hubs])
def test_bfs_many_levels_equals_bfs_levels(make, search_depth, rng, monkeypatch):
    monkeypatch.setattr(C, "_SEARCH_DEPTH", search_depth)
    graph = make(rng, int(rng.integers(150, 300)))
    sources = random_sources(rng, graph, 40)
    levels = bfs_many_levels(graph, sources)
    assert levels.dtype == np.int32 and levels.shape == (sources.size, graph.n)
    for row, s in zip(levels, sources.tolist(), strict=True):
        np.testing.assert_array_equal(row, bfs_levels(graph, s))
    back = bfs_many_levels(graph, sources, reverse=True)
    flipped = transposed(graph)
    for row, s in zip(back, sources.tolist(), strict=True):
        np.testing.assert_array_equal(row, bfs_levels(flipped, s))


def test_bfs_many_levels_overwrites_out(rng):
    graph = make_disconnected(rng, 200)
    sources = random_sources(rng, graph, 30)
    expected = bfs_many_levels(graph, sources)
    for poison in (np.iinfo(np.int32).max, -1, 0, 7):
        out = np.full((sources.size, graph.n), poison, dtype=np.int32)
        got = bfs_many_levels(graph, sources, out=out)
        assert got is out
        np.testing.assert_array_equal(out, expected)


def test_bfs_many_levels_edge_inputs():
    graph = path_graph(5, directed=True)
    assert bfs_many_levels(graph, []).shape == (0, 5)
    np.testing.assert_array_equal(bfs_many_levels(graph, np.array([4], np.uint8)), [[-1] * 4 + [0]])
    np.testing.assert_array_equal(bfs_many_levels(graph, [4], reverse=True), [[4, 3, 2, 1, 0]])
    np.testing.assert_array_equal(bfs_many_levels(empty_graph(1), [0, 0]), [[0], [0]])


@pytest.mark.parametrize(
    "sources, error",
    [
        ([0, 5], IndexError),
        ([-1], IndexError),
        ([1.5], ValueError),
        ([1.0], ValueError),
        ([True], ValueError),
        (["a"], ValueError),
        ([[0, 1]], ValueError),
        (3, ValueError),
    ],
)
def test_bad_sources(sources, error):
    graph = path_graph(5, directed=False)
    with pytest.raises(error):
        bfs_many_levels(graph, sources)
    with pytest.raises(error):
        closeness(graph, sources)
    with pytest.raises(error):
        source_sums(graph, sources, reverse=False)


def test_bad_out():
    graph = path_graph(5, directed=False)
    good = np.zeros((2, 5), np.int32)
    bfs_many_levels(graph, [0, 1], out=good)
    bad = [
        np.zeros((2, 5), np.int64),
        np.zeros((3, 5), np.int32),
        np.zeros((2, 6), np.int32),
        np.zeros((5, 2), np.int32).T,
        np.zeros((2, 10), np.int32)[:, ::2],
    ]
    frozen = np.zeros((2, 5), np.int32)
    frozen.flags.writeable = False
    for out in [*bad, frozen]:
        with pytest.raises(ValueError):
            bfs_many_levels(graph, [0, 1], out=out)
    with pytest.raises(TypeError):
        bfs_many_levels(graph, [0, 1], out=[[0] * 5] * 2)


# ---------------------------------------------------------------------- sums
def synthetic_levels(rng: np.random.Generator, k: int, n: int, depth: int) -> np.ndarray:
    """Rows with level 0 once and levels -1 .. depth scattered, uneven counts per level."""
    weights = rng.random(depth + 2) ** 3
    levels = rng.choice(np.arange(-1, depth + 1), size=(k, n), p=weights / weights.sum())
    levels[levels == 0] = 1
    levels[:, 0] = 0
    return levels.astype(np.int32)


def test_sums_from_levels_bit_identical_to_python(rng):
    graph = make_power_law(rng, 250)
    real = bfs_many_levels(graph, rng.integers(0, graph.n, 20))
    fake = synthetic_levels(rng, 30, 3000, depth=int(rng.integers(150, 400)))
    for levels in (real, fake, real[:0], np.zeros((3, 1), np.int32)):
        got = sums_from_levels(levels)
        rows = [python_sums(row) for row in levels.tolist()]
        expected = SourceSums(
            dist=[r[0] for r in rows], reach=[r[1] for r in rows], harmonic=[r[2] for r in rows]
        )
        assert_identical(got, expected)
    # The synthetic rows tell the sequential order from NumPy's pairwise summation, so an
    # implementation using np.sum would fail the check above.
    counts = C.level_counts(fake)
    pairwise = (counts[:, 1:] / np.arange(1, counts.shape[1])).sum(axis=1)
    assert pairwise.tobytes() != sums_from_levels(fake).harmonic.tobytes()


def test_level_counts_rejects_bad_levels():
    with pytest.raises(ValueError):
        sums_from_levels(np.array([[0, -2]], np.int32))
    with pytest.raises(ValueError):
        sums_from_levels(np.zeros(4, np.int32))
    with pytest.raises(ValueError):
        sums_from_levels(np.zeros((1, 4)))


@pytest.mark.parametrize("chunk", [1, 3, 17, None])
def test_source_sums_chunks_equal_one_block(chunk, rng):
    graph = make_directed(rng, 200)
    sources = random_sources(rng, graph, 45)
    for reverse in (False, True):
        whole = sums_from_levels(bfs_many_levels(graph, sources, reverse=reverse))
        assert_identical(source_sums(graph, sources, reverse=reverse, chunk=chunk), whole)
    with pytest.raises(ValueError):
        source_sums(graph, sources, reverse=False, chunk=0)


def test_source_sums_container():
    a = SourceSums([1, 2], [3, 4], [0.5, 1.5])
    b = SourceSums([5], [6], [2.5])
    both = SourceSums.concat([a, b])
    assert len(both) == 3 and both.dist.dtype == np.int64
    assert_identical(both.take([2]), b)
    assert_identical(SourceSums.concat([]), SourceSums.zeros(0))
    full = a.scatter([3, 0], 5)
    np.testing.assert_array_equal(full.dist, [2, 0, 0, 1, 0])
    np.testing.assert_array_equal(full.harmonic, [1.5, 0, 0, 0.5, 0])
    assert full.identical(full.take(np.arange(5))) and not full.identical(a)
    with pytest.raises(ValueError):
        SourceSums([1, 2], [3], [0.5, 1.5])
