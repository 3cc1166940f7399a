"""``blest closeness``: exact closeness (or harmonic) centrality of every vertex, or of a list.

On a tuned config (its multi-source variant) or any graph file; on one GPU, every local GPU
(``--gpus all``), or the ranks of ``mpirun -n N blest closeness ...`` (rank 0 writes). A
progress line with the time left is shown on a terminal, and plain lines every ten seconds
otherwise (a log, a pipe); the scores are written atomically at the end, so Ctrl-C (honoured
between kernel launches, a quarter second apart) leaves nothing.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

import numpy as np

from blest.cli.common import Progress, is_config, say
from blest.cli.graphs import check_sources_file, given_graph_flags, graph_flags, load
from blest.cli.outputs import check_levels_output, check_outputs_apart
from blest.errors import ArgumentError
from blest.tuning.storage import atomic_write, write_error

__all__ = ["closeness_parser"]

EXAMPLES = """examples:
  blest closeness graph.blest.json -o scores.npy          # every vertex, tuned variant
  blest closeness graph.blest.json -o h.csv --harmonic    # harmonic centrality, as CSV
  blest closeness edges.txt --undirected -o c.txt --sources ids.txt
  blest closeness graph.blest.json -o c.npy --gpus all    # one worker per local GPU
  mpirun -n 8 blest closeness graph.blest.json -o c.npy   # MPI ranks, across machines too
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
        "--gpus",
        default=None,
        help="'all' or a count: one worker process per GPU (default: one GPU)",
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


def _gpus(text: str | None) -> int | str | None:
    if text is None or text == "all":
        return text
    try:
        count = int(text)
    except ValueError:
        raise ArgumentError(f"--gpus must be 'all' or a count, got {text!r}") from None
    if count < 1:
        raise ArgumentError(f"--gpus must be at least 1, got {count}")
    return count


class _Eta:
    """``progress(done, total)``: sources done, share and time left, as the status line on a
    terminal and, when stderr is not one (a log, a pipe), as a plain line every
    :data:`PLAIN_EVERY` seconds (none in a shorter run)."""

    def __init__(
        self, line: Callable[[str], None], plain: bool = False, prog: str = "blest closeness"
    ) -> None:
        self.line, self.plain, self.prog, self.start = line, plain, prog, time.monotonic()
        self.printed = self.start

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        spent = now - self.start
        left = spent / done * (total - done) if done else float("nan")
        share = f"{done:,} / {total:,} sources ({100 * done / max(total, 1):.0f}%)"
        self.line(f"{share}, {left:.1f} s left")
        if self.plain and now - self.printed >= PLAIN_EVERY:
            self.printed = now
            rate = done / spent if spent > 0 else float("nan")
            print(
                f"{self.prog}: {share}, {rate:,.0f} sources/s, {_duration(left)} left",
                file=sys.stderr,
                flush=True,
            )


#: Seconds between two plain progress lines.
PLAIN_EVERY = 10.0


def _duration(seconds: float) -> str:
    if not seconds == seconds:  # NaN: nothing done yet
        return "unknown time"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def _stderr_is_terminal() -> bool:
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except (ValueError, OSError):  # closed
        return False


def _write(path: str, scores: np.ndarray, ids: np.ndarray, name: str) -> None:
    fmt = check_levels_output(path)

    def write(f: IO[bytes]) -> None:
        if fmt == "npy":
            np.save(f, scores)
        elif fmt == "txt":
            f.write(("\n".join(map(repr, scores.tolist())) + "\n").encode())
        else:
            rows = (f"{v},{s!r}" for v, s in zip(ids.tolist(), scores.tolist(), strict=True))
            f.write((f"vertex,{name}\n" + "\n".join(rows) + "\n").encode())

    if path == "-":
        try:
            write(sys.stdout.buffer)
            sys.stdout.buffer.flush()
        except OSError as exc:  # a full disk, say: name what could not be written
            raise write_error(exc, "standard output") from None
    else:
        atomic_write(path, write)


def _cmd_closeness(args: argparse.Namespace) -> int:
    import blest.centrality as bc
    from blest.runtime.distributed import mpi_world

    check_levels_output(args.out)  # before any work
    check_outputs_apart({"--out": args.out}, target=args.target, sources=args.sources)
    sources = _sources(args.sources)
    gpus = _gpus(args.gpus)
    config = is_config(args.target)
    if config and given_graph_flags(args):
        flags = ", ".join(given_graph_flags(args))
        raise ArgumentError(f"{flags} cannot be combined with a tuned config (it keeps its own)")
    target = args.target if config else load(args.target, args)
    world = mpi_world()
    rank = 0 if world is None else world[1]
    line = Progress("blest closeness", enabled=rank == 0)
    plain = rank == 0 and not _stderr_is_terminal() and sys.stderr is not None
    eta = _Eta(line, plain)
    t0 = time.perf_counter()
    try:
        if args.harmonic:
            scores = bc.harmonic(target, sources, gpus=gpus, progress=eta)
        else:
            scores = bc.closeness(
                target, sources, wf_improved=args.wf_improved, gpus=gpus, progress=eta
            )
    finally:
        line.clear()
    if rank != 0:
        return 0
    if sources is not None:
        ids = sources
    else:  # the input's own id of every vertex (a config's from its artifact)
        labels = bc.graph_of(target).labels if config else target.labels
        ids = np.arange(scores.size) if labels is None else labels
    name = "harmonic" if args.harmonic else "closeness"
    _write(args.out, scores, ids, name)
    if args.out != "-":
        say(
            f"{name} of {scores.size:,} vertices in {time.perf_counter() - t0:.2f} s "
            f"written to {args.out}"
        )
    return 0
