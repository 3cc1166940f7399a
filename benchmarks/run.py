"""Benchmark driver: every chosen variant on the anchor graphs, by DESIGN.md's timing protocol.

    python3 benchmarks/run.py --quick            # anchors, a covering set of variants
    python3 benchmarks/run.py --graphs luxembourg_osm --variants all
    python3 benchmarks/run.py --small            # small stand-ins of the anchors

Writes results.json and results.csv under --out (default ./bench-out) and prints a table; the
paper's fixed choice (sigma=8, lazy iff U_div > 25,000, eta=10, three-run rule) is reported
beside the variants. Orderings follow DESIGN's anchor table (JaccardWithWindows with W=65536 at
sigma=8, or RCM), as the original C++ used them.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from graphs import ANCHORS, QUICK, anchor_graph  # noqa: E402

from blest.bench import (  # noqa: E402
    bench_engine,
    paper_spec,
    scipy_ms,
    three_run_rule,
    timing_sources,
)
from blest.codegen.spec import VariantSpec, variants  # noqa: E402
from blest.graph.bvss import build_bvss  # noqa: E402
from blest.graph.ordering import compute_ordering, permute_graph  # noqa: E402

#: Ordering the original C++ used (DESIGN's anchor table).
ORDERING = {
    "kron": "jaccard",
    "urand": "jaccard",
    "musae_facebook": "jaccard",
    "delaunay": "rcm",
    "luxembourg_osm": "rcm",
}
CPP_MS = {
    "kron-21": 0.284,
    "urand-20": 0.170,
    "delaunay-20": 2.54,
    "luxembourg_osm": 4.99,
    "musae_facebook": 0.093,
}


def ordering_for(name: str) -> str:
    return ORDERING.get(name, ORDERING.get(name.split("-")[0], "natural"))


def variant_set(which: str) -> list[VariantSpec]:
    if which == "all":
        return list(variants())
    if which == "persistent":
        return list(variants(launch="persistent"))
    if which == "quick":
        out = []
        for s in (4, 8, 16, 32):
            out += [
                VariantSpec(sigma=s, update="lazy", queue="vss", switching=True),
                VariantSpec(sigma=s, update="lazy", dirty_sets=True, queue="vss", switching=True),
                VariantSpec(sigma=s, update="lazy", dirty_sets=True, queue="sweep", switching=True),
                VariantSpec(sigma=s, update="lazy", dirty_sets=True, queue="vss", switching=False),
                VariantSpec(sigma=s, update="eager", queue="vss", switching=False),
            ]
        out.append(VariantSpec(sigma=8, update="lazy", dirty_sets=True, launch="per_level"))
        return out
    if which.startswith("{"):
        return [VariantSpec.from_json(which)]
    return [_by_name(name) for name in which.split(",")]


def _by_name(name: str) -> VariantSpec:
    for spec in variants():
        if spec.name == name:
            return spec
    raise SystemExit(f"unknown variant {name!r}")


def run_graph(
    name: str,
    specs: list[VariantSpec],
    n_sources: int,
    eta: float,
    geometries: list[tuple[int, int | None, int | None]],
) -> list[dict]:
    from blest.runtime.engine import Engine

    t0 = time.perf_counter()
    graph = anchor_graph(name)
    load_s = time.perf_counter() - t0
    order = ordering_for(name)
    t0 = time.perf_counter()
    perm = None if order == "natural" else compute_ordering(graph, order, sigma=8, window=65536)
    order_s = time.perf_counter() - t0
    internal = permute_graph(graph, perm) if perm is not None else graph
    order_used = f"{perm.name if perm is not None else 'natural'} ({order_s:.2f} s)"
    srcs = timing_sources(graph, n_sources)
    u_div = build_bvss(internal, 8).stats().u_div
    bvss_cache: dict[int, object] = {}
    rows = []

    def engine(
        spec: VariantSpec, eta_value: float, geometry=(256, None, None, None), record_levels=False
    ) -> Engine:
        import cupy as cp

        if spec.sigma not in bvss_cache:
            t = time.perf_counter()
            bvss_cache[spec.sigma] = build_bvss(internal, spec.sigma, xp=cp)
            cp.cuda.Device().synchronize()
            print(f"  BVSS sigma={spec.sigma} on GPU: {time.perf_counter() - t:.2f} s", flush=True)
        block, per_sm, small, grid_blocks = (tuple(geometry) + (None,) * 4)[:4]
        return Engine(
            graph,
            spec,
            eta=eta_value,
            permutation=perm,
            internal=internal if perm is not None else None,
            bvss=bvss_cache[spec.sigma],
            block_size=block,
            blocks_per_sm=per_sm,
            small_queue=small,
            grid_blocks=grid_blocks,
            record_levels=record_levels,
        )

    base = {
        "graph": name,
        "n": graph.n,
        "arcs": graph.nnz,
        "isolated": graph.isolated,
        "ordering": order_used,
        "u_div": u_div,
        "load_s": load_s,
    }
    print(
        f"{name}: n={graph.n} arcs={graph.nnz} isolated={graph.isolated} "
        f"ordering={order_used} U_div={u_div:.0f}",
        flush=True,
    )
    for spec in specs:
        for geometry in geometries:
            with engine(spec, eta, geometry) as eng:
                row = bench_engine(eng, graph, srcs, name).to_dict()
                row["variant"] += f" b{eng.block_size}x{eng.grid_size}" + (
                    f" sq{eng.small_queue}" if spec.launch == "persistent" else ""
                )
                row["block_size"] = eng.block_size
                row["blocks_per_sm"] = max(1, eng.grid_size // eng.sms)
                row["grid_blocks"] = eng.grid_size
                row["small_queue"] = eng.small_queue
            rows.append({**base, **row, "kind": "variant", "spec": spec.to_dict()})
            print(
                f"  {row['variant']:<44} {row['traversal_ms']:9.3f} ms"
                f"  depth {row['depth_mean']:.0f}  bu {row['bottom_up_levels_mean']:.1f}"
                f"  whole {row['whole_call_ms']:.3f}",
                flush=True,
            )
    # Per-level timeline of the best variant (Fig. 5 style): ms per level, and its direction.
    best = min((r for r in rows if r["kind"] == "variant"), key=lambda r: r["traversal_ms"])
    best_spec = VariantSpec.from_dict(best["spec"])
    geometry = (
        int(best["block_size"]),
        int(best["blocks_per_sm"]),
        int(best["small_queue"]),
        int(best["grid_blocks"]),
    )
    with engine(best_spec, eta, geometry, record_levels=True) as eng:
        eng.bfs(int(srcs[0]))
        times, bottom_up = eng.level_times_ms()
        stages = eng.stage_times_ms()
    rows.append(
        {
            **base,
            "kind": "levels",
            "variant": best["variant"],
            "level_ms": times.tolist(),
            "stage_ms": None if stages is None else stages.tolist(),
            "bottom_up_levels": list(bottom_up),
            "source": int(srcs[0]),
        }
    )
    lazy_paper = paper_spec(u_div, True)
    switching = lazy_paper.update == "lazy" and three_run_rule(
        lambda sw: engine(paper_spec(u_div, sw), 10.0), srcs
    )
    with engine(paper_spec(u_div, switching), 10.0) as eng:
        row = bench_engine(eng, graph, srcs, name).to_dict()
    rows.append({**base, **row, "kind": "paper"})
    print(f"  paper choice {row['variant']:<19} {row['traversal_ms']:9.3f} ms", flush=True)
    rows.append(
        {**base, "kind": "scipy", "variant": "scipy", "traversal_ms": scipy_ms(graph, srcs[:4])}
    )
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--graphs", nargs="*", default=None)
    ap.add_argument("--quick", action="store_true", help="anchor graphs, covering variant set")
    ap.add_argument("--small", action="store_true", help="small stand-ins of the anchor graphs")
    ap.add_argument(
        "--variants", default=None, help="quick | persistent | all | NAME[,NAME...] | JSON"
    )
    ap.add_argument("--sources", type=int, default=64)
    ap.add_argument("--eta", type=float, default=10.0)
    ap.add_argument("--out", default="bench-out")
    ap.add_argument("--plot", action="store_true", help="draw a PNG (needs matplotlib)")
    ap.add_argument(
        "--geometry",
        nargs="*",
        default=["256:-:-"],
        help="launch geometries BLOCK:BLOCKS_PER_SM:SMALL_QUEUE[:GRID_BLOCKS] ('-' = default), "
        "e.g. 1024:1:64 or 1024:1:0:66",
    )
    args = ap.parse_args(argv)
    names = args.graphs or (list(QUICK.values()) if args.small else list(ANCHORS))
    specs = variant_set(args.variants or ("quick" if args.quick or args.small else "persistent"))
    geometries = [tuple(None if x == "-" else int(x) for x in g.split(":")) for g in args.geometry]
    rows: list[dict] = []
    for name in names:
        rows += run_graph(name, specs, args.sources, args.eta, geometries)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(rows, indent=1))
    flat = [r for r in rows if r["kind"] != "levels"]  # timelines live in the JSON only
    keys = sorted({k for r in flat for k in r})
    with open(out / "results.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(flat)
    print("\nbest variant per graph (mean traversal ms; C++ anchor on an H200):")
    for name in names:
        mine = [r for r in rows if r["graph"] == name and r["kind"] == "variant"]
        best = min(mine, key=lambda r: r["traversal_ms"])
        paper = next(r for r in rows if r["graph"] == name and r["kind"] == "paper")
        cpp = CPP_MS.get(name)
        ratio = f"{best['traversal_ms'] / cpp:.2f}x C++" if cpp else ""
        print(
            f"  {name:<16} best {best['variant']:<30} {best['traversal_ms']:8.3f} ms {ratio:>10}"
            f" | paper {paper['traversal_ms']:8.3f} ms | C++ {cpp if cpp else '-'}"
        )
    if args.plot:
        from plot import plot_levels, plot_results

        plot_results(rows, out / "variants.png")
        plot_levels(rows, out / "levels.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
