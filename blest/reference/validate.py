"""Validation of a BFS result: the five checks of the Graph500 benchmark's BFS validation, for
one or several seeds, on directed graphs too.

Checks, in the order they run (a failure raises :class:`~blest.errors.ValidationError` naming
its check):

* ``format`` — levels are int32 of length n, each >= -1; parents are integers of length n, each
  < n (a negative parent, -1 or SciPy's -9999, means "none").
* ``seeds`` — every seed has level 0 and no parent; no other vertex has level 0.
* ``cycles`` (a) — following parents from any vertex ends at a vertex without a parent.
* ``tree levels`` (b) — a vertex with a parent is one level below it.
* ``arc span`` (c) — for every arc u → v with u reached, v is reached and
  ``level[v] <= level[u] + 1``. On an undirected graph (both arcs stored) this says that the
  ends of an edge are both reached or both unreached, at most one level apart.
* ``spanning`` (d) — the reached vertices (level >= 0) are exactly those reachable from the
  seeds: with parents, reached ⇔ in the tree (a seed, or a vertex with a parent); without,
  every reached vertex at level L > 0 has an in-neighbour at level L - 1. With (c) this fixes
  every level to the BFS distance.
* ``tree arcs`` (e) — each parent p of v is joined to it by an arc p → v.

Without parents only ``format``, ``seeds``, (c) and (d) run. Everything is vectorized.

Cost: the arc checks (c), (d) without parents and (e) read the in-adjacency once, in pieces of
about :data:`PIECE_ARCS` arcs spread over threads (NumPy releases the GIL): per vertex v, the
least level among its in-neighbours (an unreached one counts as +inf) and, with parents,
whether ``parent[v]`` is among them. Given those, (c) holds iff every v with a reached
in-neighbour is reached with ``level[v] <= min + 1``, and then (d) iff every v at level L > 0
has ``min == L - 1``. (b) implies (a) (levels fall by one along every parent pointer), so (a)'s
pointer jumping (``ceil(log2 n) + 1`` rounds of ``p = p[p]``) runs only when (b) fails. A
check that fails this way is rerun arc by arc to name the first offending arc or vertex, so
the messages are those of the plain checks. :func:`validate_batch` checks several results with
one scan (Numba), for benchmarks that validate every timed source of a large graph.
Source: the Graph500 specification, BFS "validation" (Kernel 2 output checks).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from blest.errors import ArgumentError, ValidationError
from blest.reference.scipy_bfs import check_seeds

__all__ = ["CHECKS", "PIECE_ARCS", "validate_batch", "validate_bfs"]

#: Names of the checks, in the order they run.
CHECKS = ("format", "seeds", "cycles", "tree levels", "arc span", "spanning", "tree arcs")

#: Arcs per piece of the in-adjacency scan (bounds its temporaries: ~20 bytes an arc).
PIECE_ARCS = 1 << 23
_NONE = np.uint32(0xFFFFFFFF)  # level -1 read as uint32: larger than any level


def validate_bfs(graph: Any, seeds: Any, levels: Any, parents: Any = None) -> None:
    """Check a BFS result of ``graph`` (a :class:`blest.Graph`) from ``seeds`` (one id or
    several); raise :class:`~blest.errors.ValidationError` at the first failed check."""
    seeds, levels, parents = _checked_inputs(graph, seeds, levels, parents)
    low, found = _scan_in_arcs(graph, levels, parents)
    _judge(graph, seeds, levels, parents, low, found)


def validate_batch(
    graph: Any, sources: Sequence[Any], levels: Sequence[Any], parents: Sequence[Any] | None = None
) -> None:
    """:func:`validate_bfs` of several results of ``graph`` (result i from ``sources[i]``, one
    seed or several; ``parents`` None or one array per result): the same checks, and the same
    error for the first result that fails one. With Numba (the ``jit`` extra) the arcs are read
    once for all results, each in-neighbour's levels of every result in one row of an
    (n, results) array; without it, the results are checked one by one."""
    if len(sources) != len(levels) or (parents is not None and len(parents) != len(levels)):
        raise ArgumentError("need one source and one levels array (and parents) per result")
    if not levels:
        return
    from blest.graph.jaccard import have_numba

    if not have_numba():
        for i, src in enumerate(sources):
            validate_bfs(graph, src, levels[i], None if parents is None else parents[i])
        return
    n = int(graph.n)
    checked = [
        _checked_inputs(graph, src, levels[i], None if parents is None else parents[i])
        for i, src in enumerate(sources)
    ]
    keys = np.empty((n, len(checked)), dtype=np.uint32)
    for i, (_, lv, _) in enumerate(checked):
        keys[:, i] = lv.view(np.uint32)
    tree = np.zeros((0, len(checked)), dtype=np.int32)
    if parents is not None:
        tree = np.empty((n, len(checked)), dtype=np.int32)
        for i, (_, _, par) in enumerate(checked):
            assert par is not None  # parents were given for every result
            tree[:, i] = par
    low = np.empty_like(keys)
    found = np.zeros(keys.shape, dtype=bool)
    from blest.reference.validate_numba import scan_in_arcs

    ptr = np.asarray(graph.in_ptr, dtype=np.int64)
    scan_in_arcs(ptr, np.asarray(graph.in_idx, dtype=np.int32), keys, tree, low, found)
    del keys, tree
    for i, (seeds, lv, par) in enumerate(checked):
        _judge(graph, seeds, lv, par, low[:, i], None if par is None else found[:, i])


def _checked_inputs(
    graph: Any, seeds: Any, levels: Any, parents: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Seeds, levels and parents past the checks that need no arc: format, seeds, and with
    parents, (a) and (b)."""
    n = int(graph.n)
    seeds = np.unique(check_seeds(seeds, n))
    levels = _levels(levels, n)
    if parents is not None:
        parents = _parents(parents, n)
    _check_seeds(levels, parents, seeds)
    if parents is not None and not _tree_levels_hold(levels, parents):
        _check_cycles(parents)
        _check_tree_levels(levels, parents)
        raise AssertionError("tree levels: the fast and the plain check disagree")
    return seeds, levels, parents


