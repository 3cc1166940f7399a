"""GPU correctness of the multi-source kernels: every kappa and form against SciPy on every graph
class, with repeated and isolated sources; closeness and harmonic centrality against NetworkX to
1e-12; sums bit-identical to the CPU path. Skipped cleanly without a GPU."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_util import path_like, requires_gpu, seeded_zoo

from blest.codegen.msspec import MSSpec, ms_variants
from blest.graph.ordering import rcm
from blest.graph.prepared import Prepared
from blest.reference import bfs_levels
from blest.reference.centrality import source_sums

pytestmark = [pytest.mark.gpu, requires_gpu]

POISON = np.int32(0x5A5A5A5A)


@pytest.fixture(scope="module")
def zoo():
    return seeded_zoo()


def _engine(graph, sigma=8, perm=None, **ms):
    from blest.runtime.engine import Engine

    eng = Engine(Prepared.from_graph(graph, sigma, perm))
    if ms:  # the batched kernel for every vertex too (tests/test_dense_gpu.py: the dense form)
        eng.many.configure(**{"dense": None, **ms})
    return eng


def _sources(rng, graph, k):
    """k sources with repeats and, where there are some, isolated vertices."""
    picks = rng.integers(0, graph.n, k)
    if k > 3:
        picks[1] = picks[0]  # a repeat
        isolated = np.flatnonzero((graph.out_degree == 0) & (graph.in_degree == 0))
        if isolated.size:
            picks[2] = rng.choice(isolated)
    return picks


def _random_spec(rng, sigma=8, form=None) -> MSSpec:
    """A valid variant drawn at random (``form`` fixed when given)."""
    forms = ("grid", "block", "smem", "queue") if form is None else (form,)
    specs = [s for s in ms_variants(sigma=sigma) if s.form in forms]
    return specs[int(rng.integers(len(specs)))]


@pytest.mark.parametrize(
    "kappa,form,expand,layout",
    sorted({(s.kappa, s.form, s.expand, s.layout) for s in ms_variants()}),
)
def test_bfs_many_matches_scipy(zoo, kappa, form, expand, layout):
    rng, graphs = zoo
    for name, graph in graphs.items():
        sigma = int(rng.choice([4, 8, 16, 32]))
        eta = float(rng.choice([0.0, 0.5, 4.0, 1e9]))  # never, sometimes, always bottom-up
        spec = MSSpec(sigma, kappa, form, expand, layout)
        block = int(rng.choice([64, 256]))
        with _engine(graph, sigma, spec=spec, eta=eta, block_size=block) as eng:
            k = int(rng.integers(1, 3 * max(kappa, 16)))
            srcs = _sources(rng, graph, k)
            out = np.full((k, graph.n), POISON, dtype=np.int32)
            got = eng.bfs_many(srcs, out=out)
            assert got is out
            for i, s in enumerate(srcs):
                want = bfs_levels(graph, int(s))
                np.testing.assert_array_equal(got[i], want, err_msg=f"{spec.name} {name} {s}")


@pytest.mark.parametrize("form", ["grid", "block", "smem", "queue"])
def test_sums_bit_identical_to_cpu(zoo, form):
    rng, graphs = zoo
    for name, graph in graphs.items():
        spec = _random_spec(rng, form=form)
        with _engine(graph, 8, spec=spec, eta=float(rng.choice([0.0, 2.0, 50.0]))) as eng:
            srcs = _sources(rng, graph, int(rng.integers(1, 300)))
            got = eng.source_sums(srcs)
            want = source_sums(graph, srcs, reverse=graph.directed)
            assert got.identical(want), (spec.name, name)


def test_reordered_graph_and_slot_reuse(zoo):
    rng, _ = zoo
    graph = path_like(rng, 3000)  # hundreds of levels
    perm = rcm(graph)
    srcs = rng.integers(0, graph.n, 200)
    specs = (MSSpec(8, 32, "block"), MSSpec(32, 64, "grid"), MSSpec(8, 64, "smem", "csr"),
             MSSpec(8, 4, "queue", "csr"))  # fmt: skip
    for spec in specs:
        eng = _engine(graph, spec.sigma, perm, spec=spec)
        eng.many.runner()  # a block or smem runner with two slots: batches reuse slots
        if spec.form != "grid":
            from blest.runtime.ms_runner import MSRunner

            eng.many._runners[False] = MSRunner(eng.prepared, spec, max_slots=2)
        seen: list[tuple[int, int]] = []
        got = eng.bfs_many(srcs, progress=lambda *a, seen=seen: seen.append(a))
        for i in rng.choice(len(srcs), 12, replace=False):
            np.testing.assert_array_equal(got[i], bfs_levels(graph, int(srcs[i])))
        assert seen and seen[-1][0] == seen[-1][1] and seen[-1][1] >= len(srcs)
        assert all(a[0] <= b[0] for a, b in zip(seen, seen[1:], strict=False))
        eng.close()


def test_closeness_and_harmonic_match_networkx(zoo):
    nx = pytest.importorskip("networkx")
    rng, graphs = zoo
    names = ["power_law", "directed", "disconnected", "grid", "hubs", "uniform"]
    for name in names:
        graph = graphs[name]
        G = nx.DiGraph() if graph.directed else nx.Graph()
        G.add_nodes_from(range(graph.n))
        src = np.repeat(np.arange(graph.n), np.diff(graph.out_ptr))
        G.add_edges_from(zip(src.tolist(), graph.out_idx.tolist(), strict=True))
        spec = _random_spec(rng)
        with _engine(graph, 8, spec=spec) as eng:
            for wf in (True, False):
                want = nx.closeness_centrality(G, wf_improved=wf)
                got = eng.closeness(wf_improved=wf)
                np.testing.assert_allclose(got, [want[v] for v in range(graph.n)], rtol=1e-12)
            want = nx.harmonic_centrality(G)
            np.testing.assert_allclose(
                eng.harmonic(), [want[v] for v in range(graph.n)], rtol=1e-12, atol=0
            )
            some = rng.choice(graph.n, 7)
            np.testing.assert_allclose(eng.closeness(some), eng.closeness()[some], rtol=0)


def test_default_multi_source_variant_warns(zoo):
    _, graphs = zoo
    graph = graphs["uniform"]
    eng = _engine(graph, 8)
    with pytest.warns(RuntimeWarning, match="not tuned for many sources"):
        got = eng.bfs_many([0, 1])
    np.testing.assert_array_equal(got[1], bfs_levels(graph, 1))
    eng.close()
