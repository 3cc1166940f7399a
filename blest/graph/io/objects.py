"""In-memory graphs: SciPy sparse matrices and NetworkX graphs.

A SciPy matrix's stored entry ``(i, j)`` (explicit zeros included) is the arc ``i → j``; the
graph is directed unless the pattern is symmetric. A NetworkX graph is directed when
``G.is_directed()``; nodes that are not exactly the integers ``0 .. n-1`` are relabelled in
``G.nodes`` order (isolated nodes kept), with ``graph.labels`` holding the nodes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from blest.errors import GraphFormatError, GraphLimitError
from blest.graph.core import MAX_VERTICES, Graph
from blest.graph.io.build import Options, build
from blest.graph.io.limits import check_graph_size

__all__ = ["from_networkx", "from_scipy", "is_networkx"]

_INT64_MAX = 2**63 - 1


def from_scipy(
    matrix: Any, opts: Options, *, path: str | None = None, format: str = "scipy"
) -> Graph:
    """A graph from a square SciPy sparse matrix or array (``path``: the file it came from)."""
    shape = matrix.shape
    if len(shape) != 2 or shape[0] != shape[1]:
        raise GraphFormatError(
            f"a {' x '.join(map(str, shape))} sparse matrix is not an adjacency matrix: "
            "it must be square",
            path=path,
        )
    n = int(shape[0])
    where = path or f"scipy.sparse {type(matrix).__name__}"
    if n > MAX_VERTICES:
        raise GraphLimitError(
            f"{where}: matrix has {n} rows; blest supports at most {MAX_VERTICES}"
        )
    check_graph_size(
        n,
        int(matrix.nnz),
        directed=opts.directed is not False,
        where=where,
        max_bytes=opts.max_bytes,
        relabel=opts.relabel,
    )
    coo = sp.coo_array(matrix)  # stored entries, explicit zeros included
    src, dst = coo.row, coo.col
    as_directed = build(
        src, dst, n, directed=True, relabel=opts.relabel, source=where, format=format
    )
    symmetric = np.array_equal(as_directed.out_ptr, as_directed.in_ptr) and np.array_equal(
        as_directed.out_idx, as_directed.in_idx
    )
    if opts.want_directed(not symmetric):
        return as_directed
    if symmetric:  # both arcs already stored: the same arrays, read as undirected
        g = as_directed
        return Graph.from_csr(
            g.out_ptr, g.out_idx, g.n, directed=False, labels=g.labels, report=g.report
        )
    return build(
        src,
        dst,
        n,
        directed=False,
        relabel=opts.relabel,
        symmetrized=True,
        source=where,
        format=format,
    )


def is_networkx(obj: Any) -> bool:
    """Duck-typed NetworkX graph: ``is_directed``, ``nodes`` and ``edges``."""
    return all(hasattr(obj, a) for a in ("is_directed", "nodes", "edges"))


def from_networkx(nx_graph: Any, opts: Options) -> Graph:
    """A graph from a NetworkX graph (see the module docstring)."""
    nodes = list(nx_graph.nodes)
    n = len(nodes)
    is_directed = bool(nx_graph.is_directed())
    want = opts.want_directed(is_directed)
    plain = all(_is_int(v) for v in nodes) and set(nodes) == set(range(n))
    m = nx_graph.number_of_edges()
    where = f"networkx {type(nx_graph).__name__}"
    check_graph_size(n, m, directed=want, where=where, max_bytes=opts.max_bytes, sparse_ids=False)
    if plain and not opts.relabel:
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
        source=where,
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
