"""The ``hops=K`` kernels' phases on the CPU: K BFS levels a phase over B = A + ... + A^K.

:func:`emulate_hops` runs what ``topdown_eager.cu.j2`` does under ``hops=K``, one phase at a
time, over the BVSS of B with its K - 1 near masks (:func:`blest.graph.hops.hops_bvss`): phase
L reads alpha, the bits of F_{KL} in each slice set, offers each slot's row KL + d, d the
smallest distance whose near mask (K for B's own mask) meets alpha, and keeps the smallest
offer. The rows that end the phase at KL + K are F_{KL+K}. (The kernels' frontier may also keep
stale bits of rows lowered to KL + K and then lower; their offers change no level, so they are
left out here.) Exact and slow; for tests and the CPU engine.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from blest.errors import ArgumentError

__all__ = ["emulate_hops"]

_UNSET = np.int64(np.iinfo(np.int64).max)


def emulate_hops(b: Any, src: Any, depth_limit: int | None = None) -> np.ndarray:
    """Levels (int32, -1 unreached) from ``src`` (an internal id or seeds), in the ids of
    ``b``, B's BVSS with ``near_masks`` (its rows + 1 levels a phase); ``depth_limit`` as the
    kernels take it."""
    if b.near_masks is None:
        raise ArgumentError("emulate_hops needs B's BVSS with near masks (hops_bvss)")
    b = b.to_numpy()
    sigma, theta, tau, n = int(b.sigma), b.theta, b.tau, int(b.n)
    near_rows = np.atleast_2d(np.asarray(b.near_masks, dtype=np.uint64))
    hops = near_rows.shape[0] + 1
    seeds = np.unique(np.atleast_1d(np.asarray(src, dtype=np.int64)))
    if seeds.size == 0 or seeds.min() < 0 or seeds.max() >= n:
        raise ArgumentError(f"seeds must be ids in [0, {n})")
    # Every slot: its row, its set, and its sigma bits of B's mask and of each near mask.
    rows = np.asarray(b.row_ids, dtype=np.int64)
    sets = np.repeat(np.asarray(b.virtual_to_real, dtype=np.int64), tau)
    shift = ((np.arange(rows.size) % theta) * sigma).astype(np.uint64)
    low = np.uint64((1 << sigma) - 1)

    def slot_bits(words: np.ndarray) -> np.ndarray:
        return (np.repeat(words, theta) >> shift) & low

    masks = [slot_bits(w) for w in near_rows] + [slot_bits(np.asarray(b.masks, dtype=np.uint64))]
    levels = np.full(n, _UNSET, dtype=np.int64)
    levels[seeds] = 0
    frontier = np.zeros(b.n_slice_sets * sigma, dtype=bool)
    frontier[seeds] = True
    phase = 0
    while frontier.any() and (depth_limit is None or hops * phase < depth_limit):
        bits = frontier.reshape(-1, sigma).astype(np.uint64) << np.arange(sigma, dtype=np.uint64)
        alpha = np.bitwise_or.reduce(bits, axis=1)[sets]
        distance = np.zeros(rows.size, dtype=np.int64)  # 0: no hit
        for d in range(hops, 0, -1):  # the smallest distance that hits wins
            distance = np.where((masks[d - 1] & alpha) != 0, d, distance)
        offer = hops * phase + distance
        hit = distance > 0
        if depth_limit is not None:
            hit &= offer <= depth_limit
        np.minimum.at(levels, rows[hit], offer[hit])
        frontier = np.zeros_like(frontier)
        frontier[:n] = levels == hops * phase + hops
        phase += 1
    return np.where(levels == _UNSET, -1, levels).astype(np.int32)
