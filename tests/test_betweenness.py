"""Betweenness centrality on the CPU against NetworkX (to 1e-9 relative) on fresh graphs:
directed, disconnected, a grid, a star, a power-law graph and a path; exact and sampled,
normalized or not, endpoints or not; edge betweenness; counts past the float64 range against
exact rationals; the sampling, the engines and the errors."""

from __future__ import annotations

import random
from collections import deque
from fractions import Fraction

import numpy as np
import pytest
from random_graphs import arcs_of, make_directed, make_disconnected, make_power_law
from test_paths import diamonds

import blest
from blest.graph.core import Graph
from blest.graph.prepared import Prepared
from blest.reference.betweenness import batch_contributions, choose_sources

nx = pytest.importorskip("networkx")


def to_nx(g: Graph):
    G = nx.DiGraph() if g.directed else nx.Graph()
    G.add_nodes_from(range(g.n))
    src, dst = arcs_of(g)
    G.add_edges_from(zip(src.tolist(), dst.tolist(), strict=True))
    return G


def from_nx(G) -> Graph:
    edges = np.array(list(G.edges()), dtype=np.int64).reshape(-1, 2)
    return Graph.from_arcs(edges[:, 0], edges[:, 1], G.number_of_nodes(), directed=G.is_directed())


def graph(kind: str, rng) -> Graph:
    n = int(rng.integers(60, 160))
    if kind == "directed":
        return make_directed(rng, n)
    if kind == "disconnected":
        return make_disconnected(rng, n)
    if kind == "power_law":
        return make_power_law(rng, n)
    if kind == "grid":  # complete: many shortest paths of one length
        rows = int(rng.integers(5, 12))
        G = nx.convert_node_labels_to_integers(nx.grid_2d_graph(rows, n // rows))
        return from_nx(G)
    if kind == "star":
        return from_nx(nx.star_graph(n - 1))
    return from_nx(nx.path_graph(n))


KINDS = ("directed", "disconnected", "grid", "star", "power_law", "path")


class Picks(random.Random):
    """A NetworkX seed that samples the given positions (NetworkX calls ``seed.sample``)."""

    def __init__(self, picks) -> None:
        super().__init__(0)
        self.picks = [int(p) for p in picks]

    def sample(self, population, k):
        assert k == len(self.picks)
        return [population[i] for i in self.picks]


def same(ours: np.ndarray, want: dict) -> None:
    want = np.array([want[v] for v in range(ours.size)])
    np.testing.assert_allclose(ours, want, rtol=1e-9, atol=0, equal_nan=True)


@pytest.mark.parametrize("kind", KINDS)
def test_vertices_equal_networkx(kind, rng):
    g = graph(kind, rng)
    G = to_nx(g)
    k = int(rng.integers(1, g.n))
    seed = int(rng.integers(2**31))
    picks = choose_sources(g.n, k, seed).sources
    for normalized in (True, False):
        for endpoints in (True, False):
            flags = {"normalized": normalized, "endpoints": endpoints}
            same(blest.betweenness(g, **flags), nx.betweenness_centrality(G, **flags))
            ours = blest.betweenness(g, k=k, seed=seed, **flags)
            same(ours, nx.betweenness_centrality(G, k=k, seed=Picks(picks), **flags))


@pytest.mark.parametrize("kind", KINDS)
def test_edges_equal_networkx(kind, rng):
    g = graph(kind, rng)
    G = to_nx(g)
    k = int(rng.integers(1, g.n))
    picks = rng.permutation(g.n)[:k]  # any order: the sources as NetworkX drew them
    for normalized in (True, False):
        for sources, seed in ((None, None), (picks, Picks(picks))):
            edges, scores = blest.edge_betweenness(g, sources=sources, normalized=normalized)
            want = nx.edge_betweenness_centrality(G, k=None if sources is None else k,
                                                  normalized=normalized, seed=seed)  # fmt: skip
            assert len(want) == edges.shape[0]
            if not g.directed:
                assert np.all(edges[:, 0] < edges[:, 1])
            got = [want[(u, v)] if (u, v) in want else want[(v, u)] for u, v in edges.tolist()]
            np.testing.assert_allclose(scores, got, rtol=1e-9, atol=0)


def test_edges_of_labelled_graph_map_through_vertex_ids(rng):
    """Edge positions of a graph of named nodes turn into its labels via vertex_ids."""
    G = nx.relabel_nodes(nx.gnm_random_graph(30, 70, seed=int(rng.integers(2**31))),
                         {v: f"v{v * 7 % 30:02d}" for v in range(30)})  # fmt: skip
    edges, scores = blest.edge_betweenness(G, device="cpu")
    names = blest.vertex_ids(G)[edges]
    want = nx.edge_betweenness_centrality(G)
    assert len(want) == len(scores)
    got = [want[(a, b)] if (a, b) in want else want[(b, a)] for a, b in names.tolist()]
    np.testing.assert_allclose(scores, got, rtol=1e-9, atol=0)


def exact_dependencies(g: Graph, s: int) -> list[Fraction]:
    """Brandes' dependencies of source s with exact integers and rationals."""
    ptr, idx = g.out_ptr.tolist(), g.out_idx.tolist()
    dist, sigma, order = {s: 0}, [0] * g.n, []
    preds: list[list[int]] = [[] for _ in range(g.n)]
    sigma[s] = 1
    queue = deque([s])
    while queue:
        v = queue.popleft()
        order.append(v)
        for w in idx[ptr[v] : ptr[v + 1]]:
            if w not in dist:
                dist[w] = dist[v] + 1
                queue.append(w)
            if dist[w] == dist[v] + 1:
                sigma[w] += sigma[v]
                preds[w].append(v)
    delta = [Fraction(0)] * g.n
    for w in reversed(order):
        for v in preds[w]:
            delta[v] += Fraction(sigma[v], sigma[w]) * (1 + delta[w])
    return delta


def test_counts_past_the_float64_range(rng):
    """2**1100 * 3**40 shortest paths: counts are scaled per level by powers of two, so the
    dependencies stay finite and right (NetworkX's float counts overflow here)."""
    widths = [2] * 1100 + [3] * 40
    order = rng.permutation(len(widths))
    g, last = diamonds([widths[i] for i in order])
    for s in (0, 1, last // 2):
        got = batch_contributions(g, np.array([s]))[0]
        want = exact_dependencies(g, s)
        want[s] = Fraction(0)
        assert np.all(np.isfinite(got))
        np.testing.assert_allclose(got, [float(x) for x in want], rtol=1e-12, atol=0)


def test_sampling_is_seeded_and_documented(rng):
    g = make_power_law(rng, 120)
    a = blest.betweenness(g, k=30, seed=7)
    assert a.tobytes() == blest.betweenness(g, k=30, seed=7).tobytes()
    picks = np.sort(np.random.default_rng(7).choice(g.n, 30, replace=False))
    np.testing.assert_array_equal(choose_sources(g.n, 30, 7).sources, picks)
    assert a.tobytes() == blest.betweenness(g, sources=picks).tobytes()
    assert a.tobytes() != blest.betweenness(g, k=30, seed=8).tobytes()
    every = blest.betweenness(g)
    assert blest.betweenness(g, k=g.n, seed=3).tobytes() == every.tobytes()  # k == n: exact


def test_engines_give_the_same_bits(rng):
    g = make_directed(rng, 100)
    want = blest.betweenness(g, endpoints=True)
    want_edges = blest.edge_betweenness(g)
    sources = np.array([5, 1, 9, 2])
    kept = sources.copy()
    for device in ("cpu", "emulator"):
        with blest.make_engine(Prepared.from_graph(g), device=device) as eng:
            assert eng.betweenness(endpoints=True).tobytes() == want.tobytes()
            edges, scores = eng.betweenness(edges=True)
            assert edges.tobytes() == want_edges[0].tobytes()
            assert scores.tobytes() == want_edges[1].tobytes()
            got = eng.betweenness(sources=sources)
            assert got.tobytes() == blest.betweenness(g, sources=sources).tobytes()
    np.testing.assert_array_equal(sources, kept)  # inputs untouched


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"k": 0}, "k must be in"),
        ({"k": 10_000}, "k must be in"),
        ({"k": True}, "integer"),
        ({"k": 2.5}, "integer"),
        ({"seed": 3}, "seed= only applies"),
        ({"sources": [1, 1]}, "repeat"),
        ({"sources": [-1]}, "vertex ids"),
        ({"sources": []}, "non-empty"),
        ({"sources": [1], "k": 1}, "not both"),
    ],
)
def test_user_errors(kwargs, match, rng):
    g = make_power_law(rng, 50)
    with pytest.raises(blest.ArgumentError, match=match):
        blest.betweenness(g, **kwargs)
