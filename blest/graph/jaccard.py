"""JaccardWithWindows (Blest paper, Alg. 1): a vertex order that packs columns with overlapping
neighbourhoods into the same slice set, so BVSS has fewer, denser slices.

Reading of the paper in blest's conventions (docs/conventions.md): A[i][j] = 1 iff arc j→i, so
column j of A is the out-neighbour list of j (``out_csr`` row j); its *rows* are those
out-neighbours and its *degree* is the out-degree. Slice set s holds the σ columns placed at
positions [sσ, (s+1)σ), and row i costs one slice there iff some of them has i as out-neighbour:
packing columns with common rows lowers the slice count. ``in_csr`` row r (Aᵀ) lists the columns
that have row r.

Algorithm, for slice width ``sigma`` (σ) and window width ``window`` (W, W mod σ = 0):

* The column range [0, n) is cut into windows [w_s, w_e) of W columns (the last may be short);
  each window is ordered on its own, so the permutation keeps every vertex in its window.
* In a window, ⌈(w_e − w_s)/σ⌉ slice sets are built one after the other (a
  correction of the paper's floor, which drops columns when the width is not a multiple of σ);
  each takes σ unplaced columns (the last one what is left):
  - seed: the unplaced column of highest degree;
  - R = union of the rows of the columns placed in this slice set; Q = unplaced window columns
    sharing a row with R; inter[c] = |col(c) ∩ R|, kept incrementally: when a column joins,
    each of its rows new to R adds 1 to inter of the unplaced window columns of that row
    (found through ``in_csr``, binary-searched to the window);
  - next: argmax over Q of the Jaccard index inter / (|R| + deg(c) − inter), compared exactly
    as fractions; when Q is empty, the seed rule again.
  Every argmax breaks ties by the lowest vertex id (a second correction), so the
  result is one well-defined permutation.
* Output: ``old_of_new`` = the chosen columns, window by window, in the order chosen.

Implementations, all giving the identical permutation: :func:`jaccard_reference` (plain Python on
sets, for tests), :func:`jaccard_cpu` (Numba, the optional ``jit`` extra; windows in parallel) and
the GPU kernel (one thread block per window; rendered from ``templates/jaccard.cu.j2``, compiled
and launched by :mod:`blest.runtime.jaccard_gpu`). ``ordering.jaccard_with_windows`` runs the
CPU one; without Numba it returns RCM with a note (see :class:`~blest.graph.ordering.Permutation`'s
``notes``).

Source: D. Elbek and K. Kaya, "Blest: Blazingly Efficient BFS using Tensor Cores" (2025), Alg. 1
(JaccardWithWindows), with the two corrections above.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Any

import numpy as np

from blest.defaults import DEFAULT_SIGMA as _SIGMA
from blest.defaults import JACCARD_WINDOW
from blest.errors import ArgumentError
from blest.graph.core import Graph
from blest.signals import held_signals

__all__ = [
    "DEFAULT_SIGMA",
    "DEFAULT_WINDOW",
    "OrderingFallbackWarning",
    "check_parameters",
    "degree_order",
    "have_numba",
    "jaccard_cpu",
    "jaccard_reference",
]

DEFAULT_SIGMA = _SIGMA
DEFAULT_WINDOW = JACCARD_WINDOW
NUMBA_MISSING = (
    "numba is not installed and no GPU is usable: JaccardWithWindows fell back to RCM "
    "(pip install 'blest-bfs[jit]' for the CPU path)"
)


class OrderingFallbackWarning(UserWarning):
    """An ordering could not run here and another one was used instead."""


def check_parameters(graph: Graph, sigma: int, window: int) -> tuple[int, int]:
    sigma, window = int(sigma), int(window)
    if not 1 <= sigma <= 32:
        raise ArgumentError(f"sigma must be in 1..32, got {sigma}")
    if window < sigma or window % sigma:
        raise ArgumentError(f"window must be a positive multiple of sigma={sigma}, got {window}")
    if window >= 2**31:
        raise ArgumentError(f"window must be below 2**31, got {window}")
    return sigma, window


def degree_order(graph: Graph, window: int) -> np.ndarray:
    """Each window's columns by (out-degree descending, id ascending), windows in order (int32).

    The seed rule reads it front to back, skipping placed columns.
    """
    n = graph.n
    ids = np.arange(n, dtype=np.int64)
    deg = np.diff(graph.out_ptr)
    return np.lexsort((ids, -deg, ids // window)).astype(np.int32)


# --------------------------------------------------------------------------- reference
def jaccard_reference(
    graph: Graph, sigma: int = DEFAULT_SIGMA, window: int = DEFAULT_WINDOW
) -> np.ndarray:
    """``old_of_new`` by the plain definition (Python sets, exact fractions). Tests only.

    Recomputes every |col(c) ∩ R| from scratch at every step: independent of the incremental
    bookkeeping the fast paths use.
    """
    sigma, window = check_parameters(graph, sigma, window)
    n = graph.n
    cols = [
        frozenset(graph.out_idx[graph.out_ptr[j] : graph.out_ptr[j + 1]].tolist()) for j in range(n)
    ]
    order: list[int] = []
    for ws in range(0, n, window):
        we = min(n, ws + window)
        remaining = set(range(ws, we))
        for s in range(math.ceil((we - ws) / sigma)):
            rows: set[int] = set()
            for _ in range(min(sigma, we - ws - s * sigma)):
                q = [c for c in remaining if rows and not rows.isdisjoint(cols[c])]
                if q:
                    best = max(
                        q, key=lambda c: (Fraction(len(cols[c] & rows), len(cols[c] | rows)), -c)
                    )
                else:
                    best = min(remaining, key=lambda c: (-len(cols[c]), c))
                remaining.remove(best)
                order.append(best)
                rows |= cols[best]
    return np.asarray(order, dtype=np.int32)


# --------------------------------------------------------------------------- CPU (Numba)
def have_numba() -> bool:
    """True when the optional ``jit`` extra (Numba) imports."""
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


@functools.lru_cache(maxsize=1)
def _numba_kernels() -> Any:
    """The driver of the per-window greedy loop (:mod:`blest.graph.jaccard_numba`), compiled
    by Numba at its first call and cached on disk where that is safe (:mod:`blest.graph.jit`)."""
    from blest.graph.jaccard_numba import order_all

    return order_all


def jaccard_cpu(
    graph: Graph, sigma: int = DEFAULT_SIGMA, window: int = DEFAULT_WINDOW
) -> np.ndarray:
    """``old_of_new`` on the CPU with Numba (windows in parallel threads).

    Raises ImportError when Numba is missing (``pip install 'blest-bfs[jit]'``).
    """
    sigma, window = check_parameters(graph, sigma, window)
    if graph.n == 0:
        return np.zeros(0, dtype=np.int32)
    kernel = _numba_kernels()
    args = (
        np.int64(graph.n),
        np.int64(window),
        np.int64(sigma),
        np.ascontiguousarray(graph.out_ptr, dtype=np.int64),
        np.ascontiguousarray(graph.out_idx, dtype=np.int32),
        np.ascontiguousarray(graph.in_ptr, dtype=np.int64),
        np.ascontiguousarray(graph.in_idx, dtype=np.int32),
        degree_order(graph, window),
    )
    # The first call compiles. A stop signal is acted on after it: raised inside one of
    # LLVM's callbacks, its exception would be printed as "ignored" and lost.
    with held_signals():
        return kernel(*args)
