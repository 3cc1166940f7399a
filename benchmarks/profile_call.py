"""Where one ``Engine.bfs`` call spends its time, phase by phase (medians over many calls).

GPU phases are timed by CUDA events (init kernel, traversal, result copy), host phases by the
wall clock (argument checks, kernel submission, waiting for the control block, delivery). Next
to them: the public call with each ``out`` (``"view"``, ``"device"``, None), timed as
``benchmarks/run.py`` times it, launched kernel by kernel and replayed from a captured CUDA
graph, and the floor of any call on this machine: one empty kernel
launched the engine's way and waited for by the same pinned copy. ``--cprofile`` adds the
Python functions that take the most time over the ``"view"`` calls. Needs a GPU:

    python3 benchmarks/profile_call.py twitch_ENGB luxembourg_osm --variant s32_eager_vss_pers
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import time
from pathlib import Path

import numpy as np
from graphs import anchor_graph  # noqa: E402

from blest import Engine  # noqa: E402
from blest.codegen.spec import variants  # noqa: E402
from blest.graph.prepared import Prepared  # noqa: E402
from blest.runtime.ordering import compute_ordering  # noqa: E402
from blest.tuning.protocol import timing_sources, warm_up  # noqa: E402

EMPTY = 'extern "C" __global__ void blest_empty(unsigned* ctl) { if (ctl[0] == 7u) ctl[1] = 1u; }'


def phases(eng: Engine, sources: np.ndarray, repeat: int) -> dict[str, float]:
    """Median ms of each phase of ``eng.bfs(src, out="device")``, split as the engine does."""
    import cupy as cp

    ev = [cp.cuda.Event() for _ in range(4)]
    acc: dict[str, list[float]] = {}

    def add(key: str, value: float) -> None:
        acc.setdefault(key, []).append(value)

    device = cp.cuda.Device()
    for _ in range(repeat):
        for src in sources:
            device.synchronize()
            t0 = time.perf_counter()
            user, internal = eng._seeds(int(src))
            limit = eng._depth_limit(None)
            t1 = time.perf_counter()
            ev[0].record()
            eng._submit_init(internal[0])
            ev[1].record()
            t2 = time.perf_counter()
            eng._submit_traversal(limit)
            t3 = time.perf_counter()
            eng._wait(int(user[0]))
            t4 = time.perf_counter()
            ev[2].record()
            out = eng._deliver("device")
            ev[3].record()
            t5 = time.perf_counter()
            ev[3].synchronize()
            t6 = time.perf_counter()
            del out
            start, stop = eng._events
            add("host: check src", (t1 - t0) * 1e3)
            add("host: submit init", (t2 - t1) * 1e3)
            add("host: submit traversal", (t3 - t2) * 1e3)
            add("host: wait for ctl", (t4 - t3) * 1e3)
            add("host: deliver (submit copy)", (t5 - t4) * 1e3)
            add("host: wait for copy", (t6 - t5) * 1e3)
            add("gpu: init kernel", cp.cuda.get_elapsed_time(ev[0], ev[1]))
            add("gpu: init end -> traversal start", cp.cuda.get_elapsed_time(ev[1], start))
            add("gpu: traversal (events)", cp.cuda.get_elapsed_time(start, stop))
            add("gpu: traversal stop -> copy start", cp.cuda.get_elapsed_time(stop, ev[2]))
            add("gpu: copy", cp.cuda.get_elapsed_time(ev[2], ev[3]))
            add("whole (wall, split)", (t6 - t0) * 1e3)
    return {k: float(np.median(v)) for k, v in acc.items()}


def public_calls(eng: Engine, sources: np.ndarray, repeat: int) -> dict[str, float]:
    """Median ms of the public call with each ``out``, timed as benchmarks/run.py does, and
    the median traversal of the same calls."""
    import cupy as cp

    res: dict[str, float] = {}
    trav: list[float] = []
    for out in ("view", "device", None):
        wall = []
        for _ in range(repeat):
            for src in sources:
                cp.cuda.Device().synchronize()
                t0 = time.perf_counter()
                eng.bfs(int(src), out=out)
                cp.cuda.Device().synchronize()
                wall.append((time.perf_counter() - t0) * 1e3)
                trav.append(eng.stats.traversal_ms)
        res[f"public: bfs(out={out!r})"] = float(np.median(wall))
    res["public: traversal (stats)"] = float(np.median(trav))
    return res


def floor(calls: int) -> dict[str, float]:
    """Median ms of an empty kernel launched and waited for the engine's way."""
    import cupy as cp

    from blest.codegen.compile import compile_source
    from blest.runtime.device import pinned_array
    from blest.runtime.launch import PreparedLaunch, load_module

    arch = f"sm_{cp.cuda.Device().compute_capability}"
    binary = compile_source(EMPTY, arch=arch, target="cubin")
    kernel = load_module(binary, cp.cuda.Device().id)["blest_empty"]
    ctl = cp.zeros(8, dtype=cp.uint32)
    host = pinned_array(cp, 8, np.uint32)
    launch = PreparedLaunch(kernel, (132,), (1024,), (ctl,))
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    wall, gpu, sync_only = [], [], []
    for _ in range(calls):
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        start.record()
        launch()
        stop.record()
        ctl.get(out=host)
        wall.append((time.perf_counter() - t0) * 1e3)
        gpu.append(cp.cuda.get_elapsed_time(start, stop))
    for _ in range(calls):
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        ctl.get(out=host)
        sync_only.append((time.perf_counter() - t0) * 1e3)
    return {
        "floor: launch + ctl copy (wall)": float(np.median(wall)),
        "floor: empty kernel (events)": float(np.median(gpu)),
        "floor: ctl copy alone (wall)": float(np.median(sync_only)),
    }


