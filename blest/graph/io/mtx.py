"""Matrix Market ``coordinate`` files: ``pattern``, ``real``, ``double``, ``integer``, ``complex``.

Index ``i`` (1-based) is vertex ``i - 1``; every stored entry is an arc, explicit zeros
included. ``general`` files are directed; ``symmetric``, ``skew-symmetric`` and ``hermitian``
files are undirected and store each edge once.

The banner and size line are checked first (square, vertex limit, entry count against the file
size, memory guard), so nothing large is allocated for a bad header; the comment and blank
lines before the size line are skipped by one regular expression. The body is parsed by
SciPy's threaded ``fast_matrix_market`` reader; when it fails, a line-by-line re-scan names the
first bad line. A gzip stream that expands past the memory limit is refused
(:func:`blest.graph.io.limits.content_cap`).
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from typing import Any, NoReturn

import numpy as np
import scipy.io

from blest.errors import GraphFormatError, GraphLimitError
from blest.graph.core import MAX_VERTICES, Graph
from blest.graph.io.build import Options, build
from blest.graph.io.files import GraphFile, read_errors, show
from blest.graph.io.limits import Limit, check_graph_size, content_cap, refuse_content

__all__ = ["MMHeader", "load_mtx", "read_mm_header"]

_MM_FIELDS = {"pattern": 0, "real": 1, "double": 1, "integer": 1, "complex": 2}
_MM_SYMMETRIES = ("general", "symmetric", "skew-symmetric", "hermitian")
#: What SciPy's reader may raise on a malformed body (the re-scan then names the line).
_READER_ERRORS = (ValueError, OverflowError, RuntimeError, IndexError, TypeError)
#: Whole blank or comment lines (before the size line).
_SKIPPED = re.compile(rb"(?:[ \t\r\f\v]*+(?:%[^\n]*+)?\n)*+")
_HEAD_BLOCK = 1 << 20


@dataclass(frozen=True)
class MMHeader:
    """Banner and size line of a Matrix Market file."""

    field: str
    symmetry: str
    nrows: int
    ncols: int
    nnz: int
    size_line: int  # 1-based line of "rows cols entries"


def load_mtx(f: GraphFile, opts: Options) -> Graph:
    """Read a Matrix Market file (see the module docstring)."""
    cap = content_cap(opts.max_bytes)
    header = read_mm_header(f, cap)
    undirected_file = header.symmetry != "general"
    if undirected_file and opts.directed:
        raise GraphFormatError(
            f"the file is {header.symmetry} (an undirected graph storing each edge once); "
            "directed=True is not allowed on it",
            path=f.where,
            line=1,
        )
    want = opts.want_directed(not undirected_file)
    check_graph_size(
        header.nrows,
        header.nnz,
        directed=want,
        where=f"{f.where}:{header.size_line}",
        max_bytes=opts.max_bytes,
        relabel=opts.relabel,
    )
    src, dst = _raw_mm_entries(_read_body(f, header, cap), header)
    return build(
        src,
        dst,
        header.nrows,
        directed=want,
        relabel=opts.relabel,
        source=f.where,
        format="mtx",
        symmetrized=want is False and not undirected_file,
    )


def _read_body(f: GraphFile, header: MMHeader, cap: Limit) -> Any:
    """The COO array SciPy reads, or an error naming the first bad line.

    SciPy 1.17's ``fast_matrix_market`` crashes (segmentation fault) on a NUL byte right after
    a number, and on a last line with anything after its last number but no final newline:
    neither ever reaches it. A plain file is checked in one pass and, when it ends with a
    newline, read by path (in parallel); anything else is read through a guarding stream.
    """
    try:
        with read_errors(f.where):
            if not f.gzip and _check_plain(f) and f.path.suffix not in (".gz", ".bz2"):
                return scipy.io.mmread(f.where, spmatrix=False)
            with f.open() as stream:
                guard = _GuardedStream(stream, None if not f.gzip else cap.nbytes)
                try:
                    return scipy.io.mmread(guard, spmatrix=False)
                finally:
                    if guard.over:
                        raise refuse_content(f.where, cap)
                    if guard.nul_seen:
                        _refuse_nul(f)
    except (GraphFormatError, GraphLimitError):
        raise
    except _READER_ERRORS as exc:
        _diagnose_mtx(f, header, exc, cap)


def _check_plain(f: GraphFile) -> bool:
    """Refuse a NUL byte (naming its line); whether the file ends with a newline."""
    last = b""
    with open(f.path, "rb") as stream:
        while chunk := stream.read(1 << 24):
            if b"\0" in chunk:
                _refuse_nul(f)
            last = chunk[-1:]
    return last == b"\n"


def _refuse_nul(f: GraphFile) -> NoReturn:
    line = 1
    with read_errors(f.where), f.open() as stream:
        while chunk := stream.read(1 << 24):
            at = chunk.find(b"\0")
            if at >= 0:
                line += chunk.count(b"\n", 0, at)
                break
            line += chunk.count(b"\n")
    raise GraphFormatError(
        "NUL byte in the file (binary data, not Matrix Market text)", path=f.where, line=line
    )


class _GuardedStream(io.RawIOBase):
    """The bytes of ``source`` with NUL bytes replaced (and noted), then a final newline if
    they do not end with one: see :func:`_read_body`."""

    def __init__(self, source: io.BufferedIOBase, cap: float | None = None):
        super().__init__()
        self._source = source
        self._last = b"\n"
        self._done = False
        self._left = cap
        self.nul_seen = False
        self.over = False  # the stream went past ``cap``: it was cut there

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._done:
            return 0
        data = self._source.read(len(buffer))
        if self._left is not None:
            self._left -= len(data)
            if self._left < 0:
                self.over, self._done = True, True
                return 0
        if data:
            if b"\0" in data:
                self.nul_seen = True
                data = data.replace(b"\0", b"\x01")
            buffer[: len(data)] = data
            self._last = data[-1:]
            return len(data)
        self._done = True
        if self._last == b"\n":
            return 0
        buffer[:1] = b"\n"
        return 1


def _raw_mm_entries(coo: Any, header: MMHeader) -> tuple[np.ndarray, np.ndarray]:
    """The file's own entries: SciPy appends the mirror of every off-diagonal entry of a
    symmetric file after them, and the cleaning makes both arcs itself."""
    row, col = coo.row, coo.col
    if header.symmetry == "general" or row.size == header.nnz:
        return row, col
    head_row, head_col = row[: header.nnz], col[: header.nnz]
    off = head_row != head_col
    if row.size != header.nnz + int(np.count_nonzero(off)) or not (
        np.array_equal(row[header.nnz :], head_col[off])
        and np.array_equal(col[header.nnz :], head_row[off])
    ):  # pragma: no cover - guards against a change in SciPy's expansion
        raise RuntimeError("unexpected layout of scipy.io.mmread's symmetric expansion")
    return head_row, head_col


def read_mm_header(f: GraphFile, cap: Limit | None = None) -> MMHeader:
    """Parse and check the banner and size line, before any entry is read (``cap``: what a
    gzip stream may expand to; default the memory limit)."""
    with read_errors(f.where), f.open() as stream:
        banner = stream.readline(4096)
        if not banner:
            raise GraphFormatError("the file is empty", path=f.where)
        field, symmetry = _parse_banner(banner, f.where)
        lineno, text = _size_line(stream, f, cap or content_cap(None))
    nrows, ncols, nnz = _parse_size_line(text, f, lineno)
    return MMHeader(field, symmetry, nrows, ncols, nnz, lineno)


def _size_line(stream: io.BufferedIOBase, f: GraphFile, cap: Limit) -> tuple[int, bytes]:
    """The 1-based number and text of the first line after the banner that is neither blank
    nor a comment (blank and comment lines skipped by the block, up to the content cap)."""
    limit = cap.nbytes if f.gzip else None
    lineno, buf, read = 2, b"", 0
    while True:
        block = stream.read(_HEAD_BLOCK)
        read += len(block)
        if limit is not None and read > limit:
            raise refuse_content(f.where, cap)
        buf = buf + block if buf else block
        skipped = _SKIPPED.match(buf)
        assert skipped is not None  # the pattern matches the empty string
        skip = skipped.end()
        lineno += buf.count(b"\n", 0, skip)
        buf = buf[skip:]
        end = buf.find(b"\n")
        if end >= 0 or not block:
            text = (buf if end < 0 else buf[:end]).strip()
            if text and not text.startswith(b"%"):
                return lineno, text
            if not block:
                raise GraphFormatError(
                    "no size line (rows columns entries) after the banner",
                    path=f.where,
                    line=lineno,
                )
        if len(buf) > _HEAD_BLOCK * 64:
            raise GraphFormatError(
                f"line {lineno} is longer than {_HEAD_BLOCK * 64:,} bytes", path=f.where
            )


def _parse_size_line(text: bytes, f: GraphFile, lineno: int) -> tuple[int, int, int]:
    tokens = text.split()
    if len(tokens) != 3 or not all(t.isdigit() and len(t) <= 30 for t in tokens):
        raise GraphFormatError(
            "size line must hold three non-negative integers (rows columns entries), got "
            f"{show(text)}",
            path=f.where,
            line=lineno,
        )
    nrows, ncols, nnz = map(int, tokens)
    if nrows != ncols:
        raise GraphFormatError(
            f"the matrix is {nrows} x {ncols}; an adjacency matrix must be square",
            path=f.where,
            line=lineno,
        )
    if nrows > MAX_VERTICES:
        raise GraphLimitError(
            f"{f.where}:{lineno}: the matrix has {nrows} rows, so the graph would have "
            f"{nrows} vertices; blest supports at most {MAX_VERTICES} (levels are int32)"
        )
    # Each entry takes at least 4 bytes ("1 1\n").
    if 4 * nnz > f.max_bytes + 4:
        raise GraphFormatError(
            f"the size line declares {nnz} entries, more than the file can hold",
            path=f.where,
            line=lineno,
        )
    return nrows, ncols, nnz


def _parse_banner(banner: bytes, where: str) -> tuple[str, str]:
    words = banner.decode("latin-1").split()
    if not words or words[0] != "%%MatrixMarket":
        raise GraphFormatError(
            "not a Matrix Market file: the first line must start with '%%MatrixMarket', got "
            f"{show(banner.strip())}",
            path=where,
            line=1,
        )
    words = [w.lower() for w in words]
    if len(words) != 5 or words[1] != "matrix":
        raise GraphFormatError(
            "Matrix Market banner must read '%%MatrixMarket matrix <format> <field> "
            f"<symmetry>', got {show(banner.strip())}",
            path=where,
            line=1,
        )
    layout, field, symmetry = words[2:]
    if layout == "array":
        raise GraphFormatError(
            "dense 'array' Matrix Market files are not supported; an adjacency matrix must "
            "be in 'coordinate' format",
            path=where,
            line=1,
        )
    if layout != "coordinate" or field not in _MM_FIELDS or symmetry not in _MM_SYMMETRIES:
        raise GraphFormatError(
            f"unsupported Matrix Market type {layout!r} {field!r} {symmetry!r} (need "
            f"coordinate; {', '.join(_MM_FIELDS)}; {', '.join(_MM_SYMMETRIES)})",
            path=where,
            line=1,
        )
    return field, symmetry


def _diagnose_mtx(f: GraphFile, header: MMHeader, exc: Exception, cap: Limit) -> NoReturn:
    """Re-read the body line by line and raise for its first bad line."""
    values = _MM_FIELDS[header.field]
    count, left = 0, (cap.nbytes if f.gzip else None)
    with read_errors(f.where), f.open() as stream:
        for lineno, raw in enumerate(stream, 1):
            if left is not None:
                left -= len(raw)
                if left < 0:
                    raise refuse_content(f.where, cap)
            if lineno <= header.size_line or not raw.strip():
                continue
            if raw.startswith(b"%"):
                raise GraphFormatError(
                    "comment line after the size line (Matrix Market allows comments only "
                    "before it)",
                    path=f.where,
                    line=lineno,
                )
            count += 1
            if count > header.nnz:
                raise GraphFormatError(
                    f"more entries than the {header.nnz} the size line (line "
                    f"{header.size_line}) declares",
                    path=f.where,
                    line=lineno,
                )
            _check_mm_entry(raw.split(), values, header, f.where, lineno)
    if count < header.nnz:
        raise GraphFormatError(
            f"the size line declares {header.nnz} entries but the file has {count}",
            path=f.where,
            line=header.size_line,
        )
    found = re.search(r"[Ll]ine (\d+)", str(exc))
    raise GraphFormatError(
        f"Matrix Market reader failed: {exc}",
        path=f.where,
        line=int(found.group(1)) if found else None,
    ) from exc


def _check_mm_entry(
    tokens: list[bytes], values: int, header: MMHeader, where: str, lineno: int
) -> None:
    if len(tokens) < 2 + values:
        raise GraphFormatError(
            f"an entry needs {2 + values} columns (row column{' value' * values}), "
            f"found {len(tokens)}",
            path=where,
            line=lineno,
        )
    for name, token, top in (("row", tokens[0], header.nrows), ("column", tokens[1], header.ncols)):
        if not re.fullmatch(rb"-?\d{1,30}", token):
            raise GraphFormatError(
                f"{name} index {show(token)} is not an integer", path=where, line=lineno
            )
        if not 1 <= int(token) <= top:
            raise GraphFormatError(
                f"{name} index {int(token)} out of range 1..{top}", path=where, line=lineno
            )
    for token in tokens[2 : 2 + values]:
        try:
            float(token)
        except ValueError:
            raise GraphFormatError(
                f"value {show(token)} is not a number", path=where, line=lineno
            ) from None
