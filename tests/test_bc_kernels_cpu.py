"""The Brandes kernels run on the CPU (tests/cuda_cpu.py: one OS thread per CUDA thread, warp
collectives emulated): every kappa in every form (the queue form with its visited bits in
shared and in global memory), a call's batches and their combination, on
directed, undirected, disconnected, deep, star-shaped and grid graphs (many shortest paths of
one length), from poisoned buffers, against the CPU runner bit for bit; the slot's state is
left clean for the next call (a second call on the same buffers gives the same bits); a count
that reaches 2^512 flags its batch and only that one."""

from __future__ import annotations

import numpy as np
import pytest
from cuda_cpu import build, have_compiler, run, small_zoo
from test_paths import diamonds

from blest.codegen.bc_render import bc_params, render_bc
from blest.codegen.bcspec import (
    BC_COMBINE_KERNEL,
    BC_KERNEL,
    BC_SHARED_BYTES,
    BC_SLOT,
    BC_SLOT_WORDS,
    BCSpec,
    bc_variants,
    queue_shared_bytes,
    wide_vertices,
)
from blest.codegen.contract import CTL, CTL_WORDS
from blest.graph.core import Graph
from blest.reference.betweenness import CPURunner, batch_contributions
from blest.reference.treesum import tree_sum

pytestmark = pytest.mark.skipif(not have_compiler(), reason="needs g++")

THREADS = 64
SPECS = list(bc_variants())
#: Vertices of this many in- or out-arcs take the block path in these runs (the runner's
#: default is far larger; the tests below also try every vertex and none).
WIDE = 12

#: What the shim lacks for these kernels: the butterfly's shuffle and IEEE double operations
#: rounded to nearest (g++ on x86-64 neither fuses nor widens them at -O1).
EXTRA_SHIM = r"""
template <class T> inline T __shfl_xor_sync(unsigned, T v, int m) {
    const int lane = threadIdx.x & 31;
    return warp_collect(v, [&](const unsigned long long* s) { return lane_value<T>(s, lane ^ m); });
}
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __ddiv_rn(double a, double b) { return a / b; }
"""


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    cache = tmp_path_factory.mktemp("bc")
    params = [(p.ctype, p.name) for p in bc_params()]
    launches = [(BC_KERNEL, []), (BC_COMBINE_KERNEL, [])]
    return {s: build(EXTRA_SHIM + render_bc(s), launches, params, [], cache) for s in SPECS}


def fresh_state(spec: BCSpec, graph: Graph, slots: int, wide_degree: int) -> dict:
    """A slot's buffers as the runner allocates them (levels -1; masks, QEND and WEND zero),
    with everything the kernel must not read before it writes poisoned."""
    n = graph.n
    pairs = slots * n * spec.kappa
    slot_ctl = np.full((slots, BC_SLOT_WORDS), 0xA5A5A5A5A5A5A5A5, np.uint64)
    slot_ctl[:, [BC_SLOT["qend"], BC_SLOT["wend"]]] = 0
    wide_cap = max(1, spec.kappa * wide_vertices(graph.in_degree, graph.out_degree, wide_degree))
    return {
        "level": np.full(pairs, -1, np.int32),
        "sigma": np.full(pairs, np.nan),
        "delta": np.full(pairs, np.nan),
        "visited": np.zeros(slots * n, np.uint32),
        "next": np.zeros(slots * n, np.uint32),
        "queue": np.full(2 * pairs, 0x5A5A5A5A, np.int32),
        "qoff": np.full(slots * 2 * (n + 2), -7, np.int64),
        "wide": np.full(slots * wide_cap, -9, np.int64),
        "slot_ctl": slot_ctl.reshape(-1),
    }, wide_cap


