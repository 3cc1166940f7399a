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

from blest.reference.msbfs_cpu import GROUP, Frame, Traversal, _member_bits

__all__ = ["compile_now", "frame_around", "group_counts", "have_numba"]

#: Levels counted per call of the compiled loop.
LEVELS_PER_CALL = 4096
#: Per thread: the buffers of the last frame and of the last search.
_local = threading.local()


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
                if u[p] == zero:  # every source has reached p
                    nxt[p] = zero
                    if x < extra.size and extra[x] == p:
                        x += 1
                    continue
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


#: Argument types of the compiled frame builder.
FRAME_SIGNATURE = (
    "int64(int64[::1], int64[::1], int64[::1], int64[::1], int64, int64[::1], int64[::1], "
    "int64[::1], int64[:, ::1], int64[::1], int64[::1], int64[::1], int64[::1], boolean)"
)


@functools.lru_cache(maxsize=1)
def _frame_kernel() -> Any:
    """The compiled frame builder: a queue BFS from the centre, then the pull arrays."""
    import numba

    @numba.njit(FRAME_SIGNATURE, nogil=True, cache=False)
    def build(
        succ_ptr: np.ndarray,
        succ_idx: np.ndarray,
        pred_ptr: np.ndarray,
        pred_idx: np.ndarray,
        centre: int,
        order: np.ndarray,
        pos: np.ndarray,
        level: np.ndarray,
        preds: np.ndarray,
        extra: np.ndarray,
        extra_ptr: np.ndarray,
        extra_idx: np.ndarray,
        low: np.ndarray,
        directed: bool,
    ) -> int:
        """Fill the frame's arrays (sized for every vertex); return k. ``extra_ptr[0]`` on
        return holds the number of extra positions, ``extra_ptr[1:]`` their offsets + 1."""
        n = pos.size - 1
        pos[:] = -1
        order[0] = centre
        pos[centre] = 0
        level[0] = 0
        tail = 1
        for head in range(n):
            if head >= tail:
                break
            v = order[head]
            for a in range(succ_ptr[v], succ_ptr[v + 1]):
                t = succ_idx[a]
                if pos[t] < 0:
                    pos[t] = tail
                    order[tail] = t
                    level[tail] = level[head] + 1
                    tail += 1
        k = tail
        for v in range(n + 1):
            if pos[v] < 0:
                pos[v] = k
        padded = preds.shape[0]
        x = 0
        used = 0
        for p in range(k):
            v = order[p]
            first = pred_ptr[v]
            deg = pred_ptr[v + 1] - first
            for j in range(padded):
                preds[j, p] = pos[pred_idx[first + j]] if j < deg else k
            if deg > padded:
                extra[x] = p
                for a in range(first + padded, first + deg):
                    extra_idx[used] = pos[pred_idx[a]]
                    used += 1
                x += 1
                extra_ptr[x] = used
        extra_ptr[0] = x
        if directed:
            for p in range(k):
                v = order[p]
                least = level[k - 1] + 1
                for a in range(succ_ptr[v], succ_ptr[v + 1]):
                    t = level[pos[succ_idx[a]]]
                    if t < least:
                        least = t
                low[p] = least
        return k

    return build


def frame_around(trav: Traversal, centre: int) -> Frame:
    """As :meth:`blest.reference.msbfs_cpu.Frame.around`, compiled (the same arrays: a queue
    BFS over the CSR visits vertices in the order SciPy's does). The frame's arrays are this
    thread's buffers: it is valid until the next call in the same thread."""
    build = _frame_kernel()
    n = trav.n
    held = getattr(_local, "frame", None)
    shape = (n, len(trav.nth), trav.pred_idx.size)
    if held is None or held[0] != shape:
        size = max(n, 1)
        held = (
            shape,
            np.empty(size, dtype=np.int64),  # order
            np.empty(n + 1, dtype=np.int64),  # pos
            np.empty(size, dtype=np.int64),  # level
            np.empty((len(trav.nth), size), dtype=np.int64),  # preds
            np.empty(size, dtype=np.int64),  # extra
            np.zeros(size + 1, dtype=np.int64),  # extra_ptr
            np.empty(max(trav.pred_idx.size, 1), dtype=np.int64),  # extra_idx
            np.empty(size, dtype=np.int64),  # low
        )
        _local.frame = held
    _, order, pos, level, preds, extra, extra_ptr, extra_idx, low = held
    directed = not trav.symmetric
    k = build(
        trav.succ_ptr, trav.succ_idx, trav.pred_ptr, trav.pred_idx, int(centre), order, pos,
        level, preds, extra, extra_ptr, extra_idx, low, directed,
    )  # fmt: skip
    x = int(extra_ptr[0])
    offsets = extra_ptr[: x + 1].copy()
    offsets[0] = 0
    level = level[:k]
    starts = np.searchsorted(level, np.arange(int(level[-1]) + 2)).tolist()
    return Frame(
        order[:k],
        pos,
        level,
        starts,
        preds[:, :k],
        extra[:x],
        offsets,
        extra_idx[: offsets[-1]],
        low[:k] if directed else None,
    )


def compile_now() -> None:
    """Compile here (a second or two), before worker processes are forked."""
    _kernel()
    _frame_kernel()


def group_counts(frame: Frame, members: np.ndarray) -> np.ndarray:
    """As :func:`blest.reference.msbfs_cpu.group_counts`, compiled."""
    run = _kernel()
    k = frame.k
    preds = np.ascontiguousarray(frame.preds)
    level_start = np.asarray(frame.level_start, dtype=np.int64)
    low = frame.low if frame.low is not None else np.zeros(0, dtype=np.int64)
    f, f2, u, counts = _buffers(k, members.size)
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


def _buffers(k: int, sources: int) -> tuple[np.ndarray, ...]:
    """This thread's frontier words (zero), unvisited masks (one bit per source) and histogram
    rows for ``k`` positions, reused from call to call (fresh pages cost more than filling old
    ones)."""
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
    u.fill(_member_bits(sources))
    return f, f2, u, counts
