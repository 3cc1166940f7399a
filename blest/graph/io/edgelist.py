"""Edge lists (SNAP, CSV, GAP ``.el`` / ``.wel``): one arc ``source target`` per line.

Tokens are separated by spaces, tabs or commas; blank lines and lines whose first token starts
with ``#`` or ``%`` are skipped; the first other line is a header (and skipped) when neither of
its first two tokens is an integer; every other line holds at least two non-negative decimal
ids, and further columns (weights, timestamps) are ignored. Ids are kept as written (0-based),
so ``n = max id + 1``.

Parsing, fastest first: pyarrow or pandas when installed and the body is plain
(:mod:`blest.graph.io.fastcsv`); per chunk of about 64 MiB, ``numpy.fromstring`` when one regular
expression shows every line has the same columns, else a vectorized tokenizer; the validating
line-by-line parser for the rest, which names the file and line of the first bad line.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from blest.errors import GraphFormatError, GraphLimitError
from blest.graph.core import MAX_VERTICES, Graph
from blest.graph.io import fastcsv
from blest.graph.io.build import EMPTY_IDS, Options, build_from_ids
from blest.graph.io.files import GraphFile, show

__all__ = ["fits", "load_edgelist"]

_CHUNK_BYTES = 1 << 26
_SEPARATORS = b" \t\r\n\v\f,"
_SPLIT = re.compile(rb"[\s,]+")
_DIGITS = re.compile(rb"\d+")
_SIGNED = re.compile(rb"[+-]?\d+")
_COMMENT = (ord("#"), ord("%"))
_INT64_MAX = 2**63 - 1
_BOM = b"\xef\xbb\xbf"


def load_edgelist(f: GraphFile, opts: Options) -> Graph:
    """Read an edge list file (see the module docstring)."""
    data = f.read()
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    if not data or data.isspace():
        raise GraphFormatError("the file is empty", path=f.where)
    src, dst = parse_edges(data, f.where, opts.relabel)
    if src.size == 0:
        raise GraphFormatError(
            "no edges found (only comments, blank lines or a header)", path=f.where
        )
    return build_from_ids(src, dst, opts, where=f.where, format="edgelist")


def parse_edges(data: bytes, where: str, relabel: bool) -> tuple[np.ndarray, np.ndarray]:
    """Source and target ids of every data line, in file order."""
    start, line = _skip_preamble(data)
    fast = fastcsv.parse(data, start, relabel)
    if fast is not None:
        return fast
    parts = [
        _parse_chunk(data, a, b, ln, where, relabel) for a, b, ln in _chunks(data, start, line)
    ]
    if not parts:
        return EMPTY_IDS, EMPTY_IDS
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def fits(head: bytes) -> bool:
    """Whether complete lines ``head`` read as an edge list (ids too large still fit)."""
    if head.startswith(_BOM):
        head = head[len(_BOM) :]
    start, line = _skip_preamble(head)
    try:
        _scan_edge_lines(head[start:], line, "", relabel=True)
    except GraphFormatError:
        return False
    except GraphLimitError:
        pass
    return True


def _tokens(line: bytes) -> list[bytes]:
    return [t for t in _SPLIT.split(line) if t]


def _skip_preamble(data: bytes) -> tuple[int, int]:
    """Offset and 1-based line number of the first line after leading comments and header."""
    pos, line = 0, 1
    while pos < len(data):
        end = data.find(b"\n", pos)
        end = len(data) if end < 0 else end
        tokens = _tokens(data[pos:end])
        if tokens and tokens[0][0] not in _COMMENT:
            if not any(_SIGNED.fullmatch(t) for t in tokens[:2]):  # a header: skip it
                pos, line = end + 1, line + 1
            break
        pos, line = end + 1, line + 1
    return pos, line


def _chunks(data: bytes, start: int, line: int) -> Iterator[tuple[int, int, int]]:
    """(begin, end, first line) of pieces of about _CHUNK_BYTES, cut after a newline."""
    while start < len(data):
        end = min(start + _CHUNK_BYTES, len(data))
        if end < len(data):
            cut = data.rfind(b"\n", start, end)
            end = cut + 1 if cut >= 0 else (data.find(b"\n", end) + 1 or len(data))
        yield start, end, line
        line += data.count(b"\n", start, end)
        start = end


def _parse_chunk(
    data: bytes, begin: int, end: int, line: int, where: str, relabel: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Ids of one chunk: fast paths first, the validating line parser for anything odd."""
    chunk = data[begin:end]
    ids = _parse_regular(chunk)
    if ids is None:
        ids = _parse_tokens(chunk)
    if ids is not None:
        top = max(int(ids[0].max()), int(ids[1].max())) if ids[0].size else 0
        if top < (2**53 if relabel else MAX_VERTICES):
            dtype = np.int64 if relabel else np.int32
            return ids[0].astype(dtype), ids[1].astype(dtype)
    return _scan_edge_lines(chunk, line, where, relabel)


_REGULAR: dict[int, re.Pattern[bytes]] = {}


