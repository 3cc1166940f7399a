"""The cleaned graph every other stage reads: out- and in-adjacency in CSR form.

Conventions (DESIGN.md, "Graph conventions"): vertex ids are 0-based; an edge u→v is an arc;
``out_csr`` row u lists the out-neighbours of u (CSC of the paper's transposed adjacency A,
read by BVSS and JaccardWithWindows), ``in_csr`` row v lists the in-neighbours of v (CSR of A,
read by the bottom-up kernel). An undirected graph stores both arcs of every edge, and its
``out_csr`` and ``in_csr`` share their arrays. Self loops and duplicate arcs are dropped and
counted.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from blest.errors import GraphLimitError

__all__ = ["Graph", "CleaningReport", "MAX_VERTICES"]

#: Levels are int32 with -1 for unreachable, so a vertex id must stay below 2**31 - 1.
MAX_VERTICES = 2**31 - 2


@dataclass(frozen=True)
class CleaningReport:
    """What loading dropped or changed: counts of arcs, not of vertices."""

    self_loops: int = 0
    duplicates: int = 0
    source: str | None = None
    format: str | None = None

    def summary(self) -> str:
        return f"dropped {self.self_loops} self loops and {self.duplicates} duplicate arcs"


def _check_n(n: int) -> None:
    if n < 0:
        raise GraphLimitError(f"vertex count must be >= 0, got {n}")
    if n > MAX_VERTICES:
        raise GraphLimitError(
            f"graph has {n} vertices; blest supports at most {MAX_VERTICES} "
            "(levels are int32 with -1 for unreachable)"
        )


def _csr_from_sorted_keys(keys: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR (int64 row pointers, int32 columns) from sorted unique keys row * n + col."""
    rows = keys // max(n, 1)
    cols = (keys - rows * n).astype(np.int32)
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=ptr[1:])
    return ptr, cols


