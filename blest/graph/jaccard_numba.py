"""JaccardWithWindows on the CPU: the Numba kernels of :func:`blest.graph.jaccard.jaccard_cpu`.

Imported on first use (Numba is optional). The functions are module-level so that Numba's
on-disk cache can find them again in the next process (a jitted closure's cache key holds its
closure, which differs in every process), in the checked cache of :mod:`blest.graph.jit`.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from blest.graph.jit import njit

__all__ = ["order_all"]


@njit(nogil=True)
def lower_bound(a, lo, hi, key):  # pragma: no cover - compiled
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(nogil=True)
def order_window(
    ws, we, sigma, out_ptr, out_idx, in_ptr, in_idx, by_degree, old_of_new
):  # pragma: no cover - compiled
    width = we - ws
    inter = np.zeros(width, np.int64)
    placed = np.zeros(width, np.bool_)
    queue = np.empty(width, np.int32)
    chosen = np.empty(sigma, np.int32)
    next_by_degree = ws
    out = ws
    for s in range((width + sigma - 1) // sigma):
        k_max = min(sigma, width - s * sigma)
        qlen = 0
        rsize = 0
        for k in range(k_max):
            best, bn, bd = -1, 0, 1
            for q in range(qlen):
                c = queue[q]
                if placed[c - ws]:
                    continue
                num = inter[c - ws]
                den = rsize + (out_ptr[c + 1] - out_ptr[c]) - num
                if best < 0 or num * bd > bn * den or (num * bd == bn * den and c < best):
                    best, bn, bd = c, num, den
            if best < 0:
                while placed[by_degree[next_by_degree] - ws]:
                    next_by_degree += 1
                best = by_degree[next_by_degree]
            placed[best - ws] = True
            old_of_new[out] = best
            out += 1
            chosen[k] = best
            if k + 1 == k_max:
                continue
            for i in range(out_ptr[best], out_ptr[best + 1]):
                r = out_idx[i]
                fresh = True
                for p in range(k):
                    o = chosen[p]
                    hi = out_ptr[o + 1]
                    at = lower_bound(out_idx, out_ptr[o], hi, r)
                    if at < hi and out_idx[at] == r:
                        fresh = False
                        break
                if not fresh:
                    continue
                rsize += 1
                hi = in_ptr[r + 1]
                for t in range(lower_bound(in_idx, in_ptr[r], hi, ws), hi):
                    c = in_idx[t]
                    if c >= we:
                        break
                    if placed[c - ws]:
                        continue
                    if inter[c - ws] == 0:
                        queue[qlen] = c
                        qlen += 1
                    inter[c - ws] += 1
        for q in range(qlen):
            inter[queue[q] - ws] = 0


@njit(parallel=True)
def order_all(
    n, window, sigma, out_ptr, out_idx, in_ptr, in_idx, by_degree
):  # pragma: no cover - compiled
    old_of_new = np.empty(n, np.int32)
    n_windows = (n + window - 1) // window
    for w in prange(n_windows):
        ws = w * window
        order_window(
            ws,
            min(n, ws + window),
            sigma,
            out_ptr,
            out_idx,
            in_ptr,
            in_idx,
            by_degree,
            old_of_new,
        )
    return old_of_new
