"""The single-source block kernel (``launch="block"``) run on the CPU (tests/cuda_cpu.py): one
launch of one block of 64 or 128 threads, or of one cluster of 2 or 4 such blocks
(``bfs_cluster.cu.j2``), does the whole traversal, as the engine launches it.
Levels (internal and user ids) against SciPy on directed, disconnected, deep and power-law
graphs, natural and reordered, from one seed and from several, with depth limits, with every
queue entry in global memory (smem_queue = 0), a few in shared memory (spills every level) and
all of them; outputs and state poisoned first; the control block against the reference (depth,
visited, levels run) and the level timeline's slots; the buffers the engine builds for it, and
its shared-memory plan. The gpu-marked tests run it on a device."""

from __future__ import annotations

import numpy as np
import pytest
from cuda_cpu import build, have_compiler, run, small_zoo

from blest.codegen.contract import (
    BLOCK_SMEM_QUEUE,
    CTL,
    CTL_FIELDS,
    CTL_WORDS,
    DST_HOST_BIT,
    DST_TAG_MASK,
    DST_TAG_SHIFT,
    HOPPER_SMEM_OPTIN,
    SERVE,
    SERVE_QUIT,
    SERVE_WORDS,
    SMEM_STATIC_RESERVE,
    block_max_vertices,
    block_smem_bytes,
)
from blest.codegen.render import graph_params, kernel_names, render, state_params
from blest.codegen.spec import VariantSpec
from blest.errors import ArgumentError
from blest.graph.core import Graph
from blest.graph.ordering import rcm
from blest.graph.prepared import Prepared
from blest.reference import bfs_levels
from blest.runtime.device import out_csr
from blest.runtime.ss_buffers import block_buffers, block_plan, vertex_heads

pytestmark = pytest.mark.skipif(not have_compiler(), reason="needs g++")

SPEC = VariantSpec.block(8)
POISON = 0x5A5A5A5A
CLOCK_POISON = 0xDEADBEEFDEADBEEF
#: Control words the kernel zeroes: all but the four it reports.
ZEROED = [
    f.offset + i
    for f in CTL_FIELDS
    if f.name not in ("DEPTH", "VISITED", "LEVELS_RUN", "DONE")
    for i in range(f.words)
]
EXTRA = [("const int*", "seeds"), ("int", "n_seeds"), ("int", "src"), ("int", "depth_limit")]


def compiled(spec: VariantSpec, where):
    params = [(p.ctype, p.name) for p in graph_params(spec) + state_params(spec)]
    launches = [(kernel_names(spec)["bfs"], EXTRA)]
    return build(render(spec), launches, params, [], where)


@pytest.fixture(scope="module", params=[1, 2, 4], ids=["block", "cluster2", "cluster4"])
def program(request, tmp_path_factory):
    """(program, blocks): the one-block kernel, or the cluster kernel on 2 or 4 blocks."""
    spec = VariantSpec.block(8, request.param)
    return compiled(spec, tmp_path_factory.mktemp("k")), request.param


def traverse(program, prep: Prepared, seeds, *, threads: int, smem_queue: int, limit: int = -1):
    """One launch from ``seeds`` (user ids); returns the written-back arrays."""
    exe, blocks = program
    n = prep.n
    in_ptr, in_idx = np.asarray(prep.in_ptr, dtype=np.int64), np.asarray(prep.in_idx, np.int32)
    out_ptr, out_idx = out_csr(np, prep, in_ptr, in_idx)
    internal = np.unique(np.asarray(prep.permutation.new_of_old)[np.asarray(seeds)])
    identity = prep.permutation.is_identity
    arrays = {
        "heads": vertex_heads(np, np.asarray(out_ptr, np.int64), np.asarray(out_idx, np.int32)),
        "out_ptr": np.asarray(out_ptr, dtype=np.int64),
        "out_idx": np.asarray(out_idx, dtype=np.int32),
        "old_of_new": None if identity else np.asarray(prep.permutation.old_of_new, np.int32),
        "queue": np.full(2 * blocks * n, POISON, dtype=np.int32),
        "ctl": np.full(CTL_WORDS, 77, dtype=np.uint32),
        "levels": np.full(n, POISON, dtype=np.int32),
        "user_levels": None if identity else np.full(n, POISON, dtype=np.int32),
        "level_clock": np.full(2 * (n + 2), CLOCK_POISON, dtype=np.uint64),
        "seeds": internal.astype(np.int32) if internal.size > 1 else None,
    }
    scalars = {"n": n, "n_words": (n + 31) // 32, "smem_queue": smem_queue,
               "n_seeds": internal.size, "src": int(internal[0]), "depth_limit": limit}  # fmt: skip
    smem = block_smem_bytes(n, smem_queue, blocks)
    return run(exe, arrays, scalars, threads, smem, blocks=blocks)