def _regular_pattern(extra: int) -> re.Pattern[bytes]:
    """Lines of exactly two ids (at most 18 digits) and ``extra`` decimal numbers, or blank.

    The extra tokens must be plain numbers: ``numpy.fromstring`` would read ``1-2`` as two.
    """
    if extra not in _REGULAR:
        number = rb"[+-]?+(?:\d++\.?+\d*+|\.\d++)(?:[eE][+-]?+\d++)?+"
        more = rb"(?:[ \t,]++" + number + rb")" + b"{%d}" % extra
        _REGULAR[extra] = re.compile(
            rb"(?:[ \t]*+(?:\d{1,18}+[ \t,]++\d{1,18}+" + more + rb")?[ \t\r]*+(?:\n|\Z))*+"
        )
    return _REGULAR[extra]


def _parse_regular(chunk: bytes) -> tuple[np.ndarray, np.ndarray] | None:
    """Whole-chunk parse with numpy.fromstring when every line has the same columns."""
    tokens = next((t for t in map(_tokens, chunk[:4096].split(b"\n")) if t), [])
    extra = len(tokens) - 2
    if extra < 0 or extra > 16 or not _regular_pattern(extra).fullmatch(chunk):
        return None
    if b"," in chunk:
        chunk = chunk.replace(b",", b" ")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            flat = np.fromstring(chunk, dtype=np.float64 if extra else np.int64, sep=" ")
        except (ValueError, DeprecationWarning):
            return None  # e.g. a weight that is not a number
    if flat.size % (2 + extra):  # pragma: no cover - the pattern fixes the columns
        return None
    table = flat.reshape(-1, 2 + extra)
    return table[:, 0], table[:, 1]


_WIDTH = 12  # digits read per id by the tokenizer; longer ids go to the line parser
_TOKEN_BYTE = np.ones(256, dtype=bool)
_TOKEN_BYTE[list(_SEPARATORS)] = False
_POW10 = 10.0 ** np.arange(_WIDTH - 1, -1, -1)


def _parse_tokens(chunk: bytes) -> tuple[np.ndarray, np.ndarray] | None:
    """Vectorized tokenizer for irregular chunks (comments, ragged columns, mixed separators).

    Returns None when a line has one token, an id is not all digits or is too long.
    """
    b = np.empty(len(chunk) + _WIDTH + 1, dtype=np.uint8)
    b[:_WIDTH] = ord(" ")
    b[_WIDTH:-1] = np.frombuffer(chunk, dtype=np.uint8)
    b[-1] = ord("\n")
    tok = _TOKEN_BYTE[b]
    starts = np.flatnonzero(tok[1:] & ~tok[:-1]) + 1
    ends = np.flatnonzero(tok[:-1] & ~tok[1:]) + 1
    newlines = np.flatnonzero(b == ord("\n"))
    line_begin = np.concatenate([[0], newlines[:-1] + 1])
    if starts.size == 0:
        return EMPTY_IDS, EMPTY_IDS
    first = np.searchsorted(starts, line_begin)
    safe = np.minimum(first, starts.size - 1)
    lead = b[starts[safe]]
    data_line = (first < starts.size) & (starts[safe] < newlines)
    data_line &= (lead != _COMMENT[0]) & (lead != _COMMENT[1])
    first, line_end = first[data_line], newlines[data_line]
    second = first + 1
    if second.size and (second[-1] >= starts.size or np.any(starts[second] > line_end)):
        return None
    windows = sliding_window_view(b, _WIDTH)
    ids = []
    for t in (first, second):
        length = ends[t] - starts[t]
        if length.size and length.max() > _WIDTH:
            return None
        digits = windows[ends[t] - _WIDTH] - np.uint8(ord("0"))
        digits[np.arange(_WIDTH) < (_WIDTH - length)[:, None]] = 0
        if np.any(digits > 9):
            return None
        ids.append((digits @ _POW10).astype(np.int64))
    return ids[0], ids[1]


def _scan_edge_lines(
    chunk: bytes, line: int, where: str, relabel: bool
) -> tuple[np.ndarray, np.ndarray]:
    """The validating line-by-line parser: ids of a chunk, or an error naming its line."""
    limit = _INT64_MAX if relabel else MAX_VERTICES - 1
    src: list[int] = []
    dst: list[int] = []
    for lineno, text in enumerate(chunk.split(b"\n"), line):
        tokens = _tokens(text)
        if not tokens or tokens[0][0] in _COMMENT:
            continue
        if len(tokens) < 2:
            raise GraphFormatError(
                f"expected two vertex ids (source target), found one column: {show(text)}",
                path=where,
                line=lineno,
            )
        u, v = (_edge_id(t, limit, where, lineno) for t in tokens[:2])
        src.append(u)
        dst.append(v)
    return np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64)


def _edge_id(token: bytes, limit: int, where: str, lineno: int) -> int:
    if not _DIGITS.fullmatch(token):
        if _SIGNED.fullmatch(token) and token.startswith(b"-"):
            raise GraphFormatError(f"negative vertex id {int(token)}", path=where, line=lineno)
        raise GraphFormatError(
            f"vertex id {show(token)} is not a non-negative integer", path=where, line=lineno
        )
    if len(token) > 30:  # int() of thousands of digits is slow, then refused
        raise GraphLimitError(f"{where}:{lineno}: vertex id {show(token)} does not fit in int64")
    value = int(token)
    if value > limit:
        if limit == _INT64_MAX:
            raise GraphLimitError(f"{where}:{lineno}: vertex id {value} does not fit in int64")
        raise GraphLimitError(
            f"{where}:{lineno}: vertex id {value} needs a graph of {value + 1} vertices; "
            f"blest supports at most {MAX_VERTICES} (pass relabel=True to compact sparse ids)"
        )
    return value
