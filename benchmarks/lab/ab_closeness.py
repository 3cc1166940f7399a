"""Closeness of every vertex with a fixed multi-source choice, for comparing two trees of blest
in one GPU session (run it once with each tree first on PYTHONPATH): the warm whole call
``eng.closeness()``, best and median of ``--reps``, on the small anchor graphs.

The choices are the tuned ones the README's closeness table names: the dense form on the three
small social graphs, the queue form (kappa 2, 256 threads) on luxembourg_osm.

    PYTHONPATH=$PWD python3 benchmarks/lab/ab_closeness.py --out result.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from graphs import anchor_graph  # noqa: E402

try:
    from blest.codegen.densespec import DenseSpec  # noqa: E402
except ImportError:  # an older tree
    from blest.codegen.dense import DenseSpec  # noqa: E402
from blest.codegen.msspec import MSSpec  # noqa: E402
from blest.graph.prepared import Prepared  # noqa: E402
from blest.runtime.engine import Engine  # noqa: E402

#: graph -> (dense spec or None, MSSpec, block size)
CHOICES = {
    "wiki_chameleon": (DenseSpec(4, 32), MSSpec(8, 256, "grid"), 512),
    "twitch_FR": (DenseSpec(4, 32), MSSpec(8, 256, "grid"), 512),
    "musae_facebook": (DenseSpec(4, 32), MSSpec(8, 256, "grid"), 512),
    "luxembourg_osm": (None, MSSpec(8, 2, "queue", "csr"), 256),
}


def configure(eng, spec, block, dense) -> None:
    """The engine's multi-source choice, through whichever interface the tree has."""
    try:
        from blest.runtime.many import DenseChoice
    except ImportError:  # an older tree
        from blest.runtime.engine_multi import DenseChoice
    choice = None if dense is None else DenseChoice(dense, 512)
    old = getattr(eng, "configure_multi_source", None)
    target = old if old is not None else eng.many.configure
    target(spec, eta=0.0, block_size=block, dense=choice)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--graphs", nargs="+", default=list(CHOICES))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out")
    args = ap.parse_args()
    rows = []
    for name in args.graphs:
        dense, spec, block = CHOICES[name]
        graph = anchor_graph(name)
        with Engine(Prepared.from_graph(graph, spec.sigma)) as eng:
            configure(eng, spec, block, dense)
            eng.closeness()  # builds and compiles the runner
            times = []
            for _ in range(args.reps):
                t0 = time.perf_counter()
                eng.closeness()
                times.append(time.perf_counter() - t0)
        row = {
            "graph": name,
            "n": graph.n,
            "best_s": min(times),
            "median_s": statistics.median(times),
        }
        rows.append(row)
        print(
            f"{name:<16} best {row['best_s'] * 1e3:9.3f} ms  median {row['median_s'] * 1e3:9.3f} ms"
        )
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
