"""Shared steps of every loader: load options, relabelling, and building the cleaned Graph."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from blest.errors import GraphLimitError
from blest.graph.core import MAX_VERTICES, Graph
from blest.graph.io.limits import check_graph_size

__all__ = ["Options", "adapt_graph", "build", "build_from_ids", "compact", "csr_arcs"]

EMPTY_IDS = np.empty(0, dtype=np.int64)


@dataclass(frozen=True)
class Options:
    """What the caller of ``load_graph`` asked for (see its docstring)."""

    directed: bool | None = None
    relabel: bool = False
    max_bytes: float | None = None
    one_based: bool = False

    def want_directed(self, default: bool) -> bool:
        """``directed`` as asked, or the input's own ``default``."""
        return default if self.directed is None else bool(self.directed)


def build(
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
        src, dst, kept = compact(src, dst)
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


def build_from_ids(
    src: np.ndarray, dst: np.ndarray, opts: Options, *, where: str, format: str
) -> Graph:
    """A graph from non-negative integer ids whose vertex count is the largest id + 1.

    Directed unless ``opts.directed`` is False (then the reverse of every arc is added).
    """
    top = max(int(src.max()), int(dst.max())) if src.size else -1
    if not opts.relabel and top >= MAX_VERTICES:
        raise GraphLimitError(
            f"{where}: vertex id {top} needs a graph of {top + 1} vertices; blest supports "
            f"at most {MAX_VERTICES} (pass relabel=True to compact sparse ids)"
        )
    want = opts.want_directed(True)
    n = 0 if opts.relabel else top + 1
    check_graph_size(
        top + 1,
        int(src.size),
        directed=want,
        where=where,
        max_bytes=opts.max_bytes,
        relabel=opts.relabel,
    )
    return build(
        src,
        dst,
        n,
        directed=want,
        relabel=opts.relabel,
        source=where,
        format=format,
        symmetrized=not want,
    )


def compact(src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ids compacted to 0..k-1 in increasing order of the original id, and the k originals."""
    if src.size == 0:
        return src.astype(np.int32), dst.astype(np.int32), EMPTY_IDS.copy()
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


def csr_arcs(graph: Graph) -> tuple[np.ndarray, np.ndarray]:
    """The arcs of ``graph`` as (tail, head) arrays in out_csr order."""
    tails = np.repeat(np.arange(graph.n, dtype=np.int32), np.diff(graph.out_ptr))
    return tails, graph.out_idx


def adapt_graph(graph: Graph, opts: Options) -> Graph:
    """``graph`` itself, or a copy made directed, undirected or relabelled."""
    want = opts.want_directed(graph.directed)
    if want == graph.directed and not opts.relabel:
        return graph
    report = graph.report
    if not opts.relabel and want:  # undirected → directed: the same arcs, each now one-way
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
    src, dst = csr_arcs(graph)
    return build(
        src,
        dst,
        graph.n,
        directed=want,
        relabel=opts.relabel,
        labels=graph.labels,
        source=report.source,
        format=report.format or "blest",
        symmetrized=graph.directed and not want,
    )