def check(out, prep: Prepared, want: np.ndarray, ctx: str) -> int:
    """Levels in both id spaces and the control block against the reference ``want``; returns
    the levels run."""
    new_of_old = np.asarray(prep.permutation.new_of_old)
    user = out["levels"][new_of_old] if "user_levels" not in out else out["user_levels"]
    np.testing.assert_array_equal(user, want, err_msg=ctx)
    np.testing.assert_array_equal(out["levels"][new_of_old], want, err_msg=ctx)
    ctl = out["ctl"]
    depth = int(want.max())
    reached = want >= 0
    assert ctl[CTL["error"]] == 0 and ctl[CTL["done"]] == 1, ctx
    assert np.int32(ctl[CTL["depth"]]) == depth, ctx
    assert ctl[CTL["visited"]] == np.count_nonzero(reached), ctx
    levels_run = int(ctl[CTL["levels_run"]])
    clock = out["level_clock"]
    assert (clock[: levels_run + 1] == 0).all(), ctx  # the shim's timer reads 0
    assert (clock[levels_run + 1 :] == CLOCK_POISON).all(), ctx
    assert (ctl[ZEROED] == 0).all(), ctx
    return levels_run


@pytest.mark.parametrize("threads", [64, 128])
def test_levels_and_control_block_match_scipy(program, rng, threads):
    if threads == 128 and program[1] == 4:
        pytest.skip("512 CPU threads add time and no case the others miss")
    for name, graph in small_zoo(rng, 300).items():
        active = np.flatnonzero(graph.out_degree > 0)
        for ordered in (False, True):
            prep = Prepared.from_graph(graph, 8, rcm(graph) if ordered else None)
            n = graph.n
            cases = [  # (seeds, smem_queue): all in shared memory, none, a few (spills)
                ([int(rng.choice(active))], n),
                ([int(rng.choice(active))], 0),
                ([int(x) for x in rng.choice(n, 5)] + [int(rng.choice(active))] * 2, 3),
            ]
            for seeds, smem_queue in cases:
                ctx = f"{name} rcm={ordered} seeds={seeds} sq={smem_queue} threads={threads}"
                full = bfs_levels(graph, seeds)
                out = traverse(program, prep, seeds, threads=threads, smem_queue=smem_queue)
                levels_run = check(out, prep, full, ctx)
                assert levels_run == full.max() + 1, ctx  # stopped on an empty frontier


