"""Which reader a file needs: the name decides, unless the content declares its format or the
caller forces one.

- ``format=`` (CLI ``--format``) forces a reader; forcing one that the first bytes contradict
  (a Matrix Market banner, a zip archive) is an error.
- A format the content declares is read as declared: a Matrix Market banner
  (``%%MatrixMarket``, any case) means ``mtx``, a zip archive or a ``.npy`` magic ``npz``
  (gzip files are judged after decompression). When the name says otherwise, a warning says
  so.
- Otherwise the name decides: ``.mtx`` / ``.mm`` Matrix Market, ``.npz`` an archive,
  ``.graph`` / ``.metis`` METIS, ``.txt``, ``.csv``, ``.tsv``, ``.el``, ``.wel``, ``.edges``,
  ``.edgelist``, ``.snap`` an edge list. The content never overrides the name: a file that
  fails the named reader gets that reader's error, which then says what the content reads as
  and the ``format=`` to pass. An edge list that is also a complete, valid METIS file within
  the first 64 KiB loads as the edge list its name says, with a warning.
- A file with no known name (standard input, ``.dat``, no suffix) is judged by its first 64 KiB
  (whole lines), tried as METIS and as an edge list: a complete METIS file that passes every
  check (header, vertex and edge counts, symmetry) is METIS; short of that, the bytes *fit*
  METIS when a METIS header is followed by lines of non-negative integers, no more lines than
  it declares, and fit an edge list when every data line starts with two non-negative integer
  ids; an edge list wins when both fit, the only one that fits when one does, and an edge list
  reports the error when neither does.
"""

from __future__ import annotations

import os
import warnings

from blest.errors import GraphFormatError
from blest.graph.io import edgelist, metis
from blest.graph.io.files import GraphFile

__all__ = [
    "ALIASES",
    "FORMATS",
    "canonical_format",
    "detect_format",
    "magic_format",
    "name_format",
    "other_reading",
    "warn_if_metis_too",
]

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
_DESCRIBE = {
    "mtx": "a Matrix Market file",
    "npz": "a zip / .npz archive",
    "metis": "a METIS graph",
    "edgelist": "an edge list",
}
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


def name_format(f: GraphFile) -> str | None:
    """The format the file's name (without ``.gz``) says, if any."""
    return _SUFFIX_FORMAT.get(os.path.splitext(f.name)[1])


def _head(f: GraphFile) -> bytes:
    head = f.read(HEAD_BYTES)
    if not head:
        raise GraphFormatError("the file is empty", path=f.where)
    return head


def detect_format(f: GraphFile, forced: str | None = None) -> str:
    """The reader for ``f`` (see the module docstring)."""
    head = _head(f)
    magic = magic_format(head)
    if forced is not None:
        if magic is not None and magic != forced:
            raise GraphFormatError(
                f"format={forced!r} was asked for, but the file is {_DESCRIBE[magic]}",
                path=f.where,
            )
        return forced
    named = name_format(f)
    if magic is not None:
        if named is not None and named != magic:
            warnings.warn(
                f"{f.where} is named as {_DESCRIBE[named]} but is {_DESCRIBE[magic]}: read as "
                f"that (pass format= to choose the reader)",
                UserWarning,
                stacklevel=4,
            )
        return magic
    return named or _text_format(head, len(head) < HEAD_BYTES) or "edgelist"


def warn_if_metis_too(f: GraphFile, stacklevel: int) -> None:
    """Warn when an edge list read as its name says is also a complete, valid METIS file."""
    head = f.read(HEAD_BYTES)
    if len(head) < HEAD_BYTES and metis.sniff_level(head, True) == 2:
        warnings.warn(
            f"{f.where} is read as an edge list, as its name says, but it is also a valid "
            "METIS file (a header 'n m', then one line per vertex): pass format='metis' "
            "(--format metis) if it is one",
            UserWarning,
            stacklevel=stacklevel + 1,
        )


def other_reading(f: GraphFile, fmt: str) -> str | None:
    """For a file that the reader its name chose (``fmt``) refused: what its content reads
    as instead, and how to ask for that reader; None when nothing else fits."""
    try:
        head = _head(f)
    except GraphFormatError:
        return None
    guess = magic_format(head) or _text_format(head, len(head) < HEAD_BYTES)
    if guess is None or guess == fmt or name_format(f) != fmt:
        return None
    hint = (
        f"the name says {_DESCRIBE[fmt]}, but the content reads as {_DESCRIBE[guess]}: "
        f"pass format={guess!r} (--format {guess})"
    )
    if guess == "edgelist":
        hint += (
            "; an edge list is read as directed unless directed=False (--undirected), with "
            "0-based ids unless one_based=True (--one-based)"
        )
    return hint


def _text_format(head: bytes, complete: bool) -> str | None:
    """METIS or edge list, from the whole lines of ``head``; None when neither fits."""
    if not complete:
        head = head[: head.rfind(b"\n") + 1]
    level = metis.sniff_level(head, complete)
    if level == 2:
        return "metis"
    if edgelist.fits(head):
        return "edgelist"
    return "metis" if level > 0 else None
