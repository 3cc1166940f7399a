"""Region-local BFS: each block owns a compact region of the graph and runs its levels in
shared memory, with a grid barrier only every few levels. A prototype, not adopted.

    python3 benchmarks/probe_regions.py delaunay-20,luxembourg_osm --window=2,4,-4,-8

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

Levels are only ever set along real paths and every lowered vertex is expanded again, so they
converge to the BFS levels (label correcting). Timed between two events: the barrier's reset
and the kernel, which also writes the levels out and resets its region's ``mail_level`` for
the next call. Checked against SciPy. ``--trace`` prints each superstep's slowest block;
block times are clock64 at the rated clock.

Session 27 on an H100 (benchmarks/NOTES.md): delaunay-20 3.16 ms at best (D = -4) against
1.73 ms for the grid's s32_eager_vss_pers. A superstep waits for its slowest block, which
runs 2-3x D levels to catch up with mail a superstep late, at ~2.9 us a level (a region's
frontier of ~200 vertices; 1.1 us on luxembourg_osm's few). Not adopted.
"""

from __future__ import annotations

import argparse
import time

import cupy as cp
import numpy as np
import scipy.sparse as sp
from graphs import anchor_graph
from scipy.sparse.csgraph import reverse_cuthill_mckee, shortest_path

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
    for (int i = tid; i <= G; i += THREADS) starts[i] = starts_g[i];
    __syncthreads();
    const int base = starts[r], size = starts[r + 1] - base;
    const int words = (size + 31) >> 5;
    const float inv_share = (float)G / (float)starts[G];
    {
        u32 p[PER];
#pragma unroll
        for (int q = 0; q < PER; ++q) {
            const int i = tid + q * THREADS;
            p[q] = i < size ? ptr[base + i] : 0u;
        }
#pragma unroll
        for (int q = 0; q < PER; ++q) {
            const int i = tid + q * THREADS;
            if (i < size) { lvl[i] = (base + i == src) ? 0u : INF; rp[i] = p[q]; }
        }
    }
    if (tid == 0) rp[size] = ptr[base + size];
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
                            int o = min((int)((float)u * inv_share), G - 1);
                            while (starts[o] > u) --o;
                            while (starts[o + 1] <= u) ++o;
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
        smem = 4 * (3 * cap + 1 + cap // 32 + k + 1 + kw // 32)
        per = -(-cap // args.threads)
        code = (
            f"#define THREADS {args.threads}\n#define CAP {cap}\n#define K {k}\n"
            f"#define PER {per}\n#define ARCS {args.arcs}\n"
            f"#define SCAN_BITS {int(args.scan_bits)}\n" + SOURCE
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
        cut = int(g.out_idx.size)
        rows = np.repeat(np.arange(n), np.diff(g.out_ptr))
        owner = np.searchsorted(starts, np.arange(n), side="right") - 1
        remote = int((owner[rows] != owner[g.out_idx]).sum())
        print(
            f"{name}: n {n}, arcs {cut}, {k} regions of {sizes.min()}-{sizes.max()} vertices, "
            f"{remote / max(cut, 1):.3f} of arcs cross; partition {t_part:.1f} s; "
            f"{kernel.num_regs} registers, {smem} B shared",
            flush=True,
        )
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
                    d = shortest_path(g.out_csr, unweighted=True, indices=int(src))
                    want = np.where(np.isinf(d), -1, d).astype(np.int64)
                    if not np.array_equal(got, want):
                        bad = np.flatnonzero(got != want)
                        raise SystemExit(
                            f"{name} D {window} src {src}: {bad.size} levels differ, e.g. "
                            f"vertex {bad[0]}: {got[bad[0]]} against {want[bad[0]]}"
                        )
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
