"""Betweenness centrality on the GPU: the warm whole call ``eng.betweenness()`` of an engine
(exact over every vertex, or ``k`` sampled sources), best and median of ``--reps``, beside
NetworKit's exact Betweenness on 16 threads where ``--networkit`` asks for it.

    python3 benchmarks/bench_betweenness.py --graphs wiki_chameleon twitch_FR \
        musae_facebook luxembourg_osm kron-21:100 --out bench-out/betweenness.json

A graph written ``NAME:K`` runs K sampled sources (seed 1); the first call of each engine
compiles and is not timed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from graphs import anchor_graph

import blest


def networkit_seconds(graph) -> float:
    """NetworKit's exact Betweenness (normalized) on every thread, one run."""
    import networkit as nk

    g = nk.Graph(graph.n, directed=graph.directed)
    src = blest.datasets.classes.arcs_of(graph)
    for u, v in zip(*src, strict=True):
        if graph.directed or u < v:
            g.addEdge(int(u), int(v))
    t0 = time.perf_counter()
    nk.centrality.Betweenness(g, normalized=True).run()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--graphs", nargs="+", required=True, help="NAME or NAME:K")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--networkit", action="store_true")
    ap.add_argument("--out")
    args = ap.parse_args()
    rows = []
    for item in args.graphs:
        name, _, k = item.partition(":")
        graph = anchor_graph(name)
        kw = {"k": int(k), "seed": 1} if k else {}
        with blest.make_engine(graph) as eng:
            t0 = time.perf_counter()
            first = eng.betweenness(**kw)
            cold = time.perf_counter() - t0
            times = []
            for _ in range(args.reps):
                t0 = time.perf_counter()
                again = eng.betweenness(**kw)
                times.append(time.perf_counter() - t0)
            same = bool(first.tobytes() == again.tobytes())
            make = getattr(eng, "betweenness_runner", None)  # the GPU's (a CPU engine has none)
            summary = getattr(make(), "memory_summary", lambda: "")() if make else "CPU"
        row = {"graph": name, "n": graph.n, "arcs": graph.nnz, "k": int(k) if k else None,
               "first_s": cold, "best_s": min(times), "median_s": statistics.median(times),
               "repeat_identical": same, "runner": summary}  # fmt: skip
        if args.networkit and not k:
            row["networkit_s"] = networkit_seconds(graph)
        rows.append(row)
        print(f"{item:<18} n {graph.n:>9,}  first {cold:8.3f} s  best {min(times) * 1e3:10.2f} ms"
              f"  median {row['median_s'] * 1e3:10.2f} ms  identical {same}  {summary}",
              flush=True)  # fmt: skip
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
