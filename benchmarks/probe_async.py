"""A barrier-free, label-correcting BFS prototype against the level-synchronous picks.

    python3 benchmarks/probe_async.py delaunay-20,luxembourg_osm --sources 16 --sleep 0,64

The question: on deep graphs (hundreds of levels), is a level's grid barrier plus the wait for
its slowest warp what sets the time, so that a kernel without levels would be shorter?

The kernel (one launch, every warp of a persistent grid): a FIFO of (level, vertex) entries in
global memory. A warp reserves 32 consecutive slots (one per lane, an atomicAdd on ``head``)
and each lane waits for its slot to be written. A lane that holds (l, u) with level[u] == l
relaxes u's out-arcs: atomicMin(level[w], l + 1), and the lanes whose atomicMin lowered a level
append (l + 1, w), one atomicAdd on ``tail`` per warp and chunk of arcs. A processed entry adds
to ``done``; the traversal is over when done == tail (read in that order: done <= tail at
every moment, and only a processed entry pushes). Final levels are the BFS distances: a level
only falls, every fall is pushed and relaxed, and every finite level is a path's length. A
consumer clears its slot, so the next call finds the queue empty. The queue holds
``capacity x n`` entries; a call that would overflow it says so (and its levels are void).

Timed: a small init kernel (levels = -1 as "infinite", the counters, the source's entry) and
the traversal, between two events, means over the sources, every level checked against SciPy
in the same ids. Printed beside: the work factor (entries pushed / vertices reached).

Session 20 on an H100 (benchmarks/NOTES.md): luxembourg_osm 4.3-5.6 ms against 1.5 for the block
launch; delaunay-20 overflowed a queue of 4n entries. Not adopted.
"""

from __future__ import annotations

import argparse

import cupy as cp
import numpy as np
from graphs import anchor_graph, check_levels

from blest.graph.ordering import compute_ordering, permute_graph
from blest.tuning.protocol import timing_sources

