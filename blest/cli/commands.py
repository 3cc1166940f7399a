"""``blest``: inspect variants and configs, run BFS, benchmark, and the bundled demo."""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from blest.cli.common import (
    Parser,
    common_flags,
    given_spec_flags,
    is_config,
    positive_int,
    read_config,
    run,
    say,
    seconds,
    spec_args,
    spec_from,
    switching_constant,
    target_spec,
)
from blest.cli.graphs import GRAPH_HELP, given_graph_flags, graph_flags, load
from blest.cli.outputs import check_levels_output, check_outputs_apart, print_json, write_levels
from blest.codegen.spec import VariantSpec, variants
from blest.defaults import (
    DEFAULT_ALPHA,
    DEFAULT_ARCH,
    DEFAULT_BETA,
    DEFAULT_ETA,
    SIGMAS,
    SOURCE_SEED,
)
from blest.errors import ArgumentError, BlestError
from blest.graph.labels import vertex_of

EXAMPLES = """examples:
  blest demo                                   # the bundled road graph, end to end
  blest-tune graph.mtx                         # tune: writes graph.blest.json + its artifact
  blest bfs graph.blest.json 0 --out levels.npy  # BFS with the tuned variant
  blest bfs graph.mtx 0 --out levels.csv       # vertex,level rows (.txt: one level per line)
  zcat edges.txt.gz | blest bfs - 0 --undirected --json   # a graph on standard input
  blest info graph.blest.json                  # graph, preparation, chosen variant, timings
  blest info graph.mtx --json                  # sizes, cleaning, BVSS statistics per sigma
  blest bench graph.blest.json -n 64 --verify  # time 64 sources, check each against SciPy
  blest source graph.blest.json                # the generated CUDA of the chosen variant
  blest source --sigma 8 --update lazy         # the generated CUDA of any variant
  blest ptx --sigma 16 --update eager --no-switching --arch sm_90
  blest variants                               # every variant name

Edge lists are directed unless --undirected. Exit status: 0 done, 2 a user error (one line on
stderr), 130 interrupted, 141 standard output closed early, 1 a bug in blest.
"""


TARGET_HELP = f"a *.json tuned config or {GRAPH_HELP}"


def _cmd_source(args: argparse.Namespace) -> int:
    from blest.codegen.render import render

    spec, _ = target_spec(args)
    sys.stdout.write(render(spec))
    return 0


def _cmd_ptx(args: argparse.Namespace) -> int:
    from blest.codegen.compile import compile_source
    from blest.codegen.render import render

    spec, cfg = target_spec(args)
    tuned_arch = cfg.gpu.arch if cfg is not None and cfg.gpu is not None else None
    arch = args.arch or tuned_arch or DEFAULT_ARCH
    arch = arch.replace("sm_", "compute_")
    sys.stdout.write(compile_source(render(spec), arch=arch, target="ptx").decode())
    return 0


def _cmd_variants(args: argparse.Namespace) -> int:
    for spec in variants():
        print(spec.name)
    return 0


# ---------------------------------------------------------------------- info
def graph_facts(g: Any, sigmas: Sequence[int]) -> dict[str, Any]:
    """Sizes, cleaning and BVSS statistics of a graph (what ``blest info GRAPH`` shows)."""
    from blest.graph.bvss import build_bvss

    deg = g.out_degree
    rep = g.report
    graph = {
        "source": rep.source,
        "n": g.n,
        "arcs": g.nnz,
        "directed": g.directed,
        "isolated": g.isolated,
        "self_loops_dropped": rep.self_loops,
        "duplicates_dropped": rep.duplicates,
        "symmetrized": rep.symmetrized,
        "relabelled": g.labels is not None,
        "out_degree_mean": float(deg.mean()) if g.n else 0.0,
        "out_degree_max": int(deg.max()) if g.n else 0,
    }
    bvss = []
    for sigma in sigmas:
        st = build_bvss(g, sigma).stats()
        bvss.append({k: getattr(st, k) for k in st.__dataclass_fields__})
    return {"graph": graph, "bvss": bvss}


