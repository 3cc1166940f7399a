"""Benchmark driver: every chosen variant on the anchor graphs, by the timing protocol.

    python3 benchmarks/run.py --quick            # anchors, a covering set of variants
    python3 benchmarks/run.py --graphs luxembourg_osm --variants all
    python3 benchmarks/run.py --small            # small stand-ins of the anchors
    python3 benchmarks/run.py --quick --pull     # and the pull family (TurboBFS's) beside them

Writes results.json and results.csv under --out (default ./bench-out) and prints a table; the
paper's fixed choice (sigma=8, lazy iff U_div > 25,000, eta=10, three-run rule) is reported
beside the variants. Orderings follow the original C++'s (JaccardWithWindows with W=65536 at
sigma=8, or RCM). Run it with blest importable (installed, or PYTHONPATH=<repo>).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from graphs import ANCHORS, QUICK, anchor_graph

from blest.codegen.contract import max_block_size
from blest.codegen.pullspec import pull_variants
from blest.codegen.spec import VariantSpec, variants
from blest.codegen.toolchain import require_gpu
from blest.defaults import DEFAULT_ETA, DEFAULT_SIGMA, JACCARD_WINDOW
from blest.errors import GPUUnavailableError
from blest.graph.bvss import u_div
from blest.graph.hops import TWO_HOP_RATIO, two_hop_arcs_bound
from blest.graph.prepared import Prepared
from blest.runtime.device_ordering import device_ordering
from blest.runtime.engine_protocol import Geometry
from blest.runtime.factory import make_engine
from blest.runtime.pull_runner import PullRunner
from blest.tuning.paper import paper_spec, three_run_rule
from blest.tuning.space import block_fits
from blest.tuning.timing import bench_engine, scipy_ms, timing_sources

#: Ordering the original C++ used on each anchor.
ORDERING = {
    "kron": "jaccard",
    "urand": "jaccard",
    "musae_facebook": "jaccard",
    "delaunay": "rcm",
    "luxembourg_osm": "rcm",
    "road": "rcm",  # the road stand-in (graphs.py road-S), as the real road network
}
#: The original C++ Blest's mean traversal (ms) on an NVIDIA H200: reference figures, recorded
#: 2026-11-22 (the first five) and 2026-11-25 (benchmarks/NOTES.md).
CPP_MS = {
    "kron-21": 0.284,
    "urand-20": 0.170,
    "delaunay-20": 2.54,
    "luxembourg_osm": 4.99,
    "musae_facebook": 0.093,
    "twitch_FR": 0.0556,
    "twitch_ENGB": 0.0652,
    "wiki_chameleon": 0.0735,
    "kron-22": 0.389,
    "urand-22": 0.462,
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
        out.append(VariantSpec.block(8))  # the whole BFS in one thread block
        # each warp's VSSs in registers (small graphs; big ones load most VSSs every level)
        out.append(VariantSpec(sigma=32, update="eager", queue="resident", switching=False))
        # several levels a phase (graphs whose B = A + A^2 is small: time_variants skips the rest)
        for k, s in ((2, 16), (2, 32), (3, 16), (3, 32)):
            out.append(VariantSpec(sigma=s, update="eager", queue="vss", switching=False, hops=k))
        return out
    if which.startswith("{"):
        return [VariantSpec.from_json(which)]
    return [_by_name(name) for name in which.split(",")]


def _by_name(name: str) -> VariantSpec:
    for spec in variants():
        if spec.name == name:
            return spec
    raise SystemExit(f"unknown variant {name!r}")


@dataclass
class Bench:
    """One anchor graph, prepared once per sigma (BVSS on the GPU), and its timing sources."""

    name: str
    graph: Any
    permutation: Any
    sources: np.ndarray
    base: dict[str, Any]
    u_div: float
    _prepared: dict[int, Prepared] = field(default_factory=dict)

    @classmethod
    def load(cls, name: str, n_sources: int, ordering: str | None = None) -> Bench:
        t0 = time.perf_counter()
        graph = anchor_graph(name)
        load_s = time.perf_counter() - t0
        order = ordering or ordering_for(name)
        t0 = time.perf_counter()
        perm = None
        if order != "natural":
            perm = device_ordering(graph, order, sigma=DEFAULT_SIGMA, window=JACCARD_WINDOW)
        order_s = time.perf_counter() - t0
        order_used = f"{perm.name if perm is not None else 'natural'} ({order_s:.2f} s)"
        bench = cls(name, graph, perm, timing_sources(graph, n_sources), {}, 0.0)
        bench.u_div = u_div(bench.prepared(DEFAULT_SIGMA).bvss)
        bench.base = {
            "graph": name,
            "n": graph.n,
            "arcs": graph.nnz,
            "isolated": graph.isolated,
            "ordering": order_used,
            "u_div": bench.u_div,
            "load_s": load_s,
        }
        print(
            f"{name}: n={graph.n} arcs={graph.nnz} isolated={graph.isolated} "
            f"ordering={order_used} U_div={bench.u_div:.0f}",
            flush=True,
        )
        return bench

    def prepared(self, sigma: int) -> Prepared:
        if sigma not in self._prepared:
            import cupy as cp

            t = time.perf_counter()
            self._prepared[sigma] = Prepared.from_graph(self.graph, sigma, self.permutation, xp=cp)
            cp.cuda.Device().synchronize()
            print(f"  BVSS sigma={sigma} on GPU: {time.perf_counter() - t:.2f} s", flush=True)
        return self._prepared[sigma]

    def engine(self, spec: VariantSpec, eta: float, geometry=(256,), record_levels=False) -> Any:
        return make_engine(
            self.prepared(spec.sigma), spec, eta=eta, geometry=as_geometry(geometry),
            device="gpu", record_levels=record_levels,
        )  # fmt: skip


def _multiprocessors() -> int:
    """The current GPU's multiprocessors."""
    import cupy

    return int(cupy.cuda.Device().attributes["MultiProcessorCount"])


