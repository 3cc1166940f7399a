"""Graph loading and saving: Matrix Market, edge lists, prepared ``.npz``, SciPy, NetworkX.

Everything becomes a cleaned :class:`~blest.graph.core.Graph` (DESIGN.md, "Graph conventions"):
0-based ids, self loops and duplicate arcs dropped and counted in ``graph.report``.

Bad input raises :class:`~blest.errors.GraphFormatError` (with ``path`` and, where there is one,
the 1-based ``line``) or :class:`~blest.errors.GraphLimitError` (too many vertices, with the
numbers). A missing file raises :class:`GraphFileNotFoundError`, which is both a
``GraphFormatError`` and a ``FileNotFoundError``.

Speed: Matrix Market bodies are parsed by SciPy's threaded ``fast_matrix_market`` reader; edge
lists are checked chunk by chunk with one regular expression and parsed by ``numpy.fromstring``
(a vectorized tokenizer takes irregular chunks, a line-by-line parser the odd rest). Whenever
a fast reader fails, a small validating line-by-line parser re-reads the file (or the failing
chunk) to name the offending line.
"""

from __future__ import annotations

import dataclasses
import errno
import gzip
import io
import json
import os
import re
import warnings
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
import scipy.io
import scipy.sparse as sp
from numpy.lib.stride_tricks import sliding_window_view

from blest.errors import GraphFormatError, GraphLimitError
from blest.graph.core import MAX_VERTICES, CleaningReport, Graph

__all__ = [
    "FORMATS",
    "NPZ_FORMAT",
    "NPZ_VERSION",
    "GraphFileNotFoundError",
    "load_graph",
    "save_graph",
]

#: File formats ``load_graph(..., format=...)`` accepts.
FORMATS = ("mtx", "edgelist", "npz")
#: Marker and version of the ``.npz`` files :func:`save_graph` writes.
NPZ_FORMAT = "blest-graph"
NPZ_VERSION = 1

_SUFFIX_FORMAT = {
    ".mtx": "mtx",
    ".mm": "mtx",
    ".txt": "edgelist",
    ".csv": "edgelist",
    ".tsv": "edgelist",
    ".el": "edgelist",
    ".edges": "edgelist",
    ".edgelist": "edgelist",
    ".snap": "edgelist",
    ".npz": "npz",
}
_INT64_MAX = 2**63 - 1
_EMPTY_IDS = np.empty(0, dtype=np.int64)


class GraphFileNotFoundError(GraphFormatError, FileNotFoundError):
    """The graph file does not exist: a ``GraphFormatError`` and a ``FileNotFoundError``."""

    def __init__(self, path: str | os.PathLike[str]):
        super().__init__("no such file", path=os.fspath(path))
        self.errno = errno.ENOENT
        self.strerror = "No such graph file"
        self.filename = self.path


