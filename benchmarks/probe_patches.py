"""A variant against text patches of its own rendered source, in one process: mean traversal
over the protocol sources and the per-level stage split (lazy variants) or level times (eager
ones) of one source, for each patch.

    python3 benchmarks/probe_patches.py urand-20,kron-21 s8_lazy_csr_switch_pers base,nofilter

The patches (PATCHES) are experiments on the CUDA-core top-down of expand="csr", on the
bottom-up step (``bu_*``), on the grid barrier (``barrier_*``), on the deliver pass
(``deliver*``, and the served call's -1 pass: ``fill_*``, which probe_call_floor.py --patch
applies), on the vss queue (``vss_ahead``, ``vss_pairs``, ``push_*``), on the eager claims
(``claim_*``), on the resident queue (its visited filter ``res_*``; ``owned``: frontier words
owned by blocks) and timers for probe_level_trace.py (``trace_*``, ``vss_chain``); a patch whose
text is not in the source stops the run, and "a+b" applies patches a and b together
(``--check N``: the levels of N sources against SciPy). Each patched kernel's registers and
local (spilled) bytes are printed beside it. probe_patches_cpu.py runs a patch on the CPU.
"""

from __future__ import annotations

import argparse
import sys

from graphs import check_levels
from run import Bench, _by_name, time_variants

import blest.codegen.render  # noqa: F401  (the module, not the function it exports)
import blest.runtime.engine as ENGINE
import blest.runtime.engine_serve as ENGINE_SERVE
from blest.codegen.contract import claims_form

RENDER = sys.modules["blest.codegen.render"]
ORIGINAL = RENDER.render

_RES_CHECK = "const bool check_visited = 32ull * top.fresh >= (unsigned long long)(u32)g.n;"
_BU_PROBE = "f_word[j][k] = u[j][k] >= 0 ? lv.f_cur[u[j][k] >> 5] : 0u;"  # (since session 22)
_BU_PROBE_L2 = "f_word[j][k] = u[j][k] >= 0 ? __ldcg(lv.f_cur + (u[j][k] >> 5)) : 0u;"
_BU_ARC = "__ldg(g.in_idx + e[j] + k)"
_PUSH = "    const u32 at = atomicAdd(qsize, (u32)count);"
_POLL = "if (++polls % BARRIER_WATCH_EVERY != 0u) continue;"
_FILL_STORE = "if (!((word >> lane) & 1u) && u < g.n) dst[u] = -1;"
_FILL_HEAD = "void fill_unvisited(const Graph& g, const State& st, int* dst) {"
_TD_SEEN = "seen[k] = __ldcg(st.visited + (head[k] >> 5));"
_BLOCK_CALL = "block_traversal(g, st, st.levels, st.user_levels, seeds, n_seeds, src, depth_limit);"


def _launder(names: str) -> str:
    """The block kernel's call with ``names`` (of g2, st2, lv, ul) laundered by an empty asm."""
    regs = ", ".join(f'"+l"({x})' for x in names.split())
    return (
        "Graph g2 = g; State st2 = st; int* lv = st.levels; int* ul = st.user_levels;\n"
        f'    asm volatile("" : {regs});\n'
        "    block_traversal(g2, st2, lv, ul, seeds, n_seeds, src, depth_limit);"
    )


_BLOCK_KERNEL_HEAD = 'extern "C" __global__ void __launch_bounds__(1024) blest_bfs_block('
_BLOCK_ONCE = (
    "__device__ __noinline__ unsigned block_once(const State& st, unsigned last) "
    "{ return last == 0u ? 1u : 0u; }\n"
)
_BLOCK_LOOP = """__shared__ unsigned s_go;
    for (unsigned last = 0u;;) {{
        if (threadIdx.x == 0) s_go = block_once(st, last);
        __syncthreads();
        const unsigned go = s_go;
        if (go == 0u) return;
        __syncthreads();
        {call}
        __syncthreads();
        last = go;
    }}"""


_INLINE_LOOP = """#pragma unroll
    for (int k = 0; k < INLINE_HEADS; ++k) {
        if (k >= steps) break;  // warp-uniform
        claim(vis, sq, gq, in_smem, tail, k < count ? inline_heads[k] : -1);"""
_INLINE_ROLLED = """#pragma unroll 1
    for (int k = 0; k < INLINE_HEADS; ++k) {
        if (k >= steps) break;  // warp-uniform
        const int h = k == 0 ? r0.y : k == 1 ? r0.z : k == 2 ? r0.w : k == 3 ? r1.x
                    : k == 4 ? r1.y : k == 5 ? r1.z : r1.w;
        claim(vis, sq, gq, in_smem, tail, k < count ? h : -1);"""
_CSR_CLAIMS = """#pragma unroll
        for (int k = 0; k < UNROLL; ++k) claim(vis, sq, gq, in_smem, tail, head[k]);"""
_CSR_ROLLED = """#pragma unroll 1
        for (int k = 0; k < UNROLL; ++k)
            claim(vis, sq, gq, in_smem, tail,
                  k == 0 ? head[0] : k == 1 ? head[1] : k == 2 ? head[2] : head[3]);"""


_RES_BODY = """    const int lane = lane_id();
    u32 alpha[RESIDENT];"""
# session 29: the resident queue's level over frontier words that each block owns (chunks of 32
# words b, b + G, ...): the block loads its words together, gathers the slice sets with frontier
# bits in shared memory, and its warps expand their VSSs (no queue, no |Q|, no registers kept)
_OWNED = (
    """    {
    // 8-word groups of F: group q -> block q % G; the block's j-th word is word
    // ((j / 8) * G + b) * 8 + j % 8. Per round of blockDim words, thread t loads word j and
    // writes one entry per VSS of each set with frontier bits; the warps then take the entries.
    __shared__ int own_vss[OWN_CAP];
    __shared__ u32 own_alpha[OWN_CAP];
    __shared__ int own_count[2];
    const int lane = lane_id();
    const int warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
    const long long n_groups = ((long long)g.n_words + 7) >> 3;
    const long long my_words = ((n_groups - blockIdx.x + gridDim.x - 1) / gridDim.x) * 8;
    const int rounds = (int)((my_words + blockDim.x - 1) / blockDim.x);
    // Warp-collective: expand VSS v with alpha a, its claims by level or through visited.
    auto expand_one = [&](int v, u32 a) {
        const LaneRows rows[1] = {lane_rows(g.row_ids, v, lane)};
        u32 one[1] = {slot_hits(__ldg(g.masks + (long long)v * 32 + lane), a, lane)};
        if (claims_by_level(g))
            claim_rows<1, true>(st, lv, rows, one, check_visited);
        else
            claim_rows<1, false>(st, lv, rows, one, check_visited);
    };
    if (lv.L == 0) {
        if (threadIdx.x == 0) own_count[0] = own_count[1] = 0;
        __syncthreads();
    }
    for (int r = 0; r < rounds; ++r) {
        const int p = (int)(((long long)lv.L * rounds + r) & 1);
        const long long j = (long long)r * blockDim.x + threadIdx.x;
        u32 word = 0u;
        long long w = 0;
        if (j < my_words) {
            w = ((j >> 3) * gridDim.x + blockIdx.x) * 8 + (j & 7);
            if (w < g.n_words) word = __ldcg(lv.f_cur + w);
        }
        int first[32 / SIGMA], cnt[32 / SIGMA];
        int total = 0;
#pragma unroll
        for (int k = 0; k < 32 / SIGMA; ++k) {
            first[k] = cnt[k] = 0;
            if ((word >> (k * SIGMA)) & SLICE_MASK) {
                const int s = (int)(w * (32 / SIGMA) + k);
                first[k] = __ldg(g.real_ptrs + s);
                cnt[k] = __ldg(g.real_ptrs + s + 1) - first[k];
                total += cnt[k];
            }
        }
        bool overflow = false;
        if (__ballot_sync(FULL_WARP, total != 0)) {
            const int inclusive = warp_inclusive_sum(total);
            const int warp_total = __shfl_sync(FULL_WARP, inclusive, 31);
            int at = 0;
            if (lane == 31) at = atomicAdd(&own_count[p], warp_total);
            at = __shfl_sync(FULL_WARP, at, 31) + inclusive - total;
#pragma unroll
            for (int k = 0; k < 32 / SIGMA; ++k) {
                const u32 a = (word >> (k * SIGMA)) & SLICE_MASK;
                for (int v = first[k]; v < first[k] + cnt[k]; ++v, ++at) {
                    if (at < OWN_CAP) {
                        own_vss[at] = v;
                        own_alpha[at] = a;
                    } else {  // no room: this lane's warp expands it now
                        overflow = true;
                    }
                }
            }
        }
        // Entries beyond the shared list (wide levels): each lane's own, expanded by its warp.
        u32 spill = __ballot_sync(FULL_WARP, overflow);
        while (spill) {
            const int l = __ffs(spill) - 1;
            spill &= spill - 1;
            const u32 wl = __shfl_sync(FULL_WARP, word, l);
            const long long wwl = __shfl_sync(FULL_WARP, w, l);
#pragma unroll
            for (int k = 0; k < 32 / SIGMA; ++k) {
                const u32 a = (wl >> (k * SIGMA)) & SLICE_MASK;
                if (!a) continue;
                const int s = (int)(wwl * (32 / SIGMA) + k);
                const int f0 = __ldg(g.real_ptrs + s), f1 = __ldg(g.real_ptrs + s + 1);
                for (int v = f0; v < f1; ++v) expand_one(v, a);
            }
        }
        __syncthreads();
        int count = own_count[p];
        count = count < OWN_CAP ? count : OWN_CAP;
        for (int e = warp; e < count; e += n_warps) {
            expand_one(own_vss[e], own_alpha[e]);
        }
        if (threadIdx.x == 0) own_count[p ^ 1] = 0;
        if (r + 1 < rounds) __syncthreads();
    }
    return;
    }
"""
    + _RES_BODY
)

