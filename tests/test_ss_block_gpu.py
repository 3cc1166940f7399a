"""GPU: the single-source block launch (``launch="block"``: the whole BFS in one thread block, or
in one thread-block cluster of 2 to 16 blocks) through the engine, against SciPy on every graph
class of the zoo, natural and RCM-ordered, in blocks of 64, 256 and 1024 threads: one seed and
several, parents (the kernels' rule and blest.validate), depth limits with their statistics,
``out="device"`` and CuPy outputs, poisoned outputs, the level timeline, every sigma, the
factory's geometry, many-source calls on the same engine, and the shared-memory limit (the
largest graph that fits runs, one vertex more is refused before anything is built). Skipped
cleanly without a GPU."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_util import path_like, requires_gpu, seeded_zoo, sources

import blest
from blest import VariantSpec
from blest.codegen.contract import BLOCK_SMEM_QUEUE, block_max_vertices
from blest.defaults import SIGMAS
from blest.errors import ArgumentError, EngineError
from blest.graph.core import Graph
from blest.graph.ordering import rcm
from blest.graph.prepared import Prepared
from blest.reference import ScipyBFS, emulate_parents, validate_bfs

pytestmark = [pytest.mark.gpu, requires_gpu]

POISON = np.int32(0x5A5A5A5A)
SPEC = VariantSpec.block(8)


@pytest.fixture(scope="module")
def zoo():
    return seeded_zoo()


def _engine(graph, spec=SPEC, **kw):
    from blest.runtime.engine import Engine

    return Engine(graph, spec, **kw)


def _host(a):
    return a.get() if hasattr(a, "get") and not isinstance(a, np.ndarray) else np.asarray(a)


def seed_lists(rng, graph) -> list:
    """One active seed (an int), two seeds with a repeat, 40 arbitrary seeds."""
    one, other = sources(rng, graph, 2)
    many = [int(x) for x in rng.integers(0, graph.n, 40)]
    return [one, [other, one, other], many]


def expected_parents(eng, levels_user: np.ndarray) -> np.ndarray:
    """The parents post-pass rule on the reordered graph, mapped to the user's ids."""
    old = np.asarray(eng.permutation.old_of_new)
    rule = emulate_parents(levels_user[old], _host(eng.prepared.in_ptr), _host(eng.prepared.in_idx))
    out = np.full(eng.n, -1, dtype=np.int32)
    out[old] = np.where(rule >= 0, old[np.maximum(rule, 0)], -1)
    return out


def check_stats(eng, want: np.ndarray, seeds, limit: int | None = None) -> None:
    """The statistics of the last call, as the persistent driver reports them."""
    deepest = int(want.max())
    st = eng.stats
    assert st.visited == int((want >= 0).sum())
    assert st.seeds == np.unique(seeds).size and st.bottom_up_levels == ()
    assert st.source == (seeds if np.ndim(seeds) == 0 else seeds[0])
    assert st.traversal_ms >= 0
    if limit is None:
        assert (st.depth, st.levels_run) == (deepest, deepest + 1)
    else:  # want is already cut at the limit
        assert st.depth == deepest and st.levels_run == min(limit, deepest + 1)


SHAPES = [(1, 64), (1, 256), (1, 1024), (2, 64), (4, 256), (8, 1024), (16, 256), (16, 1024)]


