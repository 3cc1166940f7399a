"""The single-source persistent kernels run on the CPU (tests/cuda_cpu.py): the init kernel,
then the traversal, as the engine launches them, in one block of 128 threads (the grid barrier
then meets one block), with the binary MMA emulated from its fragment layout. Levels against
SciPy on directed, undirected, disconnected, deep and power-law graphs, for variants covering
every axis of the persistent drivers (sigma, eager and lazy, dirty sets, queue policy,
switching with eta 0, 2 and always bottom-up, small-queue levels in block 0); with the return
rule (beta) and the edge-ratio guard (alpha), the levels' directions against the emulator. The
serving kernel answers calls posted by a host thread. The gpu-marked tests run every variant on
the device."""

from __future__ import annotations

import os

import numpy as np
import pytest
from cuda_cpu import build, have_compiler, run, small_zoo

from blest.codegen.contract import (
    CALL_SLOT,
    CTL,
    CTL_WORDS,
    DST_HOST_BIT,
    DST_TAG_MASK,
    DST_TAG_SHIFT,
    FUSED_SERVE,
    HUB_DEGREE,
    SERVE,
    SERVE_QUIT,
    SERVE_WORDS,
    claims_form,
    frontier_buffers,
    queue_buffers,
)
from blest.codegen.render import graph_params, kernel_names, render, state_params
from blest.codegen.spec import VariantSpec, variants
from blest.graph.core import Graph
from blest.graph.ordering import rcm
from blest.graph.prepared import Prepared
from blest.reference import bfs_levels, emulate_spec
from blest.runtime.device import mask_words, out_csr

pytestmark = pytest.mark.skipif(not have_compiler(), reason="needs g++")

THREADS = 128
#: BLEST_CPU_KERNELS=all runs every persistent variant (40, a few minutes) instead of these.
SPECS = [
    VariantSpec(sigma=8, update="lazy", dirty_sets=False, queue="vss", switching=True),
    VariantSpec(sigma=4, update="lazy", dirty_sets=True, queue="sweep", switching=True),
    VariantSpec(sigma=16, update="lazy", dirty_sets=True, queue="vss", switching=False),
    VariantSpec(sigma=32, update="eager", queue="vss", switching=False),
    VariantSpec(sigma=8, update="eager", queue="sweep", switching=False),
    VariantSpec(sigma=32, update="eager", queue="resident", switching=False),
    VariantSpec(sigma=8, update="eager", queue="resident", switching=False),
    VariantSpec.csr(8, switching=True),
    VariantSpec.csr(16, switching=False),
]
CSR_SPECS = [s for s in SPECS if s.expand == "csr"]
if os.environ.get("BLEST_CPU_KERNELS") == "all":
    SPECS = list(variants(launch="persistent"))


def kernel_signatures(spec: VariantSpec) -> tuple[list, tuple, tuple]:
    """The CPU runner's view of ``spec``'s module: the parameters its kernels share, then the
    init and the traversal kernels, each its name and its own parameters."""
    params = [(p.ctype, p.name) for p in graph_params(spec) + state_params(spec)]
    names = kernel_names(spec)
    bfs = (names["bfs"], [("int", "depth_limit"), ("double", "eta"), ("double", "beta"),
                          ("double", "alpha"), ("unsigned int", "small_queue"),
                          ("u32*", "ctl_out"), ("int", "fused")])  # fmt: skip
    init = (names["init"], [("const int*", "seeds"), ("int", "n_seeds"), ("int", "src")])
    return params, init, bfs


def spec_programs(spec: VariantSpec, cache, claims: str | None = None) -> dict:
    """``spec``'s kernels built for the CPU runner (rendered with ``claims``): init and
    traversal (key ``spec``), the traversal alone (``(spec, "fused")``) and the serving kernel
    (``(spec, "serve")``)."""
    params, init, bfs = kernel_signatures(spec)
    text = render(spec, claims=claims)
    serve = {**SERVE, "ctl_words": CTL_WORDS, "dst_tag_shift": DST_TAG_SHIFT,
             "dst_tag_mask": DST_TAG_MASK, "dst_host_bit": DST_HOST_BIT,
             "quit": SERVE_QUIT}  # fmt: skip
    server = (kernel_names(spec, serving=True)["serve"], [*bfs[1][:-1], ("u32*", "ctl_copy")])
    return {
        spec: build(text, [init, bfs], params, [], cache),
        (spec, "fused"): build(text, [bfs], params, [], cache),
        (spec, "serve"): build(render(spec, serving=True, claims=claims), [server], params, [],
                               cache, serve=serve),
    }  # fmt: skip


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    cache = tmp_path_factory.mktemp("k")
    out = {}
    for spec in SPECS:
        out.update(spec_programs(spec, cache))
    return out