SOURCE = r"""
typedef unsigned long long u64;
#define EMPTY 0xFFFFFFFFFFFFFFFFull
#define CHUNK 4
#define TAIL 0
#define HEAD 1
#define DONE 2
#define OVERFLOW 3
#define FINISHED 4

__device__ __forceinline__ u64 load_slot(const u64* p) {
    u64 v;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ u64 load_acquire(const u64* p) {
    u64 v;
    asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ u64 now_ns() {
    u64 t;
    asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
    return t;
}
__device__ __forceinline__ void store_slot(u64* p, u64 v) {
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" :: "l"(p), "l"(v) : "memory");
}

extern "C" __global__ void async_init(int* level, int n, u64* ctl, u64* queue, int src) {
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long v = t; v < n; v += stride) level[v] = v == src ? 0 : 0x7fffffff;
    if (t == 0) {
        ctl[TAIL] = 1; ctl[HEAD] = 0; ctl[DONE] = 0; ctl[OVERFLOW] = 0; ctl[FINISHED] = 0;
        queue[0] = (u64)(unsigned)src;
    }
}

extern "C" __global__ void __launch_bounds__(1024) async_bfs(
    const long long* __restrict__ ptr, const int* __restrict__ idx, int* level,
    u64* queue, long long cap, u64* ctl, int sleep_ns, long long watchdog_ns) {
    const int lane = threadIdx.x & 31;
    const u64 start = now_ns();
    u64 slot = 0;
    if (lane == 0) slot = atomicAdd(ctl + HEAD, 32ull);
    slot = __shfl_sync(0xffffffffu, slot, 0) + lane;
    bool have = true;
    while (true) {
        u64 e = EMPTY;
        if (have && slot < (u64)cap) e = load_slot(queue + slot);
        const bool ready = have && e != EMPTY;
        const unsigned rmask = __ballot_sync(0xffffffffu, ready);
        if (rmask == 0u) {
            int over = 0;
            if (lane == 0) {
                over = load_slot(ctl + FINISHED) != 0ull;
                if (!over && now_ns() - start > (u64)watchdog_ns) {
                    ctl[OVERFLOW] = 2;
                    over = 1;
                }
            }
            if (__shfl_sync(0xffffffffu, over, 0)) break;
            if (sleep_ns) __nanosleep(sleep_ns);
            continue;
        }
        int u = -1, lu = 0;
        long long e0 = 0, e1 = 0;
        if (ready) {
            store_slot(queue + slot, EMPTY);
            have = false;
            u = (int)(unsigned)(e & 0xffffffffull);
            lu = (int)(e >> 32);
            e0 = __ldg(ptr + u);
            e1 = __ldg(ptr + u + 1);
            const int cur = __ldcg(level + u);
            if (cur < lu) e1 = e0;  // a lower level for u was pushed after this entry
        }
        const int deg = (int)(e1 - e0);
        const int steps = __reduce_max_sync(0xffffffffu, deg);
        for (int s0 = 0; s0 < steps; s0 += CHUNK) {
            int w[CHUNK];
#pragma unroll
            for (int k = 0; k < CHUNK; ++k) w[k] = s0 + k < deg ? __ldg(idx + e0 + s0 + k) : -1;
            int old[CHUNK];
#pragma unroll
            for (int k = 0; k < CHUNK; ++k)
                old[k] = w[k] >= 0 ? atomicMin(level + w[k], lu + 1) : 0;
            int mine = 0;
#pragma unroll
            for (int k = 0; k < CHUNK; ++k) mine += w[k] >= 0 && old[k] > lu + 1;
            int before = mine;
#pragma unroll
            for (int off = 1; off < 32; off <<= 1) {
                const int x = __shfl_up_sync(0xffffffffu, before, off);
                if (lane >= off) before += x;
            }
            const int total = __shfl_sync(0xffffffffu, before, 31);
            if (total == 0) continue;
            u64 base = 0;
            if (lane == 31) base = atomicAdd(ctl + TAIL, (u64)total);
            base = __shfl_sync(0xffffffffu, base, 31);
            u64 at = base + (u64)(before - mine);
#pragma unroll
            for (int k = 0; k < CHUNK; ++k) {
                if (w[k] >= 0 && old[k] > lu + 1) {
                    const u64 entry = ((u64)(unsigned)(lu + 1) << 32) | (unsigned)w[k];
                    if (at < (u64)cap) store_slot(queue + at, entry);
                    else ctl[OVERFLOW] = 1;
                    ++at;
                }
            }
        }
        __syncwarp();
        if (lane == 0) {
            // The last entry to be counted ends the traversal: done == tail then, and only a
            // processed entry pushes, each before it is counted.
            __threadfence();
            const u64 counted = atomicAdd(ctl + DONE, (u64)__popc(rmask)) + __popc(rmask);
            __threadfence();
            if (counted == load_acquire(ctl + TAIL)) store_slot(ctl + FINISHED, 1ull);
        }
        if (__ballot_sync(0xffffffffu, have) == 0u) {
            if (lane == 0) slot = atomicAdd(ctl + HEAD, 32ull);
            slot = __shfl_sync(0xffffffffu, slot, 0) + lane;
            have = true;
        }
    }
}
"""


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("graphs", help="comma-separated anchor names")
    p.add_argument("--sources", type=int, default=16)
    p.add_argument("--check", type=int, default=4, help="sources checked against SciPy")
    p.add_argument("--sleep", default="0", help="comma-separated __nanosleep ns when idle")
    p.add_argument("--threads", type=int, default=1024)
    p.add_argument("--per-sm", type=int, default=1)
    p.add_argument("--capacity", type=float, default=4.0)
    p.add_argument("--ordering", default="rcm")
    args = p.parse_args()
    mod = cp.RawModule(code=SOURCE, options=("-std=c++17", "-arch=sm_90"))
    init, kernel = mod.get_function("async_init"), mod.get_function("async_bfs")
    watchdog = np.int64(200_000_000)  # ns: a kernel that has not finished by then gives up
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    blocks = sms * args.per_sm
    for name in args.graphs.split(","):
        graph = anchor_graph(name)
        perm = compute_ordering(graph, args.ordering)
        g = permute_graph(graph, perm)
        ptr, idx = cp.asarray(g.out_ptr.astype(np.int64)), cp.asarray(g.out_idx)
        level = cp.empty(g.n, dtype=cp.int32)
        cap = int(args.capacity * g.n) + 64
        queue = cp.full(cap, np.uint64(0xFFFFFFFFFFFFFFFF), dtype=cp.uint64)
        ctl = cp.zeros(5, dtype=cp.uint64)
        sources = perm.new_of_old[timing_sources(graph, args.sources)]
        for sleep in (int(s) for s in args.sleep.split(",")):
            times, work = [], []
            for rep, src in enumerate([sources[0], *sources]):
                start, stop = cp.cuda.Event(), cp.cuda.Event()
                start.record()
                init((sms * 4,), (256,), (level, np.int32(g.n), ctl, queue, np.int32(src)))
                kernel(
                    (blocks,),
                    (args.threads,),
                    (ptr, idx, level, queue, np.int64(cap), ctl, np.int32(sleep), watchdog),
                )
                stop.record()
                stop.synchronize()
                c = ctl.get()
                if c[3] == 2:
                    raise SystemExit(f"{name}: the watchdog fired ({c.tolist()})")
                if c[3]:
                    raise SystemExit(f"{name}: queue overflow at capacity {args.capacity}")
                got = level.get()
                got = np.where(got == 0x7FFFFFFF, -1, got)
                if rep == 0:
                    continue  # warm-up
                times.append(cp.cuda.get_elapsed_time(start, stop))
                reached = int((got >= 0).sum())
                work.append(int(c[0]) / reached)
                if rep <= args.check:
                    check_levels(g, int(src), got, name)
            print(
                f"{name} {args.ordering} {blocks}x{args.threads} sleep {sleep}: mean "
                f"{np.mean(times):.3f} ms, median {np.median(times):.3f}, min {np.min(times):.3f}"
                f" over {len(times)} sources; work factor {np.mean(work):.3f}"
                f" (max {np.max(work):.3f}); {args.check} checked",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
