"""Tune every anchor graph and print the table: the pick, the paper's fixed choice and the
oracle on the 64 held-out sources, with preparation and tuning times, and the C++ figure:

    python3 benchmarks/tune_anchors.py --budget 60 --out /tmp/tuned
    python3 benchmarks/tune_anchors.py luxembourg_osm musae_facebook --budget 20
    python3 benchmarks/tune_anchors.py kron-23 urand-23 --budget 20 --ordering natural jaccard

Graphs come from benchmarks/graphs.py (generated ones cached under /tmp/blest-graphs) and are
written once as blest .npz files, then loaded and tuned as ``blest-tune`` does it, through the
tuning API (``blest.tuning.tune``, then ``blest.tuning.write_tuned`` publishes the config and
its artifact). On a GPU, the tuned config is then loaded as a user would
(``blest.load_tuned``) and its whole call ``bfs(src, out="device")`` timed on the 64 protocol
sources (the mean, beside the mean traversal of the same calls), and for persistent picks the
same inside ``Engine.serving``.
Without a GPU the configs are the paper's rules ("tuned": false) and the timing columns are empty.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

from graphs import ANCHORS, anchor_graph  # noqa: E402
from run import CPP_MS  # noqa: E402

from blest.graph.io import load_graph, save_graph  # noqa: E402
from blest.tuning import tune, write_tuned  # noqa: E402


def tune_one(
    name: str, out: Path, budget: float, work: Path, orderings: list[str] | None = None
) -> dict:
    graph_file = work / f"{name}.npz"
    if not graph_file.exists():
        save_graph(anchor_graph(name), graph_file)
    config = work / f"{name}.blest.json"
    t0 = time.perf_counter()
    graph = load_graph(graph_file)
    load_s = time.perf_counter() - t0
    outcome = tune(
        graph, source=str(graph_file.resolve()), budget_s=budget, orderings=orderings or None
    )
    outcome.config.preparation.load_seconds = load_s
    write_tuned(outcome, config)
    wall = time.perf_counter() - t0
    (out / config.name).write_text(config.read_text())  # the config travels; the artifact stays
    cfg = json.loads(config.read_text())
    report = cfg.get("report") or {}
    whole = whole_call(config, name) if cfg.get("tuned") else {}
    prep = cfg.get("preparation", {})
    return {
        "graph": name,
        "tuned": cfg.get("tuned"),
        "ordering": prep.get("ordering"),
        "variant": cfg.get("variant_name"),
        "geometry": _geometry(cfg.get("launch_geometry")),
        "eta": cfg.get("eta"),
        "prep_s": prep.get("seconds"),
        "wall_s": wall,
        "pick_ms": report.get("pick_ms"),
        "paper_ms": report.get("paper_ms"),
        "oracle_ms": report.get("oracle_ms"),
        "pick_is_oracle": report.get("pick_is_oracle"),
        "pick_within_noise_of_oracle": report.get("pick_within_noise_of_oracle"),
        **whole,
        "notes": cfg.get("notes"),
    }


def whole_call(config: Path, name: str) -> dict[str, float]:
    """Means over the protocol sources of the tuned engine's whole ``bfs(src, out="device")``
    and of its traversal, timed as ``blest bench`` times them."""
    from blest import load_tuned
    from blest.tuning.timing import bench_engine, timing_sources

    graph = anchor_graph(name)
    with load_tuned(config) as eng:
        row = bench_engine(eng, graph, timing_sources(graph), name)
    return {"whole_ms": row.whole_call_ms, "traversal_ms": row.traversal_ms,
            "served_ms": row.served_call_ms}  # fmt: skip


def _geometry(g: dict | None) -> str | None:
    """``BLOCKxBLOCKS_PER_SM`` (``occ``: as many as fit), or None without a geometry."""
    if not g:
        return None
    return f"{g['block_size']}x{g.get('blocks_per_sm') or 'occ'}"


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("graphs", nargs="*", default=list(ANCHORS))
    ap.add_argument("--budget", type=float, default=60.0)
    ap.add_argument("--out", default="/tmp/blest-tuned", help="the table and the configs")
    ap.add_argument("--work", default="/tmp/blest-tune-work", help="graphs and artifacts")
    ap.add_argument("--ordering", nargs="+", default=None, help="blest-tune's --ordering")
    args = ap.parse_args(argv)
    out, work = Path(args.out), Path(args.work)
    out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in args.graphs:
        rows.append(tune_one(name, out, args.budget, work, args.ordering))
        (out / "tune_anchors.json").write_text(json.dumps(rows, indent=1))
        print(json.dumps({k: v for k, v in rows[-1].items() if k != "notes"}), flush=True)
    print(
        "graph            ordering  pick                          geometry eta    pick ms "
        " paper ms oracle ms  C++ ms  =oracle  wall s  trav ms  whole ms served ms"
    )
    for r in rows:
        print(
            f"{r['graph']:<16} {str(r['ordering']):<9} {str(r['variant']):<29} "
            f"{str(r['geometry']):<8} "
            f"{str(r['eta']):<6} {_ms(r['pick_ms']):>8} {_ms(r['paper_ms']):>9} "
            f"{_ms(r['oracle_ms']):>9} {CPP_MS.get(r['graph'], '-')!s:>7}  "
            f"{str(r['pick_is_oracle']):<7} {r['wall_s']:6.1f}  {_ms(r.get('traversal_ms')):>7} "
            f"{_ms(r.get('whole_ms')):>8} {_ms(r.get('served_ms')):>8}"
        )
    timed = [r for r in rows if r["pick_is_oracle"] is not None]
    if timed:
        same = sum(bool(r["pick_within_noise_of_oracle"]) for r in timed)
        print(f"pick within 3% of the oracle on {same} of {len(timed)} graphs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
