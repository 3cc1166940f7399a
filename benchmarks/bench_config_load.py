"""Time loading a tuned config, beside a full re-sort of the graph (what a load that reordered
the graph would add).

    python3 benchmarks/bench_config_load.py kron-21 --budget 10

Tunes the graph briefly (``blest.tuning.tuner.tune``), publishes config + artifact in a
temporary folder, then times, each ``--repeat`` times: ``load_tuned(config)`` (reads the
artifact's reordered arrays as they are, builds the engine) and, for comparison,
``permute_graph(graph, permutation)`` (the full re-sort that this spares a load).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from graphs import anchor_graph

from blest.graph.ordering import permute_graph
from blest.tuning.loader import load_tuned
from blest.tuning.publish import write_tuned
from blest.tuning.tuner import tune


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("graph")
    ap.add_argument("--budget", type=float, default=10.0)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    graph = anchor_graph(args.graph)
    outcome = tune(graph, budget_s=args.budget)
    perm = outcome.prepared.permutation
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / f"{args.graph}.blest.json"
        write_tuned(outcome, cfg)
        print(f"{args.graph}: ordering {perm.name}, variant {outcome.config.spec.name}", flush=True)
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            with load_tuned(cfg) as eng:
                eng.bfs(0)
            t1 = time.perf_counter()
            permute_graph(graph, perm)
            t2 = time.perf_counter()
            print(f"load_tuned + first bfs {t1 - t0:.2f} s; the old re-sort alone {t2 - t1:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
