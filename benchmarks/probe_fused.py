"""What running a call's init, traversal and deliver pass in one kernel saves the whole call.

    python3 benchmarks/probe_fused.py twitch_ENGB,kron-21 s32_eager_vss_pers,... --geometry 512:1

Times ``bfs(src, out="device")`` from the host, back to back over the protocol's sources
(``--rounds`` times), three ways on one engine: timed (CUDA events around the traversal: init,
traversal and deliver pass are three launches), untimed in three launches (the engine's private
``_fuse`` off), and untimed in one launch (what ``timing=False`` runs). Prints mean and median
in us beside the traversal (events) and writes them to ``--out`` as JSON. ``--levels N``
prints instead, for the first two of N sources, each level's us (block 0's clock) and the bottom-up
levels of a timed call and of a one-launch call, and the GPU time of each mode's captured
graph over the N (CUDA events around its launch alone, medians).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from graphs import anchor_graph
from run import _by_name

from blest.codegen.toolchain import require_gpu
from blest.graph.prepared import Prepared
from blest.runtime.factory import make_engine
from blest.runtime.protocol import Geometry
from blest.tuning.protocol import timing_sources, warm_up

MODES = {"timed, 3 launches": (True, False), "untimed, 3 launches": (False, False),
         "untimed, 1 launch": (False, True)}  # fmt: skip


def whole_calls(eng, sources, rounds: int) -> list[float]:
    """Host us of each synchronized ``out="device"`` call, back to back."""
    import cupy as cp

    eng.bfs(int(sources[0]), out="device")  # captures this setting's graph
    walls = []
    for _ in range(rounds):
        for src in sources:
            cp.cuda.Device().synchronize()
            t0 = time.perf_counter()
            eng.bfs(int(src), out="device")
            cp.cuda.Device().synchronize()
            walls.append((time.perf_counter() - t0) * 1e6)
    return walls


def graph_us(eng, sources) -> dict[str, float]:
    """Median GPU us of each mode's captured graph (levels left in the engine's buffer)."""
    import cupy as cp

    start, stop = cp.cuda.Event(), cp.cuda.Event()
    out = {}
    for mode, (timing, fuse) in MODES.items():
        eng.timing, eng._fuse = timing, fuse
        eng.bfs(int(sources[0]), out="view")
        graph, times, walls = eng._call_graph(False), [], []
        for src in sources:
            eng._call_slot[0] = int(eng._new_of_old[int(src)])
            eng._call_slot[1] = eng._own_ptr
            t0 = time.perf_counter()
            start.record()
            graph()
            stop.record()
            stop.synchronize()
            walls.append((time.perf_counter() - t0) * 1e6)
            times.append(cp.cuda.get_elapsed_time(start, stop) * 1e3)
        out[mode] = float(np.median(times))
        out[mode + " host"] = float(np.median(walls))
    return out


def timelines(prepared, spec, geometry, sources, name: str) -> None:
    """Per-level us and bottom-up levels of each source, timed and in one launch."""
    with make_engine(prepared, spec, geometry=geometry, device="gpu") as eng:
        cells = "  ".join(f"{m} {t:6.1f}" for m, t in graph_us(eng, sources).items())
        print(f"{name} {spec.name} graph GPU us (median): {cells}", flush=True)
    with make_engine(prepared, spec, geometry=geometry, device="gpu", record_levels=True) as eng:
        for src in sources[:2]:
            for mode in ("timed, 3 launches", "untimed, 1 launch"):
                eng.timing, eng._fuse = MODES[mode]
                for _ in range(3):  # the last of three
                    eng.bfs(int(src), out="device")
                times, bottom_up = eng.level_times_ms()
                us = " ".join(f"{t * 1e3:.1f}" for t in times)
                print(f"{name} {spec.name} src {int(src)} {mode}: bottom-up {list(bottom_up)} "
                      f"sum {times.sum() * 1e3:.1f} us: {us}", flush=True)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("graphs")
    ap.add_argument("variants")
    ap.add_argument("--geometry", default="512:1", help="BLOCK:BLOCKS_PER_SM")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=None)
    ap.add_argument("--levels", type=int, default=0)
    args = ap.parse_args(argv)
    import cupy as cp

    _, _, gpu = require_gpu()
    block, per_sm = (int(x) for x in args.geometry.split(":"))
    rows = []
    for name in args.graphs.split(","):
        graph = anchor_graph(name)
        sources = timing_sources(graph)
        for variant in args.variants.split(","):
            spec = _by_name(variant)
            prepared = Prepared.from_graph(graph, spec.sigma, xp=cp)
            geometry = Geometry(block, per_sm, None, 0)
            if args.levels:
                timelines(prepared, spec, geometry, sources[: args.levels], name)
                continue
            with make_engine(prepared, spec, geometry=geometry, device="gpu") as eng:
                warm_up(eng, int(sources[0]))
                trav = []
                for src in sources:
                    eng.bfs(int(src), out="device")
                    trav.append(eng.stats.traversal_ms * 1e3)
                row = {"gpu": gpu, "graph": name, "variant": variant, "geometry": args.geometry,
                       "traversal_us": [float(np.mean(trav)), float(np.median(trav))]}  # fmt: skip
                for mode, (timing, fuse) in MODES.items():
                    eng.timing, eng._fuse = timing, fuse
                    walls = whole_calls(eng, sources, args.rounds)
                    row[mode] = [float(np.mean(walls)), float(np.median(walls))]
                rows.append(row)
                cells = "  ".join(f"{m} {row[m][0]:6.1f}/{row[m][1]:6.1f}" for m in MODES)
                print(f"{name:<15} {variant:<28} traversal {row['traversal_us'][0]:6.1f}/"
                      f"{row['traversal_us'][1]:6.1f}  {cells}", flush=True)  # fmt: skip
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
