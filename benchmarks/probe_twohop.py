"""Two BFS levels per grid barrier on symmetric graphs. A prototype, not adopted.

    python3 benchmarks/probe_twohop.py delaunay-20,luxembourg_osm --hops 1,2

The question: a delaunay-20 level on the grid costs ~4 us, of which ~1.55 us is the grid
barrier and the level's fixed pieces (benchmarks/NOTES.md, session 26). Can a phase settle two
levels between two barriers, so that the fixed pieces are paid once for two levels?

The rule. Let the levels <= L be final and F_L the vertices at level L. In an undirected
graph a vertex w reached from v in F_{L+1} is at level L + 2 exactly when w is unvisited at
the start of the phase and has no neighbour in F_L (else it is at level L + 1, or below).
Both facts are readable during the phase: the levels <= L do not change in it. So a phase:

1. expands F_L (a queue of vertex ids) and claims each unvisited head v at L + 1
   (``atomicCAS`` on its level);
2. right away, without a barrier, walks the out-arcs of every v it claimed. A head w still
   unvisited is a candidate; the candidate's own arcs are read, and if none leads to a vertex
   at level L, w is claimed at L + 2 (``atomicCAS``, so one claimer) and queued.

The candidates that are at L + 1 are found (a neighbour at L) and left to the claims of step 1.
Every vertex at L + 2 has a neighbour in F_{L+1}, and every vertex of F_{L+1} is expanded in
step 2 by its claimer, so the queue holds all of F_{L+2} at the barrier. The next phase starts
from it. Levels are read through L2 (``ld.global.cg``): L1 is not coherent across the grid.

``--hops 1`` runs the same kernel one level a phase (F_{L+1} queued, no step 2), as the
baseline of the same code. Each warp takes 32 queue entries, one a lane; the vertices a warp
claims in step 1 and its candidates are listed in the warp's shared memory and handed out one a
lane; a full list falls back to the claiming lane. Pushes are gathered by warp. One block per
SM, a grid barrier of one count (release add, acquire polls). Timed between two events: the
levels' fill, the counters' reset and the kernel. Checked against SciPy.
"""

from __future__ import annotations

import argparse

import cupy as cp
import numpy as np
from graphs import anchor_graph, check_levels

from blest.graph.ordering import compute_ordering, permute_graph
from blest.tuning.protocol import timing_sources