def traverse(exe, spec: VariantSpec, prep: Prepared, src: int, eta: float, small: int,
             fused: bool = False, beta: float = 0.0):  # fmt: skip
    """Levels and control block of a traversal from ``src``: init, then the traversal kernel;
    or, ``fused``, the traversal kernel alone, initializing from the control block's call slot
    (the seed; no destination, so the levels stay in place) and copying the control block to
    ``ctl_out`` at its end, as a captured untimed call runs it (returned as a third array)."""
    out = _run_traversal(exe, spec, prep, src, eta, small, fused, beta)
    if fused:
        return out["levels"], out["ctl"], out["ctl_out"]
    return out["levels"], out["ctl"]


def _run_traversal(exe, spec: VariantSpec, prep: Prepared, src: int, eta: float, small: int,
                   fused: int, beta: float, served: np.ndarray | None = None,
                   alpha: float = 0.0, modes: np.ndarray | None = None,
                   names: np.ndarray | None = None, depth_limit: int = -1) -> dict:  # fmt: skip
    """Every array of the traversal :func:`traverse` describes, as the kernels left them;
    ``fused=FUSED_SERVE``: the serving kernel (``exe`` built from its own module) answering
    the calls from ``served`` (seeds) that the runner's host thread posts, each call's levels
    and control block in its row of ``serve_out`` and ``serve_ctl``; ``modes``: each call's
    destination (tests/cuda_cpu.py, ``_poster``: 1 host memory, 0 device memory, 2 none);
    ``names``: whether each call names the next call's row as the array to fill with -1s ahead
    of it (``serve_next``); ``hops`` > 1: B's BVSS, each VSS's mask words then its near ones,
    and the permutation even when it is the identity (as the engine gives them)."""
    b, n = (prep.hops_bvss(spec.hops) if spec.hops > 1 else prep.bvss), prep.n
    masks = np.asarray(mask_words(np, b), dtype=np.uint32)
    words = (n + 31) // 32
    arrays = {
        "row_ids": np.asarray(b.row_ids, dtype=np.int32),
        "masks": masks,
        "real_ptrs": np.asarray(b.real_ptrs, dtype=np.int32),
        "virtual_to_real": np.asarray(b.virtual_to_real, dtype=np.int32),
        "visited": np.full(words, 0xDEADBEEF, dtype=np.uint32),  # poisoned: init must clear
        "frontier": np.full(frontier_buffers(spec) * words, 0xDEADBEEF, dtype=np.uint32),
        "ctl": np.full(CTL_WORDS, 77, dtype=np.uint32),
        "bottom_up_levels": np.full(words, 0xDEADBEEF, dtype=np.uint32),
        "levels": np.full(n, 0x5A5A5A5A, dtype=np.int32),
    }
    scalars = {"n": n, "n_words": words, "n_vss": b.n_vss, "n_sets": b.n_slice_sets,
               "n_seeds": 1, "src": src, "depth_limit": depth_limit, "eta": float(eta),
               "beta": float(beta), "alpha": float(alpha), "small_queue": small,
               "fused": int(fused)}  # fmt: skip
    if fused == FUSED_SERVE:  # the control block zeroed before the launch; calls from serve_*
        arrays["ctl"][:] = 0
        arrays["ctl_out"] = np.zeros(CTL_WORDS + SERVE_WORDS, dtype=np.uint32)
        arrays["ctl_out"][:CTL_WORDS] = 99
        arrays["ctl_out"][CTL["error"]] = 0  # the host's copy of ERROR is zero while usable
        arrays["ctl_out"][CTL_WORDS + SERVE["idle_us"]] = 1000
        arrays["ctl_copy"] = np.full(CTL_WORDS, 99, dtype=np.uint32)  # the kernel's, each call
        arrays["serve_seeds"] = np.asarray(served, dtype=np.int32)
        arrays["serve_out"] = np.full((len(served), n), 0x5A5A5A5A, dtype=np.int32)
        arrays["serve_ctl"] = np.full((len(served), CTL_WORDS), 99, dtype=np.uint32)
        arrays["serve_modes"] = None if modes is None else np.asarray(modes, dtype=np.int32)
        arrays["serve_next"] = None if names is None else np.asarray(names, dtype=np.int32)
    elif fused:  # the call slot as the graph's first node leaves it; the rest poisoned
        first, words_ = CALL_SLOT
        arrays["ctl"][first : first + words_] = 0
        arrays["ctl"][CTL["seed"]] = src
        arrays["ctl_out"] = np.full(CTL_WORDS, 99, dtype=np.uint32)
    perm = prep.permutation
    if perm is not None and (not perm.is_identity or spec.hops > 1):  # levels stay internal
        arrays["old_of_new"] = np.asarray(perm.old_of_new, dtype=np.int32)
        arrays["new_of_old"] = np.asarray(perm.new_of_old, dtype=np.int32)
    if spec.switching:
        arrays["in_ptr"] = np.asarray(prep.in_ptr, dtype=np.int64)
        arrays["in_idx"] = np.asarray(prep.in_idx, dtype=np.int32)
    if spec.update == "lazy":
        arrays["v_next"] = np.full(words, 0xDEADBEEF, dtype=np.uint32)
    if spec.dirty_sets:
        dirty = (words + 31) // 32
        arrays["dirty"] = np.full(2 * dirty, 0xDEADBEEF, dtype=np.uint32)
        scalars["dirty_words"] = dirty
    if spec.queue == "vss":
        arrays["queue"] = np.zeros(2 * queue_buffers(spec) * max(b.n_vss, 1), dtype=np.int32)
    if spec.expand == "csr":
        in_ptr = np.asarray(prep.in_ptr, dtype=np.int64)
        in_idx = np.asarray(prep.in_idx, dtype=np.int32)
        out_ptr, out_idx = out_csr(np, prep, in_ptr, in_idx)
        hub = np.diff(out_ptr) > HUB_DEGREE
        packed = np.zeros(4 * words, dtype=np.uint8)
        bits = np.packbits(hub, bitorder="little")
        packed[: bits.size] = bits
        hubs = max(int(hub.sum()), 1)
        queue = np.full(2 * queue_buffers(spec) * hubs, -7, dtype=np.int64)  # poisoned
        arrays.update(out_ptr=out_ptr, out_idx=np.asarray(out_idx, dtype=np.int32),
                      hubs=packed.view(np.uint32), hub_queue=queue)  # fmt: skip
        scalars["max_hubs"] = hubs
    return run(exe, arrays, scalars, THREADS, 0)


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_levels_match_scipy(programs, rng, spec):
    for name, graph in small_zoo(rng, 360).items():
        prep = Prepared.from_graph(graph, spec.sigma)
        for eta, small in ((2.0, 0), (1e9, 0), (0.0, 16)):
            src = int(rng.choice(np.flatnonzero(graph.out_degree > 0)))
            levels, ctl = traverse(programs[spec], spec, prep, src, eta, small)
            want = bfs_levels(graph, src)
            np.testing.assert_array_equal(levels, want, err_msg=f"{name} eta={eta} sq={small}")
            assert ctl[CTL["error"]] == 0
            assert ctl[CTL["visited"]] == np.count_nonzero(want >= 0)
            assert np.int32(ctl[CTL["depth"]]) == want.max()