def run_call(exe, spec: BCSpec, graph: Graph, sources, *, endpoints=False, state=None,
             blocks=1, wide_degree=WIDE, vis_smem=True) -> dict:  # fmt: skip
    """One call: every batch of ``sources`` (a power of two, or fewer than kappa) in one
    launch, then the combination; ``blocks`` blocks (the block and queue forms: one slot
    each); ``vis_smem``: the queue form keeps its visited bits in shared memory."""
    n, k = graph.n, len(sources)
    batches = -(-k // spec.kappa)
    slots = 1 if spec.form == "grid" else blocks
    shared = BC_SHARED_BYTES
    if spec.form == "queue":
        shared = queue_shared_bytes(spec.kappa, n, vis_smem)
    fresh, wide_cap = fresh_state(spec, graph, slots, wide_degree)
    arrays = {
        "out_ptr": np.asarray(graph.out_ptr, np.int64),
        "out_idx": np.asarray(graph.out_idx, np.int32),
        "in_ptr": np.asarray(graph.in_ptr, np.int64),
        "in_idx": np.asarray(graph.in_idx, np.int32),
        **(state if state is not None else fresh),
        "ctl": np.zeros(CTL_WORDS, np.uint32),
        "sources": np.asarray(sources, np.int32),
        "rows": np.full(batches * n, np.nan),
        "flags": np.zeros(batches, np.uint32),
        "node": np.full(n, np.nan),
    }
    scalars = {"n": n, "n_sources": k, "batch_first": 0, "batch_last": batches,
               "endpoints": int(endpoints), "wide_degree": wide_degree,
               "wide_cap": wide_cap, "vis_smem": int(vis_smem)}  # fmt: skip
    out = run(exe, arrays, scalars, THREADS, shared, blocks=blocks)
    out["rows"] = out["rows"].reshape(batches, n)
    return out


def state_of(out: dict) -> dict:
    names = ("level", "sigma", "delta", "visited", "next", "queue", "qoff", "wide", "slot_ctl")
    return {name: out[name] for name in names}


def check_call(out, spec, graph, sources, endpoints, label):
    assert out["ctl"][CTL["error"]] == 0, label
    assert not out["flags"].any(), label
    for b, row in enumerate(out["rows"]):
        part = sources[b * spec.kappa : (b + 1) * spec.kappa]
        want = tree_sum(batch_contributions(graph, part, endpoints=endpoints))
        assert row.tobytes() == want.tobytes(), f"{label}: batch {b}"
    want = CPURunner(graph, endpoints=endpoints).run_batch(np.asarray(sources))
    assert out["node"].tobytes() == want.tobytes(), label
    # the state is clean for the next batch: levels -1, masks and the queue's end zero
    assert (out["level"] == -1).all() and not out["visited"].any() and not out["next"].any()
    counters = out["slot_ctl"].reshape(-1, BC_SLOT_WORDS)
    assert not counters[:, [BC_SLOT["qend"], BC_SLOT["wend"]]].any(), label


def complete_grid(rows: int, cols: int) -> Graph:
    ids = np.arange(rows * cols).reshape(rows, cols)
    src = np.concatenate([ids[:, :-1].ravel(), ids[:-1, :].ravel()])
    dst = np.concatenate([ids[:, 1:].ravel(), ids[1:, :].ravel()])
    return Graph.from_arcs(src, dst, rows * cols, directed=False)


def star(n: int) -> Graph:
    leaves = np.arange(1, n)
    return Graph.from_arcs(np.zeros(n - 1, np.int64), leaves, n, directed=False)


def zoo(rng) -> dict[str, Graph]:
    graphs = small_zoo(rng, 120)
    graphs["star"] = star(int(rng.integers(20, 60)))
    graphs["grid"] = complete_grid(int(rng.integers(4, 8)), int(rng.integers(5, 12)))
    return graphs


def call_sources(rng, graph: Graph, spec: BCSpec) -> np.ndarray:
    """A call's distinct sources (a power of two of them): two batches, one batch, or fewer
    than kappa."""
    k = min(graph.n, int(rng.choice([2 * spec.kappa, spec.kappa, 1 << int(rng.integers(0, 3))])))
    k = 1 << (k.bit_length() - 1)
    return rng.choice(graph.n, k, replace=False).astype(np.int64)


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_calls_equal_the_cpu_runner_bit_for_bit(programs, rng, spec):
    for name, graph in zoo(rng).items():
        sources = call_sources(rng, graph, spec)
        endpoints = bool(rng.random() < 0.5)
        blocks = 1 if spec.form == "grid" else 2
        wide = int(rng.choice([0, WIDE, 2**40]))  # every vertex wide, hubs, none
        vis_smem = bool(rng.random() < 0.5)  # the queue form's visited bits: shared or global
        out = run_call(programs[spec], spec, graph, sources, endpoints=endpoints, blocks=blocks,
                       wide_degree=wide, vis_smem=vis_smem)  # fmt: skip
        label = f"{name} endpoints={endpoints} {wide} vis_smem={vis_smem}"
        check_call(out, spec, graph, sources, endpoints, label)


@pytest.mark.parametrize(
    ("spec", "vis_smem"),
    [(BCSpec(16, "block"), True), (BCSpec(4, "queue"), True), (BCSpec(4, "queue"), False)],
    ids=["bc_k16_block", "bc_k4_queue", "bc_k4_queue_global_visited"],
)
def test_a_second_call_on_the_same_buffers_gives_the_same_bits(programs, rng, spec, vis_smem):
    graph = small_zoo(rng, 120)["disconnected"]
    first = rng.choice(graph.n, 32, replace=False)
    out = run_call(programs[spec], spec, graph, first, blocks=2, vis_smem=vis_smem)
    check_call(out, spec, graph, first, False, "first call")
    second = rng.choice(graph.n, 16, replace=False)
    again = run_call(programs[spec], spec, graph, second, endpoints=True, state=state_of(out),
                     vis_smem=vis_smem)  # fmt: skip
    check_call(again, spec, graph, second, True, "second call")


@pytest.mark.parametrize("vis_smem", [True, False])
def test_the_queue_form_on_deep_grid_and_star_graphs(programs, rng, vis_smem):
    """Every queue kappa on a deep graph (hundreds of levels), a grid (many equal paths) and a
    star (a hub of every arc), two blocks taking batches in turn, with and without endpoints."""
    graphs = {"deep": small_zoo(rng, 150)["deep"], "grid": complete_grid(7, 9), "star": star(40)}
    for spec in (s for s in SPECS if s.form == "queue"):
        for name, graph in graphs.items():
            sources = rng.choice(graph.n, 4 * spec.kappa, replace=False).astype(np.int64)
            for endpoints in (False, True):
                out = run_call(programs[spec], spec, graph, sources, endpoints=endpoints,
                               blocks=2, vis_smem=vis_smem)  # fmt: skip
                check_call(out, spec, graph, sources, endpoints, f"{spec.name} {name}")


def test_the_grid_form_on_two_blocks(programs, rng):
    """Two blocks meet at every grid barrier (the tests above run one)."""
    spec = BCSpec(8, "grid")
    graph = small_zoo(rng, 60)["power_law"]
    sources = rng.choice(graph.n, 16, replace=False)
    out = run_call(programs[spec], spec, graph, sources, blocks=2)
    check_call(out, spec, graph, sources, False, "two blocks")


@pytest.mark.parametrize("spec", [BCSpec(8, "block"), BCSpec(8, "queue")], ids=lambda s: s.name)
def test_a_count_of_2_to_the_512_flags_its_batch_only(programs, spec):
    """A chain of 128 diamonds of width 16: the far end has 16^128 = 2^512 shortest paths from
    vertex 0 (the CPU rescales there); a batch of sources near the middle (at most 16^65
    paths to anywhere) stays exact."""
    graph, last = diamonds([16] * 128)
    middle = last // 2  # the 64th hub
    sources = np.concatenate([np.arange(8), np.arange(middle, middle + 8)])
    out = run_call(programs[spec], spec, graph, sources)
    assert out["flags"].tolist() == [1, 0]
    want = tree_sum(batch_contributions(graph, sources[8:]))
    assert out["rows"][1].tobytes() == want.tobytes()
    assert (out["level"] == -1).all() and not out["visited"].any()
