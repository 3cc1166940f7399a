"""Graph archives: the ``.npz`` :func:`save_graph` writes, and SciPy's ``save_npz`` files.

The archive holds ``format`` (``"blest-graph"``), ``version`` (1), ``n``, ``directed``,
``out_ptr`` (int64), ``out_idx`` (int32), ``in_ptr`` / ``in_idx`` only when directed,
``labels`` when the graph has them, ``content_hash`` and ``report`` (the cleaning report as
JSON). Loading checks every structural property the graph promises (sorted rows, no self loops
or duplicates, in_csr the transpose of out_csr, the content hash). Only the members it uses
are read, each only after checking that the archive really holds the bytes it declares
(:mod:`blest.graph.io.zipnpy`); a gzip-compressed archive may expand to the memory limit at
most. An archive whose ``format`` member names a SciPy sparse format is read by
:mod:`blest.graph.io.sparse_npz`.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from blest.errors import BlestError, GraphFormatError
from blest.graph.core import MAX_VERTICES, CleaningReport, Graph
from blest.graph.io import sparse_npz
from blest.graph.io.build import Options, adapt_graph
from blest.graph.io.files import GraphFile, read_errors
from blest.graph.io.limits import content_cap
from blest.graph.io.zipnpy import NpzMembers

__all__ = ["NPZ_FORMAT", "NPZ_VERSION", "load_npz", "save_graph"]

#: Marker and version of the ``.npz`` files :func:`save_graph` writes.
NPZ_FORMAT = "blest-graph"
NPZ_VERSION = 1

_REQUIRED = ("format", "version", "n", "directed", "out_ptr", "out_idx", "content_hash")
_OPTIONAL = ("in_ptr", "in_idx", "labels", "report")
_SMALL = 1  # elements of a scalar member (format, version, n, hash, report text)
#: What a damaged archive or member may raise while it is read.
_ARCHIVE_ERRORS = (
    ValueError,
    KeyError,
    TypeError,
    OSError,
    struct.error,
    NotImplementedError,
    RuntimeError,
)


def save_graph(graph: Graph, path: str | os.PathLike[str], *, compress: bool = False) -> Path:
    """Write ``graph`` to ``path`` (exactly that name) as a ``.npz`` :func:`load_graph` reads.

    See the module docstring for the arrays stored; ``content_hash`` is
    :meth:`Graph.content_hash`, checked on loading.

    Parameters
    ----------
    graph : Graph
    path : str or os.PathLike
    compress : bool, default False
        Deflate the arrays (smaller, slower to write and read).

    Returns
    -------
    pathlib.Path
        The path written.

    Raises
    ------
    TypeError
        ``graph`` is not a :class:`Graph`, or its labels are Python objects other than
        str (they cannot be stored without pickle).

    Examples
    --------
    >>> import blest, scipy.sparse as sp, tempfile, os
    >>> g = blest.load_graph(sp.coo_array(([1], ([0], [1])), shape=(2, 2)))
    >>> p = save_graph(g, os.path.join(tempfile.mkdtemp(), "g.npz"))
    >>> blest.load_graph(p).content_hash() == g.content_hash()
    True
    """
    if not isinstance(graph, Graph):
        raise TypeError(f"save_graph expects a blest.Graph, got {type(graph).__name__}")
    arrays: dict[str, np.ndarray] = {
        "format": np.array(NPZ_FORMAT),
        "version": np.array(NPZ_VERSION, dtype=np.int64),
        "n": np.array(graph.n, dtype=np.int64),
        "directed": np.array(graph.directed),
        "out_ptr": np.asarray(graph.out_ptr, dtype=np.int64),
        "out_idx": np.asarray(graph.out_idx, dtype=np.int32),
        "content_hash": np.array(graph.content_hash()),
        "report": np.array(json.dumps(dataclasses.asdict(graph.report))),
    }
    if graph.directed:
        arrays["in_ptr"] = np.asarray(graph.in_ptr, dtype=np.int64)
        arrays["in_idx"] = np.asarray(graph.in_idx, dtype=np.int32)
    if graph.labels is not None:
        arrays["labels"] = _storable_labels(graph.labels)
    path = Path(path)
    with open(path, "wb") as f:
        save = np.savez_compressed if compress else np.savez
        # mypy lets **arrays fill the bool allow_pickle; the keys are member names, never it
        save(f, **arrays)  # type: ignore[arg-type]
    return path


def _storable_labels(labels: np.ndarray) -> np.ndarray:
    labels = np.asarray(labels)
    if labels.dtype.kind in "iub":
        return labels.astype(np.int64)
    if labels.dtype.kind == "U":
        return labels
    if labels.dtype.kind == "O" and all(isinstance(v, str) for v in labels):
        return labels.astype(str)
    raise TypeError(f"labels of dtype {labels.dtype} cannot be saved (only integers or strings)")


def load_npz(f: GraphFile, opts: Options) -> Graph:
    """Read and check a graph archive written by :func:`save_graph` or SciPy's ``save_npz``."""
    cap = content_cap(opts.max_bytes)
    if f.gzip and f.read(4) != b"PK\x03\x04":  # before expanding the whole stream
        raise GraphFormatError("not a readable .npz archive: not a zip archive", path=f.where)
    try:
        with read_errors(f.where):
            source: Any = io.BytesIO(f.read_capped(cap)) if f.gzip else f.path
            with NpzMembers(source, cap.nbytes) as members:
                if not members.names:
                    raise ValueError("the archive holds no .npy arrays")
                kind = sparse_npz.scipy_format(members)
                if kind is not None:
                    return sparse_npz.load(members, kind, f.where, opts)
                arrays = _read_members(members)
    except _ARCHIVE_ERRORS as exc:
        if isinstance(exc, GraphFormatError) and exc.reason.startswith("malformed"):
            raise
        if isinstance(exc, BlestError) and not isinstance(exc, GraphFormatError):
            raise
        reason = exc.reason if isinstance(exc, GraphFormatError) else exc
        raise GraphFormatError(f"not a readable .npz archive: {reason}", path=f.where) from exc
    return adapt_graph(_graph_from_npz(arrays, f.where), opts)