# ====================================================================== public API
def load_graph(
    source: Any,
    *,
    directed: bool | None = None,
    relabel: bool = False,
    format: str | None = None,
) -> Graph:
    """Load a graph from a file or an in-memory object into a cleaned :class:`Graph`.

    Parameters
    ----------
    source : str, os.PathLike, scipy.sparse matrix or array, networkx graph, or Graph
        A file path, or an object:

        - ``.mtx`` / ``.mm``: Matrix Market ``coordinate`` (``pattern``, ``real``,
          ``double``, ``integer`` or ``complex``). Vertex ``i - 1`` for index ``i``; every
          stored entry is an arc, explicit zeros included (pattern semantics).
        - ``.txt``, ``.csv``, ``.tsv``, ``.el``, ``.edges``, ``.edgelist``, ``.snap``: edge
          lists, one arc ``source target`` per line (see Notes).
        - ``.npz``: a graph written by :func:`save_graph`.
        - Any of these with ``.gz`` appended (gzip). Other names are recognised by their
          first bytes (Matrix Market banner, zip archive, else edge list).
        - A SciPy sparse matrix or array: a stored entry ``(i, j)`` is the arc ``i → j``.
        - A NetworkX graph (duck-typed: ``is_directed``, ``nodes``, ``edges``).
        - A :class:`Graph`: returned as it is, unless ``directed`` or ``relabel`` asks for
          a change.
    directed : bool, optional
        ``None`` (default) takes the input's own directedness: Matrix Market ``general`` →
        directed, ``symmetric`` / ``skew-symmetric`` / ``hermitian`` → undirected; edge
        lists → directed; SciPy → directed unless the pattern is symmetric; NetworkX →
        ``G.is_directed()``; ``.npz`` and :class:`Graph` → as stored. ``False`` on a
        directed input adds the reverse of every arc (``report.symmetrized``). ``True`` on
        an undirected in-memory graph or ``.npz`` keeps both arcs of every edge as a
        directed graph, but on a symmetric Matrix Market file it is an error (the file
        stores half of the arcs).
    relabel : bool, default False
        Compact the vertex ids to ``0 .. k-1`` over the ids that occur in at least one arc
        (self loops included), in increasing order of the original id; ``graph.labels[i]``
        is the original id of vertex ``i`` (int64; for Matrix Market the 0-based index).
        Without it, ids are kept as written: ``n = max id + 1`` for edge lists, and ids
        that never occur are isolated vertices. NetworkX graphs whose nodes are not the
        integers ``0 .. n-1`` are always relabelled, in ``G.nodes`` order, and keep their
        isolated nodes.
    format : {"mtx", "edgelist", "npz"}, optional
        Override the format deduced from the file name.

    Returns
    -------
    Graph
        ``graph.report`` counts the self loops and duplicate arcs dropped (on an undirected
        graph an edge listed twice, in either orientation, counts as two duplicate arcs) and
        records the source, format, symmetrization and number of entries read.

    Raises
    ------
    GraphFileNotFoundError
        The file does not exist (a ``GraphFormatError`` and a ``FileNotFoundError``).
    GraphFormatError
        The file or object is not a graph: empty file, bad Matrix Market banner or size
        line, dense ``array`` Matrix Market, non-square matrix, index out of range, too
        few or too many entries, a line with one column, a non-numeric or negative id, no
        edges in an edge list, ``directed=True`` on a symmetric Matrix Market file, corrupt
        gzip or ``.npz``. ``err.path`` names the file and ``err.line`` the 1-based line.
    GraphLimitError
        More than ``MAX_VERTICES`` (2**31 - 2) vertices (checked on the Matrix Market size
        line before anything is allocated, and on each edge-list id).
    TypeError
        ``source`` is of an unsupported type.
    ValueError
        ``format`` is not one of :data:`FORMATS`.

    Notes
    -----
    Edge lists: tokens are separated by spaces, tabs or commas; blank lines and lines whose
    first token starts with ``#`` or ``%`` are skipped; the first other line is a header
    (and skipped) when neither of its first two tokens is an integer, as in ``id_1,id_2``;
    every other line holds at least two non-negative decimal ids, and further columns
    (weights, timestamps) are ignored.

    Examples
    --------
    >>> import blest, scipy.sparse as sp
    >>> g = blest.load_graph(sp.coo_array(([1, 1], ([0, 1], [1, 2])), shape=(3, 3)))
    >>> g
    <blest.Graph directed n=3 arcs=2>
    >>> g.out_idx.tolist(), g.in_idx.tolist()
    ([1, 2], [0, 1])
    >>> blest.load_graph(g, directed=False).nnz
    4
    """
    if format is not None and format not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got {format!r}")
    if isinstance(source, Graph):
        return _adapt_graph(source, directed=directed, relabel=relabel)
    if isinstance(source, (str, os.PathLike)):
        return _load_file(Path(source), directed=directed, relabel=relabel, format=format)
    if sp.issparse(source):
        return _from_scipy(source, directed=directed, relabel=relabel)
    if all(hasattr(source, a) for a in ("is_directed", "nodes", "edges")):
        return _from_networkx(source, directed=directed, relabel=relabel)
    raise TypeError(
        "load_graph expects a file path, a scipy.sparse matrix, a networkx graph or a "
        f"blest.Graph, got {type(source).__name__}"
    )


