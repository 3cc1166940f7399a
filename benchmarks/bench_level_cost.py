"""The fixed cost of one BFS level on this GPU, split into its parts.

Three measurements, each a model input for the latency-bound graphs (road networks, meshes):

1. ``chain``: the latency of one dependent L2 round trip (``ld.global.cg`` pointer chase in a
   4 MiB buffer) and of one dependent returning atomic (``atomicAdd`` chase).
2. ``barrier``: one grid barrier of the persistent driver (``grid_barrier.cu.j2``, rendered as
   the kernels use it), for several grid sizes of 1024-thread blocks.
3. ``path``: a whole level of each engine variant family on a path graph (one vertex per
   level), i.e. the per-level cost that no work hides, over grid sizes and small_queue.

Usage: ``python3 benchmarks/bench_level_cost.py [--out DIR]`` (needs a GPU).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from blest import Engine, Graph
from blest.codegen.compile import compile_source
from blest.codegen.render import render_snippet
from blest.codegen.spec import VariantSpec
from blest.runtime.launch import launch, load_module

_PROBES = """
{% include "common.cu.j2" %}
{% include "grid_barrier.cu.j2" %}

// Dependent L2 loads: next = buf[next], `steps` times; the final index defeats elimination.
extern "C" __global__ void load_chase(const int* buf, int steps, int* out, u64* ns) {
    int i = 0;
    const u64 t0 = global_timer_ns();
    for (int k = 0; k < steps; ++k) i = __ldcg(buf + i);
    const u64 t1 = global_timer_ns();
    out[0] = i;
    ns[0] = t1 - t0;
}

// Dependent returning atomics: each adds 0 at the index the previous one returned.
extern "C" __global__ void atomic_chase(int* buf, int steps, int* out, u64* ns) {
    int i = 0;
    const u64 t0 = global_timer_ns();
    for (int k = 0; k < steps; ++k) i = atomicAdd(buf + i, 0);
    const u64 t1 = global_timer_ns();
    out[0] = i;
    ns[0] = t1 - t0;
}

// `rounds` grid barriers back to back (cooperative launch).
extern "C" __global__ void __launch_bounds__(1024) barriers(u32* ctl, int rounds, u64* ns) {
    u64 target = 0;
    const u64 t0 = global_timer_ns();
    for (int k = 0; k < rounds; ++k) grid_barrier(ctl, target);
    if (blockIdx.x == 0 && threadIdx.x == 0) ns[0] = global_timer_ns() - t0;
}
"""


def _probe_module():
    import cupy as cp

    from blest.codegen import toolchain

    source = render_snippet(_PROBES, VariantSpec())
    _dev, arch, _name = toolchain.require_gpu(None)
    return load_module(compile_source(source, arch=arch, target="cubin"), cp.cuda.Device().id)


def chain_latency(mod, steps: int = 20000) -> dict:
    import cupy as cp

    rng = np.random.default_rng(7)
    n = 1 << 20  # 4 MiB: L2-resident
    perm = rng.permutation(n).astype(np.int32)
    nxt = np.empty(n, dtype=np.int32)
    nxt[perm] = np.roll(perm, -1)  # one cycle through every slot
    buf = cp.asarray(nxt)
    out = cp.zeros(1, dtype=cp.int32)
    ns = cp.zeros(1, dtype=cp.uint64)
    res = {}
    for name in ("load_chase", "atomic_chase"):
        f = mod.get_function(name)
        for _ in range(2):  # the first run warms L2
            launch(f, (1,), (1,), (buf, np.int32(steps), out, ns))
        cp.cuda.Device().synchronize()
        res[name + "_ns"] = float(ns.get()[0]) / steps
    return res


def barrier_cost(mod, grids: list[int], rounds: int = 2000) -> dict:
    import cupy as cp

    f = mod.get_function("barriers")
    ns = cp.zeros(1, dtype=cp.uint64)
    out = {}
    for g in grids:
        ctl = cp.zeros(32, dtype=cp.uint32)
        for _ in range(2):
            ctl[:] = 0
            launch(f, (g,), (1024,), (ctl, np.int32(rounds), ns), cooperative=True)
        cp.cuda.Device().synchronize()
        out[str(g)] = float(ns.get()[0]) / rounds
    return out


def path_levels(n: int, specs: list[VariantSpec], grids: list[int], queues: list[int]) -> list:
    src = np.arange(n - 1)
    graph = Graph.from_arcs(src, src + 1, n, directed=True)
    rows = []
    for spec in specs:
        for g in grids:
            for sq in queues:
                with Engine(
                    graph, spec, block_size=1024, blocks_per_sm=1, grid_blocks=g, small_queue=sq
                ) as eng:
                    eng.bfs(0)
                    t = []
                    for _ in range(5):
                        eng.bfs(0)
                        t.append(eng.stats.traversal_ms)
                    levels = eng.stats.depth + 1
                    us = 1000 * float(np.median(t)) / levels
                row = {"variant": spec.name, "grid": g, "small_queue": sq, "us_per_level": us}
                rows.append(row)
                print(f"  path {spec.name:<32} grid {g:4d} sq {sq:4d}: {us:6.2f} us/level")
    return rows


def main(argv: list[str] | None = None) -> int:
    import cupy as cp

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="bench-out")
    ap.add_argument("--path-n", type=int, default=2048)
    args = ap.parse_args(argv)
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    grids = sorted({1, 8, 33, 66, sms, 2 * sms} - {0})
    t = time.perf_counter()
    mod = _probe_module()
    chain = chain_latency(mod)
    print(f"chain: {chain}")
    barrier = barrier_cost(mod, [g for g in grids if g <= sms])
    print(f"barrier ns by grid blocks: {barrier}")
    specs = [
        VariantSpec(sigma=16, update="eager", switching=False),
        VariantSpec(sigma=8, update="lazy", switching=True),
        VariantSpec(sigma=16, update="lazy", dirty_sets=True, switching=True),
    ]
    path = path_levels(args.path_n, specs, [g for g in grids if g <= sms], [0, 128])
    result = {"device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode()}
    result.update(chain=chain, barrier_ns=barrier, path=path, seconds=time.perf_counter() - t)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "level_cost.json").write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
