"""An eager CUDA-core top-down over frontier bitmap words, on the whole grid: a prototype.

    python3 benchmarks/probe_words.py delaunay-20,luxembourg_osm --sources 16

The question: on deep graphs, a level of the tensor-core vss queue is one warp's chain (queue
entry, VSS loads, MMA, visited atomic, frontier atomic, the push's atomicAdd) and the grid
barrier. How much shorter is a level whose chain is: the frontier word (every warp reads its
share of F_L, words w, w + W, ... for warp w of W), the vertex's 32-byte record (degree and
first seven heads), one atomicOr on visited per head that claims it, then fire-and-forget
stores (its level, its bit of F_{L+1}) and the grid barrier, whose arrival carries "some block
claimed a vertex", so that nobody reads a counter after it?

A warp compacts the set bits of its words into shared memory and expands 32 vertices at a
time, a lane one vertex, its arcs' atomics issued together. F_L's words are cleared as they
are read (F_L is F_{L+2}'s buffer). Timed: the init kernel and the traversal between two
events, means over the protocol's sources, levels checked against SciPy in the same ids.

Session 20 on an H100 (benchmarks/NOTES.md): delaunay-20 3.5 ms (8.4 us a level) against 1.7 ms
for the tensor-core vss queue, whose MMA folds 32 rows into one atomic. Not adopted.
"""

from __future__ import annotations

import argparse

import cupy as cp
import numpy as np
from graphs import anchor_graph, check_levels

from blest.graph.ordering import compute_ordering, permute_graph
from blest.tuning.protocol import timing_sources

SOURCE = r"""
typedef unsigned int u32;
typedef unsigned long long u64;
#define FULL 0xffffffffu
#define INLINE_HEADS 7
#define UNROLL 4

__device__ __forceinline__ u32 load_acquire(const u32* p) {
    u32 v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void red_release(u32* p, u32 v) {
    asm volatile("red.release.gpu.global.add.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}

extern "C" __global__ void words_init(u32* visited, u32* f0, u32* f1, int* level, int n,
    int n_words, u32* bar, int src) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    const int stride = gridDim.x * blockDim.x;
    for (int w = t; w < n_words; w += stride) {
        const u32 bit = (w == (src >> 5)) ? 1u << (src & 31) : 0u;
        visited[w] = bit; f0[w] = bit; f1[w] = 0u;
    }
    for (int v = t; v < n; v += stride) level[v] = v == src ? 0 : -1;
    if (t < 8) bar[t] = 0u;
}

// Lane's claim of head h at level L + 1: one atomicOr on visited; the owner writes its level
// and its bit of F_{L+1} (no return: a reduction).
__device__ __forceinline__ bool claim(u32* visited, u32* next, int* level, int h, int L) {
    if (h < 0) return false;
    const u32 bit = 1u << (h & 31);
    if (atomicOr(visited + (h >> 5), bit) & bit) return false;
    level[h] = L + 1;
    atomicOr(next + (h >> 5), bit);
    return true;
}

extern "C" __global__ void __launch_bounds__(1024, 1) words_bfs(const int4* __restrict__ heads,
    const long long* __restrict__ ptr, const int* __restrict__ idx, int n_words,
    u32* visited, u32* f0, u32* f1, int* level, u32* bar, int per_warp, int* depth) {
    extern __shared__ int buf[];
    __shared__ int s_more;
    const int lane = threadIdx.x & 31;
    // Consecutive words go to consecutive blocks, so that a level's band of words (RCM) is
    // spread over every SM.
    const int warp = (threadIdx.x >> 5) * gridDim.x + blockIdx.x;
    const int n_warps = (gridDim.x * blockDim.x) >> 5;
    int* mine = buf + (threadIdx.x >> 5) * per_warp * 32;
    for (int L = 0;; ++L) {
        u32* F = (L & 1) ? f1 : f0;
        u32* N = (L & 1) ? f0 : f1;
        const int wi = warp + lane * n_warps;
        u32 word = 0u;
        if (lane < per_warp && wi < n_words) {
            word = __ldcg(F + wi);
            if (word) F[wi] = 0u;
        }
        const int c = __popc(word);
        int pre = c;
#pragma unroll
        for (int off = 1; off < 32; off <<= 1) {
            const int x = __shfl_up_sync(FULL, pre, off);
            if (lane >= off) pre += x;
        }
        const int total = __shfl_sync(FULL, pre, 31);
        pre -= c;
        for (u32 b = word; b; b &= b - 1) mine[pre++] = (wi << 5) + __ffs(b) - 1;
        __syncwarp();
        bool any = false;
        for (int r = 0; r < total; r += 32) {
            const int u = r + lane < total ? mine[r + lane] : -1;
            int4 r0 = make_int4(0, -1, -1, -1), r1 = make_int4(-1, -1, -1, -1);
            if (u >= 0) { r0 = __ldg(heads + 2LL * u); r1 = __ldg(heads + 2LL * u + 1); }
            const int count = r0.x;
            const int ih[INLINE_HEADS] = {r0.y, r0.z, r0.w, r1.x, r1.y, r1.z, r1.w};
            const int steps = __reduce_max_sync(FULL, count);
            bool got[INLINE_HEADS];
#pragma unroll
            for (int k = 0; k < INLINE_HEADS; ++k) {
                const int h = k < count ? ih[k] : -1;
                got[k] = false;
                if (h >= 0) {
                    const u32 bit = 1u << (h & 31);
                    got[k] = (atomicOr(visited + (h >> 5), bit) & bit) == 0u;
                }
            }
#pragma unroll
            for (int k = 0; k < INLINE_HEADS; ++k) {
                if (got[k]) {
                    const int h = ih[k];
                    level[h] = L + 1;
                    atomicOr(N + (h >> 5), 1u << (h & 31));
                    any = true;
                }
            }
            if (steps > INLINE_HEADS) {
                const long long e0 = count > INLINE_HEADS ? __ldg(ptr + u) : 0;
                for (int s0 = INLINE_HEADS; s0 < steps; s0 += UNROLL) {
                    int h[UNROLL];
#pragma unroll
                    for (int k = 0; k < UNROLL; ++k)
                        h[k] = s0 + k < count ? __ldg(idx + e0 + s0 + k) : -1;
#pragma unroll
                    for (int k = 0; k < UNROLL; ++k) any |= claim(visited, N, level, h[k], L);
                }
            }
        }
        __syncwarp();
        // The grid barrier, carrying "a block claimed a vertex" in slot L & 3.
        const int block_any = __syncthreads_or(any);
        if (threadIdx.x == 0) {
            if (block_any) atomicAdd(bar + 1 + (L & 3), 1u);
            if (blockIdx.x == 0) bar[1 + ((L + 2) & 3)] = 0u;
            red_release(bar, 1u);
            const u32 target = (u32)(L + 1) * gridDim.x;
            while ((int)(load_acquire(bar) - target) < 0) {}
            s_more = __ldcg(bar + 1 + (L & 3)) != 0u;
        }
        __syncthreads();
        if (!s_more) {
            if (blockIdx.x == 0 && threadIdx.x == 0) *depth = L;
            return;
        }
    }
}
"""


