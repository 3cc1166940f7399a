"""Multi-source BFS and closeness on a GPU, against single-source BFS and NetworKit.

    python3 benchmarks/bench_msbfs.py per-source --graphs kron-21 urand-20 kron-22 \\
        delaunay-20 luxembourg_osm musae_facebook --sources 256
    python3 benchmarks/bench_msbfs.py closeness --graphs luxembourg_osm musae_facebook \\
        twitch_FR wiki_chameleon --networkit
    python3 benchmarks/bench_msbfs.py sweep --graphs luxembourg_osm --forms queue \\
        --kappas 1 2 4 8 --blocks 128 256 1024

per-source: the best single-source whole call (``bfs(src, out="device")``: a few strong variants
on the default ordering, and the engine ``blest-tune --budget`` picks, ``--ss-budget``) against
the best multi-source run writing every source's levels to the device (the multi-source search
of ``blest-tune --workload closeness``, timed on the same sources), per source, on the
protocol's 256 sources; each graph's row is written as it ends. closeness: exact closeness of
every vertex (the multi-source search picks the variant on a sample, then the full run is timed:
the best of the second and third whole calls, the first, which also loads CuPy's kernels, beside
it) beside NetworKit's exact closeness (generalized variant, 16 threads) on the same graph, with
the largest relative difference of the scores. sweep: the whole closeness call of every vertex
with each given (form, kappa, block size), scores checked against the CPU reference on 16
vertices, and the engine's own call split into the runner's run and the rest (``--forms dense``:
every dense variant at each block size). Results go to --out as JSON; a table is printed last.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from graphs import anchor_graph

from blest.codegen.densespec import DenseSpec, dense_variants
from blest.codegen.msspec import MSSpec
from blest.codegen.spec import VariantSpec
from blest.defaults import DEFAULT_SIGMA, JACCARD_WINDOW
from blest.graph.classify import default_ordering
from blest.graph.prepared import Prepared
from blest.reference import bfs_levels
from blest.reference.centrality import closeness_from_sums, source_sums
from blest.runtime.device_ordering import device_ordering
from blest.runtime.engine import Engine
from blest.runtime.many import DenseChoice
from blest.runtime.ms_runner import MSRunner
from blest.tuning.ms_search import MSCandidate, search_every_vertex, search_multi_source
from blest.tuning.timing import timing_sources

SS_SPECS = {
    32: [VariantSpec(32, "eager", switching=False)],
    16: [VariantSpec(16, "eager", switching=False)],
    8: [VariantSpec(8, "lazy", switching=True), VariantSpec(8, "eager", switching=False)],
    4: [VariantSpec(4, "lazy", switching=True)],
}


class Prepare:
    """A graph with its default ordering, prepared on the GPU per sigma on demand."""

    def __init__(self, name: str) -> None:
        import cupy as cp

        self.cp = cp
        self.graph = anchor_graph(name)
        order = default_ordering(self.graph)
        t0 = time.perf_counter()
        self.perm = device_ordering(self.graph, order, sigma=DEFAULT_SIGMA, window=JACCARD_WINDOW)
        self.order_s = time.perf_counter() - t0
        self.cache: dict[int, Prepared] = {}

    def __call__(self, sigma: int) -> Prepared:
        if sigma not in self.cache:
            self.cache[sigma] = Prepared.from_graph(self.graph, sigma, self.perm, xp=self.cp)
        return self.cache[sigma]


def whole_call_us(prep: Prepared, spec: VariantSpec, eta: float, sources) -> float:
    with Engine(prep, spec, eta=eta) as eng:
        return engine_call_us(eng, sources)


def engine_call_us(eng, sources) -> float:
    """Microseconds per whole call ``eng.bfs(src, out="device")`` over ``sources`` (8 warm
    calls first)."""
    cp = __import__("cupy")
    for s in sources[:8]:
        eng.bfs(int(s), out="device")
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    for s in sources:
        eng.bfs(int(s), out="device")
    cp.cuda.Device().synchronize()
    return (time.perf_counter() - t0) / len(sources) * 1e6


def ms_levels_us(prep: Prepared, c: MSCandidate, sources, graph) -> float:
    """Per-source microseconds of one multi-source run writing all levels on the device."""
    cp = __import__("cupy")
    internal = np.sort(np.asarray(prep.permutation.new_of_old)[sources]).astype(np.int32)
    runner = MSRunner(prep, c.spec, eta=c.eta, block_size=c.block_size)
    levels = cp.full((len(sources), graph.n), -1, dtype=cp.int32)
    runner.run(internal, levels=levels)  # warm-up (and the check below)
    user = int(np.asarray(prep.permutation.old_of_new)[internal[0]])
    if not np.array_equal(levels[0].get(), bfs_levels(graph, user)):
        raise AssertionError(f"{c.label}: levels differ from SciPy")
    levels.fill(-1)
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    runner.run(internal, levels=levels)
    cp.cuda.Device().synchronize()
    runner.close()
    return (time.perf_counter() - t0) / len(sources) * 1e6


def tuned_whole_call_us(name: str, graph, budget: float, sources) -> tuple[str, float]:
    """``blest-tune --budget B`` (single-source BFS) on the graph, then its engine's whole call
    ``bfs(src, out="device")`` per source on ``sources``: (the pick, microseconds)."""
    import tempfile

    from bench_closeness_scale import tune_config

    from blest.graph.io import save_graph
    from blest.tuning.loader import load_tuned

    work = Path(tempfile.gettempdir()) / "blest-bench-msbfs"
    work.mkdir(exist_ok=True)
    npz, config = work / f"{name}.npz", work / f"{name}.bfs.blest.json"
    save_graph(graph, npz)
    tune_config(graph, npz, config, "bfs", budget)
    with load_tuned(config) as eng:
        return f"blest-tune: {eng.spec.name}", engine_call_us(eng, sources)


def per_source(
    names: list[str], k: int, budget: float, ss_budget: float, out: Path | None = None
) -> list[dict]:
    rows = []
    for name in names:
        p = Prepare(name)
        srcs = timing_sources(p.graph, k)
        ss = {}
        for sigma in (4, 8, 16, 32):
            for spec in SS_SPECS[sigma]:
                for eta in (10.0, 50.0) if spec.switching else (10.0,):
                    ss[f"{spec.name} eta={eta:g}"] = whole_call_us(p(sigma), spec, eta, srcs)
        if ss_budget > 0:
            pick, us = tuned_whole_call_us(name, p.graph, ss_budget, srcs)
            ss[pick] = us
        ss_name = min(ss, key=ss.get)
        with Engine(p(8), VariantSpec(8)) as eng:
            eng.bfs(int(srcs[0]))
            depth = eng.stats.depth
        internal = np.asarray(p(8).permutation.new_of_old)[srcs]
        best, table = search_multi_source(
            p, (8, 32), depth, budget, workload=k, sources=internal
        )  # timed on the protocol's sources themselves
        ms_us = ms_levels_us(p(best.candidate.spec.sigma), best.candidate, srcs, p.graph)
        row = {
            "graph": name,
            "n": p.graph.n,
            "arcs": p.graph.nnz,
            "depth": depth,
            "ss_best": ss_name,
            "ss_us": ss[ss_name],
            "ms_best": best.candidate.label,
            "ms_us": ms_us,
            "speedup": ss[ss_name] / ms_us,
            "ss_table": ss,
            "ms_table": [t.to_dict() for t in table],
        }
        rows.append(row)
        if out is not None:  # as each graph ends: a run stopped at its limit keeps them
            out.mkdir(parents=True, exist_ok=True)
            (out / "msbfs-per-source.json").write_text(json.dumps(rows, indent=1, default=float))
        print(
            f"{name}: SS {ss_name} {ss[ss_name]:.1f} us/source | MS {best.candidate.label} "
            f"{ms_us:.2f} us/source | {row['speedup']:.2f}x",
            flush=True,
        )
    return rows


def networkit_closeness(graph) -> tuple[float, np.ndarray] | None:
    try:
        import networkit as nk
    except ImportError:
        return None
    nk.setNumberOfThreads(16)
    g = nk.Graph(graph.n, weighted=False, directed=graph.directed)
    src = np.repeat(np.arange(graph.n), np.diff(graph.out_ptr))
    keep = graph.directed | (src < graph.out_idx)
    g.addEdges((src[keep].astype(np.uint64), graph.out_idx[keep].astype(np.uint64)))
    t0 = time.perf_counter()
    c = nk.centrality.Closeness(g, True, nk.centrality.ClosenessVariant.GENERALIZED)
    c.run()
    return time.perf_counter() - t0, np.asarray(c.scores())


def closeness(names: list[str], budget: float, with_nk: bool) -> list[dict]:
    rows = []
    for name in names:
        p = Prepare(name)
        with Engine(p(8), VariantSpec(8)) as eng:
            eng.bfs(int(np.argmax(p.graph.out_degree)))
            depth = eng.stats.depth
        t0 = time.perf_counter()
        pick = search_every_vertex(p, (8, 32), depth, budget, sample=8192, progress=print)
        search_s = time.perf_counter() - t0
        table, c = pick.table, pick.best.candidate
        dense = pick.dense and DenseChoice(
            DenseSpec.from_dict(pick.dense["spec"]), pick.dense["block_size"]
        )
        label = f"{dense.spec.name} b{dense.block_size}" if dense else c.label
        with Engine(p(c.spec.sigma), VariantSpec(c.spec.sigma)) as eng:
            eng.many.configure(c.spec, eta=c.eta, block_size=c.block_size, dense=dense)
            if dense:  # compiled and allocated before the clock starts
                eng.many.dense_runner()
            else:
                eng.many.runner(reverse=p.graph.directed)
            walls = []
            for _ in range(3):  # the first call also loads CuPy kernels and packs the launch
                t0 = time.perf_counter()
                scores = eng.closeness()
                walls.append(time.perf_counter() - t0)
        wall = min(walls[1:])
        row = {"graph": name, "n": p.graph.n, "arcs": p.graph.nnz, "depth": depth,
               "variant": label, "batched": c.label, "blest_s": wall, "first_call_s": walls[0],
               "walls": walls, "search_s": search_s, "table": [t.to_dict() for t in table],
               "dense_table": [t.to_dict() for t in pick.dense_table or []]}  # fmt: skip
        nk_result = networkit_closeness(p.graph) if with_nk else None
        if nk_result is not None:
            nk_s, nk_scores = nk_result
            rel = np.abs(scores - nk_scores) / np.maximum(np.abs(nk_scores), 1e-300)
            row.update(networkit_s=nk_s, speedup=nk_s / wall, max_rel_diff=float(rel.max()))
        rows.append(row)
        extra = (
            f" | NetworKit {row['networkit_s']:.2f} s, {row['speedup']:.0f}x" if nk_result else ""
        )
        print(
            f"{name}: closeness {wall:.4f} s (first call {walls[0]:.4f} s) with {label}{extra}",
            flush=True,
        )
        for t in sorted(table, key=lambda t: t.seconds_per_source or 1e9)[:6]:
            us = "-" if t.seconds_per_source is None else f"{t.seconds_per_source * 1e6:.3f}"
            print(f"    {t.candidate.label:<34} {us} us/source {t.error or ''}", flush=True)
    return rows


def sweep(names: list[str], forms, kappas, blocks, etas, reps: int) -> list[dict]:
    """Whole closeness calls of every vertex, one engine per (form, kappa, block size)."""
    rows = []
    for name in names:
        p = Prepare(name)
        g = p.graph
        check = np.random.default_rng(1).choice(g.n, min(16, g.n), replace=False)
        want = closeness_from_sums(source_sums(g, check, reverse=g.directed), g.n)
        if "dense" in forms:
            rows += [{"graph": name, **r} for r in sweep_dense(p, check, want, blocks, reps)]
        for form in [f for f in forms if f != "dense"]:
            for kappa in kappas:
                expand = "csr" if form in ("queue", "smem", "block") else "shuffle"
                try:
                    spec = MSSpec(DEFAULT_SIGMA, kappa, form, expand)
                except Exception:
                    continue  # not a variant (kappa outside the form's range)
                for block, eta in [(b, e) for b in blocks for e in etas]:
                    row = {"graph": name, "n": g.n, "arcs": g.nnz, "variant": spec.name,
                           "block": block, "eta": eta}  # fmt: skip
                    try:
                        with Engine(p(DEFAULT_SIGMA), VariantSpec(DEFAULT_SIGMA)) as eng:
                            eng.many.configure(spec, eta=eta, block_size=block, dense=None)
                            runner = eng.many.runner(reverse=g.directed)
                            eng.closeness(check)  # warm: module, launch packing
                            walls = []
                            for _ in range(reps):
                                t0 = time.perf_counter()
                                scores = eng.closeness()
                                walls.append(time.perf_counter() - t0)
                            t0 = time.perf_counter()
                            runner.source_sums(None)
                            run_s = time.perf_counter() - t0
                            ok = np.allclose(scores[check], want, rtol=1e-12, atol=0)
                            row.update(blest_s=min(walls), walls=walls, run_s=run_s, ok=bool(ok))
                            row.update(grid=runner.grid, memory=runner.memory_summary())
                    except Exception as exc:  # a variant that cannot run here is reported
                        row.update(error=f"{type(exc).__name__}: {exc}"[:200])
                    rows.append(row)
                    if "error" in row:
                        print(f"{name} {spec.name} b{block} eta={eta:g}: {row['error']}")
                    else:
                        print(
                            f"{name} {spec.name} b{block} eta={eta:g}: whole call "
                            f"{row['blest_s'] * 1e3:.3f}"
                            f" ms (runner {run_s * 1e3:.3f} ms, grid {row['grid']}) "
                            f"{'ok' if row['ok'] else 'WRONG'}",
                            flush=True,
                        )
    return rows


def sweep_dense(p: Prepare, check, want, blocks, reps: int) -> list[dict]:
    """Whole closeness calls of every vertex with each dense variant and block size."""
    rows, g = [], p.graph
    for spec in dense_variants():
        for block in blocks:
            row = {"n": g.n, "arcs": g.nnz, "variant": spec.name, "block": block}
            try:
                with Engine(p(DEFAULT_SIGMA), VariantSpec(DEFAULT_SIGMA)) as eng:
                    eng.many.configure(dense=DenseChoice(spec, block))
                    runner = eng.many.dense_runner()
                    eng.closeness()  # warm: module, launch packing
                    walls = []
                    for _ in range(reps):
                        t0 = time.perf_counter()
                        scores = eng.closeness()
                        walls.append(time.perf_counter() - t0)
                    ok = np.allclose(scores[check], want, rtol=1e-12, atol=0)
                    row.update(blest_s=min(walls), walls=walls, ok=bool(ok))
                    row.update(depth=runner.depth, runner_s=_best_of(reps, runner.sums))
                    row.update(sums_s=_best_of(reps, eng.source_sums))
                    row.update(kernel_s=_kernel_seconds(p.cp, runner, reps))
                    row.update(memory=runner.memory_summary())
            except Exception as exc:  # a variant that cannot run here is reported
                row.update(error=f"{type(exc).__name__}: {exc}"[:200])
            rows.append(row)
            if "error" in row:
                print(f"{spec.name} b{block}: {row['error']}", flush=True)
            else:
                print(
                    f"{spec.name} b{block}: whole call {row['blest_s'] * 1e3:.3f} ms, "
                    f"source_sums {row['sums_s'] * 1e3:.3f}, runner {row['runner_s'] * 1e3:.3f}, "
                    f"kernel {row['kernel_s'] * 1e3:.3f} ms ({row['depth']} levels) "
                    f"{'ok' if row['ok'] else 'WRONG'}",
                    flush=True,
                )
    return rows


def _best_of(reps: int, call) -> float:
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - t0)
    return best


def _kernel_seconds(cp, runner, reps: int) -> float:
    """The dense kernel alone, between two CUDA events (best of ``reps``)."""
    best = float("inf")
    for _ in range(reps):
        runner._ctl.fill(0)
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        runner._launch()
        stop.record()
        stop.synchronize()
        best = min(best, cp.cuda.get_elapsed_time(start, stop) / 1e3)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("mode", choices=("per-source", "closeness", "sweep"))
    ap.add_argument("--graphs", nargs="+", required=True)
    ap.add_argument("--sources", type=int, default=256)
    ap.add_argument("--budget", type=float, default=30.0, help="multi-source search seconds")
    ap.add_argument(
        "--ss-budget", type=float, default=30.0,
        help="per-source: blest-tune --budget for the tuned single-source call (0: none)",
    )  # fmt: skip
    ap.add_argument("--networkit", action="store_true")
    ap.add_argument("--out", default="bench-out")
    ap.add_argument("--forms", nargs="+", default=["queue"], help="sweep: forms")
    ap.add_argument("--kappas", nargs="+", type=int, default=[1, 2, 4, 8], help="sweep: kappa")
    ap.add_argument("--blocks", nargs="+", type=int, default=[256], help="sweep: block sizes")
    ap.add_argument("--etas", nargs="+", type=float, default=[0.0], help="sweep: eta")
    ap.add_argument("--reps", type=int, default=3, help="sweep: whole calls timed (best kept)")
    ap.add_argument(
        "--patch",
        action="append",
        default=[],
        metavar="OLD=>NEW",
        help="an experiment: replace OLD by NEW in every rendered multi-source kernel",
    )
    args = ap.parse_args(argv)
    if args.patch:
        import dataclasses

        import blest.runtime.ms_runner as ms_runner

        plain, edits = ms_runner.ms_program, [p.split("=>", 1) for p in args.patch]

        def patched(spec):
            src = plain(spec).source
            for old, new in edits:
                if old not in src:
                    raise SystemExit(f"--patch: {old!r} is not in {spec.name}")
                src = src.replace(old, new)
            return dataclasses.replace(plain(spec), source=src)

        ms_runner.ms_program = patched
    if args.mode == "per-source":
        rows = per_source(args.graphs, args.sources, args.budget, args.ss_budget, Path(args.out))
    elif args.mode == "sweep":
        rows = sweep(args.graphs, args.forms, args.kappas, args.blocks, args.etas, args.reps)
    else:
        rows = closeness(args.graphs, args.budget, args.networkit)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"msbfs-{args.mode}.json").write_text(json.dumps(rows, indent=1, default=float))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
