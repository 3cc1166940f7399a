"""Several levels a phase (``hops`` 2 and 3): B = A + ... + A^K's BVSS and near masks against a
slot-by-slot construction, the phase emulator against SciPy, the spec axis, and the generated
kernels on the CPU runner (tests/cuda_cpu.py) against SciPy: directed, undirected,
disconnected, deep and power-law graphs, in their own ids and in RCM order, with small-queue
levels, the one-launch call, the serving kernel and depth limits of every residue. The
gpu-marked tests run the variants on the device (test_two_hop_gpu.py)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from cuda_cpu import have_compiler, small_zoo
from test_ss_kernels_cpu import _run_traversal, spec_programs

from blest.codegen.contract import (
    CTL,
    FUSED_SERVE,
    claims_form,
)
from blest.codegen.spec import VariantSpec, variants
from blest.errors import ArgumentError
from blest.graph.hops import TWO_HOP_RATIO, hop_graph, hops_bvss, two_hop_arcs_bound
from blest.graph.ordering import rcm
from blest.graph.prepared import Prepared
from blest.reference import bfs_levels
from blest.reference.hops_emulator import emulate_hops


def _limited(levels: np.ndarray, limit: int | None) -> np.ndarray:
    return levels if limit is None else np.where(levels > limit, -1, levels)


def _adjacency(graph) -> sp.csr_matrix:
    """CSR of A (row i: the j with j -> i), as dense-able ints."""
    ptr, idx = np.asarray(graph.in_ptr), np.asarray(graph.in_idx)
    return sp.csr_matrix((np.ones(idx.size, dtype=np.int64), idx, ptr), shape=(graph.n,) * 2)


def test_spec_axis():
    """hops > 1 only on the eager vss persistent kernels; named and written only when not 1."""
    spec = VariantSpec(sigma=32, update="eager", queue="vss", switching=False, hops=2)
    assert spec.name == "s32_eager_vss_hop2_pers"
    assert VariantSpec.from_json(spec.to_json()) == spec
    assert "hops" not in VariantSpec(sigma=32).to_dict()
    for bad in (
        {"update": "lazy"},
        {"queue": "sweep", "switching": False, "update": "eager"},
        {"launch": "per_level", "update": "eager", "switching": False},
        {"hops": 4},
    ):
        args = {"sigma": 8, "update": "eager", "queue": "vss", "switching": False, "hops": 2}
        with pytest.raises(ArgumentError):
            VariantSpec(**{**args, **bad})
    multi = [s for s in variants() if s.hops > 1]
    assert {(s.sigma, s.registers, s.hops) for s in multi} == {
        (g, r, k) for g in (4, 8, 16, 32) for r in (64, 128) for k in (2, 3)
    }
    assert all(claims_form(s, reordered) == "level" for s in multi for reordered in (False, True))


@pytest.mark.parametrize("hops", [2, 3])
@pytest.mark.parametrize("sigma", [4, 8, 16, 32])
def test_hops_bvss_slot_by_slot(rng, sigma, hops):
    """Every slot of B's BVSS holds row r of set s: its mask bits are the columns of s one to
    ``hops`` arcs from r, its near mask d's bits those at most d arcs away, and nothing else;
    padding slots have neither. B holds every arc of A + ... + A^hops but loops."""
    for name, graph in small_zoo(rng, 150).items():
        a = _adjacency(graph)
        reach, power = [], sp.identity(graph.n, dtype=np.int64, format="csr")
        for _ in range(hops):
            power = power @ a
            prev = reach[-1] if reach else np.zeros((graph.n,) * 2, dtype=bool)
            reach.append(prev | (power.toarray() > 0))
        for m in reach:
            np.fill_diagonal(m, False)
        got = hop_graph(graph.in_ptr, graph.in_idx, graph.n, hops)
        np.testing.assert_array_equal(_adjacency(got).toarray() > 0, reach[-1], err_msg=name)
        if hops == 2:
            assert got.nnz <= two_hop_arcs_bound(graph), name
        b = hops_bvss(graph.in_ptr, graph.in_idx, graph.n, sigma, hops)
        assert np.asarray(b.near_masks).shape == (hops - 1, np.asarray(b.masks).size)
        rows = np.asarray(b.row_ids)
        sets = np.repeat(np.asarray(b.virtual_to_real), b.tau)
        slot = np.arange(rows.size) % b.theta
        words = [np.repeat(np.asarray(w), b.theta) for w in (*b.near_masks, b.masks)]
        low = (1 << sigma) - 1
        for t in range(rows.size):
            cols = sets[t] * sigma + np.arange(sigma)
            ok = cols < graph.n
            bits = [(int(w[t]) >> (slot[t] * sigma)) & low for w in words]
            if bits[-1] == 0:
                assert not any(bits), (name, t)
                continue
            for d, word in enumerate(bits):
                got_cols = [c for k, c in enumerate(cols) if (word >> k) & 1]
                want_cols = [c for c in cols[ok] if reach[d][rows[t], c]]
                assert got_cols == want_cols, (name, t, d + 1)


@pytest.mark.parametrize("hops", [2, 3])
@pytest.mark.parametrize("sigma", [4, 8, 32])
def test_phase_emulator_matches_scipy(rng, sigma, hops):
    """The phases (offers KL + d, the smallest kept) give BFS levels, from one seed and from
    several, with depth limits of every residue; a BVSS without its near masks, or with every
    slot near, gives wrong levels somewhere."""
    wrong = {"none near": 0, "all near": 0}
    for name, graph in small_zoo(rng, 400).items():
        b = hops_bvss(graph.in_ptr, graph.in_idx, graph.n, sigma, hops)
        starts = np.flatnonzero(graph.out_degree > 0)
        for limit in (None, 0, 1, 2, 3, 4, 5, 7):
            src = int(rng.choice(starts))
            want = _limited(bfs_levels(graph, src), limit)
            np.testing.assert_array_equal(emulate_hops(b, src, limit), want, f"{name} {limit}")
        seeds = rng.choice(starts, 3)
        want = bfs_levels(graph, seeds)
        np.testing.assert_array_equal(emulate_hops(b, seeds), want, err_msg=name)
        src = int(starts[0])
        none, full = np.zeros_like(b.near_masks), np.stack([b.masks] * (hops - 1))
        for label, near in (("none near", none), ("all near", full)):
            bad = type(b)(b.sigma, b.n, b.nnz, b.row_ids, b.masks, b.real_ptrs,
                          b.virtual_to_real, b.real_slices, near)  # fmt: skip
            wrong[label] += not np.array_equal(emulate_hops(bad, src), bfs_levels(graph, src))
    assert all(wrong.values()), wrong


def test_hop_bound_gates_dense_graphs(rng):
    """The tuner's gate: a mesh-like graph's B stays within TWO_HOP_RATIO x its arcs, a graph
    with hubs does not."""
    zoo = small_zoo(rng, 3000)
    deep = zoo["deep"]
    assert two_hop_arcs_bound(deep) <= TWO_HOP_RATIO * deep.nnz
    power = zoo["power_law"]
    assert two_hop_arcs_bound(power) > TWO_HOP_RATIO * power.nnz


# ---- the generated kernels on the CPU runner ------------------------------------------------
SPECS = [
    VariantSpec(sigma=32, update="eager", queue="vss", switching=False, hops=2),
    VariantSpec(sigma=8, update="eager", queue="vss", switching=False, hops=2),
    VariantSpec(sigma=32, update="eager", queue="vss", switching=False, hops=3),
    VariantSpec(sigma=16, update="eager", queue="vss", switching=False, hops=3),
]


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    if not have_compiler():
        pytest.skip("needs g++")
    cache = tmp_path_factory.mktemp("hops")
    out = {}
    for spec in SPECS:
        out.update(spec_programs(spec, cache, claims="level"))
    return out


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_kernels_match_scipy(programs, rng, spec):
    """Init and traversal launches, the one-launch call and small-queue levels in block 0, on
    graphs in their own ids and in RCM order, with depth limits of several residues: levels
    (the buffers poisoned), the visited count and the depth against SciPy."""
    for reordered in (False, True):
        for name, graph in small_zoo(rng, 300).items():
            prep = Prepared.from_graph(graph, spec.sigma, rcm(graph) if reordered else None)
            order = np.asarray(prep.permutation.new_of_old)
            starts = np.flatnonzero(graph.out_degree > 0)
            for fused, small, limit in ((False, 0, -1), (True, 0, -1), (False, 16, -1),
                                        (False, 0, 3), (False, 16, 4), (True, 0, 1),
                                        (False, 0, 5)):  # fmt: skip
                src = int(rng.choice(starts))
                want = _limited(bfs_levels(graph, src), None if limit < 0 else limit)
                exe = programs[spec, "fused"] if fused else programs[spec]
                out = _run_traversal(exe, spec, prep, int(order[src]), 0.0, small, fused, 0.0,
                                     depth_limit=limit)  # fmt: skip
                ctx = f"{name} reordered={reordered} fused={fused} sq={small} limit={limit}"
                np.testing.assert_array_equal(out["levels"][order], want, err_msg=ctx)
                ctl = out["ctl"]
                assert ctl[CTL["error"]] == 0, ctx
                assert ctl[CTL["visited"]] == np.count_nonzero(want >= 0), ctx
                assert np.int32(ctl[CTL["depth"]]) == want.max(), ctx


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_served_calls_match_scipy(programs, rng, spec):
    """The serving kernel answers four calls in a row (state carried from call to call), the
    levels delivered in the user's ids."""
    for name, graph in small_zoo(rng, 240).items():
        prep = Prepared.from_graph(graph, spec.sigma, rcm(graph))
        order = np.asarray(prep.permutation.new_of_old)
        seeds = rng.choice(np.flatnonzero(graph.out_degree > 0), size=4)
        exe, modes = programs[spec, "serve"], [0, 0, 1, 0]
        out = _run_traversal(exe, spec, prep, 0, 0.0, 8, FUSED_SERVE, 0.0,
                             served=order[seeds], modes=modes, names=[0] * 4)  # fmt: skip
        for k, src in enumerate(seeds):
            want = bfs_levels(graph, int(src))
            np.testing.assert_array_equal(out["serve_out"][k], want, err_msg=f"{name} {k}")
            ctl = out["serve_ctl"][k]
            assert ctl[CTL["visited"]] == np.count_nonzero(want >= 0), (name, k)
            assert np.int32(ctl[CTL["depth"]]) == want.max(), (name, k)


