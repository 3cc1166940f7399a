"""Edge lists (SNAP, CSV, GAP ``.el`` / ``.wel``): one arc ``source target`` per line.

Tokens are separated by spaces, tabs or commas; blank lines and lines whose first token starts
with ``#`` or ``%`` are skipped; the first other line is a header (and skipped) when neither of
its first two tokens is an integer; every other line holds at least two non-negative decimal
ids, and further columns (weights, timestamps) are ignored. Ids are kept as written (0-based),
so ``n = max id + 1``; with ``one_based=True`` id ``i`` is vertex ``i - 1`` (as in Matrix
Market) and an id 0 is an error.

The file is read as a stream of pieces of about 64 MiB (:meth:`GraphFile.line_chunks`: a
compressed stream expanding past the memory limit, a NUL byte or an endless line is refused
as it is read), and each piece is parsed as it arrives, fastest parser first: pyarrow or pandas
when installed and the piece is plain (:mod:`blest.graph.io.fastcsv`); ``numpy.fromstring``
when one regular expression shows every line has the same columns, else a vectorized
tokenizer; the validating line-by-line parser for the rest, which names the file and line of
the first bad line. The leading comments and blank lines are skipped by one regular
expression, however many there are. After each piece the memory guard checks the arcs read so
far, so a file too large for memory is refused part-way, not after it has been read.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from blest.errors import GraphFormatError, GraphLimitError
from blest.graph.core import MAX_VERTICES, Graph
from blest.graph.io import fastcsv
from blest.graph.io.build import EMPTY_IDS, Options, build_from_ids
from blest.graph.io.files import GraphFile, show
from blest.graph.io.limits import check_graph_size, content_cap

__all__ = ["fits", "load_edgelist"]

_CHUNK_BYTES = 1 << 26
_SEPARATORS = b" \t\r\n\v\f,"
_SPLIT = re.compile(rb"[\s,]+")
_DIGITS = re.compile(rb"\d+")
_SIGNED = re.compile(rb"[+-]?\d+")
_COMMENT = (ord("#"), ord("%"))
_INT64_MAX = 2**63 - 1
_BOM = b"\xef\xbb\xbf"
#: Leading blank lines and comment lines, up to the first token of the first other line.
_PREAMBLE = re.compile(rb"(?:[\s,]*+[#%][^\n]*+)*+[\s,]*+")
_SPACE = re.compile(rb"\s*+")
_MTX_NAMES = (".mtx", ".mm")


def load_edgelist(f: GraphFile, opts: Options) -> Graph:
    """Read an edge list file (see the module docstring)."""
    reader = _Reader(f.where, opts)
    for piece, line in f.line_chunks(content_cap(opts.max_bytes), _CHUNK_BYTES):
        reader.feed(piece, line)
    if not reader.text:
        raise GraphFormatError("the file is empty", path=f.where)
    src, dst = reader.ids()
    if src.size == 0:
        raise GraphFormatError(
            "no edges found (only comments, blank lines or a header)", path=f.where
        )
    if opts.one_based:
        src -= 1
        dst -= 1
    if f.name.endswith(_MTX_NAMES):
        _say_assumptions(f.where, opts, src, dst)
    return build_from_ids(src, dst, opts, where=f.where, format="edgelist")


class _Reader:
    """Ids of an edge list fed piece by piece (pieces of whole lines, in file order)."""

    def __init__(self, where: str, opts: Options) -> None:
        self.where, self.opts = where, opts
        self.preamble = True  # still in the leading comments, blank lines and header
        self.text = False  # a byte other than white space seen
        self.src: list[np.ndarray] = []
        self.dst: list[np.ndarray] = []
        self.records, self.top = 0, -1

    def feed(self, piece: bytes, line: int) -> None:
        if not self.text:
            space = _SPACE.match(piece)
            assert space is not None  # the pattern matches the empty string
            self.text = space.end() < len(piece)
        start = 0
        if self.preamble:
            start, lines, done = _skip_preamble(piece)
            self.preamble, line = not done, line + lines
        if start >= len(piece):
            return
        ids = fastcsv.parse(piece, start, self.opts.relabel)
        if ids is None:
            ids = _parse_chunk(piece, start, len(piece), line, self.where, self.opts.relabel)
        if ids[0].size == 0:
            return
        if self.opts.one_based and (not ids[0].all() or not ids[1].all()):
            _refuse_zero(piece[start:], line, self.where)
        self.src.append(ids[0])
        self.dst.append(ids[1])
        self.records += ids[0].size
        self.top = max(self.top, int(ids[0].max()), int(ids[1].max()))
        check_graph_size(
            self.top + 1,
            self.records,
            directed=self.opts.want_directed(True),
            where=self.where,
            max_bytes=self.opts.max_bytes,
            relabel=self.opts.relabel,
            sparse_ids=False,
        )

    def ids(self) -> tuple[np.ndarray, np.ndarray]:
        if not self.src:
            return EMPTY_IDS, EMPTY_IDS
        if len(self.src) == 1:
            return self.src[0], self.dst[0]
        return np.concatenate(self.src), np.concatenate(self.dst)


def _refuse_zero(body: bytes, line: int, where: str) -> None:
    """Name the first data line of ``body`` with an id 0 (``one_based=True`` forbids it)."""
    for lineno, text in enumerate(body.split(b"\n"), line):
        tokens = _tokens(text)
        if tokens and tokens[0][0] not in _COMMENT and any(not t.strip(b"0") for t in tokens[:2]):
            raise GraphFormatError(
                "vertex id 0 in an edge list read with one_based=True (--one-based), whose "
                "ids start at 1",
                path=where,
                line=lineno,
            )


def _say_assumptions(where: str, opts: Options, src: np.ndarray, dst: np.ndarray) -> None:
    """Warn what reading a file named as Matrix Market as an edge list assumed."""
    notes = []
    if opts.directed is None:
        notes.append("as a directed graph (pass directed=False, --undirected, if it is not)")
    if not opts.one_based and int(min(src.min(), dst.min())) > 0:
        notes.append(
            "with 0-based ids, but id 0 never occurs: if its ids are 1-based, as Matrix "
            "Market's are, pass one_based=True (--one-based), else vertex 0 is an extra "
            "isolated vertex"
        )
    if notes:
        warnings.warn(
            f"{where} is named as a Matrix Market file but read as an edge list: "
            + "; ".join(notes),
            UserWarning,
            stacklevel=6,
        )


def fits(head: bytes) -> bool:
    """Whether complete lines ``head`` read as an edge list (ids too large still fit)."""
    if head.startswith(_BOM):
        head = head[len(_BOM) :]
    start, lines, _ = _skip_preamble(head)
    try:
        _scan_edge_lines(head[start:], 1 + lines, "", relabel=True)
    except GraphFormatError:
        return False
    except GraphLimitError:
        pass
    return True


def _tokens(line: bytes) -> list[bytes]:
    return [t for t in _SPLIT.split(line) if t]


def _skip_preamble(data: bytes) -> tuple[int, int, bool]:
    """Where the data lines of ``data`` start after leading comments, blank lines and a
    header: (offset, lines skipped, whether the preamble ended within ``data``)."""
    preamble = _PREAMBLE.match(data)
    assert preamble is not None  # the pattern matches the empty string
    end = preamble.end()
    if end >= len(data):
        return len(data), data.count(b"\n"), False
    begin = data.rfind(b"\n", 0, end) + 1  # the first line that is neither blank nor comment
    lines = data.count(b"\n", 0, begin)
    stop = data.find(b"\n", begin)
    stop = len(data) if stop < 0 else stop
    if not any(_SIGNED.fullmatch(t) for t in _tokens(data[begin:stop])[:2]):  # a header
        return min(stop + 1, len(data)), lines + 1, True
    return begin, lines, True


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
