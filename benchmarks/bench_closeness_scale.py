"""Closeness of every vertex on the GAP stand-ins (kron-S, urand-S), with the com-LiveJournal
extrapolation.

    python3 benchmarks/bench_closeness_scale.py --graphs kron-21 urand-21 kron-22 urand-22 \\
        --budget 20 --max-seconds 540 --out closeness-scale.jsonl
    python3 benchmarks/bench_closeness_scale.py --graphs kron-23 urand-23 kron-24 \\
        --sample-batches 64 --max-seconds 540 --out closeness-scale-big.jsonl

No LiveJournal or Friendster file reaches the benchmark machines: the GAP generators
(:mod:`blest.datasets`, edge factor 16, the benchmark seed) stand in for them. For each graph,
one JSON record a line in ``--out``, written as each stage ends (a run killed at its time limit
keeps what it finished):

- ``load``: generate, or read from the cache (``--cache``, default /tmp/blest-graphs);
- ``save``: the graph as a blest ``.npz`` (:func:`blest.graph.io.save_graph`) in ``--workdir``;
- ``tune``: what ``blest-tune --workload closeness --budget B`` does, through the library
  (:func:`blest.tuning.workloads.tune_workload`, :func:`blest.tuning.tuner.write_tuned`);
- ``plan``: the exact reductions (:func:`blest.graph.reductions.plan_sources`): BFSs to run and
  BFSs saved (isolated vertices, leaves, twins);
- ``closeness``: up to ``--full-max-scale`` (default 22), :func:`blest.closeness` of every
  vertex through the tuned config, wall time (load, prepare, plan, BFSs, reduction), scores
  checked against SciPy on 8 vertices. Above it, a seeded sample of ``--sample-batches``
  (default 64) whole batches of the plan's BFSs (in the engine's order, as a run deals them)
  is timed and the whole run is **extrapolated** (``"extrapolated": true``): the sampled
  cost per BFS times the plan's BFSs, plus the measured fixed costs (engine start, plan).

Per graph the summary record (``"stage": "summary"``) gives the BFSs run and saved, the wall
time, ``gpu_s_per_source`` (GPU-seconds of the closeness stage over the vertices scored, one
GPU), ``gpu_s_per_bfs`` (over the BFSs run) and the extrapolation to com-LiveJournal's size
(4.0M vertices, 69.4M arcs; the paper: 118 s on 5 H100 = 590 GPU-seconds). The rule: a BFS of
the giant component walks every arc, so the cost per BFS scales with the arcs:
``lj_gpu_s = gpu_s_per_bfs x (69.4M / arcs) x 4.0M``, every LiveJournal vertex counted as a
BFS (no reduction assumed: an upper bound; ``lj_gpu_s_reduced`` applies the stand-in's share of
BFSs run instead). kron-21 (63.5M arcs) is the stand-in closest to LiveJournal's size, so its
figure leans least on the rule. Needs a GPU (CuPy); no console script is needed.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
from graphs import DEFAULT_CACHE, anchor_graph

LJ_VERTICES = 3_997_962
LJ_ARCS = 69_362_378  # 34,681,189 undirected edges, both ways
PAPER_GPU_SECONDS = 590.0  # 118 s on 5 H100
SEED = 42


def lj_extrapolation(gpu_s_per_bfs: float, arcs: int, bfs_share: float) -> dict[str, float]:
    """com-LiveJournal GPU-seconds from a stand-in's cost per BFS (see the module docstring)."""
    per_bfs = gpu_s_per_bfs * LJ_ARCS / max(arcs, 1)
    return {
        "lj_gpu_s": per_bfs * LJ_VERTICES,
        "lj_gpu_s_reduced": per_bfs * LJ_VERTICES * bfs_share,
        "lj_vs_paper": PAPER_GPU_SECONDS / max(per_bfs * LJ_VERTICES, 1e-12),
    }


