"""Vertex orderings: permutations that relabel a graph before its BVSS is built.

A permutation is stored both ways as int32: ``new_of_old[u]`` is the internal id of user
vertex u, ``old_of_new[v]`` the user id of internal vertex v. Kernels write results through
``old_of_new`` so every API returns the user's ids.

Orderings here (:data:`ORDERINGS`, computed by name with :func:`compute_ordering`): natural
(identity); reverse Cuthill-McKee (SciPy's, on the symmetrized pattern), which tightens row ids
inside VSSs on road-like graphs; JaccardWithWindows (Blest Alg. 1, :mod:`blest.graph.jaccard`),
which packs columns with common out-neighbours into slice sets on scale-free-like graphs.
:func:`blest.graph.classify.default_ordering` picks between the last two as the paper does.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import reverse_cuthill_mckee

from blest.defaults import DEFAULT_SIGMA, JACCARD_WINDOW
from blest.errors import ArgumentError
from blest.graph import jaccard
from blest.graph.core import Graph, _csr_from_sorted_keys, _halves

__all__ = [
    "Permutation",
    "identity",
    "rcm",
    "permute_graph",
    "compute_ordering",
    "jaccard_with_windows",
    "ORDERINGS",
]

ORDERINGS = ("natural", "rcm", "jaccard")


@dataclass(frozen=True, eq=False)
class Permutation:
    """A relabelling of vertex ids, kept in both directions (int32).

    ``name`` is the ordering actually computed; ``notes`` holds one-line notices about how it
    was obtained (e.g. a fallback to RCM), for the tuner to record.
    """

    new_of_old: np.ndarray
    old_of_new: np.ndarray
    name: str = "custom"
    notes: tuple[str, ...] = ()

    @classmethod
    def from_old_of_new(cls, old_of_new: np.ndarray, name: str = "custom") -> Permutation:
        old_of_new = np.asarray(old_of_new, dtype=np.int32)
        n = old_of_new.size
        new_of_old = np.full(n, -1, dtype=np.int32)
        new_of_old[old_of_new] = np.arange(n, dtype=np.int32)
        if (new_of_old < 0).any():
            raise ArgumentError("old_of_new is not a permutation")
        return cls(new_of_old, old_of_new, name)

    @cached_property
    def is_identity(self) -> bool:
        """Whether every vertex keeps its id (computed once: engines ask at construction, and
        on 4M vertices the comparison costs 20-30 ms)."""
        return bool(np.array_equal(self.old_of_new, np.arange(self.old_of_new.size)))


def identity(n: int) -> Permutation:
    ids = np.arange(n, dtype=np.int32)
    return Permutation(ids, ids.copy(), "natural")


def rcm(graph: Graph) -> Permutation:
    """Reverse Cuthill-McKee on the symmetrized pattern (SciPy); works for directed graphs."""
    pattern = graph.out_csr
    if graph.directed:
        pattern = (pattern + graph.in_csr).tocsr()
    pattern = sp.csr_matrix(pattern)
    pattern.sort_indices()
    old_of_new = reverse_cuthill_mckee(pattern, symmetric_mode=True)
    return Permutation.from_old_of_new(old_of_new, "rcm")


def compute_ordering(
    graph: Graph,
    name: str,
    *,
    sigma: int = DEFAULT_SIGMA,
    window: int = JACCARD_WINDOW,
    W: int | None = None,
) -> Permutation:
    """The permutation of ordering ``name`` (one of :data:`ORDERINGS`), on the CPU.

    ``sigma`` and ``window`` (alias ``W``, the config's key) parametrize JaccardWithWindows;
    without Numba, "jaccard" returns RCM with a note (see
    :func:`jaccard_with_windows`); ``natural`` and ``rcm`` ignore them.
    :func:`blest.runtime.device_ordering.device_ordering` adds the GPU kernel.
    """
    if name == "natural":
        return identity(graph.n)
    if name == "rcm":
        return rcm(graph)
    if name == "jaccard":
        return jaccard_with_windows(graph, sigma, window if W is None else W)
    raise ArgumentError(f"unknown ordering {name!r}; known: {', '.join(ORDERINGS)}")


def permute_graph(graph: Graph, perm: Permutation) -> Graph:
    """The same graph with vertex u renamed ``perm.new_of_old[u]`` (CSR arrays rebuilt)."""
    n = graph.n
    out_ptr, out_idx = _relabel_csr(graph.out_ptr, graph.out_idx, perm.new_of_old, n)
    if not graph.directed:
        return Graph.from_csr(out_ptr, out_idx, n, directed=False, report=graph.report)
    in_ptr, in_idx = _relabel_csr(graph.in_ptr, graph.in_idx, perm.new_of_old, n)
    return Graph.from_csr(
        out_ptr, out_idx, n, directed=True, in_ptr=in_ptr, in_idx=in_idx, report=graph.report
    )


def _relabel_csr(
    ptr: np.ndarray, idx: np.ndarray, new_of_old: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray]:
    """The CSR with every id u renamed ``new_of_old[u]``: one int64 key (row, column) per arc,
    both halves written in place, one sort (8 bytes an arc, plus the new columns)."""
    keys = np.empty(idx.size, dtype=np.int64)
    rows, cols = _halves(keys)
    new_of_old = np.asarray(new_of_old, dtype=np.int32)
    step = 1 << 24  # rows by pieces: no temporary of one entry per arc
    for lo in range(0, n, step):
        hi = min(lo + step, n)
        a, b = int(ptr[lo]), int(ptr[hi])
        rows[a:b] = np.repeat(new_of_old[lo:hi], np.diff(ptr[lo : hi + 1]))
        cols[a:b] = new_of_old[idx[a:b]]
    keys.sort()
    return _csr_from_sorted_keys(keys, n)


def jaccard_with_windows(
    graph: Graph, sigma: int = DEFAULT_SIGMA, window: int = JACCARD_WINDOW
) -> Permutation:
    """The JaccardWithWindows :class:`Permutation` of ``graph`` on the CPU.

    Runs :func:`jaccard_cpu` (Numba). Without Numba the result is RCM, named ``"rcm"``, with a
    one-line note in ``notes`` (also issued as an :class:`OrderingFallbackWarning`). The GPU
    kernel is dispatched by :func:`blest.runtime.device_ordering.device_ordering`.
    """
    jaccard.check_parameters(graph, sigma, window)
    if not jaccard.have_numba():
        note = jaccard.NUMBA_MISSING
        warnings.warn(note, jaccard.OrderingFallbackWarning, stacklevel=2)
        fallback = rcm(graph)
        return Permutation(fallback.new_of_old, fallback.old_of_new, "rcm", (note,))
    return Permutation.from_old_of_new(jaccard.jaccard_cpu(graph, sigma, window), "jaccard")