def records(ptr: np.ndarray, idx: np.ndarray, n: int) -> np.ndarray:
    """Per vertex 8 ints: its out-degree and its first seven heads (-1 past the degree)."""
    rec = np.full((n, 8), -1, dtype=np.int32)
    deg = np.diff(ptr).astype(np.int64)
    rec[:, 0] = deg
    for k in range(7):
        has = deg > k
        rec[has, 1 + k] = idx[ptr[:-1][has] + k]
    return rec


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("graphs", help="comma-separated anchor names")
    p.add_argument("--sources", type=int, default=16)
    p.add_argument("--check", type=int, default=4, help="sources checked against SciPy")
    p.add_argument("--threads", type=int, default=1024)
    p.add_argument("--ordering", default="rcm")
    args = p.parse_args()
    mod = cp.RawModule(code=SOURCE, options=("-std=c++17", "-arch=sm_90"))
    init, kernel = mod.get_function("words_init"), mod.get_function("words_bfs")
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    n_warps = sms * args.threads // 32
    print(f"words_bfs: {kernel.num_regs} registers, {kernel.local_size_bytes} B local", flush=True)
    for name in args.graphs.split(","):
        graph = anchor_graph(name)
        perm = compute_ordering(graph, args.ordering)
        g = permute_graph(graph, perm)
        n, n_words = g.n, (g.n + 31) // 32
        per_warp = -(-n_words // n_warps)
        if per_warp > 32:
            raise SystemExit(f"{name}: {per_warp} words a warp; the prototype takes 32")
        smem = args.threads // 32 * per_warp * 32 * 4
        kernel.max_dynamic_shared_size_bytes = smem
        heads = cp.asarray(records(g.out_ptr, g.out_idx, n))
        ptr, idx = cp.asarray(g.out_ptr.astype(np.int64)), cp.asarray(g.out_idx)
        vis, f0, f1 = (cp.empty(n_words, dtype=cp.uint32) for _ in range(3))
        level = cp.empty(n, dtype=cp.int32)
        bar = cp.zeros(8, dtype=cp.uint32)
        depth = cp.zeros(1, dtype=cp.int32)
        sources = perm.new_of_old[timing_sources(graph, args.sources)]
        times, depths = [], []
        for rep, src in enumerate([sources[0], *sources]):
            start, stop = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            init(
                (sms * 2,),
                (512,),
                (vis, f0, f1, level, np.int32(n), np.int32(n_words), bar, np.int32(src)),
            )
            kernel(
                (sms,),
                (args.threads,),
                (
                    heads,
                    ptr,
                    idx,
                    np.int32(n_words),
                    vis,
                    f0,
                    f1,
                    level,
                    bar,
                    np.int32(per_warp),
                    depth,
                ),
                shared_mem=smem,
            )
            stop.record()
            stop.synchronize()
            if rep == 0:
                continue
            times.append(cp.cuda.get_elapsed_time(start, stop))
            depths.append(int(depth.get()[0]))
            if rep <= args.check:
                check_levels(g, src, level.get().astype(np.int64), name)
        print(
            f"{name} {args.ordering} {sms}x{args.threads} ({per_warp} words a warp): mean "
            f"{np.mean(times):.3f} ms, median {np.median(times):.3f}, min {np.min(times):.3f}"
            f" over {len(times)} sources; depth {np.mean(depths):.1f}; "
            f"{1e3 * np.mean(times) / (np.mean(depths) + 1):.2f} us a level; "
            f"{args.check} checked",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