# session 29: per level and block, the global timer at stage 1's start (0), after the owned
# queue's gathering (1), at the barrier's arrival (2) and its release (3), and (4) the owned
# queue's entries; in level_clock[n + 2 ...] (record_levels engines; .probe/trace_levels.py)
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
_OWNED_T1 = [
    (
        "        __syncthreads();\n        int count = own_count[p];\n",
        "        if (threadIdx.x == 0 && r == 0) TRACE(lv.L, 5, global_timer_ns());\n"
        "        __syncthreads();\n        int count = own_count[p];\n"
        "        if (threadIdx.x == 0 && r == 0) { TRACE(lv.L, 1, global_timer_ns()); "
        "TRACE(lv.L, 4, count); }\n",
    ),
    (
        "        int first[32 / SIGMA], cnt[32 / SIGMA];\n",
        "        if (threadIdx.x == 0 && r == 0) {\n"
        '            asm volatile("" :: "r"(word));\n'
        "            TRACE(lv.L, 6, global_timer_ns());\n        }\n"
        "        int first[32 / SIGMA], cnt[32 / SIGMA];\n",
    ),
    (
        "        bool overflow = false;\n",
        "        if (threadIdx.x == 0 && r == 0) {\n"
        '            asm volatile("" :: "r"(total));\n'
        "            TRACE(lv.L, 7, global_timer_ns());\n        }\n"
        "        bool overflow = false;\n",
    ),
]


# session 29: the vss queue's entries two at a time per warp (i and i + W together: loads, MMAs
# and each phase of the claims in flight together), sigma 32 only (one row a lane and VSS)
_VSS_LOOP = """    for (long long i = lv.wk.warp; i < (long long)qsize; i += lv.wk.n_warps) {
        const int2 entry = __ldcg(q + i);
        const int v = entry.x;
        const VssWords w = load_vss(g, v, lane, prefetch_rows);
        const u32 alpha = set_alpha(lv.f_cur, entry.y);
        expand_vss(g, st, lv, v, w, alpha, lane, prefetch_rows, check_visited);
    }"""
_VSS_PAIRS = """    const long long W_ = lv.wk.n_warps;
    for (long long i = lv.wk.warp; i < (long long)qsize; i += 2 * W_) {
        const bool two = i + W_ < (long long)qsize;  // warp-uniform
        const int2 e0 = __ldcg(q + i);
        const int2 e1 = two ? __ldcg(q + i + W_) : e0;
        const VssWords w0 = load_vss(g, e0.x, lane, true);
        const VssWords w1 = load_vss(g, e1.x, lane, true);
        const u32 a0 = set_alpha(lv.f_cur, e0.y);
        const u32 a1 = two ? set_alpha(lv.f_cur, e1.y) : 0u;
        const u32 h0 = slot_hits(w0.mask, a0, lane);
        const u32 h1 = slot_hits(w1.mask, a1, lane);
        int r0 = h0 ? w0.rows.r[0] : -1, r1 = h1 ? w1.rows.r[0] : -1;
        if (check_visited) {
            const u32 s0 = r0 >= 0 ? __ldcg(st.visited + (r0 >> 5)) : 0u;
            const u32 s1 = r1 >= 0 ? __ldcg(st.visited + (r1 >> 5)) : 0u;
            if (r0 >= 0 && ((s0 >> (r0 & 31)) & 1u)) r0 = -1;
            if (r1 >= 0 && ((s1 >> (r1 & 31)) & 1u)) r1 = -1;
        }
        const u32 bit0 = 1u << (r0 & 31), bit1 = 1u << (r1 & 31);
        SetRange g0{0, 0}, g1{0, 0};
        if (r0 >= 0) g0 = set_range(g, r0 / SIGMA);
        if (r1 >= 0) g1 = set_range(g, r1 / SIGMA);
        const u32 v0 = r0 >= 0 ? atomicOr(st.visited + (r0 >> 5), bit0) : bit0;
        const u32 v1 = r1 >= 0 ? atomicOr(st.visited + (r1 >> 5), bit1) : bit1;
        u32 f0 = 1u, f1 = 1u;
        if (!(v0 & bit0)) {
            st.levels[r0] = lv.L + 1;
            lv.fresh += 1;
            f0 = atomicOr(lv.f_next + (r0 >> 5), bit0);
        }
        if (!(v1 & bit1)) {
            st.levels[r1] = lv.L + 1;
            lv.fresh += 1;
            f1 = atomicOr(lv.f_next + (r1 >> 5), bit1);
        }
        if (f0 == 0u) queue_push_set(lv.q_next, lv.qsize_next, r0 / SIGMA, g0);
        if (f1 == 0u) queue_push_set(lv.q_next, lv.qsize_next, r1 / SIGMA, g1);
    }"""


# session 29 (with trace_vss): warp 0's first entry, stamped after the entry (1), the VSS's
# words and alpha (4), its expansion (5), and after the warp's last entry (7)
_VSS_CHAIN = """    bool first_ = true;
    for (long long i = lv.wk.warp; i < (long long)qsize; i += lv.wk.n_warps) {
        const bool tr_ = first_ && threadIdx.x == 0;
        const int2 entry = __ldcg(q + i);
        if (tr_) { asm volatile("" :: "r"(entry.x)); TRACE(lv.L, 1, global_timer_ns()); }
        const int v = entry.x;
        const VssWords w = load_vss(g, v, lane, prefetch_rows);
        const u32 alpha = set_alpha(lv.f_cur, entry.y);
        if (tr_) { asm volatile("" :: "r"(alpha), "r"(w.mask)); TRACE(lv.L, 4, global_timer_ns()); }
        expand_vss(g, st, lv, v, w, alpha, lane, prefetch_rows, check_visited);
        __syncwarp();
        if (tr_) TRACE(lv.L, 5, global_timer_ns());
        first_ = false;
    }
    __syncwarp();
    if (threadIdx.x == 0) TRACE(lv.L, 7, global_timer_ns());"""


# session 29: claims by compare-and-swap on the level (-1 -> L + 1) instead of atomicOr on the
# visited bitmap: a level's claims spread over 32x more L2 lines (reordered graphs only: their
# levels start at -1; graphs in their own ids get their -1s after the traversal). Patches of
# the template before claim_cas_nv's form became its own (topdown_eager.cu.j2): they no longer
# apply; claim_or puts the old claims back.
_CLAIM_OR = """    if (atomicOr(st.visited + w, bit) & bit) return;
    st.levels[r] = lv.L + 1;"""
_CLAIM_CAS = """    if (atomicCAS(st.levels + r, -1, lv.L + 1) != -1) return;
    atomicOr(st.visited + w, bit);"""
_CLAIM_CAS_NV = """    if (atomicCAS(st.levels + r, -1, lv.L + 1) != -1) return;"""
_FILTER_VIS = "    if (check_visited && (__ldcg(st.visited + w) & bit)) return;"
_FILTER_LEV = "    if (check_visited && __ldcg(st.levels + r) != -1) return;"

_CLAIM_BY_LEVEL = """    if (by_level) {
        if (atomicCAS(st.levels + r, -1, lv.L + 1) != -1) return;
    } else {"""
_CLAIM_TOGETHER = """    if (by_level) {{
        const int old = atomicCAS(st.levels + r, -1, lv.L + 1);
        const u32 before = atomicOr(lv.f_next + w, bit);
{undo}        if (old == -1) lv.fresh += 1;
        if (before == 0u) queue_push_set(lv.q_next, lv.qsize_next, s, range);
        return;
    }} else {{"""

# session 29: the push decided by atomicMax on a per-slice-set tag, 128 bytes apart (one L2 line
# a set), instead of the F_{L+1} atomic's return; F_{L+1} is then OR-ed without a return. The
# tag is the launch's epoch * 4096 + L + 1, so no clearing between calls (probe: sigma 32,
# n_sets <= 32,768, depth < 4,096)
_PUSH_OR = """    const u32 before = atomicOr(lv.f_next + w, bit);
    if (before == 0u)
        queue_push_set(lv.q_next, lv.qsize_next, s, range);"""
