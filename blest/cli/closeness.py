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
import sys
import time
from pathlib import Path

import numpy as np

from blest.cli.common import say
from blest.cli.graphs import check_sources_file, graph_flags
from blest.cli.scores import (
    Eta,
    check_checkpoint,
    check_target,
    checkpoint_flag,
    load_target,
    own_ids,
    parse_gpus,
    say_kept,
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
    checkpoint_flag(c, "the sums")
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


#: Seconds between two plain progress lines.
PLAIN_EVERY = 10.0


def _cmd_closeness(args: argparse.Namespace) -> int:
    import blest.centrality as bc
    from blest.runtime.distributed import WorkerError, mpi_world

    config = check_target(args, sources=args.sources)  # before any work
    check_checkpoint(args.checkpoint, args.out, args.target, args.sources)
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
            say_kept("blest closeness", keep)
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
