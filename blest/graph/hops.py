"""Two levels a phase: the BVSS of B = A + A^2 with each slice's "near" mask (``hops=2``).

A vertex at BFS level L + 1 has an in-neighbour at level L; one at level L + 2 is two arcs from
a vertex at level L, and every vertex one or two arcs from level L is at level L + 2 at most. So
the ``hops=2`` kernels expand F_L over the slices of B, whose row i has a nonzero in column j
when j -> i or j -> k -> i (i != j), and offer a reached row L + 1 when one of its arcs from F_L
is an arc of A, L + 2 otherwise (docs/algorithm.md, "Two levels a phase").

B's BVSS has the layout of any BVSS (:mod:`blest.graph.bvss`), plus ``near_masks``: beside each
lane's mask word, the bits of its slices that are arcs of A (a subset of the mask's bits).

Affordable where vertices have few arcs: B has sum over k of indeg(k) * outdeg(k) arcs at most
(:func:`two_hop_arcs_bound`); a mesh or a road network has a few times A's arcs, a power-law
graph's hubs make B dense.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from blest.graph.bvss import BVSS, build_bvss
from blest.graph.core import Graph

__all__ = ["two_hop_graph", "two_hop_bvss", "near_masks", "two_hop_arcs_bound", "TWO_HOP_RATIO"]

#: The tuner and the engine take ``hops=2`` only where :func:`two_hop_arcs_bound` is at most
#: this many times the graph's arcs (delaunay-20: 6.0; luxembourg_osm: 2.4; kron-21: above 500).
TWO_HOP_RATIO = 8.0


def two_hop_arcs_bound(graph: Graph) -> int:
    """An upper bound on B's arcs: A's plus one per path j -> k -> i (sum of in x out degree)."""
    inner = np.dot(graph.in_degree.astype(np.float64), graph.out_degree.astype(np.float64))
    return int(graph.nnz + inner)


def two_hop_graph(in_ptr: Any, in_idx: Any, n: int) -> Graph:
    """The graph of B = A + A^2 without loops, from A's in-adjacency (CSR of A: row i lists
    the j with j -> i); directed, whatever A's directedness (B of an undirected graph is
    symmetric, but only the BVSS reads it)."""
    ptr, idx = np.asarray(in_ptr, dtype=np.int64), np.asarray(in_idx, dtype=np.int32)
    a = sp.csr_matrix((np.ones(idx.size, dtype=np.int32), idx, ptr), shape=(n, n))
    b = a @ a + a
    b.setdiag(0)
    b.eliminate_zeros()
    b.sort_indices()
    b_out = b.T.tocsr()  # out-lists: the BVSS reads CSC(B)
    b_out.sort_indices()
    return Graph.from_csr(
        b_out.indptr.astype(np.int64),
        b_out.indices.astype(np.int32),
        n,
        directed=True,
        in_ptr=b.indptr.astype(np.int64),
        in_idx=b.indices.astype(np.int32),
    )


def near_masks(in_ptr: Any, in_idx: Any, b: BVSS) -> np.ndarray:
    """For each lane's mask word of ``b`` (B's BVSS), the bits of its slices that are arcs of A
    (A's in-adjacency ``in_ptr``/``in_idx``): slot k of lane l holds row r of set s, and its
    sigma bits get bit c where s * sigma + c -> r in A."""
    sigma, theta, tau = b.sigma, b.theta, b.tau
    n_sets = b.n_slice_sets
    ptr, idx = np.asarray(in_ptr, dtype=np.int64), np.asarray(in_idx, dtype=np.int64)
    rows = np.repeat(np.arange(b.n, dtype=np.int64), np.diff(ptr))
    key = rows * n_sets + idx // sigma
    bit = np.left_shift(np.uint32(1), (idx % sigma).astype(np.uint32))
    order = np.argsort(key, kind="stable")
    key, bit = key[order], bit[order]
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if key.size else key[:0]
    ukey = key[starts]
    umask = np.bitwise_or.reduceat(bit, starts) if key.size else bit[:0]
    slot_rows = np.asarray(b.row_ids, dtype=np.int64)
    slot_sets = np.repeat(np.asarray(b.virtual_to_real, dtype=np.int64), tau)
    want = slot_rows * n_sets + slot_sets
    near = np.zeros(want.size, dtype=np.uint32)
    if ukey.size:
        at = np.minimum(np.searchsorted(ukey, want), ukey.size - 1)
        near = np.where(ukey[at] == want, umask[at], np.uint32(0)).astype(np.uint32)
    # Slot t is slot k = t % theta of lane (t % tau) // theta: its bits sit at k * sigma.
    shift = ((np.arange(want.size) % theta) * sigma).astype(np.uint32)
    words = np.left_shift(near, shift).reshape(-1, theta)
    near_words = np.bitwise_or.reduce(words, axis=1).astype(np.uint32)
    masks = np.asarray(b.masks, dtype=np.uint32)
    near_words &= masks  # padding slots (mask 0) repeat a row id: they claim nothing
    return near_words


def two_hop_bvss(in_ptr: Any, in_idx: Any, n: int, sigma: int, *, xp: Any = None) -> BVSS:
    """B's BVSS at ``sigma`` with its ``near_masks`` (NumPy arrays, or CuPy with ``xp=cupy``,
    which builds the BVSS on the GPU; B and the near masks are computed on the CPU)."""
    ptr, idx = _host(in_ptr), _host(in_idx)
    b = build_bvss(two_hop_graph(ptr, idx, n), sigma, xp=xp)
    near = near_masks(ptr, idx, b.to_numpy())
    if xp is not None and xp is not np:
        near = xp.asarray(near)
    return BVSS(sigma, n, b.nnz, b.row_ids, b.masks, b.real_ptrs, b.virtual_to_real,
                b.real_slices, near)  # fmt: skip


def _host(a: Any) -> np.ndarray:
    return a.get() if hasattr(a, "get") else np.asarray(a)
