"""GPU correctness of the betweenness kernels: every variant's calls against the CPU runner bit
for bit on fresh random graphs of every class, from poisoned buffers; betweenness against
NetworkX to 1e-9 (directed, disconnected, a grid, a star, power-law; exact and sampled,
normalized or not, endpoints or not); scores bit-identical across batch widths, variants, the
CPU, two local GPU workers and ``mpirun -n 2``; a batch whose counts reach 2^512 falls back to
the CPU. Skipped cleanly without a GPU."""

from __future__ import annotations

import functools
import textwrap

import numpy as np
import pytest
from gpu_util import requires_gpu, seeded_zoo
from mpi_launch import mpi_run, needs_mpi
from test_bc_kernels_cpu import complete_grid, star
from test_betweenness import Picks
from test_paths import diamonds

import blest
from blest.codegen.bcspec import BCSpec, bc_variants
from blest.graph.prepared import Prepared
from blest.reference.betweenness import CPURunner, brandes, run_range
from blest.reference.treesum import combine

pytestmark = [pytest.mark.gpu, requires_gpu]

nx = pytest.importorskip("networkx")


@pytest.fixture(scope="module")
def zoo():
    rng, graphs = seeded_zoo()
    graphs["star"] = star(int(rng.integers(200, 600)))
    graphs["full_grid"] = complete_grid(int(rng.integers(10, 30)), int(rng.integers(10, 40)))
    return rng, graphs


def _runner(graph, spec, **kw):
    from blest.runtime.bc_runner import BCRunner

    return BCRunner(graph, spec, **kw)


def _poison(runner) -> None:
    """Whatever the kernels must write before they read: NaN and garbage."""
    cp = runner._cp
    values = runner._program.values
    for name in ("sigma", "delta", "rows"):
        values[name].fill(cp.nan)
    values["queue"].fill(0x5A5A5A5A)
    values["qoff"].fill(-7)


def _sources(rng, graph, width):
    """Distinct sources, up to three calls' worth (run_range cuts them into aligned calls)."""
    k = min(graph.n, int(rng.integers(1, 3 * width)))
    return rng.choice(graph.n, k, replace=False).astype(np.int64)


@pytest.mark.parametrize("spec", list(bc_variants()), ids=lambda s: s.name)
def test_calls_equal_the_cpu_runner_bit_for_bit(zoo, spec):
    rng, graphs = zoo
    for name, graph in graphs.items():
        slots = int(rng.choice([1, 3, 64]))
        wide = [None, 0, 8, 64][int(rng.integers(4))]  # the form's default, all, some
        kw = {}
        if spec.form == "queue":  # visited bits where they fit (shared), or in global memory
            kw["vis_smem"] = [None, False][int(rng.integers(2))]
        runner = _runner(graph, spec, block_size=int(rng.choice([128, 256, 512, 1024])),
                         max_slots=slots, wide_degree=wide, **kw)  # fmt: skip
        try:
            _poison(runner)
            for endpoints in (False, True):
                cpu = CPURunner(graph, endpoints=endpoints)
                sources = _sources(rng, graph, runner.width)
                ours = run_range(_Ends(runner, endpoints), sources, 0, sources.size)
                want = run_range(cpu, sources, 0, sources.size)
                got = combine(ours, sources.size)
                assert got.tobytes() == combine(want, sources.size).tobytes(), (name, wide)
                node = runner.run_batch(sources[:1], endpoints=endpoints)
                assert node.tobytes() == cpu.run_batch(sources[:1]).tobytes(), name
        finally:
            runner.close()


class _Ends:
    def __init__(self, runner, endpoints):
        self.runner, self.endpoints = runner, endpoints
        self.width, self.length = runner.width, runner.length

    def run_batch(self, sources):
        return self.runner.run_batch(sources, endpoints=self.endpoints)


def _bound(runner, *, edges, endpoints):
    assert not edges
    return _Ends(runner, endpoints)


def _nx_graph(g):
    G = nx.DiGraph() if g.directed else nx.Graph()
    G.add_nodes_from(range(g.n))
    tails = np.repeat(np.arange(g.n), np.diff(g.out_ptr))
    G.add_edges_from(zip(tails.tolist(), np.asarray(g.out_idx).tolist(), strict=True))
    return G


@pytest.mark.parametrize("name", ["directed", "disconnected", "full_grid", "star", "power_law",
                                  "road_deep"])  # fmt: skip
def test_betweenness_equals_networkx(zoo, name):
    rng, graphs = zoo
    graph = graphs[name]
    G = _nx_graph(graph)
    specs = list(bc_variants())
    spec = specs[int(rng.integers(len(specs)))]
    from blest.runtime.engine import Engine

    with Engine(Prepared.from_graph(graph, 8)) as eng:
        eng.betweenness_runners.configure(spec, int(rng.choice([256, 1024])))
        for normalized in (True, False):
            for endpoints in (False, True):
                k = None if rng.random() < 0.5 else int(rng.integers(1, graph.n))
                seed = int(rng.integers(2**31)) if k else None
                ours = brandes(graph, k=k, seed=seed, normalized=normalized, endpoints=endpoints,
                               make_runner=eng.betweenness_runner)  # fmt: skip
                sources = brandes_sources(graph.n, k, seed)
                want = nx.betweenness_centrality(
                    G, k=k, normalized=normalized, endpoints=endpoints,
                    seed=Picks(sources) if k else None,
                )  # fmt: skip
                expected = [want[v] for v in range(graph.n)]
                label = f"{spec.name} k={k} normalized={normalized} endpoints={endpoints}"
                np.testing.assert_allclose(ours, expected, rtol=1e-9, atol=0, equal_nan=True,
                                           err_msg=label)  # fmt: skip
                cpu = brandes(graph, k=k, seed=seed, normalized=normalized, endpoints=endpoints)
                assert ours.tobytes() == cpu.tobytes(), spec.name