def _describe(g: Any, facts: dict[str, Any]) -> None:
    f = facts["graph"]
    kind = "directed" if f["directed"] else "undirected"
    say(f"graph       {f['source'] or '(object)'}")
    print(f"vertices    {f['n']:,}  ({f['isolated']:,} isolated)")
    print(f"arcs        {f['arcs']:,}  ({kind}; {g.report.summary()})")
    if f["n"]:
        print(f"out-degree  mean {f['out_degree_mean']:.2f}  max {f['out_degree_max']:,}")
    print("BVSS        sigma   Ns         Nv         real slices  compression  U_div     MiB")
    for st in facts["bvss"]:
        print(
            f"            {st['sigma']:<7} {st['n_slice_sets']:<10,} {st['n_vss']:<10,} "
            f"{st['real_slices']:<12,} {st['compression_ratio']:<12.4f} {st['u_div']:<9.1f} "
            f"{st['gpu_bytes'] / 2**20:.1f}"
        )


def _cmd_info(args: argparse.Namespace) -> int:
    if is_config(args.graph):
        from blest.tuning.summary import summary_lines, timing_lines

        flags = given_graph_flags(args)
        if flags:
            raise ArgumentError(f"{', '.join(flags)} cannot be combined with a tuned config")
        cfg = read_config(args.graph)
        if args.json:
            print_json({**cfg.to_dict(), "artifact_file": str(cfg.artifact_path)})
            return 0
        lines = summary_lines(cfg) + [f"artifact   {cfg.artifact_path}"]
        lines += [f"note       {n}" for n in cfg.notes] + timing_lines(cfg)
        say(*lines)
        return 0
    graph = load(args.graph, args)
    facts = graph_facts(graph, args.sigmas)
    if args.json:
        print_json(facts)
    else:
        _describe(graph, facts)
    return 0


# ---------------------------------------------------------------------- bfs
def _run_bfs(
    graph: Any, src: int, spec: VariantSpec, eta: float, beta: float, alpha: float
) -> tuple[np.ndarray, dict]:
    """Levels from blest's one policy: the GPU engine, or SciPy's BFS on the CPU without one."""
    from blest.runtime.factory import make_engine

    with make_engine(graph, spec, eta=eta, beta=beta, alpha=alpha) as eng:
        levels = eng.bfs(src)
        where = eng.device_name
        engine = f"no GPU: {where}" if where.startswith("CPU") else f"GPU {where}"
        return levels, {"engine": engine, "variant": spec.name, "traversal_ms": _ms(eng)}


def _ms(eng: Any) -> float:
    return float(eng.stats.traversal_ms)


def _tuned_bfs(args: argparse.Namespace) -> tuple[np.ndarray, Any, dict]:
    """Levels, the graph (its labels name the vertices) and what ran, from a tuned config."""
    from blest.tuning.loader import load_tuned

    given = given_spec_flags(args) + given_graph_flags(args)
    given += [f"--{k}" for k in ("eta", "beta", "alpha") if getattr(args, k) is not None]
    if given:
        raise BlestError(f"{', '.join(given)} cannot be combined with a tuned config")
    read_config(args.graph)  # a bad config is named before any warning
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "no GPU: blest runs", RuntimeWarning)
        eng = load_tuned(args.graph)
    with eng:
        levels = eng.bfs(vertex_of(eng.graph, args.src))
        where = eng.device_name
        engine = f"no GPU: {where}" if where.startswith("CPU") else f"GPU {where}"
        info = {"engine": engine, "variant": eng.spec.name, "traversal_ms": _ms(eng)}
        return levels, eng.graph, info


