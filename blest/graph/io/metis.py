"""METIS graph files (``.graph``, ``.metis``): an undirected graph as 1-based adjacency lists.

Lines starting with ``%`` are comments. The first other line is the header ``n m [fmt
[ncon]]``: ``n`` vertices and ``m`` undirected edges. Then the i-th line (comments not counted)
describes vertex ``i`` (blest vertex ``i - 1``); a blank line is a vertex without neighbours.
``fmt`` has up to three 0/1 digits, read right-aligned as *sizes, weights, edge weights*:
``1`` edge weights, ``10`` vertex weights, ``11`` both, ``100`` vertex sizes, ``101``,
``110``, ``111`` (``0`` or no fmt: none). A vertex line starts with the vertex size (when
sizes are present) and ``ncon`` vertex weights (when weights are present; ``ncon`` defaults to
1), then lists the neighbours, each followed by the edge weight when edge weights are present.
Sizes and weights must be non-negative integers and are otherwise ignored.

Every edge is listed on the lines of both its ends, so the neighbour entries must number
``2 m`` and the adjacency must be symmetric; a file breaking either rule is refused, naming the
line. The graph is undirected; ``directed=True`` keeps both arcs of every edge.

The file is read as a stream (:meth:`GraphFile.line_chunks`): a NUL byte is refused as soon as
it is read, and a compressed stream that expands past the memory limit is refused. The leading
comments are skipped by one regular expression.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from blest.errors import GraphFormatError, GraphLimitError
from blest.graph.core import MAX_VERTICES, Graph
from blest.graph.io.build import EMPTY_IDS, Options, build, csr_arcs
from blest.graph.io.files import GraphFile, show
from blest.graph.io.limits import check_graph_size, content_cap

__all__ = ["MetisHeader", "load_metis", "sniff_level"]

_DIGITS = re.compile(rb"\d{1,18}")
_FMT = re.compile(rb"[01]{1,3}")
_PLAIN = b"0123456789 \t\r\n"
_BOM = b"\xef\xbb\xbf"
_COMMENTS = re.compile(rb"(?:[ \t\r\f\v]*+%[^\n]*+(?:\n|\Z))*+")
LineOf = Callable[[int], int]


@dataclass(frozen=True)
class MetisHeader:
    """The header line ``n m [fmt [ncon]]``, decoded."""

    n: int
    m: int
    sizes: bool
    ncon: int
    edge_weights: bool
    line: int

    @property
    def lead(self) -> int:
        """Numbers before the neighbours on a vertex line (size and vertex weights)."""
        return int(self.sizes) + self.ncon

    @property
    def step(self) -> int:
        """Numbers per neighbour (2 with edge weights)."""
        return 2 if self.edge_weights else 1

    def layout(self) -> str:
        parts = (["its size"] if self.sizes else []) + (
            [f"{self.ncon} vertex weight(s)"] if self.ncon else []
        )
        nbrs = "(neighbour, edge weight) pairs" if self.edge_weights else "neighbours"
        return f"a vertex line holds {', '.join(parts + [nbrs])}"


def load_metis(f: GraphFile, opts: Options) -> Graph:
    """Read a METIS graph file (see the module docstring)."""
    data = b"".join(piece for piece, _ in f.line_chunks(content_cap(opts.max_bytes)))
    if not data.strip():
        raise GraphFormatError("the file is empty", path=f.where)
    header, src, dst, line_of = parse_metis(data, f.where, partial=False)
    check_graph_size(
        header.n,
        src.size,
        directed=True,
        where=f.where,
        max_bytes=opts.max_bytes,
        relabel=opts.relabel,
        sparse_ids=False,
    )
    g = build(
        src, dst, header.n, directed=True, relabel=opts.relabel, source=f.where, format="metis"
    )
    check_symmetric(g, line_of, f.where)
    if opts.want_directed(False):
        return g
    return Graph.from_csr(
        g.out_ptr, g.out_idx, g.n, directed=False, labels=g.labels, report=g.report
    )


def sniff_level(head: bytes, complete: bool) -> int:
    """How well ``head`` (whole lines) reads as METIS: 0 not at all; 1 a METIS header, then
    lines of non-negative integers, no more than it declares; 2 a complete file that passes
    every check."""
    try:
        header, counts, _, line_of = _scan_metis(head, "")
        _check_line_count(counts, header, line_of, "", partial=True)
    except GraphFormatError:
        return 0
    except GraphLimitError:
        return 1
    if not complete:
        return 1
    try:
        header, src, dst, line_of = parse_metis(head, "", partial=False)
        check_symmetric(Graph.from_arcs(src, dst, header.n, directed=True), line_of, "")
    except (GraphFormatError, GraphLimitError):
        return 1
    return 2


def parse_metis(
    data: bytes, where: str, *, partial: bool
) -> tuple[MetisHeader, np.ndarray, np.ndarray, LineOf]:
    """Header, arcs (0-based, in line order) and the file line of each vertex.

    ``partial``: ``data`` is the beginning of a file; vertex and edge counts are not checked.
    """
    header, counts, values, line_of = _scan_metis(data, where)
    src, dst = _vertex_arcs(counts, values, header, line_of, where, partial)
    return header, src, dst, line_of


def _scan_metis(data: bytes, where: str) -> tuple[MetisHeader, np.ndarray, np.ndarray, LineOf]:
    """Header, numbers per vertex line, the numbers, and the file line of each vertex."""
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    header, body_at = _split_header(data, where)
    body = data[body_at:]
    first = header.line + 1
    scanned = _scan_plain(body)
    if scanned is None:
        counts, values, lines = _scan_lines(body, first, where)
        return header, counts, values, lambda i: int(lines[i])
    return header, scanned[0], scanned[1], lambda i: first + i


def _split_header(data: bytes, where: str) -> tuple[MetisHeader, int]:
    """The header and the offset of the line after it."""
    comments = _COMMENTS.match(data)
    assert comments is not None  # the pattern matches the empty string
    pos = comments.end()
    if pos >= len(data):
        raise GraphFormatError("no header line (n m [fmt [ncon]]), only comments", path=where)
    line = 1 + data.count(b"\n", 0, pos)
    end = data.find(b"\n", pos)
    end = len(data) if end < 0 else end
    return _parse_header(data[pos:end], where, line), min(end + 1, len(data))


def _parse_header(text: bytes, where: str, line: int) -> MetisHeader:
    tokens = text.split()
    if not 2 <= len(tokens) <= 4 or not all(_DIGITS.fullmatch(t) for t in tokens[:2]):
        raise GraphFormatError(
            f"METIS header must be 'n m [fmt [ncon]]' (non-negative integers), got {show(text)}",
            path=where,
            line=line,
        )
    n, m = int(tokens[0]), int(tokens[1])
    fmt = tokens[2] if len(tokens) > 2 else b"0"
    if not _FMT.fullmatch(fmt):
        raise GraphFormatError(
            f"unsupported fmt {show(fmt)}: METIS fmt has up to three 0/1 digits (vertex sizes, "
            "vertex weights, edge weights), such as 1, 10, 11, 100 or 111",
            path=where,
            line=line,
        )
    sizes, weights, edge_weights = (c == ord("1") for c in fmt.zfill(3))
    ncon = int(weights)
    if len(tokens) == 4:
        if not weights or not _DIGITS.fullmatch(tokens[3]) or int(tokens[3]) < 1:
            raise GraphFormatError(
                f"ncon {show(tokens[3])} needs vertex weights (fmt 10, 11, 110 or 111) and "
                "must be a positive integer",
                path=where,
                line=line,
            )
        ncon = int(tokens[3])
    if n > MAX_VERTICES:
        raise GraphLimitError(
            f"{where}:{line}: the header declares {n} vertices; blest supports at most "
            f"{MAX_VERTICES}"
        )
    return MetisHeader(n, m, sizes, ncon, edge_weights, line)


def _scan_plain(body: bytes) -> tuple[np.ndarray, np.ndarray] | None:
    """(numbers per line, the numbers) of a body of digits and whitespace, vectorized;
    None for anything else (comments, signs, overlong numbers)."""
    if body.translate(None, _PLAIN):
        return None
    b = np.frombuffer(body, dtype=np.uint8)
    digit = ((b >= ord("0")) & (b <= ord("9"))).view(np.int8)
    edges = np.diff(digit, prepend=np.int8(0), append=np.int8(0))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    if starts.size and int((ends - starts).max()) > 18:
        return None
    newlines = np.flatnonzero(b == ord("\n"))
    n_lines = newlines.size + (1 if body and not body.endswith(b"\n") else 0)
    counts = np.bincount(np.searchsorted(newlines, starts), minlength=n_lines)
    if not starts.size:
        return counts, EMPTY_IDS
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            values = np.fromstring(body, dtype=np.int64, sep=" ")
        except (ValueError, DeprecationWarning):  # pragma: no cover - digits and spaces only
            return None
    return (counts, values) if values.size == starts.size else None


def _scan_lines(body: bytes, first: int, where: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The validating line parser: numbers per vertex line, the numbers, each line's number."""
    pieces = body.split(b"\n")
    if pieces[-1] == b"":
        pieces.pop()
    counts: list[int] = []
    values: list[int] = []
    lines: list[int] = []
    for lineno, text in enumerate(pieces, first):
        tokens = text.split()
        if tokens and tokens[0].startswith(b"%"):
            continue
        for token in tokens:
            if not _DIGITS.fullmatch(token):
                raise GraphFormatError(
                    f"{show(token)} is not a non-negative integer (METIS lines hold 1-based "
                    "vertex numbers and integer weights)",
                    path=where,
                    line=lineno,
                )
        counts.append(len(tokens))
        values.extend(map(int, tokens))
        lines.append(lineno)
    return np.array(counts, np.int64), np.array(values, np.int64), np.array(lines, np.int64)