EAGER_SPECS = [s for s in SPECS if s.update == "eager"]


@pytest.mark.parametrize("spec", EAGER_SPECS, ids=lambda s: s.name)
def test_reordered_levels_match_scipy(programs, rng, spec):
    """A reordered graph (RCM; new_of_old set): the eager claims go by compare-and-swap on the
    levels, which init sets to -1, and keep no visited bitmap. Internal levels against SciPy's
    through the permutation, from init and traversal launches and from the one-launch call,
    with the grid and small-queue levels; the control block's counts."""
    for name, graph in small_zoo(rng, 300).items():
        prep = Prepared.from_graph(graph, spec.sigma, rcm(graph))
        order = np.asarray(prep.permutation.new_of_old)
        assert not prep.permutation.is_identity, name
        for fused, small in ((False, 0), (True, 0), (False, 16)):
            src = int(rng.choice(np.flatnonzero(graph.out_degree > 0)))
            want = bfs_levels(graph, src)
            exe = programs[spec, "fused"] if fused else programs[spec]
            out = _run_traversal(exe, spec, prep, int(order[src]), 2.0, small, fused, 0.0)
            ctx = f"{name} fused={fused} sq={small}"
            np.testing.assert_array_equal(out["levels"][order], want, err_msg=ctx)
            ctl = out["ctl"]
            assert ctl[CTL["error"]] == 0 and ctl[CTL["visited"]] == np.count_nonzero(want >= 0)
            assert np.int32(ctl[CTL["depth"]]) == want.max(), ctx
            seen = np.unpackbits(out["visited"].view(np.uint8), bitorder="little")
            assert np.flatnonzero(seen).tolist() == [int(order[src])], ctx  # init's bit alone