def test_depth_limits(program, rng):
    for name, graph in small_zoo(rng, 240).items():
        active = np.flatnonzero(graph.out_degree > 0)
        prep = Prepared.from_graph(graph, 8, rcm(graph))
        seeds = [int(x) for x in rng.choice(active, 2)]
        full = bfs_levels(graph, seeds)
        deepest = int(full.max())
        for limit in sorted({0, 1, deepest // 2, deepest, deepest + 1, deepest + 5}):
            ctx = f"{name} seeds={seeds} depth_limit={limit}"
            want = np.where(full <= limit, full, -1)
            out = traverse(program, prep, seeds, threads=64, smem_queue=2, limit=limit)
            levels_run = check(out, prep, want, ctx)
            assert levels_run == min(limit, deepest + 1), ctx


def test_graphs_without_arcs(program):
    empty = np.zeros(0, dtype=np.int64)
    for n in (1, 77):
        graph = Graph.from_arcs(empty, empty, n, directed=n == 1)
        prep = Prepared.from_graph(graph, 8)
        for seeds in ([n - 1], list(range(0, n, 3))):
            out = traverse(program, prep, seeds, threads=64, smem_queue=1)
            check(out, prep, bfs_levels(graph, seeds), f"n={n} seeds={seeds}")


def test_every_vertex_a_seed_and_an_isolated_seed(program, rng):
    graph = small_zoo(rng, 120)["disconnected"]
    prep = Prepared.from_graph(graph, 8)
    out = traverse(program, prep, np.arange(graph.n), threads=64, smem_queue=7)
    check(out, prep, np.zeros(graph.n, dtype=np.int32), "every vertex")
    assert out["ctl"][CTL["levels_run"]] == 1
    isolated = np.flatnonzero(graph.out_degree == 0)
    if isolated.size:
        v = int(isolated[0])
        out = traverse(program, prep, [v], threads=64, smem_queue=0)
        check(out, prep, bfs_levels(graph, v), "isolated seed")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The one-block launch's serving kernel (``render(spec, serving=True)``), beside a host
    thread that posts its calls (tests/cuda_cpu.py, ``_poster``)."""
    params = [(p.ctype, p.name) for p in graph_params(SPEC) + state_params(SPEC)]
    launch = (
        kernel_names(SPEC, serving=True)["serve"],
        [("u32*", "ctl_out"), ("u32*", "ctl_copy")],
    )
    serve = {**SERVE, "ctl_words": CTL_WORDS, "dst_tag_shift": DST_TAG_SHIFT,
             "dst_tag_mask": DST_TAG_MASK, "dst_host_bit": DST_HOST_BIT,
             "quit": SERVE_QUIT}  # fmt: skip
    return build(render(SPEC, serving=True), [launch], params, [], tmp_path_factory.mktemp("s"),
                 serve=serve)  # fmt: skip


@pytest.mark.parametrize("ordered", [False, True], ids=["natural", "rcm"])
def test_served_calls_match_scipy(server, rng, ordered):
    """The block's server answers the calls a host thread posts one after the other: each call's
    levels (user ids) land in that call's row, in host memory (one copy from the engine's buffer) or
    device memory (written by the traversal itself), or for the last call, without a destination, in
    the engine's own buffer; each call's control block is copied back before its answer. Rows,
    levels, queues and the engine's buffers start poisoned; one call repeats the one before it, and
    the last answer is the number of calls."""
    modes = [1, 0, 0, 1, 0, 2]  # host, device (twice), host after device, ..., none
    for name, graph in small_zoo(rng, 240).items():
        prep = Prepared.from_graph(graph, 8, rcm(graph) if ordered else None)
        n = graph.n
        new_of_old = np.asarray(prep.permutation.new_of_old)
        in_ptr, in_idx = np.asarray(prep.in_ptr, dtype=np.int64), np.asarray(prep.in_idx, np.int32)
        out_ptr, out_idx = out_csr(np, prep, in_ptr, in_idx)
        users = rng.choice(np.flatnonzero(graph.out_degree > 0), size=len(modes))
        users[2] = users[1]
        ctl_out = np.zeros(CTL_WORDS + SERVE_WORDS, dtype=np.uint32)  # no call posted yet
        ctl_out[:CTL_WORDS] = 99  # the host's copy of the control block, but ERROR
        ctl_out[CTL["error"]] = 0
        ctl_out[CTL_WORDS + SERVE["idle_us"]] = 1000
        arrays = {
            "heads": vertex_heads(np, out_ptr, np.asarray(out_idx, dtype=np.int32)),
            "out_ptr": np.asarray(out_ptr, dtype=np.int64),
            "out_idx": np.asarray(out_idx, dtype=np.int32),
            "old_of_new": None
            if not ordered
            else np.asarray(prep.permutation.old_of_new, np.int32),
            "queue": np.full(2 * n, POISON, dtype=np.int32),
            "ctl": np.zeros(CTL_WORDS, dtype=np.uint32),  # the host zeroes it before a launch
            "levels": np.full(n, POISON, dtype=np.int32),
            "user_levels": np.full(n, POISON, dtype=np.int32) if ordered else None,
            "level_clock": None,
            "ctl_out": ctl_out,
            "ctl_copy": np.full(CTL_WORDS, 99, dtype=np.uint32),
            "serve_seeds": new_of_old[users].astype(np.int32),  # the host posts internal ids
            "serve_out": np.full((len(modes), n), POISON, dtype=np.int32),
            "serve_ctl": np.full((len(modes), CTL_WORDS), 99, dtype=np.uint32),
            "serve_modes": np.asarray(modes, dtype=np.int32),
            "serve_next": None,
        }
        scalars = {"n": n, "n_words": (n + 31) // 32, "smem_queue": 3}
        out = run(server, arrays, scalars, 64, block_smem_bytes(n, 3))
        for k, src in enumerate(users):
            want = bfs_levels(graph, int(src))
            ctx = f"{name} rcm={ordered} call {k + 1} from {src} mode {modes[k]}"
            if modes[k] == 2:  # no destination: the engine's buffer in the user's ids
                got = out["user_levels"] if ordered else out["levels"]
                assert np.all(out["serve_out"][k] == POISON), ctx
            else:
                got = out["serve_out"][k]
            np.testing.assert_array_equal(got, want, err_msg=ctx)
            if ordered:  # the internal levels stay in the engine's buffer
                np.testing.assert_array_equal(
                    out["levels"][new_of_old], bfs_levels(graph, int(users[-1]))
                )
            ctl = out["serve_ctl"][k]
            assert ctl[CTL["error"]] == 0 and ctl[CTL["done"]] == 1, ctx
            assert ctl[CTL["visited"]] == np.count_nonzero(want >= 0), ctx
            assert np.int32(ctl[CTL["depth"]]) == want.max(), ctx
            assert ctl[CTL["levels_run"]] == want.max() + 1, ctx
        answer = out["ctl_out"][CTL_WORDS + SERVE["answer"] :][:2]
        assert list(answer) == [len(modes), 0], name
        assert out["ctl_out"][CTL["error"]] == 0, name


@pytest.mark.parametrize("ordered", [False, True], ids=["natural", "rcm"])
def test_the_engine_buffers_drive_the_kernel(program, rng, ordered):
    """The arrays the engine uploads (out-adjacency, permutation, state), passed in the order of
    its common arguments, give SciPy's levels where the engine reads them."""
    exe, blocks = program
    spec = VariantSpec.block(8, blocks)
    for name in ("directed", "deep"):
        graph = small_zoo(rng, 240)[name]
        prep = Prepared.from_graph(graph, 8, rcm(graph) if ordered else None)
        bufs = block_buffers(np, prep, spec, smem_queue=5, record_levels=True)
        assert (bufs.user_levels is None) == (not ordered)
        assert (bufs.in_csr is not None) == (not graph.directed)
        values = bufs.values
        names = [p.name for p in graph_params(spec) + state_params(spec)]
        assert set(values) == set(names)
        assert values["queue"].size == 2 * blocks * prep.n
        scalars = {k: int(values[k]) for k in ("n", "n_words", "smem_queue")}
        given = {k: v for k, v in values.items() if k not in scalars}
        given = {k: (None if isinstance(v, np.uint64) else v) for k, v in given.items()}
        seeds = np.sort(np.asarray(prep.permutation.new_of_old)[[0, graph.n // 2]])
        given["seeds"] = seeds.astype(np.int32)
        scalars.update(n_seeds=2, src=int(seeds[0]), depth_limit=-1)
        out = run(exe, given, scalars, 64, block_smem_bytes(prep.n, 5, blocks), blocks=blocks)
        delivered = out["user_levels"] if ordered else out["levels"]
        np.testing.assert_array_equal(delivered, bfs_levels(graph, [0, graph.n // 2]), name)


def test_block_plan_fits_the_bitmap_or_says_how_many_vertices_fit():
    limit = HOPPER_SMEM_OPTIN - SMEM_STATIC_RESERVE
    most = block_max_vertices(limit)
    assert 1_800_000 < most < 1_850_000
    for n in (1, 31, 32, 33, 1000, 114_599, most - 32 * BLOCK_SMEM_QUEUE, most):
        queue, nbytes = block_plan(n, limit)
        assert nbytes == block_smem_bytes(n, queue) <= limit
        assert 0 <= queue <= min(n, BLOCK_SMEM_QUEUE)
    assert block_plan(114_599, limit)[0] == BLOCK_SMEM_QUEUE
    assert block_plan(most, limit)[0] == 0  # only the bitmap: every entry in global memory
    assert block_plan(100, 4 * 4 + 8 * 9)[0] == 9  # what is left after the bitmap
    with pytest.raises(ArgumentError, match=f"{most:,} vertices here, and the graph has"):
        block_plan(most + 1, limit)


def test_cluster_needs_sm90():
    """A cluster on a GPU older than sm_90 is refused before anything is sized or allocated."""
    with pytest.raises(
        ArgumentError, match=r"cluster of 4 blocks needs .*sm_90.*this GPU is sm_80"
    ):
        block_plan(1000, 200_000, 4, "sm_80")
    assert block_plan(1000, 200_000, 4, "sm_90") == block_plan(1000, 200_000, 4)


def test_launch_shapes():
    from blest.codegen.render import kernel_names
    from blest.runtime.device_program import LaunchShape
    from blest.runtime.traversal import launch_shapes

    shapes = launch_shapes(SPEC, kernel_names(SPEC), 256, 1, 5000, 264)
    assert shapes["bfs"] == LaunchShape(1, 256, 5000, False)
    assert shapes["parents"] == shapes["deliver"] == LaunchShape(264, 256, 0, False)
    spec = VariantSpec()
    shapes = launch_shapes(spec, kernel_names(spec), 512, 132, 0, 0)
    assert shapes["bfs"] == LaunchShape(132, 512, 0, True)
    assert shapes["init"] == shapes["deliver"] == LaunchShape(132, 512, 0, False)


def test_cpu_engines_take_the_block_variant(rng):
    """Without a GPU the block variant still runs: SciPy's BFS, or the emulator of its levels."""
    from blest.runtime import make_engine

    graph = small_zoo(rng, 120)["directed"]
    prep = Prepared.from_graph(graph, 8, rcm(graph))
    seeds = [0, 5, 5]
    for device in ("cpu", "emulator"):
        with make_engine(prep, SPEC, device=device) as eng:
            np.testing.assert_array_equal(eng.bfs(seeds), bfs_levels(graph, seeds), device)
            assert eng.spec.name == "s8_block"


def test_vertex_records_hold_the_degree_and_the_first_heads(rng):
    from blest.runtime.ss_buffers import INLINE_HEADS

    graph = small_zoo(rng, 300)["power_law"]
    assert graph.out_degree.max() > INLINE_HEADS  # some heads come from the CSR
    records = vertex_heads(np, graph.out_ptr, graph.out_idx)
    assert records.shape == (graph.n, 1 + INLINE_HEADS) and records.dtype == np.int32
    for u in range(graph.n):
        heads = graph.out_idx[graph.out_ptr[u] : graph.out_ptr[u + 1]]
        k = min(heads.size, INLINE_HEADS)
        assert records[u, 0] == heads.size
        np.testing.assert_array_equal(records[u, 1 : 1 + k], heads[:k])
        assert (records[u, 1 + k :] == -1).all()
