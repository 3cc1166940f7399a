"""Where one ``Engine.bfs(src, out="device")`` call spends its time, phase by phase.

GPU phases are timed by CUDA events (init kernel, traversal, result copy), host phases by the
wall clock (argument checks, kernel submission, waiting for the control block). Needs a GPU:

    python3 benchmarks/profile_call.py urand-20 luxembourg_osm --variant s32_eager_vss_pers
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from graphs import anchor_graph  # noqa: E402

from blest import Engine, VariantSpec  # noqa: E402
from blest.codegen.spec import variants  # noqa: E402
from blest.graph.prepared import Prepared  # noqa: E402
from blest.runtime.ordering import compute_ordering  # noqa: E402
from blest.tuning.protocol import timing_sources  # noqa: E402


def profile(eng: Engine, sources: np.ndarray) -> dict[str, float]:
    """Mean ms per phase over ``sources`` (one warm-up call first)."""
    import cupy as cp

    eng.bfs(int(sources[0]), out="device")
    ev = [cp.cuda.Event() for _ in range(4)]
    acc: dict[str, list[float]] = {}

    def add(key: str, value: float) -> None:
        acc.setdefault(key, []).append(value)

    for src in sources:
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        user, internal = eng._sources(int(src))
        t1 = time.perf_counter()
        ev[0].record()
        eng._submit_init(internal)
        ev[1].record()
        t2 = time.perf_counter()
        eng._submit_traversal(-1)
        t3 = time.perf_counter()
        eng._wait(user)
        t4 = time.perf_counter()
        ev[2].record()
        out = eng._deliver("device")
        ev[3].record()
        ev[3].synchronize()
        t5 = time.perf_counter()
        del out
        start, stop = eng._events
        add("host: check src", (t1 - t0) * 1e3)
        add("host: submit init", (t2 - t1) * 1e3)
        add("host: submit traversal", (t3 - t2) * 1e3)
        add("host: wait for ctl", (t4 - t3) * 1e3)
        add("host: deliver (copy)", (t5 - t4) * 1e3)
        add("gpu: init kernel", cp.cuda.get_elapsed_time(ev[0], ev[1]))
        add("gpu: init end -> traversal start", cp.cuda.get_elapsed_time(ev[1], start))
        add("gpu: traversal (events)", cp.cuda.get_elapsed_time(start, stop))
        add("gpu: copy", cp.cuda.get_elapsed_time(ev[2], ev[3]))
        add("whole (wall)", (t5 - t0) * 1e3)
    return {k: float(np.mean(v)) for k, v in acc.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("graphs", nargs="+")
    ap.add_argument("--variant", default="s8_lazy_vss_switch_pers")
    ap.add_argument("--ordering", default="natural", help="natural | rcm | jaccard")
    ap.add_argument("--sources", type=int, default=16)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    spec = next(s for s in variants() if s.name == args.variant)
    assert isinstance(spec, VariantSpec)
    results = {}
    for name in args.graphs:
        graph = anchor_graph(name)
        perm = None if args.ordering == "natural" else compute_ordering(graph, args.ordering)
        prepared = Prepared.from_graph(graph, spec.sigma, perm)
        with Engine(prepared, spec, block_size=1024, blocks_per_sm=1) as eng:
            phases = profile(eng, timing_sources(graph, args.sources))
        results[name] = phases
        print(f"{name} ({spec.name}, {args.ordering}, n={graph.n}):")
        for k, v in phases.items():
            print(f"  {k:<34} {v:8.3f} ms")
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