def _judge(
    graph: Any,
    seeds: np.ndarray,
    levels: np.ndarray,
    parents: np.ndarray | None,
    low: np.ndarray,
    found: np.ndarray | None,
) -> None:
    """Checks (c), (d) and (e) from the scan's per-vertex least in-neighbour level ``low`` and
    parent-arc flags ``found``; a failure is named by the plain check."""
    low64 = low.astype(np.int64)
    reached_in = low != _NONE
    if not np.all(~reached_in | ((levels >= 0) & (levels <= low64 + 1))):
        _check_arc_span(graph, levels)
        raise AssertionError("arc span: the fast and the plain check disagree")
    if parents is not None:
        _check_spanning(graph, levels, parents, seeds)
    elif not np.all((levels <= 0) | (low64 == levels.astype(np.int64) - 1)):
        _check_spanning(graph, levels, parents, seeds)
        raise AssertionError("spanning: the fast and the plain check disagree")
    if parents is not None and found is not None and not np.all(found | (parents < 0)):
        _check_tree_arcs(graph, parents)
        raise AssertionError("tree arcs: the fast and the plain check disagree")


def _tree_levels_hold(levels: np.ndarray, parents: np.ndarray) -> bool:
    """Check (b) without naming a vertex: every parent is reached, one level up."""
    child = np.flatnonzero(parents >= 0)
    lp = levels[parents[child]]
    return bool(np.all((lp >= 0) & (levels[child] == lp + 1)))


