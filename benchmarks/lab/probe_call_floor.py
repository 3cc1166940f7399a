"""The floor under a whole ``bfs`` call: what a call costs beyond its traversal, piece by piece.

    python3 benchmarks/lab/probe_call_floor.py twitch_FR,wiki_chameleon s32_eager_resident_pers \
        --geometry 512:1

For each graph and variant, back to back over the protocol's sources (``--rounds`` times), in us:

- ``traversal``: the timed engine's ``stats.traversal_ms`` (CUDA events around the traversal);
- ``whole timed``: ``bfs(src, out="device")`` on the timed engine (init, traversal and deliver
  pass, three launches of one captured graph), synchronized;
- ``whole``: ``bfs(src, out="device")`` with timing off, synchronized, as the protocol times it;
- ``whole served``: the same inside ``with engine.serving()``;
- ``graph``: the engine's captured call alone (``graph(); stream.synchronize()``);
- ``empty``: a CUDA graph of one empty cooperative kernel of the engine's grid, launched and
  waited for; ``copy+empty``: the same after the call slot's 24-byte pinned copy;
- ``poll 1``, ``poll grid``, ``poll grid x2``: a kernel that stays resident and serves requests
  posted in pinned host memory (thread 0 of block 0 polls the request word; the grid meets at
  0, 1 or 2 grid barriers; block 0 writes the answer to pinned host memory, which the host
  spins on): the round trip with no launch at all.

``--patch NAME`` applies one of probe_patches.py's PATCHES to every engine's source first (the
fill pass's timing-only patches, ``fill_no_stores`` and ``fill_none``, reach the served rows).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/

from run import Bench, _by_name  # noqa: E402

POLL = r"""
__device__ __forceinline__ unsigned ld_sys(const unsigned* p) {
    unsigned v;
    asm volatile("ld.relaxed.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ unsigned long long ld_acq(const unsigned long long* p) {
    unsigned long long v;
    asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ unsigned long long now_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
__device__ void barrier(unsigned long long* count, unsigned long long& target) {
    target += gridDim.x;
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("red.release.gpu.global.add.u64 [%0], 1;" :: "l"(count) : "memory");
        while (ld_acq(count) < target) {}
    }
    __syncthreads();
}
extern "C" __global__ void serve(const unsigned* req, unsigned* resp, unsigned long long* count,
                                 unsigned rounds, int barriers) {
    unsigned long long target = 0;
    __shared__ int quit;
    for (unsigned k = 1; k <= rounds; ++k) {
        if (blockIdx.x == 0 && threadIdx.x == 0) {
            const unsigned long long t0 = now_ns();
            quit = 0;
            while (ld_sys(req) != k)
                if (now_ns() - t0 > 2000000000ull) { quit = 1; break; }
            if (quit) atomicExch(reinterpret_cast<unsigned*>(count + 1), 1u);
        }
        for (int b = 0; b < barriers; ++b) barrier(count, target);
        if (barriers) {
            if (threadIdx.x == 0) quit = *reinterpret_cast<volatile unsigned*>(count + 1);
            __syncthreads();
        } else {
            __syncthreads();
        }
        if (quit) return;
        if (blockIdx.x == 0 && threadIdx.x == 0) {
            __threadfence_system();
            asm volatile("st.relaxed.sys.global.u32 [%0], %1;" :: "l"(resp), "r"(k) : "memory");
        }
    }
}
extern "C" __global__ void empty(unsigned* p) { if (p[0] == 12345u) p[1] = 1u; }
// Block 0 writes the call's number (one more than the device counter) to pinned host memory.
extern "C" __global__ void flag(unsigned* counter, unsigned* host) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        const unsigned k = counter[0] + 1u;
        counter[0] = k;
        __threadfence_system();
        asm volatile("st.relaxed.sys.global.u32 [%0], %1;" :: "l"(host), "r"(k) : "memory");
    }
}
"""


def stat(xs: list[float]) -> str:
    return f"{np.mean(xs):7.1f} / {np.median(xs):7.1f}"


def poll_floor(cp, blocks: int, threads: int, barriers: int, rounds: int) -> list[float]:
    """Host us of each request/answer round trip through a resident kernel."""
    import cupyx

    mod = cp.RawModule(code=POLL, enable_cooperative_groups=True)
    serve = mod.get_function("serve")
    req = cupyx.empty_pinned(16, dtype=np.uint32)
    resp = cupyx.empty_pinned(16, dtype=np.uint32)
    req[:] = 0
    resp[:] = 0
    count = cp.zeros(2, dtype=cp.uint64)
    stream = cp.cuda.Stream(non_blocking=True)
    args = (np.uint64(req.ctypes.data), np.uint64(resp.ctypes.data), count, np.uint32(rounds),
            np.int32(barriers))  # fmt: skip
    with stream:
        serve((blocks,), (threads,), args)
    walls = []
    for k in range(1, rounds + 1):
        t0 = time.perf_counter()
        req[0] = k
        deadline = t0 + 2.0
        while resp[0] != k:
            if time.perf_counter() > deadline:
                raise RuntimeError(f"no answer to request {k}")
        walls.append((time.perf_counter() - t0) * 1e6)
    stream.synchronize()
    return walls[16:]


def graph_floor(cp, blocks: int, threads: int, copy: bool, rounds: int) -> list[float]:
    """Host us of launching and waiting for a graph of one empty cooperative kernel."""
    import cupyx

    from blest.runtime.call_graph import CapturedCall, copy_async

    fn = cp.RawModule(code=POLL, enable_cooperative_groups=True).get_function("empty")
    buf = cp.zeros(8, dtype=cp.uint32)
    host = cupyx.empty_pinned(8, dtype=np.uint32)
    host[:] = 0

    def enqueue(stream):
        if copy:
            copy_async(cp, buf.data.ptr, host.ctypes.data, 24, stream)
        fn((blocks,), (threads,), (buf,))

    graph = CapturedCall(cp, enqueue)
    stream = cp.cuda.get_current_stream()
    walls = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        graph()
        stream.synchronize()
        walls.append((time.perf_counter() - t0) * 1e6)
    return walls[16:]


def launch_floor(cp, blocks: int, threads: int, how: str, rounds: int) -> list[float]:
    """Host us of one empty cooperative kernel: launched directly (``direct``, waited for by
    stream synchronization), or ``direct spin`` / ``graph spin``: the kernel writes the call's
    number to pinned host memory, which the host spins on instead of synchronizing."""
    import cupyx

    from blest.runtime.call_graph import CapturedCall
    from blest.runtime.device_program import Kernel, PreparedLaunch

    mod = cp.RawModule(code=POLL, enable_cooperative_groups=True)
    counter = cp.zeros(4, dtype=cp.uint32)
    host = cupyx.empty_pinned(4, dtype=np.uint32)
    host[:] = 0
    name = "empty" if how == "direct" else "flag"
    fn = mod.get_function(name)
    args = (counter,) if name == "empty" else (counter, np.uint64(host.ctypes.data))
    launch = PreparedLaunch(Kernel(fn.kernel, name, cp.cuda.Device().id), blocks, threads, args,
                            cooperative=True)  # fmt: skip
    start = launch
    if how == "graph spin":
        start = CapturedCall(cp, lambda stream: launch())
    stream = cp.cuda.get_current_stream()
    walls = []
    for k in range(1, rounds + 1):
        t0 = time.perf_counter()
        start()
        if how == "direct":
            stream.synchronize()
        else:
            while host[0] != k:
                pass
        walls.append((time.perf_counter() - t0) * 1e6)
    stream.synchronize()
    return walls[16:]


def python_pieces(eng, src: int, rounds: int = 20000) -> None:
    """Host us of pieces of the plain call's Python path, each alone in a loop."""
    import cupy as cp

    def each(label, fn):
        t0 = time.perf_counter()
        for _ in range(rounds):
            fn()
        print(f"  py {label:<22} {(time.perf_counter() - t0) / rounds * 1e6:6.2f}", flush=True)

    tr, device = eng._tr, eng._tr.device_id
    dev = cp.cuda.Device(device)
    path = eng._fused if not eng.timing and eng._fused else eng._captured

    def ctx():
        with eng._lock, cp.cuda.Device(device):
            pass

    each("checks", lambda: (eng._check_open(), tr.check_out("device")))
    each("lock + Device()", ctx)
    each("Device() alone", lambda: cp.cuda.Device(device).__enter__())
    each("graph lookup", lambda: path._graph(False, eng._rules))
    each("internal_ids[src]", lambda: tr.internal_ids[src])
    each("slot writes", lambda: tr.slot_words.__setitem__(0, 5))
    each("get_current_stream", cp.cuda.get_current_stream)
    each("cp.empty(n)", lambda: cp.empty(eng.n, dtype=cp.int32))
    each("check_ctl", lambda: tr.check_ctl(src, 1, eng.timing))
    each("device sync (idle)", dev.synchronize)
    each("stream sync (idle)", cp.cuda.get_current_stream().synchronize)
    each("stream done (idle)", lambda: cp.cuda.get_current_stream().done)


