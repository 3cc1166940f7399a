"""Region-local BFS: each block owns a compact region of the graph and runs its levels in
shared memory, with a grid barrier only every few levels. A prototype, not adopted.

    python3 benchmarks/probe_regions.py delaunay-20,luxembourg_osm --window=2,4,-4,-8
    python3 benchmarks/probe_regions.py delaunay-20,luxembourg_osm --async-sleep 0,200
    python3 benchmarks/probe_regions.py delaunay-20,luxembourg_osm --async-sleep 0 --queue
    python3 benchmarks/probe_regions.py delaunay-20,luxembourg_osm --sync

The question: a delaunay-20 level on the grid costs ~4 us, of which ~1.55 us is the grid
barrier and the level's fixed pieces, and the rest a chain of L2 round trips. How fast is a
level that runs inside one block, its levels and pending bits in shared memory and its row
offsets copied there, so that its chain is one L2 load (the heads) between two
``__syncthreads``?

The vertices are cut into as many regions as blocks by recursive bisection of BFS orders
(RCM of each part, split at the share of its blocks), then renumbered so that each region is
a contiguous id range. Block r owns region r:
- ``lvl`` (shared): the block's best level of each vertex; ``pend`` (shared bits): lowered
  and not yet expanded.
- A superstep expands the block's pending vertices level by level, in level order, up to a
  cap: ``--window D`` > 0 caps every block at the global level (s + 1) * D; D < 0 lets each
  block run |D| levels from its own lowest pending level. A head in the region is claimed
  with a shared store (every store of a level writes the same value) and a pending bit; a
  head in another region gets a global ``red.min`` on ``mail_level`` and a flag for its owner.
- After the grid barrier, a block whose flag is up reads its region's ``mail_level`` and adopts
  every lower level. The traversal ends after a superstep in which no block had pending
  vertices left and none sent anything.

``--async-sleep`` runs the asynchronous form instead (``regions_async``): no supersteps and no
grid barrier. A block reads its mail count every level and adopts after it changes. The end
is counted in one word: blocks active plus messages not yet taken. A sender adds its messages
there before it raises the targets' counts, with a fence before and after. A receiver swaps
them for its own 1 in one atomic. A block going idle takes its 1 off, and idle blocks poll
their count and the word, backing off by the given nanoseconds. A 200 ms watchdog ends a
hung run with an error. ``--queue`` (``regions_queue``) replaces the level's scan of the region
by two queues: a level expands the vertices queued by the last one, each at its own level
(claims by ``atomicMin``), and adopted mail joins the queue whatever its level. ``--sync``
(``regions_sync``) is level-synchronous: a grid barrier every level, claims in shared memory
by ``atomicCAS``, remote heads appended to their owner's inbox for the next level; ``--agg``
pushes them with one atomic a warp (shared) or a warp's owner (global).

Levels are only ever set along real paths and every lowered vertex is expanded again, so they
converge to the BFS levels (label correcting). Timed between two events: the barrier's reset
and the kernel, which also writes the levels out and resets its region's ``mail_level`` for
the next call. Checked against SciPy. ``--trace`` prints each superstep's slowest block;
block times are clock64 at the rated clock.

Session 27 on an H100 (benchmarks/NOTES.md): delaunay-20 3.16 ms at best (D = -4) against
1.66-1.73 ms for the grid's s32_eager_vss_pers. A superstep waits for its slowest block,
which runs 2-3x D levels to catch up with mail a superstep late, at ~2.9 us a level (a
region's frontier of ~200 vertices; 1.1 us on luxembourg_osm's few). The asynchronous form
removes that wait and corrects almost nothing (1.004 expansions a vertex), but its level
costs 4.9 us with the mail's fences and loads: delaunay-20 2.76-2.87 ms, luxembourg_osm
1.89-1.99 (s8_block 1.59). The queue form's levels are cheaper, but mail a level late mixes
two levels in one queue and doubles the work (1.98 expansions a vertex): delaunay-20 2.48 ms,
luxembourg_osm 1.60. The level-synchronous form costs 7.2 us a level on delaunay-20 (3.04 ms)
and 3.3 on luxembourg_osm (3.45 ms). Not adopted.
"""

from __future__ import annotations

import argparse
import time

import cupy as cp
import numpy as np
import scipy.sparse as sp
from graphs import anchor_graph, check_levels
from scipy.sparse.csgraph import reverse_cuthill_mckee

from blest.graph.ordering import Permutation, permute_graph
from blest.tuning.protocol import timing_sources

