"""Run a generated one-block (or one-cluster) CUDA kernel on the CPU: one OS thread per CUDA
thread.

For kernels that one block, or one thread-block cluster, can run alone: the rendered source is
compiled by the host C++ compiler against a small shim (``__shared__`` becomes ``static``,
``__syncthreads`` a barrier, atomics GCC's ``__atomic`` builtins, ``threadIdx`` a
thread-local; the warp intrinsics ``__shfl_sync``, ``__shfl_up_sync``, ``__shfl_down_sync``,
``__ballot_sync``, ``__reduce_or_sync``, ``__reduce_add_sync`` and ``__reduce_max_sync``
exchange values through a per-warp barrier, so every lane of the warp must call them together,
as their full masks require on a GPU; the binary tensor-core MMA, ``mma.sync.aligned.m8n8k128
... b1.and.popc``, is computed the same way from its fragment layout), and a generated ``main``
launches one block of ``threads`` std::threads (a multiple of 32) over arrays read from files,
or several kernels one after the other. A cluster of ``blocks`` blocks (``cluster.cu.j2``) runs
as that many blocks of threads, each with its own dynamic shared memory, barrier and warps:
``%cluster_ctarank`` is the block's index, ``mapa`` moves an address into another block's
dynamic shared memory (kernels that map addresses keep all their shared memory there), and the
cluster barrier is one barrier of every thread. A logic check of the CUDA code itself
(its barriers, counters, queues, warp collectives and MMA packing) on machines without a GPU;
timing means nothing here, and no other inline PTX runs (it is refused). A serving kernel
(``serve.cu.j2``) gets a host thread beside it that posts its calls (:func:`_poster`); its
system-scope loads and stores become GCC atomics. However many CUDA threads a block has, at
most ``BLEST_CUDA_CPU_THREADS`` of them (default: the cores) run at once; the others sleep at
a barrier, at a poll of memory or waiting for their turn, so a run keeps the machine's load
near its core count.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
from cuda_cpu_fibers import FIBER_DECLS, FIBER_LOOP

SHIM = (
    r"""
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>
#include <ucontext.h>
using std::max;
using std::min;
struct Dim3 { unsigned x, y, z; };
thread_local Dim3 threadIdx = {0, 0, 0}, blockIdx = {0, 0, 0};
static Dim3 blockDim = {1, 1, 1}, gridDim = {1, 1, 1};
struct Barrier;
thread_local Barrier* block_barrier;
thread_local unsigned char* dynamic_smem;
static Barrier* cluster_barrier;
static unsigned char** block_smem;  // each block's dynamic shared memory
inline unsigned long long map_shared(unsigned long long a, unsigned rank) {
    return (unsigned long long)(block_smem[rank] + (a - (unsigned long long)dynamic_smem)); }
#define __global__
#define __device__
#define __forceinline__ inline
#define __noinline__
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __cluster_dims__(...)
#define __shared__ static
struct alignas(8) int2 { int x, y; };  // CUDA aligns these as the GPU loads them
inline int2 make_int2(int x, int y) { return int2{x, y}; }
struct alignas(16) int4 { int x, y, z, w; };
inline int4 make_int4(int x, int y, int z, int w) { return int4{x, y, z, w}; }
struct alignas(8) uint2 { unsigned x, y; };
struct alignas(16) uint4 { unsigned x, y, z, w; };
"""
    + FIBER_DECLS
    + r"""inline void __syncthreads() { wait_at(block_barrier); }
template <class T> inline T __ldg(const T* p) { return *p; }
// Loads and stores of up to 8 bytes are atomic, as on the GPU; wider vectors (int4, uint4) are
// copied word by word, each word atomic, as a GPU's 128-bit access may also be seen in parts.
template <class T> inline T __ldcg(const T* p) {
    T v;
    if constexpr (sizeof(T) <= 8) {
        __atomic_load(p, &v, __ATOMIC_RELAXED);
    } else {
        const unsigned* s = reinterpret_cast<const unsigned*>(p);
        unsigned* d = reinterpret_cast<unsigned*>(&v);
        for (unsigned i = 0; i < sizeof(T) / 4; ++i)
            d[i] = __atomic_load_n(s + i, __ATOMIC_RELAXED);
    }
    return v; }