_PUSH_TAG = """    atomicOr(lv.f_next + w, bit);
    const unsigned tag = push_e + (unsigned)lv.L + 1u;
    if (s < 32768 && atomicMax(push_tag + (long long)s * 32, tag) < tag)
        queue_push_set(lv.q_next, lv.qsize_next, s, range);"""
_PUSH_TAG_PARTS = [
    (
        "struct Graph {",
        "__device__ unsigned push_tag[32768 * 32];\n__device__ unsigned push_epoch;\n"
        "__shared__ unsigned push_e;\nstruct Graph {",
    ),
    (
        "    int* const own_levels = st.levels;",
        "    if (threadIdx.x == 0) push_e = (push_epoch + 1u) * 4096u;\n"
        "    int* const own_levels = st.levels;",
    ),
    (
        "        if (!fused) return;",
        "        if (blockIdx.x == 0 && threadIdx.x == 0) push_epoch += 1u;\n"
        "        if (!fused) return;",
    ),
    (_PUSH_OR, _PUSH_TAG),
]


# session 32: the grid barrier's wait with K relaxed polls of the count in flight (a pass waits
# for the oldest and issues the next, so the last arrival is seen ~(K - 1) / 2K round trips
# sooner) and one acquire fence after the poll that sees the target (bar_poll*); bar_ret4 also
# arrives with a returning add, so that the last block to arrive does not poll at all.
_WAIT_LOOP = """    for (;;) {
        const u64 seen = load_acquire(count);
        if ((seen & low) >= target) return seen;
        if (++polls % BARRIER_WATCH_EVERY != 0u) continue;"""
_WAIT_PIPE = """    u64 v[POLLS];
#pragma unroll
    for (int k = 0; k < POLLS; ++k) v[k] = load_relaxed(count);
    for (;;) {
#pragma unroll
        for (int k = 0; k < POLLS; ++k) {
            if ((v[k] & low) >= target) {
                asm volatile("fence.acquire.gpu;" ::: "memory");
                return v[k];
            }
            v[k] = load_relaxed(count);
        }
        polls += POLLS;
        if (polls % BARRIER_WATCH_EVERY != 0u) continue;"""
_LOAD_RELAXED = """__device__ __forceinline__ u64 load_relaxed(const u64* p) {
    u64 v;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

// Thread 0 of a block: wait until"""
_ARRIVE = """        add_release(count, 1ull);
        barrier_wait(ctl, count, target, 64);"""
_ARRIVE_RET = """        u64 seen;
        asm volatile("atom.release.gpu.global.add.u64 %0, [%1], 1;"
                     : "=l"(seen) : "l"(count) : "memory");
        if (seen + 1ull < target) barrier_wait(ctl, count, target, 64);"""


def _bar_poll(k: int) -> list[tuple[str, str]]:
    return [
        ("// Thread 0 of a block: wait until", f"#define POLLS {k}\n" + _LOAD_RELAXED),
        (_WAIT_LOOP, _WAIT_PIPE),
    ]


# The level's grid barrier without its leading __syncthreads (bar_after_sum*).
PATCHES_BAR_DEF = (
    "__device__ __forceinline__ void grid_barrier(u32* ctl, u64& target) {",
    "__device__ __forceinline__ void grid_barrier_after_sum(u32* ctl, u64& target) {\n"
    "    target += gridDim.x;\n"
    "    if (threadIdx.x == 0) {\n"
    "        u64* count = reinterpret_cast<u64*>(ctl + CTL_BARRIER_COUNT);\n"
    "        add_release(count, 1ull);\n"
    "        barrier_wait(ctl, count, target, 64);\n"
    "    }\n"
    "    __syncthreads();\n"
    "}\n\n"
    "__device__ __forceinline__ void grid_barrier(u32* ctl, u64& target) {",
)


# session 31: the VSS's words (masks, row ids; sigma 32) loaded with an L2 evict_last policy, so
# that the graph's 32 MB (delaunay-20) outlive the levels, queues and outputs in L2 from one
# traversal to the next: does a level's slowest chain wait for DRAM?
_LDG_LAST = """__device__ __forceinline__ u32 ldg_last(const void* p) {
    u32 v;
    asm("{\\n\\t.reg .b64 pol;\\n\\tcreatepolicy.fractional.L2::evict_last.b64 pol, 1.0;\\n\\t"
        "ld.global.nc.L2::cache_hint.b32 %0, [%1], pol;\\n\\t}" : "=r"(v) : "l"(p));
    return v;
}

"""
_VSS_LAST = [
    ("struct LaneRows {", _LDG_LAST + "struct LaneRows {"),
    (
        "    w.mask = __ldg(g.masks + (long long)v * 32 + lane);",
        "    w.mask = ldg_last(g.masks + (long long)v * 32 + lane);",
    ),
    ("    out.r[0] = __ldg(p);", "    out.r[0] = (int)ldg_last(p);"),
]


# session 31: read_level_top_entry without its second block barrier: every warp loads the
# counters itself (plain loads, which the acquire's L1 invalidation keeps fresh after the block
# barrier; one L1 miss a block). Timing probe: the visited count may differ between warps.
_TOP_L1 = [
    (
        """    __shared__ LevelTop shared_top;
    LevelTop t;
    if (threadIdx.x == 0) t = load_level_top(st, L);
    __syncthreads();  // thread 0 has passed the grid barrier
    const int2* q = st.queue + (long long)(L % QUEUE_BUFFERS) * g.n_vss;
    first = warp < (long long)g.n_vss ? __ldcg(q + warp) : make_int2(-1, -1);
    if (threadIdx.x == 0) shared_top = t;
    __syncthreads();
    return shared_top;""",
        """    __syncthreads();  // thread 0 has passed the grid barrier
    const int2* q = st.queue + (long long)(L % QUEUE_BUFFERS) * g.n_vss;
    first = warp < (long long)g.n_vss ? __ldcg(q + warp) : make_int2(-1, -1);
    LevelTop t;
    t.error = st.ctl[CTL_ERROR];
    t.done = st.ctl[CTL_DONE];
    t.fresh = st.ctl[CTL_NEW + L % QUEUE_BUFFERS];
    t.qsize = st.ctl[CTL_QSIZE + L % QUEUE_BUFFERS];
    t.visited = st.ctl[CTL_VISITED];
    return t;""",
    )
]


# session 31: pushes without the global atomic (timing probe, eager vss at small_queue 0, one
# seed). Block b's k-th pushed entry of a level (k < warps a block) goes to Q_{L+1}[k * blocks
# + b], the slot that warp k * blocks + b reads at the top of level L + 1 (read_level_top_entry
# loads it); a shared counter hands out the block's slots, so a push waits for a shared atomic,
# not an L2 one. A block's entries past its slots go to the buffer's end through |Q_{L+1}| as
# before. A slot holds {-1, -1} when empty: its reader puts that back, and init fills the slots.
_CHUNK_PUSH = """__shared__ u32 chunk_used;  // this block's slots of Q_{L+1} handed out so far

__device__ __forceinline__ void queue_push_set(
    int2* __restrict__ q, u32* qsize, int s, SetRange range, long long n_vss) {
    const int count = range.last - range.first;
    if (count == 0) return;
    const u32 slots = blockDim.x >> 5;
    const u32 k0 = atomicAdd(&chunk_used, (u32)count);
    int k = 0;
    for (; k < count && k0 + (u32)k < slots; ++k)
        q[(long long)(k0 + k) * gridDim.x + blockIdx.x] = make_int2(range.first + k, s);
    if (k < count) {
        const u32 rest = (u32)(count - k);
        const u32 at = atomicAdd(qsize, rest);
        for (u32 j = 0; j < rest; ++j)
            q[n_vss - 1 - (long long)(at + j)] = make_int2(range.first + k + (int)j, s);
    }
}"""
_CHUNK_OLD_PUSH = """__device__ __forceinline__ void queue_push_set(
    int2* __restrict__ q, u32* qsize, int s, SetRange range) {
    const int count = range.last - range.first;
    if (count == 0) return;
    const u32 at = atomicAdd(qsize, (u32)count);
    for (int k = 0; k < count; ++k) q[at + k] = make_int2(range.first + k, s);
}"""
_CHUNK_LOOP = """    for (long long i = lv.wk.warp; i < (long long)qsize; i += lv.wk.n_warps) {
        // (first: this warp's first entry, loaded with the level's counters, if it was.)
        const int2 entry = i == lv.wk.warp && first.x >= 0 ? first : __ldcg(q + i);
        const int v = entry.x;"""
_CHUNK_NEW_LOOP = """    if (first.x >= 0) {  // this warp's slot
        if (lane == 0) const_cast<int2*>(q)[lv.wk.warp] = make_int2(-1, -1);
        const VssWords w = load_vss(g, first.x, lane, prefetch_rows);
        const u32 alpha = set_alpha(lv.f_cur, first.y);
        expand_vss_as(by_level, g, st, lv, first.x, w, alpha, lane, prefetch_rows, check_visited);
    }
    for (long long i = lv.wk.warp; i < (long long)qsize; i += lv.wk.n_warps) {
        const int2 entry = __ldcg(q + (g.n_vss - 1 - i));
        const int v = entry.x;"""
