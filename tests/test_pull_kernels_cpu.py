"""The pull family's own CUDA source run on the CPU (tests/cuda_cpu.py: two blocks of 64
threads, the grid barrier between them) against the CPU reference of shortest-path counts
(blest.reference.paths), levels and counts exact: on fresh random graphs of every class, tiny
graphs, reordered graphs (levels and counts in the user's ids), several seeds and depth limits,
from poisoned buffers; and the overflow flag on chains of diamonds whose counts reach 2^63.
The asynchronous variants' early levels are checked the same way, and shown to happen."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from cuda_cpu import build, have_compiler, run, small_zoo

from blest.codegen.contract import CTL
from blest.codegen.pull_render import PULL_SHARED_BYTES, pull_extras, pull_params, render_pull
from blest.codegen.pullspec import (
    PULL_CTL_WORDS,
    PULL_EARLY,
    PULL_KERNEL,
    PULL_OVERFLOW,
    PullSpec,
    pull_variants,
)
from blest.datasets.classes import make_hubs, make_uniform
from blest.graph.core import Graph
from blest.graph.ordering import Permutation, permute_graph
from blest.reference.paths import bfs_paths

THREADS, BLOCKS = 32, 2
SPECS = list(pull_variants())
POISON = 0xDEADBEEF
#: Vertices of the random graphs: the vector form pulls each open vertex with warp collectives,
#: which the CPU runner emulates slowly, so its graphs are smaller.
SIZE = {"scalar": 180, "vector": 64, "hybrid": 120}


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    if not have_compiler():
        pytest.skip("needs g++")
    cache = tmp_path_factory.mktemp("pull")
    out = {}
    for spec in SPECS:
        params = [(p.ctype, p.name) for p in pull_params(spec)]
        extras = [(p.ctype, p.name) for p in pull_extras()]
        out[spec] = build(render_pull(spec), PULL_KERNEL, params, extras, cache)
    return out


def diamonds(widths: list[int]) -> tuple[Graph, int]:
    """Hub, ``w`` middle vertices, next hub, ... (undirected): the last hub has
    ``prod(widths)`` shortest paths from vertex 0. Returns (graph, last hub)."""
    src, dst, hub, n = [], [], 0, 1
    for w in widths:
        nxt = n + w
        for m in range(n, nxt):
            src += [hub, m]
            dst += [m, nxt]
        hub, n = nxt, nxt + 1
    return Graph.from_arcs(np.array(src), np.array(dst), n, directed=False), hub


def layers(sizes: list[int]) -> tuple[Graph, int]:
    """Vertex 0, then layers of ``sizes`` vertices, each joined to every vertex of the layer
    before, then one last vertex (undirected): a vertex of a layer has as many shortest paths
    from vertex 0 as the product of the sizes before it, and the last one ``prod(sizes)``, a
    sum of ``sizes[-1]`` equal terms. Fewer levels than diamonds for the same counts."""
    src, dst, before, n = [], [], [0], 1
    for size in [*sizes, 1]:
        layer = list(range(n, n + size))
        for u in before:
            src += [u] * size
            dst += layer
        before, n = layer, n + size
    return Graph.from_arcs(np.array(src), np.array(dst), n, directed=False), n - 1


def run_pull(exe, spec, graph, seeds, depth_limit=None, perm=None) -> dict:
    """One launch on ``graph`` (the user's ids) from ``seeds`` (user ids), under ``perm``."""
    n = graph.n
    internal = graph if perm is None else permute_graph(graph, perm)
    inner = np.unique(np.asarray(seeds) if perm is None else perm.new_of_old[seeds])
    words = (n + 31) // 32
    in_idx = np.asarray(internal.in_idx, dtype=np.int32)
    arrays = {
        "in_ptr": np.asarray(internal.in_ptr, dtype=np.int64),
        "in_idx": in_idx if in_idx.size else np.zeros(1, np.int32),
        "old_of_new": None if perm is None else perm.old_of_new.astype(np.int32),
        "visited": np.full(words, POISON, np.uint32),
        "frontier": np.full(spec.frontiers * words, POISON, np.uint32),
        "levels": np.full(n, 12345, np.int32),
        "ctl": np.zeros(PULL_CTL_WORDS, np.uint32),
        "seeds": None if inner.size == 1 else inner.astype(np.int32),
    }
    if spec.counts:
        arrays["sigma"] = np.full(n, POISON, np.uint64)
        arrays["sigma_out"] = None if perm is None else np.full(n, POISON, np.uint64)
    scalars = {"n": n, "n_words": words, "n_seeds": inner.size, "seed": int(inner[0]),
               "depth_limit": -1 if depth_limit is None else depth_limit}  # fmt: skip
    out = run(exe, arrays, scalars, THREADS, PULL_SHARED_BYTES, blocks=BLOCKS)
    out["counts"] = out.get("sigma") if perm is None else out.get("sigma_out")
    return out


def check(out, spec, graph, seeds, depth_limit=None, label=""):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # float64 counts: past int64
        levels, counts = bfs_paths(graph, seeds, depth_limit=depth_limit)
    ctl = out["ctl"]
    assert ctl[CTL["error"]] == 0, label
    np.testing.assert_array_equal(out["levels"], levels, err_msg=label)
    assert int(ctl[CTL["depth"]]) == int(levels.max()), label
    assert int(ctl[CTL["visited"]]) == int(np.count_nonzero(levels >= 0)), label
    overflow = counts.dtype != np.int64
    if spec.counts:
        assert bool(ctl[PULL_OVERFLOW]) == overflow, label
        if not overflow:
            np.testing.assert_array_equal(out["counts"].view(np.int64), counts, err_msg=label)
    else:
        assert ctl[PULL_OVERFLOW] == 0, label


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_every_class_from_one_source(programs, rng, spec):
    graphs = small_zoo(rng, SIZE[spec.form])
    graphs["hubs"] = make_hubs(rng, SIZE[spec.form])
    if spec.form == "scalar":  # more words than one sweep of the grid's lanes takes (64)
        graphs["wide"] = make_uniform(rng, 2100)
    for name, graph in graphs.items():
        src = int(rng.choice(np.flatnonzero(graph.out_degree > 0)))
        out = run_pull(programs[spec], spec, graph, [src])
        check(out, spec, graph, [src], label=name)
        levels = out["levels"]
        assert out["ctl"][CTL["levels_run"]] == levels.max() + 1, name  # the last one empty


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_reordered_graphs_seeds_and_depth_limits(programs, rng, spec):
    graphs = small_zoo(rng, 2 * SIZE[spec.form] // 3)
    for name, graph in graphs.items():
        perm = Permutation.from_old_of_new(rng.permutation(graph.n).astype(np.int32))
        seeds = rng.choice(graph.n, int(rng.integers(1, 5)), replace=True)
        limit = int(rng.integers(0, 6)) if name != "deep" else int(rng.integers(20, 60))
        for p, lim in ((perm, None), (perm, limit), (None, limit)):
            out = run_pull(programs[spec], spec, graph, seeds, lim, p)
            check(out, spec, graph, seeds, lim, f"{name} perm={p is not None} limit={lim}")


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_tiny_graphs(programs, spec):
    empty = np.zeros(0, dtype=np.int64)
    arc = Graph.from_arcs(np.array([5]), np.array([32]), 33, directed=True)
    cases = {
        "one vertex": (Graph.from_arcs(empty, empty, 1, directed=True), [0]),
        "no arcs": (Graph.from_arcs(empty, empty, 40, directed=False), [33]),
        "one arc": (arc, [5]),
        "against the arc": (arc, [32]),
        "32 vertices": (Graph.from_arcs(np.arange(31), np.arange(1, 32), 32, directed=True), [0]),
    }
    for name, (graph, seeds) in cases.items():
        out = run_pull(programs[spec], spec, graph, seeds)
        check(out, spec, graph, seeds, label=name)
        tail = graph.n % 32
        if tail:  # the bits past n read as visited
            assert out["visited"][-1] >> tail == (1 << (32 - tail)) - 1, name


@pytest.mark.parametrize("spec", [s for s in SPECS if s.counts], ids=lambda s: s.name)
def test_counts_up_to_and_past_int64(programs, spec):
    """Below 2^63 the counts are exact; 2^63 as two terms of 2^62, 3 x 2^62 and 2^64 (16 terms
    of 2^60, whose 64-bit sum wraps to 0) set the overflow flag, and the levels stay right."""
    exact = {"2^62": [8] * 20 + [4], "7 x 2^60": [8] * 20 + [7]}
    past = {"2^63": [8] * 20 + [4, 2], "3 x 2^62": [8] * 20 + [4, 3], "2^64": [8] * 20 + [16]}
    if spec.form == "vector":  # the sums across lanes; the scalar form runs every case
        exact, past = {"2^62": exact["2^62"]}, {"2^64": past["2^64"]}
    if spec.form == "hybrid":  # the last vertex's 40 in-arcs: the warp sums them together
        exact, past = {"5 x 2^60": [8] * 19 + [40]}, {"2^64": past["2^64"]}
    for name, sizes in {**exact, **past}.items():
        graph, last = layers(sizes)
        out = run_pull(programs[spec], spec, graph, [0])
        check(out, spec, graph, [0], label=name)
        assert bool(out["ctl"][PULL_OVERFLOW]) == (name in past), name
        if name in exact:
            assert int(out["counts"].view(np.int64)[last]) == int(np.prod(sizes)), name


def test_a_chain_of_64_diamonds_overflows(programs):
    """2^64 shortest paths to the last hub (2^63 to the one before): flagged; 62 diamonds
    (2^62) are exact. The scalar form (the vector one's sums: above)."""
    spec = PullSpec("scalar", True)
    for widths, over in (([2] * 64, True), ([2] * 62, False)):
        graph, last = diamonds(widths)
        out = run_pull(programs[spec], spec, graph, [0])
        check(out, spec, graph, [0], label=str(len(widths)))
        assert bool(out["ctl"][PULL_OVERFLOW]) == over
        if not over:
            assert int(out["counts"].view(np.int64)[last]) == 2**62


@pytest.mark.parametrize("form", ["scalar", "vector", "hybrid"])
def test_the_asynchronous_pull_gives_levels_a_pass_early(programs, rng, form):
    """Vertex 1 (word 0) reached at level 1; vertex 64 (word 2, pulled after word 0 by the same
    warp) has vertex 1 as its only in-neighbour: level 2 in the first pass. On random graphs the
    count of such vertices is at most every vertex past level 1; the synchronous variant counts
    none; levels stay exact."""
    spec = PullSpec(form, False, asynchronous=True)
    graph = Graph.from_arcs(np.array([0, 1]), np.array([1, 64]), 65, directed=True)
    out = run_pull(programs[spec], spec, graph, [0])
    check(out, spec, graph, [0])
    assert out["ctl"][PULL_EARLY] == 1
    assert out["ctl"][CTL["levels_run"]] == 3  # levels 1, 2, and the empty third
    early = 0
    for name, g in small_zoo(rng, SIZE[form]).items():
        src = int(rng.choice(np.flatnonzero(g.out_degree > 0)))
        for s in (spec, PullSpec(form, False)):
            got = run_pull(programs[s], s, g, [src])
            check(got, s, g, [src], label=f"{name} {s.name}")
            levels = got["levels"]
            if s.asynchronous:
                assert got["ctl"][PULL_EARLY] <= np.count_nonzero(levels >= 2), name
                early += int(got["ctl"][PULL_EARLY])
            else:
                assert got["ctl"][PULL_EARLY] == 0, name
    assert early > 0  # somewhere in the zoo a level came a pass early


@pytest.mark.parametrize("spec", [s for s in SPECS if s.form == "hybrid"], ids=lambda s: s.name)
def test_the_hybrid_form_takes_light_vertices_alone_and_heavy_ones_together(programs, rng, spec):
    """Vertices of 1 to 3 in-arcs beside vertices of 33 to 90 (past HYBRID_DEGREE) in the same
    words: exact levels (and counts) from several sources."""
    n = 160
    heavy = rng.choice(n, 12, replace=False)
    src, dst = [], []
    for v in range(n):
        degree = int(rng.integers(33, 91)) if v in heavy else int(rng.integers(1, 4))
        tails = rng.choice(n, degree, replace=False)
        src += tails.tolist()
        dst += [v] * degree
    graph = Graph.from_arcs(np.array(src), np.array(dst), n, directed=True)
    assert np.diff(np.asarray(graph.in_ptr)).max() > 32
    for s in rng.choice(n, 4, replace=False).tolist():
        check(run_pull(programs[spec], spec, graph, [s]), spec, graph, [s], label=f"src={s}")