def _read_members(members: NpzMembers) -> dict[str, np.ndarray]:
    """The members a blest graph archive uses (others are never inflated)."""
    small = {"format", "version", "n", "directed", "content_hash", "report"}
    return {
        k: members.read(k, max_items=_SMALL if k in small else None)
        for k in _REQUIRED + _OPTIONAL
        if k in members
    }


def _graph_from_npz(arrays: dict[str, np.ndarray], where: str) -> Graph:
    def bad(message: str) -> GraphFormatError:
        return GraphFormatError(f"malformed blest graph archive: {message}", path=where)

    missing = [k for k in _REQUIRED if k not in arrays]
    if missing:
        raise bad(f"missing {', '.join(missing)}")
    if _scalar(arrays["format"], "U") != NPZ_FORMAT:
        raise bad(f"format is {arrays['format']!r}, expected {NPZ_FORMAT!r}")
    version = _scalar(arrays["version"], "iu")
    if version != NPZ_VERSION:
        raise bad(f"unsupported version {version!r} (this blest reads version {NPZ_VERSION})")
    n, directed = _scalar(arrays["n"], "iu"), _scalar(arrays["directed"], "b")
    if n is None or directed is None or not 0 <= n <= MAX_VERTICES:
        raise bad("n must be an integer in [0, MAX_VERTICES] and directed a bool")
    if ("in_ptr" in arrays or "in_idx" in arrays) != directed:
        raise bad("in_ptr / in_idx must be present exactly when the graph is directed")
    out_ptr, out_idx = _check_csr(arrays["out_ptr"], arrays["out_idx"], n, "out", bad)
    in_ptr, in_idx = out_ptr, out_idx
    if directed:
        in_ptr, in_idx = _check_csr(arrays.get("in_ptr"), arrays.get("in_idx"), n, "in", bad)
        if not (
            np.array_equal(np.diff(in_ptr), np.bincount(out_idx, minlength=n))
            and np.array_equal(np.diff(out_ptr), np.bincount(in_idx, minlength=n))
        ):
            raise bad("in_csr is not the transpose of out_csr (degrees differ)")
    elif not np.array_equal(np.diff(out_ptr), np.bincount(out_idx, minlength=n)):
        raise bad("undirected graph whose adjacency is not symmetric (degrees differ)")
    labels = arrays.get("labels")
    if labels is not None and (labels.shape != (n,) or labels.dtype.kind not in "iuU"):
        raise bad(f"labels must be {n} integers or strings, got {labels.dtype} {labels.shape}")
    graph = Graph.from_csr(
        out_ptr,
        out_idx,
        n,
        directed=directed,
        in_ptr=in_ptr,
        in_idx=in_idx,
        labels=labels,
        report=_report_from_json(arrays.get("report"), bad),
    )
    if graph.content_hash() != _scalar(arrays["content_hash"], "U"):
        raise bad("content hash mismatch: the arrays were changed or corrupted")
    return graph


def _scalar(a: np.ndarray, kinds: str) -> Any:
    """The value of a 0-d array of one of the dtype kinds, else None."""
    if not isinstance(a, np.ndarray) or a.shape != () or a.dtype.kind not in kinds:
        return None
    return a.item()


def _check_csr(
    ptr: np.ndarray | None,
    idx: np.ndarray | None,
    n: int,
    name: str,
    bad: Callable[[str], GraphFormatError],
) -> tuple[np.ndarray, np.ndarray]:
    """Check the shape, dtypes and structure of one CSR (sorted, no loops, no duplicates)."""
    if ptr is None or idx is None or ptr.dtype != np.int64 or idx.dtype != np.int32:
        raise bad(f"{name}_ptr must be int64 and {name}_idx int32")
    if ptr.shape != (n + 1,) or idx.ndim != 1:
        raise bad(f"{name}_ptr must have n + 1 = {n + 1} entries and {name}_idx be 1-D")
    if ptr[0] != 0 or ptr[-1] != idx.size or np.any(np.diff(ptr) < 0):
        raise bad(f"{name}_ptr must rise from 0 to len({name}_idx) = {idx.size}")
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise bad(f"{name}_idx holds ids outside 0..{n - 1}")
    rows = np.repeat(np.arange(n, dtype=np.int32), np.diff(ptr))
    if np.any(rows == idx):
        raise bad(f"{name}_csr holds self loops")
    rising = idx[1:] > idx[:-1]
    if not np.all(rising | (rows[1:] != rows[:-1])):
        raise bad(f"{name}_csr rows must be sorted without duplicates")
    return ptr, idx


def _report_from_json(
    raw: np.ndarray | None, bad: Callable[[str], GraphFormatError]
) -> CleaningReport:
    if raw is None:
        return CleaningReport()
    try:
        fields = json.loads(_scalar(raw, "U"))
        known = {f.name for f in dataclasses.fields(CleaningReport)}
        return CleaningReport(**{k: v for k, v in fields.items() if k in known})
    except (TypeError, ValueError, AttributeError, RecursionError) as exc:
        raise bad(f"unreadable report: {exc}") from None
