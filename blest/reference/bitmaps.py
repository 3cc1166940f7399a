"""Vertex bitmaps as the kernels store them, and the index bookkeeping around them.

Layout (docs/algorithm.md, "State"): ``W = ceil(n / 32)`` uint32 words; bit ``b`` of word ``w``
is vertex ``32*w + b``; bits of vertices ``>= n`` are always zero. Slice set ``s`` owns the
``sigma`` bits ``[s*sigma, (s+1)*sigma)`` (sigma divides 32, so a set never straddles words).
Source: Blest paper, Sec. 4-5 (frontier/visited bitmaps, BVSS slice sets).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "WORD_BITS",
    "n_words",
    "popcount32",
    "ids_to_words",
    "ids_to_bitmap",
    "words_to_ids",
    "bitmap_to_bool",
    "bits_set",
    "set_alphas",
    "sets_of_words",
    "concat_ranges",
    "vss_of_sets",
]

WORD_BITS = 32
_BIT_SHIFTS = np.arange(WORD_BITS, dtype=np.uint32)


def n_words(n: int) -> int:
    """Words of a bitmap over ``n`` vertices."""
    return -(-int(n) // WORD_BITS)


def popcount32(x: np.ndarray) -> np.ndarray:
    """Per-element population count of uint32 words (small unsigned dtype; sum it wide)."""
    x = np.asarray(x, dtype=np.uint32)
    if hasattr(np, "bitwise_count"):  # NumPy >= 2.0
        return np.bitwise_count(x)
    x = x - ((x >> np.uint32(1)) & np.uint32(0x55555555))
    x = (x & np.uint32(0x33333333)) + ((x >> np.uint32(2)) & np.uint32(0x33333333))
    x = (x + (x >> np.uint32(4))) & np.uint32(0x0F0F0F0F)
    return (x * np.uint32(0x01010101)) >> np.uint32(24)


def ids_to_words(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """OR vertex ids (duplicates allowed) into (sorted word indices, their uint32 bit words)."""
    ids = np.unique(np.asarray(ids, dtype=np.int64))
    if ids.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.uint32)
    word = ids >> 5
    bits = np.left_shift(np.uint32(1), (ids & 31).astype(np.uint32))
    starts = np.flatnonzero(np.concatenate([[True], word[1:] != word[:-1]]))
    return word[starts], np.bitwise_or.reduceat(bits, starts)


def ids_to_bitmap(ids: np.ndarray, n: int) -> np.ndarray:
    """Bitmap (``n_words(n)`` uint32) with the bits of ``ids`` set."""
    out = np.zeros(n_words(n), dtype=np.uint32)
    w, bits = ids_to_words(ids)
    out[w] = bits
    return out


def words_to_ids(words: np.ndarray, word_index: np.ndarray | None = None) -> np.ndarray:
    """Vertex ids (int64) of the set bits of ``words``; ``word_index[i]`` is the index of
    ``words[i]`` in the full bitmap (default ``arange``). Sorted when ``word_index`` is."""
    words = np.asarray(words, dtype=np.uint32)
    nz = np.flatnonzero(words)
    if word_index is None:
        base = nz.astype(np.int64)
    else:
        base = np.asarray(word_index, dtype=np.int64)[nz]
    on = ((words[nz, None] >> _BIT_SHIFTS) & np.uint32(1)).astype(bool)
    r, b = np.nonzero(on)
    return base[r] * WORD_BITS + b


def bitmap_to_bool(words: np.ndarray, n: int) -> np.ndarray:
    """Boolean vector of length ``n`` from a bitmap."""
    little = np.ascontiguousarray(words, dtype="<u4").view(np.uint8)
    return np.unpackbits(little, bitorder="little")[:n].astype(bool)


def bits_set(words: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Whether each vertex of ``ids`` is set in the bitmap ``words``."""
    ids = np.asarray(ids, dtype=np.int64)
    return ((words[ids >> 5] >> (ids & 31).astype(np.uint32)) & np.uint32(1)).astype(bool)


def set_alphas(words: np.ndarray, sigma: int, n_sets: int) -> np.ndarray:
    """The sigma-bit frontier value ``alpha`` of every slice set 0 .. n_sets-1 (uint32)."""
    words = np.asarray(words, dtype=np.uint32)
    if sigma == WORD_BITS:
        return words[:n_sets].copy()
    shifts = np.arange(WORD_BITS // sigma, dtype=np.uint32) * np.uint32(sigma)
    full = np.uint32((1 << sigma) - 1)
    return ((words[:, None] >> shifts) & full).ravel()[:n_sets]


def sets_of_words(words: np.ndarray, word_index: np.ndarray, sigma: int) -> np.ndarray:
    """Sorted slice-set ids with a nonzero bit in ``words`` (at bitmap positions
    ``word_index``, ascending)."""
    words = np.asarray(words, dtype=np.uint32)
    theta = WORD_BITS // sigma
    shifts = np.arange(theta, dtype=np.uint32) * np.uint32(sigma)
    full = np.uint32(0xFFFFFFFF if sigma == WORD_BITS else (1 << sigma) - 1)
    r, j = np.nonzero((words[:, None] >> shifts) & full)
    return np.asarray(word_index, dtype=np.int64)[r] * theta + j


def concat_ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``concatenate([arange(s, s + c) for s, c in zip(starts, counts)])`` without a loop."""
    starts = np.asarray(starts, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    first = np.cumsum(counts) - counts  # offset of each range in the output
    return np.repeat(starts - first, counts) + np.arange(total, dtype=np.int64)


def vss_of_sets(sets: np.ndarray, real_ptrs: np.ndarray) -> np.ndarray:
    """VSS ids of the slice sets ``sets`` (sorted when ``sets`` is), via ``real_ptrs``."""
    sets = np.asarray(sets, dtype=np.int64)
    real_ptrs = np.asarray(real_ptrs, dtype=np.int64)
    starts = real_ptrs[sets]
    return concat_ranges(starts, real_ptrs[sets + 1] - starts)