SOURCE = r"""
typedef unsigned int u32;
#define INF 0xffffffffu

__device__ __forceinline__ void red_release(u32* p, u32 v) {
    asm volatile("red.release.gpu.global.add.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void red_min(u32* p, u32 v) {
    asm volatile("red.relaxed.gpu.global.min.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ unsigned long long clk() { return clock64(); }
__device__ __forceinline__ u32 load_acquire(const u32* p) {
    u32 v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

// The region starts, copied to shared memory (every thread waits for them).
__device__ __forceinline__ void load_starts(const int* starts_g, int* starts, int G) {
    for (int i = threadIdx.x; i <= G; i += THREADS) starts[i] = starts_g[i];
    __syncthreads();
}

// The region's levels (INF but the source's 0) and its row offsets, into shared memory; the
// loads are all issued before the first store. The caller synchronizes before use.
__device__ __forceinline__ void load_region(const u32* __restrict__ ptr, u32* lvl, u32* rp,
                                            int base, int size, int src) {
    u32 p[PER];
#pragma unroll
    for (int q = 0; q < PER; ++q) {
        const int i = q * THREADS + threadIdx.x;
        p[q] = i < size ? ptr[base + i] : 0u;
    }
#pragma unroll
    for (int q = 0; q < PER; ++q) {
        const int i = q * THREADS + threadIdx.x;
        if (i < size) { lvl[i] = (base + i == src) ? 0u : INF; rp[i] = p[q]; }
    }
    if (threadIdx.x == 0) rp[size] = ptr[base + size];
}

// The region of vertex u: starts[o] <= u < starts[o + 1], searched from an even split.
__device__ __forceinline__ int owner_of(int u, const int* starts, int G, float inv_share) {
    int o = min((int)((float)u * inv_share), G - 1);
    while (starts[o] > u) --o;
    while (starts[o + 1] <= u) ++o;
    return o;
}

// Shared memory: lvl[CAP], rp[CAP + 1], fr[CAP], pend[CAP / 32], starts[K + 1], mask[K / 32].
extern "C" __global__ void __launch_bounds__(THREADS, 1) regions_bfs(
    const u32* __restrict__ ptr, const int* __restrict__ idx, const int* __restrict__ starts_g,
    u32* mail_level, u32* mail, u32* bar, int* level_out, int src, int window, u32* stats,
    u32* dbg)
{
    extern __shared__ u32 sm[];
    u32* lvl = sm;
    u32* rp = lvl + CAP;
    int* fr = (int*)(rp + CAP + 1);
    u32* pend = (u32*)(fr + CAP);
    int* starts = (int*)(pend + CAP / 32);
    u32* mask = (u32*)(starts + K + 1);
    __shared__ int s_count[2], s_pushed[2], s_sent, s_total;
    __shared__ u32 s_min, s_next[2];

    const int r = blockIdx.x, tid = threadIdx.x;
    const int G = gridDim.x;
    load_starts(starts_g, starts, G);
    const int base = starts[r], size = starts[r + 1] - base;
    const int words = (size + 31) >> 5;
    const float inv_share = (float)G / (float)starts[G];
    load_region(ptr, lvl, rp, base, size, src);
    for (int w = tid; w < words; w += THREADS) {
        const int i = src - base;
        pend[w] = (i >= 0 && i < size && (i >> 5) == w) ? 1u << (i & 31) : 0u;
    }
    for (int w = tid; w < (K + 31) / 32; w += THREADS) mask[w] = 0u;
    u32 expanded = 0, local_levels = 0;
    unsigned long long t_adopt = 0, t_levels = 0, t_bar = 0, t_scan = 0, t_expand = 0;
    unsigned long long t0 = clk();
    int s = 0;
    for (;; ++s) {
        if (tid == 0) {
            s_min = INF; s_sent = 0;
            for (int c = 0; c < 2; ++c) { s_count[c] = 0; s_pushed[c] = 0; s_next[c] = INF; }
        }
        __syncthreads();
        // Mail from the last superstep: adopt every lower level of the region.
        if (s > 0 && __ldcg(mail + ((s - 1) & 1) * G + r)) {
            u32 m[PER];  // every load issued before the first compare
#pragma unroll
            for (int q = 0; q < PER; ++q) {
                const int i = tid + q * THREADS;
                m[q] = i < size ? __ldcg(mail_level + base + i) : INF;
            }
#pragma unroll
            for (int q = 0; q < PER; ++q) {
                const int i = tid + q * THREADS;
                if (m[q] < INF && m[q] < lvl[i]) {
                    lvl[i] = m[q];
                    atomicOr(pend + (i >> 5), 1u << (i & 31));
                }
            }
            __syncthreads();
            if (tid == 0) mail[((s - 1) & 1) * G + r] = 0u;
        }
        // The lowest pending level (a warp's minimum, then one shared atomic a warp).
        for (int w0 = (tid & ~31); w0 < words; w0 += THREADS) {
            const int w = w0 + (tid & 31);
            u32 bits = w < words ? pend[w] : 0u, m = INF;
            while (bits) {
                const int b = __ffs(bits) - 1;
                bits &= bits - 1;
                m = min(m, lvl[w * 32 + b]);
            }
            m = __reduce_min_sync(0xffffffffu, m);
            if ((tid & 31) == 0 && m != INF) atomicMin(&s_min, m);
        }
        __syncthreads();
        // The window: to the global cap (s + 1) * D, or (window < 0) |D| levels from the
        // block's own lowest pending level.
        const u32 cap = window > 0 ? (u32)(s + 1) * (u32)window
                                   : (s_min == INF ? 0u : s_min + (u32)(-window) - 1u);
        unsigned long long t1 = clk(); t_adopt += t1 - t0;
        const unsigned long long t_start = t0; t0 = t1;
        u32 lv0 = local_levels, fmax = 0;
        u32 lam = s_min;
        // Two barriers a level; the shared counters alternate between two slots, and the slot
        // of the next level is reset while this one expands (after every thread has read it).
        unsigned long long t0l = clk();
        for (int j = 0; lam <= cap; ++j) {
            const int c = j & 1;
            const int lane = tid & 31;
#if SCAN_BITS
            for (int w0 = (tid & ~31); w0 < words; w0 += THREADS) {
                const int w = w0 + lane;
                u32 bits = w < words ? pend[w] : 0u, sel = 0u, m = INF;
                while (bits) {
                    const int b = __ffs(bits) - 1;
                    bits &= bits - 1;
                    const u32 l = lvl[w * 32 + b];
                    if (l == lam) sel |= 1u << b; else m = min(m, l);
                }
                m = __reduce_min_sync(0xffffffffu, m);
                if (lane == 0 && m != INF) atomicMin(&s_next[c], m);
                // The warp's selected vertices, placed by a warp scan and one shared atomic.
                const int cnt = __popc(sel);
                int incl = cnt;
#pragma unroll
                for (int d = 1; d < 32; d <<= 1) {
                    const int y = __shfl_up_sync(0xffffffffu, incl, d);
                    if (lane >= d) incl += y;
                }
                int at = 0;
                if (lane == 31 && incl) at = atomicAdd(&s_count[c], incl);
                at = __shfl_sync(0xffffffffu, at, 31);
                if (sel) {
                    pend[w] &= ~sel;
                    int pos = at + incl - cnt;
                    while (sel) {
                        const int b = __ffs(sel) - 1;
                        sel &= sel - 1;
                        fr[pos++] = w * 32 + b;
                    }
                }
            }
#else
            // A lane a vertex: vertex q * THREADS + tid, so that a warp's 32 vertices are one
            // pending word (a broadcast) and their levels are 32 banks.
            {
                u32 l[PER], pw[PER];
#pragma unroll
                for (int q = 0; q < PER; ++q) {
                    const int i = q * THREADS + tid;
                    l[q] = i < size ? lvl[i] : INF;
                    pw[q] = i < size ? pend[i >> 5] : 0u;
                }
                u32 m = INF;
#pragma unroll
                for (int q = 0; q < PER; ++q) {
                    const int i = q * THREADS + tid;
                    const bool p = (pw[q] >> lane) & 1u;
                    const bool take = p && l[q] == lam;
                    if (p && !take) m = min(m, l[q]);
                    const u32 ballot = __ballot_sync(0xffffffffu, take);
                    if (ballot) {
                        int at = 0;
                        if (lane == 0) {
                            at = atomicAdd(&s_count[c], __popc(ballot));
                            pend[i >> 5] = pw[q] & ~ballot;
                        }
                        at = __shfl_sync(0xffffffffu, at, 0);
                        if (take) fr[at + __popc(ballot & ((1u << lane) - 1u))] = i;
                    }
                }
                m = __reduce_min_sync(0xffffffffu, m);
                if (lane == 0 && m != INF) atomicMin(&s_next[c], m);
            }
#endif
            __syncthreads();
            unsigned long long t2 = clk(); t_scan += t2 - t0l; t0l = t2;
            const int f = s_count[c];
            fmax = max(fmax, (u32)f);
            const u32 nl = lam + 1;
            bool pushed = false, sent = false;
            for (int i = tid; i < f; i += THREADS) {
                const int v = fr[i];
                const u32 a0 = rp[v], a1 = rp[v + 1];
                for (u32 a = a0; a < a1; a += ARCS) {
                    int h[ARCS];  // a batch of heads loaded before the first atomic
                    u32 seen[ARCS];
#pragma unroll
                    for (int q = 0; q < ARCS; ++q) h[q] = a + q < a1 ? __ldg(idx + a + q) : -1;
#pragma unroll
                    for (int q = 0; q < ARCS; ++q) {
                        const int lu = h[q] - base;
                        seen[q] = (unsigned)lu < (unsigned)size ? lvl[lu] : INF;
                    }
#pragma unroll
                    for (int q = 0; q < ARCS; ++q) {
                        const int u = h[q];
                        if (u < 0) continue;
                        const int lu = u - base;
                        if ((unsigned)lu < (unsigned)size) {
                            // Every store of this level writes nl: no atomic is needed.
                            if (seen[q] > nl) {
                                lvl[lu] = nl;
                                atomicOr(pend + (lu >> 5), 1u << (lu & 31));
                                pushed = true;
                            }
                        } else {
                            red_min(mail_level + u, nl);
                            // The owner: starts[o] <= u < starts[o + 1], near an even split.
                            const int o = owner_of(u, starts, G, inv_share);
                            atomicOr(mask + (o >> 5), 1u << (o & 31));
                            sent = true;
                        }
                    }
                }
            }
            if (tid == 0) {
                expanded += f;
                s_count[c ^ 1] = 0; s_pushed[c ^ 1] = 0; s_next[c ^ 1] = INF;
            }
            if (pushed) s_pushed[c] = 1;
            if (sent) s_sent = 1;
            __syncthreads();
            t2 = clk(); t_expand += t2 - t0l; t0l = t2;
            ++local_levels;
            lam = s_pushed[c] ? nl : s_next[c];
        }
        t1 = clk(); t_levels += t1 - t0; t0 = t1;
        if (tid == 0 && s < 4096) {
            atomicMax(dbg + 4 * s, (u32)(t1 - t_start));
            atomicMax(dbg + 4 * s + 1, local_levels - lv0);
            atomicMax(dbg + 4 * s + 2, fmax);
            if (local_levels != lv0) atomicAdd(dbg + 4 * s + 3, 1u);
        }
        // lam > cap: what is left pends at a later superstep.
        const bool left = lam != INF;
        for (int w = tid; w < (K + 31) / 32; w += THREADS) {
            u32 bits = mask[w];
            mask[w] = 0u;
            while (bits) {
                const int b = __ffs(bits) - 1;
                bits &= bits - 1;
                mail[(s & 1) * G + w * 32 + b] = 1u;
            }
        }
        __syncthreads();
        if (tid == 0) {
            const u32 slot = 1 + (u32)(s % 3);
            if (left || s_sent) atomicAdd(bar + slot, 1u);
            red_release(bar, 1u);
            const u32 target = (u32)(s + 1) * (u32)G;
            while (load_acquire(bar) < target) {}
            s_total = (int)__ldcg(bar + slot);
            if (r == 0) bar[1 + (u32)((s + 2) % 3)] = 0u;
        }
        __syncthreads();
        t1 = clk(); t_bar += t1 - t0; t0 = t1;
        if (s_total == 0) break;
    }
    for (int i = tid; i < size; i += THREADS) {
        level_out[base + i] = lvl[i] == INF ? -1 : (int)lvl[i];
        mail_level[base + i] = INF;
    }
    atomicAdd(stats + 1, expanded);
    if (tid == 0) atomicAdd(stats + 3, local_levels);
    if (tid == 0) {
        unsigned long long* t = (unsigned long long*)(stats + 4);
        atomicAdd(t, t_adopt); atomicAdd(t + 1, t_levels); atomicAdd(t + 2, t_bar);
        atomicAdd(t + 3, t_scan); atomicAdd(t + 4, t_expand);
    }
    if (tid == 0) {
        atomicMax(stats + 2, local_levels);
        if (r == 0) stats[0] = (u32)(s + 1);
    }
}
__device__ __forceinline__ unsigned long long now_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
#ifndef NO_FENCES
__device__ __forceinline__ void fence_gpu() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }
#else
__device__ __forceinline__ void fence_gpu() {}  // timing only: unordered
#endif
__device__ __forceinline__ u32 load_relaxed(const u32* p) {
    u32 v;
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

// The asynchronous form: no supersteps. A block polls its mail count every level and adopts
// after it changes; termination is counted in work[0] = blocks active + messages unconsumed
// (a sender adds its messages before it raises the targets' counts; a receiver trades them for
// its own activity in one atomic; a block going idle takes its 1 off). work[1]: the watchdog.
extern "C" __global__ void __launch_bounds__(THREADS, 1) regions_async(
    const u32* __restrict__ ptr, const int* __restrict__ idx, const int* __restrict__ starts_g,
    u32* mail_level, u32* count, u32* work, int* level_out, int src, int sleep_ns, u32* stats,
    unsigned long long limit_ns)
{
    extern __shared__ u32 sm[];
    u32* lvl = sm;
    u32* rp = lvl + CAP;
    int* fr = (int*)(rp + CAP + 1);
    u32* pend = (u32*)(fr + CAP);
    int* starts = (int*)(pend + CAP / 32);
    u32* mask = (u32*)(starts + K + 1);
    __shared__ int s_count[2], s_pushed[2], s_adopt, s_state;
    __shared__ u32 s_next[2];

    const int r = blockIdx.x, tid = threadIdx.x, lane = tid & 31;
    const int G = gridDim.x;
    const unsigned long long t_begin = now_ns();
    load_starts(starts_g, starts, G);
    const int base = starts[r], size = starts[r + 1] - base;
    const float inv_share = (float)G / (float)starts[G];
    load_region(ptr, lvl, rp, base, size, src);
    for (int w = tid; w < CAP / 32; w += THREADS) {
        const int i = src - base;
        pend[w] = (i >= 0 && i < size && (i >> 5) == w) ? 1u << (i & 31) : 0u;
    }
    for (int w = tid; w < (K + 31) / 32; w += THREADS) mask[w] = 0u;
    if (tid == 0) {
        for (int c = 0; c < 2; ++c) { s_count[c] = 0; s_pushed[c] = 0; s_next[c] = INF; }
        s_adopt = 0; s_state = 0;
    }
    __syncthreads();
    u32 seen = 0;  // thread 0: the mail count consumed
    u32 expanded = 0, local_levels = 0, idles = 0;
    unsigned long long t_scan = 0, t_expand = 0, t_send = 0, t_idle = 0, tc = clk();
    u32 lam = (src >= base && src < base + size) ? 0u : INF;
    for (int j = 0;; ++j) {
        const int c = j & 1;
        // Step 1: the mail count (thread 0), read now and used at the level's end.
        u32 cnt = 0;
        if (tid == 0) cnt = load_relaxed(count + r);
        // Step 2: adopt mail signalled last level (ordered after its count by a fence).
        const bool adopt = s_adopt;
        u32 l[PER], pw[PER];
        {
            u32 m[PER];
#pragma unroll
            for (int q = 0; q < PER; ++q) {
                const int i = q * THREADS + tid;
                m[q] = adopt && i < size ? __ldcg(mail_level + base + i) : INF;
                l[q] = i < size ? lvl[i] : INF;
            }
#pragma unroll
            for (int q = 0; q < PER; ++q) {
                const int i = q * THREADS + tid;
                const bool low = m[q] < l[q];
                if (low) { lvl[i] = m[q]; l[q] = m[q]; }
                const u32 bits = __ballot_sync(0xffffffffu, low);
                if (lane == 0 && bits) pend[i >> 5] |= bits;  // a warp owns its word here
            }
            __syncwarp();
#pragma unroll
            for (int q = 0; q < PER; ++q) {
                const int i = q * THREADS + tid;
                pw[q] = i < size ? pend[i >> 5] : 0u;
            }
        }
        // Step 3: this level's vertices (pending, at level lam), one shared atomic a warp.
        {
            u32 ballots[PER], m = INF;
            int total = 0;
#pragma unroll
            for (int q = 0; q < PER; ++q) {
                const bool p = (pw[q] >> lane) & 1u;
                const bool take = p && l[q] == lam;
                if (p && !take) m = min(m, l[q]);
                ballots[q] = __ballot_sync(0xffffffffu, take);
                total += __popc(ballots[q]);
            }
            int at = 0;
            if (lane == 0 && total) at = atomicAdd(&s_count[c], total);
            at = __shfl_sync(0xffffffffu, at, 0);
#pragma unroll
            for (int q = 0; q < PER; ++q) {
                const int i = q * THREADS + tid;
                if (ballots[q]) {
                    if ((ballots[q] >> lane) & 1u)
                        fr[at + __popc(ballots[q] & ((1u << lane) - 1u))] = i;
                    if (lane == 0) pend[i >> 5] = pw[q] & ~ballots[q];
                    at += __popc(ballots[q]);
                }
            }
            m = __reduce_min_sync(0xffffffffu, m);
            if (lane == 0 && m != INF) atomicMin(&s_next[c], m);
        }
        __syncthreads();
        unsigned long long tn = clk(); t_scan += tn - tc; tc = tn;
        const int f = s_count[c];
        const u32 nl = lam + 1;
        bool pushed = false;
        for (int i = tid; i < f; i += THREADS) {
            const int v = fr[i];
            const u32 a0 = rp[v], a1 = rp[v + 1];
            for (u32 a = a0; a < a1; a += ARCS) {
                int h[ARCS];
                u32 seen_l[ARCS];
#pragma unroll
                for (int q = 0; q < ARCS; ++q) h[q] = a + q < a1 ? __ldg(idx + a + q) : -1;
#pragma unroll
                for (int q = 0; q < ARCS; ++q) {
                    const int lu = h[q] - base;
                    seen_l[q] = (unsigned)lu < (unsigned)size ? lvl[lu] : INF;
                }
#pragma unroll
                for (int q = 0; q < ARCS; ++q) {
                    const int u = h[q];
                    if (u < 0) continue;
                    const int lu = u - base;
                    if ((unsigned)lu < (unsigned)size) {
                        if (seen_l[q] > nl) {
                            lvl[lu] = nl;  // every store of this level writes nl
                            atomicOr(pend + (lu >> 5), 1u << (lu & 31));
                            pushed = true;
                        }
                    } else {
                        red_min(mail_level + u, nl);
                        const int o = owner_of(u, starts, G, inv_share);
                        atomicOr(mask + (o >> 5), 1u << (o & 31));
                    }
                }
            }
        }
        if (tid == 0) {
            expanded += f;
            s_count[c ^ 1] = 0; s_pushed[c ^ 1] = 0; s_next[c ^ 1] = INF;
            // Mail that came during this level: adopt it next level, after a fence that
            // orders the count's load before the levels' loads.
            if (cnt != seen) {
                fence_gpu();
                atomicSub(work, cnt - seen);  // this block is active: work stays above 0
                seen = cnt;
                s_adopt = 1;
            } else {
                s_adopt = 0;
            }
        }
        if (tid == 0 && (j & 63) == 63 && now_ns() - t_begin > limit_ns) {
            atomicExch(work + 1, 1u);  // the watchdog: a bug, not a result
            s_state = 1;
        }
        if (pushed) s_pushed[c] = 1;
        __syncthreads();
        if (s_state) break;
        tn = clk(); t_expand += tn - tc; tc = tn;
        ++local_levels;
        // Messages of this level: counted in work before the targets' counts rise.
        if (tid == 0) {
            u32 sent = 0;
            for (int w = 0; w < (K + 31) / 32; ++w) sent += __popc(mask[w]);
            if (sent) {
                fence_gpu();
                atomicAdd(work, sent);
                fence_gpu();
                for (int w = 0; w < (K + 31) / 32; ++w) {
                    u32 bits = mask[w];
                    mask[w] = 0u;
                    while (bits) {
                        const int b = __ffs(bits) - 1;
                        bits &= bits - 1;
                        atomicAdd(count + w * 32 + b, 1u);
                    }
                }
            }
        }
        tn = clk(); t_send += tn - tc; tc = tn;
        lam = min(s_next[c], s_pushed[c] ? nl : INF);
        if (lam != INF || s_adopt) continue;
        // Idle: give back this block's 1, then wait for mail or for the end.
        __syncthreads();  // thread 0's mask loop is done before anyone's next level
        if (tid == 0) {
            ++idles;
            red_release(work, 0xffffffffu);  // -1
            for (;;) {
                const u32 now = load_acquire(count + r);
                if (now != seen) {
                    atomicAdd(work, 1u - (now - seen));
                    seen = now;
                    s_adopt = 1;
                    s_state = 0;
                    break;
                }
                if (load_acquire(work) == 0u) { s_state = 1; break; }
                if (load_relaxed(work + 1) || now_ns() - t_begin > limit_ns) {
                    atomicExch(work + 1, 1u);
                    s_state = 1;
                    break;
                }
                if (sleep_ns) __nanosleep(sleep_ns);
            }
        }
        __syncthreads();
        if (s_state) break;
        tn = clk(); t_idle += tn - tc; tc = tn;
        lam = INF;  // the adopted levels set the next one
    }
    for (int i = tid; i < size; i += THREADS) {
        level_out[base + i] = lvl[i] == INF ? -1 : (int)lvl[i];
        mail_level[base + i] = INF;
    }
    atomicAdd(stats + 1, expanded);
    if (tid == 0) {
        atomicAdd(stats + 3, local_levels);
        atomicMax(stats + 2, local_levels);
        atomicAdd(stats + 0, idles);
        unsigned long long* t = (unsigned long long*)(stats + 8);
        atomicAdd(t, t_scan); atomicAdd(t + 1, t_expand); atomicAdd(t + 2, t_send);
        atomicAdd(t + 3, t_idle);
    }
}

// The asynchronous form with queues: a level expands a queue of vertices (their own levels,
// claims by atomicMin), so no level scans the region. A pending bit guards each queue entry.
// Mail and termination as in regions_async; the last thread does both, off thread 0's work.
extern "C" __global__ void __launch_bounds__(THREADS, 1) regions_queue(
    const u32* __restrict__ ptr, const int* __restrict__ idx, const int* __restrict__ starts_g,
    u32* mail_level, u32* count, u32* work, int* level_out, int src, int sleep_ns, u32* stats,
    unsigned long long limit_ns)
{
    extern __shared__ u32 sm[];
    u32* lvl = sm;
    u32* rp = lvl + CAP;
    int* q0 = (int*)(rp + CAP + 1);
    u32* pend = (u32*)(q0 + CAP);
    int* starts = (int*)(pend + CAP / 32);
    u32* mask = (u32*)(starts + K + 1);
    int* q1 = (int*)(mask + (K + 31) / 32);
    u32* mask1 = (u32*)(q1 + CAP);  // messages of odd levels (mask: even)
    __shared__ int s_n[3], s_adopt[2], s_state;

    const int r = blockIdx.x, tid = threadIdx.x;
    const int G = gridDim.x;
    const int LAST = THREADS - 1;
    const unsigned long long t_begin = now_ns();
    load_starts(starts_g, starts, G);
    const int base = starts[r], size = starts[r + 1] - base;
    const float inv_share = (float)G / (float)starts[G];
    load_region(ptr, lvl, rp, base, size, src);
    const int mine = src - base;
    const bool has_src = mine >= 0 && mine < size;
    for (int w = tid; w < CAP / 32; w += THREADS)
        pend[w] = (has_src && (mine >> 5) == w) ? 1u << (mine & 31) : 0u;
    for (int w = tid; w < (K + 31) / 32; w += THREADS) { mask[w] = 0u; mask1[w] = 0u; }
    if (tid == 0) {
        q0[0] = mine;
        s_n[0] = has_src ? 1 : 0; s_n[1] = 0; s_n[2] = 0;
        s_adopt[0] = 0; s_adopt[1] = 0; s_state = 0;
    }
    __syncthreads();
    u32 seen = 0;  // the last thread: the mail count consumed
    u32 expanded = 0, local_levels = 0, idles = 0;
    unsigned long long t_scan = 0, t_expand = 0, t_send = 0, t_idle = 0, tc = clk();
    for (int j = 0;; ++j) {
        int* cur = (j & 1) ? q1 : q0;
        int* nxt = (j & 1) ? q0 : q1;
        int* n_cur = s_n + j % 3;
        int* n_nxt = s_n + (j + 1) % 3;
        u32* sends = (j & 1) ? mask1 : mask;  // read and cleared after this level's end
        u32 cnt = 0;
        if (tid == LAST) cnt = load_relaxed(count + r);
        if (s_adopt[j & 1]) {  // mail signalled last level: lower levels join this level's queue
            u32 m[PER];
#pragma unroll
            for (int q = 0; q < PER; ++q) {
                const int i = q * THREADS + tid;
                m[q] = i < size ? __ldcg(mail_level + base + i) : INF;
            }
#pragma unroll
            for (int q = 0; q < PER; ++q) {
                const int i = q * THREADS + tid;
                if (m[q] < INF && m[q] < lvl[i]) {
                    lvl[i] = m[q];
                    const u32 bit = 1u << (i & 31);
                    if (!(atomicOr(pend + (i >> 5), bit) & bit)) cur[atomicAdd(n_cur, 1)] = i;
                }
            }
            __syncthreads();
        }
        unsigned long long tn = clk(); t_scan += tn - tc; tc = tn;
        const int f = *n_cur;
        for (int e = tid; e < f; e += THREADS) {
            const int v = cur[e];
            atomicAnd(pend + (v >> 5), ~(1u << (v & 31)));  // dequeued before its level is read
            const u32 nl = lvl[v] + 1u;
            const u32 a0 = rp[v], a1 = rp[v + 1];
            for (u32 a = a0; a < a1; a += ARCS) {
                int h[ARCS];
                u32 seen_l[ARCS];
#pragma unroll
                for (int q = 0; q < ARCS; ++q) h[q] = a + q < a1 ? __ldg(idx + a + q) : -1;
#pragma unroll
                for (int q = 0; q < ARCS; ++q) {
                    const int lu = h[q] - base;
                    seen_l[q] = (unsigned)lu < (unsigned)size ? lvl[lu] : INF;
                }
#pragma unroll
                for (int q = 0; q < ARCS; ++q) {
                    const int u = h[q];
                    if (u < 0) continue;
                    const int lu = u - base;
                    if ((unsigned)lu < (unsigned)size) {
                        if (seen_l[q] > nl && atomicMin(lvl + lu, nl) > nl) {
                            const u32 bit = 1u << (lu & 31);
                            if (!(atomicOr(pend + (lu >> 5), bit) & bit))
                                nxt[atomicAdd(n_nxt, 1)] = lu;
                        }
                    } else {
                        red_min(mail_level + u, nl);
                        const int o = owner_of(u, starts, G, inv_share);
                        atomicOr(sends + (o >> 5), 1u << (o & 31));
                    }
                }
            }
        }
        if (tid == 0) {
            expanded += f;
            s_n[(j + 2) % 3] = 0;  // the queue after next: read by all before last level's end
        }
        if (tid == LAST) {
            if (cnt != seen) {
                fence_gpu();
                atomicSub(work, cnt - seen);  // this block is active: work stays above 0
                seen = cnt;
                s_adopt[(j + 1) & 1] = 1;
            } else {
                s_adopt[(j + 1) & 1] = 0;
            }
            if ((j & 63) == 63 && now_ns() - t_begin > limit_ns) {
                atomicExch(work + 1, 1u);  // the watchdog: a bug, not a result
                s_state = 1;
            }
        }
        __syncthreads();
        if (s_state) break;
        tn = clk(); t_expand += tn - tc; tc = tn;
        ++local_levels;
        if (tid == LAST) {  // messages of this level, counted before the targets' counts rise
            u32 sent = 0;
            for (int w = 0; w < (K + 31) / 32; ++w) sent += __popc(sends[w]);
            if (sent) {
                fence_gpu();
                atomicAdd(work, sent);
                fence_gpu();
                for (int w = 0; w < (K + 31) / 32; ++w) {
                    u32 bits = sends[w];
                    sends[w] = 0u;
                    while (bits) {
                        const int b = __ffs(bits) - 1;
                        bits &= bits - 1;
                        atomicAdd(count + w * 32 + b, 1u);
                    }
                }
            }
        }
        tn = clk(); t_send += tn - tc; tc = tn;
        if (*n_nxt != 0 || s_adopt[(j + 1) & 1]) continue;
        __syncthreads();  // the last thread's sends are done before anyone's next level
        if (tid == LAST) {
            ++idles;
            red_release(work, 0xffffffffu);  // -1
            for (;;) {
                const u32 now = load_acquire(count + r);
                if (now != seen) {
                    atomicAdd(work, 1u - (now - seen));
                    seen = now;
                    s_adopt[(j + 1) & 1] = 1;
                    s_state = 0;
                    break;
                }
                if (load_acquire(work) == 0u) { s_state = 1; break; }
                if (load_relaxed(work + 1) || now_ns() - t_begin > limit_ns) {
                    atomicExch(work + 1, 1u);
                    s_state = 1;
                    break;
                }
                if (sleep_ns) __nanosleep(sleep_ns);
            }
        }
        __syncthreads();
        if (s_state) break;
        tn = clk(); t_idle += tn - tc; tc = tn;
    }
    for (int i = tid; i < size; i += THREADS) {
        level_out[base + i] = lvl[i] == INF ? -1 : (int)lvl[i];
        mail_level[base + i] = INF;
    }
    atomicAdd(stats + 1, expanded);
    if (tid == LAST) {
        atomicAdd(stats + 3, local_levels);
        atomicMax(stats + 2, local_levels);
        atomicAdd(stats + 0, idles);
    }
    if (tid == 0) {
        unsigned long long* t = (unsigned long long*)(stats + 8);
        atomicAdd(t, t_scan); atomicAdd(t + 1, t_expand); atomicAdd(t + 2, t_send);
        atomicAdd(t + 3, t_idle);
    }
}

// The level-synchronous form: one grid barrier a level, no label correcting. A level expands
// the block's queue; a local head is claimed by atomicCAS on its shared level, a remote head
// is appended to its owner's inbox for the next level (a global atomicAdd on the inbox's
// count). After the barrier, a block claims its inbox's vertices into the new level's queue.
// Inboxes and their counts alternate between two buffers by level parity.
extern "C" __global__ void __launch_bounds__(THREADS, 1) regions_sync(
    const u32* __restrict__ ptr, const int* __restrict__ idx, const int* __restrict__ starts_g,
    int* inbox, u32* inbox_n, int incap, u32* bar, int* level_out, int src, u32* stats)
{
    extern __shared__ u32 sm[];
    u32* lvl = sm;
    u32* rp = lvl + CAP;
    int* q0 = (int*)(rp + CAP + 1);
    int* q1 = q0 + CAP;
    int* starts = q1 + CAP;
    __shared__ int s_n[3], s_sent, s_total;

    const int r = blockIdx.x, tid = threadIdx.x;
    const int G = gridDim.x;
    load_starts(starts_g, starts, G);
    const int base = starts[r], size = starts[r + 1] - base;
    const float inv_share = (float)G / (float)starts[G];
    load_region(ptr, lvl, rp, base, size, src);
    if (tid == 0) {
        const bool has_src = src >= base && src < base + size;
        q0[0] = src - base;
        s_n[0] = has_src ? 1 : 0; s_n[1] = 0; s_n[2] = 0;
        s_sent = 0;
    }
    __syncthreads();
    u32 expanded = 0, levels = 0;
    for (u32 L = 0;; ++L) {
        int* cur = (L & 1) ? q1 : q0;
        int* nxt = (L & 1) ? q0 : q1;
        int* n_cur = s_n + L % 3;
        int* n_nxt = s_n + (L + 1) % 3;
        if (L > 0) {  // the inbox: vertices of level L sent during level L - 1
            const int slot = (int)((L + 1) & 1) * G + r;
            const int nin = (int)__ldcg(inbox_n + slot);
            for (int e = tid; e < nin; e += THREADS) {
                const int lu = __ldcg(inbox + (size_t)slot * incap + e) - base;
                if (lvl[lu] == INF && atomicCAS(lvl + lu, INF, L) == INF)
                    cur[atomicAdd(n_cur, 1)] = lu;
            }
            __syncthreads();
            if (tid == 0 && nin) inbox_n[slot] = 0u;  // refilled after the next barrier
        }
        const int f = *n_cur;
        const u32 nl = L + 1;
        bool sent = false;
        const int out = (int)(L & 1) * G;
#if AGG
        // Warp-converged: a lane a vertex, the warp's arcs in rounds of ARCS; claims pushed
        // with one shared atomic a warp and round, remote heads with one global atomic per
        // owner among the warp's lanes (__match_any_sync).
        const int lane = tid & 31;
        for (int e0 = tid & ~31; e0 < f; e0 += THREADS) {
            const int e = e0 + lane;
            const bool has = e < f;
            const int v = has ? cur[e] : 0;
            const u32 a0 = has ? rp[v] : 0u, a1 = has ? rp[v + 1] : 0u;
            for (u32 k = 0;; k += ARCS) {
                if (!__any_sync(0xffffffffu, a0 + k < a1)) break;
                int h[ARCS];
#pragma unroll
                for (int q = 0; q < ARCS; ++q)
                    h[q] = a0 + k + q < a1 ? __ldg(idx + a0 + k + q) : -1;
#pragma unroll
                for (int q = 0; q < ARCS; ++q) {
                    const int u = h[q];
                    const int lu = u - base;
                    const bool local = u >= 0 && (unsigned)lu < (unsigned)size;
                    const bool claim =
                        local && lvl[lu] == INF && atomicCAS(lvl + lu, INF, nl) == INF;
                    const u32 bal = __ballot_sync(0xffffffffu, claim);
                    if (bal) {
                        int at = 0;
                        if (lane == __ffs(bal) - 1) at = atomicAdd(n_nxt, __popc(bal));
                        at = __shfl_sync(0xffffffffu, at, __ffs(bal) - 1);
                        if (claim) nxt[at + __popc(bal & ((1u << lane) - 1u))] = lu;
                    }
                    const bool remote = u >= 0 && !local;
                    int o = -1;
                    if (remote) {
                        o = owner_of(u, starts, G, inv_share);
                    }
                    const u32 peers = __match_any_sync(0xffffffffu, o);
                    if (remote) {
                        const int leader = __ffs(peers) - 1;
                        u32 pos = 0;
                        if (lane == leader)
                            pos = atomicAdd(inbox_n + out + o, (u32)__popc(peers));
                        pos = __shfl_sync(peers, pos, leader)
                            + __popc(peers & ((1u << lane) - 1u));
                        if (pos < (u32)incap) inbox[(size_t)(out + o) * incap + pos] = u;
                        else atomicExch(stats + 7, 1u);  // overflow: a sizing bug
                        sent = true;
                    }
                }
            }
        }
#else
        for (int e = tid; e < f; e += THREADS) {
            const int v = cur[e];
            const u32 a0 = rp[v], a1 = rp[v + 1];
            for (u32 a = a0; a < a1; a += ARCS) {
                int h[ARCS];
                u32 seen_l[ARCS];
#pragma unroll
                for (int q = 0; q < ARCS; ++q) h[q] = a + q < a1 ? __ldg(idx + a + q) : -1;
#pragma unroll
                for (int q = 0; q < ARCS; ++q) {
                    const int lu = h[q] - base;
                    seen_l[q] = (unsigned)lu < (unsigned)size ? lvl[lu] : 0u;
                }
#pragma unroll
                for (int q = 0; q < ARCS; ++q) {
                    const int u = h[q];
                    if (u < 0) continue;
                    const int lu = u - base;
                    if ((unsigned)lu < (unsigned)size) {
                        if (seen_l[q] == INF && atomicCAS(lvl + lu, INF, nl) == INF)
                            nxt[atomicAdd(n_nxt, 1)] = lu;
                    } else {
                        const int o = owner_of(u, starts, G, inv_share);
                        const u32 pos = atomicAdd(inbox_n + out + o, 1u);
                        if (pos < (u32)incap) inbox[(size_t)(out + o) * incap + pos] = u;
                        else atomicExch(stats + 7, 1u);  // overflow: a sizing bug
                        sent = true;
                    }
                }
            }
        }
#endif
        if (sent) s_sent = 1;
        if (tid == 0) { expanded += f; s_n[(L + 2) % 3] = 0; }
        __syncthreads();
        ++levels;
        if (tid == 0) {
            const u32 slot = 1 + L % 3;
            if (*n_nxt || s_sent) atomicAdd(bar + slot, 1u);
            s_sent = 0;
            red_release(bar, 1u);
            const u32 target = (L + 1) * (u32)G;
            while (load_acquire(bar) < target) {}
            s_total = (int)__ldcg(bar + slot);
            if (r == 0) bar[1 + (L + 2) % 3] = 0u;
        }
        __syncthreads();
        if (s_total == 0) break;
    }
    for (int i = tid; i < size; i += THREADS)
        level_out[base + i] = lvl[i] == INF ? -1 : (int)lvl[i];
    atomicAdd(stats + 1, expanded);
    if (tid == 0) { atomicMax(stats + 2, levels); atomicAdd(stats + 3, levels); }
}

"""