def _cmd_bfs(args: argparse.Namespace) -> int:
    if args.json and args.out == "-":
        raise ArgumentError("--json and --out - both write to standard output: choose one")
    check_levels_output(args.out)
    check_outputs_apart({"--out": args.out}, target=args.graph)
    if is_config(args.graph):
        levels, graph, info = _tuned_bfs(args)
    else:
        graph = load(args.graph, args)
        eta = DEFAULT_ETA if args.eta is None else args.eta
        beta = DEFAULT_BETA if args.beta is None else args.beta
        alpha = DEFAULT_ALPHA if args.alpha is None else args.alpha
        src = vertex_of(graph, args.src)
        levels, info = _run_bfs(graph, src, spec_from(args), eta, beta, alpha)
    n = graph.n
    reached, depth = int((levels >= 0).sum()), int(levels.max())
    if args.out:
        write_levels(args.out, levels, graph.labels)
    summary = {"source": args.src, "vertices": n, "reached": reached, "depth": depth}
    summary.update(info, out=args.out)
    if args.json:
        print_json(summary)
        return 0
    ms = info["traversal_ms"]
    timing = f"{ms:.3f} ms traversal" if info["engine"].startswith("GPU") else f"{ms:.1f} ms"
    line = f"source {args.src}: {reached:,} of {n:,} reached, depth {depth} "
    line += f"({info['engine']}, {timing})"
    say(line, file=sys.stderr if args.out == "-" else sys.stdout)
    if args.out and args.out != "-":
        say(f"levels written to {args.out}")
    return 0


# ---------------------------------------------------------------------- demo
def _cmd_demo(args: argparse.Namespace) -> int:
    """The user's flow on the bundled road graph: blest-tune, then load_tuned(...).bfs(src),
    each result checked against SciPy."""
    from blest.cli.tune import tune_main
    from blest.datasets import example_path
    from blest.graph.io import load_graph
    from blest.reference import bfs_levels
    from blest.runtime.factory import resolve_device
    from blest.tuning import load_tuned

    graph = load_graph(example_path())
    active = np.flatnonzero(graph.out_degree > 0)
    if args.sources > active.size:
        raise ArgumentError(
            f"--sources {args.sources}: the example graph has {active.size:,} possible sources"
        )
    out = Path(args.dir)
    out.mkdir(parents=True, exist_ok=True)
    config = out / "luxembourg_osm.blest.json"
    argv = [str(example_path()), "-o", str(config), "--budget", str(args.budget)]
    say(f"$ blest-tune {' '.join(argv)}")
    status = tune_main(argv)
    if status:
        return status
    say(f"$ python -c 'blest.load_tuned(\"{config}\").bfs(src)'")
    device = "emulator" if resolve_device(None) == "cpu" else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the no-GPU notice was printed by blest-tune already
        engine = load_tuned(config, device=device)
    rng = np.random.default_rng(SOURCE_SEED)
    for src in rng.choice(active, size=args.sources, replace=False):
        src = int(src)
        t0 = time.perf_counter()
        levels = engine.bfs(src)
        ms = (time.perf_counter() - t0) * 1e3
        ok = np.array_equal(levels, bfs_levels(graph, src))
        print(
            f"  bfs({src}): depth {int(levels.max())}, {int((levels >= 0).sum()):,} reached, "
            f"{ms:.1f} ms, {'matches SciPy' if ok else 'DIFFERS FROM SCIPY'}"
        )
        if not ok:
            return 1
    say(f"generated CUDA of the chosen variant: blest source {config}")
    return 0


# ---------------------------------------------------------------------- parser
def _info_parser(sub: Any) -> None:
    i = sub.add_parser(
        "info", help="graph and BVSS statistics, or a tuned config's choice and timings"
    )
    i.add_argument("graph", metavar="GRAPH_OR_CONFIG", help=TARGET_HELP)
    i.add_argument(
        "--sigmas",
        type=int,
        nargs="+",
        choices=SIGMAS,
        default=list(SIGMAS),
        metavar="SIGMA",
        help=f"slice widths of the BVSS table, among {', '.join(map(str, SIGMAS))} (default: all)",
    )
    i.add_argument("--json", action="store_true", help="print JSON instead of text")
    graph_flags(i, legacy_no_directed=True)
    i.set_defaults(func=_cmd_info)


