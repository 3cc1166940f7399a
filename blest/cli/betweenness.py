"""``blest betweenness``: betweenness centrality of every vertex (or edge), exact or sampled.

On a tuned config or any graph file; on one device, every local GPU (``--gpus all``), or the
ranks of ``mpirun -n N blest betweenness ...`` (rank 0 writes). Progress: a status line on a
terminal, a plain line every few seconds otherwise. The scores are written atomically at the
end, so Ctrl-C leaves no output file behind (exit status 130). With ``--checkpoint DIR`` the
tree node of every finished block of sources is kept in DIR, and the same command run again
computes only the missing blocks, to the same bits.
"""

from __future__ import annotations

import argparse
import time
from typing import IO

import numpy as np

from blest.cli.common import positive_int, say
from blest.cli.graphs import graph_flags
from blest.cli.outputs import check_levels_output
from blest.cli.scores import (
    Eta,
    check_checkpoint,
    check_target,
    checkpoint_flag,
    labels_of,
    load_target,
    own_ids,
    parse_gpus,
    say_kept,
    status,
    vertex_scores,
    write_scores,
)
from blest.errors import ArgumentError

__all__ = ["PLAIN_EVERY", "betweenness_parser"]

#: Seconds between two progress lines when standard error is not a terminal.
PLAIN_EVERY = 5.0

EXAMPLES = """examples:
  blest betweenness graph.blest.json -o scores.npy           # every vertex, exact
  blest betweenness graph.mtx -o b.csv -k 100 --seed 7       # 100 sampled sources
  blest betweenness graph.mtx -o b.txt --no-normalized --endpoints
  blest betweenness graph.mtx -o e.csv --edges               # every edge: u,v,betweenness
  blest betweenness graph.blest.json -o b.npy --gpus all     # one worker per local GPU
  mpirun -n 8 blest betweenness graph.blest.json -o b.npy    # MPI ranks, same bits
  blest betweenness graph.blest.json -o b.npy --checkpoint b.ckpt  # again after a kill: resumes
"""


def betweenness_parser(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser(
        "betweenness",
        help="betweenness centrality (Brandes), exact or from k sampled sources",
        description=__doc__.split("\n\n")[0],
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    c.add_argument("target", metavar="CONFIG_OR_GRAPH", help="a tuned *.blest.json or a graph")
    c.add_argument(
        "-o",
        "--out",
        required=True,
        help="scores: .npy (float64), .txt (one per line), .csv (vertex,score), - ; "
        "with --edges: .csv or .txt (u,v,score rows)",
    )
    c.add_argument(
        "-k", type=positive_int, default=None, help="sample k sources (default: every vertex)"
    )
    c.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seed of the sampling (with -k; default: a fresh one)",
    )
    c.add_argument(
        "--no-normalized",
        dest="normalized",
        action="store_false",
        help="raw sums over pairs, not divided by the number of pairs (default: normalized)",
    )
    c.add_argument(
        "--endpoints", action="store_true", help="count the ends of each path (default: not)"
    )
    c.add_argument("--edges", action="store_true", help="score every edge instead of vertices")
    c.add_argument(
        "--gpus",
        default=None,
        help="'all' or a count: one worker process per GPU (default: one GPU)",
    )
    checkpoint_flag(c, "the tree node")
    graph_flags(c)
    c.set_defaults(func=_cmd_betweenness)


def _check_out(path: str, edges: bool) -> None:
    if edges and check_levels_output(path) == "npy":
        raise ArgumentError(f"--edges writes .csv or .txt rows (u,v,score), not {path}")


def _write_edges(path: str, pairs: np.ndarray, scores: np.ndarray) -> None:
    def write(f: IO[bytes]) -> None:
        rows = (f"{u},{v},{s!r}" for (u, v), s in zip(pairs.tolist(), scores.tolist(), strict=True))
        f.write(("u,v,betweenness\n" + "\n".join(rows) + "\n").encode())

    write_scores(path, write)


def _cmd_betweenness(args: argparse.Namespace) -> int:
    import blest.brandes as bb
    from blest.runtime.distributed import WorkerError, mpi_world

    config = check_target(args)  # before any work
    _check_out(args.out, args.edges)
    if args.seed is not None and args.k is None:
        raise ArgumentError("--seed only applies with -k")
    if args.edges and args.endpoints:
        raise ArgumentError("--endpoints does not apply to --edges")
    check_checkpoint(args.checkpoint, args.out, args.target)
    if args.checkpoint is not None and args.k is not None and args.seed is None:
        raise ArgumentError(
            "--checkpoint with -k needs --seed: the rerun must draw the same sources"
        )
    gpus = parse_gpus(args.gpus)
    target = load_target(args, config)
    world = mpi_world()
    rank = 0 if world is None else world[1]
    line, plain = status("blest betweenness", rank)
    eta = Eta(line, plain, "blest betweenness", PLAIN_EVERY)
    keep = args.checkpoint
    where = {"k": args.k, "seed": args.seed, "gpus": gpus, "progress": eta, "checkpoint": keep}
    t0 = time.perf_counter()
    try:
        if args.edges:
            pairs, scores = bb.edge_betweenness(target, normalized=args.normalized, **where)
        else:
            scores = bb.betweenness(
                target, normalized=args.normalized, endpoints=args.endpoints, **where
            )
    except (KeyboardInterrupt, WorkerError):
        line.clear()
        if keep is not None and rank == 0:
            say_kept("blest betweenness", keep)
        raise
    finally:
        line.clear()
    if rank != 0:
        return 0
    if args.edges:  # in the input's own ids (increasing with the graph's: u < v holds)
        labels = labels_of(target, config)
        _write_edges(args.out, pairs if labels is None else labels[pairs], scores)
    else:
        vertex_scores(args.out, scores, own_ids(target, config, scores.size), "betweenness")
    if args.out != "-":
        what = f"{scores.size:,} edges" if args.edges else f"{scores.size:,} vertices"
        say(f"betweenness of {what} in {time.perf_counter() - t0:.2f} s written to {args.out}")
    return 0