@pytest.mark.parametrize("spec", EAGER_SPECS, ids=lambda s: s.name)
def test_one_claims_form_alone_matches_scipy(tmp_path_factory, rng, spec):
    """An engine renders its eager kernels with only the claims its graph's ordering uses
    (``claims_form``): by level on a reordered graph, on visited on a graph in its own ids.
    Each form alone, in both launch forms and with small-queue levels, against SciPy."""
    cache = tmp_path_factory.mktemp("claims")
    params, init, bfs = kernel_signatures(spec)
    for reordered in (True, False):
        text = render(spec, claims=claims_form(spec, reordered))
        assert text != render(spec), "the form is a compile-time constant"
        exes = {False: build(text, [init, bfs], params, [], cache),
                True: build(text, [bfs], params, [], cache)}  # fmt: skip
        for name, graph in small_zoo(rng, 300).items():
            prep = Prepared.from_graph(graph, spec.sigma, rcm(graph) if reordered else None)
            assert prep.permutation.is_identity != reordered, name
            order = np.asarray(prep.permutation.new_of_old)
            for fused, small in ((False, 0), (True, 0), (False, 16)):
                src = int(rng.choice(np.flatnonzero(graph.out_degree > 0)))
                out = _run_traversal(exes[fused], spec, prep, int(order[src]), 2.0, small, fused,
                                     0.0)  # fmt: skip
                ctx = f"{name} reordered={reordered} fused={fused} sq={small}"
                np.testing.assert_array_equal(out["levels"][order], bfs_levels(graph, src), ctx)
                assert out["ctl"][CTL["error"]] == 0, ctx


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_one_launch_call_matches_scipy(programs, rng, spec):
    """The traversal kernel alone (``fused``): init from the call slot, with every other
    control word and buffer poisoned, then the levels, and the control block delivered to
    ``ctl_out``, whose seed and destination words survive init."""
    for name, graph in small_zoo(rng, 300).items():
        prep = Prepared.from_graph(graph, spec.sigma)
        for eta, small in ((2.0, 0), (0.0, 16)):
            src = int(rng.choice(np.flatnonzero(graph.out_degree > 0)))
            exe = programs[spec, "fused"]
            levels, ctl, ctl_out = traverse(exe, spec, prep, src, eta, small, fused=True)
            want = bfs_levels(graph, src)
            np.testing.assert_array_equal(levels, want, err_msg=f"{name} eta={eta} sq={small}")
            np.testing.assert_array_equal(ctl_out, ctl)
            assert ctl[CTL["error"]] == 0 and ctl[CTL["seed"]] == src and ctl[CTL["dst"]] == 0
            assert ctl[CTL["visited"]] == np.count_nonzero(want >= 0)
            assert np.int32(ctl[CTL["depth"]]) == want.max()


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_served_calls_match_scipy(programs, rng, spec):
    """The serving kernel (``render(spec, serving=True)``) answers calls that a host thread
    posts one after the other: each call's levels land in that call's row, in host memory or
    (written there by the traversal itself) in device memory, or for the last call in the
    kernel's own buffer, with its control block copied back before the answer; every state
    buffer starts poisoned, and the barriers' counts run on from call to call. Calls 1, 4 and
    5 name the next call's row, which the server fills with -1s between the calls: calls 2 and
    5 then skip their -1s (call 3, unnamed, writes them), and call 6's unused row stays all -1."""
    modes = [1, 0, 0, 1, 0, 2]  # host, device (twice), host after device, ..., none
    names = [1, 0, 0, 1, 1, 0]
    for name, graph in small_zoo(rng, 240).items():
        prep = Prepared.from_graph(graph, spec.sigma)
        starts = np.flatnonzero(graph.out_degree > 0)
        seeds = rng.choice(starts, size=len(modes))
        seeds[2] = seeds[1]  # a repeated call
        out = _run_traversal(programs[spec, "serve"], spec, prep, 0, 2.0, 8, FUSED_SERVE, 0.0,
                             served=seeds, modes=modes, names=names)  # fmt: skip
        for k, src in enumerate(seeds):
            want = bfs_levels(graph, int(src))
            ctx = f"{name} call {k + 1} from {src}"
            got = out["levels"] if modes[k] == 2 else out["serve_out"][k]
            np.testing.assert_array_equal(got, want, err_msg=ctx)
            if modes[k] == 2:  # only the server's -1s reached the row, which call 5 named
                assert np.all(out["serve_out"][k] == -1), ctx
            ctl = out["serve_ctl"][k]
            assert ctl[CTL["call"]] == k + 1 and ctl[CTL["error"]] == 0, ctx
            assert ctl[CTL["seed"]] == src and ctl[CTL["call_host"]] == (modes[k] == 1), ctx
            assert ctl[CTL["visited"]] == np.count_nonzero(want >= 0), ctx
            assert np.int32(ctl[CTL["depth"]]) == want.max(), ctx
        answer = out["ctl_out"][CTL_WORDS + SERVE["answer"] :][:2]
        # {the last call's number, the resident queue's barriers met since the launch: two a
        # call before its levels, one a level, one for the answer}
        met = sum(int(c[CTL["levels_run"]]) + 3 for c in out["serve_ctl"])
        assert list(answer) == [len(seeds), met if spec.queue == "resident" else 0], name