def _scan_in_arcs(
    graph: Any, levels: np.ndarray, parents: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray | None]:
    """Per vertex v: the least level (as uint32, unreached = 0xFFFFFFFF) among its
    in-neighbours (0xFFFFFFFF without any), and with ``parents``, whether ``parents[v]`` is one
    of them. One pass over the in-adjacency, in pieces over threads."""
    n = levels.size
    ptr = np.asarray(graph.in_ptr, dtype=np.int64)
    idx = np.asarray(graph.in_idx)
    key = levels.view(np.uint32)
    low = np.full(n, _NONE, dtype=np.uint32)
    found = None if parents is None else np.zeros(n, dtype=bool)

    def piece(rows: tuple[int, int]) -> None:
        r0, r1 = rows
        a, b = int(ptr[r0]), int(ptr[r1])
        if a == b:
            return
        degree = np.diff(ptr[r0 : r1 + 1])
        busy = np.flatnonzero(degree)
        starts = ptr[r0 + busy] - a
        low[r0 + busy] = np.minimum.reduceat(key[idx[a:b]], starts)
        if found is not None:
            assert parents is not None
            want = np.repeat(parents[r0:r1].astype(idx.dtype), degree)
            found[r0 + busy] = np.logical_or.reduceat(idx[a:b] == want, starts)

    pieces = _pieces(ptr, n)
    if len(pieces) == 1:
        piece(pieces[0])
    else:
        with ThreadPoolExecutor(min(len(pieces), os.cpu_count() or 1)) as pool:
            for _ in pool.map(piece, pieces):
                pass
    return low, found


def _pieces(ptr: np.ndarray, n: int) -> list[tuple[int, int]]:
    """Row ranges [r0, r1) with about :data:`PIECE_ARCS` arcs each (a row is never cut)."""
    m = int(ptr[-1]) if n else 0
    if m <= PIECE_ARCS:
        return [(0, n)]
    cuts = np.searchsorted(ptr, np.arange(0, m, PIECE_ARCS, dtype=np.int64), side="right") - 1
    cuts = np.unique(np.concatenate([[0], cuts, [n]]))  # rows 0.. without arcs lead the first
    return [(int(a), int(b)) for a, b in zip(cuts[:-1], cuts[1:], strict=True)]


def _fail(check: str, message: str) -> None:
    raise ValidationError(check, message)


def _levels(levels: Any, n: int) -> np.ndarray:
    levels = np.asarray(levels)
    if levels.dtype != np.int32 or levels.shape != (n,):
        _fail("format", f"levels must be int32 of shape ({n},), got {levels.dtype} {levels.shape}")
    low = np.flatnonzero(levels < -1)
    if low.size:
        _fail("format", f"vertex {low[0]} has level {levels[low[0]]} (< -1)")
    return levels


def _parents(parents: Any, n: int) -> np.ndarray:
    parents = np.asarray(parents)
    if parents.dtype.kind not in "iu" or parents.shape != (n,):
        got = f"{parents.dtype} {parents.shape}"
        _fail("format", f"parents must be integers of shape ({n},), got {got}")
    high = np.flatnonzero(parents >= n)
    if high.size:
        _fail("format", f"vertex {high[0]} has parent {parents[high[0]]} (>= n = {n})")
    return np.where(parents < 0, -1, parents).astype(np.int64)


def _check_seeds(levels: np.ndarray, parents: np.ndarray | None, seeds: np.ndarray) -> None:
    wrong = seeds[levels[seeds] != 0]
    if wrong.size:
        _fail("seeds", f"seed {wrong[0]} has level {levels[wrong[0]]}, not 0")
    zero = np.flatnonzero(levels == 0)
    extra = zero[~np.isin(zero, seeds)]
    if extra.size:
        _fail("seeds", f"vertex {extra[0]} has level 0 but is not a seed")
    if parents is not None:
        with_parent = seeds[parents[seeds] >= 0]
        if with_parent.size:
            s = with_parent[0]
            _fail("seeds", f"seed {s} has parent {parents[s]}; seeds have none")