def test_tuner_space_takes_hops_only_when_asked():
    """The coarse pass holds the hops > 1 variants (64 registers; 128 in refinement) only in the
    orderings named (``hops_orderings``: the tuner names the default one of a graph whose B is
    small) and at HOP_CANDIDATES; they have no per-level launch."""
    from blest.tuning.space import (
        HOP_CANDIDATES,
        coarse_candidates,
        per_level_variant,
        register_variants,
    )

    orderings, sigmas = ["rcm", "natural"], (8, 16, 32)
    without = coarse_candidates(orderings, sigmas, n=10**6)
    with_ = coarse_candidates(orderings, sigmas, n=10**6, hops_orderings=("rcm",))
    assert not any(c.spec.hops > 1 for c in without)
    extra = [c for c in with_ if c.spec.hops > 1]
    assert {(c.spec.hops, c.spec.sigma) for c in extra} == set(HOP_CANDIDATES)
    assert all(c.spec.registers == 64 for c in extra)
    assert {c.ordering for c in extra} == {"rcm"}
    assert sorted(c.label for c in with_ if c.spec.hops == 1) == sorted(c.label for c in without)
    assert all(per_level_variant(c) is None for c in extra)
    first_row = with_[: len({(c.block_size, c.blocks_per_sm, c.ordering, c.spec.sigma)
                            for c in with_})]  # fmt: skip
    assert {(c.spec.hops, c.spec.sigma) for c in first_row if c.spec.hops > 1} == {(3, 16), (3, 32)}
    assert all(r.spec.hops == c.spec.hops and r.spec.registers == 128
               for c in extra for r in register_variants(c))  # fmt: skip


