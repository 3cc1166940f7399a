"""What the commands that score vertices from many BFSs (``blest closeness``, ``blest
betweenness``) share: the checked target, ``--gpus``, the progress lines and the score files.

A target is a tuned config or a graph file; scores name vertices by the input's own ids (the
labels of a graph read with ``--relabel``, kept by a config tuned with it). Progress is one
status line on a terminal, else (a log, a pipe) a plain line every ``every`` seconds; scores
are written atomically at the end, so an interrupted command leaves nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from typing import IO, Any

import numpy as np

from blest.cli.common import Progress, is_config, say
from blest.cli.graphs import given_graph_flags, load
from blest.cli.outputs import check_levels_output, check_outputs_apart
from blest.errors import ArgumentError
from blest.tuning.storage import atomic_write, write_error

__all__ = [
    "Eta",
    "check_target",
    "labels_of",
    "load_target",
    "own_ids",
    "parse_gpus",
    "status",
    "vertex_scores",
    "write_scores",
]


def check_target(args: argparse.Namespace, *, sources: str | None = None) -> bool:
    """Whether ``args.target`` is a tuned config, once ``args.out`` is checked (a score file,
    apart from every input) and graph flags are refused on a config (it keeps its own)."""
    check_levels_output(args.out)
    check_outputs_apart({"--out": args.out}, target=args.target, sources=sources)
    config = is_config(args.target)
    if config and given_graph_flags(args):
        flags = ", ".join(given_graph_flags(args))
        raise ArgumentError(f"{flags} cannot be combined with a tuned config (it keeps its own)")
    return config


def load_target(args: argparse.Namespace, config: bool) -> Any:
    """The config's path as it is, or the graph the file holds (read with the graph flags)."""
    return args.target if config else load(args.target, args)


def labels_of(target: Any, config: bool) -> np.ndarray | None:
    """The input's own id of each vertex, or None where they are the vertex numbers."""
    if config:
        from blest.centrality import graph_of

        return graph_of(target).labels
    return target.labels


def own_ids(target: Any, config: bool, n: int) -> np.ndarray:
    """The input's own id of each of the ``n`` vertices (a config's from its artifact)."""
    labels = labels_of(target, config)
    return np.arange(n) if labels is None else labels


def parse_gpus(text: str | None) -> int | str | None:
    """``--gpus``: None, ``"all"`` or a count of at least one."""
    if text is None or text == "all":
        return text
    try:
        count = int(text)
    except ValueError:
        raise ArgumentError(f"--gpus must be 'all' or a count, got {text!r}") from None
    if count < 1:
        raise ArgumentError(f"--gpus must be at least 1, got {count}")
    return count


def checkpoint_flag(parser: argparse.ArgumentParser, what: str) -> None:
    """The ``--checkpoint DIR`` option, keeping ``what`` of every finished block."""
    parser.add_argument(
        "--checkpoint",
        metavar="DIR",
        help=f"keep {what} of every finished block of sources in DIR (created if missing); "
        "the same command run again resumes from them (under mpirun: a directory every rank "
        "sees; default: none kept)",
    )


def check_checkpoint(path: str | None, out: str, target: str, sources: str | None = None) -> None:
    """Refuse, before any work, a --checkpoint that is a file (an input, the output) or whose
    directory does not exist."""
    if path is None:
        return
    check_outputs_apart({"--checkpoint": path}, target=target, sources=sources)
    if out != "-" and os.path.realpath(path) == os.path.realpath(out):
        raise ArgumentError(f"--checkpoint {path} is the --out file; choose another directory")
    if os.path.lexists(path) and not os.path.isdir(path):
        raise ArgumentError(f"--checkpoint {path} is not a directory")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise ArgumentError(f"--checkpoint {path}: directory {parent} does not exist")


def say_kept(prog: str, path: str) -> None:
    """After a stop: where the finished blocks are, and that the command resumes."""
    say(f"{prog}: the finished blocks are kept in {path}; the same command resumes from them",
        file=sys.stderr)  # fmt: skip


def status(prog: str, rank: int) -> tuple[Progress, bool]:
    """The status line of rank ``rank`` (only rank 0 shows one) and whether it also prints
    plain lines (standard error is not a terminal)."""
    line = Progress(prog, enabled=rank == 0)
    return line, rank == 0 and sys.stderr is not None and not _stderr_is_terminal()


class Eta:
    """``progress(done, total)``: sources done, share and time left, as the status line and,
    when ``plain``, as a plain line every ``every`` seconds (none in a shorter run). The rate
    counts the work from the first report on: a resumed run first reports the sources its
    checkpoint held, which took no time now."""

    def __init__(self, line: Callable[[str], None], plain: bool, prog: str, every: float) -> None:
        self.line, self.plain, self.prog, self.every = line, plain, prog, every
        self.start = self.printed = time.monotonic()
        self.first: int | None = None

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if self.first is None:
            self.first, self.start = done, now
        spent, new = now - self.start, done - self.first
        left = spent / new * (total - done) if new > 0 else float("nan")
        share = f"{done:,} / {total:,} sources ({100 * done / max(total, 1):.0f}%)"
        self.line(share if left != left else f"{share}, {left:.1f} s left")
        if self.plain and now - self.printed >= self.every:
            self.printed = now
            rate = new / spent if spent > 0 else float("nan")
            print(
                f"{self.prog}: {share}, {rate:,.0f} sources/s, {_duration(left)} left",
                file=sys.stderr,
                flush=True,
            )


def write_scores(path: str, write: Callable[[IO[bytes]], None]) -> None:
    """Write through ``write`` to ``path`` atomically, or to standard output for ``-``."""
    if path != "-":
        atomic_write(path, write)
        return
    try:
        write(sys.stdout.buffer)
        sys.stdout.buffer.flush()
    except OSError as exc:  # a full disk, say: name what could not be written
        raise write_error(exc, "standard output") from None


def vertex_scores(path: str, scores: np.ndarray, ids: np.ndarray, name: str) -> None:
    """Scores of vertices: .npy (float64), .txt (one per line) or CSV rows ``vertex,name``."""
    fmt = check_levels_output(path)

    def write(f: IO[bytes]) -> None:
        if fmt == "npy":
            np.save(f, scores)
        elif fmt == "txt":
            f.write(("\n".join(map(repr, scores.tolist())) + "\n").encode())
        else:
            rows = (f"{v},{s!r}" for v, s in zip(ids.tolist(), scores.tolist(), strict=True))
            f.write((f"vertex,{name}\n" + "\n".join(rows) + "\n").encode())

    write_scores(path, write)


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
