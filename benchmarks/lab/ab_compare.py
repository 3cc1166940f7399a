"""Compare two runs of ``run.py`` (their ``results.json``), variant by variant on each graph:
the ratio new / old of the mean traversal and of the whole call, per graph their geometric mean
and the worst, and overall. Runs made in one GPU session, one tree after the other.

    python3 benchmarks/lab/ab_compare.py OLD_DIR NEW_DIR
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path


def _rows(directory: str) -> dict[tuple[str, str], dict]:
    rows = json.loads((Path(directory) / "results.json").read_text())
    return {(r["graph"], r["variant"]): r for r in rows if r.get("kind") == "variant"}


def _geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def main(old_dir: str, new_dir: str) -> int:
    old, new = _rows(old_dir), _rows(new_dir)
    both = sorted(set(old) & set(new))
    if not both:
        raise SystemExit("no variant ran in both")
    print(f"{len(both)} (graph, variant) pairs; ratio new / old (below 1: new faster)")
    print(f"{'graph':<16} {'traversal gm':>12} {'worst':>7} {'whole gm':>9} {'worst':>7}")
    every: dict[str, list[float]] = {"traversal_ms": [], "whole_call_ms": []}
    for graph in sorted({g for g, _ in both}):
        keys = [k for k in both if k[0] == graph]
        cells = []
        for field in ("traversal_ms", "whole_call_ms"):
            ratios = [new[k][field] / old[k][field] for k in keys if old[k].get(field)]
            every[field] += ratios
            worst = max(ratios, key=lambda r: abs(math.log(r)))
            cells += [f"{_geomean(ratios):>12.4f}", f"{worst:>7.3f}"]
        print(f"{graph:<16} {cells[0]} {cells[1]} {cells[2][3:]} {cells[3]}")
    print(
        f"{'all':<16} {_geomean(every['traversal_ms']):>12.4f} {'':>7} "
        f"{_geomean(every['whole_call_ms']):>9.4f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:3]))