def sample_batches(ordered: np.ndarray, kappa: int, count: int, seed: int = SEED) -> np.ndarray:
    """``count`` whole batches of ``kappa`` consecutive entries of ``ordered`` (the last one
    may be short), chosen with ``seed``, concatenated in order (every batch when fewer)."""
    n_batches = -(-ordered.size // kappa)
    if count >= n_batches:
        return ordered
    chosen = np.sort(np.random.default_rng(seed).choice(n_batches, count, replace=False))
    return np.concatenate([ordered[b * kappa : (b + 1) * kappa] for b in chosen])


def tune_config(graph: Any, source: Path, config: Path, workload: str, budget: float) -> Any:
    """``blest-tune --workload WORKLOAD --budget BUDGET -o CONFIG SOURCE``, in-process."""
    from blest.defaults import SIGMAS
    from blest.tuning.tuner import TUNING_SOURCES, write_tuned
    from blest.tuning.workloads import tune_workload

    outcome = tune_workload(
        workload, graph, source=str(source), budget_s=budget, sigmas=SIGMAS, orderings=None,
        progress=lambda _line: None, n_sources=TUNING_SOURCES, compile_check=False,
    )  # fmt: skip
    return write_tuned(outcome, config)


class Log:
    """JSON lines, each written and flushed as a stage ends; the time budget."""

    def __init__(self, path: str | None, max_seconds: float) -> None:
        if path:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.f = open(path, "a", encoding="utf-8") if path else None  # noqa: SIM115
        self.t0, self.max_seconds = time.perf_counter(), max_seconds

    def left(self) -> float:
        return self.max_seconds - (time.perf_counter() - self.t0)

    def write(self, record: dict) -> None:
        print(json.dumps(record, default=str), flush=True)
        if self.f is not None:
            self.f.write(json.dumps(record, default=str) + "\n")
            self.f.flush()
            os.fsync(self.f.fileno())


def _timed(log: Log, graph: str, stage: str, call: Any, **extra: Any) -> Any:
    t0 = time.perf_counter()
    out = call()
    log.write({"graph": graph, "stage": stage, "seconds": time.perf_counter() - t0, **extra})
    return out


def run_graph(name: str, args: argparse.Namespace, log: Log) -> dict | None:
    import blest.centrality as bc
    from blest.graph.io import save_graph
    from blest.graph.reductions import plan_sources
    from blest.reference.centrality import closeness as ref_closeness

    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    graph = _timed(log, name, "load", lambda: anchor_graph(name, args.cache))
    n, arcs = int(graph.n), int(graph.nnz)
    isolated = int(np.count_nonzero(np.diff(graph.out_ptr) == 0))
    npz = work / f"{name}.npz"
    _timed(log, name, "save", lambda: save_graph(graph, npz), n=n, arcs=arcs, isolated=isolated)
    config = work / f"{name}.closeness.blest.json"
    if not config.exists() or args.retune:
        tuned = _timed(
            log, name, "tune",
            lambda: tune_config(graph, npz, config, "closeness", args.budget),
        )  # fmt: skip
        log.write({"graph": name, "stage": "tuned", "multi_source": tuned.multi_source})
    t0 = time.perf_counter()
    plan = plan_sources(graph, np.arange(n))
    plan_s = time.perf_counter() - t0
    runs, saved = int(plan.bfs.size), n - int(plan.bfs.size)
    log.write({"graph": name, "stage": "plan", "seconds": plan_s, "bfs_run": runs,
               "bfs_saved": saved, "summary": plan.summary()})  # fmt: skip
    scale = int(name.rsplit("-", 1)[1])
    sampled = scale > args.full_max_scale
    if log.left() < 30:
        log.write({"graph": name, "stage": "closeness", "skipped": "time budget"})
        return None
    if not sampled:
        lines: list[str] = []
        t0 = time.perf_counter()
        scores = bc.closeness(str(config), report=lines.append)
        wall = time.perf_counter() - t0
        check = np.random.default_rng(SEED).choice(n, 8, replace=False)
        want = ref_closeness(graph, check)
        ok = bool(np.array_equal(scores[check], want))
        log.write({"graph": name, "stage": "closeness", "seconds": wall, "checked": ok,
                   "report": lines, "extrapolated": False})  # fmt: skip
        gpu_s = wall
    else:
        t0 = time.perf_counter()
        with bc.engine_for(str(config)) as eng:
            kappa = bc._kappa(eng)
            start = time.perf_counter() - t0
            internal = np.asarray(eng.permutation.new_of_old)[plan.bfs]
            ordered = plan.bfs[np.argsort(internal, kind="stable")]
            chosen = sample_batches(ordered, kappa, args.sample_batches)
            eng.source_sums(chosen[:kappa], pendant=plan.pendant)  # compile, warm up
            t1 = time.perf_counter()
            eng.source_sums(chosen, pendant=plan.pendant)
            run_s = time.perf_counter() - t1
        per_bfs = run_s / max(chosen.size, 1)
        gpu_s = start + plan_s + per_bfs * runs  # the fixed costs, and every BFS of the plan
        log.write({"graph": name, "stage": "closeness", "extrapolated": True, "kappa": kappa,
                   "sampled_bfs": int(chosen.size), "sample_seconds": run_s,
                   "engine_seconds": start, "seconds": gpu_s, "plan_seconds": plan_s})  # fmt: skip
    summary = {
        "graph": name,
        "stage": "summary",
        "stand_in": True,
        "extrapolated": sampled,
        "n": n,
        "arcs": arcs,
        "isolated": isolated,
        "bfs_run": runs,
        "bfs_saved": saved,
        "wall_s": gpu_s,
        "gpu_s_per_source": gpu_s / max(n, 1),
        "gpu_s_per_bfs": gpu_s / max(runs, 1),
        **lj_extrapolation(gpu_s / max(runs, 1), arcs, runs / max(n, 1)),
    }
    log.write(summary)
    return summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--graphs", nargs="+", default=["kron-21", "urand-21", "kron-22", "urand-22"])
    ap.add_argument("--budget", type=float, default=20.0, help="blest-tune --budget (seconds)")
    ap.add_argument("--cache", default=DEFAULT_CACHE, help="generated graphs (.npz)")
    ap.add_argument("--workdir", default="/tmp/blest-closeness-scale", help="graphs, configs")
    ap.add_argument("--full-max-scale", type=int, default=22, help="larger: sampled")
    ap.add_argument("--sample-batches", type=int, default=64, help="batches timed when sampled")
    ap.add_argument("--retune", action="store_true", help="tune again when a config exists")
    ap.add_argument("--max-seconds", type=float, default=540.0)
    ap.add_argument("--out", default=None, help="JSON lines, appended as stages end")
    args = ap.parse_args(argv)
    log = Log(args.out, args.max_seconds)
    rows = []
    for name in args.graphs:
        if log.left() < 60:
            log.write({"graph": name, "stage": "graph", "skipped": "time budget"})
            continue
        row = run_graph(name, args, log)
        if row is not None:
            rows.append(row)
    print(f"{'graph':>10} {'BFSs run':>10} {'saved':>10} {'s':>8} {'us/src':>8} {'LJ GPU-s':>9}")
    for r in rows:
        mark = "~" if r["extrapolated"] else " "
        print(
            f"{r['graph']:>10} {r['bfs_run']:>10,} {r['bfs_saved']:>10,} {r['wall_s']:>7.1f}"
            f"{mark} {r['gpu_s_per_source'] * 1e6:>8.1f} {r['lj_gpu_s']:>9.1f}"
        )
    print("~: extrapolated from a sample of batches; LJ GPU-s: com-LiveJournal's size, by arcs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
