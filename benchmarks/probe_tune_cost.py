"""Where a screen candidate's time goes: the tuner's own steps, timed one by one.

    python3 benchmarks/probe_tune_cost.py urand-22 --count 48
    python3 benchmarks/probe_tune_cost.py kron-22 --orderings natural jaccard --sources 2

The tuner's screen (``blest.tuning.search``) times each coarse candidate on two tuning sources;
at budget 20 it reaches about 35 of urand-22's 200 (benchmarks/NOTES.md, session 21). This probe
prepares the graph as ``blest-tune`` does (every ordering, BVSS on the GPU on demand), then walks
the first ``--count`` coarse candidates in the screen's order and times, for each: the BVSS
build its (ordering, sigma) needs the first time, the engine's construction, the warm-up call,
the timed sources and ``close()``. One line a candidate, then the sums by step and by family.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from collections import defaultdict

import numpy as np
from graphs import anchor_graph

from blest.codegen.toolchain import require_gpu
from blest.runtime.device import device_smem_limit
from blest.tuning.gpu import EngineFactory
from blest.tuning.prepare import upload_all
from blest.tuning.space import coarse_candidates, family_of
from blest.tuning.tuner import _compile_check, _gpu_preparations, split_sources


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("graph")
    ap.add_argument("--count", type=int, default=48, help="coarse candidates to walk")
    ap.add_argument("--sources", type=int, default=2, help="timed sources a candidate")
    ap.add_argument("--orderings", nargs="*", default=None)
    ap.add_argument("--upload", action="store_true", help="upload_all before the walk")
    ap.add_argument("--profile", type=int, nargs="*", default=[], help="cProfile these #s' engines")
    args = ap.parse_args()

    import cupy

    device, arch, name = require_gpu()
    t0 = time.perf_counter()
    graph = anchor_graph(args.graph)
    print(f"{args.graph}: n {graph.n:,}, arcs {graph.nnz:,}, loaded in "
          f"{time.perf_counter() - t0:.1f} s on {name}")  # fmt: skip
    notes: list[str] = []
    t0 = time.perf_counter()
    preps, _ = _gpu_preparations(graph, (4, 8, 16, 32), args.orderings, notes, lambda m: None)
    print(f"orderings {list(preps)} in {time.perf_counter() - t0:.1f} s")
    if args.upload:  # as blest-tune now does before its search
        t0 = time.perf_counter()
        upload_all(preps, (4, 8, 16, 32), cupy, notes, lambda m: None)
        print(f"every BVSS and in-CSR on the GPU in {time.perf_counter() - t0:.1f} s")
    tuning, _, _ = split_sources(graph, 8)
    sources = [int(s) for s in tuning[: args.sources]]
    coarse = coarse_candidates(
        list(preps), n=graph.n, smem_limit=device_smem_limit(cupy, device), clusters=True
    )
    t0 = time.perf_counter()
    _compile_check([c.spec for c in coarse[: args.count]], arch, notes, lambda m: None)
    print(f"compiled (or found cached) in {time.perf_counter() - t0:.1f} s")
    factory = EngineFactory(preps)
    steps = ("bvss", "engine", "warmup", "timed", "close")
    by_step: dict[str, float] = defaultdict(float)
    by_family: dict[int, float] = defaultdict(float)
    print(f"{'#':>3} {'candidate':58} " + " ".join(f"{s:>8}" for s in steps) + "  traversal ms")
    for i, c in enumerate(coarse[: args.count]):
        cost = dict.fromkeys(steps, 0.0)
        t = time.perf_counter()
        preps[c.ordering].bvss(c.spec.sigma, xp=cupy)  # what factory() would build first
        cost["bvss"] = time.perf_counter() - t
        t = time.perf_counter()
        profiler = cProfile.Profile() if i in args.profile else None
        try:
            if profiler:
                profiler.enable()
            eng = factory(c)
            if profiler:
                profiler.disable()
                pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
        except Exception as exc:
            print(f"{i:>3} {c.label:58} failed: {type(exc).__name__}: {exc}"[:160])
            continue
        cost["engine"] = time.perf_counter() - t
        t = time.perf_counter()
        eng.bfs(sources[0], out="device")
        cost["warmup"] = time.perf_counter() - t
        t = time.perf_counter()
        times = []
        for s in sources:
            eng.bfs(s, out="device")
            times.append(eng.stats.traversal_ms)
        cost["timed"] = time.perf_counter() - t
        t = time.perf_counter()
        eng.close()
        cost["close"] = time.perf_counter() - t
        for s in steps:
            by_step[s] += cost[s]
        by_family[family_of(c.spec)] += sum(cost.values())
        row = " ".join(f"{1e3 * cost[s]:8.1f}" for s in steps)
        print(f"{i:>3} {c.label:58} {row}  {np.mean(times):.3f}", flush=True)
    total = sum(by_step.values())
    print(
        "sums, s: " + ", ".join(f"{s} {v:.2f}" for s, v in by_step.items()) + f"; all {total:.2f}"
    )
    print("by family, s: " + ", ".join(f"{f}: {v:.2f}" for f, v in sorted(by_family.items())))


if __name__ == "__main__":
    main()