@pytest.mark.parametrize("hops", [2, 3])
def test_graph_without_arcs(hops):
    """A graph without arcs has a B without VSSs: the kernels' mask words are empty and every
    vertex but the seed is unreached (a GPU engine failed here once, reshaping no words)."""
    from blest.graph.core import Graph
    from blest.runtime.device import mask_words

    none = np.array([], dtype=np.int64)
    graph = Graph.from_arcs(none, none, 5, directed=True)
    b = hops_bvss(graph.in_ptr, graph.in_idx, graph.n, 8, hops)
    assert np.asarray(b.near_masks).shape == (hops - 1, 0) and mask_words(np, b).size == 0
    np.testing.assert_array_equal(emulate_hops(b, 2), [-1, -1, 0, -1, -1])


def test_tuner_preparations_share_b(rng):
    """The tuner makes a Prepared per engine from one Preparation: they share B's BVSS, which
    upload_all builds before the budget (a fresh one each engine cost a budget-20 screen of
    delaunay-20 most of its share, on the CPU)."""
    from blest.tuning.prepare import prepare

    graph = small_zoo(rng, 300)["deep"]
    prep = prepare(graph, "rcm", 16)
    first = prep.prepared(16).hops_bvss(3)
    assert prep.prepared(16).hops_bvss(3) is first
    assert prep.prepared(32).hops_bvss(3) is not first  # another sigma, another B


@pytest.mark.parametrize("hops", [2, 3])
def test_emulated_engine_runs_the_phases(rng, hops):
    """Without a GPU, an engine of a hops variant (EmulatedEngine) runs the phase emulator:
    levels, depth limits, several seeds and parents against SciPy, in RCM order."""
    from blest.runtime.emulated import EmulatedEngine

    spec = VariantSpec(sigma=16, update="eager", queue="vss", switching=False, hops=hops)
    for name in ("deep", "directed"):
        graph = small_zoo(rng, 300)[name]
        eng = EmulatedEngine(Prepared.from_graph(graph, 16, rcm(graph)), spec)
        starts = np.flatnonzero(graph.out_degree > 0)
        for limit in (None, 2, 4):
            src = int(rng.choice(starts))
            want = _limited(bfs_levels(graph, src), limit)
            np.testing.assert_array_equal(eng.bfs(src, depth_limit=limit), want, err_msg=name)
            assert eng.stats.depth == want.max() and eng.stats.visited == (want >= 0).sum()
        seeds = rng.choice(starts, 3)
        levels, parents = eng.bfs(seeds, parents=True)
        np.testing.assert_array_equal(levels, bfs_levels(graph, seeds), err_msg=name)
        child = np.flatnonzero(levels > 0)
        assert np.all(levels[parents[child]] == levels[child] - 1), name