def _bfs_parser(sub: Any) -> None:
    b = sub.add_parser("bfs", help="BFS levels from one source (a tuned config or a graph file)")
    b.add_argument("graph", metavar="CONFIG_OR_GRAPH", help=TARGET_HELP)
    b.add_argument(
        "src",
        type=int,
        help="source vertex: an id of the input as written (Matrix Market: 0-based), also "
        "with --relabel and on a config tuned with --relabel",
    )
    b.add_argument(
        "--out",
        metavar="PATH",
        help="write the levels (-1: unreachable): .csv (vertex,level rows, the input's own "
        "ids), .npy (int32) or .txt (one per line) in vertex order (with --relabel: the ids "
        "that occur, in increasing order), - (text on standard output); default: not written",
    )
    b.add_argument("--eta", type=float, help=f"graph files only (default {DEFAULT_ETA:g})")
    b.add_argument(
        "--beta",
        type=switching_constant("beta"),
        help="graph files only: after a bottom-up level, stay bottom-up while the frontier "
        f"holds at least n/beta vertices (default {DEFAULT_BETA:g}: off)",
    )
    b.add_argument(
        "--alpha",
        type=switching_constant("alpha"),
        help="graph files only: a level may go bottom-up only while alpha times the frontier's "
        f"in-arcs exceed the unvisited vertices' in-arcs (persistent variants; default "
        f"{DEFAULT_ALPHA:g}: off; Beamer's value: 14)",
    )
    b.add_argument("--json", action="store_true", help="print the summary as JSON")
    spec_args(b)
    graph_flags(b, legacy_no_directed=True)
    b.set_defaults(func=_cmd_bfs)


def _demo_parser(sub: Any) -> None:
    d = sub.add_parser("demo", help="load, prepare and traverse the bundled example graph")
    d.add_argument(
        "--sources", type=positive_int, default=3, metavar="N", help="sources to run (default 3)"
    )
    d.add_argument(
        "--dir", default="blest-demo", help="where the config and artifact go (default blest-demo)"
    )
    d.add_argument(
        "--budget", type=seconds, default=20.0, help="tuning seconds on a GPU (default 20)"
    )
    d.set_defaults(func=_cmd_demo)


def build_parser() -> argparse.ArgumentParser:
    from blest.cli.bench import bench_parser
    from blest.cli.betweenness import betweenness_parser
    from blest.cli.closeness import closeness_parser

    p = Parser(
        prog="blest",
        description="blest: breadth-first search compiled into tensor-core kernels.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    common_flags(p)
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    _demo_parser(sub)
    _info_parser(sub)
    for name, func, doc in (
        ("source", _cmd_source, "print the generated CUDA source of a config's or any variant"),
        ("ptx", _cmd_ptx, "print the PTX of a config's or any variant (NVRTC, no GPU needed)"),
    ):
        s = sub.add_parser(name, help=doc, description=doc)
        s.add_argument("config", nargs="?", metavar="CONFIG", help="a tuned *.blest.json")
        spec_args(s)
        if name == "ptx":
            s.add_argument("--arch", help=f"default: the config's GPU, else {DEFAULT_ARCH}")
        s.set_defaults(func=func)
    _bfs_parser(sub)
    v = sub.add_parser("variants", help="list every variant")
    v.set_defaults(func=_cmd_variants)
    bench_parser(sub)
    closeness_parser(sub)
    betweenness_parser(sub)
    for command in sub.choices.values():  # --debug also after the command's name
        command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                             help=argparse.SUPPRESS)  # fmt: skip
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``blest``."""
    return run(build_parser(), argv)
