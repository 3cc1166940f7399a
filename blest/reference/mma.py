"""Bit-exact NumPy emulation of the binary tensor-core MMA and of Blest's fragment packing.

Instruction: ``mma.sync.aligned.m8n8k128.row.col.s32.b1.b1.s32.and.popc {c0,c1},{a},{b},{c}``
(PTX ISA, warp-level MMA, m8n8k128 .b1). Fragment layout, per lane t of the warp: A row t//4,
32-bit k-word t%4; B column t//4, k-word t%4; C/D row t//4, columns 2(t%4) and 2(t%4)+1. So
``C[i][j] = c_in[i][j] + sum_w popc(A[lane 4i+w] & B[lane 4j+w])`` (int32, wrapping).

Blest packing (Blest paper, Alg. 2/3 line "mma"; docs/algorithm.md step 2), per round r of
``max(1, theta/2)``: lane t's A word is ``(m >> 2*sigma*r) & (2^(2*sigma) - 1)`` (the whole word
for sigma >= 16); B is zero except lanes 9c (c = 0..3) holding the frontier value ``alpha`` and,
for sigma < 32, lanes 9c+4 holding ``alpha << sigma``. Lane 9c is B column 2c, k-word c, and lane
9c+4 is column 2c+1, k-word c, so lane t = 4i+c gets ``c0 = popc(A_t & alpha)`` (its slot 2r)
and ``c1 = popc(A_t & alpha << sigma)`` (its slot 2r+1): no output wasted, no shuffles.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from blest.defaults import SIGMAS
from blest.errors import ArgumentError
from blest.reference.bitmaps import popcount32

__all__ = [
    "SIGMAS",
    "B_ALPHA_LANES",
    "B_SHIFTED_LANES",
    "mma_m8n8k128_and_popc",
    "n_rounds",
    "a_fragment",
    "b_fragment",
    "slot_popcounts",
]

#: B lanes 9c holding alpha (column 2c, k-word c) and 9c+4 holding alpha << sigma (column 2c+1).
B_ALPHA_LANES = (0, 9, 18, 27)
B_SHIFTED_LANES = (4, 13, 22, 31)


def _as_words(x: Any, what: str, lanes: bool = True) -> np.ndarray:
    """``x`` as uint32, refusing non-integers and values outside [0, 2^32)."""
    arr = np.asarray(x)
    if arr.dtype != np.uint32:
        if arr.size and arr.dtype.kind not in "iu":
            raise ArgumentError(f"{what} must hold integer words, got dtype {arr.dtype}")
        if arr.size and (int(arr.min()) < 0 or int(arr.max()) > 0xFFFFFFFF):
            raise ArgumentError(f"{what} must hold 32-bit unsigned words")
        arr = arr.astype(np.uint32)
    if lanes and (arr.ndim == 0 or arr.shape[-1] != 32):
        raise ArgumentError(f"{what} must have a last axis of 32 lanes, got shape {arr.shape}")
    return arr


def _check_sigma(sigma: int) -> int:
    if sigma not in SIGMAS:
        raise ArgumentError(f"sigma must be one of {SIGMAS}, got {sigma!r}")
    return int(sigma)


def mma_m8n8k128_and_popc(a: Any, b: Any, c: Any = None) -> np.ndarray:
    """Emulate one warp's ``mma.m8n8k128.row.col.s32.b1.b1.s32.and.popc``.

    Parameters
    ----------
    a, b : (..., 32) uint32
        Per-lane A and B fragment words; leading axes broadcast (a batch of warps).
    c : (..., 32, 2) int32, optional
        Per-lane accumulator ``{c0, c1}`` (zero by default).

    Returns
    -------
    (..., 32, 2) int32: lane t's ``{d0, d1}`` = D[t//4][2(t%4)], D[t//4][2(t%4)+1].
    """
    a = _as_words(a, "a")
    b = _as_words(b, "b")
    rows = a.reshape(a.shape[:-1] + (8, 1, 4))  # A[i][w] = lane 4i+w
    cols = b.reshape(b.shape[:-1] + (1, 8, 4))  # B[j][w] (column j) = lane 4j+w
    d = popcount32(rows & cols).sum(axis=-1, dtype=np.int32)  # (..., 8, 8)
    d = d.reshape(d.shape[:-2] + (32, 2))  # D[i][2q + h] -> lane 4i+q, output h
    if c is not None:
        c = np.asarray(c)
        if c.dtype.kind not in "iu":
            raise ArgumentError(f"c must be an integer array, got dtype {c.dtype}")
        if c.ndim < 2 or c.shape[-2:] != (32, 2):
            raise ArgumentError(f"c must have trailing shape (32, 2), got {c.shape}")
        with np.errstate(over="ignore"):
            d = (d.astype(np.int64) + c.astype(np.int64)).astype(np.int32)  # s32 wraps
    return d


def n_rounds(sigma: int) -> int:
    """MMAs per VSS: theta/2 (two slots per round), one for sigma = 32."""
    return max(1, (32 // _check_sigma(sigma)) // 2)


def a_fragment(mask_words: Any, sigma: int, round: int) -> np.ndarray:
    """Lane A words of round ``round``: ``(m >> 2*sigma*round) & (2^(2*sigma) - 1)``,
    the whole word for sigma >= 16. ``mask_words``: (..., 32) uint32 (one VSS per row)."""
    sigma = _check_sigma(sigma)
    if not 0 <= int(round) < n_rounds(sigma):
        raise ArgumentError(f"round must be in 0..{n_rounds(sigma) - 1} for sigma={sigma}")
    m = _as_words(mask_words, "mask_words")
    if sigma >= 16:
        return m.copy()
    shift = np.uint32(2 * sigma * int(round))
    return (m >> shift) & np.uint32((1 << (2 * sigma)) - 1)


def b_fragment(alpha: Any, sigma: int) -> np.ndarray:
    """Lane B words (..., 32) for frontier values ``alpha`` (..., each < 2^sigma): zero except
    lanes 9c = alpha and, for sigma < 32, lanes 9c+4 = alpha << sigma."""
    sigma = _check_sigma(sigma)
    alpha = _as_words(alpha, "alpha", lanes=False)
    if sigma < 32 and alpha.size and int(alpha.max()) >> sigma:
        raise ArgumentError(f"alpha must be a {sigma}-bit value (< 2**{sigma})")
    out = np.zeros(alpha.shape + (32,), dtype=np.uint32)
    out[..., list(B_ALPHA_LANES)] = alpha[..., None]
    if sigma < 32:
        out[..., list(B_SHIFTED_LANES)] = (alpha << np.uint32(sigma))[..., None]
    return out


def slot_popcounts(mask_words: Any, alpha: Any, sigma: int) -> np.ndarray:
    """``popc(slot_k(m_t) & alpha)`` for every lane t and slot k, through the emulated MMA.

    ``mask_words``: (..., 32) uint32 lane mask words of VSSs; ``alpha``: (...) their sets'
    frontier values (broadcast against the leading axes). Returns (..., 32, theta) int32; the
    slot k of lane t is BVSS position ``t*theta + k``.
    """
    sigma = _check_sigma(sigma)
    m = _as_words(mask_words, "mask_words")
    bfrag = b_fragment(alpha, sigma)
    theta = 32 // sigma
    batch = np.broadcast_shapes(m.shape[:-1], bfrag.shape[:-1])
    out = np.empty(batch + (32, theta), dtype=np.int32)
    for r in range(n_rounds(sigma)):
        d = mma_m8n8k128_and_popc(a_fragment(m, sigma, r), bfrag)
        out[..., 2 * r] = d[..., 0]
        if theta > 1:
            out[..., 2 * r + 1] = d[..., 1]
    return out
