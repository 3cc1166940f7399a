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

Without parents only ``format``, ``seeds``, (c) and (d) run. Everything is vectorized; (a) uses
pointer jumping (``ceil(log2 n) + 1`` rounds of ``p = p[p]``).
Source: the Graph500 specification, BFS "validation" (Kernel 2 output checks).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from blest.errors import ValidationError
from blest.reference.scipy_bfs import check_seeds

__all__ = ["CHECKS", "validate_bfs"]

#: Names of the checks, in the order they run.
CHECKS = ("format", "seeds", "cycles", "tree levels", "arc span", "spanning", "tree arcs")


def validate_bfs(graph: Any, seeds: Any, levels: Any, parents: Any = None) -> None:
    """Check a BFS result of ``graph`` (a :class:`blest.Graph`) from ``seeds`` (one id or
    several); raise :class:`~blest.errors.ValidationError` at the first failed check."""
    n = int(graph.n)
    seeds = np.unique(check_seeds(seeds, n))
    levels = _levels(levels, n)
    if parents is not None:
        parents = _parents(parents, n)
    _check_seeds(levels, parents, seeds)
    if parents is not None:
        _check_cycles(parents)
        _check_tree_levels(levels, parents)
    _check_arc_span(graph, levels)
    _check_spanning(graph, levels, parents, seeds)
    if parents is not None:
        _check_tree_arcs(graph, parents)


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