def save_graph(graph: Graph, path: str | os.PathLike[str], *, compress: bool = False) -> Path:
    """Write ``graph`` to ``path`` (exactly that name) as a ``.npz`` :func:`load_graph` reads.

    The archive holds ``format`` (``"blest-graph"``), ``version`` (1), ``n``, ``directed``,
    ``out_ptr`` (int64), ``out_idx`` (int32), ``in_ptr`` / ``in_idx`` only when directed,
    ``labels`` when the graph has them, ``content_hash`` (:meth:`Graph.content_hash`, checked
    on loading) and ``report`` (the cleaning report as JSON).

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
        (np.savez_compressed if compress else np.savez)(f, **arrays)
    return path


# ====================================================================== dispatch and shared steps
def _build(
    src: np.ndarray,
    dst: np.ndarray,
    n: int,
    *,
    directed: bool,
    relabel: bool,
    labels: np.ndarray | None = None,
    source: str | None,
    format: str,
    symmetrized: bool = False,
) -> Graph:
    """Relabel (when asked) and clean arcs into a Graph."""
    entries = int(np.size(src))
    if relabel:
        src, dst, kept = _compact(src, dst)
        labels = kept if labels is None else labels[kept]
        n = kept.size
    return Graph.from_arcs(
        src,
        dst,
        n,
        directed=directed,
        labels=labels,
        source=source,
        format=format,
        symmetrized=symmetrized,
        entries=entries,
    )


def _compact(src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ids compacted to 0..k-1 in increasing order of the original id, and the k originals."""
    if src.size == 0:
        return src.astype(np.int32), dst.astype(np.int32), _EMPTY_IDS.copy()
    top = max(int(src.max()), int(dst.max()))
    if top < 4 * src.size + 4096:
        present = np.zeros(top + 1, dtype=bool)
        present[src] = True
        present[dst] = True
        kept = np.flatnonzero(present)
        new_id = np.cumsum(present, dtype=np.int64)
        new_id -= 1
        new_src, new_dst = new_id[src], new_id[dst]
    else:
        kept = np.unique(np.concatenate([src, dst]))
        new_src, new_dst = np.searchsorted(kept, src), np.searchsorted(kept, dst)
    if kept.size > MAX_VERTICES:
        raise GraphLimitError(
            f"graph has {kept.size} distinct vertex ids; blest supports at most {MAX_VERTICES}"
        )
    return new_src.astype(np.int32), new_dst.astype(np.int32), kept.astype(np.int64)


def _csr_arcs(graph: Graph) -> tuple[np.ndarray, np.ndarray]:
    """The arcs of ``graph`` as (tail, head) arrays in out_csr order."""
    tails = np.repeat(np.arange(graph.n, dtype=np.int32), np.diff(graph.out_ptr))
    return tails, graph.out_idx


def _adapt_graph(graph: Graph, *, directed: bool | None, relabel: bool) -> Graph:
    """``graph`` itself, or a copy made directed, undirected or relabelled."""
    want = graph.directed if directed is None else bool(directed)
    if want == graph.directed and not relabel:
        return graph
    report = graph.report
    if not relabel and want:  # undirected → directed: the same arcs, each now one-way
        return Graph.from_csr(
            graph.out_ptr,
            graph.out_idx,
            graph.n,
            directed=True,
            in_ptr=graph.out_ptr,
            in_idx=graph.out_idx,
            labels=graph.labels,
            report=report,
        )
    src, dst = _csr_arcs(graph)
    return _build(
        src,
        dst,
        graph.n,
        directed=want,
        relabel=relabel,
        labels=graph.labels,
        source=report.source,
        format=report.format or "blest",
        symmetrized=graph.directed and not want,
    )


