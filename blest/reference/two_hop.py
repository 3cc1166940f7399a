"""The ``hops=2`` kernels' phases on the CPU: two BFS levels a phase over B = A + A^2.

:func:`emulate_two_hop` runs what ``topdown_eager.cu.j2`` does under ``hops=2``, one phase at a
time, over the BVSS of B with its near masks (:func:`blest.graph.hops.two_hop_bvss`): phase L
reads alpha, the bits of F_{2L} in each slice set, offers each slot's row 2L + 1 when its near
bits meet alpha and 2L + 2 when only its other bits do, and keeps the smaller offer. The rows
that end the phase at 2L + 2 are F_{2L+2}. (The kernels' frontier may also keep stale bits of
rows lowered to 2L + 2 and then to 2L + 1; their offers change no level, so they are left out
here.) Exact and slow; for tests and the CPU engine.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from blest.errors import ArgumentError

__all__ = ["emulate_two_hop"]

_UNSET = np.int64(np.iinfo(np.int64).max)


def emulate_two_hop(b: Any, src: Any, depth_limit: int | None = None) -> np.ndarray:
    """Levels (int32, -1 unreached) from ``src`` (an internal id or seeds), in the ids of
    ``b``, B's BVSS with ``near_masks``; ``depth_limit`` as the kernels take it."""
    if b.near_masks is None:
        raise ArgumentError("emulate_two_hop needs B's BVSS with near masks (two_hop_bvss)")
    b = b.to_numpy()
    sigma, theta, tau, n = int(b.sigma), b.theta, b.tau, int(b.n)
    seeds = np.unique(np.atleast_1d(np.asarray(src, dtype=np.int64)))
    if seeds.size == 0 or seeds.min() < 0 or seeds.max() >= n:
        raise ArgumentError(f"seeds must be ids in [0, {n})")
    # Every slot: its row, its set, and its sigma mask and near bits.
    rows = np.asarray(b.row_ids, dtype=np.int64)
    sets = np.repeat(np.asarray(b.virtual_to_real, dtype=np.int64), tau)
    shift = ((np.arange(rows.size) % theta) * sigma).astype(np.uint64)
    words = np.repeat(np.asarray(b.masks, dtype=np.uint64), theta)
    near_words = np.repeat(np.asarray(b.near_masks, dtype=np.uint64), theta)
    low = np.uint64((1 << sigma) - 1)
    mask = (words >> shift) & low
    near = (near_words >> shift) & low
    levels = np.full(n, _UNSET, dtype=np.int64)
    levels[seeds] = 0
    frontier = np.zeros(b.n_slice_sets * sigma, dtype=bool)
    frontier[seeds] = True
    phase = 0
    while frontier.any() and (depth_limit is None or 2 * phase < depth_limit):
        bits = frontier.reshape(-1, sigma).astype(np.uint64) << np.arange(sigma, dtype=np.uint64)
        alpha = np.bitwise_or.reduce(bits, axis=1)[sets]
        hit = (mask & alpha) != 0
        is_near = (near & alpha) != 0
        offer = np.where(is_near, 2 * phase + 1, 2 * phase + 2)
        if depth_limit is not None and 2 * phase + 2 > depth_limit:
            hit &= is_near
        np.minimum.at(levels, rows[hit], offer[hit])
        frontier = np.zeros_like(frontier)
        frontier[:n] = levels == 2 * phase + 2
        phase += 1
    return np.where(levels == _UNSET, -1, levels).astype(np.int32)
