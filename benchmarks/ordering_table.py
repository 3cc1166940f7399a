"""BFS time with and without reordering (paper Tables IV-V style), from tuned configs.

For each ``*.blest.json`` written by ``blest-tune`` (e.g. by ``tune_anchors.py``), the fastest
timed candidate of each ordering (median traversal ms over the tuner's 8 tuning sources) and
its ratio to the natural order's fastest:

    python3 benchmarks/ordering_table.py /tmp/blest-tune-work/*.blest.json [--json out.json]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def best_per_ordering(config: dict) -> dict[str, dict]:
    best: dict[str, dict] = {}
    for c in config["timing"]["candidates"]:
        ms = c.get("median_ms")
        if ms is None:
            continue
        if c["ordering"] not in best or ms < best[c["ordering"]]["ms"]:
            best[c["ordering"]] = {"ms": ms, "label": c["label"]}
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("configs", nargs="+")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    rows = []
    print("| graph | natural ms | RCM ms (ratio) | Jaccard ms (ratio) | fastest |")
    print("| --- | --- | --- | --- | --- |")
    for path in args.configs:
        cfg = json.loads(Path(path).read_text())
        best = best_per_ordering(cfg)
        name = Path(path).name.removesuffix(".blest.json")
        nat = best.get("natural", {}).get("ms")

        def cell(o: str, best=best, nat=nat) -> str:
            if o not in best:
                return "-"
            ms = best[o]["ms"]
            return f"{ms:.3f}" + (f" ({ms / nat:.2f})" if nat and o != "natural" else "")

        fastest = min(best.values(), key=lambda b: b["ms"])["label"] if best else "-"
        print(f"| {name} | {cell('natural')} | {cell('rcm')} | {cell('jaccard')} | {fastest} |")
        rows.append({"graph": name, "best": best})
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
