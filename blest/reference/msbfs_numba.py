"""The bit-parallel group search of :mod:`blest.reference.msbfs_cpu`, compiled by Numba (the
optional ``jit`` extra): the same frame, the same levels, the same counts, without a NumPy
call per level.

A level pulls into the same range of positions as the NumPy search. Its new words are added
into bit-sliced counters (plane j holds bit j of every source's count, an addition is a carry
ripple of a few word operations), read out once per level. The search runs a bounded number of
levels per call and keeps its state in arrays, so a histogram buffer of any depth is never
needed. Compiled on first use, in memory only (no cache on disk).
"""

from __future__ import annotations

import functools
import threading
from typing import Any

import numpy as np

from blest.reference.msbfs_cpu import GROUP, Frame

__all__ = ["compile_now", "group_counts", "have_numba"]

#: Levels counted per call of the compiled loop.
LEVELS_PER_CALL = 4096


def have_numba() -> bool:
    """True when Numba imports."""
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


#: The compiled loop's argument types (compiled eagerly, so that forked workers inherit it).
SIGNATURE = (
    "int64(int64[:, ::1], int64[::1], int64[::1], int64[::1], int64[::1], int64[::1], "
    "int64[::1], uint64[::1], uint64[::1], uint64[::1], int64[::1], int64[:, ::1])"
)


@functools.lru_cache(maxsize=1)
def _kernel() -> Any:
    """The compiled level loop (compiled at the first call of this function)."""
    import numba

    @numba.njit(SIGNATURE, nogil=True, cache=False)
    def run(
        preds: np.ndarray,
        extra: np.ndarray,
        extra_ptr: np.ndarray,
        extra_idx: np.ndarray,
        level_start: np.ndarray,
        level: np.ndarray,
        low: np.ndarray,
        f: np.ndarray,
        f2: np.ndarray,
        u: np.ndarray,
        state: np.ndarray,
        counts: np.ndarray,
    ) -> int:
        """Run up to ``len(counts)`` levels; return how many were counted. ``state``: depth,
        near, far, first and last frontier position + 1, done, which of f / f2 is current."""
        one = np.uint64(1)
        zero = np.uint64(0)
        top = level_start.size - 2
        planes = np.zeros(33, dtype=np.uint64)
        n_pred = preds.shape[0]
        directed = low.size > 0
        near, far, lo_pos, hi_pos = state[1], state[2], state[3], state[4]
        cur, nxt = (f, f2) if state[6] == 0 else (f2, f)
        counted = 0
        while counted < counts.shape[0]:
            lo = level_start[min(max(near, 0), top + 1)]
            hi = level_start[min(far, top) + 1]
            if hi <= lo:
                state[5] = 1
                break
            x = np.searchsorted(extra, lo)
            first = -1
            last = -1
            least = top + 1
            used = 0
            for p in range(lo, hi):
                w = cur[preds[0, p]]
                for j in range(1, n_pred):
                    w |= cur[preds[j, p]]
                if x < extra.size and extra[x] == p:
                    for a in range(extra_ptr[x], extra_ptr[x + 1]):
                        w |= cur[extra_idx[a]]
                    x += 1
                w &= u[p]
                nxt[p] = w
                if w != zero:
                    u[p] ^= w
                    if first < 0:
                        first = p
                    last = p
                    if directed and low[p] < least:
                        least = low[p]
                    carry = w  # add w into the bit-sliced counters
                    j = 0
                    while carry != zero:
                        t = planes[j] & carry
                        planes[j] ^= carry
                        carry = t
                        j += 1
                    if j > used:
                        used = j
            for p in range(lo_pos, hi_pos):
                cur[p] = zero
            cur, nxt = nxt, cur
            state[6] = 1 - state[6]
            if first < 0:
                state[5] = 1
                break
            for b in range(GROUP):
                total = 0
                for j in range(used):
                    total |= np.int64((planes[j] >> np.uint64(b)) & one) << j
                counts[counted, b] = total
            for j in range(used):
                planes[j] = zero
            counted += 1
            state[0] += 1
            lo_pos, hi_pos = first, last + 1
            near = least if directed else level[lo_pos] - 1
            far = level[hi_pos - 1] + 1
        state[1], state[2], state[3], state[4] = near, far, lo_pos, hi_pos
        return counted

    return run


def compile_now() -> None:
    """Compile the loop here (a second or two), before worker processes are forked."""
    _kernel()


def group_counts(frame: Frame, members: np.ndarray) -> np.ndarray:
    """As :func:`blest.reference.msbfs_cpu.group_counts`, compiled."""
    run = _kernel()
    k = frame.k
    preds = frame.preds
    level_start = np.asarray(frame.level_start, dtype=np.int64)
    low = frame.low if frame.low is not None else np.zeros(0, dtype=np.int64)
    f, f2, u, counts = _buffers(k)
    at = frame.pos[members]
    f[at] = np.left_shift(np.uint64(1), np.arange(members.size, dtype=np.uint64))
    u[at] ^= f[at]
    level = frame.level
    lo_pos, hi_pos = int(at.min()), int(at.max()) + 1
    near = int(low[at].min()) if low.size else int(level[lo_pos]) - 1
    far = int(level[hi_pos - 1]) + 1
    state = np.array([0, near, far, lo_pos, hi_pos, 0, 0], dtype=np.int64)
    parts = [np.ones((1, GROUP), dtype=np.int64)]
    while not state[5]:
        done = run(
            preds, frame.extra, frame.extra_ptr, frame.extra_idx, level_start, level, low,
            f, f2, u, state, counts,
        )  # fmt: skip
        parts.append(counts[:done].copy())
    return np.ascontiguousarray(np.concatenate(parts).T[: members.size])


_local = threading.local()


def _buffers(k: int) -> tuple[np.ndarray, ...]:
    """This thread's frontier words (zero), unvisited masks (all ones) and histogram rows for
    ``k`` positions, reused from call to call (fresh pages cost more than filling old ones)."""
    held = getattr(_local, "buffers", None)
    if held is None or held[2].size < k:
        held = (
            np.empty(k + 1, dtype=np.uint64),
            np.empty(k + 1, dtype=np.uint64),
            np.empty(k, dtype=np.uint64),
            np.empty((LEVELS_PER_CALL, GROUP), dtype=np.int64),
        )
        _local.buffers = held
    f, f2, u, counts = held[0][: k + 1], held[1][: k + 1], held[2][:k], held[3]
    f.fill(0)
    f2.fill(0)
    u.fill(~np.uint64(0))
    return f, f2, u, counts
