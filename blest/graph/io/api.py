"""``load_graph``: one entry point for files and in-memory graphs."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import scipy.sparse as sp

from blest.graph.core import Graph
from blest.graph.io import arrays, objects
from blest.graph.io.build import Options, adapt_graph
from blest.graph.io.detect import canonical_format, detect_format
from blest.graph.io.edgelist import load_edgelist
from blest.graph.io.files import open_graph_file
from blest.graph.io.metis import load_metis
from blest.graph.io.mtx import load_mtx
from blest.graph.io.npz import load_npz

__all__ = ["load_graph"]

_ACCEPTED = (
    "a file path, a blest.Graph, a scipy.sparse matrix, a networkx graph, a pandas DataFrame "
    "of edges, or an integer array of shape (2, E) or (E, 2) (NumPy, CuPy or DLPack)"
)


def load_graph(
    source: Any,
    *,
    directed: bool | None = None,
    relabel: bool = False,
    format: str | None = None,
    max_bytes: float | None = None,
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
        ``"graph"`` → METIS) instead of detecting it. Forcing a format the first bytes
        contradict (a Matrix Market banner, a zip archive) is an error.
    max_bytes : float, optional
        Refuse (``GraphLimitError``) a graph whose arrays would need more bytes than this
        (``math.inf``: no limit). By default the limit is the environment variable
        ``BLEST_MAX_GRAPH_BYTES`` (e.g. ``8G``) or else the memory available, and graphs whose
        ids are absurdly sparse (more than ``64 * 2 * arcs + 1_000_000`` vertices) are refused
        too, with a hint to pass ``relabel=True``; an explicit limit lifts that second check.

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
        more memory than the limit, or absurdly sparse ids (see ``max_bytes``).
    TypeError
        ``source`` is of an unsupported type.
    ValueError
        ``format`` is not one of :data:`FORMATS` or their aliases, or ``max_bytes`` is not
        positive.

    Notes
    -----
    File formats, detected from the first bytes (see :mod:`blest.graph.io.detect`), any of
    them gzip-compressed:

    - Matrix Market ``coordinate`` (``pattern``, ``real``, ``double``, ``integer`` or
      ``complex``): vertex ``i - 1`` for index ``i``; every stored entry is an arc.
    - Edge lists (``.txt``, ``.csv``, ``.tsv``, ``.el``, ``.wel``, ``.edges``, ...): one arc
      ``source target`` per line, 0-based ids; separators are spaces, tabs or commas;
      ``#`` / ``%`` comment lines and one header line are skipped; further columns (weights)
      are ignored.
    - METIS (``.graph``, ``.metis``): header ``n m [fmt [ncon]]``, then the 1-based
      neighbours of each vertex on its own line.
    - ``.npz``: a graph written by :func:`save_graph`.

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
    if max_bytes is not None and not max_bytes > 0:
        raise ValueError(f"max_bytes must be positive (math.inf for no limit), got {max_bytes}")
    opts = Options(directed=directed, relabel=bool(relabel), max_bytes=max_bytes)
    if isinstance(source, Graph):
        return adapt_graph(source, opts)
    if isinstance(source, (str, os.PathLike)):
        return _load_file(Path(source), opts, forced)
    return _load_object(source, opts)


def _load_file(path: Path, opts: Options, forced: str | None) -> Graph:
    f = open_graph_file(path)
    fmt = detect_format(f, forced)
    if fmt == "mtx":
        return load_mtx(f, opts)
    if fmt == "npz":
        return adapt_graph(load_npz(f), opts)
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