def _check_cycles(parents: np.ndarray) -> None:
    n = parents.size
    ids = np.arange(n, dtype=np.int64)
    loops = np.flatnonzero(parents == ids)
    if loops.size:
        _fail("cycles", f"vertex {loops[0]} is its own parent")
    jump = np.where(parents < 0, ids, parents)  # roots point at themselves
    for _ in range(max(1, int(np.ceil(np.log2(max(n, 2))))) + 1):
        nxt = jump[jump]
        if np.array_equal(nxt, jump):
            break
        jump = nxt
    # jump = parents applied 2^k times: a path into a root ends there; a path into a cycle
    # ends on the cycle, at a vertex that still has a parent.
    stuck = np.flatnonzero(parents[jump] >= 0)
    if stuck.size:
        c = jump[stuck[0]]
        _fail("cycles", f"vertex {c} is on a cycle of parents (its parent is {parents[c]})")


def _check_tree_levels(levels: np.ndarray, parents: np.ndarray) -> None:
    child = np.flatnonzero(parents >= 0)
    p = parents[child]
    bad = child[(levels[child] != levels[p] + 1) | (levels[p] < 0)]
    if bad.size:
        v = bad[0]
        _fail(
            "tree levels",
            f"vertex {v} (level {levels[v]}) has parent {parents[v]} at level "
            f"{levels[parents[v]]}; a parent is one level up",
        )


def _arcs(ptr: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    tails = np.repeat(np.arange(ptr.size - 1, dtype=np.int64), np.diff(ptr))
    return tails, np.asarray(idx, dtype=np.int64)


def _check_arc_span(graph: Any, levels: np.ndarray) -> None:
    u, v = _arcs(graph.out_ptr, graph.out_idx)
    lu, lv = levels[u], levels[v]
    bad = np.flatnonzero((lu >= 0) & ((lv < 0) | (lv > lu + 1)))
    if bad.size:
        i = bad[0]
        _fail(
            "arc span",
            f"arc {u[i]} -> {v[i]} goes from level {lu[i]} to level {lv[i]}; an arc from a "
            "reached vertex leads to a reached vertex at most one level further",
        )


def _check_spanning(
    graph: Any, levels: np.ndarray, parents: np.ndarray | None, seeds: np.ndarray
) -> None:
    reached = levels >= 0
    if parents is not None:
        in_tree = parents >= 0
        in_tree[seeds] = True
        bad = np.flatnonzero(reached != in_tree)
        if bad.size:
            v = bad[0]
            state = "reached but not in the tree" if reached[v] else "in the tree but unreached"
            _fail("spanning", f"vertex {v} (level {levels[v]}) is {state}")
        return
    v, u = _arcs(graph.in_ptr, graph.in_idx)  # arc u -> v, listed at its head v
    witness = (levels[v] > 0) & (levels[u] == levels[v] - 1)
    has = np.zeros(levels.size, dtype=bool)
    has[v[witness]] = True
    bad = np.flatnonzero((levels > 0) & ~has)
    if bad.size:
        x = bad[0]
        _fail(
            "spanning",
            f"vertex {x} has level {levels[x]} but no in-neighbour at level {levels[x] - 1}: "
            "it is not reachable that way",
        )


def _check_tree_arcs(graph: Any, parents: np.ndarray) -> None:
    n = parents.size
    child = np.flatnonzero(parents >= 0)
    want = parents[child] * n + child
    tails, heads = _arcs(graph.out_ptr, graph.out_idx)
    have = tails * n + heads  # sorted: out_csr rows ascend and each row's columns are sorted
    if have.size:
        at = np.minimum(np.searchsorted(have, want), have.size - 1)
        missing = child[have[at] != want]
    else:
        missing = child
    if missing.size:
        v = missing[0]
        _fail("tree arcs", f"vertex {v} has parent {parents[v]} but the graph has no arc "
              f"{parents[v]} -> {v}")  # fmt: skip
