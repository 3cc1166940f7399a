"""What each node of a captured BFS call costs the whole call (medians of many calls).

    python3 benchmarks/probe_graph_nodes.py twitch_ENGB --variant s32_eager_vss_pers

Captures the engine's plain call with nodes left out, in turn (the two timing events, the
16-byte slot copy, the deliver pass), and times each graph's launch and wait from the host
(the seed and destination fixed), beside the public ``bfs(src, out="view")`` and
``out="device"``. The difference between the public call and the bare launch-and-wait of
the full graph is the Python around it. Needs a GPU; graphs without the slot copy or the
deliver pass give wrong answers (the times are all they are for).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from graphs import anchor_graph

from blest import Engine
from blest.codegen.spec import variants
from blest.graph.prepared import Prepared
from blest.runtime.call_graph import CapturedCall, copy_async, record_event
from blest.tuning.protocol import timing_sources, warm_up

SHAPES = {  # name: (events, slot copy, deliver)
    "full": (True, True, True),
    "no events": (False, True, True),
    "no slot copy": (True, False, True),
    "no deliver": (True, True, False),
    "init + traversal only": (False, False, False),
}


def enqueue(eng: Engine, stream, events: bool, slot_copy: bool, deliver: bool) -> None:
    """The engine's plain call (identity ordering, device result) with nodes left out."""
    cp, slot = eng._cp, eng._slot
    if slot_copy:
        copy_async(cp, slot.data.ptr, eng._call_slot.ctypes.data, slot.nbytes, stream)
    seeds = (slot, np.int32(1), np.int32(0))
    if eng.spec.launch == "block":
        eng._block_seeds = seeds
    else:
        eng._launch("init", seeds)
    start, stop = eng._events
    if events:
        record_event(start, stream)
    eng._enqueue_traversal(-1)
    if events:
        record_event(stop, stream)
    if deliver:
        eng._enqueue_deliver(slot.data.ptr + slot.itemsize, eng._host_ctl.ctypes.data)


def median_us(fn, sources: np.ndarray, repeat: int, mean: bool = False) -> float:
    """Median (or mean) host microseconds of ``fn(src)`` over the sources, ``repeat`` times."""
    import cupy as cp

    walls = []
    for _ in range(repeat):
        for src in sources:
            cp.cuda.Device().synchronize()
            t0 = time.perf_counter()
            fn(int(src))
            walls.append((time.perf_counter() - t0) * 1e6)
    return float(np.mean(walls) if mean else np.median(walls))


def host_pieces(eng: Engine, src: int, calls: int = 4000) -> dict[str, float]:
    """Mean host microseconds of each piece of Python a plain call runs (no GPU work but the
    full call's), the pieces as ``Engine.bfs`` and ``_replay`` run them."""
    import cupy as cp

    from blest.runtime.engine_capture import plain_id

    graph = eng._call_graph(False)
    pieces = {
        "lock + Device context": lambda: _enter(eng._lock, cp.cuda.Device(eng._device_id)),
        "checks (open, out, plain_id)": lambda: (
            eng._check_open(),
            eng._check_out("view"),
            plain_id(src, eng.n),
        ),
        "_call_graph lookup": lambda: eng._call_graph(False),
        "internal id + slot writes": lambda: eng._call_slot.__setitem__(
            0, int(eng._new_of_old[src])
        ),
        "get_current_stream": cp.cuda.get_current_stream,
        "cp.empty(n)": lambda: cp.empty(eng.n, dtype=cp.int32),
        "_check_ctl": lambda: eng._check_ctl(src, 1),
        "graph launch + wait": lambda: (graph(), cp.cuda.get_current_stream().synchronize()),
        "public bfs(out='view')": lambda: eng.bfs(src, out="view"),
    }
    res = {}
    for name, fn in pieces.items():
        fn()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        res[f"host: {name}"] = (time.perf_counter() - t0) / calls * 1e6
    return res


def _enter(*managers) -> None:
    for m in managers:
        with m:
            pass


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("graphs", nargs="+")
    ap.add_argument("--variant", default="s32_eager_vss_pers")
    ap.add_argument("--geometry", default="1024:1", help="block size:blocks per SM")
    ap.add_argument("--sources", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=8)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    import cupy as cp

    spec = next(s for s in variants() if s.name == args.variant)
    block, per_sm = (int(x) for x in args.geometry.split(":"))
    results: dict[str, dict[str, float]] = {}
    for name in args.graphs:
        graph = anchor_graph(name)
        sources = timing_sources(graph, args.sources)
        prepared = Prepared.from_graph(graph, spec.sigma)
        row: dict[str, float] = {}
        with Engine(prepared, spec, block_size=block, blocks_per_sm=per_sm) as eng:
            warm_up(eng, int(sources[0]))
            for out in ("view", "device"):
                row[f"public bfs(out={out!r})"] = median_us(
                    lambda s, o=out: eng.bfs(s, out=o), sources, args.repeat
                )
            row["public bfs(out='device'), mean"] = median_us(
                lambda s: eng.bfs(s, out="device"), sources, args.repeat, mean=True
            )
            trav = []
            for src in sources:
                eng.bfs(int(src), out="view")
                trav.append(eng.stats.traversal_ms * 1e3)
            row["traversal (stats)"] = float(np.median(trav))
            row["traversal (stats), mean"] = float(np.mean(trav))
            stream = cp.cuda.get_current_stream()
            for shape, flags in SHAPES.items():
                graph_call = CapturedCall(cp, lambda st, f=flags: enqueue(eng, st, *f))

                def launch_and_wait(src: int, g=graph_call, st=stream) -> None:
                    eng._call_slot[0] = src
                    eng._call_slot[1] = 0
                    g()
                    st.synchronize()

                row[f"graph: {shape}"] = median_us(launch_and_wait, sources, args.repeat)
            row.update(host_pieces(eng, int(sources[0])))
        results[name] = row
        print(f"{name} ({spec.name}, {args.geometry}, n={graph.n}), medians in us:")
        for key, value in row.items():
            print(f"  {key:<34} {value:8.1f}")
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
