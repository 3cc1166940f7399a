"""Several levels a phase: the BVSS of B = A + A^2 (+ A^3) with each slice's "near" masks
(``hops=2`` and ``hops=3``).

A vertex at BFS level L + d has a path of d arcs from level L and none shorter from any level
up to L. So the ``hops=K`` kernels expand F_L over the slices of B = A + ... + A^K, whose row i
has a nonzero in column j when i is one to K arcs from j (i != j), and offer a reached row
L + d, d the fewest arcs from F_L that its slice's masks show: the near mask of distance d holds
the bits of the columns at most d arcs away (docs/algorithm.md, "Several levels a phase").

B's BVSS has the layout of any BVSS (:mod:`blest.graph.bvss`), plus ``near_masks``, K - 1 rows:
row d - 1 holds, beside each lane's mask word, the bits of its slices that are arcs of
A + ... + A^d (subsets of the mask's bits, each of the next).

Affordable where vertices have few arcs: B has sum over k of indeg(k) * outdeg(k) arcs at most
(:func:`two_hop_arcs_bound`); a mesh or a road network has a few times A's arcs, a power-law
graph's hubs make B dense.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from blest.graph.bvss import BVSS, build_bvss, to_host
from blest.graph.core import Graph

__all__ = [
    "reach_matrices",
    "hop_graph",
    "hops_bvss",
    "near_masks",
    "two_hop_arcs_bound",
    "TWO_HOP_RATIO",
]

#: The tuner takes ``hops`` > 1 only where :func:`two_hop_arcs_bound` is at most this many times
#: the graph's arcs (delaunay-20: 6.0; luxembourg_osm: 2.4; kron-21: above 500). B of three hops
#: then stays within a few times A too (delaunay-20: 6.6x, luxembourg_osm: 3.5x).
TWO_HOP_RATIO = 8.0


def two_hop_arcs_bound(graph: Graph) -> int:
    """An upper bound on B's arcs: A's plus one per path j -> k -> i (sum of in x out degree)."""
    inner = np.dot(graph.in_degree.astype(np.float64), graph.out_degree.astype(np.float64))
    return int(graph.nnz + inner)


def reach_matrices(in_ptr: Any, in_idx: Any, n: int, hops: int) -> list[sp.csr_matrix]:
    """CSR matrices of A + ... + A^d for d = 1 .. ``hops`` without their diagonals (row i: the j
    from which i is one to d arcs away), from A's in-adjacency (CSR of A: row i lists the j with
    j -> i)."""
    ptr, idx = np.asarray(in_ptr, dtype=np.int64), np.asarray(in_idx, dtype=np.int32)
    a = sp.csr_matrix((np.ones(idx.size, dtype=np.int32), idx, ptr), shape=(n, n))
    out = [a]
    for _ in range(hops - 1):
        nxt = out[-1] @ a + a
        nxt.data[:] = 1
        out.append(nxt)
    for m in out:
        m.setdiag(0)
        m.eliminate_zeros()
        m.sort_indices()
    return out


def _graph_of(m: sp.csr_matrix, n: int) -> Graph:
    """The directed graph whose in-adjacency is ``m`` (only the BVSS reads it: out-lists)."""
    out = m.T.tocsr()
    out.sort_indices()
    return Graph.from_csr(
        out.indptr.astype(np.int64),
        out.indices.astype(np.int32),
        n,
        directed=True,
        in_ptr=m.indptr.astype(np.int64),
        in_idx=m.indices.astype(np.int32),
    )


def hop_graph(in_ptr: Any, in_idx: Any, n: int, hops: int = 2) -> Graph:
    """The graph of B = A + ... + A^hops without loops (directed, whatever A's directedness)."""
    return _graph_of(reach_matrices(in_ptr, in_idx, n, hops)[-1], n)


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


def hops_bvss(
    in_ptr: Any, in_idx: Any, n: int, sigma: int, hops: int = 2, *, xp: Any = None
) -> BVSS:
    """B's BVSS at ``sigma`` with its ``near_masks`` (``hops`` - 1 rows; NumPy arrays, or CuPy
    with ``xp=cupy``, which builds the BVSS on the GPU; B and the near masks are computed on the
    CPU)."""
    ptr, idx = np.asarray(to_host(in_ptr)), np.asarray(to_host(in_idx))
    reach = reach_matrices(ptr, idx, n, hops)
    b = build_bvss(_graph_of(reach[-1], n), sigma, xp=xp)
    host = b.to_numpy()
    near = np.stack([near_masks(m.indptr, m.indices, host) for m in reach[:-1]])
    if xp is not None and xp is not np:
        near = xp.asarray(near)
    return BVSS(sigma, n, b.nnz, b.row_ids, b.masks, b.real_ptrs, b.virtual_to_real,
                b.real_slices, near)  # fmt: skip