def calls(eng, srcs: list[int], rounds: int, out: str, sync) -> list[float]:
    """Host us of each ``bfs(src, out=out)``, back to back, between two ``sync()``."""
    walls = []
    for _ in range(rounds):
        for s in srcs:
            sync()
            t0 = time.perf_counter()
            eng.bfs(s, out=out)
            sync()
            walls.append((time.perf_counter() - t0) * 1e6)
    return walls


def served_phases(eng, srcs: list[int], rounds: int) -> None:
    """Host us of the served call's phases (a copy of ``ServedCalls.run``'s steps for
    ``out="device"``, timed between them), medians. The copy posts two u64 words through
    memoryviews, as ``ServedCalls.run`` does; it has to follow it when that changes."""
    import cupy as cp

    from blest.codegen.contract import DST_TAG_MASK, DST_TAG_SHIFT
    from blest.runtime import served as es
    from blest.runtime.captured import plain_id

    server, tr = eng._served, eng._tr

    marks: dict[str, list[float]] = {}
    caller = cp.cuda.get_current_stream()
    with eng.serving():
        eng.bfs(srcs[0], out="device")
        for _ in range(rounds):
            for src in srcs:
                caller.synchronize()
                t = [time.perf_counter()]
                plain_id(src, eng.n)
                t.append(time.perf_counter())
                with eng._lock:
                    eng._check_open()
                    t.append(time.perf_counter())
                    fresh, server.spare = server.spare, None
                    dst = fresh.data.ptr
                    t.append(time.perf_counter())
                    seq = server.seq = server.seq + 1
                    words = server.words
                    words[es._DST_WIDE] = dst | (seq & DST_TAG_MASK) << DST_TAG_SHIFT
                    words[es._HEAD_WIDE] = seq | tr.internal_ids[src] << 32
                    t.append(time.perf_counter())
                    with cp.cuda.Device(tr.device_id):
                        server.spare = cp.empty(eng.n, dtype=cp.int32)
                    t.append(time.perf_counter())
                    server.wait(seq)
                    t.append(time.perf_counter())
                    tr.check_ctl(src, 1, False, server.ctl_copy)
                    t.append(time.perf_counter())
                caller.synchronize()
                t.append(time.perf_counter())
                names = ["checks", "lock", "out", "post", "refill", "spin", "ctl",
                         "caller sync"]  # fmt: skip
                for name, a, b in zip(names, t, t[1:], strict=False):
                    marks.setdefault(name, []).append((b - a) * 1e6)
    print("  served phases (median us): " + ", ".join(
        f"{k} {np.median(v):.2f}" for k, v in marks.items()))  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("graphs", help="comma-separated anchor graphs")
    ap.add_argument("variants", help="comma-separated persistent variants")
    ap.add_argument("--geometry", default="512:1", help="BLOCK:BLOCKS_PER_SM")
    ap.add_argument("--eta", type=float, default=10.0)
    ap.add_argument("--sources", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--ordering", default=None, help="natural, jaccard, rcm (default: run.py's)")
    ap.add_argument("--no-floors", action="store_true", help="skip the launch and poll floors")
    ap.add_argument("--patch", default=None, help="a patch of probe_patches.py's PATCHES")
    args = ap.parse_args()
    if args.patch:
        import probe_patches as pp

        pp.install(args.patch)
    import cupy as cp

    from blest.tuning.timing import warm_up

    geometry = tuple(int(x) for x in args.geometry.split(":"))
    floors_done = args.no_floors
    for name in args.graphs.split(","):
        bench = Bench.load(name, args.sources, ordering=args.ordering)
        for variant in args.variants.split(","):
            with bench.engine(_by_name(variant), args.eta, geometry) as eng:
                warm_up(eng, bench.sources)
                srcs = [int(s) for s in bench.sources]
                trav = []
                for _ in range(args.rounds):
                    for s in srcs:
                        eng.bfs(s, out="view")
                        trav.append(eng.stats.traversal_ms * 1e3)
                sync = cp.cuda.Device().synchronize
                whole_timed = calls(eng, srcs, args.rounds, "device", sync)
                eng.timing = False
                eng.bfs(srcs[0], out="device")
                graph_only = []
                whole = calls(eng, srcs, args.rounds, "device", sync)
                whole_view = calls(eng, srcs, args.rounds, "view", sync)
                with eng.serving():  # a device-wide sync would wait for the server's end
                    eng.bfs(srcs[0], out="device")
                    sync = cp.cuda.get_current_stream().synchronize
                    served = calls(eng, srcs, args.rounds, "device", sync)
                spins = []
                spin = eng._served.spin

                def timed_spin(seq, spin=spin, spins=spins):
                    t = time.perf_counter()
                    spin(seq)
                    spins.append((time.perf_counter() - t) * 1e6)

                eng._served.spin = timed_spin
                with eng.serving():
                    eng.bfs(srcs[0], out="device")
                    spins.clear()
                    for _ in range(args.rounds):
                        for s in srcs:
                            eng.bfs(s, out="device")
                del eng._served.spin
                served_phases(eng, srcs, args.rounds)
                tr = eng._tr
                graph = eng._fused._graph(False, eng._rules)
                stream = cp.cuda.get_current_stream()
                for _ in range(args.rounds):
                    for s in srcs:
                        tr.slot_words[0] = tr.internal_ids[s]
                        tr.slot_words[1] = tr.own_ptr
                        t0 = time.perf_counter()
                        graph()
                        stream.synchronize()
                        graph_only.append((time.perf_counter() - t0) * 1e6)
                blocks, threads = eng.grid_size, eng.block_size
                if not floors_done:
                    python_pieces(eng, srcs[0])
            print(f"{name} {variant} {blocks}x{threads} (us, mean / median):")
            for label, xs in [("traversal", trav), ("whole timed", whole_timed),
                              ("whole", whole), ("whole view", whole_view),
                              ("whole served", served), ("served spin", spins),
                              ("graph", graph_only)]:  # fmt: skip
                print(f"  {label:<14} {stat(xs)}")
            if not floors_done:
                floors_done = True
                for label, xs in [
                    ("empty", graph_floor(cp, blocks, threads, False, 2000)),
                    ("copy+empty", graph_floor(cp, blocks, threads, True, 2000)),
                    ("direct", launch_floor(cp, blocks, threads, "direct", 2000)),
                    ("direct spin", launch_floor(cp, blocks, threads, "direct spin", 2000)),
                    ("graph spin", launch_floor(cp, blocks, threads, "graph spin", 2000)),
                    ("poll 1", poll_floor(cp, 1, threads, 0, 2000)),
                    ("poll grid", poll_floor(cp, blocks, threads, 1, 2000)),
                    ("poll grid x2", poll_floor(cp, blocks, threads, 2, 2000)),
                    ("poll grid x3", poll_floor(cp, blocks, threads, 3, 2000)),
                ]:
                    print(f"  {label:<14} {stat(xs)}", flush=True)


if __name__ == "__main__":
    main()