template <class T> inline void __stcg(T* p, T v) {
    if constexpr (sizeof(T) <= 8) {
        __atomic_store(p, &v, __ATOMIC_RELAXED);
    } else {
        unsigned* d = reinterpret_cast<unsigned*>(p);
        const unsigned* s = reinterpret_cast<const unsigned*>(&v);
        for (unsigned i = 0; i < sizeof(T) / 4; ++i)
            __atomic_store_n(d + i, s[i], __ATOMIC_RELAXED);
    } }
#define SEQ_CST __ATOMIC_SEQ_CST
template <class T, class U> inline T atomicAdd(T* p, U v) {
    return __atomic_fetch_add(p, (T)v, SEQ_CST); }
// Atomic OR and AND are calls, not inlined: GCC 12.2 at -O1 compiled an inlined fetch_or whose
// operand was also the other arm of a conditional (hit ? atomicOr(p, bit) : bit) into a
// compare-and-swap loop that had lost the operand and wrote the old word back.
template <class T, class U> __attribute__((noinline)) T atomicOr(T* p, U v) {
    return __atomic_fetch_or(p, (T)v, SEQ_CST); }
template <class T, class U> __attribute__((noinline)) T atomicAnd(T* p, U v) {
    return __atomic_fetch_and(p, (T)v, SEQ_CST); }
template <class T, class U> __attribute__((noinline)) T atomicMax(T* p, U v) {
    T old = __atomic_load_n(p, SEQ_CST);
    while (old < (T)v && !__atomic_compare_exchange_n(p, &old, (T)v, false, SEQ_CST, SEQ_CST)) {}
    return old; }
template <class T, class U> __attribute__((noinline)) T atomicMin(T* p, U v) {
    T old = __atomic_load_n(p, SEQ_CST);
    while (old > (T)v && !__atomic_compare_exchange_n(p, &old, (T)v, false, SEQ_CST, SEQ_CST)) {}
    return old; }
template <class T> __attribute__((noinline)) T atomicCAS(T* p, T expected, T v) {
    __atomic_compare_exchange_n(p, &expected, v, false, SEQ_CST, SEQ_CST);
    return expected; }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __clz(unsigned x) { return x ? __builtin_clz(x) : 32; }
// Warps: the 32 lanes of a warp post a value each and wait for one another (twice, so that no
// lane overwrites its slot before every lane has read); every lane must take part, as with the
// full masks the kernels use.
struct WarpExchange { Barrier* bar; unsigned long long slots[32]; };
thread_local WarpExchange* warps;
template <class T, class F> inline auto warp_collect(T v, F f) {
    WarpExchange& w = warps[threadIdx.x >> 5];
    unsigned long long bits = 0;
    std::memcpy(&bits, &v, sizeof(T));
    w.slots[threadIdx.x & 31] = bits;
    wait_at(w.bar);
    auto r = f(w.slots);
    wait_at(w.bar);
    return r;
}
template <class T> inline T lane_value(const unsigned long long* s, int lane) {
    T v; std::memcpy(&v, s + lane, sizeof(T)); return v;
}
template <class T> inline T __shfl_sync(unsigned, T v, int src) {
    return warp_collect(v, [&](const unsigned long long* s) { return lane_value<T>(s, src & 31); });
}
template <class T> inline T __shfl_up_sync(unsigned, T v, unsigned d) {
    const int lane = threadIdx.x & 31;
    return warp_collect(v, [&](const unsigned long long* s) {
        return lane >= (int)d ? lane_value<T>(s, lane - (int)d) : v; });
}
template <class T> inline T __shfl_down_sync(unsigned, T v, unsigned d) {
    const int lane = threadIdx.x & 31;
    return warp_collect(v, [&](const unsigned long long* s) {
        return lane + (int)d < 32 ? lane_value<T>(s, lane + (int)d) : v; });
}
inline unsigned __ballot_sync(unsigned, int p) {
    return warp_collect(p ? 1u : 0u, [](const unsigned long long* s) {
        unsigned b = 0; for (int i = 0; i < 32; ++i) b |= (s[i] ? 1u : 0u) << i; return b; });
}
inline unsigned __reduce_or_sync(unsigned, unsigned v) {
    return warp_collect(v, [](const unsigned long long* s) {
        unsigned r = 0; for (int i = 0; i < 32; ++i) r |= (unsigned)s[i]; return r; });
}
inline unsigned __reduce_add_sync(unsigned, unsigned v) {
    return warp_collect(v, [](const unsigned long long* s) {
        unsigned r = 0; for (int i = 0; i < 32; ++i) r += (unsigned)s[i]; return r; });
}
inline int __reduce_max_sync(unsigned, int v) {
    return warp_collect(v, [](const unsigned long long* s) {
        int r = (int)s[0]; for (int i = 1; i < 32; ++i) r = std::max(r, (int)s[i]); return r; });
}
inline void __syncwarp(unsigned = 0xffffffffu) { wait_at(warps[threadIdx.x >> 5].bar); }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_system() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }
template <class T, class U> inline T atomicExch(T* p, U v) {
    return __atomic_exchange_n(p, (T)v, SEQ_CST); }
