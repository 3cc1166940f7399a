"""SciPy sparse matrices saved by ``scipy.sparse.save_npz``, read as the matrix passed in memory
would be (:func:`blest.graph.io.objects.from_scipy`): a stored entry ``(i, j)``, explicit zeros
included, is the arc ``i -> j``, and the graph is directed unless the pattern is symmetric.

``save_npz`` writes ``format`` (``csr``, ``csc``, ``coo``, ``bsr`` or ``dia``), ``shape``, the
structure (``indptr`` and ``indices``; ``row`` and ``col``, or ``coords``; ``offsets``) and
``data``. The values are never read for ``csr``, ``csc`` and ``coo``; ``bsr`` reads only the
header of ``data`` (its block shape), and ``dia`` reads the values, because a diagonal matrix
stores no positions: SciPy counts its nonzeros as its entries. Every index is checked before
it is used.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

from blest.errors import GraphFormatError, GraphLimitError
from blest.graph.core import MAX_VERTICES, Graph
from blest.graph.io.build import Options
from blest.graph.io.limits import check_graph_size
from blest.graph.io.objects import from_scipy
from blest.graph.io.zipnpy import NpzMembers

__all__ = ["SCIPY_FORMATS", "load", "scipy_format"]

SCIPY_FORMATS = ("csr", "csc", "coo", "bsr", "dia")


def scipy_format(members: NpzMembers) -> str | None:
    """The sparse format of a ``save_npz`` archive; None for any other archive."""
    if "format" not in members or "shape" not in members:
        return None
    fmt = members.read("format", max_items=1)
    if fmt.shape != () or fmt.dtype.kind not in "SU":
        return None
    value = fmt.item()
    if isinstance(value, bytes):
        value = value.decode("ascii", errors="replace")
    return value if value in SCIPY_FORMATS else None


def load(members: NpzMembers, kind: str, where: str, opts: Options) -> Graph:
    """The graph of a ``save_npz`` archive of format ``kind``."""

    def bad(message: str) -> GraphFormatError:
        return GraphFormatError(f"malformed scipy.sparse {kind} archive: {message}", path=where)

    n = _square(members.read("shape", max_items=2), where, bad)
    if kind == "dia":
        matrix = _dia(members, n, bad)
    elif kind == "bsr":
        row, col = _bsr(members, n, bad, where, opts)
    else:
        row, col = _STRUCTURE[kind](members, n, bad)
    if kind != "dia":
        data = np.ones(row.size, dtype=bool)
        matrix = sp.coo_array((data, (row, col)), shape=(n, n))
    return from_scipy(matrix, opts, path=where, format=f"scipy-{kind}")


def _square(shape: np.ndarray, where: str, bad: Callable[[str], GraphFormatError]) -> int:
    if shape.shape != (2,) or shape.dtype.kind not in "iu" or np.any(shape < 0):
        raise bad(f"shape must be two non-negative integers, got {shape!r}")
    rows, cols = int(shape[0]), int(shape[1])
    if rows != cols:
        raise GraphFormatError(
            f"a {rows} x {cols} sparse matrix is not an adjacency matrix: it must be square",
            path=where,
        )
    if rows > MAX_VERTICES:
        raise GraphLimitError(
            f"{where}: the matrix has {rows} rows; blest supports at most {MAX_VERTICES}"
        )
    return rows


def _ids(a: np.ndarray, name: str, top: int, bad: Callable[[str], GraphFormatError]) -> np.ndarray:
    """A 1-D integer array whose values lie in ``0 .. top - 1``."""
    if a.ndim != 1 or a.dtype.kind not in "iu":
        raise bad(f"{name} must be a 1-D integer array, got {a.dtype} of shape {a.shape}")
    if a.size and (int(a.min()) < 0 or int(a.max()) >= top):
        raise bad(f"{name} holds indices outside 0..{top - 1}")
    return a.astype(np.int64, copy=False)


def _compressed(
    members: NpzMembers, major: int, minor: int, bad: Callable[[str], GraphFormatError]
) -> tuple[np.ndarray, np.ndarray]:
    """(major, minor) index of every stored entry of indptr / indices."""
    indptr = members.read("indptr", max_items=major + 1)
    if indptr.shape != (major + 1,) or indptr.dtype.kind not in "iu":
        raise bad(f"indptr must hold {major + 1} integers")
    indptr = indptr.astype(np.int64, copy=False)
    indices = _ids(members.read("indices"), "indices", minor, bad)
    if indptr[0] != 0 or indptr[-1] != indices.size or np.any(np.diff(indptr) < 0):
        raise bad(f"indptr must rise from 0 to len(indices) = {indices.size}")
    return np.repeat(np.arange(major, dtype=np.int64), np.diff(indptr)), indices


def _csr(members: NpzMembers, n: int, bad: Callable) -> tuple[np.ndarray, np.ndarray]:
    return _compressed(members, n, n, bad)


def _csc(members: NpzMembers, n: int, bad: Callable) -> tuple[np.ndarray, np.ndarray]:
    col, row = _compressed(members, n, n, bad)
    return row, col


def _coo(members: NpzMembers, n: int, bad: Callable) -> tuple[np.ndarray, np.ndarray]:
    if "coords" in members:
        coords = members.read("coords")
        if coords.ndim != 2 or coords.shape[0] != 2:
            raise bad(f"coords must have two rows, got shape {coords.shape}")
        row, col = coords[0], coords[1]
    else:
        row, col = members.read("row"), members.read("col")
    row, col = _ids(row, "row", n, bad), _ids(col, "col", n, bad)
    if row.size != col.size:
        raise bad(f"row and col differ in length ({row.size} and {col.size})")
    return row, col


def _bsr(
    members: NpzMembers, n: int, bad: Callable, where: str, opts: Options
) -> tuple[np.ndarray, np.ndarray]:
    shape, _ = members.header("data")
    if len(shape) != 3 or min(shape[1:]) < 1:
        raise bad(f"data must be blocks of shape (blocks, R, C), got {shape}")
    r, c = int(shape[1]), int(shape[2])
    if n % r or n % c:
        raise bad(f"blocks of {r} x {c} do not tile a {n} x {n} matrix")
    block_row, block_col = _compressed(members, n // r, n // c, bad)
    if block_row.size != shape[0]:
        raise bad(f"data holds {shape[0]} blocks, indices {block_row.size}")
    entries = block_row.size * r * c  # every entry of a block is stored
    check_graph_size(
        n, entries, directed=True, where=where, max_bytes=opts.max_bytes, relabel=opts.relabel
    )
    dr, dc = np.divmod(np.arange(r * c, dtype=np.int64), c)
    row = (block_row[:, None] * r + dr[None, :]).reshape(-1)
    col = (block_col[:, None] * c + dc[None, :]).reshape(-1)
    return row, col


def _dia(members: NpzMembers, n: int, bad: Callable) -> sp.dia_array:
    offsets = members.read("offsets")
    data = members.read("data")
    if offsets.ndim != 1 or offsets.dtype.kind not in "iu":
        raise bad("offsets must be a 1-D integer array")
    if data.ndim != 2 or data.shape[0] != offsets.size or data.dtype.kind not in "biufc":
        raise bad(f"data must be numbers of shape ({offsets.size}, L), got {data.shape}")
    try:
        return sp.dia_array((data, offsets), shape=(n, n))
    except (ValueError, TypeError) as exc:
        raise bad(str(exc)) from None


_STRUCTURE = {"csr": _csr, "csc": _csc, "coo": _coo}