# ====================================================================== in-memory inputs
def _from_scipy(matrix: Any, *, directed: bool | None, relabel: bool) -> Graph:
    shape = matrix.shape
    if len(shape) != 2 or shape[0] != shape[1]:
        raise GraphFormatError(
            f"a {' x '.join(map(str, shape))} sparse matrix is not an adjacency matrix: "
            "it must be square"
        )
    n = int(shape[0])
    if n > MAX_VERTICES:
        raise GraphLimitError(f"matrix has {n} rows; blest supports at most {MAX_VERTICES}")
    coo = sp.coo_array(matrix)  # stored entries, explicit zeros included
    src, dst = coo.row, coo.col
    kw = {"source": f"scipy.sparse {type(matrix).__name__}", "format": "scipy"}
    as_directed = _build(src, dst, n, directed=True, relabel=relabel, **kw)
    symmetric = np.array_equal(as_directed.out_ptr, as_directed.in_ptr) and np.array_equal(
        as_directed.out_idx, as_directed.in_idx
    )
    if directed is None:
        directed = not symmetric
    if directed:
        return as_directed
    if symmetric:  # both arcs already stored: the same arrays, read as undirected
        g = as_directed
        return Graph.from_csr(
            g.out_ptr, g.out_idx, g.n, directed=False, labels=g.labels, report=g.report
        )
    return _build(src, dst, n, directed=False, relabel=relabel, symmetrized=True, **kw)


def _from_networkx(nx_graph: Any, *, directed: bool | None, relabel: bool) -> Graph:
    nodes = list(nx_graph.nodes)
    n = len(nodes)
    is_directed = bool(nx_graph.is_directed())
    want = is_directed if directed is None else bool(directed)
    plain = all(_is_int(v) for v in nodes) and set(nodes) == set(range(n))
    m = nx_graph.number_of_edges()
    if plain and not relabel:
        labels = None
        ends = np.fromiter(
            (v for edge in nx_graph.edges() for v in edge), dtype=np.int64, count=2 * m
        )
    else:
        labels = _label_array(nodes)
        index = {v: i for i, v in enumerate(nodes)}
        ends = np.fromiter(
            (index[v] for edge in nx_graph.edges() for v in edge), dtype=np.int64, count=2 * m
        )
    src, dst = ends[0::2], ends[1::2]
    if want and not is_directed:  # keep both arcs of every edge, as a directed graph
        other = src != dst  # a self loop stays one arc (and one dropped loop)
        src, dst = np.concatenate([src, dst[other]]), np.concatenate([dst, src[other]])
    return Graph.from_arcs(
        src,
        dst,
        n,
        directed=want,
        labels=labels,
        source=f"networkx {type(nx_graph).__name__}",
        format="networkx",
        symmetrized=is_directed and not want,
        entries=m,
    )


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _label_array(nodes: list[Any]) -> np.ndarray:
    """int64 labels when every node is an integer, else a 1-D object array of the nodes."""
    if all(_is_int(v) and -_INT64_MAX - 1 <= v <= _INT64_MAX for v in nodes):
        return np.array(nodes, dtype=np.int64)
    return np.fromiter(nodes, dtype=object, count=len(nodes))


def _storable_labels(labels: np.ndarray) -> np.ndarray:
    labels = np.asarray(labels)
    if labels.dtype.kind in "iub":
        return labels.astype(np.int64)
    if labels.dtype.kind == "U":
        return labels
    if labels.dtype.kind == "O" and all(isinstance(v, str) for v in labels):
        return labels.astype(str)
    raise TypeError(f"labels of dtype {labels.dtype} cannot be saved (only integers or strings)")


# ====================================================================== files
def _load_file(path: Path, *, directed: bool | None, relabel: bool, format: str | None) -> Graph:
    if not path.exists():
        raise GraphFileNotFoundError(path)
    if path.is_dir():
        raise GraphFormatError("is a directory, not a graph file", path=str(path))
    compressed = path.name.lower().endswith(".gz")
    opener = _opener(path, compressed)
    fmt = format or _format_from_name(path, compressed) or _sniff(opener, path)
    if fmt == "mtx":
        return _load_mtx(path, opener, directed=directed, relabel=relabel)
    if fmt == "npz":
        graph = _load_npz(path, opener, compressed)
        return _adapt_graph(graph, directed=directed, relabel=relabel)
    return _load_edgelist(path, opener, directed=directed, relabel=relabel)


