"""BFS with shortest-path counts on the CPU: levels, and per vertex the number of shortest
paths from the seeds.

Counts (sigma). Every seed has level 0 and count 1; a vertex w at level L + 1 counts the sum
of the counts of its in-neighbours at level L (a pull over the in-arcs). Unreached vertices
count 0.

The overflow rule. Counts are exact int64 while every count fits (below 2**63). When one
would not (a chain of k diamonds has 2**k shortest paths), the whole result is float64
instead, every count computed in float64 by the same pull (each sum taken left to right over
the in-arcs in ``in_csr`` order, :func:`segment_sums`), and a :class:`RuntimeWarning` says so.
A float64 count is then the exact count up to a relative error of about ``depth * degree *
2**-53``; one that exceeds the float64 range (about 1.8e308) becomes ``inf``.

:func:`segment_sums` is also the summation order of Brandes' betweenness
(:mod:`blest.reference.betweenness`), so that every value there is a fixed function of the
graph and the source.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from blest.reference.bitmaps import concat_ranges
from blest.reference.scipy_bfs import check_seeds

__all__ = ["OVERFLOW_MESSAGE", "bfs_paths", "segment_sums"]

#: The first words of the RuntimeWarning of a count past int64.
OVERFLOW_MESSAGE = "shortest-path counts exceed int64"

#: Float sums at or above this may hide an int64 overflow, and are checked exactly.
_SUSPECT = float(2**62)


def segment_sums(terms: np.ndarray, ptr: np.ndarray) -> np.ndarray:
    """Per segment ``terms[ptr[s]:ptr[s + 1]]``, the float64 sum taken left to right from
    0.0 (``((0.0 + t0) + t1) + ...``); 0.0 for an empty segment.

    Segments are grouped by length (up to twice as long as their shortest), padded at the end
    with +0.0 (which changes no sum of non-negative terms) and summed by a running sum along
    each row (``numpy.cumsum``, a sequential accumulation), so the result does not depend on
    how many segments are summed together.
    """
    terms = np.asarray(terms, dtype=np.float64)
    ptr = np.asarray(ptr, dtype=np.int64)
    lens = np.diff(ptr)
    out = np.zeros(lens.size, dtype=np.float64)
    if terms.size == 0 or lens.size == 0:
        return out
    # class c holds the lengths in (2**(c-1), 2**c]; class 0 the length 1, -1 the empty ones
    classes = np.zeros(lens.size, dtype=np.int64)
    longer = lens > 1
    classes[longer] = np.ceil(np.log2(lens[longer])).astype(np.int64)
    classes[lens == 0] = -1
    for c in np.unique(classes):
        if c < 0:
            continue
        sel = np.flatnonzero(classes == c)
        seg_lens = lens[sel]
        width = int(seg_lens.max())
        if width == 1:
            out[sel] = terms[ptr[sel]]
            continue
        rows = np.zeros((sel.size, width), dtype=np.float64)
        rows[np.arange(width) < seg_lens[:, None]] = terms[concat_ranges(ptr[sel], seg_lens)]
        out[sel] = np.cumsum(rows, axis=1)[:, -1]
    return out


def _frontiers(graph: Any, seeds: np.ndarray, depth_limit: int | None) -> tuple:
    """(levels int32, [vertices of level 0, 1, ...] each sorted) of a BFS over out-arcs."""
    n = int(graph.n)
    ptr, idx = np.asarray(graph.out_ptr), np.asarray(graph.out_idx)
    levels = np.full(n, -1, dtype=np.int32)
    frontier = np.unique(seeds)
    levels[frontier] = 0
    fronts = [frontier]
    while frontier.size and (depth_limit is None or len(fronts) <= depth_limit):
        starts = ptr[frontier]
        heads = idx[concat_ranges(starts, ptr[frontier + 1] - starts)]
        frontier = np.unique(heads[levels[heads] < 0])
        if frontier.size == 0:
            break
        levels[frontier] = len(fronts)
        fronts.append(frontier)
    return levels, fronts


def _pull(graph: Any, levels: np.ndarray, front: np.ndarray, level: int) -> tuple:
    """(in-arc positions of ``front``'s vertices, their segment pointers, and which in-arcs
    come from level ``level - 1``)."""
    in_ptr, in_idx = np.asarray(graph.in_ptr), np.asarray(graph.in_idx)
    starts = in_ptr[front]
    lens = in_ptr[front + 1] - starts
    arcs = concat_ranges(starts, lens)
    seg = np.zeros(front.size + 1, dtype=np.int64)
    np.cumsum(lens, out=seg[1:])
    tails = in_idx[arcs]
    return tails, seg, levels[tails] == level - 1


def _exact_counts(graph: Any, levels: np.ndarray, fronts: list) -> np.ndarray | None:
    """int64 counts, or None when one of them is 2**63 or more."""
    counts = np.zeros(levels.size, dtype=np.int64)
    counts[fronts[0]] = 1
    for level, front in enumerate(fronts[1:], start=1):
        tails, seg, from_above = _pull(graph, levels, front, level)
        terms = np.where(from_above, counts[tails], 0)
        starts = seg[:-1]
        # every vertex of a level > 0 has an in-arc from the level above: no empty segment
        sums = np.add.reduceat(terms, starts) if terms.size else terms
        guess = np.add.reduceat(terms.astype(np.float64), starts) if terms.size else sums
        for s in np.flatnonzero(guess >= _SUSPECT):  # near 2**63: add as Python ints
            exact = sum(int(t) for t in terms[seg[s] : seg[s + 1]].tolist())
            if exact >= 2**63:
                return None
        counts[front] = sums
    return counts


def _float_counts(graph: Any, levels: np.ndarray, fronts: list) -> np.ndarray:
    counts = np.zeros(levels.size, dtype=np.float64)
    counts[fronts[0]] = 1.0
    with np.errstate(over="ignore"):
        for level, front in enumerate(fronts[1:], start=1):
            tails, seg, from_above = _pull(graph, levels, front, level)
            terms = np.where(from_above, counts[tails], 0.0)
            counts[front] = segment_sums(terms, seg)
    return counts


def _first_parents(graph: Any, levels: np.ndarray, fronts: list) -> np.ndarray:
    """The first in-neighbour (``in_csr`` order) one level up of every vertex; -1 for the
    seeds and unreached vertices."""
    parents = np.full(levels.size, -1, dtype=np.int32)
    for level, front in enumerate(fronts[1:], start=1):
        tails, seg, from_above = _pull(graph, levels, front, level)
        hits = np.flatnonzero(from_above)
        first = hits[np.searchsorted(hits, seg[:-1])]  # every segment has one
        parents[front] = tails[first]
    return parents


def bfs_paths(
    graph: Any, seeds: Any, *, depth_limit: int | None = None, parents: bool = False
) -> tuple[np.ndarray, ...]:
    """Levels and shortest-path counts of a BFS over out-arcs from ``seeds``.

    Parameters
    ----------
    graph : Graph
    seeds : int or sequence of int
        One source, or several seeds (all at level 0, count 1 each; repeats allowed).
    depth_limit : int, optional
        Stop after this level; vertices further away get level -1 and count 0.
    parents : bool
        Also return a parent of every vertex: its first in-neighbour (in ``in_csr`` order)
        one level up, -1 for the seeds and unreached vertices.

    Returns
    -------
    (levels, counts) or (levels, parents, counts)
        ``levels`` int32 (-1 unreached), ``parents`` int32, ``counts`` int64, or float64 when
        a count passes int64 (see the module docstring; a RuntimeWarning says so).
    """
    n = int(graph.n)
    levels, fronts = _frontiers(graph, check_seeds(seeds, n), depth_limit)
    counts = _exact_counts(graph, levels, fronts)
    if counts is None:
        warnings.warn(
            f"{OVERFLOW_MESSAGE} (2**63 or more paths): every count is float64, rounded",
            RuntimeWarning,
            stacklevel=2,
        )
        counts = _float_counts(graph, levels, fronts)
    if parents:
        return levels, _first_parents(graph, levels, fronts), counts
    return levels, counts
