"""A variant against text patches of its own rendered source, in one process: mean traversal
over the protocol sources and the per-level stage split (lazy variants) or level times (eager
ones) of one source, for each patch.

    python3 benchmarks/lab/probe_patches.py delaunay-20 s32_eager_vss_pers base,trace_vss

The patches (PATCHES) are timers and timing-only cuts that the other lab probes apply:
``trace_vss`` and ``trace_res`` stamp each level's stage start and its grid barrier's arrival
and release per block (probe_level_trace.py), ``warp_trace`` stamps every warp's first queue
entry at mid levels (probe_warp_trace.py), and ``fill_no_stores`` / ``fill_none`` cut the served
call's -1 pass (probe_call_floor.py --patch; the levels are then wrong). A patch whose text is
not in the source stops the run, and "a+b" applies patches a and b together (``--check N``: the
levels of N sources against SciPy). Each patched kernel's registers and local (spilled) bytes
are printed beside it. The patches match the templates' text: a template change can retire
one, which then stops the run with the text it missed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import dataclasses  # noqa: E402

from graphs import check_levels  # noqa: E402
from run import Bench, _by_name, time_variants  # noqa: E402

import blest.runtime.served as SERVED  # noqa: E402
import blest.runtime.traversal as TRAVERSAL  # noqa: E402
from blest.codegen.contract import claims_form  # noqa: E402
from blest.codegen.render import program as ORIGINAL  # noqa: E402

_FILL_STORE = "if (!((word >> lane) & 1u) && u < g.n) dst[u] = -1;"
_FILL_HEAD = "void fill_unvisited(const Graph& g, const State& st, int* dst) {"

# Per level and block, the global timer at stage 1's start (0), at the barrier's arrival (2)
# and at its release (3), in level_clock[n + 2 ...] (record_levels engines).
_TRACE_DECL = (
    "__shared__ u64* trace_buf;\n"
    "#define TRACE(k, slot, v) do { u64* t_ = trace_buf; long long i_ = ((long long)(k) * "
    "gridDim.x + blockIdx.x) * 8 + (slot); if (t_ != nullptr && i_ < trace_cap) t_[i_] = (v); "
    "} while (0)\n"
    "__shared__ long long trace_cap;\n"
    "struct Graph {"
)
_TRACE_COMMON = [
    ("struct Graph {", _TRACE_DECL),
    (
        "    int* const own_levels = st.levels;",
        "    if (threadIdx.x == 0) { trace_buf = st.level_clock ? st.level_clock + g.n + 2 : "
        "nullptr; trace_cap = g.n + 2; }\n    int* const own_levels = st.levels;",
    ),
]
_TRACE_SUM = [
    (
        "        add_release(counter, 1ull + ((u64)block_total << 32));\n"
        "        const u64 seen = barrier_wait(ctl, counter, sum_target(b), 32);",
        "        TRACE(b.met, 2, global_timer_ns());\n"
        "        add_release(counter, 1ull + ((u64)block_total << 32));\n"
        "        const u64 seen = barrier_wait(ctl, counter, sum_target(b), 32);\n"
        "        TRACE(b.met, 3, global_timer_ns());",
    ),
    (
        "    Level lv = make_level(g, st, L, wk);\n    const bool check_visited",
        "    if (threadIdx.x == 0) TRACE(L, 0, global_timer_ns());\n"
        "    Level lv = make_level(g, st, L, wk);\n    const bool check_visited",
    ),
]
_TRACE_GRID = [
    (
        "        add_release(count, 1ull);\n        barrier_wait(ctl, count, target, 64);",
        "        TRACE(target / gridDim.x - 1, 2, global_timer_ns());\n"
        "        add_release(count, 1ull);\n        barrier_wait(ctl, count, target, 64);\n"
        "        TRACE(target / gridDim.x - 1, 3, global_timer_ns());",
    ),
    (
        "    Level lv = make_level(g, st, L, wk);\n    const u32 qsize",
        "    if (threadIdx.x == 0) TRACE(L, 0, global_timer_ns());\n"
        "    Level lv = make_level(g, st, L, wk);\n    const u32 qsize",
    ),
]


# Every warp's first entry of levels [WARP_TRACE_LO, + WARP_TRACE_N), stamped by lane 0 in
# level_clock[n + 2 ...] (5 words a warp and level, probe_warp_trace.py): the stage's start (0),
# the first entry's VSS words and alpha in hand (1), its expansion done (2), the warp's last
# entry done (3), and its entries | claims << 8 (4).
_WARP_TRACE_LOOP = """    for (long long i = lv.wk.warp; i < (long long)qsize; i += lv.wk.n_warps) {
        // (first: this warp's first entry, loaded with the level's counters, if it was.)
        const int2 entry = i == lv.wk.warp && first.x >= 0 ? first : __ldcg(q + i);
        const int v = entry.x;
        const VssWords w = load_vss(g, v, lane, prefetch_rows);
        const u32 alpha = set_alpha(lv.f_cur, entry.y);
        expand_vss_as(by_level, g, st, lv, v, w, alpha, lane, prefetch_rows, check_visited);
    }"""
_WARP_TRACE_NEW = """    const long long tb_ =
        ((long long)(lv.L - WARP_TRACE_LO) * lv.wk.n_warps + lv.wk.warp) * 5;
    u64* const tp_ = st.level_clock && lv.L >= WARP_TRACE_LO &&
        lv.L < WARP_TRACE_LO + WARP_TRACE_N && tb_ + 5 <= g.n + 2
        ? st.level_clock + g.n + 2 + tb_ : nullptr;
    if (tp_ && lane == 0) tp_[0] = global_timer_ns();
    u32 n_ = 0u, claims_ = 0u;
    for (long long i = lv.wk.warp; i < (long long)qsize; i += lv.wk.n_warps) {
        const int2 entry = i == lv.wk.warp && first.x >= 0 ? first : __ldcg(q + i);
        const int v = entry.x;
        const VssWords w = load_vss(g, v, lane, prefetch_rows);
        const u32 alpha = set_alpha(lv.f_cur, entry.y);
        if (tp_ && n_ == 0u && lane == 0) {
            asm volatile("" :: "r"(alpha), "r"(w.mask), "r"(w.rows.r[0]));
            tp_[1] = global_timer_ns();
        }
        const u32 f0_ = lv.fresh;
        expand_vss_as(by_level, g, st, lv, v, w, alpha, lane, prefetch_rows, check_visited);
        claims_ += __reduce_add_sync(FULL_WARP, lv.fresh - f0_);
        if (tp_ && n_ == 0u && lane == 0) tp_[2] = global_timer_ns();
        ++n_;
    }
    __syncwarp();
    if (tp_ && lane == 0) {
        tp_[3] = global_timer_ns();
        tp_[4] = (u64)n_ | ((u64)claims_ << 8);
    }"""
_WARP_TRACE = [
    (_WARP_TRACE_LOOP, _WARP_TRACE_NEW),
    ("struct Graph {", "#define WARP_TRACE_LO 150\n#define WARP_TRACE_N 40\nstruct Graph {"),
]


PATCHES: dict[str, list[tuple[str, str]]] = {
    "base": [],
    "trace_vss": _TRACE_COMMON + _TRACE_GRID,
    "trace_res": _TRACE_COMMON + _TRACE_SUM,
    "warp_trace": _WARP_TRACE,
    # timing only (wrong levels): the served call's -1 pass without its stores, or gone
    "fill_no_stores": [(_FILL_STORE, "if (false) dst[u] = -1;")],
    "fill_none": [(_FILL_HEAD, _FILL_HEAD + "\n    return;")],
}


def resources(function) -> str:
    """Registers and local (spilled) bytes a thread of the loaded kernel uses."""
    import cupy as cp

    attr = cp.cuda.driver.funcGetAttribute
    regs, local = attr(4, function.ptr), attr(3, function.ptr)  # NUM_REGS, LOCAL_SIZE_BYTES
    return f"regs {regs}, local bytes {local}"


def patched(program, key: str):
    """``program`` (the single-source emitter) with patch ``key`` applied to its source: every
    part of it to the timed module, the parts whose text is there to the serving module."""

    def program_patched(spec, serving: bool = False, claims=None):
        prog = program(spec, serving=serving, claims=claims)
        text = prog.source
        for old, new in PATCHES[key]:
            if old not in text:
                if serving:
                    continue
                raise SystemExit(f"patch {key!r}: {old!r} is not in the source of {spec.name}")
            text = text.replace(old, new)
        return dataclasses.replace(prog, source=text)

    return program_patched


def install(key: str | None) -> None:
    """Patch ``key`` into every name the engines emit modules through (None: the original)."""
    program = ORIGINAL if key is None else patched(ORIGINAL, key)
    TRAVERSAL.program = SERVED.program = program


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("graphs")
    ap.add_argument("variants")
    ap.add_argument("patches", nargs="?", default=",".join(PATCHES))
    ap.add_argument("--geometry", default="1024:1:0", help="BLOCK:BLOCKS_PER_SM:SMALL_QUEUE")
    ap.add_argument("--eta", type=float, default=10.0)
    ap.add_argument("--ordering", default=None, help="natural, rcm or jaccard (default: the C++'s)")
    ap.add_argument("--check", type=int, default=0, help="levels of this many sources vs SciPy")
    args = ap.parse_args()
    geometry = tuple(int(x) for x in args.geometry.split(":"))
    specs = [_by_name(n) for n in args.variants.split(",")]
    for name in args.graphs.split(","):
        b = Bench.load(name, 64, args.ordering)
        for key in args.patches.split(","):
            if "+" in key:  # patches applied together
                PATCHES[key] = [part for k in key.split("+") for part in PATCHES[k]]
            # The engine binds ``program`` at import: its names are patched.
            install(key)
            reordered = b.permutation is not None and not b.permutation.is_identity
            claims = claims_form(specs[0], reordered)
            text = TRAVERSAL.program(specs[0], claims=claims).source
            if PATCHES[key] and PATCHES[key][0][1] not in text:
                raise SystemExit(f"patch {key!r} did not reach the engine's source")
            print(f"-- {key}", flush=True)
            for row in time_variants(b, specs, args.eta, [geometry]):
                print(
                    f"   {row['variant']}: traversal {1e3 * row['traversal_ms']:.2f} us,"
                    f" whole {1e3 * row['whole_call_ms']:.2f} us",
                    flush=True,
                )
            with b.engine(specs[0], args.eta, geometry, record_levels=True) as eng:
                print("   " + resources(eng._tr.program.kernels["bfs"].function))
                for src in b.sources[: args.check]:
                    check_levels(b.graph, int(src), eng.bfs(int(src)), f"{key} {name}")
                eng.bfs(int(b.sources[0]))
                eng.bfs(int(b.sources[0]))
                stages = eng.probes.stage_times_ms()
                levels_ms, _ = eng.probes.level_times_ms()
            if stages is not None:  # lazy variants
                split = " | ".join(f"{a:.1f}/{c:.1f}" for a, c in stages * 1e3)
                print("   stages us:", split, flush=True)
            else:
                print("   levels us:", " ".join(f"{1e3 * t:.1f}" for t in levels_ms), flush=True)
        install(None)


if __name__ == "__main__":
    main()