def _hub_graph(rng, n: int, directed: bool) -> Graph:
    """A sparse random graph with a few hubs of HUB_DEGREE + 1 to 3 * HUB_DEGREE out-arcs, one
    of them a source's neighbour, so that hubs meet at one level and spill across chunks."""
    src = [rng.integers(0, n, 3 * n)]
    dst = [rng.integers(0, n, 3 * n)]
    for hub in rng.choice(n, 5, replace=False):
        degree = int(rng.integers(HUB_DEGREE + 1, 3 * HUB_DEGREE))
        src.append(np.full(degree, hub))
        dst.append(rng.choice(n, degree, replace=False))
    s, d = np.concatenate(src), np.concatenate(dst)
    keep = s != d
    return Graph.from_arcs(s[keep], d[keep], n, directed=directed)


@pytest.mark.parametrize("spec", CSR_SPECS, ids=lambda s: s.name)
@pytest.mark.parametrize("directed", [False, True], ids=["undirected", "directed"])
def test_csr_hubs_match_scipy(programs, rng, spec, directed):
    """expand="csr" with hubs: their arcs are cut into chunks that span two hubs; sources on
    hubs (the seed's hub list) and off them; the small-queue mode runs the hub part in block 0."""
    graph = _hub_graph(rng, 1200, directed)
    degree = np.diff(graph.out_ptr)
    assert np.count_nonzero(degree > HUB_DEGREE) >= 5
    prep = Prepared.from_graph(graph, spec.sigma)
    order = np.asarray(prep.permutation.new_of_old) if prep.permutation is not None else None
    hubs = np.flatnonzero(degree > HUB_DEGREE)
    others = np.flatnonzero((degree > 0) & (degree <= HUB_DEGREE))
    for src in (int(rng.choice(hubs)), int(rng.choice(others))):
        want = bfs_levels(graph, src)
        internal = src if order is None else int(order[src])
        for eta, small in ((2.0, 0), (0.0, 16), (0.0, 0)):
            levels, ctl = traverse(programs[spec], spec, prep, internal, eta, small)
            got = levels if order is None else levels[order]
            np.testing.assert_array_equal(got, want, err_msg=f"src={src} eta={eta} sq={small}")
            assert ctl[CTL["visited"]] == np.count_nonzero(want >= 0)


