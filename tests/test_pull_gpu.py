"""GPU correctness of the pull family: every variant through :class:`PullRunner`, and the
engine's ``bfs(src, paths=True)`` and ``blest.bfs(..., paths=True)`` that run it, against the
CPU reference of shortest-path counts (levels and counts exact) on fresh random graphs of every
class, natural and reordered, with several seeds, depth limits and poisoned outputs; counts past
int64 (a chain of 64 diamonds) fall back to float64 with a warning. Skipped without a GPU."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from gpu_util import requires_gpu, seeded_zoo, sources

import blest
from blest.codegen.pullspec import PullSpec, pull_variants
from blest.graph.core import Graph
from blest.graph.ordering import Permutation, rcm
from blest.graph.prepared import Prepared
from blest.reference import bfs_levels
from blest.reference.paths import OVERFLOW_MESSAGE, bfs_paths
from blest.runtime.pull_runner import PullRunner, first_parents

pytestmark = [pytest.mark.gpu, requires_gpu]

POISON = np.int32(0x5A5A5A5A)


@pytest.fixture(scope="module")
def zoo():
    return seeded_zoo()


def diamonds(count: int) -> tuple[Graph, int]:
    """A chain of ``count`` diamonds of two middle vertices (undirected): 2^count shortest
    paths from vertex 0 to the last hub. Returns (graph, last hub)."""
    src, dst, hub, n = [], [], 0, 1
    for _ in range(count):
        for m in (n, n + 1):
            src += [hub, m]
            dst += [m, n + 2]
        hub, n = n + 2, n + 3
    return Graph.from_arcs(np.array(src), np.array(dst), n, directed=False), hub


def preparations(rng, graph):
    """The graph in its own ids, and reordered: by RCM and at random."""
    yield Prepared.from_graph(graph)
    if graph.n > 1:
        yield Prepared.from_graph(graph, 8, rcm(graph))
        shuffle = rng.permutation(graph.n).astype(np.int32)
        yield Prepared.from_graph(graph, 8, Permutation.from_old_of_new(shuffle))


@pytest.mark.parametrize("spec", list(pull_variants()), ids=lambda s: s.name)
def test_every_variant_on_every_class(zoo, spec):
    import cupy as cp

    rng, graphs = zoo
    for name, graph in graphs.items():
        for prep in preparations(rng, graph):
            with PullRunner(prep, spec, block_size=int(rng.choice([64, 256, 1024]))) as run:
                for src in sources(rng, graph):
                    label = f"{name} {prep.ordering} src={src}"
                    want_levels, want_counts = bfs_paths(graph, src)
                    out = cp.full(graph.n, POISON, dtype=cp.int32)
                    got = run.bfs(src, out=out, paths=spec.counts)
                    levels = got[0] if spec.counts else got
                    assert levels is out, label
                    np.testing.assert_array_equal(out.get(), want_levels, err_msg=label)
                    if spec.counts:
                        assert isinstance(got[1], cp.ndarray) and got[1].dtype == np.int64
                        np.testing.assert_array_equal(got[1].get(), want_counts, err_msg=label)
                    stats = run.stats
                    assert stats.depth == int(want_levels.max()), label
                    assert stats.visited == int(np.count_nonzero(want_levels >= 0)), label
                    assert stats.traversal_ms > 0, label
                if not spec.counts:
                    with pytest.raises(blest.ArgumentError, match="counts no paths"):
                        run.bfs(0, paths=True)


@pytest.mark.parametrize("form", ["scalar", "vector"])
def test_seeds_limits_parents_and_outputs(zoo, form):
    import cupy as cp
    import cupyx

    rng, graphs = zoo
    spec = PullSpec(form, True)
    for name, graph in graphs.items():
        for prep in preparations(rng, graph):
            before = [a.tobytes() for a in (graph.in_ptr, graph.in_idx)]
            with PullRunner(prep, spec) as run:
                for _ in range(3):
                    seeds = rng.choice(graph.n, int(rng.integers(1, 6)))
                    limit = None if rng.random() < 0.3 else int(rng.integers(0, 8))
                    want = bfs_paths(graph, seeds, depth_limit=limit, parents=True)
                    label = f"{name} {prep.ordering} seeds={seeds} limit={limit}"
                    host = np.full(graph.n, POISON, dtype=np.int32)
                    pinned = cupyx.empty_pinned(graph.n, dtype=np.int32)
                    pinned[:] = POISON
                    for out in (None, host, pinned, "device", "view"):
                        levels, parents, counts = run.bfs(
                            seeds, out=out, depth_limit=limit, parents=True, paths=True
                        )
                        on_device = isinstance(levels, cp.ndarray)
                        assert on_device == isinstance(out, str), label
                        get = (lambda a: a.get()) if on_device else np.asarray  # noqa: E731
                        np.testing.assert_array_equal(get(levels), want[0], err_msg=label)
                        np.testing.assert_array_equal(get(parents), want[1], err_msg=label)
                        np.testing.assert_array_equal(get(counts), want[2], err_msg=label)
                    assert run.stats.seeds == np.unique(seeds).size
            assert [a.tobytes() for a in (graph.in_ptr, graph.in_idx)] == before


@pytest.mark.parametrize("form", ["scalar", "vector"])
def test_counts_past_int64_fall_back_to_float64(form):
    graph, last = diamonds(64)
    prep = Prepared.from_graph(graph, 8, rcm(graph))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want_levels, want_counts = bfs_paths(graph, 0)
    assert want_counts.dtype == np.float64
    with PullRunner(prep, PullSpec(form, True)) as run:
        with pytest.warns(RuntimeWarning, match=OVERFLOW_MESSAGE):
            levels, counts = run.bfs(0, paths=True)
        np.testing.assert_array_equal(levels, want_levels)
        assert counts.dtype == np.float64 and counts.tobytes() == want_counts.tobytes()
        assert counts[last] == 2.0**64
    small, last62 = diamonds(62)  # 2^62: exact
    with PullRunner(Prepared.from_graph(small), PullSpec(form, True)) as run:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            _, counts = run.bfs(0, paths=True)
        assert counts.dtype == np.int64 and int(counts[last62]) == 2**62


def test_engine_and_one_call_paths(zoo):
    import cupy as cp

    from blest.runtime.engine import Engine

    rng, graphs = zoo
    for name, graph in graphs.items():
        for prep in preparations(rng, graph):
            with Engine(prep) as eng:
                for src in sources(rng, graph):
                    label = f"{name} {prep.ordering} src={src}"
                    want_levels, want_parents, want_counts = bfs_paths(graph, src, parents=True)
                    levels, counts = eng.bfs(src, paths=True)
                    np.testing.assert_array_equal(levels, want_levels, err_msg=label)
                    np.testing.assert_array_equal(counts, want_counts, err_msg=label)
                    assert eng.stats.depth == int(want_levels.max()), label
                    out = cp.full(graph.n, POISON, dtype=cp.int32)
                    lv, par, cnt = eng.bfs_paths(src, out=out, parents=True, depth_limit=2)
                    lim = bfs_paths(graph, src, depth_limit=2, parents=True)
                    assert lv is out and isinstance(cnt, cp.ndarray), label
                    for got, want in zip((lv, par, cnt), lim, strict=True):
                        np.testing.assert_array_equal(got.get(), want, err_msg=label)
                    # a plain call after: its own variant, its own statistics
                    np.testing.assert_array_equal(eng.bfs(src), bfs_levels(graph, src))
                    assert eng.stats.depth == int(want_levels.max()), label
                want_form = "vector" if graph.nnz > 8 * graph.n else "scalar"
                assert eng.pull.spec == PullSpec(want_form, True), name
        src = int(rng.choice(np.flatnonzero(graph.out_degree > 0))) if graph.nnz else 0
        levels, counts = blest.bfs(graph, src, paths=True)
        want_levels, want_counts = bfs_paths(graph, src)
        np.testing.assert_array_equal(levels, want_levels, err_msg=name)
        np.testing.assert_array_equal(counts, want_counts, err_msg=name)
    blest.clear_cache()


def test_paths_inside_a_serving_block(zoo):
    from blest.runtime.engine import Engine

    rng, graphs = zoo
    graph = graphs["power_law"]
    src = int(np.argmax(graph.out_degree))
    want_levels, want_counts = bfs_paths(graph, src)
    with Engine(Prepared.from_graph(graph)) as eng, eng.serving():
        np.testing.assert_array_equal(eng.bfs(src), want_levels)
        levels, counts = eng.bfs(src, paths=True)  # ends the serving kernel, then pulls
        np.testing.assert_array_equal(levels, want_levels)
        np.testing.assert_array_equal(counts, want_counts)
        np.testing.assert_array_equal(eng.bfs(src), want_levels)  # served again


def test_parents_of_a_multi_seed_call_validate(zoo):
    rng, graphs = zoo
    for name, graph in graphs.items():
        seeds = rng.choice(graph.n, min(graph.n, 3), replace=False)
        levels, parents, counts = blest.bfs(graph, seeds, paths=True, parents=True)
        blest.validate(graph, seeds, levels, parents)
        np.testing.assert_array_equal(parents, first_parents(graph, levels), err_msg=name)
        np.testing.assert_array_equal(counts, bfs_paths(graph, seeds)[1], err_msg=name)
    blest.clear_cache()


def test_the_timing_protocol_times_a_runner(zoo):
    from blest.tuning.timing import bench_engine, timing_sources

    rng, graphs = zoo
    graph = graphs["uniform"]
    with PullRunner(Prepared.from_graph(graph), PullSpec("scalar", False)) as run:
        row = bench_engine(run, graph, timing_sources(graph, 4), "uniform")
    assert row.variant == "pull_scalar_pers" and row.traversal_ms > 0 and row.whole_call_ms > 0
