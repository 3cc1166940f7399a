"""The dense form (every source at once) without a GPU: its units of work, its spec and config
round trip, rendering and NVRTC compilation of every variant, and its own CUDA run on the CPU
(tests/cuda_cpu.py: one block, the grid barrier meeting itself) against the CPU reference, bit
for bit, on directed, undirected, disconnected, hub-heavy and deep graphs, over every source
and over parts of them (chunk ranges), from poisoned buffers."""

from __future__ import annotations

import numpy as np
import pytest
from cuda_cpu import build, have_compiler, run, small_zoo

from blest.codegen.contract import CTL, CTL_WORDS
from blest.codegen.dense_render import dense_params, render_dense
from blest.codegen.densespec import (
    DENSE_KERNEL,
    DenseSpec,
    chunk_sources,
    dense_variants,
    row_words,
)
from blest.datasets.classes import make_hubs, make_uniform
from blest.errors import ArgumentError
from blest.graph.prepared import Prepared
from blest.reference.centrality import bfs_many_levels, source_sums, sums_from_levels
from blest.runtime.dense_runner import dense_units

THREADS = 64
SPECS = [DenseSpec(1, 32), DenseSpec(2, 8), DenseSpec(4, 16)]


def test_units_cover_every_arc_once(rng):
    for seg in (8, 16, 32):
        degree = rng.integers(0, 200, 300) * (rng.random(300) < 0.7)
        in_ptr = np.concatenate([[0], np.cumsum(degree)])
        units = dense_units(in_ptr, seg)
        v, first, count, shared = units.T
        assert np.all(np.diff(v) >= 0) and np.all((count >= 0) & (count <= seg))
        hits = np.zeros(in_ptr[-1], dtype=np.int64)
        for f, c in zip(first, count, strict=True):
            hits[f : f + c] += 1
        assert np.all(hits == 1)
        assert np.all((first >= in_ptr[v]) & (first + count <= in_ptr[v + 1]))
        pieces = np.bincount(v, minlength=degree.size)
        assert np.all(pieces == np.maximum(1, -(-degree // seg)))  # a vertex without arcs too
        np.testing.assert_array_equal(shared, pieces[v] > 1)


def test_spec_round_trip_and_errors():
    specs = list(dense_variants())
    assert len(set(specs)) == 9 and len({s.name for s in specs}) == 9
    for s in specs:
        assert DenseSpec.from_dict(s.to_dict()) == s
        assert row_words(s, 1) == s.chunk_words and row_words(s, chunk_sources(s) + 1) == (
            2 * s.chunk_words
        )
    for bad in ({"vec": 3}, {"seg": 64}, {"vec": True}, {"format": 9}, {"kappa": 1}):
        with pytest.raises(ArgumentError):
            DenseSpec.from_dict(bad)


@pytest.mark.parametrize("spec", list(dense_variants()), ids=lambda s: s.name)
def test_every_variant_renders_and_compiles(spec):
    pytest.importorskip("cupy")
    from blest.codegen.compile import compile_ptx

    source = render_dense(spec)
    assert source == render_dense(spec) and f"vec = {spec.vec}" in source
    assert DENSE_KERNEL.encode() in compile_ptx(spec, arch="sm_90")


# ------------------------------------------------------------------ the kernel on the CPU
@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    if not have_compiler():
        pytest.skip("needs g++")
    cache = tmp_path_factory.mktemp("dense")
    params = [(p.ctype, p.name) for p in dense_params()]
    return {spec: build(render_dense(spec), DENSE_KERNEL, params, [], cache) for spec in SPECS}


def run_dense(exe, spec: DenseSpec, prep: Prepared, chunks: tuple[int, int]) -> dict:
    n = prep.n
    in_ptr = np.asarray(prep.in_ptr, dtype=np.int64)
    units = dense_units(in_ptr, spec.seg)
    cells = n * row_words(spec, n)
    poison = np.uint32(0xDEADBEEF)
    arrays = {
        "in_idx": np.asarray(prep.in_idx, dtype=np.int32),
        "units": units.reshape(-1),
        "visited": np.full(cells, poison),
        "frontier": np.full(3 * cells, poison),
        "cnt": np.full(2 * n, poison),
        "ctl": np.zeros(CTL_WORDS, np.uint32),
        "dist": np.full(n, 7, np.uint64),
        "reach": np.full(n, 7, np.uint64),
        "harm": np.full(n, np.nan),
    }
    scalars = {"n": n, "n_units": units.shape[0],
               "row_words": row_words(spec, n), "chunk_first": chunks[0],
               "chunk_last": chunks[1]}  # fmt: skip
    return run(exe, arrays, scalars, THREADS, 0)


def target_sums(graph, sources):
    """Per target v, the sums over ``sources`` of d(s -> v), from SciPy's levels."""
    levels = bfs_many_levels(graph, np.asarray(sources), reverse=False)
    return sums_from_levels(np.ascontiguousarray(levels.T))


def check(out, want, graph, label):
    assert out["ctl"][CTL["error"]] == 0, label
    assert out["dist"].astype(np.int64).tobytes() == want.dist.tobytes(), label
    assert out["reach"].astype(np.int64).tobytes() == want.reach.tobytes(), label
    assert out["harm"].tobytes() == want.harmonic.tobytes(), label


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_every_source_equals_the_closeness_sums(programs, rng, spec):
    graphs = small_zoo(rng, 150)
    graphs["hubs"] = make_hubs(rng, 120)
    for name, graph in graphs.items():
        prep = Prepared.from_graph(graph, 8)
        out = run_dense(programs[spec], spec, prep, (0, 1))
        want = source_sums(prep.graph, np.arange(graph.n), reverse=True)  # distances to v
        check(out, want, graph, name)
        depth = int(bfs_many_levels(prep.graph, np.arange(graph.n)).max())
        assert out["ctl"][CTL["levels_run"]] == depth, name


def test_a_chunk_range_is_an_exact_part(programs, rng):
    """Two chunks of 1024 sources at vec = 1, the second alone (the GPU tests run more)."""
    spec = DenseSpec(1, 32)
    graph = make_uniform(rng, 1030)
    prep = Prepared.from_graph(graph, 8)
    step = chunk_sources(spec)
    for chunks in ((1, 2),):
        out = run_dense(programs[spec], spec, prep, chunks)
        sources = np.arange(chunks[0] * step, min(graph.n, chunks[1] * step))
        check(out, target_sums(prep.graph, sources), graph, str(chunks))


def test_the_dense_form_is_worth_it_on_small_shallow_graphs_only():
    from blest.runtime.many import dense_takes

    assert dense_takes(2277, 62_742, 11)  # wiki_chameleon
    assert dense_takes(22_470, 342_004, 15, free_bytes=1 << 34)  # musae_facebook
    assert not dense_takes(22_470, 342_004, 15, free_bytes=1 << 20)  # too little memory
    assert not dense_takes(5000, 20_000, 300)  # deep: a pull over every arc a level
    assert not dense_takes(46_000, 10**7, 10)  # hours of pulling, not worth timing
    assert not dense_takes(50_000, 10**5, 5)  # more vertices than it takes
