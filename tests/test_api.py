"""blest.bfs and blest.validate: every input load_graph takes, one source or several seeds,
parents, devices, the runner cache and its invalidation, argument errors."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
import scipy.sparse as sp
from random_graphs import GRAPH_CLASSES, arcs_of, pick_source

import blest
from blest import api
from blest.datasets import write_mtx
from blest.reference import bfs_levels, frontier_bfs
from blest.runtime.cpu import CPUEngine

nx = pytest.importorskip("networkx")

CLASSES = tuple(GRAPH_CLASSES)


@pytest.fixture(autouse=True)
def fresh_cache():
    api.clear_cache()
    yield
    api.clear_cache()


def seeds_of(rng, graph) -> list[int]:
    return [pick_source(rng, graph) for _ in range(int(rng.integers(1, 5)))]


@pytest.mark.parametrize("cls", CLASSES)
def test_levels_and_parents_on_graphs(cls, rng):
    for _ in range(4):
        g = GRAPH_CLASSES[cls](rng, int(rng.integers(2, 250)))
        src, seeds = pick_source(rng, g), seeds_of(rng, g)
        for device in ("cpu", "emulator", None):
            levels = blest.bfs(g, src, device=device)
            assert levels.dtype == np.int32
            np.testing.assert_array_equal(levels, bfs_levels(g, src))
            levels, parents = blest.bfs(g, seeds, parents=True, device=device)
            np.testing.assert_array_equal(levels, frontier_bfs(g, seeds)[0])
            assert parents.dtype == np.int32 and (parents[np.unique(seeds)] == -1).all()
            blest.validate(g, seeds, levels, parents)


def test_every_input_kind(rng, tmp_path):
    g = GRAPH_CLASSES["directed"](rng, 120)
    src = pick_source(rng, g)
    want = bfs_levels(g, src)
    s, d = arcs_of(g)
    matrix = sp.csr_array((np.ones(s.size), (s, d)), shape=(g.n, g.n))
    nxg = nx.DiGraph()
    nxg.add_nodes_from(range(g.n))
    nxg.add_edges_from(zip(s.tolist(), d.tolist(), strict=True))
    path = write_mtx(g, tmp_path / "g.mtx")
    for graph in (g, matrix, matrix.tocoo(), nxg, path, str(path)):
        np.testing.assert_array_equal(blest.bfs(graph, src, device="cpu"), want, str(type(graph)))
        lv, par = blest.bfs(graph, [src, src], parents=True, device="cpu")
        blest.validate(graph, src, lv, par)
    undirected = blest.load_graph(g, directed=False)
    np.testing.assert_array_equal(
        blest.bfs(matrix, src, directed=False), bfs_levels(undirected, src)
    )


def test_isolated_seeds_and_depth_limit(rng):
    g = GRAPH_CLASSES["disconnected"](rng, 300)
    isolated = np.flatnonzero((g.out_degree == 0) & (g.in_degree == 0))
    assert isolated.size
    lv, par = blest.bfs(g, int(isolated[0]), parents=True)
    assert lv[isolated[0]] == 0 and (lv >= 0).sum() == 1 and (par == -1).all()
    seeds = [int(isolated[0]), pick_source(rng, g)]
    full = blest.bfs(g, seeds)
    for limit in (0, 1, 2):
        for device in ("cpu", "emulator"):
            got = blest.bfs(g, seeds, depth_limit=limit, device=device)
            np.testing.assert_array_equal(got, np.where(full <= limit, full, -1))


def test_super_source_matches_frontier_on_the_road_graph(rng):
    g = blest.datasets.load_example()
    seeds = rng.choice(g.n, 5, replace=False)
    lv, par = blest.bfs(g, seeds, parents=True, device="cpu")
    np.testing.assert_array_equal(lv, frontier_bfs(g, seeds)[0])
    assert lv.max() > 100
    blest.validate(g, seeds, lv, par)


def test_runner_is_cached_per_graph_and_device(rng):
    g = GRAPH_CLASSES["uniform"](rng, 200)
    blest.bfs(g, 0, device="cpu")
    runner = api._last.runner
    assert isinstance(runner, CPUEngine)
    blest.bfs(g, [0, 1], device="cpu")
    assert api._last.runner is runner
    blest.bfs(g, 0, device="emulator")
    emulated = api._last.runner
    assert emulated is not runner and api._last.device == "emulator"
    other = GRAPH_CLASSES["uniform"](rng, 200)
    blest.bfs(other, 0, device="emulator")
    assert api._last.runner is not emulated
    with pytest.raises(blest.EngineError):  # the replaced runner was closed
        emulated.bfs(0)
    api.clear_cache()
    assert api._last is None


def test_the_cache_keeps_one_graph_until_replaced_or_cleared(rng):
    """The cached engine holds its graph (one graph at most outlives a call); another graph
    replaces it and closes the old engine, clear_cache() releases it."""
    g = GRAPH_CLASSES["grid"](rng, 100)
    blest.bfs(g, 0, device="cpu")
    first = api._last.runner
    ref = weakref.ref(g)
    del g
    gc.collect()
    assert api._last is not None and ref() is not None
    blest.bfs(GRAPH_CLASSES["grid"](rng, 100), 0, device="cpu")
    gc.collect()
    assert api._last.runner is not first and ref() is None
    with pytest.raises(blest.EngineError):  # the replaced engine was closed
        first.bfs(0)
    api.clear_cache()
    assert api._last is None


def test_networkx_graph_conversion_is_cached_until_changed():
    G = nx.path_graph(6)
    np.testing.assert_array_equal(blest.bfs(G, 0), [0, 1, 2, 3, 4, 5])
    loaded = G.__networkx_cache__[api.NX_CACHE_KEY][None]
    blest.bfs(G, 5)
    assert G.__networkx_cache__[api.NX_CACHE_KEY][None] is loaded
    runner = api._last.runner
    G.add_edge(0, 5)  # NetworkX clears its cache: blest must see the new edge
    np.testing.assert_array_equal(blest.bfs(G, 0), [0, 1, 2, 3, 2, 1])
    assert G.__networkx_cache__[api.NX_CACHE_KEY][None] is not loaded
    assert api._last.runner is not runner
    directed = blest.bfs(G, 0, directed=True)
    np.testing.assert_array_equal(directed, [0, 1, 2, 3, 2, 1])  # both arcs of each edge
    G.__networkx_cache__ = None  # caching switched off for this graph
    np.testing.assert_array_equal(blest.bfs(G, 3), [3, 2, 1, 0, 1, 2])


def test_argument_errors():
    g = blest.datasets.grid2d(2, 3)
    with pytest.raises(blest.ArgumentError):
        blest.bfs(g, [])
    with pytest.raises(blest.VertexError):
        blest.bfs(g, [0, 6])
    with pytest.raises(blest.VertexError):
        blest.bfs(g, -1)
    with pytest.raises(blest.ArgumentError):
        blest.bfs(g, 1.5)
    with pytest.raises(blest.ArgumentError):
        blest.bfs(g, 0, depth_limit=-1)
    with pytest.raises(blest.ArgumentError):
        blest.bfs(g, 0, depth_limit=1.5)
    with pytest.raises(blest.ArgumentError):
        blest.bfs(g, 0, device="tpu")
    with pytest.raises(TypeError):
        blest.bfs(object(), 0)
    empty = blest.Graph.from_arcs([], [], 0, directed=True)
    with pytest.raises(blest.VertexError):
        blest.bfs(empty, 0)


def test_public_names():
    for name in ("bfs", "validate", "ValidationError", "Graph", "load_graph", "make_engine"):
        assert name in blest.__all__ and getattr(blest, name) is not None
    assert blest.bfs is api.bfs and blest.validate is api.validate
    assert "nx" in dir(blest) or hasattr(blest, "nx")


@pytest.mark.parametrize("engine", ["cpu", "emulated"])
def test_out_arrays_are_checked_before_any_work(engine):
    """A wrong or read-only ``out`` is refused with a clear error, and a good one is filled."""
    from blest.graph.prepared import Prepared
    from blest.runtime.cpu import CPUEngine
    from blest.runtime.emulated import EmulatedEngine

    g = blest.datasets.grid2d(3, 4)
    prepared = Prepared.from_graph(g, 8)
    eng = CPUEngine(prepared) if engine == "cpu" else EmulatedEngine(prepared)
    frozen = np.zeros(g.n, dtype=np.int32)
    frozen.flags.writeable = False
    for bad, message in [
        (frozen, "read-only"),
        (np.zeros(g.n, dtype=np.int64), "int32"),
        (np.zeros(g.n + 1, dtype=np.int32), "shape"),
        ([0] * g.n, "int32"),
    ]:
        with pytest.raises(blest.ArgumentError, match=message):
            eng.bfs(0, out=bad)
    out = np.full(g.n, 99, dtype=np.int32)
    assert eng.bfs(0, out=out) is out
    np.testing.assert_array_equal(out, bfs_levels(g, 0))


def test_cpu_engines_take_the_csr_variant(rng):
    """Without a GPU expand="csr" runs on SciPy's BFS or on the emulator (its per-level
    semantics are the lazy sweep variant's), with and without bottom-up levels."""
    from blest import VariantSpec
    from blest.graph.prepared import Prepared
    from blest.runtime import make_engine

    g = GRAPH_CLASSES["power_law"](rng, 400)
    prep = Prepared.from_graph(g, 8)
    src = pick_source(rng, g)
    for eta in (0.0, 1e9):  # every level top-down; every level bottom-up
        for device in ("cpu", "emulator"):
            with make_engine(prep, VariantSpec.csr(8), eta=eta, device=device) as eng:
                np.testing.assert_array_equal(eng.bfs(src), bfs_levels(g, src), device)
                assert eng.spec.name == "s8_lazy_csr_switch_pers"


def test_cpu_engines_take_the_guard_as_the_kernels_do(rng):
    """alpha on the CPU paths: levels as SciPy's on a persistent switching variant, and the
    per-level launch refused as its GPU engine refuses it (no barrier to count the sums at)."""
    from blest import VariantSpec
    from blest.errors import ArgumentError
    from blest.graph.prepared import Prepared
    from blest.runtime import make_engine

    g = GRAPH_CLASSES["power_law"](rng, 400)
    prep = Prepared.from_graph(g, 8)
    src = pick_source(rng, g)
    for device in ("cpu", "emulator"):
        with make_engine(prep, VariantSpec(sigma=8), eta=1e9, alpha=14.0, device=device) as eng:
            np.testing.assert_array_equal(eng.bfs(src), bfs_levels(g, src), device)
        per_level = VariantSpec(sigma=8, launch="per_level")
        with pytest.raises(ArgumentError, match="needs a persistent variant"):
            make_engine(prep, per_level, alpha=14.0, device=device)
