"""Whole call after the GPU sat idle: does a gap between calls cost the next call?

    python3 benchmarks/probe_idle.py kron-21 --variant s16_lazy_csr_switch_pers --gap-ms 50

Times ``bfs(src, out="device")`` (host clock, after a synchronize) and its
``stats.traversal_ms`` over the protocol's sources three ways: back to back; after sleeping
``--gap-ms``; after the host computed for ``--gap-ms`` (as a benchmark loop does when it checks
each result on the CPU between calls); after a ``bfs(src)`` call with a host result, as
``bench_engine`` runs one between its timed calls. First the same for an empty kernel's launch
and synchronize, to tell the GPU's own wake-up from the engine's. Prints mean and median of
both, in microseconds.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from graphs import anchor_graph
from run import _by_name

from blest.graph.prepared import Prepared
from blest.runtime.factory import make_engine
from blest.runtime.protocol import Geometry
from blest.tuning.protocol import timing_sources, warm_up


def busy(ms: float) -> None:
    end = time.perf_counter() + ms / 1e3
    x = 0
    while time.perf_counter() < end:
        x += 1


GAPS = ("back to back", "after sleep", "after host work", "after a host call")


def gap(label: str, ms: float, host_call=None) -> None:
    """Leave the GPU idle as ``label`` says (``host_call``: the call "after a host call" runs)."""
    if label == "after sleep":
        time.sleep(ms / 1e3)
    elif label == "after host work":
        busy(ms)
    elif label == "after a host call":
        host_call()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("graphs", nargs="+")
    ap.add_argument("--variant", default="s16_lazy_csr_switch_pers")
    ap.add_argument("--gap-ms", type=float, default=50.0)
    ap.add_argument("--sources", type=int, default=32)
    args = ap.parse_args(argv)
    import cupy as cp

    noop = cp.RawKernel('extern "C" __global__ void noop() {}', "noop")
    print("empty kernel launch + synchronize, us: mean / median")
    for label in GAPS[:3]:
        walls = []
        for _ in range(args.sources):
            gap(label, args.gap_ms)
            cp.cuda.Device().synchronize()
            t0 = time.perf_counter()
            noop((1,), (32,), ())
            cp.cuda.Device().synchronize()
            walls.append((time.perf_counter() - t0) * 1e6)
        print(f"  {label:<16} {np.mean(walls):8.1f} {np.median(walls):8.1f}", flush=True)
    spec = _by_name(args.variant)
    for name in args.graphs:
        graph = anchor_graph(name)
        sources = timing_sources(graph, args.sources)
        prepared = Prepared.from_graph(graph, spec.sigma, xp=cp)
        geometry = Geometry(1024, 1, None, 0)
        with make_engine(prepared, spec, geometry=geometry, device="gpu") as eng:
            warm_up(eng, int(sources[0]))
            print(f"{name} ({spec.name}), us: whole mean / median, traversal mean / median")
            for label in GAPS:
                whole, trav = [], []
                for src in sources:
                    gap(label, args.gap_ms, lambda s=int(src): eng.bfs(s))
                    cp.cuda.Device().synchronize()
                    t0 = time.perf_counter()
                    dev = eng.bfs(int(src), out="device")
                    cp.cuda.Device().synchronize()
                    whole.append((time.perf_counter() - t0) * 1e6)
                    trav.append(eng.stats.traversal_ms * 1e3)
                    del dev
                print(
                    f"  {label:<16} {np.mean(whole):8.1f} {np.median(whole):8.1f}"
                    f" {np.mean(trav):8.1f} {np.median(trav):8.1f}",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
