"""GPU correctness of the dense form (all n BFSs at once, sums per target): every variant on
every graph class from poisoned buffers, bit for bit against the CPU reference; parts of the
sources (chunk ranges); closeness and harmonic centrality through the engine, in a reordered
graph, against NetworkX to 1e-12 and the CPU path bit for bit; the default choice; the tuner's
record. Skipped cleanly without a GPU."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from gpu_util import path_like, requires_gpu, seeded_zoo

from blest.codegen.densespec import DenseSpec, chunk_sources, dense_variants
from blest.datasets.classes import make_power_law, make_uniform
from blest.graph.ordering import rcm
from blest.graph.prepared import Prepared
from blest.reference.centrality import bfs_many_levels, source_sums, sums_from_levels

pytestmark = [pytest.mark.gpu, requires_gpu]


@pytest.fixture(scope="module")
def zoo():
    return seeded_zoo()


def _poison(runner) -> None:
    for name in ("visited", "frontier", "cnt"):
        runner._args[name].fill(0xDEADBEEF)
    runner._packed.fill(7)


@pytest.mark.parametrize("spec", list(dense_variants()), ids=lambda s: s.name)
def test_every_vertex_sums_equal_the_reference(zoo, spec):
    from blest.runtime.dense_runner import DenseRunner

    rng, graphs = zoo
    for name, graph in graphs.items():
        block = int(rng.choice([64, 256, 512, 1024]))
        runner = DenseRunner(Prepared.from_graph(graph, 8), spec, block_size=block)
        want = source_sums(graph, np.arange(graph.n), reverse=True)  # distances to each vertex
        for _ in range(2):  # from poison, then again on the same buffers
            _poison(runner)
            assert runner.sums().identical(want), f"{name} b{block}"
        depth = int(bfs_many_levels(graph, np.arange(graph.n)).max())
        assert runner.depth == depth, name
        runner.close()


def test_chunk_ranges_are_exact_parts(rng):
    from blest.runtime.dense_runner import DenseRunner

    spec = DenseSpec(1, 32)
    graph = make_power_law(rng, 5000)
    runner = DenseRunner(Prepared.from_graph(graph, 8), spec)
    step = chunk_sources(spec)
    assert runner.n_chunks == 5
    for chunks in ((0, 1), (2, 5), (4, 5), (1, 3)):
        sources = np.arange(chunks[0] * step, min(graph.n, chunks[1] * step))
        levels = bfs_many_levels(graph, sources, reverse=False)
        want = sums_from_levels(np.ascontiguousarray(levels.T))
        assert runner.sums(chunks).identical(want), chunks
    runner.close()


def _networkx(graph):
    nx = pytest.importorskip("networkx")
    G = nx.DiGraph() if graph.directed else nx.Graph()
    G.add_nodes_from(range(graph.n))
    src = np.repeat(np.arange(graph.n), np.diff(graph.out_ptr))
    G.add_edges_from(zip(src.tolist(), graph.out_idx.tolist(), strict=True))
    return nx, G


def test_engine_closeness_matches_networkx_and_the_cpu(zoo):
    from blest.runtime.engine import Engine
    from blest.runtime.many import DenseChoice

    rng, graphs = zoo
    specs = list(dense_variants())
    for name in ["power_law", "directed", "disconnected", "grid", "hubs", "uniform"]:
        graph = graphs[name]
        nx, G = _networkx(graph)
        spec = specs[int(rng.integers(len(specs)))]
        with Engine(Prepared.from_graph(graph, 8, rcm(graph))) as eng:
            eng.many.configure(dense=DenseChoice(spec, 256))
            for wf in (True, False):
                want = nx.closeness_centrality(G, wf_improved=wf)
                got = eng.closeness(wf_improved=wf)
                np.testing.assert_allclose(got, [want[v] for v in range(graph.n)], rtol=1e-12)
            want = nx.harmonic_centrality(G)
            np.testing.assert_allclose(eng.harmonic(), [want[v] for v in range(graph.n)],
                                       rtol=1e-12, atol=0)  # fmt: skip
            cpu = source_sums(graph, np.arange(graph.n), reverse=True)
            assert eng.source_sums().identical(cpu), name
            assert eng.many.dense_runner() is not None and eng.many.dense_runner().spec == spec
            some = rng.choice(graph.n, 9)  # a part of the vertices: the batched kernel
            np.testing.assert_array_equal(eng.closeness(some), eng.closeness()[some])


def test_default_takes_small_shallow_graphs_only(rng):
    from blest.runtime.engine import Engine

    with Engine(Prepared.from_graph(make_uniform(rng, 3000), 8)) as eng:
        with pytest.warns(RuntimeWarning, match="BFSs at once"):
            sums = eng.source_sums()
        assert eng.many.dense_runner() is not None
        assert sums.identical(source_sums(eng.graph, np.arange(eng.n), reverse=True))
    with Engine(Prepared.from_graph(path_like(rng, 3000), 8)) as eng:  # hundreds of levels
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert eng.many.dense_runner() is None
            sums = eng.source_sums()
        assert sums.identical(source_sums(eng.graph, np.arange(eng.n), reverse=True))


def test_closeness_tuning_records_the_every_vertex_choice(tmp_path, rng):
    import blest
    from blest.centrality import closeness
    from blest.cli import tune_main
    from blest.datasets import write_mtx

    g = make_power_law(rng, 2500)
    write_mtx(g, tmp_path / "g.mtx")
    cfg = tmp_path / "g.blest.json"
    argv = [str(tmp_path / "g.mtx"), "-o", str(cfg), "--workload", "closeness", "--budget", "4"]
    assert tune_main([*argv, "-q"]) == 0
    data = json.loads(cfg.read_text())
    assert "dense" in data["multi_source"] and data["timing"]["dense_candidates"]
    timed = [t for t in data["timing"]["dense_candidates"] if t["seconds"] is not None]
    assert timed
    eng = blest.load_tuned(cfg)
    assert (eng.many.dense_runner() is None) == (data["multi_source"]["dense"] is None)
    got = eng.closeness()
    eng.close()
    assert got.tobytes() == closeness(g, device="cpu").tobytes()
