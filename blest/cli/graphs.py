"""The files a command reads: the graph (a file, or ``-`` for standard input) with
``--format``, ``--one-based``, ``--relabel`` and ``--directed`` / ``--undirected`` on every
command that reads one; and a list of vertices (``--sources``), checked like a graph file."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from blest.errors import ArgumentError, GraphFormatError, GraphLimitError, VertexError
from blest.graph.core import Graph
from blest.graph.io import ENV_MAX_BYTES, FORMATS
from blest.tuning.storage import write_error

__all__ = [
    "GRAPH_FLAGS",
    "check_sources_file",
    "given_graph_flags",
    "graph_flags",
    "load",
    "user_to_graph_id",
]

#: dest names of the flags :func:`graph_flags` adds (for "cannot be combined with a config")
GRAPH_FLAGS = {
    "format": "--format",
    "one_based": "--one-based",
    "relabel": "--relabel",
    "directed": "--directed",
}
#: Bytes of memory a vertex id read from a text file may take while it is parsed (a Python
#: string and its place in a list), for the size cap of a --sources file.
_BYTES_PER_ID_BYTE = 64

GRAPH_HELP = (
    "a graph file: Matrix Market (.mtx, .mm), an edge list (.txt, .csv, .tsv, .el, .edges, "
    "...), a blest .npz, any of them gzipped (.gz); - reads standard input"
)


def graph_flags(p: argparse.ArgumentParser, *, legacy_no_directed: bool = False) -> None:
    """Add ``--format``, ``--relabel`` and ``--directed`` / ``--undirected``."""
    g = p.add_argument_group("reading the graph")
    g.add_argument(
        "--format",
        choices=FORMATS,
        help="force a reader (default: the one the file name says, unless the content "
        "declares its format: a Matrix Market banner, a zip archive; for - and unknown names "
        "the first bytes decide)",
    )
    g.add_argument(
        "--one-based",
        action="store_true",
        help="edge lists: the ids start at 1, so id i is vertex i-1 (as in Matrix Market); "
        "default: 0-based, and a 1-based file gets an extra isolated vertex 0",
    )
    g.add_argument(
        "--relabel",
        action="store_true",
        help="number the ids that occur 0..k-1 in increasing order (default: ids as written; "
        "ids that never occur are isolated vertices)",
    )
    d = g.add_mutually_exclusive_group()
    d.add_argument(
        "--directed",
        dest="directed",
        action="store_const",
        const=True,
        default=None,
        help="keep every arc one-way (default: as the input says: edge lists and Matrix "
        "Market 'general' are directed, Matrix Market 'symmetric' is undirected)",
    )
    d.add_argument(
        "--undirected",
        dest="directed",
        action="store_const",
        const=False,
        help="add the reverse of every arc; edge lists are directed unless --undirected",
    )
    if legacy_no_directed:  # the spelling of earlier versions
        d.add_argument(
            "--no-directed",
            dest="directed",
            action="store_const",
            const=False,
            help=argparse.SUPPRESS,
        )


def given_graph_flags(args: argparse.Namespace) -> list[str]:
    """The graph flags given on the command line."""
    given = []
    for dest, flag in GRAPH_FLAGS.items():
        value = getattr(args, dest, None)
        if dest == "directed" and value is False:
            given.append("--undirected")
        elif value is not None and value is not False:
            given.append(flag)
    return given


@contextlib.contextmanager
def _stdin_file() -> Iterator[Path]:
    """Standard input spooled to a temporary file (removed on exit, signals included)."""
    stream = sys.stdin
    if stream is None or stream.closed:  # Python found no file descriptor 0, or it was closed
        raise ArgumentError("the graph is - but standard input is closed: pipe a graph in")
    if stream.isatty():
        raise ArgumentError("the graph is - but standard input is a terminal: pipe a graph in")
    with tempfile.TemporaryDirectory(prefix="blest-stdin-") as tmp:
        head = stream.buffer.read(2)
        path = Path(tmp) / ("stdin.gz" if head == b"\x1f\x8b" else "stdin")
        try:
            with open(path, "wb") as f:
                f.write(head)
                shutil.copyfileobj(stream.buffer, f, 1 << 20)
        except OSError as exc:  # name the copy's place (a full disk, say), not a bare errno
            if exc.filename is None:
                raise write_error(exc, f"standard input's copy in {tmp}") from None
            raise
        yield path


def _in_flags(message: str) -> str:
    """A loader's message with the API's ``relabel=True`` spelled as the command's flag."""
    return message.replace("relabel=True", "--relabel")


def load(path: str, args: argparse.Namespace) -> Graph:
    """Load ``path`` (``-``: standard input) with the command's graph flags."""
    from blest.graph.io import load_graph

    read = functools.partial(
        load_graph,
        directed=getattr(args, "directed", None),
        relabel=bool(getattr(args, "relabel", False)),
        format=getattr(args, "format", None),
        one_based=bool(getattr(args, "one_based", False)),
    )
    if path != "-":
        try:
            return read(path)
        except GraphLimitError as exc:
            raise GraphLimitError(_in_flags(str(exc))) from None
    with _stdin_file() as spooled:
        try:
            graph = read(spooled)
        except GraphFormatError as exc:  # name standard input, not the spooled copy
            raise GraphFormatError(exc.reason, path="<stdin>", line=exc.line) from None
        except GraphLimitError as exc:
            raise GraphLimitError(_in_flags(str(exc).replace(str(spooled), "<stdin>"))) from None
    return dataclasses.replace(graph, report=dataclasses.replace(graph.report, source="-"))


def user_to_graph_id(graph: Graph, vertex: int) -> int:
    """The graph's id of the user's vertex (they differ after ``--relabel``)."""
    if graph.labels is None:
        return vertex
    hits = np.flatnonzero(graph.labels == vertex)
    if hits.size == 0:
        raise VertexError(f"vertex {vertex} does not occur in the graph (read with --relabel)")
    return int(hits[0])


def check_sources_file(path: str) -> None:
    """Refuse a ``--sources`` file that is not a regular file (a device never ends, a FIFO may
    block forever) or that is too large to parse within the memory limit."""
    from blest.graph.io.files import check_regular
    from blest.graph.io.limits import human_bytes, memory_limit

    try:
        size = check_regular(Path(path)).st_size
    except GraphFormatError as exc:
        raise ArgumentError(f"cannot read the sources from {path}: {exc.reason}") from None
    limit = memory_limit(None)
    if limit.nbytes is not None and size * _BYTES_PER_ID_BYTE > limit.nbytes:
        raise ArgumentError(
            f"the sources file {path} has {human_bytes(size)}, too large to read within the "
            f"memory limit of {human_bytes(limit.nbytes)} ({limit.origin}); raise it with "
            f"{ENV_MAX_BYTES}"
        )
