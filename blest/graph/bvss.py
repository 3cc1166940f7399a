"""Binarized Virtual Slice Sets (BVSS): the compressed adjacency the tensor-core kernels read.

Layout (docs/notation.md), for slice width sigma in {4, 8, 16, 32}:

* theta = 32 / sigma slices per lane, tau = 32 * theta slices per virtual slice set (VSS).
* Slice set s covers columns [s*sigma, (s+1)*sigma) of A (A[i][j] = 1 iff arc j→i), i.e. the
  out-arcs of sigma consecutive source vertices. Row i has a slice in set s iff it has a nonzero
  there; the slice is (row id i, sigma-bit mask), bit k <-> column s*sigma + k.
* Within a set, slices are in ascending row id and cut into ceil(slices / tau) VSSs in that
  order; the last VSS is padded with zero masks whose row id repeats its last real row.
* ``row_ids``: tau per VSS; lane l owns row_ids[v*tau + l*theta : v*tau + (l+1)*theta].
* ``masks``: one uint32 per lane per VSS; lane l's slot k occupies bits [k*sigma, (k+1)*sigma).
* ``real_ptrs`` (Ns + 1): VSS range of each slice set; ``virtual_to_real`` (Nv): its set.

Source: Blest (BVSS, Sec. 4), built here from ``out_csr`` with one sort and segment sums, in
NumPy or, given ``xp=cupy``, on the GPU.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from blest.defaults import SIGMAS
from blest.errors import ArgumentError

if TYPE_CHECKING:
    from blest.graph.core import Graph

__all__ = ["SIGMAS", "BVSS", "BVSSStats", "build_bvss", "to_host", "u_div"]

_LITTLE = np.little_endian
_PARALLEL_MIN_ARCS = 2_000_000  # below this, one piece (threads cost more than they save)


@dataclass(frozen=True)
class BVSSStats:
    """Size and shape statistics of one BVSS (definitions in docs/notation.md)."""

    sigma: int
    n_slice_sets: int  # Ns = ceil(n / sigma), empty sets included
    n_vss: int  # Nv
    real_slices: int
    padded_slices: int
    compression_ratio: float  # nnz / (real_slices * sigma)
    u_div: float
    gpu_bytes: int


@dataclass(frozen=True, eq=False)
class BVSS:
    """BVSS arrays of one graph at one sigma (NumPy or CuPy arrays, see ``xp``)."""

    sigma: int
    n: int
    nnz: int
    row_ids: Any  # int32, Nv * tau
    masks: Any  # uint32, Nv * 32
    real_ptrs: Any  # int32, Ns + 1
    virtual_to_real: Any  # int32, Nv
    real_slices: int
    near_masks: Any = None  # uint32, Nv * 32: B's BVSS only (blest.graph.hops), else None

    @property
    def theta(self) -> int:
        return 32 // self.sigma

    @property
    def tau(self) -> int:
        return 32 * self.theta

    @property
    def n_slice_sets(self) -> int:
        return -(-self.n // self.sigma)

    @property
    def n_vss(self) -> int:
        return int(self.virtual_to_real.shape[0])

    @property
    def gpu_bytes(self) -> int:
        return int(
            self.row_ids.nbytes
            + self.masks.nbytes
            + self.real_ptrs.nbytes
            + self.virtual_to_real.nbytes
            + (0 if self.near_masks is None else self.near_masks.nbytes)
        )

    def to_numpy(self) -> BVSS:
        """A copy whose arrays are NumPy arrays (identity when they already are)."""
        if isinstance(self.row_ids, np.ndarray):
            return self
        return BVSS(
            self.sigma,
            self.n,
            self.nnz,
            self.row_ids.get(),
            self.masks.get(),
            self.real_ptrs.get(),
            self.virtual_to_real.get(),
            self.real_slices,
            None if self.near_masks is None else self.near_masks.get(),
        )

    def stats(self) -> BVSSStats:
        nv = self.n_vss
        return BVSSStats(
            sigma=self.sigma,
            n_slice_sets=self.n_slice_sets,
            n_vss=nv,
            real_slices=self.real_slices,
            padded_slices=nv * self.tau - self.real_slices,
            compression_ratio=self.nnz / (self.real_slices * self.sigma) if self.nnz else 0.0,
            u_div=u_div(self),
            gpu_bytes=self.gpu_bytes,
        )


def build_bvss(graph: Graph, sigma: int, *, xp: ModuleType | None = None) -> BVSS:
    """Build the BVSS of ``graph`` (a :class:`blest.Graph`) at slice width ``sigma``.

    Parameters
    ----------
    graph : Graph
        Reads ``out_ptr``/``out_idx`` (out_csr) and ``n``.
    sigma : {4, 8, 16, 32}
        Slice width.
    xp : module, optional
        ``numpy`` (default) or ``cupy`` to build on the GPU; the arrays of the result live there.
    """
    if sigma not in SIGMAS:
        raise ArgumentError(f"sigma must be one of {SIGMAS}, got {sigma!r}")
    if xp is None or xp is np:
        return _build_numpy(graph, sigma)
    return _build_xp(graph, sigma, xp)


def _build_xp(graph: Any, sigma: int, xp: Any) -> BVSS:
    """The array-module-generic build (CuPy on the GPU; also runs with NumPy, for tests)."""
    n = int(graph.n)
    theta = 32 // sigma
    tau = 32 * theta
    log_sigma = sigma.bit_length() - 1
    n_sets = -(-n // sigma)
    out_ptr = xp.asarray(graph.out_ptr, dtype=xp.int64)
    out_idx = xp.asarray(graph.out_idx, dtype=xp.int32)
    nnz = int(out_idx.shape[0])

    # One key per arc: (slice set of the source, destination row, bit of the source), built in
    # place (at most three arrays of nnz entries live: a GPU's memory bounds the scale).
    keys = xp.searchsorted(out_ptr, xp.arange(nnz, dtype=xp.int64), side="right")
    keys -= 1  # the source of each arc
    bit = (keys & (sigma - 1)).astype(xp.uint32)
    keys >>= log_sigma
    keys *= n
    keys += out_idx
    del out_idx
    keys <<= log_sigma
    keys |= bit
    del bit
    keys.sort()
    # 1 << bit fits 32 bits (sigma <= 32); the cumulative sums below wrap modulo 2**32, and a
    # slice's mask (distinct bits: no arc repeats) is below 2**32, so differences are exact.
    bits = xp.left_shift(xp.uint32(1), (keys & (sigma - 1)).astype(xp.uint32))
    keys >>= log_sigma
    slice_keys = keys
    del keys

    # Segments of equal (set, row): one slice each; its mask is the sum of distinct bits.
    if nnz:
        starts_flag = xp.empty(nnz, dtype=bool)
        starts_flag[0] = True
        xp.not_equal(slice_keys[1:], slice_keys[:-1], out=starts_flag[1:])
        starts = xp.flatnonzero(starts_flag)
        del starts_flag
    else:
        starts = xp.zeros(0, dtype=xp.int64)
    n_slices = int(starts.shape[0])
    slice_key = slice_keys[starts]
    del slice_keys
    csum = xp.zeros(nnz + 1, dtype=xp.uint32)
    xp.cumsum(bits, dtype=xp.uint32, out=csum[1:])
    del bits
    slice_mask = xp.empty(n_slices, dtype=xp.uint32)  # csum at each slice's end, less at its start
    if n_slices:
        slice_mask[:-1] = csum[starts[1:]]
        slice_mask[-1] = csum[nnz]
        slice_mask -= csum[starts]
    del csum, starts
    slice_set = slice_key // max(n, 1)
    slice_key -= slice_set * n  # now the row
    slice_row = slice_key.astype(xp.int32)
    del slice_key

    # VSS counts and positions.
    per_set = xp.bincount(slice_set, minlength=n_sets).astype(xp.int64)
    vss_per_set = (per_set + tau - 1) // tau
    real_ptrs = xp.zeros(n_sets + 1, dtype=xp.int64)
    real_ptrs[1:] = xp.cumsum(vss_per_set)
    n_vss = int(real_ptrs[-1])
    set_first_slice = xp.zeros(n_sets + 1, dtype=xp.int64)
    set_first_slice[1:] = xp.cumsum(per_set)
    virtual_to_real = xp.repeat(xp.arange(n_sets, dtype=xp.int64), vss_per_set)

    # For every position of every VSS, the slice it shows (padding repeats the last real one).
    vss_ids = xp.arange(n_vss, dtype=xp.int64)
    first_in_vss = set_first_slice[virtual_to_real] + (vss_ids - real_ptrs[virtual_to_real]) * tau
    real_in_vss = xp.minimum(set_first_slice[virtual_to_real + 1] - first_in_vss, tau)
    # Slice positions in 32 bits where they fit: the (VSS, slot) arrays are the largest here.
    pos_type = xp.int32 if n_slices < 2**31 else xp.int64
    q = xp.arange(tau, dtype=pos_type)
    real_in_vss = real_in_vss.astype(pos_type)
    pos_slice = xp.minimum(q[None, :], real_in_vss[:, None] - 1)
    pos_slice += first_in_vss.astype(pos_type)[:, None]
    row_ids = slice_row[pos_slice.ravel()] if n_slices else xp.zeros(0, dtype=xp.int32)
    del pos_slice
    is_real = q[None, :] < real_in_vss[:, None]

    # Mask words: slot k of lane l holds the slice at position l*theta + k.
    masks = xp.zeros((n_vss, 32), dtype=xp.uint32)
    for k in range(theta):
        pos = q[k::theta]  # positions l*theta + k, l = 0..31
        idx = first_in_vss[:, None] + pos[None, :]
        real = is_real[:, k::theta]
        m = xp.where(real, slice_mask[xp.minimum(idx, max(n_slices - 1, 0))], 0) if n_slices else 0
        masks |= (xp.asarray(m, dtype=xp.uint32) << xp.uint32(k * sigma)) if sigma < 32 else m
    return BVSS(
        sigma=sigma,
        n=n,
        nnz=nnz,
        row_ids=xp.ascontiguousarray(row_ids.astype(xp.int32)),
        masks=xp.ascontiguousarray(masks.ravel()),
        real_ptrs=real_ptrs.astype(xp.int32),
        virtual_to_real=virtual_to_real.astype(xp.int32),
        real_slices=n_slices,
    )


def _build_numpy(graph: Any, sigma: int) -> BVSS:
    """The NumPy build, in parallel over ranges of slice sets (they are independent): each range
    is built by :func:`_build_sets` in a thread (NumPy releases the GIL) and the pieces are
    concatenated."""
    n = int(graph.n)
    n_sets = -(-n // sigma)
    out_ptr = np.asarray(graph.out_ptr, dtype=np.int64)
    out_idx = np.asarray(graph.out_idx)
    nnz = int(out_ptr[-1]) if n else 0
    workers = max(1, min(os.cpu_count() or 1, 8))
    pieces = 1 if nnz < _PARALLEL_MIN_ARCS else 4 * workers
    # Cut points at slice-set boundaries with about nnz / pieces arcs each.
    set_ptr = out_ptr[np.minimum(np.arange(n_sets + 1, dtype=np.int64) * sigma, n)]
    cuts = np.unique(np.searchsorted(set_ptr, np.linspace(0, nnz, pieces + 1), side="left"))
    cuts[0], cuts[-1] = 0, n_sets
    ranges = [(int(a), int(b)) for a, b in zip(cuts[:-1], cuts[1:], strict=True) if b > a]
    if len(ranges) <= 1:
        parts = [_build_sets(out_ptr, out_idx, n, sigma, 0, n_sets)]
    else:
        with ThreadPoolExecutor(workers) as pool:
            parts = list(
                pool.map(lambda r: _build_sets(out_ptr, out_idx, n, sigma, r[0], r[1]), ranges)
            )
    vss_per_set = np.concatenate([p[2] for p in parts]) if parts else np.zeros(0, np.int64)
    real_ptrs = np.zeros(n_sets + 1, dtype=np.int64)
    np.cumsum(vss_per_set, out=real_ptrs[1:])
    return BVSS(
        sigma=sigma,
        n=n,
        nnz=nnz,
        row_ids=np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, np.int32),
        masks=np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, np.uint32),
        real_ptrs=real_ptrs.astype(np.int32),
        virtual_to_real=np.repeat(np.arange(n_sets, dtype=np.int32), vss_per_set),
        real_slices=sum(p[3] for p in parts),
    )


def _build_sets(
    out_ptr: np.ndarray, out_idx: np.ndarray, n: int, sigma: int, set_lo: int, set_hi: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Row ids, mask words, VSSs per set and real-slice count of slice sets [set_lo, set_hi).

    In-place key arithmetic and one sort; then slice i of set s (counted from set_lo) is
    scattered to position vss_start[s] * tau + i - first_slice[s], padding repeats each set's
    last row, and mask words are OR-reduced over runs of equal word index.
    """
    theta, tau = 32 // sigma, 32 * (32 // sigma)
    log_sigma = sigma.bit_length() - 1
    n_sets = set_hi - set_lo
    u_lo, u_hi = set_lo * sigma, min(set_hi * sigma, n)
    base = int(out_ptr[u_lo])
    degree = np.diff(out_ptr[u_lo : u_hi + 1])
    nnz = int(degree.sum())

    # One int64 key per arc, all bit fields (shifts, no division; fits for n < 2**31):
    # set of the source (from set_lo) << (32 + log sigma) | row << log sigma | bit of the source.
    vertices = np.arange(u_lo, u_hi, dtype=np.int64)
    bit = np.repeat((vertices & (sigma - 1)).astype(np.uint32), degree)
    keys = np.repeat((vertices >> log_sigma) - set_lo, degree)
    keys <<= 32
    keys |= out_idx[base : base + nnz]
    keys <<= log_sigma
    keys |= bit
    del bit
    keys.sort()

    # Runs of equal (set, row) are slices; their masks OR the distinct bits of the run.
    bits = np.left_shift(np.uint32(1), (keys & (sigma - 1)).astype(np.uint32))
    keys >>= log_sigma
    if nnz:
        first = np.empty(nnz, dtype=bool)
        first[0] = True
        np.not_equal(keys[1:], keys[:-1], out=first[1:])
        starts = np.flatnonzero(first)
        del first
        slice_mask = np.bitwise_or.reduceat(bits, starts)
    else:
        starts = np.zeros(0, dtype=np.int64)
        slice_mask = np.zeros(0, dtype=np.uint32)
    del bits
    slice_key = keys[starts]
    del keys, starts
    n_slices = int(slice_key.size)
    slice_set = slice_key >> 32
    if _LITTLE:
        slice_row = slice_key.view(np.int32)[0::2].copy()
    else:
        slice_row = (slice_key & 0xFFFFFFFF).astype(np.int32)
    del slice_key

    per_set = np.bincount(slice_set, minlength=n_sets).astype(np.int64)
    vss_per_set = (per_set + tau - 1) // tau
    vss_start = np.zeros(n_sets + 1, dtype=np.int64)
    np.cumsum(vss_per_set, out=vss_start[1:])
    n_vss = int(vss_start[-1])
    first_slice = np.zeros(n_sets + 1, dtype=np.int64)
    np.cumsum(per_set, out=first_slice[1:])

    # Position of every slice; padding positions are the tails of each set's last VSS.
    position = np.arange(n_slices, dtype=np.int64)
    position += (vss_start[:-1] * tau - first_slice[:-1])[slice_set]
    del slice_set
    row_ids = np.empty(n_vss * tau, dtype=np.int32)
    row_ids[position] = slice_row
    pad = vss_per_set * tau - per_set  # padding slots of each set (in its last VSS)
    has_pad = np.flatnonzero(pad)
    if has_pad.size:
        counts = pad[has_pad]
        pad_start = vss_start[has_pad + 1] * tau - counts
        offsets = np.arange(int(counts.sum()), dtype=np.int64)
        offsets -= np.repeat(np.cumsum(counts) - counts, counts)
        row_ids[np.repeat(pad_start, counts) + offsets] = np.repeat(
            slice_row[first_slice[has_pad + 1] - 1], counts
        )

    # Mask words: position p is lane p // theta's slot p % theta of VSS p // tau.
    masks = np.zeros(n_vss * 32, dtype=np.uint32)
    if n_slices:
        shifted = slice_mask << ((position & (theta - 1)) * sigma).astype(np.uint32)
        word = position >> (theta.bit_length() - 1)
        del position
        new_word = np.empty(n_slices, dtype=bool)
        new_word[0] = True
        np.not_equal(word[1:], word[:-1], out=new_word[1:])
        word_starts = np.flatnonzero(new_word)
        masks[word[word_starts]] = np.bitwise_or.reduceat(shifted, word_starts)
    return row_ids, masks, vss_per_set, n_slices


