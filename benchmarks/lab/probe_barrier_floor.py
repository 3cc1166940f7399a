"""The floor of a grid-synchronous level: what a persistent kernel pays per level when it does no
BFS work, piece by piece, on one cooperative launch (a block per SM).

    python3 benchmarks/lab/probe_barrier_floor.py [--iters 4000] [--blocks 0] [--threads 1024]

Each row runs `iters` levels of a kernel made of the pieces named (globaltimer, block 0):
- ``barrier``: the engine's grid barrier (grid_barrier.cu.j2's form: __syncthreads, thread 0's
  release reduction on one 64-bit count, acquire polls until the count reaches its target,
  __syncthreads);
- ``flags``: a barrier without a shared count: thread 0 of each block stores the level number
  to the block's own word with release semantics, and warp 0 of each block polls every block's
  word (a lane per word, acquire loads) until all have it;
- ``top``: thread 0 loads five counters from L2 and shares them (read_level_top);
- ``flush``: a block sum and two no-return atomics on one shared counter line (flush_fresh);
- ``clear``: every thread stores one word of a 32K-word array (clear_old_frontier);
- ``cluster``: with ``--cluster C``, the kernel is compiled with ``__cluster_dims__(C)`` and the
  level meets at a cluster barrier (``barrier.cluster.arrive.release`` and
  ``wait.acquire``), the hardware's barrier of the C blocks of one cluster.
- ``--forms``: other forms of the grid barrier (``relaxed``, ``relpoll``, ``fencerel``,
  ``atomret``: see ``--help``), to see what the release and the acquire cost.
The rows print microseconds per level. The pieces are written here, in this file's own kernel:
none of the engine's templates is used, so the figures stay comparable from tree to tree.
"""

from __future__ import annotations

import argparse

import numpy as np

