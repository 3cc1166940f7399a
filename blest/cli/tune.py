"""``blest-tune``: prepare a graph, time the kernel variants, write a tuned config and artifact."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from blest.cli.common import (
    Parser,
    Progress,
    common_flags,
    positive_int,
    run,
    say,
    seconds,
)
from blest.cli.graphs import GRAPH_HELP, graph_flags, load
from blest.defaults import SIGMAS, WORKLOAD_NAMES
from blest.errors import ArgumentError

TUNE_EXAMPLES = """examples:
  blest-tune graph.mtx                  # → ./graph.blest.json + ./graph.blest.<hash>.npz
  blest-tune graph.mtx.gz -o out/g.blest.json --budget 120
  blest-tune edges.txt --undirected --sigma 8 16 --quiet
  zcat edges.txt.gz | blest-tune - --format edgelist -o edges.blest.json

The config names its prepared artifact (the graph ordered and in BVSS form), whose file name
holds a hash of its content: a re-tune replaces the pair as one (the old pair stays intact
until the new one is complete) and removes the artifact the old config named. Runs on the
same output take turns. Without a GPU the graph is still prepared and the config written
with the paper's rules ("tuned": false); nothing is compiled unless --compile-check;
blest.load_tuned() then runs SciPy's BFS, or the NumPy emulator of the variant.
"""


def _tune_outputs(args: argparse.Namespace) -> tuple[Path, Path]:
    """(config, artifact base), checked before any work."""
    from blest.cli.outputs import check_tune_outputs
    from blest.tuning.config import default_outputs
    from blest.tuning.storage import check_output_path

    if args.graph == "-" and not args.output:
        raise ArgumentError("a graph from standard input (-) needs -o CONFIG")
    config, base = default_outputs(args.graph, args.output)
    if not config.name.endswith(".json"):
        raise ArgumentError(f"the config name must end in .json (got {config})")
    check_output_path(config)
    check_tune_outputs(config, args.graph)
    return config, base


def _check_orderings(names: list[str] | None) -> None:
    if not names:
        return
    from blest.tuning.prepare import available_orderings

    unknown = [o for o in names if o not in available_orderings()]
    if unknown:
        known = ", ".join(available_orderings())
        raise ArgumentError(f"unknown ordering {', '.join(unknown)} (available: {known})")


def _tune_and_write(args: argparse.Namespace, config: Path, base: Path, progress: Progress):
    from blest.tuning.tuner import write_tuned

    progress(f"loading {args.graph}")
    t0 = time.perf_counter()
    graph = load(args.graph, args)
    load_s = time.perf_counter() - t0
    source = args.graph if args.graph == "-" else str(Path(args.graph).resolve())
    from blest.tuning.workloads import tune_workload

    outcome = tune_workload(
        args.workload,
        graph,
        source=source,
        budget_s=args.budget,
        sigmas=args.sigma,
        orderings=args.ordering,
        progress=progress,
        n_sources=args.sources,
        compile_check=args.compile_check,
    )
    outcome.config.preparation.load_seconds = load_s
    if graph.labels is not None:
        outcome.config.notes.append(
            "ids relabelled (--relabel): vertex i is the i-th smallest id of the input; "
            "commands take and write the input's own ids (the artifact keeps them)"
        )

    def waiting() -> None:
        progress.clear()
        say(f"blest-tune: waiting for another blest-tune on {config}", file=sys.stderr)

    progress(f"writing {config}")
    return write_tuned(outcome, config, base, on_wait=waiting)


def _cmd_tune(args: argparse.Namespace) -> int:
    from blest.tuning.publish import sweep
    from blest.tuning.summary import summary_lines

    config, base = _tune_outputs(args)
    _check_orderings(args.ordering)
    sweep(config, base)
    progress = Progress("blest-tune", enabled=not args.quiet, budget=args.budget)
    try:
        cfg = _tune_and_write(args, config, base, progress)
    finally:
        progress.clear()
    if not args.quiet:
        if cfg.notes:
            say(f"blest-tune: note: {'; '.join(cfg.notes)}", file=sys.stderr)
        say(*summary_lines(cfg), f"wrote      {config} and {cfg.artifact_path}")
    return 0


def build_tune_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="blest-tune",
        description="Tune blest for one graph: prepare it (ordering, BVSS), time the kernel "
        "variants on the GPU and write a tuned config (JSON) plus the prepared graph (.npz).",
        epilog=TUNE_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    common_flags(p)
    p.add_argument("graph", metavar="GRAPH", help=GRAPH_HELP)
    p.add_argument(
        "-o",
        "--output",
        metavar="CONFIG",
        help="config path (default ./GRAPH.blest.json; required for -); the prepared graph "
        "goes beside it as *.blest.<hash>.npz",
    )
    p.add_argument(
        "--budget",
        type=seconds,
        default=60.0,
        metavar="S",
        help="seconds for timing candidates on a GPU (default 60; preparation not counted)",
    )
    p.add_argument(
        "--sources", type=positive_int, default=8, metavar="N", help="tuning sources (default 8)"
    )
    p.add_argument(
        "--sigma",
        type=int,
        nargs="+",
        choices=SIGMAS,
        default=list(SIGMAS),
        help=f"slice widths to consider (default all: {' '.join(map(str, SIGMAS))})",
    )
    p.add_argument(
        "--ordering",
        nargs="+",
        metavar="NAME",
        help="orderings to consider (default on a GPU: every available one: natural, rcm, "
        "jaccard; without a GPU the first given, default the paper's: jaccard for scale-free "
        "graphs, else rcm)",
    )
    p.add_argument(
        "--compile-check",
        action="store_true",
        help="without a GPU, still compile the candidate kernels with NVRTC, as a check of "
        "the toolchain (default: compile nothing that cannot run here)",
    )
    p.add_argument(
        "--workload",
        choices=WORKLOAD_NAMES,
        default="bfs",
        help="what to tune for: single-source BFS (default), many sources at once (the "
        "multi-source kernels of closeness, harmonic centrality and bfs_many), or the "
        "betweenness kernels",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress, no summary")
    graph_flags(p)
    p.set_defaults(func=_cmd_tune)
    return p


def tune_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``blest-tune``."""
    return run(build_tune_parser(), argv)


if __name__ == "__main__":
    raise SystemExit(tune_main())
