"""``load_graph``: one entry point for files and in-memory graphs."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import scipy.sparse as sp

from blest.errors import ArgumentError, GraphFormatError, GraphLimitError
from blest.graph.core import Graph
from blest.graph.io import arrays, objects
from blest.graph.io.build import Options, adapt_graph
from blest.graph.io.detect import (
    canonical_format,
    detect_format,
    name_format,
    other_reading,
    warn_if_metis_too,
)
from blest.graph.io.edgelist import load_edgelist
from blest.graph.io.files import GraphFile, open_graph_file
from blest.graph.io.limits import ENV_MAX_BYTES, check_max_bytes, human_bytes, memory_limit
from blest.graph.io.metis import load_metis
from blest.graph.io.mtx import load_mtx
from blest.graph.io.npz import load_npz
from blest.inputs import GraphInput

__all__ = ["load_graph"]

_ACCEPTED = (
    "a file path, a blest.Graph, a scipy.sparse matrix, a networkx graph, a pandas DataFrame "
    "of edges, or an integer array of shape (2, E) or (E, 2) (NumPy, CuPy or DLPack)"
)


def load_graph(
    source: GraphInput,
    *,
    directed: bool | None = None,
    relabel: bool = False,
    format: str | None = None,
    max_bytes: float | None = None,
    one_based: bool = False,
) -> Graph:
    """Load a graph from a file or an in-memory object into a cleaned :class:`Graph`.

    Parameters
    ----------
    source : path, Graph, scipy.sparse matrix, networkx graph, DataFrame or array
        A file path (see Notes for the formats), or an object:

        - A SciPy sparse matrix or array: a stored entry ``(i, j)`` is the arc ``i → j``.
        - A NetworkX graph (duck-typed: ``is_directed``, ``nodes``, ``edges``).
        - An integer array of shape ``(2, E)`` (``edge_index``: row 0 sources, row 1
          targets; ``(2, 2)`` is read this way) or ``(E, 2)`` (one arc per row): NumPy, CuPy
          (copied to the host) or any array with ``__dlpack__``. Floats that are whole
          numbers are accepted.
        - A pandas DataFrame: its ``source`` / ``target`` columns, else its first two; ids
          that are not all integers (names) are always relabelled, sorted, with
          ``graph.labels`` holding them.
        - A :class:`Graph`: returned as it is, unless ``directed`` or ``relabel`` asks for
          a change.
    directed : bool, optional
        ``None`` (default) takes the input's own directedness: Matrix Market ``general`` →
        directed, ``symmetric`` / ``skew-symmetric`` / ``hermitian`` → undirected; edge
        lists and arrays → directed; METIS → undirected; SciPy → directed unless the pattern
        is symmetric; NetworkX → ``G.is_directed()``; ``.npz`` and :class:`Graph` → as
        stored. ``False`` on a directed input adds the reverse of every arc
        (``report.symmetrized``). ``True`` on an undirected in-memory graph, METIS file or
        ``.npz`` keeps both arcs of every edge as a directed graph, but on a symmetric Matrix
        Market file it is an error (the file stores half of the arcs).
    relabel : bool, default False
        Compact the vertex ids to ``0 .. k-1`` over the ids that occur in at least one arc
        (self loops included), in increasing order of the original id; ``graph.labels[i]``
        is the original id of vertex ``i`` (int64; for Matrix Market and METIS the 0-based
        index). Without it, ids are kept as written: ``n = max id + 1`` for edge lists and
        arrays, and ids that never occur are isolated vertices. NetworkX graphs whose nodes
        are not the integers ``0 .. n-1`` are always relabelled, in ``G.nodes`` order, and
        keep their isolated nodes.
    format : {"mtx", "edgelist", "npz", "metis"}, optional
        Force a file reader (aliases: ``"el"``, ``"wel"`` → edge list, ``"mm"`` → mtx,
        ``"graph"`` → METIS) instead of taking the one the file name says. Forcing a format
        the first bytes contradict (a Matrix Market banner, a zip archive) is an error.
    max_bytes : float, optional
        Refuse (``GraphLimitError``) a graph whose arrays would need more bytes than this
        (``math.inf``: no limit). By default the limit is the environment variable
        ``BLEST_MAX_GRAPH_BYTES`` (e.g. ``8G``) or else the memory available, and graphs whose
        ids are absurdly sparse (more than ``64 * 2 * arcs + 1_000_000`` vertices) are refused
        too, with a hint to pass ``relabel=True``; an explicit limit lifts that second check.
        The same limit caps the bytes a gzip file may expand to.
    one_based : bool, default False
        Edge-list files only: the ids start at 1, so id ``i`` is vertex ``i - 1`` (as in
        Matrix Market) and an id 0 is an error. Without it a 1-based file gets an extra
        isolated vertex 0.

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
        The file or object is not a graph: not a regular file (directory, device, FIFO,
        socket), empty file, bad Matrix Market banner or size line, dense ``array`` Matrix
        Market, non-square matrix, index out of range, too few or too many entries, a line
        with one column, a non-numeric or negative id, no edges in an edge list, a METIS file
        whose counts or symmetry are wrong, ``directed=True`` on a symmetric Matrix Market
        file, corrupt or truncated gzip or ``.npz``, an array of the wrong shape or dtype.
        ``err.path`` names the file and ``err.line`` the 1-based line.
    GraphLimitError
        More than ``MAX_VERTICES`` (2**31 - 2) vertices (checked on the Matrix Market size
        line or METIS header before anything is allocated, and on each edge-list id), or
        more memory than the limit, or absurdly sparse ids (see ``max_bytes``), or a gzip
        stream that expands past the limit, or memory ran out while loading.
    ArgumentError
        ``max_bytes`` is not a positive number, the environment variable
        ``BLEST_MAX_GRAPH_BYTES`` is not a byte count, or ``one_based`` is given for an input
        that is not an edge-list file (also a ``ValueError``).
    TypeError
        ``source`` is of an unsupported type.
    ValueError
        ``format`` is not one of :data:`FORMATS` or their aliases.

    Notes
    -----
    File formats, chosen by the file name unless the content declares its own (a Matrix Market
    banner, a zip archive) or ``format`` forces one; a file of no known name is judged by its
    first bytes (see :mod:`blest.graph.io.detect`). Any of them may be gzip-compressed:

    - Matrix Market ``coordinate`` (``pattern``, ``real``, ``double``, ``integer`` or
      ``complex``): vertex ``i - 1`` for index ``i``; every stored entry is an arc.
    - Edge lists (``.txt``, ``.csv``, ``.tsv``, ``.el``, ``.wel``, ``.edges``, ...): one arc
      ``source target`` per line, 0-based ids; separators are spaces, tabs or commas;
      ``#`` / ``%`` comment lines and one header line are skipped; further columns (weights)
      are ignored.
    - METIS (``.graph``, ``.metis``): header ``n m [fmt [ncon]]``, then the 1-based
      neighbours of each vertex on its own line.
    - ``.npz``: a graph written by :func:`save_graph`, or a SciPy sparse matrix written by
      ``scipy.sparse.save_npz`` (read as a SciPy matrix passed in memory is: directed unless
      its pattern is symmetric; only the arrays of its structure are read).

    Examples
    --------
    >>> import blest, numpy as np, scipy.sparse as sp
    >>> g = blest.load_graph(sp.coo_array(([1, 1], ([0, 1], [1, 2])), shape=(3, 3)))
    >>> g
    <blest.Graph directed n=3 arcs=2>
    >>> g.out_idx.tolist(), g.in_idx.tolist()
    ([1, 2], [0, 1])
    >>> blest.load_graph(g, directed=False).nnz
    4
    >>> blest.load_graph(np.array([[0, 1], [1, 2]])).out_idx.tolist()
    [1, 2]
    """
    forced = canonical_format(format)
    max_bytes = check_max_bytes(max_bytes)
    memory_limit(max_bytes)  # a malformed BLEST_MAX_GRAPH_BYTES is refused before any work
    opts = Options(
        directed=directed, relabel=bool(relabel), max_bytes=max_bytes, one_based=bool(one_based)
    )
    is_path = isinstance(source, (str, os.PathLike))
    if opts.one_based and not (is_path and forced in (None, "edgelist")):
        raise ArgumentError(
            "one_based=True applies to edge-list files only (Matrix Market and METIS files "
            "number their vertices from 1 already)"
        )
    if isinstance(source, Graph):
        return adapt_graph(source, opts)
    try:
        if is_path:
            return _load_file(Path(source), opts, forced)  # type: ignore[arg-type]
        return _load_object(source, opts)
    except MemoryError:
        limit = memory_limit(max_bytes)
        shown = "none" if limit.nbytes is None else human_bytes(limit.nbytes)
        raise GraphLimitError(
            f"{source if is_path else type(source).__name__}: out of memory while loading the "
            f"graph (limit {shown}, {limit.origin}); free memory, or set a lower "
            f"{ENV_MAX_BYTES} so that graphs too large are refused before loading"
        ) from None


def _load_file(path: Path, opts: Options, forced: str | None) -> Graph:
    f = open_graph_file(path)
    fmt = detect_format(f, forced)
    if opts.one_based and fmt != "edgelist":
        raise ArgumentError(
            f"one_based=True applies to edge lists, and {path} is read as {fmt} (Matrix Market "
            "and METIS number their vertices from 1 already)"
        )
    try:
        graph = _read(f, fmt, opts)
    except GraphFormatError as exc:
        hint = None if forced is not None else other_reading(f, fmt)
        if hint is None or exc.path != f.where:
            raise
        raise GraphFormatError(f"{exc.reason}; {hint}", path=exc.path, line=exc.line) from None
    if forced is None and fmt == "edgelist" and name_format(f) == "edgelist":
        warn_if_metis_too(f, stacklevel=3)
    return graph


def _read(f: GraphFile, fmt: str, opts: Options) -> Graph:
    if fmt == "mtx":
        return load_mtx(f, opts)
    if fmt == "npz":
        return load_npz(f, opts)
    if fmt == "metis":
        return load_metis(f, opts)
    return load_edgelist(f, opts)


def _load_object(source: Any, opts: Options) -> Graph:
    if sp.issparse(source):
        return objects.from_scipy(source, opts)
    if objects.is_networkx(source):
        return objects.from_networkx(source, opts)
    if arrays.is_dataframe(source):
        return arrays.from_dataframe(source, opts)
    table = arrays.host_array(source)
    if table is not None:
        kind = "numpy" if table is source else type(source).__name__
        return arrays.from_array(table, opts, kind=kind)
    raise TypeError(f"load_graph expects {_ACCEPTED}; got {type(source).__name__}")
