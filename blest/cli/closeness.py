"""``blest closeness``: exact closeness (or harmonic) centrality of every vertex, or of a list.

On a tuned config (its multi-source variant) or any graph file; on one GPU, every local GPU
(``--gpus all``), or the ranks of ``mpirun -n N blest closeness ...`` (rank 0 writes). A
progress line with the time left is shown on a terminal, and plain lines every ten seconds
otherwise (a log, a pipe); the scores are written atomically at the end, so Ctrl-C (honoured
between kernel launches, a quarter second apart) leaves nothing. With ``--checkpoint DIR`` the
sums of every finished block of sources are kept in DIR, and the same command run again after
a Ctrl-C, a kill or a failure computes only the rest, with the same exact scores. The exact
reductions (isolated vertices, vertices of degree one and twins follow from other BFSs) are on
unless ``--no-reduce``; a line says how many BFSs they saved.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

from blest.cli.common import say
from blest.cli.graphs import check_sources_file, graph_flags
from blest.cli.outputs import check_outputs_apart
from blest.cli.scores import (
    Eta,
    check_target,
    load_target,
    own_ids,
    parse_gpus,
    status,
    vertex_scores,
)
from blest.errors import ArgumentError

__all__ = ["closeness_parser"]

EXAMPLES = """examples:
  blest closeness graph.blest.json -o scores.npy          # every vertex, tuned variant
  blest closeness graph.blest.json -o h.csv --harmonic    # harmonic centrality, as CSV
  blest closeness edges.txt --undirected -o c.txt --sources ids.txt
  blest closeness graph.blest.json -o c.npy --gpus all    # one worker per local GPU
  mpirun -n 8 blest closeness graph.blest.json -o c.npy   # MPI ranks, across machines too
  blest closeness graph.blest.json -o c.npy --checkpoint c.ckpt  # again after a kill: resumes
"""


def closeness_parser(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser(
        "closeness",
        help="exact closeness (or harmonic) centrality from many BFSs at once",
        description=__doc__.split("\n\n")[0],
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    c.add_argument("target", metavar="CONFIG_OR_GRAPH", help="a tuned *.blest.json or a graph")
    c.add_argument(
        "-o",
        "--out",
        required=True,
        help="scores: .csv (vertex,score rows, the input's own ids), .npy (float64) or .txt "
        "(one per line) in the order of --sources, else in vertex order (with --relabel: the "
        "ids that occur, in increasing order); - (text on standard output)",
    )
    c.add_argument("--harmonic", action="store_true", help="harmonic instead of closeness")
    c.add_argument(
        "--sources",
        metavar="FILE",
        help="the vertices to score: ids of the input as written, also with --relabel and on "
        "a config tuned with --relabel (separated by blanks, or .npy; default all)",
    )
    c.add_argument(
        "--no-wf-improved",
        dest="wf_improved",
        action="store_false",
        help="closeness without the (reach-1)/(n-1) scaling (default: scaled)",
    )
    c.add_argument(
        "--no-reduce",
        dest="reduce",
        action="store_false",
        help="one BFS per vertex scored: no exact reductions (default: isolated vertices, "
        "vertices of degree one and twins follow from other BFSs, bit for bit)",
    )
    c.add_argument(
        "--gpus",
        default=None,
        help="'all' or a count: one worker process per GPU (default: one GPU)",
    )
    c.add_argument(
        "--checkpoint",
        metavar="DIR",
        help="keep the sums of every finished block of sources in DIR (created if missing); "
        "the same command run again resumes from them (under mpirun: a directory every rank "
        "sees; default: none kept)",
    )
    graph_flags(c)
    c.set_defaults(func=_cmd_closeness)


def _sources(path: str | None) -> np.ndarray | None:
    if path is None:
        return None
    check_sources_file(path)
    try:
        if path.endswith(".npy"):
            ids = np.load(path, allow_pickle=False)
        else:
            ids = np.array(Path(path).read_text().split(), dtype=np.int64)
    except (OSError, ValueError) as exc:
        raise ArgumentError(f"cannot read the sources from {path}: {exc}") from None
    if ids.ndim != 1 or ids.size == 0 or ids.dtype.kind not in "iu":
        raise ArgumentError(f"{path} must hold a nonempty list of integer vertex ids")
    return ids


def _check_checkpoint(args: argparse.Namespace) -> None:
    """Refuse, before any work, a --checkpoint that is a file (an input, the output) or whose
    directory does not exist."""
    path = args.checkpoint
    if path is None:
        return
    check_outputs_apart({"--checkpoint": path}, target=args.target, sources=args.sources)
    if args.out != "-" and os.path.realpath(path) == os.path.realpath(args.out):
        raise ArgumentError(f"--checkpoint {path} is the --out file; choose another directory")
    if os.path.lexists(path) and not os.path.isdir(path):
        raise ArgumentError(f"--checkpoint {path} is not a directory")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise ArgumentError(f"--checkpoint {path}: directory {parent} does not exist")


#: Seconds between two plain progress lines.
PLAIN_EVERY = 10.0


def _cmd_closeness(args: argparse.Namespace) -> int:
    import blest.centrality as bc
    from blest.runtime.distributed import WorkerError, mpi_world

    config = check_target(args, sources=args.sources)  # before any work
    _check_checkpoint(args)
    sources = _sources(args.sources)
    gpus = parse_gpus(args.gpus)
    target = load_target(args, config)
    world = mpi_world()
    rank = 0 if world is None else world[1]
    line, plain = status("blest closeness", rank)
    eta = Eta(line, plain, "blest closeness", PLAIN_EVERY)
    t0 = time.perf_counter()
    keep = args.checkpoint
    saved: list[str] = []
    run = {"gpus": gpus, "progress": eta, "checkpoint": keep, "reduce": args.reduce,
           "report": saved.append}  # fmt: skip
    try:
        if args.harmonic:
            scores = bc.harmonic(target, sources, **run)
        else:
            scores = bc.closeness(target, sources, wf_improved=args.wf_improved, **run)
    except (KeyboardInterrupt, WorkerError):
        line.clear()
        if keep is not None and rank == 0:
            say(
                f"blest closeness: the finished blocks are kept in {keep}; the "
                "same command resumes from them",
                file=sys.stderr,
            )
        raise
    finally:
        line.clear()
    if rank != 0:
        return 0
    ids = sources if sources is not None else own_ids(target, config, scores.size)
    name = "harmonic" if args.harmonic else "closeness"
    vertex_scores(args.out, scores, ids, name)
    if args.out == "-":
        say(*saved, file=sys.stderr)  # standard output holds the scores
    else:
        say(
            *saved,
            f"{name} of {scores.size:,} vertices in {time.perf_counter() - t0:.2f} s "
            f"written to {args.out}",
        )
    return 0
