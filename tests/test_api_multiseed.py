"""Several seeds and parents on the CPU: the SciPy runner against an independent Python BFS, the
kernel emulator level by level, the parents post-pass rule, the CPU engines, seed checking, and
the new kernel entry points (rendered and compiled without a GPU)."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest
from random_graphs import GRAPH_CLASSES, make_hubs, pick_source
from test_reference import ALL_VARIANTS, run_and_check

from blest import Graph, VariantSpec, build_bvss
from blest.errors import ArgumentError, VertexError
from blest.graph.ordering import rcm
from blest.graph.prepared import Prepared
from blest.reference import (
    ScipyBFS,
    bfs_levels,
    check_seeds,
    emulate_parents,
    frontier_bfs,
    validate_bfs,
)
from blest.runtime import make_engine

CLASSES = tuple(GRAPH_CLASSES)
POISON = np.int32(0x5A5A5A5A)


def python_bfs(graph: Graph, seeds) -> list[int]:
    """Textbook multi-source queue BFS over out-arcs, Python lists only."""
    ptr, idx = graph.out_ptr.tolist(), graph.out_idx.tolist()
    levels = [-1] * graph.n
    todo = deque()
    for s in seeds:
        if levels[s] < 0:
            levels[s] = 0
            todo.append(s)
    while todo:
        u = todo.popleft()
        for v in idx[ptr[u] : ptr[u + 1]]:
            if levels[v] < 0:
                levels[v] = levels[u] + 1
                todo.append(v)
    return levels


def draw_seeds(rng, graph: Graph) -> list[int]:
    """1-6 seeds: some active, some arbitrary, a repeat now and then, two in one slice set."""
    seeds = [pick_source(rng, graph) for _ in range(int(rng.integers(1, 5)))]
    if rng.random() < 0.5:
        seeds.append(seeds[0])
    if rng.random() < 0.5 and graph.n > 1:
        seeds.append(seeds[0] ^ 1 if (seeds[0] ^ 1) < graph.n else seeds[0])
    return seeds


@pytest.mark.parametrize("cls", CLASSES)
def test_scipy_runner_matches_python_bfs(cls, rng):
    for _ in range(10):
        g = GRAPH_CLASSES[cls](rng, int(rng.integers(2, 300)))
        seeds = draw_seeds(rng, g)
        want = np.array(python_bfs(g, seeds), dtype=np.int32)
        runner = ScipyBFS(g)
        levels, parents = runner.run(check_seeds(seeds, g.n), parents=True)
        np.testing.assert_array_equal(levels, want)
        validate_bfs(g, seeds, levels, parents)
        np.testing.assert_array_equal(frontier_bfs(g, seeds)[0], want)
        np.testing.assert_array_equal(bfs_levels(g, seeds), want)
        one = seeds[0]  # the runner serves single and multi-seed calls alike
        np.testing.assert_array_equal(runner.run(np.array([one]))[0], python_bfs(g, [one]))
        for limit in (0, 1, 3):
            capped, par = runner.run(check_seeds(seeds, g.n), depth_limit=limit, parents=True)
            np.testing.assert_array_equal(capped, np.where(want <= limit, want, -1))
            assert (par[capped <= 0] == -1).all() and (par[capped > 0] >= 0).all()
            np.testing.assert_array_equal(frontier_bfs(g, seeds, depth_limit=limit)[0], capped)


@pytest.mark.parametrize("sigma", (4, 8, 16, 32))
def test_emulator_multi_seed_states(sigma, rng):
    """Every emulator variant from several seeds: levels, and every level's F, visited and Q."""
    for cls in (*CLASSES, "hubs"):
        make = make_hubs if cls == "hubs" else GRAPH_CLASSES[cls]
        g = make(rng, int(rng.integers(100, 400)))
        b = build_bvss(g, sigma)
        seeds = draw_seeds(rng, g)
        ref = bfs_levels(g, seeds)
        res = run_and_check(g, b, seeds, ALL_VARIANTS[::3], ref=ref)
        assert (res.levels[np.unique(seeds)] == 0).all()
        assert res.states[0].unvisited == g.n - np.unique(seeds).size
        run_and_check(g, b, seeds, ALL_VARIANTS[1::4], ref=ref, depth_limit=1)


def first_parent_rule(levels: np.ndarray, graph: Graph) -> np.ndarray:
    """The kernels' parent rule, one vertex at a time: the first in-neighbour (in_csr order)
    one level up."""
    out = np.full(graph.n, -1, dtype=np.int32)
    for v in np.flatnonzero(levels > 0).tolist():
        for u in graph.in_idx[graph.in_ptr[v] : graph.in_ptr[v + 1]].tolist():
            if levels[u] == levels[v] - 1:
                out[v] = u
                break
    return out


