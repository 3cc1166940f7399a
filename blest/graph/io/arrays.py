"""Edges held in arrays: NumPy, CuPy, any DLPack array, and pandas DataFrames.

Array shape rule: ``(2, E)`` is an ``edge_index`` (as in PyTorch Geometric): row 0 holds the
sources and row 1 the targets. ``(E, 2)`` with ``E != 2`` is an edge list, one arc per row.
A ``(2, 2)`` array is read as an ``edge_index``. A DataFrame gives its ``source`` and ``target``
columns when it has both (the names NetworkX's ``from_pandas_edgelist`` uses), else its first
two columns.

Ids are 0-based and kept as written (``n = max id + 1``); the graph is directed unless
``directed=False``. Ids must be non-negative integers: integer dtypes, or floats that are all
whole numbers (NaN and infinities refused). A DataFrame whose ids are not all integers (names)
is always relabelled: vertex i is the i-th id in sorted order (in order of first appearance
when the ids cannot be ordered), and ``graph.labels`` holds the ids. CuPy arrays (duck-typed:
``.get()`` and ``__cuda_array_interface__``) are copied to the host; other DLPack arrays are
read with ``numpy.from_dlpack``. Neither CuPy nor pandas is imported here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from blest.errors import GraphFormatError, GraphLimitError
from blest.graph.core import Graph
from blest.graph.io.build import Options, build, build_from_ids
from blest.graph.io.limits import check_graph_size
from blest.graph.labels import factorize

__all__ = ["from_array", "from_dataframe", "host_array", "is_dataframe"]

_INT64_MAX = 2**63 - 1


def host_array(obj: Any) -> np.ndarray | None:
    """``obj`` as a NumPy array when it is one, a CuPy array or a DLPack array; else None."""
    if isinstance(obj, np.ndarray):
        return obj
    if hasattr(obj, "__cuda_array_interface__") and callable(getattr(obj, "get", None)):
        return np.asarray(obj.get())  # CuPy: copy from the device
    if hasattr(obj, "__dlpack__"):
        try:
            return np.from_dlpack(obj)
        except (BufferError, RuntimeError, TypeError, ValueError) as exc:
            raise GraphFormatError(
                f"cannot read the {type(obj).__name__} through DLPack in host memory ({exc}); "
                "copy it to the host first"
            ) from exc
    return None


def from_array(table: np.ndarray, opts: Options, *, kind: str = "array") -> Graph:
    """A graph from a ``(2, E)`` or ``(E, 2)`` array of ids (see the module docstring)."""
    shape = tuple(table.shape)
    if len(shape) != 2 or 2 not in shape:
        raise GraphFormatError(
            f"an edge array must have shape (2, E) (edge_index: sources, targets) or (E, 2) "
            f"(one edge per row); got shape {shape}"
        )
    if shape[0] == 2:
        where, src, dst = f"{kind} edge_index {shape}", table[0], table[1]
    else:
        where, src, dst = f"{kind} edge list {shape}", table[:, 0], table[:, 1]
    src, dst = vertex_ids(src, where, "sources"), vertex_ids(dst, where, "targets")
    return build_from_ids(src, dst, opts, where=where, format="array")


def is_dataframe(obj: Any) -> bool:
    """Duck-typed pandas DataFrame: ``columns``, ``iloc`` and ``to_numpy``."""
    return all(hasattr(obj, a) for a in ("columns", "iloc", "to_numpy"))


def from_dataframe(frame: Any, opts: Options) -> Graph:
    """A graph from the edges of a DataFrame (see the module docstring)."""
    names = list(frame.columns)
    if "source" in names and "target" in names:
        pair = (frame["source"], frame["target"])
    elif len(names) >= 2:
        pair = (frame.iloc[:, 0], frame.iloc[:, 1])
    else:
        raise GraphFormatError(
            f"a DataFrame of edges needs two columns (source, target); it has {len(names)}"
        )
    where = f"DataFrame columns {pair[0].name!r}, {pair[1].name!r}"
    values = [_column_values(c, where) for c in pair]
    if any(v.dtype.kind in "OUS" for v in values):
        return _named(values, opts, where)
    src, dst = (vertex_ids(v, where, str(c.name)) for v, c in zip(values, pair, strict=True))
    return build_from_ids(src, dst, opts, where=where, format="dataframe")


def _column_values(column: Any, where: str) -> np.ndarray:
    """A column as a NumPy array: integers where an object column holds only integers."""
    if bool(column.isna().any()):
        raise GraphFormatError(f"{where}: column {column.name!r} has missing values (NaN / NA)")
    values = np.asarray(column.to_numpy())
    if values.dtype.kind == "O":
        try:
            values = np.asarray(column.to_numpy(dtype=np.int64))
        except (TypeError, ValueError, OverflowError):
            pass  # names: relabelled by _named
    return values


def _named(values: list[np.ndarray], opts: Options, where: str) -> Graph:
    """A graph from ids that are not all integers (see the module docstring)."""
    src, dst = values
    try:
        codes, labels = factorize(np.concatenate([src.astype(object), dst.astype(object)]))
    except TypeError as exc:  # an unhashable id
        raise GraphFormatError(f"{where}: ids must be hashable ({exc})") from None
    want = opts.want_directed(True)
    check_graph_size(
        labels.size,
        src.size,
        directed=want,
        where=where,
        max_bytes=opts.max_bytes,
        sparse_ids=False,
    )
    return build(
        codes[: src.size],
        codes[src.size :],
        labels.size,
        directed=want,
        relabel=False,
        labels=labels,
        source=where,
        format="dataframe",
        symmetrized=not want,
    )


def vertex_ids(values: Any, where: str, what: str) -> np.ndarray:
    """A 1-D int64 array of non-negative ids, or an error naming the first bad one."""
    values = np.asarray(values).reshape(-1)
    kind = values.dtype.kind
    if kind not in "iuf":
        raise GraphFormatError(
            f"{where}: {what} must be integers (or whole floats), got dtype {values.dtype}"
        )
    if kind == "f":
        values = _whole_floats(values, where, what)
    if values.size == 0:
        return values.astype(np.int64)
    if kind == "u" and int(values.max()) > _INT64_MAX:
        raise GraphLimitError(f"{where}: {what} id {int(values.max())} does not fit in int64")
    values = values.astype(np.int64, copy=False)
    negative = np.flatnonzero(values < 0)
    if negative.size:
        i = int(negative[0])
        raise GraphFormatError(f"{where}: negative vertex id {values[i]} in {what} at index {i}")
    return values


def _whole_floats(values: np.ndarray, where: str, what: str) -> np.ndarray:
    """Float ids that are whole numbers, as int64; NaN, infinities and fractions refused."""
    odd = np.flatnonzero(~np.isfinite(values) | (values != np.floor(values)))
    if odd.size:
        i = int(odd[0])
        raise GraphFormatError(
            f"{where}: {what} id {values[i]!r} at index {i} is not a whole number"
        )
    if values.size and float(np.abs(values).max()) >= 2**63:
        raise GraphLimitError(f"{where}: {what} id {float(np.abs(values).max())} exceeds int64")
    return values.astype(np.int64)
