"""Opening graph files: existence and file-type checks, gzip detection, read errors by name.

Only regular files are read: a character device such as ``/dev/zero`` never ends, and opening
a FIFO without a writer blocks forever, so both are refused from ``os.stat`` before any
``open``. Corrupt or truncated gzip and zip data become a :class:`GraphFormatError` naming
the file.

Text formats are read as a stream of pieces of whole lines (:meth:`GraphFile.line_chunks`),
never as one string: a gzip stream stops with a :class:`~blest.errors.GraphLimitError` once it
has expanded past the memory limit, a NUL byte (binary data) is refused in the first piece
that holds one, and so is a line longer than :data:`MAX_LINE` bytes.
"""

from __future__ import annotations

import errno
import gzip
import io
import os
import stat
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from blest.errors import GraphFormatError
from blest.graph.io.limits import Limit, refuse_content

__all__ = [
    "MAX_LINE",
    "GraphFile",
    "GraphFileNotFoundError",
    "check_regular",
    "open_graph_file",
    "read_errors",
    "show",
]

_GZIP_MAGIC = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"
#: Largest expansion of deflate data (about 1032:1), to bound what a gzip file can hold.
GZIP_RATIO = 1032
#: Bytes read from a text file at a time.
CHUNK_BYTES = 1 << 26
#: The longest line a text graph file may have.
MAX_LINE = 1 << 26
_NOT_REGULAR = (
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
)


class GraphFileNotFoundError(GraphFormatError, FileNotFoundError):
    """The graph file does not exist: a ``GraphFormatError`` and a ``FileNotFoundError``."""

    def __init__(self, path: str | os.PathLike[str]):
        super().__init__("no such file", path=os.fspath(path))
        self.errno = errno.ENOENT
        self.strerror = "No such graph file"
        self.filename = self.path


@contextmanager
def read_errors(where: str) -> Iterator[None]:
    """Turn errors of corrupt or truncated compressed data into a GraphFormatError."""
    try:
        yield
    except EOFError as exc:
        raise GraphFormatError(f"truncated compressed data: {exc}", path=where) from exc
    except (zlib.error, gzip.BadGzipFile, zipfile.BadZipFile) as exc:
        raise GraphFormatError(f"corrupt compressed data: {exc}", path=where) from exc


@dataclass(frozen=True)
class GraphFile:
    """A regular file to read a graph from, gzip-compressed or not.

    Attributes
    ----------
    path : pathlib.Path
    size : int
        Bytes on disk.
    gzip : bool
        The file starts with the gzip magic bytes; it is decompressed on reading.
    """

    path: Path
    size: int
    gzip: bool

    @property
    def where(self) -> str:
        """The path as error messages show it."""
        return str(self.path)

    @property
    def name(self) -> str:
        """Lower-case file name, without the ``.gz`` of a compressed file."""
        name = self.path.name.lower()
        return name[:-3] if self.gzip and name.endswith(".gz") else name

    @property
    def max_bytes(self) -> int:
        """An upper bound on the bytes reading the file can yield."""
        return self.size * (GZIP_RATIO if self.gzip else 1)

    def open(self) -> io.BufferedIOBase:
        """A binary stream of the (decompressed) content."""
        return gzip.open(self.path, "rb") if self.gzip else open(self.path, "rb")

    def read(self, size: int = -1) -> bytes:
        """The first ``size`` bytes of the content (all with -1); bad gzip data is an error."""
        with read_errors(self.where), self.open() as f:
            return f.read(size)

    def read_capped(self, cap: Limit) -> bytes:
        """The whole content; a gzip stream expanding past ``cap`` is refused as it is read."""
        if not self.gzip or cap.nbytes is None:
            return self.read()
        limit, total, parts = int(cap.nbytes), 0, []
        with read_errors(self.where), self.open() as f:
            while block := f.read(CHUNK_BYTES):  # a read of `limit` bytes would reserve them
                total += len(block)
                if total > limit:
                    raise refuse_content(self.where, cap)
                parts.append(block)
        return b"".join(parts)

    def line_chunks(self, cap: Limit, size: int = CHUNK_BYTES) -> Iterator[tuple[bytes, int]]:
        """The content as pieces of about ``size`` bytes cut after a newline (the last piece
        may lack one), each with the 1-based number of its first line; a leading UTF-8 byte
        order mark is dropped. Refuses a NUL byte, a line over :data:`MAX_LINE` bytes and a
        gzip stream expanding past ``cap``."""
        limit = None if not self.gzip or cap.nbytes is None else int(cap.nbytes)
        total, line, carry, first = 0, 1, b"", True
        with read_errors(self.where), self.open() as stream:
            while True:
                block = stream.read(size)
                total += len(block)
                if limit is not None and total > limit:
                    raise refuse_content(self.where, cap)
                data = carry + block if carry else block
                if first and data.startswith(_BOM):
                    data = data[len(_BOM) :]
                first = first and not data
                if not block:
                    self._refuse_nul(data, line)
                    if data:
                        yield data, line
                    return
                cut = data.rfind(b"\n") + 1
                if cut == 0:
                    self._refuse_nul(data, line)
                    if len(data) > MAX_LINE:
                        raise GraphFormatError(
                            f"line {line} is longer than {MAX_LINE:,} bytes: not a text graph file",
                            path=self.where,
                        )
                    carry = data
                    continue
                piece, carry = data[:cut], data[cut:]
                self._refuse_nul(piece, line)
                yield piece, line
                line += piece.count(b"\n")

    def _refuse_nul(self, piece: bytes, line: int) -> None:
        at = piece.find(b"\0")
        if at >= 0:
            raise GraphFormatError(
                "NUL byte in the file (binary data, not a text graph file)",
                path=self.where,
                line=line + piece.count(b"\n", 0, at),
            )


def check_regular(path: Path) -> os.stat_result:
    """``os.stat`` of a regular file; anything else is refused before it is opened."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise GraphFileNotFoundError(path) from None
    if stat.S_ISDIR(info.st_mode):
        raise GraphFormatError("is a directory, not a graph file", path=str(path))
    if not stat.S_ISREG(info.st_mode):
        kind = next((k for test, k in _NOT_REGULAR if test(info.st_mode)), "not a regular file")
        raise GraphFormatError(
            f"is {kind}; only regular files are read (a device or pipe may never end)",
            path=str(path),
        )
    return info


def open_graph_file(path: Path) -> GraphFile:
    """Check ``path`` and find out whether it is gzip-compressed (by content, not name)."""
    size = check_regular(path).st_size
    if size == 0:
        raise GraphFormatError("the file is empty", path=str(path))
    with open(path, "rb") as f:
        compressed = f.read(2) == _GZIP_MAGIC
    if not compressed and path.name.lower().endswith(".gz"):
        raise GraphFormatError(
            "the name ends in .gz but the file is not gzip-compressed", path=str(path)
        )
    return GraphFile(path, size, compressed)


def show(text: bytes, limit: int = 60) -> str:
    """A short printable form of a piece of input, for error messages."""
    shown = text.decode("utf-8", errors="replace")
    return repr(shown if len(shown) <= limit else shown[:limit] + "...")
