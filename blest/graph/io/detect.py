"""Which reader a file needs: its first bytes decide, its name only breaks ties.

- A Matrix Market banner (``%%MatrixMarket``, any case) means ``mtx``; a zip archive or a
  ``.npy`` magic means ``npz``. Gzip files are judged after decompression.
- Otherwise a ``.mtx`` / ``.mm`` or ``.npz`` name picks that reader (which then says what is
  wrong with the file).
- Otherwise the first 64 KiB (whole lines) are tried as METIS and as an edge list. A complete
  METIS file within those bytes that passes every check (header, vertex and edge counts,
  symmetry) is METIS whatever its name. Short of that, the bytes *fit* METIS when a METIS
  header is followed by lines of non-negative integers, no more lines than it declares, and
  fit an edge list when every data line starts with two non-negative integer ids. When both
  fit (a METIS file whose lines all hold two or more numbers reads as an edge list too), the
  name decides: ``.graph`` / ``.metis`` → METIS, any other → edge list. When only one fits,
  it wins; when neither does, the name picks the reader that reports the error (an edge list
  by default).
"""

from __future__ import annotations

import os

from blest.errors import GraphFormatError
from blest.graph.io import edgelist, metis
from blest.graph.io.files import GraphFile

__all__ = ["ALIASES", "FORMATS", "canonical_format", "detect_format", "magic_format"]

#: File formats ``load_graph(..., format=...)`` accepts.
FORMATS = ("mtx", "edgelist", "npz", "metis")
#: Other names accepted for them.
ALIASES = {"el": "edgelist", "wel": "edgelist", "mm": "mtx", "graph": "metis"}

_SUFFIX_FORMAT = {
    ".mtx": "mtx",
    ".mm": "mtx",
    ".txt": "edgelist",
    ".csv": "edgelist",
    ".tsv": "edgelist",
    ".el": "edgelist",
    ".wel": "edgelist",
    ".edges": "edgelist",
    ".edgelist": "edgelist",
    ".snap": "edgelist",
    ".npz": "npz",
    ".graph": "metis",
    ".metis": "metis",
}
_DESCRIBE = {"mtx": "a Matrix Market file", "npz": "a zip / .npz archive"}
HEAD_BYTES = 64 * 1024  # bytes sniffed at the start of a file


def canonical_format(format: str | None) -> str | None:
    """``format`` as one of :data:`FORMATS` (aliases resolved); ValueError for others."""
    if format is None or format in FORMATS:
        return format
    if isinstance(format, str) and format.lower() in ALIASES:
        return ALIASES[format.lower()]
    raise ValueError(f"format must be one of {FORMATS} (or {', '.join(ALIASES)}), got {format!r}")


def magic_format(head: bytes) -> str | None:
    """The format the first bytes prove, if any."""
    if head[:14].lower() == b"%%matrixmarket":
        return "mtx"
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06", b"\x93NUMPY")):
        return "npz"
    return None


def detect_format(f: GraphFile, forced: str | None = None) -> str:
    """The reader for ``f``: ``forced`` when given (refused when the bytes prove another)."""
    head = f.read(HEAD_BYTES)
    if not head:
        raise GraphFormatError("the file is empty", path=f.where)
    magic = magic_format(head)
    if forced is not None:
        if magic is not None and magic != forced:
            raise GraphFormatError(
                f"format={forced!r} was asked for, but the file is {_DESCRIBE[magic]}",
                path=f.where,
            )
        return forced
    named = _SUFFIX_FORMAT.get(os.path.splitext(f.name)[1])
    if magic is not None:
        return magic
    if named in ("mtx", "npz"):
        return named
    return _text_format(head, len(head) < HEAD_BYTES, named)


def _text_format(head: bytes, complete: bool, named: str | None) -> str:
    """METIS or edge list, from the whole lines of ``head`` and the name."""
    if not complete:
        head = head[: head.rfind(b"\n") + 1]
    level = metis.sniff_level(head, complete)
    if level == 2:
        return "metis"
    fits = {"metis": level > 0, "edgelist": edgelist.fits(head)}
    if named is not None and fits[named]:
        return named
    if fits["metis"] and not fits["edgelist"]:
        return "metis"
    if fits["edgelist"]:
        return "edgelist"
    return named or "edgelist"