@dataclass(frozen=True, eq=False)
class Graph:
    """A cleaned graph in both adjacency directions.

    Build one with :func:`blest.load_graph` or :meth:`Graph.from_arcs`; the arrays are
    read-only once built.

    Attributes
    ----------
    n : int
        Number of vertices (ids ``0 .. n-1``).
    directed : bool
        False when every edge is stored as two arcs.
    out_ptr, out_idx : ndarray
        ``out_csr``: int64 row pointers (n + 1) and int32 sorted out-neighbours.
    in_ptr, in_idx : ndarray
        ``in_csr``: the same for in-neighbours (the same arrays when undirected).
    labels : ndarray or None
        When the input was relabelled, ``labels[i]`` is the user's label of vertex i.
    report : CleaningReport
        Self loops and duplicates dropped, and where the graph came from.
    """

    n: int
    directed: bool
    out_ptr: np.ndarray
    out_idx: np.ndarray
    in_ptr: np.ndarray
    in_idx: np.ndarray
    labels: np.ndarray | None = None
    report: CleaningReport = field(default_factory=CleaningReport)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_arcs(
        cls,
        src: np.ndarray,
        dst: np.ndarray,
        n: int,
        *,
        directed: bool,
        labels: np.ndarray | None = None,
        source: str | None = None,
        format: str | None = None,
    ) -> Graph:
        """Clean a list of arcs ``src[i] → dst[i]`` into a graph on ``n`` vertices.

        Undirected input may list each edge once or twice; both arcs are stored. Self loops
        and repeated arcs are dropped and counted in :attr:`report`.
        """
        _check_n(int(n))
        n = int(n)
        src = np.asarray(src, dtype=np.int64).ravel()
        dst = np.asarray(dst, dtype=np.int64).ravel()
        if src.shape != dst.shape:
            raise ValueError("src and dst must have the same length")
        if src.size and (
            min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= max(n, 1) or n == 0
        ):
            raise GraphLimitError(f"arc endpoint out of range for a graph of {n} vertices")
        loops = src == dst
        n_loops = int(np.count_nonzero(loops))
        if n_loops:
            keep = ~loops
            src, dst = src[keep], dst[keep]
        if not directed:
            src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
        keys = src * n + dst if n else src
        del src, dst
        keys.sort()
        if keys.size:
            first = np.empty(keys.size, dtype=bool)
            first[0] = True
            np.not_equal(keys[1:], keys[:-1], out=first[1:])
            unique = keys[first]
        else:
            unique = keys
        # Undirected: an edge listed in both directions counts as duplicate arcs too.
        n_dup = int(keys.size - unique.size)
        out_ptr, out_idx = _csr_from_sorted_keys(unique, n)
        if directed:
            in_ptr, in_idx = _transpose(out_ptr, out_idx, n)
        else:
            in_ptr, in_idx = out_ptr, out_idx
        report = CleaningReport(self_loops=n_loops, duplicates=n_dup, source=source, format=format)
        return cls.from_csr(
            out_ptr, out_idx, n, directed=directed, in_ptr=in_ptr, in_idx=in_idx,
            labels=labels, report=report,
        )

    @classmethod
    def from_csr(
        cls,
        out_ptr: np.ndarray,
        out_idx: np.ndarray,
        n: int,
        *,
        directed: bool,
        in_ptr: np.ndarray | None = None,
        in_idx: np.ndarray | None = None,
        labels: np.ndarray | None = None,
        report: CleaningReport | None = None,
    ) -> Graph:
        """Wrap already-clean CSR arrays (sorted, no loops, no duplicates); no copy is made."""
        _check_n(int(n))
        out_ptr = np.asarray(out_ptr, dtype=np.int64)
        out_idx = np.asarray(out_idx, dtype=np.int32)
        if in_ptr is None or in_idx is None:
            if directed:
                in_ptr, in_idx = _transpose(out_ptr, out_idx, int(n))
            else:
                in_ptr, in_idx = out_ptr, out_idx
        arrays = [out_ptr, out_idx, np.asarray(in_ptr, np.int64), np.asarray(in_idx, np.int32)]
        for a in arrays:
            a.flags.writeable = False
        return cls(
            n=int(n), directed=bool(directed), out_ptr=arrays[0], out_idx=arrays[1],
            in_ptr=arrays[2], in_idx=arrays[3], labels=labels,
            report=report if report is not None else CleaningReport(),
        )

    # ------------------------------------------------------------------ views
    @property
    def nnz(self) -> int:
        """Number of arcs (an undirected edge counts twice)."""
        return int(self.out_idx.size)

    @property
    def out_csr(self) -> sp.csr_matrix:
        """n×n CSR matrix whose row u holds the out-neighbours of u (pattern, int8 ones)."""
        return _csr(self.out_ptr, self.out_idx, self.n)

    @property
    def in_csr(self) -> sp.csr_matrix:
        """n×n CSR matrix whose row v holds the in-neighbours of v."""
        return _csr(self.in_ptr, self.in_idx, self.n)

    @property
    def out_degree(self) -> np.ndarray:
        return np.diff(self.out_ptr)

    @property
    def in_degree(self) -> np.ndarray:
        return np.diff(self.in_ptr)

    @property
    def isolated(self) -> int:
        """Vertices with neither in- nor out-arcs."""
        return int(np.count_nonzero((self.out_degree == 0) & (self.in_degree == 0)))

    def content_hash(self) -> str:
        """SHA-256 of n, directedness and the out_csr arrays: equal for equal cleaned graphs."""
        h = hashlib.sha256()
        h.update(f"blest-graph-v1 n={self.n} directed={int(self.directed)}".encode())
        h.update(np.ascontiguousarray(self.out_ptr, dtype="<i8").tobytes())
        h.update(np.ascontiguousarray(self.out_idx, dtype="<i4").tobytes())
        return h.hexdigest()

    def __repr__(self) -> str:
        kind = "directed" if self.directed else "undirected"
        return f"<blest.Graph {kind} n={self.n} arcs={self.nnz}>"


def _csr(ptr: np.ndarray, idx: np.ndarray, n: int) -> sp.csr_matrix:
    data = np.ones(idx.size, dtype=np.int8)
    return sp.csr_matrix((data, idx, ptr), shape=(n, n))


def _transpose(ptr: np.ndarray, idx: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR of the transpose, columns sorted within each row."""
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(ptr))
    keys = idx.astype(np.int64) * n + rows
    keys.sort()
    return _csr_from_sorted_keys(keys, n)
