"""Optional fast edge-list parsing with pyarrow (preferred) or pandas, when installed.

It takes only plain bodies, which every parser reads the same way: nothing but decimal digits,
one delimiter (the one of the first line: comma, else tab, else space) and line ends ``\\n`` or
``\\r\\n`` (a lone ``\\r`` ends a line for pyarrow and pandas, not for the line parser).
Comments, headers in the middle, signs, decimals and mixed separators send the file to the
parsers of :mod:`blest.graph.io.edgelist`, which name the file and line of any error; so do
irregular rows, empty fields and ids out of range, which the fast readers report as failures
or which are checked after them. Neither library is imported unless a body of at least
:data:`MIN_BYTES` bytes is plain.
"""

from __future__ import annotations

import csv
import importlib.util
import io
from collections.abc import Callable

import numpy as np

from blest.graph.core import MAX_VERTICES

__all__ = ["ENGINES", "MIN_BYTES", "parse"]

#: Bodies smaller than this are parsed without pyarrow / pandas (importing them costs more).
MIN_BYTES = 1 << 22
#: Engines tried, in order; a test or a caller may empty or reorder it.
ENGINES: list[str] = ["pyarrow", "pandas"]
_DIGITS = b"0123456789"


def parse(data: bytes, start: int, relabel: bool) -> tuple[np.ndarray, np.ndarray] | None:
    """Source and target ids of ``data[start:]``, or None when the body is not plain, no
    engine is installed, or an engine fails or finds something the line parser must judge."""
    if len(data) - start < MIN_BYTES:
        return None
    body = memoryview(data)[start:]
    delimiter = _plain_delimiter(data, start)
    if delimiter is None:
        return None
    for name in ENGINES:
        reader = _READERS[name]
        if importlib.util.find_spec(name) is None:
            continue
        try:
            columns = reader(body, delimiter)
        except MemoryError:
            raise
        except Exception:  # any failure: the line parser re-reads and names the line
            return None
        return _checked(columns, relabel)
    return None


def _plain_delimiter(data: bytes, start: int) -> bytes | None:
    """The delimiter of a plain body (see the module docstring), else None."""
    end = data.find(b"\n", start, start + 4096)
    first = data[start : end if end >= 0 else start + 4096]
    delimiter = b"," if b"," in first else b"\t" if b"\t" in first else b" "
    body = data[start:] if start else data
    if body.translate(None, _DIGITS + delimiter + b"\r\n"):
        return None
    if b"\r" in body and body.count(b"\r") != body.count(b"\r\n"):  # a lone \r: see above
        return None
    return delimiter


def _checked(
    columns: tuple[np.ndarray, np.ndarray] | None, relabel: bool
) -> tuple[np.ndarray, np.ndarray] | None:
    """Two int64 columns of ids in range, else None (the line parser then explains)."""
    if columns is None:
        return None
    src, dst = (np.ascontiguousarray(c) for c in columns)
    if src.dtype != np.int64 or dst.dtype != np.int64 or src.size == 0:
        return None
    low = min(int(src.min()), int(dst.min()))
    high = max(int(src.max()), int(dst.max()))
    if low < 0 or (not relabel and high >= MAX_VERTICES):
        return None
    return src, dst


def _read_pyarrow(body: memoryview, delimiter: bytes) -> tuple[np.ndarray, np.ndarray] | None:
    import pyarrow as pa
    from pyarrow import csv as pacsv

    table = pacsv.read_csv(
        pa.py_buffer(body),
        read_options=pacsv.ReadOptions(autogenerate_column_names=True),
        parse_options=pacsv.ParseOptions(
            delimiter=delimiter.decode(), quote_char=False, escape_char=False
        ),
        convert_options=pacsv.ConvertOptions(
            column_types={"f0": pa.int64(), "f1": pa.int64()},
            include_columns=["f0", "f1"],
            strings_can_be_null=False,
            quoted_strings_can_be_null=False,
        ),
    )
    if table.num_columns != 2 or any(c.null_count for c in table.columns):
        return None
    return tuple(c.to_numpy() for c in table.columns)  # type: ignore[return-value]


def _read_pandas(body: memoryview, delimiter: bytes) -> tuple[np.ndarray, np.ndarray] | None:
    import pandas as pd

    frame = pd.read_csv(
        io.BytesIO(body),
        sep=delimiter.decode(),
        header=None,
        engine="c",
        dtype=np.int64,
        na_filter=False,
        quoting=csv.QUOTE_NONE,
        skip_blank_lines=True,
    )
    if frame.shape[1] < 2:
        return None
    return frame.iloc[:, 0].to_numpy(), frame.iloc[:, 1].to_numpy()


_READERS: dict[str, Callable[[memoryview, bytes], tuple[np.ndarray, np.ndarray] | None]] = {
    "pyarrow": _read_pyarrow,
    "pandas": _read_pandas,
}