_CHUNK_PUSH_PARTS = [
    (_CHUNK_OLD_PUSH, _CHUNK_PUSH),
    (
        "queue_push_set(lv.q_next, lv.qsize_next, s, range);",
        "queue_push_set(lv.q_next, lv.qsize_next, s, range, g.n_vss);",
    ),
    (_CHUNK_LOOP, _CHUNK_NEW_LOOP),
    (
        "    LevelTop t;\n    if (threadIdx.x == 0) t = load_level_top(st, L);\n",
        "    LevelTop t;\n    if (threadIdx.x == 0) {\n        t = load_level_top(st, L);\n"
        "        chunk_used = 0u;\n    }\n",
    ),
    (
        "            if (top.qsize <= small_queue && !go_bottom_up) {",
        "            if (false) {",
    ),
    (  # Q_0 at the buffer's end, read through |Q_0| (its slots all empty)
        "st.queue[at + (u32)(v - r.first)] = make_int2(v, s);",
        "st.queue[g.n_vss - 1 - (long long)(at + (u32)(v - r.first))] = make_int2(v, s);",
    ),
    (
        "    if (blockIdx.x == 0 && threadIdx.x < 32) "
        "init_queue(g, st, seeds, src, n_seeds, fused);",
        "    for (long long i = tid; i < (QUEUE_BUFFERS - 1) * 8192LL; i += stride) {\n"
        "        const long long b = 1 + i / 8192, j = i % 8192;\n"
        "        if (j < g.n_vss) st.queue[b * g.n_vss + j] = make_int2(-1, -1);\n"
        "    }\n"
        "    if (blockIdx.x == 0 && threadIdx.x < 32) {\n"
        "        for (long long j = threadIdx.x; j < 8192 && j < g.n_vss; j += 32)\n"
        "            st.queue[j] = make_int2(-1, -1);\n"
        "        __syncwarp();\n"
        "        init_queue(g, st, seeds, src, n_seeds, fused);\n"
        "    }",
    ),
]


# session 31: every warp's first entry of levels [WARP_TRACE_LO, + WARP_TRACE_N), stamped by
# lane 0 in level_clock[n + 2 ...] (5 words a warp and level, probe_warp_trace.py): the stage's
# start (0), the first entry's VSS words and alpha in hand (1), its expansion done (2), the
# warp's last entry done (3), and its entries | claims << 8 (4)
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


# session 31: where a warp has two entries of a level (|Q_L| > warps: the mid levels of
# delaunay-20, probe_warp_trace.py), it expands them together (sigma 32, claims by level):
# both VSSs' loads, both MMAs, then both rows' CAS, both F_{L+1} ORs and both pushes in
# flight together, instead of one entry's chain after the other's. Session 29's vss_pairs
# paired every warp (its single entries too) and claimed on visited.
_PAIR2_FN = """// Two entries of one warp together (sigma 32: a row a lane and VSS; by level).
__device__ __forceinline__ void expand_two(const Graph& g, const State& st, Level& lv, int2 e1,
    int2 e2, int lane, bool check_visited) {
    const VssWords w1 = load_vss(g, e1.x, lane, true);
    const VssWords w2 = load_vss(g, e2.x, lane, true);
    const u32 a1 = set_alpha(lv.f_cur, e1.y);
    const u32 a2 = set_alpha(lv.f_cur, e2.y);
    const int r1 = slot_hits(w1.mask, a1, lane) ? w1.rows.r[0] : -1;
    const int r2 = slot_hits(w2.mask, a2, lane) ? w2.rows.r[0] : -1;
    bool c1 = r1 >= 0 && !(check_visited && __ldcg(st.levels + r1) >= 0);
    bool c2 = r2 >= 0 && !(check_visited && __ldcg(st.levels + r2) >= 0);
    SetRange g1{0, 0}, g2{0, 0};
    if (c1) g1 = set_range(g, r1 / SIGMA);
    if (c2) g2 = set_range(g, r2 / SIGMA);
    const int o1 = c1 ? atomicCAS(st.levels + r1, -1, lv.L + 1) : 0;
    const int o2 = c2 ? atomicCAS(st.levels + r2, -1, lv.L + 1) : 0;
    c1 = c1 && o1 == -1;
    c2 = c2 && o2 == -1;
    const u32 f1 = c1 ? atomicOr(lv.f_next + (r1 >> 5), 1u << (r1 & 31)) : 1u;
    const u32 f2 = c2 ? atomicOr(lv.f_next + (r2 >> 5), 1u << (r2 & 31)) : 1u;
    lv.fresh += (u32)c1 + (u32)c2;
    if (f1 == 0u) queue_push_set(lv.q_next, lv.qsize_next, r1 / SIGMA, g1);
    if (f2 == 0u) queue_push_set(lv.q_next, lv.qsize_next, r2 / SIGMA, g2);
}

__device__ __forceinline__ void topdown(const Graph& g, const State& st, Level& lv, u32 qsize,"""
_PAIR2_LOOP = """    for (long long i = lv.wk.warp; i < (long long)qsize; i += lv.wk.n_warps) {
        // (first: this warp's first entry, loaded with the level's counters, if it was.)
        const int2 entry = i == lv.wk.warp && first.x >= 0 ? first : __ldcg(q + i);
        const int v = entry.x;"""
_PAIR2_NEW = """    for (long long i = lv.wk.warp; i < (long long)qsize; i += lv.wk.n_warps) {
        // (first: this warp's first entry, loaded with the level's counters, if it was.)
        const int2 entry = i == lv.wk.warp && first.x >= 0 ? first : __ldcg(q + i);
        if (by_level && i + lv.wk.n_warps < (long long)qsize) {  // warp-uniform
            expand_two(g, st, lv, entry, __ldcg(q + i + lv.wk.n_warps), lane, check_visited);
            i += lv.wk.n_warps;
            continue;
        }
        const int v = entry.x;"""
_PAIR2 = [
    (
        "__device__ __forceinline__ void topdown(const Graph& g, const State& st, Level& lv, "
        "u32 qsize,",
        _PAIR2_FN,
    ),  # fmt: skip
    (_PAIR2_LOOP, _PAIR2_NEW),
]


# pair3: pair2 leaner (it spilled 28 bytes): pairs only where no visited filter runs, and the
# sets' VSS ranges load after the claims, beside the F_{L+1} ORs
_PAIR3_FN = _PAIR2_FN.replace(
    """    bool c1 = r1 >= 0 && !(check_visited && __ldcg(st.levels + r1) >= 0);
    bool c2 = r2 >= 0 && !(check_visited && __ldcg(st.levels + r2) >= 0);
    SetRange g1{0, 0}, g2{0, 0};
    if (c1) g1 = set_range(g, r1 / SIGMA);
    if (c2) g2 = set_range(g, r2 / SIGMA);
    const int o1""",
    """    bool c1 = r1 >= 0, c2 = r2 >= 0;
    const int o1""",
).replace(
    """    lv.fresh += (u32)c1 + (u32)c2;
""",
    """    lv.fresh += (u32)c1 + (u32)c2;
    SetRange g1{0, 0}, g2{0, 0};
    if (f1 == 0u) g1 = set_range(g, r1 / SIGMA);
    if (f2 == 0u) g2 = set_range(g, r2 / SIGMA);
""",
)
_PAIR3 = [
    _PAIR2[0][:1] + (_PAIR3_FN,),
    (
        _PAIR2_LOOP,
        _PAIR2_NEW.replace(
            "if (by_level && i + lv.wk.n_warps",
            "if (by_level && !check_visited && i + lv.wk.n_warps",
        ),
    ),
]