@pytest.mark.parametrize("cls", CLASSES)
def test_emulate_parents_rule(cls, rng):
    for _ in range(5):
        g = GRAPH_CLASSES[cls](rng, int(rng.integers(2, 300)))
        seeds = draw_seeds(rng, g)
        levels = bfs_levels(g, seeds)
        got = emulate_parents(levels, g.in_ptr, g.in_idx)
        np.testing.assert_array_equal(got, first_parent_rule(levels, g))
        validate_bfs(g, seeds, levels, got)


@pytest.mark.parametrize("device", ["cpu", "emulator"])
def test_cpu_engines_seeds_and_parents(device, rng):
    """Engines on a reordered graph: several seeds, parents in the user's ids, poisoned out."""
    for cls in CLASSES:
        g = GRAPH_CLASSES[cls](rng, int(rng.integers(50, 300)))
        spec = VariantSpec(sigma=int(rng.choice([4, 8, 16, 32])), dirty_sets=True)
        eng = make_engine(Prepared.from_graph(g, spec.sigma, rcm(g)), spec, device=device)
        assert not eng.permutation.is_identity or g.n < 3
        for seeds in (draw_seeds(rng, g), pick_source(rng, g)):
            want = bfs_levels(g, seeds)
            out = np.full(g.n, POISON, dtype=np.int32)
            levels, parents = eng.bfs(seeds, out=out, parents=True)
            assert levels is out and parents.dtype == np.int32 and parents.shape == (g.n,)
            np.testing.assert_array_equal(levels, want)
            validate_bfs(g, seeds, levels, parents)
            np.testing.assert_array_equal(eng.bfs(seeds), want)
            assert eng.stats.visited == int((want >= 0).sum())
            assert eng.stats.seeds == np.unique(seeds).size
            assert eng.stats.source == int(np.atleast_1d(seeds)[0])
            assert eng.stats.depth == want.max()
            if device == "emulator":  # the kernels' rule, mapped to the user's ids
                old = eng.permutation.old_of_new
                internal = want[old]
                rule = emulate_parents(internal, eng.prepared.in_ptr, eng.prepared.in_idx)
                expect = np.full(g.n, -1, dtype=np.int32)
                expect[old] = np.where(rule >= 0, old[np.maximum(rule, 0)], -1)
                np.testing.assert_array_equal(parents, expect)


def test_seed_checks():
    g = Graph.from_arcs([0, 1], [1, 2], 5, directed=True)
    np.testing.assert_array_equal(check_seeds(3, 5), [3])
    np.testing.assert_array_equal(check_seeds(np.int16(2), 5), [2])
    np.testing.assert_array_equal(check_seeds(np.array(4), 5), [4])
    np.testing.assert_array_equal(check_seeds([1, 1, 0], 5), [1, 1, 0])
    np.testing.assert_array_equal(check_seeds(range(3), 5), [0, 1, 2])
    np.testing.assert_array_equal(check_seeds(np.array([4], dtype=np.uint8), 5), [4])
    for bad in ([], np.zeros(0, dtype=np.int64), [1.0], [True], "0", [[0, 1]], 1.5, True, None):
        with pytest.raises(ArgumentError):
            check_seeds(bad, 5)
    for bad in ([0, 5], [-1], 5, np.array([2**40]), [0, 2**63], [2**70]):
        with pytest.raises(VertexError):
            check_seeds(bad, 5)
    with pytest.raises(VertexError, match="position 1"):
        check_seeds([0, 9], 5)
    eng = make_engine(Prepared.from_graph(g, 8), device="cpu")
    with pytest.raises(ArgumentError):
        eng.bfs([])
    np.testing.assert_array_equal(eng.bfs([0, 0, 3]), [0, 1, 2, 0, -1])


def test_new_kernel_entry_points_compile():
    pytest.importorskip("cupy")
    from blest.codegen.compile import compile_ptx
    from blest.codegen.render import kernel_names, render

    specs = (
        VariantSpec(sigma=4, dirty_sets=True, queue="sweep"),
        VariantSpec(sigma=32, update="eager", switching=False, launch="per_level"),
    )
    for spec in specs:
        names = kernel_names(spec)
        assert names["parents"] == "blest_parents"
        text = render(spec)
        assert "seed_lower_bound" in text and "adj_in_idx" in text
        ptx = compile_ptx(spec, arch="sm_80").decode()
        for name in names.values():
            assert f".entry {name}(" in ptx
        init = ptx.split(".entry blest_init(")[1].split(")")[0]
        main = ptx.split(f".entry {names['deliver']}(")[1].split(")")[0]
        assert init.count(".param") == main.count(".param") + 1  # seeds, n_seeds, src vs slot, ctl