def _vertex_arcs(
    counts: np.ndarray,
    values: np.ndarray,
    header: MetisHeader,
    line_of: LineOf,
    where: str,
    partial: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """Check the vertex lines against the header; the arcs (vertex, neighbour), 0-based."""
    counts = _check_line_count(counts, header, line_of, where, partial)
    rest = counts - header.lead
    bad = np.flatnonzero((rest < 0) | (rest % header.step != 0))
    if bad.size:
        i = int(bad[0])
        raise GraphFormatError(
            f"vertex {i + 1}: {header.layout()}; found {counts[i]} numbers",
            path=where,
            line=line_of(i),
        )
    degree = rest // header.step
    total = int(degree.sum())
    if not partial and total != 2 * header.m:
        raise GraphFormatError(
            f"the header declares {header.m} edges, so {2 * header.m} neighbour entries (each "
            f"edge is listed on the lines of both ends), but the vertex lines hold {total}",
            path=where,
            line=header.line,
        )
    src = np.repeat(np.arange(counts.size, dtype=np.int64), degree)
    dst = _neighbours(values[: int(counts.sum())], counts, header) - 1
    wrong = np.flatnonzero((dst < 0) | (dst >= header.n))
    if wrong.size:
        j = int(wrong[0])
        raise GraphFormatError(
            f"vertex {src[j] + 1} lists neighbour {dst[j] + 1}, out of range 1..{header.n}",
            path=where,
            line=line_of(int(src[j])),
        )
    return src, dst


def _check_line_count(
    counts: np.ndarray, header: MetisHeader, line_of: LineOf, where: str, partial: bool
) -> np.ndarray:
    """Numbers per line of the n vertex lines; only blank lines may follow them."""
    if counts.size > header.n:
        extra = np.flatnonzero(counts[header.n :])
        if extra.size:
            raise GraphFormatError(
                f"more vertex lines than the {header.n} the header (line {header.line}) declares",
                path=where,
                line=line_of(header.n + int(extra[0])),
            )
        return counts[: header.n]
    if counts.size < header.n and not partial:
        raise GraphFormatError(
            f"the header declares {header.n} vertices but the file has {counts.size} vertex "
            "lines (a vertex without neighbours still needs its line, blank)",
            path=where,
            line=header.line,
        )
    return counts


def _neighbours(values: np.ndarray, counts: np.ndarray, header: MetisHeader) -> np.ndarray:
    """The neighbour numbers among all numbers (skipping sizes and weights)."""
    if header.lead == 0 and header.step == 1:
        return values
    line_start = np.cumsum(counts) - counts
    pos = np.arange(values.size, dtype=np.int64) - np.repeat(line_start, counts)
    keep = (pos >= header.lead) & ((pos - header.lead) % header.step == 0)
    return values[keep]


def check_symmetric(g: Graph, line_of: LineOf, where: str) -> None:
    """Refuse a directed reading ``g`` of the file whose adjacency is not symmetric, naming
    the line of a vertex that lists a neighbour which does not list it back."""
    if np.array_equal(g.out_ptr, g.in_ptr) and np.array_equal(g.out_idx, g.in_idx):
        return
    tails, heads = csr_arcs(g)
    keys = (tails.astype(np.int64) << 32) | heads
    back = (heads.astype(np.int64) << 32) | tails
    found = np.searchsorted(keys, back)
    missing = np.flatnonzero(keys[np.minimum(found, keys.size - 1)] != back)
    j = int(missing[0])
    u, v = int(tails[j]), int(heads[j])
    if g.labels is not None:
        u, v = int(g.labels[u]), int(g.labels[v])
    raise GraphFormatError(
        f"vertex {u + 1} lists {v + 1} but vertex {v + 1} (line {line_of(v)}) does not list "
        f"{u + 1}: the adjacency of a METIS graph must be symmetric",
        path=where,
        line=line_of(u),
    )