SWITCHING = [s for s in SPECS if s.switching]


def _directions_against_emulator(programs, rng, spec, settings, rule: str) -> int:
    """For every small-zoo graph and each (eta, beta, alpha, small_queue, fused) setting: the
    levels against SciPy and the bottom-up levels against the emulator's; returns how often
    the setting's ``rule`` ("beta" or "alpha"), turned off, would change the directions."""
    changed = 0
    for name, graph in small_zoo(rng, 360).items():
        prep = Prepared.from_graph(graph, spec.sigma)
        src = int(rng.choice(np.flatnonzero(graph.out_degree > 0)))
        want = bfs_levels(graph, src)
        order = np.asarray(prep.permutation.new_of_old) if prep.permutation is not None else None
        internal = src if order is None else int(order[src])
        depth = int(want.max())
        for eta, beta, alpha, small, fused in settings:
            exe = programs[spec, "fused"] if fused else programs[spec]
            out = _run_traversal(exe, spec, prep, internal, eta, small, fused, beta, alpha=alpha)
            ctx = f"{name} eta={eta} beta={beta} alpha={alpha} sq={small} fused={fused}"
            got = out["levels"] if order is None else out["levels"][order]
            np.testing.assert_array_equal(got, want, err_msg=ctx)
            bits = np.unpackbits(out["bottom_up_levels"].view(np.uint8), bitorder="little")
            rules = {"eta": eta, "beta": beta, "alpha": alpha}
            ref = emulate_spec(prep.bvss, prep.graph, internal, spec, **rules)
            assert tuple(np.flatnonzero(bits[: depth + 1])) == ref.bottom_up_levels, ctx
            plain = emulate_spec(prep.bvss, prep.graph, internal, spec, **{**rules, rule: 0.0})
            changed += plain.bottom_up_levels != ref.bottom_up_levels
    return changed


@pytest.mark.parametrize("spec", SWITCHING, ids=lambda s: s.name)
def test_return_rule_directions_match_emulator(programs, rng, spec):
    """beta > 0: after a bottom-up level the next stays bottom-up while |F_L| * beta >= n.
    The levels' directions (``bottom_up_levels``) against the emulator's, for the plain and
    the one-launch call, in the grid and in small-queue episodes; the return rule must change
    the directions somewhere, or this test would not see it."""
    settings = ((1e9, 4.0, 0.0, 0, False), (2.0, 40.0, 0.0, 16, True),
                (1e9, 1e9, 0.0, 0, True), (4.0, 0.0, 0.0, 0, False))  # fmt: skip
    assert _directions_against_emulator(programs, rng, spec, settings, "beta") > 0


@pytest.mark.parametrize("spec", SWITCHING, ids=lambda s: s.name)
def test_edge_ratio_guard_directions_match_emulator(programs, rng, spec):
    """alpha > 0: a level that eta sends bottom-up goes so only when alpha * m_f > m_u. The
    levels against SciPy, the directions against the emulator's (plain and one-launch calls,
    small-queue episodes, with beta). The guard's sums are counted on demand, at the levels
    that eta's rule sends bottom-up; a wrong sum shows as a wrong direction. The guard must
    change the directions somewhere."""
    settings = ((1e9, 0.0, 2.0, 0, False), (1e9, 0.0, 0.5, 16, True),
                (20.0, 40.0, 14.0, 0, True), (1e9, 0.0, 1e9, 0, False))  # fmt: skip
    assert _directions_against_emulator(programs, rng, spec, settings, "alpha") > 0