def _opener(path: Path, compressed: bool) -> Callable[[], IO[bytes]]:
    if compressed:
        return lambda: gzip.open(path, "rb")
    return lambda: open(path, "rb")


def _format_from_name(path: Path, compressed: bool) -> str | None:
    name = path.name.lower()
    if compressed:
        name = name[: -len(".gz")]
    return _SUFFIX_FORMAT.get(os.path.splitext(name)[1])


def _sniff(opener: Callable[[], IO[bytes]], path: Path) -> str:
    head = _guarded_read(opener, path, 16)
    if head.startswith(b"%%MatrixMarket"):
        return "mtx"
    if head.startswith(b"PK\x03\x04"):
        return "npz"
    return "edgelist"


def _guarded_read(opener: Callable[[], IO[bytes]], path: Path, size: int = -1) -> bytes:
    """Read (part of) a file; corrupt gzip becomes a GraphFormatError."""
    try:
        with opener() as f:
            return f.read(size)
    except (OSError, EOFError, zlib.error) as exc:
        if isinstance(exc, OSError) and not isinstance(exc, gzip.BadGzipFile):
            raise
        raise GraphFormatError(f"cannot decompress: {exc}", path=str(path)) from exc


# ---------------------------------------------------------------------- Matrix Market
_MM_FIELDS = {"pattern": 0, "real": 1, "double": 1, "integer": 1, "complex": 2}
_MM_SYMMETRIES = ("general", "symmetric", "skew-symmetric", "hermitian")


@dataclass(frozen=True)
class _MMHeader:
    field: str
    symmetry: str
    nrows: int
    ncols: int
    nnz: int
    size_line: int  # 1-based line of "rows cols entries"


def _load_mtx(
    path: Path, opener: Callable[[], IO[bytes]], *, directed: bool | None, relabel: bool
) -> Graph:
    compressed = path.name.lower().endswith(".gz")
    header = _read_mm_header(path, opener, compressed)
    where = str(path)
    undirected_file = header.symmetry != "general"
    if undirected_file and directed:
        raise GraphFormatError(
            f"the file is {header.symmetry} (an undirected graph storing each edge once); "
            "directed=True is not allowed on it",
            path=where,
            line=1,
        )
    try:
        if compressed:
            with opener() as f:
                coo = scipy.io.mmread(f, spmatrix=False)
        else:  # a path lets fast_matrix_market read the file in parallel
            coo = scipy.io.mmread(where, spmatrix=False)
    except (ValueError, OverflowError) as exc:
        _diagnose_mtx(path, opener, header, exc)
        raise AssertionError("unreachable") from exc  # _diagnose_mtx always raises
    src, dst = _raw_mm_entries(coo, header)
    want = not undirected_file if directed is None else bool(directed)
    return _build(
        src,
        dst,
        header.nrows,
        directed=want,
        relabel=relabel,
        source=where,
        format="mtx",
        symmetrized=want is False and not undirected_file,
    )


def _raw_mm_entries(coo: Any, header: _MMHeader) -> tuple[np.ndarray, np.ndarray]:
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