def u_div(bvss: BVSS) -> float:
    """Average row-id spread inside VSSs (U_div of docs/notation.md, at this BVSS's sigma).

    For each VSS and each of its theta slot columns with a nonzero mask, the population
    standard deviation of the row ids of the nonzero slices; averaged over those columns,
    then over VSSs.
    """
    b = bvss.to_numpy()
    nv, theta = b.n_vss, b.theta
    if nv == 0:
        return 0.0
    rows = np.asarray(b.row_ids, dtype=np.float64).reshape(nv, 32, theta)
    words = np.asarray(b.masks).reshape(nv, 32, 1).astype(np.uint64)
    shifts = (np.arange(theta, dtype=np.uint64) * np.uint64(b.sigma)).reshape(1, 1, theta)
    full = np.uint64((1 << b.sigma) - 1)
    live = ((words >> shifts) & full) != 0  # (nv, 32, theta)
    cnt = live.sum(axis=1)  # (nv, theta)
    safe = np.maximum(cnt, 1)
    mean = (rows * live).sum(axis=1) / safe
    var = (((rows - mean[:, None, :]) ** 2) * live).sum(axis=1) / safe
    std = np.sqrt(var)
    cols = cnt > 0
    ncols = cols.sum(axis=1)
    per_vss = np.where(ncols > 0, (std * cols).sum(axis=1) / np.maximum(ncols, 1), 0.0)
    has = ncols > 0
    return float(per_vss[has].mean()) if has.any() else 0.0


def to_host(a: Any) -> Any:
    """A CuPy array's copy in host memory; anything else as it is."""
    return a.get() if hasattr(a, "get") and not isinstance(a, np.ndarray) else a
