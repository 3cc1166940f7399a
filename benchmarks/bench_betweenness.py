"""Betweenness centrality on the GPU: the warm whole call ``eng.betweenness()`` of an engine
(exact over every vertex, or ``k`` sampled sources), best and median of ``--reps``, beside
NetworKit's exact Betweenness on 16 threads where ``--networkit`` asks for it.

    python3 benchmarks/bench_betweenness.py --graphs wiki_chameleon twitch_FR \
        musae_facebook luxembourg_osm kron-21:100 --out bench-out/betweenness.json

A graph written ``NAME:K`` runs K sampled sources (seed 1); the first call of each engine
compiles and is not timed. ``--variants bc_k32_block bc_k2_queue:256`` runs each named kernel
(``bc_k{kappa}_{form}``, optionally ``:BLOCK`` threads) on every graph instead of the engine's
choice; ``--warm-k K`` makes the untimed first call one of K sampled sources (with one rep,
for calls of tens of seconds; the repeat check is then skipped).

    python3 benchmarks/bench_betweenness.py --graphs luxembourg_osm --reps 1 --warm-k 64 \
        --variants bc_k2_queue bc_k32_block
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from graphs import anchor_graph

import blest
from blest.codegen.bcspec import BCSpec


def parse_variant(text: str) -> tuple[BCSpec, int | None]:
    """``bc_k2_queue`` or ``bc_k2_queue:256``: the spec and the block size (None: default)."""
    name, _, block = text.partition(":")
    parts = name.split("_")
    if len(parts) != 3 or parts[0] != "bc" or not parts[1].startswith("k"):
        raise SystemExit(f"--variants: expected bc_k<kappa>_<form>[:block], got {text!r}")
    return BCSpec(int(parts[1][1:]), parts[2]), int(block) if block else None


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
    ap.add_argument("--variants", nargs="+", help="bc_k<kappa>_<form>[:block] (default: the "
                    "engine's choice)")  # fmt: skip
    ap.add_argument("--warm-k", type=int, help="the untimed first call: K sampled sources")
    ap.add_argument("--out")
    args = ap.parse_args()
    rows = []
    variants = [parse_variant(v) for v in args.variants] if args.variants else [None]
    for item in args.graphs:
        name, _, k = item.partition(":")
        graph = anchor_graph(name)
        kw = {"k": int(k), "seed": 1} if k else {}
        warm = {"k": min(args.warm_k, graph.n), "seed": 1} if args.warm_k else kw
        scores = {}
        for variant in variants:
            with blest.make_engine(graph) as eng:
                if variant is not None:
                    spec, block = variant
                    eng.betweenness_runners.configure(spec, *(() if block is None else (block,)))
                t0 = time.perf_counter()
                first = eng.betweenness(**warm)
                cold = time.perf_counter() - t0
                times = []
                for _ in range(args.reps):
                    t0 = time.perf_counter()
                    again = eng.betweenness(**kw)
                    times.append(time.perf_counter() - t0)
                same = bool(first.tobytes() == again.tobytes()) if warm is kw else None
                make = getattr(eng, "betweenness_runner", None)  # the GPU's (a CPU engine: none)
                summary = getattr(make(), "memory_summary", lambda: "")() if make else "CPU"
            label = item if variant is None else f"{item} {variant[0].name}"
            scores[label] = again
            identical = all(a.tobytes() == again.tobytes() for a in scores.values())
            row = {"graph": name, "n": graph.n, "arcs": graph.nnz, "k": int(k) if k else None,
                   "variant": None if variant is None else variant[0].name, "first_s": cold,
                   "best_s": min(times), "median_s": statistics.median(times),
                   "repeat_identical": same, "identical_to_first_variant": identical,
                   "runner": summary}  # fmt: skip
            if args.networkit and not k and variant is variants[0]:
                row["networkit_s"] = networkit_seconds(graph)
            rows.append(row)
            print(f"{label:<30} n {graph.n:>9,}  first {cold:8.3f} s  "
                  f"best {min(times) * 1e3:10.2f} ms  median {row['median_s'] * 1e3:10.2f} ms  "
                  f"repeat identical {same}  variants identical {identical}  {summary}",
                  flush=True)  # fmt: skip
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