def bfs_order(pattern: sp.csr_matrix) -> np.ndarray:
    """A BFS-like order of every vertex of a symmetric pattern (RCM, reversed back)."""
    return reverse_cuthill_mckee(pattern, symmetric_mode=True)[::-1]


def regions(graph, k: int) -> tuple[Permutation, np.ndarray]:
    """Cut the vertices into k regions by recursive bisection of BFS orders.

    Returns the permutation that makes each region a contiguous id range (inside a region,
    its last BFS order) and the k + 1 region starts.
    """
    pattern = graph.out_csr
    if graph.directed:
        pattern = pattern + graph.in_csr
    pattern = sp.csr_matrix(pattern, dtype=np.int8)
    pattern.sort_indices()
    parts = [(np.arange(graph.n, dtype=np.int64), k)]
    done: list[np.ndarray] = []
    while parts:
        verts, kk = parts.pop()
        sub = pattern[verts][:, verts]
        order = verts[bfs_order(sub)]
        if kk == 1:
            done.append(order)
            continue
        k1 = kk // 2
        cut = int(round(order.size * k1 / kk))
        parts.append((order[cut:], kk - k1))
        parts.append((order[:cut], k1))
    # `parts` is a stack: the left half is popped first, so `done` is in left-to-right order.
    starts = np.zeros(k + 1, dtype=np.int64)
    np.cumsum([d.size for d in done], out=starts[1:])
    perm = Permutation.from_old_of_new(np.concatenate(done), "regions")
    return perm, starts


