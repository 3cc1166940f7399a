"""GPU: several seeds and parents in every generated variant. Levels against SciPy, per-level
state (from level 0, where the seeds' init matters; the BVSS variants, as the block launch keeps
its state in shared memory) against the NumPy emulator, parents against
the emulator's rule exactly and against blest.validate, poisoned outputs, reordered graphs, the
one-call API. Skipped cleanly without a GPU."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_util import assert_level_states, path_like, requires_gpu, seeded_zoo, sources

import blest
from blest import VariantSpec, variants
from blest.graph.bvss import build_bvss
from blest.graph.ordering import rcm
from blest.reference import ScipyBFS, emulate_parents, emulate_spec, frontier_bfs, validate_bfs

pytestmark = [pytest.mark.gpu, requires_gpu]

POISON = np.int32(0x5A5A5A5A)
ALL = list(variants())
#: The variants whose per-level bitmaps and queue debug_state() reads back (not the block launch).
STATEFUL = [s for s in ALL if s.launch != "block" and s.hops == 1]  # (hops=2: no states)
# One variant of each family for the longer parents checks (every axis value appears).
FAMILIES = [
    VariantSpec(sigma=8),
    VariantSpec(sigma=4, dirty_sets=True, queue="sweep"),
    VariantSpec(sigma=32, dirty_sets=True, switching=False),
    VariantSpec(sigma=16, update="eager", switching=False, queue="sweep"),
    VariantSpec(sigma=8, update="eager", switching=False, launch="per_level"),
    VariantSpec(sigma=8, dirty_sets=True, launch="per_level"),
    VariantSpec.block(8),
]


@pytest.fixture(scope="module")
def zoo():
    return seeded_zoo()


def _host(a):
    return a.get() if hasattr(a, "get") and not isinstance(a, np.ndarray) else np.asarray(a)


def _engine(graph, spec, permutation=None, **kw):
    from blest.runtime.engine import Engine

    return Engine(graph, spec, permutation=permutation, **kw)


def seed_sets(rng, graph) -> list[list[int]]:
    """Seed lists that stress the init kernel: repeats, two seeds in one slice set and one
    bitmap word, seeds 1024 ids apart (distinct dirty words), more than 32 seeds (several
    rounds of the queue warp), isolated seeds."""
    n = graph.n
    base = sources(rng, graph, 3)
    near = [base[0], base[0] ^ 1, base[0] ^ 3, base[0]]  # same set / word, a repeat
    sets = [base, [s for s in near if s < n], [int(x) for x in rng.integers(0, n, 40)]]
    sets.append([s for s in (base[0], base[0] + 1024, base[0] + 2048) if s < n])
    return sets


def expected_parents(eng, levels_user: np.ndarray) -> np.ndarray:
    """The kernels' parent rule on the reordered graph, mapped to the user's ids."""
    old = np.asarray(eng.permutation.old_of_new)
    internal = levels_user[old]
    rule = emulate_parents(internal, _host(eng.prepared.in_ptr), _host(eng.prepared.in_idx))
    out = np.full(eng.n, -1, dtype=np.int32)
    out[old] = np.where(rule >= 0, old[np.maximum(rule, 0)], -1)
    return out


@pytest.mark.parametrize("spec", ALL, ids=lambda s: s.name)
def test_multi_seed_levels_match_scipy(zoo, spec):
    rng, graphs = zoo
    for name, graph in graphs.items():
        eta = float(rng.choice([0.5, 2.0, 10.0, 1e9]))
        small = int(rng.choice([0, 16, 10**6]))
        runner = ScipyBFS(graph)
        with _engine(graph, spec, eta=eta, small_queue=small) as eng:
            for seeds in seed_sets(rng, graph):
                want = runner.run(np.asarray(seeds))[0]
                out = np.full(graph.n, POISON, dtype=np.int32)
                got = eng.bfs(seeds, out=out)
                assert got is out
                np.testing.assert_array_equal(got, want, err_msg=f"{spec.name} {name} {seeds}")
                assert eng.stats.visited == int((want >= 0).sum()), (name, seeds)
                assert eng.stats.depth == want.max() and eng.stats.seeds == len(set(seeds))
                assert eng.stats.source == seeds[0]
            one = sources(rng, graph, 1)[0]
            want = runner.run(np.array([one]))[0]
            np.testing.assert_array_equal(eng.bfs([one]), want)  # a list of one seed
            np.testing.assert_array_equal(eng.bfs(one), want)  # after a multi-seed call


@pytest.mark.parametrize("spec", STATEFUL, ids=lambda s: s.name)
def test_multi_seed_level_states_match_emulator(zoo, spec):
    rng, graphs = zoo
    for name in ("power_law", "directed", "hubs", "disconnected"):
        graph = graphs[name]
        eta = float(rng.choice([1.0, 4.0, 50.0]))
        bvss = build_bvss(graph, spec.sigma)
        seeds = seed_sets(rng, graph)[int(rng.integers(4))]
        ref = emulate_spec(bvss, graph, seeds, spec, eta=eta)
        small = int(rng.choice([0, 16, 10**6]))
        with _engine(graph, spec, eta=eta, small_queue=small) as eng:
            np.testing.assert_array_equal(eng.bfs(seeds), ref.levels)
            if spec.switching:
                want_bu = tuple(i for i, d in enumerate(ref.directions) if d == "bottom_up")
                assert eng.stats.bottom_up_levels == want_bu, name
            what = f"{spec.name} {name} seeds={seeds}"
            assert_level_states(eng, spec, ref, bvss, seeds, what)


@pytest.mark.parametrize("spec", FAMILIES, ids=lambda s: s.name)
@pytest.mark.parametrize("ordered", [False, True], ids=["natural", "rcm"])
def test_parents_follow_the_rule_and_validate(zoo, spec, ordered):
    rng, graphs = zoo
    for name, graph in graphs.items():
        perm = rcm(graph) if ordered else None
        with _engine(graph, spec, permutation=perm) as eng:
            for seeds in [*seed_sets(rng, graph)[:2], sources(rng, graph, 1)[0]]:
                want = frontier_bfs(graph, seeds)[0]
                out = np.full(graph.n, POISON, dtype=np.int32)
                levels, parents = eng.bfs(seeds, out=out, parents=True)
                ctx = f"{spec.name} {name} seeds={seeds}"
                assert levels is out and parents.dtype == np.int32, ctx
                np.testing.assert_array_equal(levels, want, err_msg=ctx)
                np.testing.assert_array_equal(parents, expected_parents(eng, want), err_msg=ctx)
                validate_bfs(graph, seeds, levels, parents)
                limited, lp = eng.bfs(seeds, depth_limit=1, parents=True)
                np.testing.assert_array_equal(limited, np.where(want <= 1, want, -1))
                np.testing.assert_array_equal(lp, np.where(limited > 0, parents, -1))
            np.testing.assert_array_equal(eng.bfs(seeds), want)  # parents=False after True


def test_parents_on_device_outputs(zoo):
    import cupy as cp

    rng, graphs = zoo
    graph = graphs["power_law"]
    seeds = seed_sets(rng, graph)[0]
    with _engine(graph, VariantSpec(sigma=8, switching=False), permutation=rcm(graph)) as eng:
        levels, parents = eng.bfs(seeds, out="device", parents=True)
        assert isinstance(levels, cp.ndarray) and isinstance(parents, cp.ndarray)
        validate_bfs(graph, seeds, levels.get(), parents.get())
        out = cp.full(graph.n, int(POISON), dtype=cp.int32)
        again, p2 = eng.bfs(seeds, out=out, parents=True)
        assert again is out and isinstance(p2, cp.ndarray)
        np.testing.assert_array_equal(p2.get(), parents.get())
        assert p2.data.ptr != parents.data.ptr  # a fresh array each call


def test_many_seeds_on_a_deep_reordered_graph(zoo):
    rng, _ = zoo
    graph = path_like(rng, 3000)
    perm = rcm(graph)
    specs = (VariantSpec(sigma=8, dirty_sets=True), VariantSpec(sigma=4, queue="sweep"))
    for spec in (*specs, VariantSpec.block(16)):
        with _engine(graph, spec, permutation=perm) as eng:
            for k in (2, 33, 100, 1000):
                seeds = rng.choice(graph.n, k, replace=False)
                want = frontier_bfs(graph, seeds)[0]
                levels, parents = eng.bfs(seeds, parents=True)
                np.testing.assert_array_equal(levels, want)
                validate_bfs(graph, seeds, levels, parents)
            levels, parents = eng.bfs(np.arange(graph.n), parents=True)  # every vertex a seed
            assert (levels == 0).all() and (parents == -1).all()
            assert eng.stats.visited == graph.n and eng.stats.depth == 0


def test_engine_rejects_bad_seeds(zoo):
    _, graphs = zoo
    graph = graphs["uniform"]
    with _engine(graph, VariantSpec()) as eng:
        with pytest.raises(blest.ArgumentError):
            eng.bfs([])
        with pytest.raises(blest.VertexError):
            eng.bfs([0, graph.n])
        with pytest.raises(blest.ArgumentError):
            eng.bfs([0.5])


def test_one_call_api_runs_on_the_gpu(zoo):
    from blest import api
    from blest.runtime.engine import Engine

    rng, graphs = zoo
    graph = graphs["directed"]
    seeds = seed_sets(rng, graph)[0]
    api.clear_cache()
    try:
        levels, parents = blest.bfs(graph, seeds, parents=True)  # device=None: the GPU
        gpu_engine = api._last.runner
        assert isinstance(gpu_engine, Engine)
        np.testing.assert_array_equal(levels, frontier_bfs(graph, seeds)[0])
        blest.validate(graph, seeds, levels, parents)
        again = blest.bfs(graph, seeds[0], device="gpu")
        np.testing.assert_array_equal(again, frontier_bfs(graph, seeds[0])[0])
        assert api._last.runner is gpu_engine  # the same device: the cached engine
    finally:
        api.clear_cache()
    with pytest.raises(blest.EngineError):  # released with the cache
        gpu_engine.bfs(0)