def _read_mm_header(path: Path, opener: Callable[[], IO[bytes]], compressed: bool) -> _MMHeader:
    """Parse and check the banner and size line, before any entry is read."""
    where = str(path)
    try:
        with opener() as f:
            banner = f.readline(4096)
            if not banner:
                raise GraphFormatError("the file is empty", path=where)
            field, symmetry = _parse_banner(banner, where)
            lineno = 1
            for raw in f:
                lineno += 1
                text = raw.strip()
                if text and not text.startswith(b"%"):
                    break
            else:
                raise GraphFormatError(
                    "no size line (rows columns entries) after the banner",
                    path=where,
                    line=lineno + 1,
                )
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise GraphFormatError(f"cannot decompress: {exc}", path=where) from exc
    tokens = text.split()
    if len(tokens) != 3 or not all(t.isdigit() for t in tokens):
        raise GraphFormatError(
            f"size line must hold three non-negative integers (rows columns entries), got "
            f"{_show(text)}",
            path=where,
            line=lineno,
        )
    nrows, ncols, nnz = map(int, tokens)
    if nrows != ncols:
        raise GraphFormatError(
            f"the matrix is {nrows} x {ncols}; an adjacency matrix must be square",
            path=where,
            line=lineno,
        )
    if nrows > MAX_VERTICES:
        raise GraphLimitError(
            f"{where}:{lineno}: the matrix has {nrows} rows, so the graph would have {nrows} "
            f"vertices; blest supports at most {MAX_VERTICES} (levels are int32)"
        )
    # Each entry takes at least 4 bytes ("1 1\n"); gzip deflates at most ~1032:1.
    budget = path.stat().st_size * (1032 if compressed else 1)
    if 4 * nnz > budget + 4:
        raise GraphFormatError(
            f"the size line declares {nnz} entries, more than the file can hold",
            path=where,
            line=lineno,
        )
    return _MMHeader(field, symmetry, nrows, ncols, nnz, lineno)


def _parse_banner(banner: bytes, where: str) -> tuple[str, str]:
    words = banner.decode("latin-1").split()
    if not words or words[0] != "%%MatrixMarket":
        raise GraphFormatError(
            f"not a Matrix Market file: the first line must start with '%%MatrixMarket', got "
            f"{_show(banner.strip())}",
            path=where,
            line=1,
        )
    words = [w.lower() for w in words]
    if len(words) != 5 or words[1] != "matrix":
        raise GraphFormatError(
            "Matrix Market banner must read '%%MatrixMarket matrix <format> <field> "
            f"<symmetry>', got {_show(banner.strip())}",
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


def _diagnose_mtx(
    path: Path, opener: Callable[[], IO[bytes]], header: _MMHeader, exc: Exception
) -> None:
    """Re-read the body line by line and raise for its first bad line."""
    where = str(path)
    values = _MM_FIELDS[header.field]
    count = 0
    with opener() as f:
        for lineno, raw in enumerate(f, 1):
            if lineno <= header.size_line or not raw.strip():
                continue
            if raw.startswith(b"%"):
                raise GraphFormatError(
                    "comment line after the size line (Matrix Market allows comments only "
                    "before it)",
                    path=where,
                    line=lineno,
                )
            count += 1
            if count > header.nnz:
                raise GraphFormatError(
                    f"more entries than the {header.nnz} the size line (line "
                    f"{header.size_line}) declares",
                    path=where,
                    line=lineno,
                )
            _check_mm_entry(raw.split(), values, header, where, lineno)
    if count < header.nnz:
        raise GraphFormatError(
            f"the size line declares {header.nnz} entries but the file has {count}",
            path=where,
            line=header.size_line,
        )
    found = re.search(r"[Ll]ine (\d+)", str(exc))
    raise GraphFormatError(
        f"Matrix Market reader failed: {exc}",
        path=where,
        line=int(found.group(1)) if found else None,
    ) from exc


def _check_mm_entry(
    tokens: list[bytes], values: int, header: _MMHeader, where: str, lineno: int
) -> None:
    if len(tokens) < 2 + values:
        raise GraphFormatError(
            f"an entry needs {2 + values} columns (row column{' value' * values}), "
            f"found {len(tokens)}",
            path=where,
            line=lineno,
        )
    for name, token, top in (("row", tokens[0], header.nrows), ("column", tokens[1], header.ncols)):
        if not re.fullmatch(rb"-?\d+", token):
            raise GraphFormatError(
                f"{name} index {_show(token)} is not an integer", path=where, line=lineno
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
                f"value {_show(token)} is not a number", path=where, line=lineno
            ) from None


# ---------------------------------------------------------------------- edge lists
_CHUNK_BYTES = 1 << 26
_SEPARATORS = b" \t\r\n\v\f,"
_SPLIT = re.compile(rb"[\s,]+")
_DIGITS = re.compile(rb"\d+")
_SIGNED = re.compile(rb"[+-]?\d+")
_COMMENT = (ord("#"), ord("%"))


def _load_edgelist(
    path: Path, opener: Callable[[], IO[bytes]], *, directed: bool | None, relabel: bool
) -> Graph:
    where = str(path)
    data = _guarded_read(opener, path)
    if data.startswith(b"\xef\xbb\xbf"):  # UTF-8 byte order mark
        data = data[3:]
    if not data or data.isspace():
        raise GraphFormatError("the file is empty", path=where)
    start, line = _skip_preamble(data)
    parts = [
        _parse_chunk(data, a, b, ln, where, relabel) for a, b, ln in _chunks(data, start, line)
    ]
    del data
    src = np.concatenate([p[0] for p in parts]) if parts else _EMPTY_IDS
    dst = np.concatenate([p[1] for p in parts]) if parts else _EMPTY_IDS
    del parts
    if src.size == 0:
        raise GraphFormatError(
            "no edges found (only comments, blank lines or a header)", path=where
        )
    n = 0 if relabel else max(int(src.max()), int(dst.max())) + 1
    want = True if directed is None else bool(directed)
    return _build(
        src,
        dst,
        n,
        directed=want,
        relabel=relabel,
        source=where,
        format="edgelist",
        symmetrized=not want,
    )


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
        return _EMPTY_IDS, _EMPTY_IDS
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
                f"expected two vertex ids (source target), found one column: {_show(text)}",
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
            f"vertex id {_show(token)} is not a non-negative integer", path=where, line=lineno
        )
    value = int(token)
    if value > limit:
        if limit == _INT64_MAX:
            raise GraphLimitError(f"{where}:{lineno}: vertex id {value} does not fit in int64")
        raise GraphLimitError(
            f"{where}:{lineno}: vertex id {value} needs a graph of {value + 1} vertices; "
            f"blest supports at most {MAX_VERTICES} (pass relabel=True to compact sparse ids)"
        )
    return value