PATCHES: dict[str, list[tuple[str, str]]] = {
    "base": [],
    "bar_poll2": _bar_poll(2),
    "bar_poll4": _bar_poll(4),
    "bar_poll8": _bar_poll(8),
    "bar_ret": [(_ARRIVE, _ARRIVE_RET)],
    "bar_ret4": _bar_poll(4) + [(_ARRIVE, _ARRIVE_RET)],
    # session 29: the pushed VSSs' mask and row lines prefetched into L2 for the next level
    "push_prefetch": [
        (
            "    if (before == 0u)\n        queue_push_set(lv.q_next, lv.qsize_next, s, range);",
            "    if (before == 0u) {\n"
            "        for (int k = range.first; k < range.last; ++k) {\n"
            '            asm volatile("prefetch.global.L2 [%0];" :: '
            '"l"(g.masks + (long long)k * 32));\n'
            '            asm volatile("prefetch.global.L2 [%0];" :: '
            '"l"(g.row_ids + (long long)k * TAU));\n'
            "        }\n"
            "        queue_push_set(lv.q_next, lv.qsize_next, s, range);\n    }",
        )
    ],
    "vss_pairs": [(_VSS_LOOP, _VSS_PAIRS)],
    "claim_cas": [(_CLAIM_OR, _CLAIM_CAS)],
    # session 29: the resident queue's claims by level too (reordered graphs only: own-id
    # graphs' fused calls start without -1s); the template's form since, so it no longer
    # applies: res_or puts the claims through visited back
    "res_or": [
        (
            "    const bool by_level = claims_by_level(g);\n    if (by_level)\n"
            "        claim_rows<RESIDENT, true>",
            "    const bool by_level = false;\n    if (by_level)\n"
            "        claim_rows<RESIDENT, true>",
        )
    ],
    # session 29: the resident claims' by_level as a template argument, chosen once a level
    # (two copies of the claims, no per-row select); the template's form since, so res_hoist
    # and vss_hoist no longer apply
    "res_hoist": [
        (
            "template <int K>\n__device__ __forceinline__ void claim_rows(",
            "template <int K, bool by_level>\n__device__ __forceinline__ void claim_rows(",
        ),
        (
            "    u32 (&hits)[K], bool check_visited, bool by_level) {",
            "    u32 (&hits)[K], bool check_visited, bool) {",
        ),
        (
            "    claim_rows<RESIDENT>(st, lv, res.rows, hits, check_visited, by_level);",
            "    if (by_level)\n"
            "        claim_rows<RESIDENT, true>(st, lv, res.rows, hits, check_visited, true);\n"
            "    else\n"
            "        claim_rows<RESIDENT, false>(st, lv, res.rows, hits, check_visited, false);",
        ),
        (
            "        claim_rows<1>(st, lv, rows, one, check_visited, by_level);",
            "        if (by_level) claim_rows<1, true>(st, lv, rows, one, check_visited, true);\n"
            "        else claim_rows<1, false>(st, lv, rows, one, check_visited, false);",
        ),
    ],
    # ... and the eager reach_row's, chosen once a VSS
    "vss_hoist": [
        (
            "__device__ __forceinline__ void reach_row(",
            "template <bool by_level>\n__device__ __forceinline__ void reach_row(",
        ),
        ("    const bool by_level = claims_by_level(g);  // the same for every thread\n", ""),
        (
            "__device__ __forceinline__ void expand_vss(",
            "template <bool by_level>\n__device__ __forceinline__ void expand_vss(",
        ),
        (
            "reach_row(g, st, lv, w.rows.r[k], check_visited);",
            "reach_row<by_level>(g, st, lv, w.rows.r[k], check_visited);",
        ),
        (
            "        expand_vss(g, st, lv, v, w, alpha, lane, prefetch_rows, check_visited);",
            "        if (claims_by_level(g))\n"
            "            expand_vss<true>(g, st, lv, v, w, alpha, lane, prefetch_rows,"
            " check_visited);\n"
            "        else\n"
            "            expand_vss<false>(g, st, lv, v, w, alpha, lane, prefetch_rows,"
            " check_visited);",
        ),
    ],
    # session 29: the frontier words 33 apart (word w at w * 33 mod n_words: a bijection where
    # gcd(33, n_words) = 1), so that a level's F_{L+1} atomics spread over 33x more L2 lines
    # (sigma 32 only; the levels' check catches an n_words that 33 divides)
    "f_spread": [
        (
            "struct Graph {",
            "__shared__ int fswz_n;\n"
            "#define FSWZ(w) ((int)(((long long)(w) * 33) % fswz_n))\nstruct Graph {",
        ),
        ("    return __ldcg(f + s);", "    return __ldcg(f + FSWZ(s));"),
        (
            "        st.frontier[0LL * g.n_words + w] = word;",
            "        st.frontier[0LL * g.n_words + (int)(((long long)w * 33) % g.n_words)] = word;",
        ),
        ("        st.frontier[w] = bit;", "        st.frontier[FSWZ(w)] = bit;"),
        (
            "    int* const own_levels = st.levels;",
            "    if (threadIdx.x == 0) fswz_n = g.n_words;\n    __syncthreads();\n"
            "    int* const own_levels = st.levels;",
        ),
    ],
    "f_spread_res": [
        (
            "            atomicOr(lv.f_next + (r >> 5), bit);",
            "            atomicOr(lv.f_next + FSWZ(r >> 5), bit);",
        )
    ],
    "f_spread_vss": [
        (
            "    const u32 before = atomicOr(lv.f_next + w, bit);",
            "    const u32 before = atomicOr(lv.f_next + FSWZ(w), bit);",
        )
    ],
    # session 29: |Q|'s counters on an L2 line of their own (word 64 of the control block's
    # 512-byte segment), away from the fresh counts' atomics and the level's counter loads
    # (timing: the host's copy of the control block misses |Q|)
    "qsize_line": [
        ("#define CTL_QSIZE 0  //", "#define CTL_QSIZE 64  //"),
        (
            "        st.ctl[CTL_QSIZE + 0] = total;",
            "        for (int c = 0; c < QUEUE_BUFFERS; ++c) st.ctl[CTL_QSIZE + c] = 0u;\n"
            "        st.ctl[CTL_QSIZE + 0] = total;",
        ),
    ],
    # session 29, with the claims by level: the visited filter (a load of the level) on every
    # level, or on none
    "vss_filter_always": [
        ("    const bool check_visited = !small_level;", "    const bool check_visited = true;")
    ],
    "res_filter_always": [
        (
            "    const bool check_visited = 32ull * fresh >= (unsigned long long)(u32)g.n;",
            "    const bool check_visited = true;",
        )
    ],
    "res_filter_never": [
        (
            "    const bool check_visited = 32ull * fresh >= (unsigned long long)(u32)g.n;",
            "    const bool check_visited = false;",
        )
    ],
    # session 29: the level's grid barrier without its leading __syncthreads, which follows
    # flush_fresh's (block_sum's) barrier with no global write between but thread 0's atomics;
    # the template's form since session 30 (with bar_lean: grid_barrier_before_top), so
    # bar_after_sum, bar_after_sum_lazy and bar_lean no longer apply: bar_full puts both block
    # barriers back
    # session 31: the eager vss loop loads each warp's first entry beside the level's counters
    # (read_level_top_entry; measured as patches top_entry and top_entry2, the latter the
    # template's form). top_before puts the old order back: the entry after the counters.
    "vss_last": _VSS_LAST,
    "top_l1": _TOP_L1,
    "chunk_push": _CHUNK_PUSH_PARTS,
    "warp_trace": _WARP_TRACE,
    "pair2": _PAIR2,
    "pair3": _PAIR3,
    # session 31: an engine's eager kernel holds only the claims its graph's ordering uses
    # (contract.claims_form; measured as spec_bylevel, the reverse of this); claims_both
    # compiles both again, picked at run time (reordered graphs)
    "claims_both": [
        (
            "bool claims_by_level(const Graph&) { return true; }",
            "bool claims_by_level(const Graph& g) { return g.new_of_old != nullptr; }",
        )
    ],
    # session 31: the small-level episode's branch taken out of the loop (small_queue 0 only)
    "spec_nosmall": [
        (
            "            if (top.qsize <= small_queue && !go_bottom_up) {",
            "            if (false) {",
        )
    ],
    # session 31: the timed kernel's call slot loaded again after the levels (as the serving
    # kernel does), so that it does not live in registers through the level loop
    "call_reload": [
        (
            "        int* const to = call.dst != 0ull ? reinterpret_cast<int*>(call.dst)\n"
            "                                         : (g.new_of_old == nullptr ? st.levels : "
            "nullptr);\n        deliver_state(g, st, to, ctl_out);",
            "        call = load_call_slot(st);\n"
            "        int* const to = call.dst != 0ull ? reinterpret_cast<int*>(call.dst)\n"
            "                                         : (g.new_of_old == nullptr ? st.levels : "
            "nullptr);\n        deliver_state(g, st, to, ctl_out);",
        )
    ],
    # session 31: every level in the small form (row ids with the masks, no visited filter),
    # compiled as constants: what the per-level choice's code costs (timing; delaunay-20's
    # levels are all small)
    "spec_small": [
        (
            "    topdown(g, st, lv, qsize, small_level, check_visited, first);",
            "    topdown(g, st, lv, qsize, true, false, first);",
        )
    ],
    # session 31: the small form's threshold on |Q_L| (2 x warps) at 1, 3 and 4 x, and 0
    "small_1x": [
        (
            "    small_level = small_level || (long long)qsize <= 2 * wk.n_warps;",
            "    small_level = small_level || (long long)qsize <= wk.n_warps;",
        )
    ],
    "small_3x": [
        (
            "    small_level = small_level || (long long)qsize <= 2 * wk.n_warps;",
            "    small_level = small_level || (long long)qsize <= 3 * wk.n_warps;",
        )
    ],
    "small_4x": [
        (
            "    small_level = small_level || (long long)qsize <= 2 * wk.n_warps;",
            "    small_level = small_level || (long long)qsize <= 4 * wk.n_warps;",
        )
    ],
    "rows_always": [  # row ids with the masks on every level; the filter on wide ones still
        (
            "    topdown(g, st, lv, qsize, small_level, check_visited, first);",
            "    topdown(g, st, lv, qsize, true, check_visited, first);",
        )
    ],
    "small_never": [
        (
            "    small_level = small_level || (long long)qsize <= 2 * wk.n_warps;",
            "    small_level = small_level || false;",
        )
    ],
    "claims_both_v": [  # the same on a graph in its own ids
        (
            "bool claims_by_level(const Graph&) { return false; }",
            "bool claims_by_level(const Graph& g) { return g.new_of_old != nullptr; }",
        )
    ],
    "top_before": [
        (
            "            int2 first;  // this warp's first entry of Q_L, loaded with the counters\n"
            "            const LevelTop top = read_level_top_entry(g, st, L, grid.warp, first);",
            "            const int2 first = make_int2(-1, -1);\n"
            "            const LevelTop top = read_level_top(st, L);",
        )
    ],
    "bar_full": [
        (
            "    target += gridDim.x;\n    arrive_and_wait(ctl, target);\n}",
            "    target += gridDim.x;\n    __syncthreads();\n    arrive_and_wait(ctl, target);\n"
            "    __syncthreads();\n}",
        )
    ],
    "bar_after_sum": [
        PATCHES_BAR_DEF,
        (
            "            after_bottom_up = go_bottom_up;\n"
            "            grid_barrier(st.ctl, barrier_target);\n            ++L;",
            "            after_bottom_up = go_bottom_up;\n"
            "            grid_barrier_after_sum(st.ctl, barrier_target);\n            ++L;",
        ),
    ],
    # session 30: the claim's CAS and the F_{L+1} atomicOr issued together (one round trip off
    # a claiming lane's chain). claim_filt: with the visited filter always on, a row that the
    # filter saw unvisited ends at level L + 1 whoever claims it, so its bit is always right.
    # claim_spec: no filter; a bit set for a row at level <= L is taken back (atomicAnd), and a
    # set pushed for such a bit alone is expanded with alpha 0 (sigma 32 only)
    "claim_filt": [
        (_CLAIM_BY_LEVEL, _CLAIM_TOGETHER.format(undo="")),
        ("    const bool check_visited = !small_level;", "    const bool check_visited = true;"),
    ],
    "claim_spec": [
        (
            _CLAIM_BY_LEVEL,
            _CLAIM_TOGETHER.format(
                undo="        if (old != -1 && old != lv.L + 1) atomicAnd(lv.f_next + w, ~bit);\n"
            ),
        )
    ],
    # session 30: the same for the lazy variants' second barrier (after stage 2's flush_fresh)
    "bar_after_sum_lazy": [
        PATCHES_BAR_DEF,
        (
            "            stage2(g, st, L, grid);\n"
            "            grid_barrier(st.ctl, barrier_target);",
            "            stage2(g, st, L, grid);\n"
            "            grid_barrier_after_sum(st.ctl, barrier_target);",
        ),
    ],
    # session 30: |Q_{L+1}|'s push atomics over two counters on two L2 lines (SHARD1: word 96 of
    # the control block's 512-byte segment, beside CTL_QSIZE on word 0). The sets of odd index
    # push to the second counter and fill the level's queue buffer from its end downwards, the
    # others from its start upwards; a set is pushed at most once a level, so the two stacks never
    # meet. Warp i takes entry i of the first stack, or entry i - |first| of the second
    # (eager vss queue only; the CPU runner needs probe_patches_cpu.py's larger control block)
    "push_shard2": [
        ("struct Graph {", "#define SHARD1 96\nstruct Graph {"),
        (
            "    u32 error, done, fresh, qsize, visited;",
            "    u32 error, done, fresh, qsize, visited, qsize0;",
        ),
        (
            "        t.qsize = __ldcg(st.ctl + CTL_QSIZE + L % QUEUE_BUFFERS);",
            "        t.qsize0 = __ldcg(st.ctl + CTL_QSIZE + L % QUEUE_BUFFERS);\n"
            "        t.qsize = t.qsize0 + __ldcg(st.ctl + SHARD1 + L % QUEUE_BUFFERS);",
        ),
        (
            "    u32 fresh;             // this thread's count",
            "    u32 qsize0;\n    u32 fresh;             // this thread's count",
        ),
        (
            "    const u32 qsize = top.qsize;",
            "    const u32 qsize = top.qsize;\n    lv.qsize0 = top.qsize0;",
        ),
        (
            "        const int2 entry = __ldcg(q + i);",
            "        const long long at = i < (long long)lv.qsize0 ? i\n"
            "            : (long long)g.n_vss - 1 - (i - (long long)lv.qsize0);\n"
            "        const int2 entry = __ldcg(q + at);",
        ),
        (
            "        st.ctl[CTL_QSIZE + (L + 2) % QUEUE_BUFFERS] = 0u;",
            "        st.ctl[CTL_QSIZE + (L + 2) % QUEUE_BUFFERS] = 0u;\n"
            "        st.ctl[SHARD1 + (L + 2) % QUEUE_BUFFERS] = 0u;",
        ),
        (
            "        st.ctl[CTL_QSIZE + 0] = total;",
            "        st.ctl[CTL_QSIZE + 0] = total;\n"
            "        for (int b = 0; b < QUEUE_BUFFERS; ++b) st.ctl[SHARD1 + b] = 0u;",
        ),
        (
            "        queue_push_set(lv.q_next, lv.qsize_next, s, range);",
            "        queue_push_shard(g.n_vss, lv.q_next, lv.qsize_next, s, range);",
        ),
        (
            "// ---- level_state:",
            "__device__ __forceinline__ void queue_push_shard(\n"
            "    long long cap, int2* __restrict__ q, u32* qsize, int s, SetRange range) {\n"
            "    const int count = range.last - range.first;\n"
            "    if (count == 0) return;\n"
            "    if (s & 1) {\n"
            "        const u32 at = atomicAdd(qsize + SHARD1, (u32)count);\n"
            "        for (int k = 0; k < count; ++k)\n"
            "            q[cap - 1 - (long long)(at + k)] = make_int2(range.first + k, s);\n"
            "    } else {\n"
            "        const u32 at = atomicAdd(qsize, (u32)count);\n"
            "        for (int k = 0; k < count; ++k) q[at + k] = make_int2(range.first + k, s);\n"
            "    }\n"
            "}\n\n// ---- level_state:",
        ),
    ],
    # session 30: grid_barrier_after_flush without its trailing __syncthreads as well: the next
    # statement of the level loop is read_level_top, whose thread 0 (the thread that waited)
    # loads the counters and whose block barrier then releases the block
    "bar_lean": [
        (
            "    target += gridDim.x;\n    arrive_and_wait(ctl, target);\n    __syncthreads();\n}",
            "    target += gridDim.x;\n    arrive_and_wait(ctl, target);\n}",
        )
    ],
    # session 30: no block barrier before the grid's arrival at all: each warp adds its fresh
    # count and then itself to two shared counters, and the last warp of the block adds the
    # block's count to |F_{L+1}| and arrives; thread 0 only waits (timing only: block 0's
    # small-level episodes would arrive too, so small_queue 0 alone)
    "warp_arrive": [
        (
            "struct LevelTop {",
            "__device__ __forceinline__ void add_release(u64* p, u64 v);\n"
            "__shared__ u32 s_arrive_fresh, s_arrive_count;\n"
            "__device__ __forceinline__ void flush_arrive(const State& st, const Level& lv) {\n"
            "    const u32 warp_total = __reduce_add_sync(FULL_WARP, lv.fresh);\n"
            "    __syncwarp();\n"
            "    if (lane_id() != 0) return;\n"
            "    if (warp_total) atomicAdd(&s_arrive_fresh, warp_total);\n"
            "    __threadfence_block();\n"
            "    if (atomicAdd(&s_arrive_count, 1u) != (blockDim.x >> 5) - 1u) return;\n"
            "    __threadfence_block();\n"
            "    const u32 total = atomicAdd(&s_arrive_fresh, 0u);\n"
            "    if (total) {\n"
            "        atomicAdd(st.ctl + CTL_NEW + (lv.L + 1) % QUEUE_BUFFERS, total);\n"
            "        atomicAdd(st.ctl + CTL_VISITED, total);\n"
            "    }\n"
            "    add_release(reinterpret_cast<u64*>(st.ctl + CTL_BARRIER_COUNT), 1ull);\n"
            "}\n\nstruct LevelTop {",
        ),
        ("    flush_fresh(st, lv);\n}", "    flush_arrive(st, lv);\n}"),
        (
            "    __shared__ LevelTop shared_top;\n    if (threadIdx.x == 0) {\n",
            "    __shared__ LevelTop shared_top;\n    if (threadIdx.x == 0) {\n"
            "        s_arrive_fresh = 0u;\n        s_arrive_count = 0u;\n",
        ),
        (
            "    target += gridDim.x;\n    arrive_and_wait(ctl, target);\n}",
            "    target += gridDim.x;\n"
            "    if (threadIdx.x == 0)\n"
            "        barrier_wait(ctl, reinterpret_cast<u64*>(ctl + CTL_BARRIER_COUNT), target,\n"
            "                     64);\n}",
        ),
    ],
    "res_cas": [
        (
            "seen[k][t] = ((hits[k] >> t) & 1u) ? __ldcg(st.visited + (rows[k].r[t] >> 5)) : 0u;",
            "seen[k][t] = ((hits[k] >> t) & 1u) && __ldcg(st.levels + rows[k].r[t]) >= 0 "
            "? ~0u : 0u;",
        ),
        (
            "before[k][t] = ((hits[k] >> t) & 1u) ? atomicOr(st.visited + (r >> 5), bit) : bit;",
            "before[k][t] = ((hits[k] >> t) & 1u) "
            "? (atomicCAS(st.levels + r, -1, lv.L + 1) == -1 ? 0u : bit) : bit;",
        ),
        (
            "            if (before[k][t] & bit) continue;  // no hit, or reached before\n"
            "            st.levels[r] = lv.L + 1;\n",
            "            if (before[k][t] & bit) continue;  // no hit, or reached before\n",
        ),
    ],
    # since session 29 (after claim_cas_nv became the template's): the claims through visited
    # on reordered graphs too, as before
    "claim_or": [
        (
            "    const int lane = lane_id();\n    const bool by_level = claims_by_level(g);",
            "    const int lane = lane_id();\n    const bool by_level = false;",
        )
    ],
    "claim_cas_nv": [(_CLAIM_OR, _CLAIM_CAS_NV), (_FILTER_VIS, _FILTER_LEV)],
    "push_tag": _PUSH_TAG_PARTS,
    # session 29: the frontier words of sigma-32 sets 32 apart in memory (word w at
    # (w % 32) * 1024 + w / 32), so a level's F_{L+1} atomics spread over 32x more L2 lines
    # (probe: delaunay-20, n_words = 32,768, eager vss)
    "f_swizzle": [
        ("    return __ldcg(f + s);", "    return __ldcg(f + FSWZ(s));"),
        (
            "struct Graph {",
            "#define FSWZ(w) ((((w) & 31) << 10) + ((w) >> 5))\nstruct Graph {",
        ),
        (
            "        st.frontier[0LL * g.n_words + w] = word;",
            "        st.frontier[0LL * g.n_words + FSWZ(w)] = word;",
        ),
        ("        st.frontier[w] = bit;", "        st.frontier[FSWZ(w)] = bit;"),
        (
            "    const u32 before = atomicOr(lv.f_next + w, bit);",
            "    const u32 before = atomicOr(lv.f_next + FSWZ(w), bit);",
        ),
    ],
    # session 29: F_{L-1}'s clearing after the level's expansion instead of before it
    "clear_late": [
        (
            "    clear_old_frontier(g, st, L, wk);\n"
            "    topdown(g, st, lv, qsize, small_level, check_visited);",
            "    topdown(g, st, lv, qsize, small_level, check_visited);\n"
            "    clear_old_frontier(g, st, L, wk);",
        )
    ],
    "cas_tag": [(_CLAIM_OR, _CLAIM_CAS_NV), (_FILTER_VIS, _FILTER_LEV)] + _PUSH_TAG_PARTS,
    "vss_chain": [(_VSS_LOOP, _VSS_CHAIN)],
    "owned": [
        (_RES_BODY, _OWNED),
        ("#define RESIDENT ", "#define OWN_CAP 2048\n#define RESIDENT "),
    ],
    "trace_vss": _TRACE_COMMON + _TRACE_GRID,
    "trace_res": _TRACE_COMMON + _TRACE_SUM,
    "nofilter": [("if (head[k] >= 0 && check_visited) {", "if (head[k] >= 0 && false) {")],
    "no_skip_marked": [("#define SKIP_MARKED 1", "#define SKIP_MARKED 0")],
    "steps8": [("#define ARC_STEPS 4", "#define ARC_STEPS 8")],
    "steps2": [("#define ARC_STEPS 4", "#define ARC_STEPS 2")],
    "span4": [("span = span < 32 ? span : 32;", "span = span < 4 ? span : 4;")],
    "light_filter": [("#define FILTER_LIGHT 0", "#define FILTER_LIGHT 1")],
    "bu_arcs2": [("#define BOTTOM_UP_ARCS 1", "#define BOTTOM_UP_ARCS 2")],
    "bu_arcs4": [("#define BOTTOM_UP_ARCS 1", "#define BOTTOM_UP_ARCS 4")],
    "bu_arcs8": [("#define BOTTOM_UP_ARCS 1", "#define BOTTOM_UP_ARCS 8")],
    # the bottom-up step's F_L probes in L2 only (before session 22), and its in-arcs streamed
    "bu_f_l2": [(_BU_PROBE, _BU_PROBE_L2)],
    "bu_idx_cs": [(_BU_ARC, _BU_ARC.replace("__ldg", "__ldcs"))],
    # the hubs of a finalized word pushed a lane and an atomic at a time (before session 22)
    "hub_push_lane": [
        (
            "        hub_push_warp(g, st, lv.L + 1, w, fresh);  // (rounds are warp-uniform)",
            "        if (fresh) hub_push(g, st, lv.L + 1, w, fresh);",
        )
    ],
    # the CUDA-core top-down's visited filter through L1 (visited does not change in stage 1)
    "td_seen_l1": [(_TD_SEEN, "seen[k] = st.visited[head[k] >> 5];")],
    "bu_words2": [("#define BOTTOM_UP_WORDS 4", "#define BOTTOM_UP_WORDS 2")],
    "bu_words8": [("#define BOTTOM_UP_WORDS 4", "#define BOTTOM_UP_WORDS 8")],
    # session 24, timing only (wrong levels): the fused call's -1 pass without its stores, or gone
    "fill_no_stores": [(_FILL_STORE, "if (false) dst[u] = -1;")],
    "fill_none": [(_FILL_HEAD, _FILL_HEAD + "\n    return;")],
    # (Session 24's no_fill_ahead, late_next and no_prefill_call patched the serving code out of
    # the timed kernel; since session 25 that code is a module of its own: git history has them.)
    "deliver1": [("#define DELIVER_BATCH 8", "#define DELIVER_BATCH 1")],
    "deliver4": [("#define DELIVER_BATCH 8", "#define DELIVER_BATCH 4")],
    "deliver_scatter": [  # before session 15: user id old_of_new[i] <- level of i
        ("const int* const by = g.new_of_old;", "const int* const by = g.old_of_new;"),
        ("__ldcg(from + at[j]) : 0;", "__ldcg(from + u0 + j * stride) : 0;"),
        (
            "if (at[j] >= 0) dst[u0 + j * stride] = level[j];",
            "if (at[j] >= 0) dst[at[j]] = level[j];",
        ),
    ],
    "deliver_identity": [  # timing only: the levels stay in internal ids (wrong when reordered)
        ("const int* const by = g.new_of_old;", "const int* const by = nullptr;")
    ],
    "vss_ahead": [  # the vss queue: the warp's next entry loads while this VSS expands
        (
            """    for (long long i = lv.wk.warp; i < (long long)qsize; i += lv.wk.n_warps) {
        const int2 entry = __ldcg(q + i);
        const int v = entry.x;
        const VssWords w = load_vss(g, v, lane, prefetch_rows);
        const u32 alpha = set_alpha(lv.f_cur, entry.y);
        expand_vss""",
            """    long long i = lv.wk.warp;
    int2 entry = i < (long long)qsize ? __ldcg(q + i) : make_int2(0, 0);
    while (i < (long long)qsize) {
        const int v = entry.x;
        const VssWords w = load_vss(g, v, lane, prefetch_rows);
        const u32 alpha = set_alpha(lv.f_cur, entry.y);
        i += lv.wk.n_warps;
        if (i < (long long)qsize) entry = __ldcg(q + i);
        expand_vss""",
        )
    ],
    # the resident queue's visited filter (level.cu.j2): session 17's first rule, always, never
    "res_check_quarter": [
        (
            _RES_CHECK,
            "const bool check_visited = 4ull * top.visited >= (u32)g.n && "
            "32ull * top.fresh >= (u32)g.n;",
        )  # fmt: skip
    ],
    "res_check_always": [(_RES_CHECK, "const bool check_visited = true;")],
    "res_check_never": [(_RES_CHECK, "const bool check_visited = false;")],
    # the persistent kernel compiled for the block size it runs at (more registers a thread)
    # session 23: a second, no-return atomic beside each queue push (adding 0 to a word 8 on,
    # in the same L2 line as |Q_{L+1}|): what contention on that line costs a level
    "push_dup": [(_PUSH, _PUSH + "\n    atomicAdd(qsize + 8, 0u);")],
    # session 23: back off between the grid barrier's polls, so that fewer loads queue up at
    # the count's L2 line beside the arrivals
    "poll_sleep32": [(_POLL, "__nanosleep(32);\n        " + _POLL)],
    "poll_sleep128": [(_POLL, "__nanosleep(128);\n        " + _POLL)],
    "sweep_packed": [("#define SWEEP_SPREAD 1", "#define SWEEP_SPREAD 0")],  # session 23
    # session 23: the vss queue's entry i to warp i % 32 of block i / 32 (consecutive entries on
    # one SM) against block i % G (consecutive entries on consecutive SMs)
    "queue_across_sms": [
        (
            "for (long long i = lv.wk.warp; i < (long long)qsize; i += lv.wk.n_warps) {",
            "const long long wpb_ = blockDim.x >> 5, nb_ = lv.wk.n_warps / wpb_;\n"
            "    for (long long i = (lv.wk.warp % wpb_) * nb_ + lv.wk.warp / wpb_;"
            " i < (long long)qsize; i += lv.wk.n_warps) {",
        )
    ],
    "const_state": [  # session 23: the driver's State const again, no per-call aim (timing only)
        ("    State st{", "    const State st{"),
        ("        if (fused) aim_levels(g, st, own_levels);", "        // no aim"),
    ],
    "lb512": [("__launch_bounds__(1024) blest_bfs(", "__launch_bounds__(512, 1) blest_bfs(")],
    "lb128": [("__launch_bounds__(1024) blest_bfs(", "__launch_bounds__(128, 1) blest_bfs(")],
    # session 26: the barrier's polls relaxed (no L1 invalidation each), one acquire fence after
    "poll_relaxed": [
        (
            "const u64 seen = load_acquire(count);",
            'u64 seen;\n        asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];"'
            ' : "=l"(seen) : "l"(count) : "memory");',
        ),
        (
            "if ((seen & low) >= target) return seen;",
            "if ((seen & low) >= target) {\n"
            '            asm volatile("fence.acq_rel.gpu;" ::: "memory");\n'
            "            return seen;\n        }",
        ),
    ],
    "barrier_watch1": [("#define BARRIER_WATCH_EVERY 64u", "#define BARRIER_WATCH_EVERY 1u")],
    # the block launch's timed kernel with the served call's constants: one seed, no depth
    # limit (timing only: wrong for several seeds or a depth limit)
    "block_one_seed": [
        (
            "block_traversal(g, st, st.levels, st.user_levels, seeds, n_seeds, src, depth_limit);",
            "block_traversal(g, st, st.levels, st.user_levels, nullptr, 1, src, -1);",
        )
    ],
    # the block launch's timed kernel as two inlined copies, one for graphs in their own ids
    # (no user-id levels) and one for reordered graphs, as the serving kernel has them
    "block_split_users": [
        (
            "block_traversal(g, st, st.levels, st.user_levels, seeds, n_seeds, src, depth_limit);",
            "if (st.user_levels != nullptr) block_traversal(g, st, st.levels, st.user_levels, "
            "seeds, n_seeds, src, depth_limit);\n    else block_traversal(g, st, st.levels, "
            "nullptr, seeds, n_seeds, src, depth_limit);",
        )
    ],
    "block_split_one": [  # the same with the server's constants (timing only)
        (
            "block_traversal(g, st, st.levels, st.user_levels, seeds, n_seeds, src, depth_limit);",
            "if (st.user_levels != nullptr) block_traversal(g, st, st.levels, st.user_levels, "
            "nullptr, 1, src, -1);\n    else block_traversal(g, st, st.levels, nullptr, nullptr, "
            "1, src, -1);",
        )
    ],
    # the block traversal's pointers kept in registers: an empty asm that "changes" them, so
    # that the compiler cannot reload them from the kernel's parameters in the level loop (the
    # serving kernel holds them in registers; the timed one reloads some with LDC)
    "block_launder_all": [
        (
            _BLOCK_CALL,
            _launder("g2.heads g2.out_ptr g2.out_idx g2.old_of_new st2.queue st2.ctl lv ul"),
        )
    ],
    "block_launder_levels": [(_BLOCK_CALL, _launder("lv ul"))],
    "block_launder_graph": [
        (_BLOCK_CALL, _launder("g2.heads g2.out_ptr g2.out_idx g2.old_of_new"))
    ],
    # ... and the queue's shared-memory length, which the timed kernel reloads from its
    # parameters (LDC) at every claim that appends to F_{L+1}, where the server holds it in a
    # register
    "block_launder_smem_queue": [
        (
            "const int in_smem = st.smem_queue;",
            'int in_smem = st.smem_queue;\n    asm volatile("" : "+r"(in_smem));',
        )
    ],
    # the timed block kernel in the server's shape: a loop around the traversal whose every
    # round starts with a __noinline__ call by thread 0 and a block barrier (one round here)
    "block_loop_noinline": [
        (_BLOCK_CALL, _BLOCK_LOOP.format(call=_BLOCK_CALL)),
        (_BLOCK_KERNEL_HEAD, _BLOCK_ONCE + _BLOCK_KERNEL_HEAD),
    ],
    "block_loop_noinline_one": [
        (
            _BLOCK_CALL,
            _BLOCK_LOOP.format(
                call="block_traversal(g, st, st.levels, st.user_levels, nullptr, 1, src, -1);"
            ),
        ),
        (_BLOCK_KERNEL_HEAD, _BLOCK_ONCE + _BLOCK_KERNEL_HEAD),
    ],
    # the block kernel's claims as rolled loops (one copy of the claim's code instead of 7 + 4
    # unrolled): whether the level loop's code size (its instruction cache) decides its speed
    "block_roll_inline": [(_INLINE_LOOP, _INLINE_ROLLED)],
    "block_roll_all": [(_INLINE_LOOP, _INLINE_ROLLED), (_CSR_CLAIMS, _CSR_ROLLED)],
    # the timed block kernel compiled for blocks of at most 512 threads (up to 128 registers)
    "block_lb512": [(_BLOCK_KERNEL_HEAD, _BLOCK_KERNEL_HEAD.replace("(1024)", "(512, 1)"))],
    "block_lb256": [(_BLOCK_KERNEL_HEAD, _BLOCK_KERNEL_HEAD.replace("(1024)", "(256, 1)"))],
    "barrier_fences": [  # session 13's barrier: full fences around a relaxed arrival and poll
        ("add_release(count, 1ull);", "__threadfence();\n        atomicAdd(count, 1ull);"),
        ("while (load_acquire(count) < target) {", "while (*(volatile u64*)count < target) {"),
        (
            "            }\n        }\n    }\n    __syncthreads();\n}",
            "            }\n        }\n        __threadfence();\n    }\n    __syncthreads();\n}",
        ),
    ],
}
PATCHES["trace_owned"] = PATCHES["owned"] + PATCHES["trace_res"] + _OWNED_T1