def host_profile(eng: Engine, sources: np.ndarray, top: int) -> str:
    """cProfile of the ``"view"`` calls: the functions with the most own time."""
    prof = cProfile.Profile()
    prof.enable()
    for src in sources:
        eng.bfs(int(src), out="view")
    prof.disable()
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(top)
    return text.getvalue()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("graphs", nargs="+")
    ap.add_argument("--variant", default="s32_eager_vss_pers")
    ap.add_argument("--geometry", default="1024:1", help="block size:blocks per SM")
    ap.add_argument("--ordering", default="natural", help="natural | rcm | jaccard")
    ap.add_argument("--sources", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=8, help="passes over the sources")
    ap.add_argument("--cprofile", type=int, default=0, help="print the top N host functions")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    spec = next(s for s in variants() if s.name == args.variant)
    block, per_sm = (int(x) for x in args.geometry.split(":"))
    results: dict[str, dict[str, float]] = {"floor": floor(200)}
    for key, value in results["floor"].items():
        print(f"  {key:<50} {value:8.4f} ms")
    for name in args.graphs:
        graph = anchor_graph(name)
        perm = None if args.ordering == "natural" else compute_ordering(graph, args.ordering)
        prepared = Prepared.from_graph(graph, spec.sigma, perm)
        sources = timing_sources(graph, args.sources)
        geometry = {"block_size": block, "blocks_per_sm": per_sm}
        with Engine(prepared, spec, capture=False, **geometry) as eng:
            warm_up(eng, int(sources[0]))
            row = phases(eng, sources, args.repeat)
            launched = public_calls(eng, sources, args.repeat)
            row.update({f"{k} [launched]": v for k, v in launched.items()})
        with Engine(prepared, spec, **geometry) as eng:
            warm_up(eng, int(sources[0]))
            captured = public_calls(eng, sources, args.repeat)
            row.update({f"{k} [captured]": v for k, v in captured.items()})
            eng.timing = False  # no events: stats.traversal_ms is NaN
            untimed = public_calls(eng, sources, args.repeat)
            row.update({f"{k} [captured, untimed]": v for k, v in untimed.items() if "(out" in k})
            eng.timing = True
            report = host_profile(eng, sources, args.cprofile) if args.cprofile else ""
        results[name] = row
        print(f"{name} ({spec.name}, {args.geometry}, {args.ordering}, n={graph.n}):")
        for key, value in row.items():
            print(f"  {key:<50} {value:8.4f} ms")
        if report:
            print(report)
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