SOURCE = r"""
#define WARPS (THREADS / 32)
#define FULL 0xffffffffu
typedef unsigned int u32;

__device__ __forceinline__ void red_release(u32* p, u32 v) {
    asm volatile("red.release.gpu.global.add.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ u32 load_acquire(const u32* p) {
    u32 v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

// Append x to the warp's list (count cnt, capacity cap); false when the list is full.
__device__ __forceinline__ bool list_add(int* list, int* cnt, int cap, int x) {
    const int at = atomicAdd(cnt, 1);
    if (at < cap) { list[at] = x; return true; }
    return false;
}

// Queue the lanes' x where ok, with one atomic a warp (every lane of the warp calls this).
__device__ __forceinline__ void push_warp(int* q, u32* tail, bool ok, int x, int lane) {
    const u32 m = __ballot_sync(FULL, ok);
    if (!m) return;
    u32 base = 0;
    if (lane == __ffs(m) - 1) base = atomicAdd(tail, __popc(m));
    base = __shfl_sync(FULL, base, __ffs(m) - 1);
    if (ok) q[base + __popc(m & ((1u << lane) - 1))] = x;
}

// Claim the unvisited heads of u at level `to`; each claimed head goes to `list` (or, when
// it is full, to `spill`: the caller's own handling).
template <typename F>
__device__ __forceinline__ void claim_heads(const u32* __restrict__ ptr,
                                            const int* __restrict__ idx, int* lev, int u,
                                            int to, F&& claimed) {
    const int beg = (int)__ldg(ptr + u), end = (int)__ldg(ptr + u + 1);
    for (int e0 = beg; e0 < end; e0 += ARCS) {
        int h[ARCS], l[ARCS];
#pragma unroll
        for (int k = 0; k < ARCS; ++k) h[k] = e0 + k < end ? __ldg(idx + e0 + k) : -1;
#pragma unroll
        for (int k = 0; k < ARCS; ++k) l[k] = h[k] >= 0 ? __ldcg(lev + h[k]) : 0;
#pragma unroll
        for (int k = 0; k < ARCS; ++k)
            if (h[k] >= 0 && l[k] == -1 && atomicCAS(lev + h[k], -1, to) == -1) claimed(h[k]);
    }
}

// True when w has a neighbour at level L (w is then at L + 1 or lower).
__device__ __forceinline__ bool near_level(const u32* __restrict__ ptr,
                                           const int* __restrict__ idx, const int* lev, int w,
                                           int L) {
    const int beg = (int)__ldg(ptr + w), end = (int)__ldg(ptr + w + 1);
    for (int e0 = beg; e0 < end; e0 += ARCS) {
        int h[ARCS];
#pragma unroll
        for (int k = 0; k < ARCS; ++k) h[k] = e0 + k < end ? __ldg(idx + e0 + k) : -1;
        bool hit = false;
#pragma unroll
        for (int k = 0; k < ARCS; ++k) hit |= h[k] >= 0 && __ldcg(lev + h[k]) == L;
        if (hit) return true;
    }
    return false;
}

// Candidate w claimed at level L + 2 when it has no neighbour at level L (the rule above);
// true when this thread's claim won.
__device__ __forceinline__ bool claim_far(const u32* __restrict__ ptr,
                                          const int* __restrict__ idx, int* lev, int w, int L) {
    return !near_level(ptr, idx, lev, w, L) && atomicCAS(lev + w, -1, L + 2) == -1;
}

// Candidates of v: its heads still unvisited (read through L2), each handed to `cand`.
template <typename F>
__device__ __forceinline__ void candidates(const u32* __restrict__ ptr,
                                           const int* __restrict__ idx, const int* lev, int v,
                                           F&& cand) {
    const int beg = (int)__ldg(ptr + v), end = (int)__ldg(ptr + v + 1);
    for (int e0 = beg; e0 < end; e0 += ARCS) {
        int h[ARCS], l[ARCS];
#pragma unroll
        for (int k = 0; k < ARCS; ++k) h[k] = e0 + k < end ? __ldg(idx + e0 + k) : -1;
#pragma unroll
        for (int k = 0; k < ARCS; ++k) l[k] = h[k] >= 0 ? __ldcg(lev + h[k]) : 0;
#pragma unroll
        for (int k = 0; k < ARCS; ++k)
            if (h[k] >= 0 && l[k] == -1) cand(h[k]);
    }
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
twohop_bfs(const u32* __restrict__ ptr, const int* __restrict__ idx, int* lev, int* queue,
           u32* tails, u32* bar, int n, int hops, int spread, u32* stats) {
    extern __shared__ int smem[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, G = gridDim.x;
    int* listA = smem + warp * (CAP_A + CAP_B);
    int* listB = listA + CAP_A;
    __shared__ int cntA[WARPS], cntB[WARPS];
    // Queue chunk c goes to warp c / G of block c % G (spread) or to global warp c.
    const int gw = spread ? warp * G + blockIdx.x : blockIdx.x * WARPS + warp;
    const int TW = G * WARPS;
    int* cur = queue;
    int* nxt = queue + n;
    int ncur = 1, L = 0, phase = 0;
    u32 checks = 0;
    for (;;) {
        u32* tail = tails + phase;
        for (int c = gw; c * 32 < ncur; c += TW) {
            const int i = c * 32 + lane;
            const int u = i < ncur ? __ldcg(cur + i) : -1;
            if (lane == 0) { cntA[warp] = 0; cntB[warp] = 0; }
            __syncwarp();
            // Step 1: claim F_{L+1}.
            if (u >= 0) {
                claim_heads(ptr, idx, lev, u, L + 1, [&](int v) {
                    if (!list_add(listA, cntA + warp, CAP_A, v)) {
                        if (hops == 1) {
                            nxt[atomicAdd(tail, 1u)] = v;
                        } else {
                            candidates(ptr, idx, lev, v, [&](int w) {
                                ++checks;
                                if (claim_far(ptr, idx, lev, w, L)) nxt[atomicAdd(tail, 1u)] = w;
                            });
                        }
                    }
                });
            }
            __syncwarp();
            const int nA = min(cntA[warp], CAP_A);
            if (hops == 1) {
                for (int j0 = 0; j0 < nA; j0 += 32) {
                    const int j = j0 + lane;
                    push_warp(nxt, tail, j < nA, j < nA ? listA[j] : 0, lane);
                }
                continue;
            }
            // Step 2: the candidates of the claimed vertices, one claimed vertex a lane.
            for (int j = lane; j < nA; j += 32) {
                candidates(ptr, idx, lev, listA[j], [&](int w) {
                    if (!list_add(listB, cntB + warp, CAP_B, w)) {
                        ++checks;
                        if (claim_far(ptr, idx, lev, w, L)) nxt[atomicAdd(tail, 1u)] = w;
                    }
                });
            }
            __syncwarp();
            const int nB = min(cntB[warp], CAP_B);
            // Their checks, one candidate a lane; the claims at L + 2 queued by warp.
            for (int j0 = 0; j0 < nB; j0 += 32) {
                const int j = j0 + lane;
                int w = j < nB ? listB[j] : -1;
                bool ok = false;
                if (w >= 0 && __ldcg(lev + w) == -1) {
                    ++checks;
                    ok = claim_far(ptr, idx, lev, w, L);
                }
                push_warp(nxt, tail, ok, w, lane);
            }
        }
        // The grid barrier: one count, released by every block, polled by each block's thread 0.
        __syncthreads();
        if (threadIdx.x == 0) {
            const u32 target = (u32)(phase + 1) * (u32)G;
            red_release(bar, 1u);
            while (load_acquire(bar) < target) {}
        }
        __syncthreads();
        ncur = (int)__ldcg(tails + phase);
        ++phase;
        L += hops;
        if (ncur == 0) break;
        int* t = cur; cur = nxt; nxt = t;
    }
    if (stats) {
        atomicAdd(stats + 1, checks);
        if (blockIdx.x == 0 && threadIdx.x == 0) stats[0] = phase;
    }
}
"""


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("graphs", help="comma-separated anchor names")
    p.add_argument("--hops", default="1,2", help="comma-separated levels a phase (1 or 2)")
    p.add_argument("--sources", type=int, default=16)
    p.add_argument("--check", type=int, default=4, help="sources checked against SciPy")
    p.add_argument("--threads", type=int, default=1024)
    p.add_argument("--arcs", type=int, default=8, help="out-arcs loaded together")
    p.add_argument("--spread", type=int, default=1, help="1: queue chunks spread over SMs")
    p.add_argument("--ordering", default="rcm")
    args = p.parse_args()
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    cap_a, cap_b = 128, 256
    code = (
        f"#define THREADS {args.threads}\n#define ARCS {args.arcs}\n"
        f"#define CAP_A {cap_a}\n#define CAP_B {cap_b}\n" + SOURCE
    )
    mod = cp.RawModule(code=code, options=("-std=c++17", "-arch=sm_90"))
    kernel = mod.get_function("twohop_bfs")
    smem = 4 * (args.threads // 32) * (cap_a + cap_b)
    kernel.max_dynamic_shared_size_bytes = smem
    for name in args.graphs.split(","):
        graph = anchor_graph(name)
        if graph.directed:
            raise SystemExit(f"{name}: the two-level rule needs an undirected graph")
        perm = compute_ordering(graph, args.ordering) if args.ordering != "natural" else None
        g = permute_graph(graph, perm) if perm is not None else graph
        n = g.n
        ptr = cp.asarray(g.out_ptr.astype(np.uint32))
        idx = cp.asarray(g.out_idx.astype(np.int32))
        lev = cp.empty(n, dtype=cp.int32)
        queue = cp.empty(2 * n, dtype=cp.int32)
        tails = cp.zeros(n + 2, dtype=cp.uint32)
        bar = cp.zeros(1, dtype=cp.uint32)
        stats = cp.zeros(2, dtype=cp.uint32)
        src_old = timing_sources(graph, args.sources)
        sources = perm.new_of_old[src_old] if perm is not None else src_old
        print(
            f"{name}: n {n}, arcs {g.out_idx.size}, ordering {args.ordering}; "
            f"{kernel.num_regs} registers, {smem} B shared, {sms} blocks of {args.threads}",
            flush=True,
        )
        for hops in (int(h) for h in args.hops.split(",")):
            times, phases, checks, depth = [], [], [], []
            for rep, src in enumerate([sources[0], *sources]):
                stats.fill(0)
                start, stop = cp.cuda.Event(), cp.cuda.Event()
                start.record()
                lev.fill(-1)
                lev[int(src)] = 0
                queue[0] = int(src)
                tails.fill(0)
                bar.fill(0)
                kernel(
                    (sms,),
                    (args.threads,),
                    (
                        ptr,
                        idx,
                        lev,
                        queue,
                        tails,
                        bar,
                        np.int32(n),
                        np.int32(hops),
                        np.int32(args.spread),
                        stats,
                    ),
                    shared_mem=smem,
                )
                stop.record()
                stop.synchronize()
                if rep == 0:
                    continue
                times.append(cp.cuda.get_elapsed_time(start, stop))
                st = stats.get()
                got = lev.get().astype(np.int64)
                phases.append(int(st[0]))
                checks.append(int(st[1]) / n)
                depth.append(int(got.max()))
                if rep <= args.check:
                    check_levels(g, src, got, f"{name} hops {hops}")
            print(
                f"  hops {hops}: mean {np.mean(times):.3f} ms, median {np.median(times):.3f}, "
                f"min {np.min(times):.3f}; depth {np.mean(depth):.1f}, phases "
                f"{np.mean(phases):.1f}, {1e3 * np.mean(times) / np.mean(phases):.2f} us a phase, "
                f"candidate checks a vertex {np.mean(checks):.2f}; "
                f"{min(args.check, len(times))} checked",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