// mma.sync.aligned.m8n8k128.row.col.s32.b1.b1.s32.and.popc with a zero C: lane t holds A row
// t/4, k-word t%4 and B column t/4, k-word t%4, and receives D[t/4][2(t%4)] and
// D[t/4][2(t%4)+1], where D[i][j] = sum over w of popc(A[4i+w] & B[4j+w]).
inline void mma_b1_shim(unsigned a, unsigned b, int& c0, int& c1) {
    const unsigned long long ab = ((unsigned long long)b << 32) | a;
    const int t = threadIdx.x & 31, i = t / 4, j = 2 * (t % 4);
    const long long d = warp_collect(ab, [&](const unsigned long long* s) {
        long long d0 = 0, d1 = 0;
        for (int w = 0; w < 4; ++w) {
            const unsigned row = (unsigned)s[4 * i + w];
            d0 += __builtin_popcount(row & (unsigned)(s[4 * j + w] >> 32));
            d1 += __builtin_popcount(row & (unsigned)(s[4 * (j + 1) + w] >> 32));
        }
        return (d1 << 32) | d0; });
    c0 = (int)(d & 0xffffffff);
    c1 = (int)(d >> 32);
}
"""
    + FIBER_LOOP
    + r""""""
)


#: Misaligned loads and stores abort the run, as they fault on a GPU (x86 would allow them).
SANITIZE = ("-fsanitize=alignment", "-fno-sanitize-recover=alignment")


def small_zoo(rng: np.random.Generator, n: int) -> dict:
    """Small graphs of the classes the kernels must handle, sized for CPU runs: power-law (n
    vertices), directed and disconnected (5n/6), deep (2n/3, hundreds of levels)."""
    from blest.datasets.classes import make_directed, make_disconnected, make_power_law, path_like

    return {
        "power_law": make_power_law(rng, n),
        "directed": make_directed(rng, 5 * n // 6),
        "disconnected": make_disconnected(rng, 5 * n // 6),
        "deep": path_like(rng, 2 * n // 3),
    }


def have_compiler() -> bool:
    return shutil.which("g++") is not None


def _host_source(cuda: str) -> str:
    """The rendered CUDA source, rewritten for the shim."""
    text = re.sub(r"extern __shared__ (\w+) (\w+)\[\];", r"\1* \2 = (\1*)dynamic_smem;", cuda)
    text = re.sub(r'asm volatile\("mov\.u64 %0, %%globaltimer;" : "=l"\(t\)\);', "t = 0;", text)
    text = re.sub(
        r'asm volatile\(\s*"mma\.sync\.aligned\.m8n8k128.*?\);',
        "mma_b1_shim(a, b, c0, c1);",
        text,
        flags=re.S,
    )
    text = re.sub(
        r'asm volatile\("mov\.u32 %0, %%cluster_ctarank;" : "=r"\(r\)\);', "r = blockIdx.x;", text
    )
    text = re.sub(
        r'asm volatile\("mapa\.u64 %0, %1, %2;" : "=l"\(d\) : "l"\(a\), "r"\(rank\)\);',
        "d = map_shared(a, rank);",
        text,
    )
    text = re.sub(
        r'asm volatile\("barrier\.cluster\.arrive\.release\.aligned;\\n\\tbarrier\.cluster\.wait'
        r'\.acquire\.aligned;" ::: "memory"\);',
        "wait_at(cluster_barrier);",
        text,
    )
    text = re.sub(
        r'asm volatile\("red\.release\.gpu\.global\.add\.u64 \[%0\], %1;" :: "l"\(p\), '
        r'"l"\(v\) : "memory"\);',
        "__atomic_fetch_add(p, v, __ATOMIC_RELEASE);",
        text,
    )
    text = re.sub(
        r'asm volatile\("ld\.acquire\.gpu\.global\.u64 %0, \[%1\];" : "=l"\(v\) : '
        r'"l"\(p\) : "memory"\);',
        "v = polled_load(p, __ATOMIC_ACQUIRE);",
        text,
    )
    for order in ("acquire", "relaxed"):  # host memory, u64 (serve.cu.j2)
        text = re.sub(
            rf'asm volatile\("ld\.{order}\.sys\.global\.u64 %0, \[%1\];" : "=l"\(v\) : '
            r'"l"\(p\) : "memory"\);',
            f"v = polled_load((const unsigned long long*)p, __ATOMIC_{order.upper()});",
            text,
        )
    text = re.sub(
        r'asm volatile\("st\.release\.sys\.global\.u64 \[%0\], %1;" :: "l"\(p\), '
        r'"l"\(v\) : "memory"\);',
        "__atomic_store_n((unsigned long long*)p, v, __ATOMIC_RELEASE);",
        text,
    )
    text = re.sub(
        r'asm volatile\("atom\.acq_rel\.gpu\.global\.add\.u64 %0, \[%1\], %2;" : '
        r'"=l"\(old\) : "l"\(p\), "l"\(v\) : "memory"\);',
        "old = __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL);",
        text,
    )
    if "asm" in re.sub(r"//[^\n]*", "", text):
        raise ValueError("the kernel holds inline PTX this runner does not emulate")
    return text.replace('extern "C" ', "")


def _poster(serve: dict[str, int]) -> list[str]:
    """The host's side of a serving kernel (serve.cu.j2), as a thread beside the launch: posts
    call k (seed ``serve_seeds[k]``, levels to row k of ``serve_out``) in the request block
    after ``ctl_out``'s control words (the tagged DST word, then {SEQ, SEED} in one store),
    waits for its answer, keeps the answered control block (the kernel's ``ctl_copy``) as row
    k of ``serve_ctl``, then asks the server to end. ``serve_modes[k]`` (optional; 1 for every
    call without it) says what the row stands for: 1 host memory, 0 device memory (the host
    bit clear), 2 no destination (DST = 0: the levels stay in the kernel's own buffer).
    ``serve_next[k]`` (optional; 0 for every call without it): 1 names row k + 1 as the array
    of the next call (SERVE_NEXT, tagged with call k's number and stored before its head, so
    that the server always sees it); 0 leaves the word as it was (an earlier call's tag, which
    the server ignores). The host (served.py) stores it after the head instead, while the
    GPU traverses."""
    words, r = serve["ctl_words"], serve
    tag, host_bit, quit_seed = serve["dst_tag_shift"], serve["dst_host_bit"], serve["quit"]
    tag_mask = serve["dst_tag_mask"]
    return [
        '    std::vector<char> buf_serve_seeds = slurp(dir + "/serve_seeds.bin");',
        '    std::vector<char> buf_serve_out = slurp(dir + "/serve_out.bin");',
        '    std::vector<char> buf_serve_ctl = slurp(dir + "/serve_ctl.bin");',
        '    std::vector<char> buf_serve_modes = slurp(dir + "/serve_modes.bin");',
        '    std::vector<char> buf_serve_next = slurp(dir + "/serve_next.bin");',
        "    std::thread poster([&] {",
        "        const int* seeds = (const int*)buf_serve_seeds.data();",
        "        const long long calls = buf_serve_seeds.size() / 4;",
        "        const long long row = buf_serve_out.size() / 4 / (calls ? calls : 1);",
        f"        unsigned* req = (unsigned*)ctl_out + {words};",
        f"        unsigned long long* head = (unsigned long long*)(req + {r['seq']});",
        "        for (long long k = 1; k <= calls; ++k) {",
        "            const int mode = buf_serve_modes.empty() ? 1"
        " : ((const int*)buf_serve_modes.data())[k - 1];",
        "            const unsigned long long d = mode == 2 ? 0ull : (unsigned long long)"
        "((int*)buf_serve_out.data() + (k - 1) * row);",
        "            const unsigned long long word = d"
        f" | ((unsigned long long)(k & {tag_mask}) << {tag})"
        f" | ((unsigned long long)(mode == 1) << {host_bit});",
        f"            __atomic_store_n((unsigned long long*)(req + {r['dst']}), word,"
        " __ATOMIC_RELAXED);",
        "            const bool name = !buf_serve_next.empty() && k < calls"
        " && ((const int*)buf_serve_next.data())[k - 1];",
        "            if (name)",
        f"                __atomic_store_n((unsigned long long*)(req + {r['next']}),"
        " (unsigned long long)((int*)buf_serve_out.data() + k * row)"
        f" | ((unsigned long long)(k & {tag_mask}) << {tag}), __ATOMIC_RELAXED);",
        "            __atomic_store_n(head, (unsigned long long)k |"
        " ((unsigned long long)(unsigned)seeds[k - 1] << 32), __ATOMIC_RELEASE);",
        f"            while (__atomic_load_n(req + {r['answer']}, __ATOMIC_ACQUIRE)"
        " != (unsigned)k)",
        "                std::this_thread::yield();",
        f"            std::memcpy(buf_serve_ctl.data() + (k - 1) * {4 * words}, ctl_copy,"
        f" {4 * words});",
        "        }",
        f"        __atomic_store_n(head, (unsigned long long)calls | ({quit_seed}ull << 32),"
        " __ATOMIC_RELEASE);",
        "    });",
    ]


def _main(launches: list[tuple[str, list[tuple[str, str]]]], params: list[tuple[str, str]],
          serve: dict[str, int] | None = None) -> str:  # fmt: skip
    """``main(dir, threads, smem_bytes, blocks)``: every array parameter from
    ``dir/<name>.bin``, scalars from ``dir/<name>.txt``; the kernels of ``launches`` (name,
    extra parameters) run one after the other, each on ``blocks`` blocks (one cluster); arrays
    written back to ``dir/<name>.out``. ``serve`` (offsets of the request block): a host thread
    posts calls to the kernel meanwhile (:func:`_poster`)."""
    extras = list(dict.fromkeys(p for _, extra in launches for p in extra))
    lines = [
        "static std::vector<char> slurp(const std::string& path) {",
        '    FILE* f = std::fopen(path.c_str(), "rb"); std::vector<char> b;',
        "    if (!f) return b; char c[65536]; size_t k;",
        "    while ((k = std::fread(c, 1, sizeof c, f)) > 0) b.insert(b.end(), c, c + k);",
        "    std::fclose(f); return b; }",
        "static std::vector<char> scalar(const std::string& dir, const char* name) {",
        '    std::vector<char> b = slurp(dir + "/" + name + ".txt");',
        "    if (b.empty()) {",
        '        std::fprintf(stderr, "no value for scalar %s\\n", name); std::exit(2); }',
        "    return b; }",
        "static void spit(const std::string& path, const std::vector<char>& b) {",
        '    FILE* f = std::fopen(path.c_str(), "wb"); std::fwrite(b.data(), 1, b.size(), f);',
        "    std::fclose(f); }",
        "int main(int argc, char** argv) {",
        "    const std::string dir = argv[1];",
        "    const unsigned threads = std::atoi(argv[2]);",
        "    const unsigned blocks = argc > 4 ? std::atoi(argv[4]) : 1;",
        "    std::vector<std::vector<unsigned char>> smem(blocks);",
        "    std::vector<unsigned char*> smem_of(blocks);",
        "    for (unsigned b = 0; b < blocks; ++b) {",
        "        smem[b].assign(std::atol(argv[3]) + 16, 0); smem_of[b] = smem[b].data(); }",
        "    block_smem = smem_of.data();",
        "    blockDim.x = threads; gridDim.x = blocks;",
        '    const char* cap = std::getenv("BLEST_CUDA_CPU_THREADS");',
        "    const unsigned nworkers = cap && std::atol(cap) > 0 ? (unsigned)std::atol(cap)"
        " : std::max(1u, std::thread::hardware_concurrency());",
        "    Barrier cluster_bar(blocks * threads); cluster_barrier = &cluster_bar;",
        "    std::vector<Barrier*> bars(blocks);",
        "    for (auto& b : bars) b = new Barrier(threads);",
        "    std::vector<std::vector<WarpExchange>> wx(blocks);",
        "    for (auto& v : wx) { v.resize((threads + 31) / 32);",
        "        for (auto& w : v) w.bar = new Barrier(32); }",
    ]
    for ctype, name in params + extras:
        base = ctype.replace("const", "").replace("__restrict__", "").strip()
        if base.endswith("*"):
            lines.append(f'    std::vector<char> buf_{name} = slurp(dir + "/{name}.bin");')
            lines.append(
                f"    {base} {name} = buf_{name}.empty() ? nullptr : ({base})buf_{name}.data();"
            )
        else:
            parse = "std::atof" if base in ("double", "float") else "std::atoll"
            read = f'{parse}(scalar(dir, "{name}").data())'
            lines.append(f"    {base} {name} = ({base}){read};")
    if serve is not None:
        lines += _poster(serve)
    for kernel, extra in launches:
        names = [name for _, name in params + extra]
        lines.append("    run_fibers(blocks, threads, nworkers, smem_of.data(), bars, wx, [&] {")
        lines.append(f"        {kernel}({', '.join(names)});")
        lines.append("    });")
    for ctype, name in params + extras:
        if ctype.rstrip().endswith("*") and "const" not in ctype:
            lines.append(f'    if (!buf_{name}.empty()) spit(dir + "/{name}.out", buf_{name});')
    if serve is not None:
        lines.append("    poster.join();")
        lines.append('    spit(dir + "/serve_out.out", buf_serve_out);')
        lines.append('    spit(dir + "/serve_ctl.out", buf_serve_ctl);')
    lines.append("    return 0; }")
    return "#include <string>\n" + "\n".join(lines) + "\n"


def build(cuda: str, kernel, params, extra, cache: Path, serve: dict | None = None) -> Path:
    """Compile (once per source) the host program that runs ``kernel`` with ``params`` then
    ``extra``; ``kernel`` may also be a list of (kernel, extra) launches, run in order (extra
    is then ignored); ``serve``: with a host thread posting calls (:func:`_main`). Returns the
    program's path."""
    launches = [(kernel, list(extra))] if isinstance(kernel, str) else list(kernel)
    source = SHIM + _host_source(cuda) + _main(launches, list(params), serve)
    key = hashlib.sha256(source.encode()).hexdigest()[:16]
    exe = cache / f"kernel-{key}"
    if not exe.exists():
        cache.mkdir(parents=True, exist_ok=True)
        src = cache / f"kernel-{key}.cpp"
        src.write_text(source)
        tmp = cache / f"kernel-{key}.{os.getpid()}.tmp"
        cmd = ["g++", "-std=c++20", "-O1", "-pthread", "-w", *SANITIZE, "-o", str(tmp), str(src)]
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        tmp.replace(exe)
    return exe


def run(exe: Path, arrays: dict[str, np.ndarray], scalars: dict[str, float], threads: int,
        smem_bytes: int, timeout: float = 120.0,
        blocks: int = 1) -> dict[str, np.ndarray]:  # fmt: skip
    """Run one block (or one cluster of ``blocks``, ``smem_bytes`` each); returns the
    written-back arrays (same dtypes and shapes as given; a None
    array is a null pointer). Scalars: Python ints, or floats for double parameters."""
    with tempfile.TemporaryDirectory() as d:
        for name, a in arrays.items():
            if a is not None:
                np.ascontiguousarray(a).tofile(os.path.join(d, f"{name}.bin"))
        for name, v in scalars.items():
            text = repr(float(v)) if isinstance(v, float) else str(int(v))
            Path(d, f"{name}.txt").write_text(text + "\0")
        cmd = [str(exe), d, str(threads), str(smem_bytes), str(blocks)]
        subprocess.run(cmd, check=True, timeout=timeout)
        out = {}
        for name, a in arrays.items():
            path = os.path.join(d, f"{name}.out")
            if a is not None and os.path.exists(path):
                out[name] = np.fromfile(path, dtype=a.dtype).reshape(a.shape)
        return out
