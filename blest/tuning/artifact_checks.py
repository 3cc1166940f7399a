"""Structure checks of a prepared artifact's arrays: O(n) passes and sequential O(arcs)
reductions, no sort, no gather over the arcs (well under a second for 63M arcs).

What an engine relies on: every CSR's row pointers start at 0, never decrease and end at its
number of ids, and the ids are vertices; the permutation is one, and ``new_of_old`` inverts
``old_of_new``; the reordered in-adjacency is the user's relabelled: equal degrees through the
permutation, and equal sums of the column ids (the sum over the arcs of the internal id of the
tail equals the sum over the vertices of internal id times out-degree); a directed graph's
in-adjacency is the transpose of its out-adjacency (the same two fingerprints); the BVSS has
ceil(n / sigma) slice sets whose VSS ranges (``real_ptrs``) match ``virtual_to_real``, row ids
that are vertices, one mask word per lane, as many mask bits per slice set as its source
vertices have out-arcs, and row ids weighted by their slots' bits summing to the sum of
internal id times in-degree.

These catch an artifact edited consistently with its checksum (a zeroed permutation, cut or
moved arcs, a BVSS of another graph); an edit that keeps every fingerprint (swapping the
targets of two arcs with equal degree sums) is beyond them. A failed check raises
:class:`~blest.errors.ConfigError` naming it.

Before an artifact is read, the loader checks that it is no larger than an artifact of the
config's graph can be (:func:`max_artifact_bytes`).
"""

from __future__ import annotations

import sys

import numpy as np

from blest.defaults import SIGMAS
from blest.errors import ConfigError

__all__ = ["check_hop_bvss", "check_structure", "max_artifact_bytes"]

_POPCOUNT8 = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


def _check_csr(name: str, ptr: np.ndarray, idx: np.ndarray, n: int) -> None:
    if ptr.shape != (n + 1,):
        raise ConfigError(f"{name} has {ptr.size - 1} rows, the graph has {n} vertices")
    if ptr[0] != 0 or ptr[-1] != idx.size:
        raise ConfigError(
            f"{name} row pointers run from {ptr[0]} to {ptr[-1]}, not 0 to {idx.size}"
        )
    if n and np.any(ptr[1:] < ptr[:-1]):
        raise ConfigError(f"{name} row pointers decrease")
    _check_ids(name, idx, n)


def _check_ids(name: str, ids: np.ndarray, n: int) -> None:
    """Every int32 id is a vertex; one pass: read as unsigned, a negative id exceeds them all."""
    if ids.size and int(ids.view(np.uint32).max()) >= n:
        raise ConfigError(f"{name} holds ids outside 0..{n - 1}")


def _check_permutation(new_of_old: np.ndarray, old_of_new: np.ndarray, n: int) -> None:
    if new_of_old.shape != (n,) or old_of_new.shape != (n,):
        raise ConfigError(f"the permutation does not have {n} entries")
    _check_ids("old_of_new", old_of_new, n)
    _check_ids("new_of_old", new_of_old, n)
    if not np.array_equal(new_of_old[old_of_new], np.arange(n, dtype=np.int32)):
        raise ConfigError("new_of_old is not the inverse of old_of_new (not a permutation)")


def _moment(weights: np.ndarray, ids: np.ndarray | None = None) -> int:
    """sum(weights * ids) (or sum(weights)) modulo 2^64: equal sums stay equal, no overflow."""
    if ids is None:
        return int(np.sum(weights, dtype=np.uint64))
    return int(np.einsum("i,i->", weights, ids, dtype=np.uint64, casting="unsafe"))


def _check_columns(name: str, idx: np.ndarray, labels: np.ndarray, counts: np.ndarray) -> None:
    """The ids in ``idx`` sum to sum(labels * counts): vertex u appears counts[u] times, as
    labels[u]."""
    if _moment(idx) != _moment(counts, labels):
        raise ConfigError(f"{name}'s arc heads do not match the graph's arcs")


def _check_reordered(a: dict[str, np.ndarray], directed: bool) -> None:
    """The reordered in-adjacency is the user's in-adjacency under the permutation."""
    new_of_old = a["new_of_old"]
    user_in = np.diff(a["graph_in_ptr"] if directed else a["graph_out_ptr"])
    if not np.array_equal(np.diff(a["in_ptr"])[new_of_old], user_in):
        raise ConfigError("the reordered in-adjacency's degrees differ from the graph's")
    out_deg = np.diff(a["graph_out_ptr"])  # how often each vertex is the tail of an arc
    _check_columns("the reordered in-adjacency", a["in_idx"], new_of_old, out_deg)


def _check_transpose(a: dict[str, np.ndarray], n: int) -> None:
    """A directed graph's in-adjacency is the transpose of its out-adjacency."""
    ids = np.arange(n, dtype=np.int64)
    _check_columns("graph_in", a["graph_in_idx"], ids, np.diff(a["graph_out_ptr"]))
    _check_columns("graph_out", a["graph_out_idx"], ids, np.diff(a["graph_in_ptr"]))


def _popcount(words: np.ndarray) -> np.ndarray:
    """Set bits of each element (unsigned integers)."""
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(words)
    bytes_ = words.view(np.uint8).reshape(*words.shape, words.itemsize)
    return _POPCOUNT8[bytes_].sum(axis=-1, dtype=np.uint8)


def _slot_bits(masks: np.ndarray, sigma: int) -> np.ndarray:
    """Set bits of every slot, in slot order (lane word w holds slots w * 32/sigma + k, slot k
    in bits [k * sigma, (k + 1) * sigma))."""
    if sys.byteorder == "little" and sigma >= 8:  # slot k is the k-th sigma-bit unsigned int
        return _popcount(masks.view(f"<u{sigma // 8}"))
    field = np.uint32((1 << sigma) - 1) if sigma < 32 else np.uint32(0xFFFFFFFF)
    theta = 32 // sigma
    per_slot = [_popcount((masks >> np.uint32(k * sigma)) & field) for k in range(theta)]
    return np.stack(per_slot, axis=1).reshape(-1)


