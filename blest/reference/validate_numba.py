"""The arc scan of :func:`blest.reference.validate.validate_batch` for several results at once
(Numba, optional; imported on first use). Module-level so that Numba's on-disk cache, in the
checked cache of :mod:`blest.graph.jit`, finds it again in the next process."""

from __future__ import annotations

import numpy as np
from numba import prange

from blest.graph.jit import njit

__all__ = ["scan_in_arcs"]


@njit(nogil=True, parallel=True)
def scan_in_arcs(ptr, idx, keys, parents, low, found):  # pragma: no cover - compiled
    """Row v of ``low``: per result, the least key (uint32 level) among v's in-neighbours;
    of ``found`` (when ``parents`` has n rows): whether ``parents[v]`` is one of them (a
    binary search: rows are sorted)."""
    n, k = keys.shape
    with_parents = parents.shape[0] == n
    for v in prange(n):
        a, b = ptr[v], ptr[v + 1]
        for j in range(k):
            low[v, j] = np.uint32(0xFFFFFFFF)
        for e in range(a, b):
            u = idx[e]
            for j in range(k):
                x = keys[u, j]
                if x < low[v, j]:
                    low[v, j] = x
        if with_parents:
            for j in range(k):
                p = parents[v, j]
                lo, hi = a, b
                while lo < hi:
                    mid = (lo + hi) >> 1
                    if idx[mid] < p:
                        lo = mid + 1
                    else:
                        hi = mid
                found[v, j] = lo < b and idx[lo] == p