def brandes_sources(n, k, seed):
    from blest.reference.betweenness import choose_sources

    return choose_sources(n, k, seed).sources if k else None


def test_scores_do_not_depend_on_width_variant_or_device(zoo):
    rng, graphs = zoo
    for name in ("power_law", "road_deep", "directed"):
        graph = graphs[name]
        want = brandes(graph, endpoints=True).tobytes()  # the CPU runner
        for spec in (BCSpec(32, "block"), BCSpec(8, "grid"), BCSpec(16, "block"),
                     BCSpec(2, "queue"), BCSpec(8, "queue")):  # fmt: skip
            for slots in (1, 5, None):
                runner = _runner(graph, spec, max_slots=slots)
                make = functools.partial(_bound, runner)
                try:
                    got = brandes(graph, endpoints=True, make_runner=make)
                finally:
                    runner.close()
                assert got.tobytes() == want, (name, spec.name, slots)
        assert blest.betweenness(graph, endpoints=True, device=0).tobytes() == want


@pytest.mark.parametrize("spec", [BCSpec(8, "block"), BCSpec(2, "queue")], ids=lambda s: s.name)
def test_counts_past_2_to_the_512_fall_back_to_the_cpu(spec):
    graph, last = diamonds([16] * 130)
    sources = np.array([0, 1, last // 2, last - 1], dtype=np.int64)  # two far ends, two middle
    runner = _runner(graph, spec)
    try:
        with pytest.warns(RuntimeWarning, match="2\\^512"):
            got = runner.run_batch(sources)
        assert got.tobytes() == CPURunner(graph).run_batch(sources).tobytes()
        assert np.isfinite(got).all()
    finally:
        runner.close()


def test_two_local_workers_match_one_gpu(zoo):
    import cupy

    if cupy.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("needs two GPUs")
    rng, graphs = zoo
    for name in ("directed", "road_deep", "power_law"):
        graph = graphs[name]
        one = blest.betweenness(graph, device=0)
        assert blest.betweenness(graph, gpus=2).tobytes() == one.tobytes(), name
        k, seed = min(graph.n, 300), int(rng.integers(2**31))
        sampled = blest.betweenness(graph, k=k, seed=seed, endpoints=True, device=0)
        two = blest.betweenness(graph, k=k, seed=seed, endpoints=True, gpus=2)
        assert two.tobytes() == sampled.tobytes(), name


MPI_SCRIPT = """
import sys
import numpy as np
import blest

data = np.load(sys.argv[1])
graph = blest.Graph.from_arcs(data["src"], data["dst"], int(data["n"]), directed=True)
np.save(sys.argv[2], blest.betweenness(graph))
"""


@needs_mpi
def test_mpirun_ranks_match_one_gpu(zoo, tmp_path):
    _, graphs = zoo
    graph = graphs["directed"]
    src = np.repeat(np.arange(graph.n), np.diff(graph.out_ptr))
    data = tmp_path / "graph.npz"
    np.savez(data, src=src, dst=graph.out_idx, n=graph.n)
    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent(MPI_SCRIPT))
    mpi_run(script, data, tmp_path / "s")
    one = blest.betweenness(blest.Graph.from_arcs(src, graph.out_idx, graph.n, directed=True),
                            device=0)  # fmt: skip
    assert np.load(tmp_path / "s.npy").tobytes() == one.tobytes()


def test_the_betweenness_workload_tunes_and_loads(tmp_path, zoo):
    """blest-tune --workload betweenness picks a variant by timing; the loaded engine runs it,
    and its scores equal the CPU's bit for bit."""
    import json

    from blest.cli import tune_main
    from blest.datasets import write_mtx

    rng, graphs = zoo
    g = graphs["power_law"]
    write_mtx(g, tmp_path / "g.mtx")
    cfg = tmp_path / "g.blest.json"
    argv = [str(tmp_path / "g.mtx"), "-o", str(cfg), "--workload", "betweenness", "--budget", "4"]
    assert tune_main([*argv, "-q"]) == 0
    data = json.loads(cfg.read_text())
    assert data["tuned"] is True and data["betweenness"] is not None
    assert data["timing"]["workload"] == "betweenness" and data["timing"]["bc_candidates"]
    eng = blest.load_tuned(cfg)
    runner = eng.betweenness_runner().runner
    assert runner.spec == BCSpec.from_dict(data["betweenness"]["spec"])
    assert runner.wide_degree == data["betweenness"]["wide_degree"]
    got = brandes(eng.graph, endpoints=True, make_runner=eng.betweenness_runner)
    eng.close()
    assert got.tobytes() == brandes(g, endpoints=True).tobytes()