def run_sync(mod, k, cap, n, ptr, idx, starts_d, level, sources, args, g, incap) -> None:
    """Time the level-synchronous form; check levels against SciPy."""
    kernel = mod.get_function("regions_sync")
    smem = 4 * (4 * cap + 1 + k + 1)
    kernel.max_dynamic_shared_size_bytes = smem
    inbox = cp.empty(2 * k * incap, dtype=cp.int32)
    inbox_n = cp.zeros(2 * k, dtype=cp.uint32)
    bar = cp.zeros(4, dtype=cp.uint32)
    stats = cp.zeros(8, dtype=cp.uint32)
    times, depth, most = [], [], []
    for rep, src in enumerate([sources[0], *sources]):
        level.fill(-7)
        stats.fill(0)
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        bar.fill(0)
        kernel(
            (k,),
            (args.threads,),
            (ptr, idx, starts_d, inbox, inbox_n, np.int32(incap), bar, level, np.int32(src), stats),
            shared_mem=smem,
        )
        stop.record()
        stop.synchronize()
        st = stats.get()
        if st[7]:
            raise SystemExit(f"sync src {src}: an inbox overflowed")
        if rep == 0:
            continue
        times.append(cp.cuda.get_elapsed_time(start, stop))
        got = level.get()
        depth.append(int(got.max()))
        most.append(int(st[2]))
        if rep <= args.check:
            check_levels(g, src, got, "sync")
    print(
        f"  level-synchronous: mean {np.mean(times):.3f} ms, median {np.median(times):.3f}, "
        f"min {np.min(times):.3f}; depth {np.mean(depth):.1f}, levels run {np.mean(most):.1f};"
        f" {1e3 * np.mean(times) / (np.mean(most)):.2f} us a level; "
        f"{min(args.check, len(times))} checked",
        flush=True,
    )