SOURCE = r"""
typedef unsigned long long u64;
typedef unsigned int u32;

__device__ __forceinline__ u64 now_ns() {
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
__device__ __forceinline__ void add_release(u64* p, u64 v) {
    asm volatile("red.release.gpu.global.add.u64 [%0], %1;" :: "l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ u64 load_acquire64(const u64* p) {
    u64 v;
    asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void add_relaxed(u64* p, u64 v) {
    asm volatile("red.relaxed.gpu.global.add.u64 [%0], %1;" :: "l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ u64 load_relaxed64(const u64* p) {
    u64 v;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void fence_acq_rel() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }
__device__ __forceinline__ void fence_acquire_only() {
    asm volatile("fence.acquire.gpu;" ::: "memory");
}
// K relaxed polls in flight: each pass waits for the oldest and issues one more, so a pass
// takes a round trip / K and the last arrival is seen about (K - 1) / 2K round trips sooner.
template <int K>
__device__ __forceinline__ void wait_pipelined(const u64* count, u64 target) {
    u64 v[K];
#pragma unroll
    for (int k = 0; k < K; ++k) v[k] = load_relaxed64(count);
    for (;;) {
#pragma unroll
        for (int k = 0; k < K; ++k) {
            if (v[k] >= target) {
                fence_acquire_only();
                return;
            }
            v[k] = load_relaxed64(count);
        }
    }
}
#ifdef ONE_WAY_FENCES
__device__ __forceinline__ void fence_release() { asm volatile("fence.release.gpu;" ::: "memory"); }
__device__ __forceinline__ void fence_acquire() { asm volatile("fence.acquire.gpu;" ::: "memory"); }
#else
__device__ __forceinline__ void fence_release() { fence_acq_rel(); }
__device__ __forceinline__ void fence_acquire() { fence_acq_rel(); }
#endif
__device__ __forceinline__ void store_release32(u32* p, u32 v) {
    asm volatile("st.release.gpu.global.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ u32 load_acquire32(const u32* p) {
    u32 v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

#ifndef CLUSTER_DIMS
#define CLUSTER_DIMS
#endif
extern "C" __global__ void CLUSTER_DIMS floor_levels(u64* count, u32* flags, u32* ctl, u32* words,
                                        u64* out, int iters, int pieces) {
    __shared__ u32 shared_top;
    __shared__ u32 warp_part[32];
    u64 target = 0;
    const u64 t0 = now_ns();
    for (int it = 1; it <= iters; ++it) {
        if (pieces & 4) {  // top
            if (threadIdx.x == 0)
                shared_top = __ldcg(ctl) + __ldcg(ctl + 1) + __ldcg(ctl + 2) + __ldcg(ctl + 3)
                             + __ldcg(ctl + 4);
            __syncthreads();
        }
        if (pieces & 16) {  // clear
            const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
            if (t < 32768) words[(it & 3) * 32768 + t] = 0u;
        }
        if (pieces & 8) {  // flush
            const u32 x = __reduce_add_sync(0xffffffffu, (shared_top & 1u) + 1u);
            if ((threadIdx.x & 31) == 0) warp_part[threadIdx.x >> 5] = x;
            __syncthreads();
            if (threadIdx.x == 0) {
                atomicAdd(ctl + 8, warp_part[0]);
                atomicAdd(ctl + 9, warp_part[0]);
            }
        }
        if (pieces & 1) {  // barrier: one shared count
            target += gridDim.x;
            __syncthreads();
            if (threadIdx.x == 0) {
                add_release(count, 1ull);
                while (load_acquire64(count) < target) {
                }
            }
            __syncthreads();
        }
        if (pieces & (64 | 128 | 256 | 512 | 1024 | 2048 | 4096)) {  // barrier forms (see FORMS)
            target += gridDim.x;
            __syncthreads();
            if (threadIdx.x == 0) {
                if (pieces & 64) {  // relaxed: no ordering at all (a floor, not a barrier)
                    add_relaxed(count, 1ull);
                    while (load_relaxed64(count) < target) {
                    }
                } else if (pieces & 128) {  // release add, relaxed polls, one acquire fence
                    add_release(count, 1ull);
                    while (load_relaxed64(count) < target) {
                    }
                    fence_acquire();
                } else if (pieces & 256) {  // release fence + relaxed add, relaxed polls, fence
                    fence_release();
                    add_relaxed(count, 1ull);
                    while (load_relaxed64(count) < target) {
                    }
                    fence_acquire();
                } else if (pieces & 1024) {  // poll2: release add, two polls in flight
                    add_release(count, 1ull);
                    wait_pipelined<2>(count, target);
                } else if (pieces & 2048) {  // poll4: four polls in flight
                    add_release(count, 1ull);
                    wait_pipelined<4>(count, target);
                } else if (pieces & 4096) {  // poll4ret: a returning add, then four polls
                    u64 seen;
                    asm volatile("atom.release.gpu.global.add.u64 %0, [%1], 1;"
                                 : "=l"(seen) : "l"(count) : "memory");
                    if (seen + 1 < target) wait_pipelined<4>(count, target);
                } else {  // 512: a returning add: the last arrival skips its polls
                    u64 seen;
                    asm volatile("atom.release.gpu.global.add.u64 %0, [%1], 1;"
                                 : "=l"(seen) : "l"(count) : "memory");
                    if (seen + 1 < target)
                        while (load_acquire64(count) < target) {
                        }
                }
            }
            __syncthreads();
        }
        if (pieces & 32) {  // cluster: the cluster's hardware barrier
            asm volatile("barrier.cluster.arrive.release.aligned;\n\t"
                         "barrier.cluster.wait.acquire.aligned;" ::: "memory");
        }
        if (pieces & 2) {  // flags: a word per block
            __syncthreads();
            if (threadIdx.x < 32) {
                if (threadIdx.x == 0) store_release32(flags + blockIdx.x, (u32)it);
                for (;;) {
                    bool ok = true;
                    for (int b = threadIdx.x; b < gridDim.x; b += 32)
                        ok = ok && load_acquire32(flags + b) >= (u32)it;
                    if (__all_sync(0xffffffffu, ok)) break;
                }
            }
            __syncthreads();
        }
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) out[0] = now_ns() - t0;
}
"""