def _check_bvss_shape(a: dict[str, np.ndarray], n: int, sigma: int) -> None:
    if sigma not in SIGMAS:
        raise ConfigError(f"sigma is {sigma}, not one of {SIGMAS}")
    n_sets = -(-n // sigma)
    ptrs, v2r = a["real_ptrs"], a["virtual_to_real"]
    if ptrs.shape != (n_sets + 1,):
        raise ConfigError(f"real_ptrs has {ptrs.size} entries, expected {n_sets + 1}")
    if ptrs[0] != 0 or ptrs[-1] != v2r.size or np.any(ptrs[1:] < ptrs[:-1]):
        raise ConfigError(f"real_ptrs does not rise from 0 to the {v2r.size} VSSs")
    sets = np.repeat(np.arange(n_sets, dtype=np.int32), np.diff(ptrs))
    if not np.array_equal(v2r, sets):
        raise ConfigError("virtual_to_real does not match real_ptrs")
    tau = 32 * (32 // sigma)
    if a["row_ids"].shape != (v2r.size * tau,) or a["masks"].shape != (v2r.size * 32,):
        raise ConfigError("row_ids or masks do not have one entry per slot and lane of every VSS")
    _check_ids("row_ids", a["row_ids"], n)


def _check_bvss_bits(a: dict[str, np.ndarray], n: int, sigma: int, nnz: int) -> None:
    """Mask bits per slice set = out-arcs of its sources; row ids weighted by their slots'
    bits = internal ids weighted by in-degree."""
    bits = _slot_bits(a["masks"], sigma)
    per_vss = bits.reshape(-1, 32 * (32 // sigma)).sum(axis=1, dtype=np.int64)
    acc = np.concatenate(([0], np.cumsum(per_vss)))[a["real_ptrs"]]
    if int(acc[-1]) != nnz:
        raise ConfigError(f"the BVSS masks hold {int(acc[-1])} arcs, the graph has {nnz}")
    n_sets = a["real_ptrs"].size - 1
    out_deg = np.zeros(n_sets * sigma, dtype=np.int64)
    out_deg[:n] = np.diff(a["graph_out_ptr"])[a["old_of_new"]]  # by internal source id
    if not np.array_equal(np.diff(acc), out_deg.reshape(n_sets, sigma).sum(axis=1)):
        raise ConfigError("the BVSS masks do not hold the out-arcs of their slice sets")
    got = _moment(bits, a["row_ids"])
    want = _moment(np.diff(a["in_ptr"]), np.arange(n, dtype=np.int64))
    if got != want:
        raise ConfigError("the BVSS rows do not hold the in-arcs of the reordered graph")


def check_structure(
    a: dict[str, np.ndarray], *, n: int, directed: bool, sigma: int, nnz: int
) -> None:
    """Check the decoded arrays ``a`` of an artifact (see the module docstring)."""
    if n < 0:
        raise ConfigError(f"n is {n}")
    _check_csr("graph_out", a["graph_out_ptr"], a["graph_out_idx"], n)
    if nnz != a["graph_out_idx"].size:
        raise ConfigError(f"nnz is {nnz}, the graph has {a['graph_out_idx'].size} arcs")
    if directed:
        _check_csr("graph_in", a["graph_in_ptr"], a["graph_in_idx"], n)
        _check_transpose(a, n)
    _check_csr("in", a["in_ptr"], a["in_idx"], n)
    _check_permutation(a["new_of_old"], a["old_of_new"], n)
    _check_reordered(a, directed)
    _check_bvss_shape(a, n, sigma)
    _check_bvss_bits(a, n, sigma, nnz)


def check_hop_bvss(
    b: dict[str, np.ndarray], near: np.ndarray, *, n: int, sigma: int, nnz: int
) -> None:
    """Check B's BVSS (several levels a phase): the shape of a BVSS of ``nnz`` arcs on n
    vertices, its row ids in range, and near masks that nest: the d-arc mask's bits within the
    next's, the last's within the mask's."""
    _check_bvss_shape(b, n, sigma)
    got = int(_slot_bits(b["masks"], sigma).sum(dtype=np.int64))
    if got != nnz:
        raise ConfigError(f"B's masks hold {got} arcs, hop_nnz says {nnz}")
    outer = b["masks"]
    for row in near[::-1]:
        if np.any(row & ~outer):
            raise ConfigError("a near mask of B holds bits its outer mask does not")
        outer = row


def max_artifact_bytes(n: int, arcs: int, sigma: int, hops: int = 1, hop_arcs: int = 0) -> int:
    """An upper bound on the size of the artifact of a graph of ``n`` vertices and ``arcs``
    arcs at slice width ``sigma`` (any version): per vertex at most 40 bytes (row pointers
    and permutations), per arc 12 (the three adjacencies), per VSS (at most one per arc, plus
    one per slice set) 4 * tau row ids, 32 masks and its slice set, and 1 MiB of archive;
    with B's BVSS (``hops`` > 1, of ``hop_arcs`` arcs), its VSSs too, each with hops - 1 more
    rows of masks."""
    tau = 32 * max(1, 32 // max(1, sigma))
    sets = -(-n // max(1, sigma)) + 1
    most = 40 * (n + 1) + 12 * arcs + (4 * tau + 136) * (arcs + sets) + 16 * sets + (1 << 20)
    if hops > 1:
        most += (4 * tau + 136 + 128 * (hops - 1)) * (hop_arcs + sets) + 16 * sets
    return most
