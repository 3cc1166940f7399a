"""``blest-tune``: prepare a graph, time the kernel variants, write a tuned config and artifact."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from blest.cli.common import Parser, Progress, common_flags, load, run
from blest.defaults import SIGMAS
from blest.errors import BlestError

TUNE_EXAMPLES = """examples:
  blest-tune graph.mtx                         # → ./graph.blest.json + ./graph.blest.npz
  blest-tune graph.mtx.gz -o out/g.blest.json --budget 120
  blest-tune edges.txt --undirected --sigma 8 16 --quiet

Without a GPU the graph is still prepared and the candidate kernels are compiled (NVRTC), and
the config is written with the paper's rules ("tuned": false); blest.load_tuned() then runs the
NumPy emulator of that variant.
"""


def _tune_outputs(args: argparse.Namespace) -> tuple[Path, Path]:
    from blest.tuning.config import default_outputs

    config, artifact = default_outputs(args.graph, args.output)
    if not config.name.endswith(".json"):
        raise BlestError(f"the config name must end in .json (got {config})")
    for p in (config, artifact):
        if not p.resolve().parent.is_dir():
            raise BlestError(f"cannot write {p}: directory {p.parent} does not exist")
        if p.exists() and p.resolve() == Path(args.graph).resolve():
            raise BlestError(f"{p} would overwrite the input graph")
        if p.is_dir():
            raise BlestError(f"cannot write {p}: it is a directory")
    return config, artifact


def _cmd_tune(args: argparse.Namespace) -> int:
    from blest.tuning.summary import summary_lines
    from blest.tuning.tuner import tune, write_tuned

    if not 0 < args.budget < float("inf"):
        raise BlestError(f"--budget must be a finite number of seconds > 0, got {args.budget:g}")
    if args.sources < 1:
        raise BlestError(f"--sources must be at least 1, got {args.sources}")
    if args.ordering:
        from blest.tuning.prepare import available_orderings

        unknown = [o for o in args.ordering if o not in available_orderings()]
        if unknown:
            known = ", ".join(available_orderings())
            raise BlestError(f"unknown ordering {', '.join(unknown)} (available: {known})")
    config, artifact = _tune_outputs(args)
    progress = Progress("blest-tune", enabled=not args.quiet)
    try:
        progress(f"loading {args.graph}")
        t0 = time.perf_counter()
        graph = load(args.graph, args.directed)
        load_s = time.perf_counter() - t0
        outcome = tune(
            graph,
            source=str(Path(args.graph).resolve()),
            budget_s=args.budget,
            n_sources=args.sources,
            sigmas=args.sigma,
            orderings=args.ordering,
            progress=progress,
        )
        outcome.config.preparation.load_seconds = load_s
        progress(f"writing {config}")
        cfg = write_tuned(outcome, config, artifact)
    finally:
        progress.clear()
    if not args.quiet:
        if cfg.notes:
            print(f"blest-tune: note: {'; '.join(cfg.notes)}", file=sys.stderr)
        print("\n".join(summary_lines(cfg)))
        print(f"wrote      {config} and {artifact}")
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
    p.add_argument("graph", metavar="GRAPH", help="graph file (.mtx, .mtx.gz, edge list, .npz)")
    p.add_argument(
        "-o",
        "--output",
        metavar="CONFIG",
        help="config path (default ./GRAPH.blest.json); the "
        "prepared graph goes beside it as *.blest.npz",
    )
    p.add_argument(
        "--budget",
        type=float,
        default=60.0,
        metavar="S",
        help="seconds for timing candidates (default 60; preparation not counted)",
    )
    p.add_argument("--sources", type=int, default=8, metavar="N", help="tuning sources (default 8)")
    p.add_argument(
        "--sigma",
        type=int,
        nargs="+",
        choices=SIGMAS,
        default=list(SIGMAS),
        help="slice widths to consider (default all)",
    )
    p.add_argument(
        "--ordering",
        nargs="+",
        metavar="NAME",
        help="orderings to consider (default: every available one; natural, rcm, ...)",
    )
    d = p.add_mutually_exclusive_group()
    d.add_argument("--directed", dest="directed", action="store_const", const=True, default=None)
    d.add_argument("--undirected", dest="directed", action="store_const", const=False)
    p.add_argument("-q", "--quiet", action="store_true", help="no progress, no summary")
    p.set_defaults(func=_cmd_tune)
    return p


def tune_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``blest-tune``."""
    return run(build_tune_parser(), argv)