PIECES = {
    "barrier": 1,
    "flags": 2,
    "top": 4,
    "flush": 8,
    "clear": 16,
    "cluster": 32,
    "relaxed": 64,
    "relpoll": 128,
    "fencerel": 256,
    "atomret": 512,
    "poll2": 1024,
    "poll4": 2048,
    "poll4ret": 4096,
}
FORM_ROWS = [
    "barrier",
    "relaxed",
    "relpoll",
    "fencerel",
    "atomret",
    "poll2",
    "poll4",
    "poll4ret",
    "barrier+top+flush+clear",
    "poll2+top+flush+clear",
    "poll4+top+flush+clear",
    "poll4ret+top+flush+clear",
    "relaxed+top+flush+clear",
    "relpoll+top+flush+clear",
    "fencerel+top+flush+clear",
]
ROWS = [
    "barrier",
    "flags",
    "barrier+top",
    "barrier+top+flush",
    "barrier+top+flush+clear",
    "flags+top+flush+clear",
]
CLUSTER_ROWS = ["barrier", "cluster", "cluster+top", "cluster+top+flush+clear"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--iters", type=int, default=4000)
    ap.add_argument("--blocks", type=int, default=0, help="0: one per SM")
    ap.add_argument("--threads", type=int, nargs="+", default=[1024, 512, 256])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cluster", type=int, default=0, help="C > 0: one cluster of C blocks")
    ap.add_argument(
        "--forms",
        action="store_true",
        help="rows of barrier forms: relaxed (no ordering: a floor), relpoll (release add, "
        "relaxed polls, one acquire fence), fencerel (fences either side of relaxed accesses), "
        "atomret (a returning release add), poll2 / poll4 (K relaxed polls in flight and one "
        "acquire fence), poll4ret",
    )
    ap.add_argument(
        "--one-way", action="store_true", help="fencerel with fence.release / fence.acquire"
    )
    args = ap.parse_args()
    import cupy as cp

    code = SOURCE
    if args.one_way:
        code = "#define ONE_WAY_FENCES\n" + code
    if args.cluster:
        code = f"#define CLUSTER_DIMS __cluster_dims__({args.cluster}, 1, 1)\n" + SOURCE
    module = cp.RawModule(
        code=code, options=("-std=c++17", "-arch=sm_90"), enable_cooperative_groups=True
    )
    kernel = module.get_function("floor_levels")
    if args.cluster > 8:  # CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED
        cp.cuda.driver.funcSetAttribute(kernel.kernel.ptr, 14, 1)
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    blocks = args.cluster or args.blocks or sms
    for threads in args.threads:
        rows = CLUSTER_ROWS if args.cluster else FORM_ROWS if args.forms else ROWS
        for row in rows:
            pieces = sum(PIECES[p] for p in row.split("+"))
            per_level = []
            for _ in range(args.repeats):
                count = cp.zeros(1, dtype=cp.uint64)
                flags = cp.zeros(blocks, dtype=cp.uint32)
                ctl = cp.zeros(16, dtype=cp.uint32)
                words = cp.zeros(4 * 32768, dtype=cp.uint32)
                out = cp.zeros(1, dtype=cp.uint64)
                kernel(
                    (blocks,),
                    (threads,),
                    (count, flags, ctl, words, out, np.int32(args.iters), np.int32(pieces)),
                )
                cp.cuda.Device().synchronize()
                per_level.append(int(out.get()[0]) / args.iters / 1e3)
            print(
                f"{blocks}x{threads} {row:26s} us a level: "
                + " ".join(f"{t:.3f}" for t in per_level),
                flush=True,
            )


if __name__ == "__main__":
    main()