def run_async(mod, smem, k, n, ptr, idx, starts_d, level, sources, args, g) -> None:
    """Time the asynchronous form at each idle back-off; check levels against SciPy."""
    kernel = mod.get_function("regions_queue" if args.queue else "regions_async")
    kernel.max_dynamic_shared_size_bytes = smem
    mail_level = cp.full(n, 0xFFFFFFFF, dtype=cp.uint32)
    count = cp.zeros(k, dtype=cp.uint32)
    work = cp.zeros(2, dtype=cp.uint32)
    work_init = cp.asarray(np.array([k, 0], dtype=np.uint32))
    stats = cp.zeros(16, dtype=cp.uint32)
    khz = cp.cuda.Device().attributes["ClockRate"]
    limit_ns = np.uint64(200_000_000)
    for sleep in (int(x) for x in args.async_sleep.split(",")):
        times, work_f, depth, total, most, idles, phases = [], [], [], [], [], [], []
        for rep, src in enumerate([sources[0], *sources]):
            level.fill(-7)
            stats.fill(0)
            start, stop = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            count.fill(0)
            work[...] = work_init
            kernel(
                (k,),
                (args.threads,),
                (
                    ptr,
                    idx,
                    starts_d,
                    mail_level,
                    count,
                    work,
                    level,
                    np.int32(src),
                    np.int32(sleep),
                    stats,
                    limit_ns,
                ),
                shared_mem=smem,
            )
            stop.record()
            stop.synchronize()
            if int(work[1].get()):
                raise SystemExit(f"async sleep {sleep} src {src}: the watchdog ended it")
            if rep == 0:
                continue
            times.append(cp.cuda.get_elapsed_time(start, stop))
            st = stats.get()
            got = level.get()
            work_f.append(int(st[1]) / max(int((got >= 0).sum()), 1))
            total.append(int(st[3]) / k)
            most.append(int(st[2]))
            idles.append(int(st[0]))
            phases.append(st[8:16].view(np.uint64) / khz * 1e3 / max(int(st[3]), 1))
            depth.append(int(got.max()))
            if rep <= args.check:
                check_levels(g, src, got, f"async sleep {sleep}")
        print(
            f"  async, idle back-off {sleep} ns: mean {np.mean(times):.3f} ms, median "
            f"{np.median(times):.3f}, min {np.min(times):.3f}; depth {np.mean(depth):.1f}; "
            f"local levels a block {np.mean(total):.1f} (most {np.mean(most):.1f}); idle "
            f"periods {np.mean(idles):.0f}; expansions per vertex {np.mean(work_f):.3f}; "
            f"{1e3 * np.mean(times) / (np.mean(depth) + 1):.2f} us a level; "
            f"{min(args.check, len(times))} checked; us a local level in scans, expansions, "
            f"sends, idle: {' / '.join(f'{x:.2f}' for x in np.mean(phases, axis=0))}",
            flush=True,
        )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("graphs", help="comma-separated anchor names")
    p.add_argument("--sources", type=int, default=16)
    p.add_argument("--check", type=int, default=4, help="sources checked against SciPy")
    p.add_argument("--threads", type=int, default=1024)
    p.add_argument("--regions", type=int, default=0, help="0: one a streaming multiprocessor")
    p.add_argument("--window", default="8", help="comma-separated D values")
    p.add_argument("--arcs", type=int, default=8, help="heads loaded together")
    p.add_argument("--scan-bits", action="store_true", help="the first version's level scan")
    p.add_argument("--repeat", type=int, default=1, help="runs of each source, back to back")
    p.add_argument("--trace", type=int, default=0, help="1: superstep percentiles, 2: all")
    p.add_argument("--queue", action="store_true", help="async: the queue form")
    p.add_argument("--sync", action="store_true", help="the level-synchronous form")
    p.add_argument("--agg", action="store_true", help="sync: warp-aggregated pushes")
    p.add_argument("--no-fences", action="store_true", help="async timing only: unordered")
    p.add_argument(
        "--async-sleep",
        default=None,
        help="comma-separated idle back-offs in ns: run the asynchronous form instead",
    )
    args = p.parse_args()
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    k = args.regions or sms
    for name in args.graphs.split(","):
        graph = anchor_graph(name)
        t0 = time.perf_counter()
        perm, starts = regions(graph, k)
        t_part = time.perf_counter() - t0
        g = permute_graph(graph, perm)
        n = g.n
        sizes = np.diff(starts)
        cap = int(-(-sizes.max() // 32) * 32)
        kw = -(-k // 32) * 32
        smem = 4 * (
            3 * cap + 1 + cap // 32 + k + 1 + kw // 32 + ((cap + kw // 32) if args.queue else 0)
        )
        per = -(-cap // args.threads)
        code = (
            f"#define THREADS {args.threads}\n#define CAP {cap}\n#define K {k}\n"
            f"#define PER {per}\n#define ARCS {args.arcs}\n"
            f"#define SCAN_BITS {int(args.scan_bits)}\n#define AGG {int(args.agg)}\n"
            + ("#define NO_FENCES 1\n" if args.no_fences else "")
            + SOURCE
        )
        mod = cp.RawModule(code=code, options=("-std=c++17", "-arch=sm_90"))
        kernel = mod.get_function("regions_bfs")
        kernel.max_dynamic_shared_size_bytes = smem
        ptr = cp.asarray(g.out_ptr.astype(np.uint32))
        idx = cp.asarray(g.out_idx.astype(np.int32))
        starts_d = cp.asarray(starts.astype(np.int32))
        mail_level = cp.full(n, 0xFFFFFFFF, dtype=cp.uint32)
        mail = cp.zeros(2 * k, dtype=cp.uint32)
        bar = cp.zeros(4, dtype=cp.uint32)
        level = cp.empty(n, dtype=cp.int32)
        stats = cp.zeros(14, dtype=cp.uint32)
        dbg = cp.zeros(4 * 4096, dtype=cp.uint32)
        khz = cp.cuda.Device().attributes["ClockRate"]
        sources = perm.new_of_old[timing_sources(graph, args.sources)]
        arcs = int(g.out_idx.size)
        rows = np.repeat(np.arange(n), np.diff(g.out_ptr))
        owner = np.searchsorted(starts, np.arange(n), side="right") - 1
        remote = int((owner[rows] != owner[g.out_idx]).sum())
        print(
            f"{name}: n {n}, arcs {arcs}, {k} regions of {sizes.min()}-{sizes.max()} vertices, "
            f"{remote / max(arcs, 1):.3f} of arcs cross; partition {t_part:.1f} s; "
            f"{kernel.num_regs} registers, {smem} B shared",
            flush=True,
        )
        if args.sync:
            incap = (
                int(
                    np.bincount(
                        owner[g.out_idx][owner[rows] != owner[g.out_idx]], minlength=k
                    ).max()
                )
                + 32
            )
            run_sync(mod, k, cap, n, ptr, idx, starts_d, level, sources, args, g, incap)
            continue
        if args.async_sleep is not None:
            run_async(mod, smem, k, n, ptr, idx, starts_d, level, sources, args, g)
            continue
        for window in (int(w) for w in args.window.split(",")):
            times, supers, work, depth, locs, parts, per_level = [], [], [], [], [], [], []
            runs = [sources[0]] + [x for x in sources for _ in range(args.repeat)]
            for rep, src in enumerate(runs):
                level.fill(-7)
                stats.fill(0)
                dbg.fill(0)
                start, stop = cp.cuda.Event(), cp.cuda.Event()
                start.record()
                bar.fill(0)
                kernel(
                    (k,),
                    (args.threads,),
                    (
                        ptr,
                        idx,
                        starts_d,
                        mail_level,
                        mail,
                        bar,
                        level,
                        np.int32(src),
                        np.int32(window),
                        stats,
                        dbg,
                    ),
                    shared_mem=smem,
                )
                stop.record()
                stop.synchronize()
                if rep == 0:
                    continue
                times.append(cp.cuda.get_elapsed_time(start, stop))
                st = stats.get()
                got = level.get()
                reached = int((got >= 0).sum())
                supers.append(int(st[0]))
                work.append(int(st[1]) / max(reached, 1))
                locs.append(int(st[2]))
                per_level.append(
                    (st[4:14].view(np.uint64)[3:5].sum() / khz * 1e3) / max(int(st[3]), 1)
                )
                parts.append(st[4:14].view(np.uint64) / khz * 1e3 / k / max(int(st[0]), 1))
                depth.append(int(got.max()))
                if rep == 1 and args.trace:
                    tr = dbg.get().reshape(-1, 4)[: int(st[0])]
                    us = tr[:, 0] / khz * 1e3
                    for q in (10, 50, 90, 99, 100):
                        print(
                            f"    p{q}: superstep's slowest block {np.percentile(us, q):.2f} us,"
                            f" levels {np.percentile(tr[:, 1], q):.0f}, widest local level "
                            f"{np.percentile(tr[:, 2], q):.0f}, blocks with levels "
                            f"{np.percentile(tr[:, 3], q):.0f}"
                        )
                    if args.trace > 1:
                        for row, u in zip(tr, us, strict=True):
                            print(f"    {u:8.2f} {row[1]:4d} {row[2]:5d} {row[3]:4d}")
                if rep <= args.check:
                    check_levels(g, src, got, f"{name} D {window}")
            print(
                f"  D {window:3d}: mean {np.mean(times):.3f} ms, median {np.median(times):.3f},"
                f" min {np.min(times):.3f}; depth {np.mean(depth):.1f}, supersteps "
                f"{np.mean(supers):.1f}, most local levels of a block {np.mean(locs):.1f}, "
                f"expansions per vertex {np.mean(work):.3f}; "
                f"{1e3 * np.mean(times) / (np.mean(depth) + 1):.2f} us a level; "
                f"{min(args.check, len(times))} checked; a local level "
                f"{np.mean(per_level):.2f} us; last run of each source "
                f"{np.mean(times[args.repeat - 1 :: args.repeat]):.3f} ms; us a block and "
                f"superstep in adoption, levels, barrier, scans, expansions: "
                f"{' / '.join(f'{x:.2f}' for x in np.mean(parts, axis=0))}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