def _show(text: bytes, limit: int = 60) -> str:
    shown = text.decode("utf-8", errors="replace")
    return repr(shown if len(shown) <= limit else shown[:limit] + "...")


# ---------------------------------------------------------------------- .npz
_NPZ_REQUIRED = ("format", "version", "n", "directed", "out_ptr", "out_idx", "content_hash")


def _load_npz(path: Path, opener: Callable[[], IO[bytes]], compressed: bool) -> Graph:
    where = str(path)
    target: Any = io.BytesIO(_guarded_read(opener, path)) if compressed else path
    try:
        loaded = np.load(target, allow_pickle=False)
        if not isinstance(loaded, np.lib.npyio.NpzFile):
            raise ValueError("the file holds a single array, not a .npz archive")
        with loaded as archive:
            arrays = {k: archive[k] for k in archive.files}
    except (zipfile.BadZipFile, zlib.error, ValueError, EOFError, KeyError) as exc:
        raise GraphFormatError(f"not a readable .npz archive: {exc}", path=where) from exc
    return _graph_from_npz(arrays, where)


def _graph_from_npz(arrays: dict[str, np.ndarray], where: str) -> Graph:
    def bad(message: str) -> GraphFormatError:
        return GraphFormatError(f"malformed blest graph archive: {message}", path=where)

    missing = [k for k in _NPZ_REQUIRED if k not in arrays]
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
    has_in = "in_ptr" in arrays or "in_idx" in arrays
    if has_in != directed:
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
    report = _report_from_json(arrays.get("report"), bad)
    graph = Graph.from_csr(
        out_ptr,
        out_idx,
        n,
        directed=directed,
        in_ptr=in_ptr,
        in_idx=in_idx,
        labels=labels,
        report=report,
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
    except (TypeError, ValueError, AttributeError) as exc:
        raise bad(f"unreadable report: {exc}") from None
