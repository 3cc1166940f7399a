"""GPU: the exact reductions through every multi-source form (grid, block, smem, queue). The
kernels' pendant harmonic sums bit for bit against the CPU reference, reduced sums and scores
bit-identical to one BFS per vertex on graphs full of leaves, stars, twins, isolated vertices
and two-vertex components (directed ones too), and closeness and harmonic centrality against
NetworkX. Skipped cleanly without a GPU."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_util import requires_gpu
from test_reductions import _nx, reducible

import blest.centrality as bc
from blest.codegen.msspec import MSSpec, ms_variants
from blest.graph.prepared import Prepared
from blest.graph.reductions import plan_sources
from blest.reference.centrality import source_sums

pytestmark = [pytest.mark.gpu, requires_gpu]

FORMS = ("grid", "block", "smem", "queue")


@pytest.fixture(scope="module")
def graphs():
    seed = int(np.random.SeedSequence().entropy) % 2**32
    print(f"reducible graphs seed {seed}")
    rng = np.random.default_rng(seed)
    made = {f"undirected-{n}": reducible(rng, n) for n in (300, 1200)}
    made["directed"] = reducible(rng, 600, directed=True)
    return rng, made


def _engine(graph, spec: MSSpec, eta: float):
    from blest.runtime.engine import Engine

    eng = Engine(Prepared.from_graph(graph, spec.sigma))
    eng.many.configure(spec=spec, eta=eta, dense=None)
    return eng


def _specs(rng, form: str) -> list[MSSpec]:
    """Two variants of ``form`` drawn at random, at sigma 8."""
    specs = [s for s in ms_variants(sigma=8) if s.form == form]
    return [specs[int(i)] for i in rng.choice(len(specs), min(2, len(specs)), replace=False)]


@pytest.mark.parametrize("form", FORMS)
def test_pendant_sums_equal_the_reference(graphs, form):
    rng, made = graphs
    for name, graph in made.items():
        for spec in _specs(rng, form):
            with _engine(graph, spec, float(rng.choice([0.0, 2.0, 50.0]))) as eng:
                users = rng.integers(0, graph.n, int(rng.integers(1, 400)))
                got = eng.source_sums(users, pendant=True)
                want = source_sums(graph, users, reverse=graph.directed, pendant=True)
                assert got.identical(want), (spec.name, name)
                assert eng.source_sums(users).pendant is None


@pytest.mark.parametrize("form", FORMS)
def test_reduced_sums_bit_identical_to_unreduced(graphs, form):
    rng, made = graphs
    for name, graph in made.items():
        for spec in _specs(rng, form):
            with _engine(graph, spec, float(rng.choice([0.0, 2.0, 50.0]))) as eng:
                for users in (np.arange(graph.n), rng.integers(0, graph.n, 200)):
                    plan = plan_sources(graph, users)
                    got = plan.expand(eng.source_sums(plan.bfs, pendant=plan.pendant))
                    assert got.identical(eng.source_sums(users)), (spec.name, name)
                    want = source_sums(graph, users, reverse=graph.directed)
                    assert got.identical(want), (spec.name, name)


def test_closeness_and_harmonic_reduced_on_the_gpu(graphs):
    nx = pytest.importorskip("networkx")
    _, made = graphs
    for graph in made.values():
        G = _nx(graph)
        lines: list[str] = []
        c = bc.closeness(graph, device=0, report=lines.append)
        assert c.tobytes() == bc.closeness(graph, device=0, reduce=False).tobytes()
        assert c.tobytes() == bc.closeness(graph, device="cpu").tobytes()
        want = nx.closeness_centrality(G)
        np.testing.assert_allclose(c, [want[v] for v in range(graph.n)], rtol=1e-12)
        h = bc.harmonic(graph, device=0)
        assert h.tobytes() == bc.harmonic(graph, device=0, reduce=False).tobytes()
        want = nx.harmonic_centrality(G)
        np.testing.assert_allclose(h, [want[v] for v in range(graph.n)], rtol=1e-12)
        assert len(lines) == 1