def as_geometry(geometry) -> Geometry:
    """(BLOCK, BLOCKS_PER_SM, SMALL_QUEUE, GRID_BLOCKS), any tail left out, as a Geometry."""
    block, per_sm, small, grid_blocks = (tuple(geometry) + (None,) * 4)[:4]
    return Geometry(block or 256, per_sm, grid_blocks, small)


def time_variants(b: Bench, specs: list[VariantSpec], eta: float, geometries: list) -> list[dict]:
    rows = []
    for spec in specs:
        if spec.launch == "block" and not block_fits(b.graph.n):
            print(f"  {spec.name:<44} skipped: its visited bitmap does not fit a block", flush=True)
            continue
        if spec.hops > 1 and two_hop_arcs_bound(b.graph) > TWO_HOP_RATIO * b.graph.nnz:
            print(f"  {spec.name:<44} skipped: B = A + A^2 would be dense", flush=True)
            continue
        for geometry in geometries:
            block = as_geometry(geometry).block_size
            if block > max_block_size(spec):
                print(f"  {spec.name:<44} skipped at {block} threads (registers)", flush=True)
                continue
            with b.engine(spec, eta, geometry) as eng:
                row = bench_engine(eng, b.graph, b.sources, b.name).to_dict()
                row["variant"] += f" b{eng.block_size}x{eng.grid_size}" + (
                    f" sq{eng.small_queue}" if spec.launch == "persistent" else ""
                )
                row["block_size"] = eng.block_size
                sms = _multiprocessors()
                row["blocks_per_sm"] = max(1, eng.grid_size // sms)
                row["grid_blocks"] = eng.grid_size
                row["small_queue"] = eng.small_queue
            rows.append({**b.base, **row, "kind": "variant", "spec": spec.to_dict()})
            print(
                f"  {row['variant']:<44} {row['traversal_ms']:9.3f} ms"
                f"  depth {row['depth_mean']:.0f}  bu {row['bottom_up_levels_mean']:.1f}"
                f"  whole {row['whole_call_ms']:.3f}",
                flush=True,
            )
    return rows


def time_pull(b: Bench, geometries: list) -> list[dict]:
    """The pull family (docs/variants.md) by the same protocol, on the same ordering: each
    variant levels only (the counting variants count all the same), rows of kind "pull"."""
    rows = []
    for spec in pull_variants():
        for geometry in geometries:
            g = as_geometry(geometry)
            with PullRunner(
                b.prepared(DEFAULT_SIGMA),
                spec,
                block_size=g.block_size,
                blocks_per_sm=g.blocks_per_sm,
                grid_blocks=g.grid_blocks,
            ) as run:
                row = bench_engine(run, b.graph, b.sources, b.name).to_dict()
                row["variant"] += f" b{run.block_size}x{run.grid_size}"
                row["block_size"], row["grid_blocks"] = run.block_size, run.grid_size
            rows.append({**b.base, **row, "kind": "pull", "spec": spec.to_dict()})
            print(
                f"  {row['variant']:<44} {row['traversal_ms']:9.3f} ms"
                f"  depth {row['depth_mean']:.0f}  whole {row['whole_call_ms']:.3f}",
                flush=True,
            )
    return rows


def timeline(b: Bench, best: dict, eta: float) -> dict:
    """Per-level timeline of the best variant (Fig. 5 style): ms per level, and its direction."""
    spec = VariantSpec.from_dict(best["spec"])
    keys = ("block_size", "blocks_per_sm", "small_queue", "grid_blocks")
    geometry = tuple(int(best[k]) for k in keys)
    with b.engine(spec, eta, geometry, record_levels=True) as eng:
        eng.bfs(int(b.sources[0]))
        times, bottom_up = eng.probes.level_times_ms()
        stages = eng.probes.stage_times_ms()
    return {
        **b.base,
        "kind": "levels",
        "variant": best["variant"],
        "level_ms": times.tolist(),
        "stage_ms": None if stages is None else stages.tolist(),
        "bottom_up_levels": list(bottom_up),
        "source": int(b.sources[0]),
    }


def paper_row(b: Bench) -> dict:
    """The paper's fixed choice, its switching decided by the three-run rule."""
    lazy = paper_spec(b.u_div, True).update == "lazy"
    switching = lazy and three_run_rule(
        lambda sw: b.engine(paper_spec(b.u_div, sw), DEFAULT_ETA), b.sources
    )
    with b.engine(paper_spec(b.u_div, switching), DEFAULT_ETA) as eng:
        row = bench_engine(eng, b.graph, b.sources, b.name).to_dict()
    print(f"  paper choice {row['variant']:<19} {row['traversal_ms']:9.3f} ms", flush=True)
    return {**b.base, **row, "kind": "paper"}


def run_graph(
    name: str,
    specs: list[VariantSpec],
    n_sources: int,
    eta: float,
    geometries: list,
    pull: bool = False,
) -> list[dict]:
    b = Bench.load(name, n_sources)
    rows = time_variants(b, specs, eta, geometries)
    best = min(rows, key=lambda r: r["traversal_ms"])
    if pull:
        rows += time_pull(b, geometries)
    rows.append(timeline(b, best, eta))
    rows.append(paper_row(b))
    cpu = scipy_ms(b.graph, b.sources[:4])
    rows.append({**b.base, "kind": "scipy", "variant": "scipy", "traversal_ms": cpu})
    return rows


def write_results(rows: list[dict], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(rows, indent=1))
    flat = [r for r in rows if r["kind"] != "levels"]  # timelines live in the JSON only
    keys = sorted({k for r in flat for k in r})
    with open(out / "results.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(flat)


def print_summary(rows: list[dict], names: list[str]) -> None:
    print("\nbest variant per graph (mean traversal ms; C++ anchor on an H200):")
    for name in names:
        mine = [r for r in rows if r["graph"] == name and r["kind"] == "variant"]
        best = min(mine, key=lambda r: r["traversal_ms"])
        paper = next(r for r in rows if r["graph"] == name and r["kind"] == "paper")
        cpp = CPP_MS.get(name)
        ratio = f"{best['traversal_ms'] / cpp:.2f}x C++" if cpp else ""
        print(
            f"  {name:<16} best {best['variant']:<30} {best['traversal_ms']:8.3f} ms {ratio:>10}"
            f" | whole {best['whole_call_ms']:8.3f} ms | paper {paper['traversal_ms']:8.3f} ms"
            f" | C++ {cpp if cpp else '-'}"
        )
        pulls = [r for r in rows if r["graph"] == name and r["kind"] == "pull"]
        if pulls:
            fast = min(pulls, key=lambda r: r["traversal_ms"])
            print(
                f"  {'':<16} pull {fast['variant']:<30} {fast['traversal_ms']:8.3f} ms"
                f" {fast['traversal_ms'] / best['traversal_ms']:9.2f}x best"
                f" | whole {fast['whole_call_ms']:8.3f} ms"
            )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--graphs", nargs="*", default=None)
    ap.add_argument("--quick", action="store_true", help="anchor graphs, covering variant set")
    ap.add_argument("--small", action="store_true", help="small stand-ins of the anchor graphs")
    ap.add_argument(
        "--variants", default=None, help="quick | persistent | all | NAME[,NAME...] | JSON"
    )
    ap.add_argument("--sources", type=int, default=64)
    ap.add_argument("--eta", type=float, default=DEFAULT_ETA)
    ap.add_argument("--out", default="bench-out")
    ap.add_argument("--plot", action="store_true", help="draw a PNG (needs matplotlib)")
    ap.add_argument(
        "--pull", action="store_true", help="also time the pull family (pull_*) on each graph"
    )
    ap.add_argument(
        "--geometry",
        nargs="*",
        default=["256:-:-"],
        help="launch geometries BLOCK:BLOCKS_PER_SM:SMALL_QUEUE[:GRID_BLOCKS] ('-' = default), "
        "e.g. 1024:1:64 or 1024:1:0:66",
    )
    args = ap.parse_args(argv)
    try:  # before any graph is built: every row times GPU kernels
        require_gpu()
    except GPUUnavailableError as exc:
        print(f"run.py: needs an NVIDIA GPU: {exc}", file=sys.stderr)
        return 2
    names = args.graphs or (list(QUICK.values()) if args.small else list(ANCHORS))
    specs = variant_set(args.variants or ("quick" if args.quick or args.small else "persistent"))
    geometries = [tuple(None if x == "-" else int(x) for x in g.split(":")) for g in args.geometry]
    rows: list[dict] = []
    for name in names:
        rows += run_graph(name, specs, args.sources, args.eta, geometries, args.pull)
    out = Path(args.out)
    write_results(rows, out)
    print_summary(rows, names)
    if args.plot:
        from plot import plot_levels, plot_results

        plot_results(rows, out / "variants.png")
        plot_levels(rows, out / "levels.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