@pytest.mark.parametrize(("cluster", "block_size"), SHAPES, ids=[f"c{c}b{b}" for c, b in SHAPES])
@pytest.mark.parametrize("ordered", [False, True], ids=["natural", "rcm"])
def test_levels_parents_and_limits_match_scipy(zoo, cluster, block_size, ordered):
    import cupy as cp

    rng, graphs = zoo
    spec = VariantSpec.block(8, cluster)
    for name, graph in graphs.items():
        perm = rcm(graph) if ordered else None
        runner = ScipyBFS(graph)
        with _engine(graph, spec, permutation=perm, block_size=block_size) as eng:
            assert (eng.grid_size, eng.block_size) == (cluster, block_size)
            assert eng._tr.smem_queue == min(BLOCK_SMEM_QUEUE, graph.n)
            for seeds in seed_lists(rng, graph):
                ctx = f"{name} rcm={ordered} threads={block_size} seeds={seeds}"
                want = runner.run(np.atleast_1d(seeds))[0]
                out = np.full(graph.n, POISON, dtype=np.int32)
                got = eng.bfs(seeds, out=out)
                assert got is out
                np.testing.assert_array_equal(got, want, err_msg=ctx)
                check_stats(eng, want, seeds)
                levels, parents = eng.bfs(seeds, parents=True)
                np.testing.assert_array_equal(levels, want, err_msg=ctx)
                np.testing.assert_array_equal(parents, expected_parents(eng, want), err_msg=ctx)
                validate_bfs(graph, seeds, levels, parents)
                for limit in sorted({0, 1, int(want.max()) // 2}):
                    cut = np.where(want <= limit, want, -1)
                    np.testing.assert_array_equal(eng.bfs(seeds, depth_limit=limit), cut, ctx)
                    check_stats(eng, cut, seeds, limit)
                dev = eng.bfs(seeds, out="device")
                assert isinstance(dev, cp.ndarray)
                np.testing.assert_array_equal(dev.get(), want, err_msg=ctx)
                mine = cp.full(graph.n, int(POISON), dtype=cp.int32)
                assert eng.bfs(seeds, out=mine) is mine
                np.testing.assert_array_equal(mine.get(), want, err_msg=ctx)


@pytest.mark.parametrize("cluster", [1, 4])
def test_deep_reordered_graph_many_seeds_and_the_timeline(zoo, cluster):
    rng, _ = zoo
    graph = path_like(rng, 3000)
    runner = ScipyBFS(graph)
    spec = VariantSpec.block(8, cluster)
    kw = {"permutation": rcm(graph), "block_size": 1024, "record_levels": True}
    with _engine(graph, spec, **kw) as eng:
        src = sources(rng, graph, 1)[0]
        want = runner.run(np.array([src]))[0]
        assert want.max() >= 300
        np.testing.assert_array_equal(eng.bfs(src), want)
        times, bottom_up = eng.probes.level_times_ms()
        assert len(times) == eng.stats.levels_run == want.max() + 1 and bottom_up == ()
        assert (times >= 0).all() and times.sum() <= eng.stats.traversal_ms * 1.05 + 0.05
        assert eng.probes.stage_times_ms() is None
        with pytest.raises(EngineError, match="shared memory"):
            eng.probes.debug_state()
        for k in (2, 33, 1000, graph.n):
            seeds = rng.choice(graph.n, k, replace=False)
            levels, parents = eng.bfs(seeds, parents=True)
            np.testing.assert_array_equal(levels, runner.run(seeds)[0])
            validate_bfs(graph, seeds, levels, parents)
        assert (levels == 0).all() and (parents == -1).all()  # every vertex a seed
        assert eng.stats.visited == graph.n and eng.stats.depth == 0


def test_every_sigma_and_the_factory_geometry(zoo):
    from blest.runtime import make_engine
    from blest.runtime.engine_protocol import Geometry

    rng, graphs = zoo
    graph = graphs["directed"]
    src = sources(rng, graph, 1)[0]
    want = ScipyBFS(graph).run(np.array([src]))[0]
    for sigma in SIGMAS:
        prep = Prepared.from_graph(graph, sigma, rcm(graph))
        geometry = Geometry(1024, 1, None, None)
        with make_engine(prep, VariantSpec.block(sigma), geometry=geometry, device="gpu") as eng:
            assert eng.spec.name == f"s{sigma}_block" and eng.block_size == 1024
            np.testing.assert_array_equal(eng.bfs(src), want)
            assert "blest_bfs_block" in eng.source and ".entry blest_bfs_block" in eng.ptx


def test_many_source_calls_on_a_block_engine(zoo):
    rng, graphs = zoo
    graph = graphs["road_deep"]
    picks = sources(rng, graph, 4)
    with _engine(graph, permutation=rcm(graph)) as eng:
        with pytest.warns(RuntimeWarning, match="not tuned for many sources"):
            rows = eng.bfs_many(picks)  # the default kernel is chosen from a block-launch BFS
        for row, s in zip(rows, picks, strict=True):
            np.testing.assert_array_equal(row, ScipyBFS(graph).run(np.array([s]))[0])
        got = eng.closeness(sources=picks)
    np.testing.assert_allclose(got, blest.closeness(graph, sources=picks, device="cpu"), rtol=1e-12)


def test_the_shared_memory_limit(monkeypatch):
    """The largest graph whose bitmap fits runs (every queue entry in global memory); one
    vertex more is refused before anything is prepared, saying how many vertices fit."""
    import cupy as cp

    from blest.codegen.toolchain import require_gpu
    from blest.runtime import device as runtime_device
    from blest.runtime import traversal

    device, arch, _ = require_gpu()
    limit = runtime_device.device_smem_limit(cp, device)
    most = block_max_vertices(limit)
    if arch == "sm_90":
        assert most > 1_800_000  # 227 KiB a block on Hopper
    empty = np.zeros(0, dtype=np.int64)
    with pytest.raises(ArgumentError, match=f"{most:,} vertices here"):
        _engine(Graph.from_arcs(empty, empty, most + 1, directed=False))
    one_edge = Graph.from_arcs(np.array([0]), np.array([most - 1]), most, directed=False)
    with _engine(one_edge) as eng:
        assert eng._tr.smem_queue == 0
        levels = eng.bfs(most - 1)
        assert levels[0] == 1 and levels[most - 1] == 0 and (levels[1:-1] == -1).all()
    for module in (runtime_device, traversal):
        monkeypatch.setattr(module, "device_smem_limit", lambda cp, device: 64)
    with pytest.raises(ArgumentError, match="512 vertices here, and the graph has 700"):
        _engine(path_like(np.random.default_rng(0), 700))


@pytest.mark.parametrize("cluster", [2, 16])
def test_cluster_levels_wider_than_shared_memory_queues(cluster, monkeypatch):
    """A power-law graph whose widest levels overflow each block's shared-memory queue (cut to
    256 entries here), so entries spill to global memory and blocks read each other's spills;
    hubs of thousands of arcs walked by whole warps. Several seeds and captured calls, against
    SciPy."""
    from blest.datasets.classes import make_power_law
    from blest.runtime import ss_buffers

    cut = ss_buffers.block_smem_queue
    monkeypatch.setattr(ss_buffers, "block_smem_queue", lambda *a, **k: min(256, cut(*a, **k)))
    rng = np.random.default_rng()
    graph = make_power_law(rng, 60_000)
    runner = ScipyBFS(graph)
    with _engine(graph, VariantSpec.block(8, cluster), block_size=1024) as eng:
        assert eng._tr.smem_queue == 256
        hubs = np.argsort(graph.out_degree)[-100:]  # in the giant component
        for src in rng.choice(hubs, 3, replace=False):
            want = runner.run(np.array([src]))[0]
            assert np.bincount(want[want >= 0]).max() > 2 * cluster * 256
            np.testing.assert_array_equal(eng.bfs(src), want)
            np.testing.assert_array_equal(eng.bfs(src, out="device").get(), want)
        seeds = rng.choice(graph.n, 5000, replace=False)
        np.testing.assert_array_equal(eng.bfs(seeds), runner.run(seeds)[0])