def resources(function) -> str:
    """Registers and local (spilled) bytes a thread of the loaded kernel uses."""
    import cupy as cp

    attr = cp.cuda.driver.funcGetAttribute
    regs, local = attr(4, function.ptr), attr(3, function.ptr)  # NUM_REGS, LOCAL_SIZE_BYTES
    return f"regs {regs}, local bytes {local}"


def patched(render, key: str):
    """``render`` with patch ``key`` applied: every part of it to the timed module, the parts
    whose text is there to the serving module (render(spec, serving=True))."""

    def render_patched(spec, serving: bool = False, claims=None):
        text = render(spec, serving=serving, claims=claims)
        for old, new in PATCHES[key]:
            if old not in text:
                if serving:
                    continue
                raise SystemExit(f"patch {key!r}: {old!r} is not in the source of {spec.name}")
            text = text.replace(old, new)
        return text

    return render_patched


def install(key: str | None) -> None:
    """Patch ``key`` into every name the engines render through (None: the original)."""
    render = ORIGINAL if key is None else patched(ORIGINAL, key)
    RENDER.render = ENGINE.render = ENGINE_SERVE.render = render


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
            # The engine binds ``render`` at import: patch its name too (before session 13 only
            # the module's was patched, so the engine compiled the unpatched source).
            install(key)
            reordered = b.permutation is not None and not b.permutation.is_identity
            claims = claims_form(specs[0], reordered)
            if PATCHES[key] and PATCHES[key][0][1] not in ENGINE.render(specs[0], claims=claims):
                raise SystemExit(f"patch {key!r} did not reach the engine's source")
            print(f"-- {key}", flush=True)
            for row in time_variants(b, specs, args.eta, [geometry]):
                print(
                    f"   {row['variant']}: traversal {1e3 * row['traversal_ms']:.2f} us,"
                    f" whole {1e3 * row['whole_call_ms']:.2f} us",
                    flush=True,
                )
            with b.engine(specs[0], args.eta, geometry, record_levels=True) as eng:
                print("   " + resources(eng._kernels["bfs"].function))
                for src in b.sources[: args.check]:
                    check_levels(b.graph, int(src), eng.bfs(int(src)), f"{key} {name}")
                eng.bfs(int(b.sources[0]))
                eng.bfs(int(b.sources[0]))
                stages = eng.stage_times_ms()
                levels_ms, _ = eng.level_times_ms()
            if stages is not None:  # lazy variants
                split = " | ".join(f"{a:.1f}/{c:.1f}" for a, c in stages * 1e3)
                print("   stages us:", split, flush=True)
            else:
                print("   levels us:", " ".join(f"{1e3 * t:.1f}" for t in levels_ms), flush=True)
        install(None)


if __name__ == "__main__":
    main()
