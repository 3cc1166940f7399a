"""Exact reductions of the BFSs behind closeness and harmonic centrality: which vertices need a
BFS of their own, and how the sums of the others follow, bit for bit.

The sums of a BFS from u (over in-arcs: distances *to* u) depend only on u's level histogram
``cnt_u[L]`` (:mod:`blest.reference.centrality`). On an undirected graph:

* **isolated** (``alone``): a vertex without arcs reaches only itself: ``dist = 0``,
  ``reach = 1``, ``harmonic = 0.0``, as its BFS gives. On a directed graph the same holds for
  a vertex without in-arcs; it is the only reduction made there.
* **twins**: vertices with the same neighbours, adjacent (closed twins, ``N[v] == N[w]``) or not
  (open twins, ``N(v) == N(w)``), see every other vertex at the same distance and each other at
  distance 1 or 2, so their histograms are equal: one BFS per class, its sums copied (looked for
  among the vertices of degree at most :data:`TWIN_MAX_DEGREE`).
* **leaves**: a vertex v of degree one, whose neighbour u (its hub) has more, sees u at level 1
  and every vertex that u sees at level ``L`` (but v) at level ``L + 1``: ``reach_v = reach_u``,
  ``dist_v = dist_u + reach_u - 2``, and its harmonic sum is u's *pendant* harmonic sum, which
  the BFS from u accumulates with the very terms, in the very order, of v's own sum. The leaves
  of one hub are open twins; a component of two vertices is a pair of closed twins.

Twin classes are found by hashing neighbour lists (a sum of 64-bit mixes of the neighbours'
ids, order-free and vectorised), then every candidate is checked against its class's first
vertex, list against list: a hash collision costs a few more checks, or leaves vertices in BFSs
of their own, and never merges two that are not twins. :func:`plan_sources` turns the vertices
to score into a :class:`SourcePlan`: the sorted vertices to BFS, and for each vertex scored
where its sums come from. The plan depends on the graph and the vertices only, so every process
of a run that spans several computes the same one.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import numpy as np

from blest.graph.core import Graph

__all__ = ["ALONE", "COPY", "LEAF", "TWIN_MAX_DEGREE", "SourcePlan", "plan_sources", "twin_classes"]

#: How the sums of a scored vertex follow: a copy of a BFS's sums (its own, or a twin's), the
#: leaf formula from its hub's sums, or those of a vertex that reaches nothing.
COPY, LEAF, ALONE = 0, 1, 2

#: Rounds of checks among the vertices whose hash collided with another class's (each round
#: takes the first of them as a new class); any left after these keep BFSs of their own.
COLLISION_ROUNDS = 8
#: Largest degree of the twins looked for: hashing the neighbour lists of every vertex costs a
#: pass over every arc (about 1 s of the 2.2 s plan of kron-21's 63.5M arcs on two cores), and
#: twins of higher degree are rare (none on kron-21, 36 of wiki_chameleon's 1,017 twins).
TWIN_MAX_DEGREE = 64
#: Arcs gathered at once while hashing and checking neighbour lists (int64 positions: 128 MiB).
CHUNK_ARCS = 1 << 24


class PerSourceSums(Protocol):
    """What :meth:`SourcePlan.expand` reads and builds
    (:class:`~blest.reference.centrality.SourceSums`)."""

    @property
    def dist(self) -> np.ndarray: ...
    @property
    def reach(self) -> np.ndarray: ...
    @property
    def harmonic(self) -> np.ndarray: ...
    @property
    def pendant(self) -> np.ndarray | None: ...
    def zeros(self: S, k: int) -> S: ...


S = TypeVar("S", bound=PerSourceSums)


@dataclass(frozen=True, eq=False)
class SourcePlan:
    """The BFSs a run needs and how the sums of every scored vertex follow from theirs.

    Attributes
    ----------
    bfs : ndarray of int64
        The vertices to BFS (increasing, no repeats; the scored vertices as given when the
        plan reduces nothing).
    origin : ndarray of int64
        Per scored vertex (in the order given): the position in ``bfs`` of the BFS its sums
        follow from (-1 for ``ALONE``).
    how : ndarray of int8
        Per scored vertex: ``COPY``, ``LEAF`` or ``ALONE``.
    scored : int
        Distinct vertices scored.
    alone, leaves, twins : int
        Distinct scored vertices that reach nothing, that follow from their hub, and whose
        sums are a twin's.
    """

    bfs: np.ndarray
    origin: np.ndarray
    how: np.ndarray
    scored: int
    alone: int = 0
    leaves: int = 0
    twins: int = 0

    @classmethod
    def identity(cls, vertices: Any) -> SourcePlan:
        """No reduction: a BFS from every vertex given, repeats included."""
        bfs = np.asarray(vertices, dtype=np.int64)
        k = int(bfs.size)
        return cls(bfs, np.arange(k, dtype=np.int64), np.full(k, COPY, np.int8), k)

    @property
    def pendant(self) -> bool:
        """Whether the BFSs must give pendant harmonic sums (some leaf follows from a hub)."""
        return self.leaves > 0

    @property
    def saved(self) -> int:
        """BFSs saved: distinct vertices scored, less the BFSs run."""
        return max(0, self.scored - int(self.bfs.size))

    def summary(self) -> str:
        """One line: the BFSs run and those the reductions saved."""
        return (
            f"{self.bfs.size:,} BFSs for {self.scored:,} vertices, {self.saved:,} saved by "
            f"exact reductions ({self.alone:,} isolated, {self.leaves:,} leaves, "
            f"{self.twins:,} twins)"
        )

    def expand(self, sums: S) -> S:
        """The sums of every scored vertex (in the order given) from those of :attr:`bfs`
        (with pendant sums where a leaf follows from its hub)."""
        if len(sums.dist) != self.bfs.size:
            raise ValueError(f"{len(sums.dist)} sums for a plan of {self.bfs.size} BFSs")
        out = sums.zeros(int(self.how.size))
        copy = np.flatnonzero(self.how == COPY)
        at = self.origin[copy]
        out.dist[copy], out.reach[copy] = sums.dist[at], sums.reach[at]
        out.harmonic[copy] = sums.harmonic[at]
        leaf = np.flatnonzero(self.how == LEAF)
        if leaf.size:
            if sums.pendant is None:
                raise ValueError("leaves follow from their hubs' pendant harmonic sums")
            hub = self.origin[leaf]
            out.reach[leaf] = sums.reach[hub]
            out.dist[leaf] = sums.dist[hub] + sums.reach[hub] - 2
            out.harmonic[leaf] = sums.pendant[hub]
        out.reach[self.how == ALONE] = 1
        return out


# ---------------------------------------------------------------------------- planning
def plan_sources(graph: Graph, vertices: Any) -> SourcePlan:
    """The plan of the BFSs that give the sums of ``vertices`` (ids 0 .. n-1, any order,
    repeats allowed) over in-arcs, with every reduction that applies to ``graph`` (see the
    module docstring)."""
    users = np.asarray(vertices, dtype=np.int64).ravel()
    wanted, inverse = _unique(users)
    ptr, idx = graph.in_ptr, graph.in_idx
    degree = np.diff(ptr)
    deg = degree[wanted]
    how = np.where(deg == 0, ALONE, COPY).astype(np.int8)
    key = wanted.copy()
    twins = 0
    if not graph.directed:
        hub = np.full(wanted.size, -1, dtype=np.int64)
        ones = np.flatnonzero(deg == 1)
        hub[ones] = idx[ptr[wanted[ones]]]
        leaf = np.zeros(wanted.size, dtype=bool)
        leaf[ones] = degree[hub[ones]] > 1
        how[leaf] = LEAF
        key[leaf] = hub[leaf]
        rows = _unique(key[how != ALONE])[0]
        rep = rows.copy()
        small = degree[rows] <= TWIN_MAX_DEGREE  # twins have equal degrees
        rep[small] = twin_classes(graph, rows[small])
        moved = rep != rows
        key[how != ALONE] = rep[np.searchsorted(rows, key[how != ALONE])]
        twins = int(np.count_nonzero(moved[np.searchsorted(rows, wanted[how == COPY])]))
    key[how == ALONE] = -1
    bfs = _unique(key[key >= 0])[0]
    origin = np.where(key >= 0, np.searchsorted(bfs, key), -1)
    return SourcePlan(
        bfs=bfs,
        origin=origin[inverse],
        how=how[inverse],
        scored=int(wanted.size),
        alone=int(np.count_nonzero(how == ALONE)),
        leaves=int(np.count_nonzero(how == LEAF)),
        twins=twins,
    )


def _unique(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values, increasing, and the position of each value among them (a sort,
    skipped when the values are increasing already)."""
    if values.size and np.all(values[1:] > values[:-1]):
        return values, np.arange(values.size, dtype=np.int64)
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    new = np.ones(values.size, dtype=bool)
    new[1:] = ordered[1:] != ordered[:-1]
    inverse = np.empty(values.size, dtype=np.int64)
    inverse[order] = np.cumsum(new) - 1
    return ordered[new], inverse


def twin_classes(graph: Graph, rows: Any) -> np.ndarray:
    """For each of ``rows`` (increasing vertex ids of an undirected graph, none isolated) the
    smallest of them that is its twin, open or closed (itself when none is), checked exactly."""
    rows = np.asarray(rows, dtype=np.int64)
    ptr, idx = graph.out_ptr, graph.out_idx
    rep = rows.copy()
    if rows.size < 2:
        return rep
    mix = _mix(np.arange(graph.n, dtype=np.uint64))
    deg = np.diff(ptr)[rows]
    open_hash = _row_sums(ptr, idx, rows, mix) + _mix(deg.astype(np.uint64) + np.uint64(graph.n))
    for closed in (False, True):
        free = rep == rows  # a vertex with an open twin has no closed one: one class each
        if closed:
            free[np.searchsorted(rows, rep[rep != rows])] = False
        at = np.flatnonzero(free)
        hashes = open_hash + mix[rows] if closed else open_hash
        for _ in range(COLLISION_ROUNDS):
            member, head = _candidates(hashes[at])
            if not member.size:
                break
            v, r = rows[at[member]], rows[at[head]]
            ok = _same_closed(ptr, idx, v, r) if closed else _same_open(ptr, idx, v, r)
            rep[at[member[ok]]] = r[ok]
            at = np.sort(at[member[~ok]])  # collided with another class: try among themselves
    return rep


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finalizer: a 64-bit mix of each value (uint64, wrapping)."""
    with np.errstate(over="ignore"):
        z = x + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _chunks(ptr: np.ndarray, rows: np.ndarray) -> Iterator[slice]:
    """Consecutive slices of ``rows`` holding at most CHUNK_ARCS arcs (or one row)."""
    ends = np.cumsum(np.diff(ptr)[rows])
    start = 0
    while start < rows.size:
        base = int(ends[start - 1]) if start else 0
        stop = max(start + 1, int(np.searchsorted(ends, base + CHUNK_ARCS, side="right")))
        yield slice(start, stop)
        start = stop


def _arcs(ptr: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions in the adjacency of the arcs of ``rows``, one after the other, and the index
    in ``rows`` of the row of each."""
    lengths = np.diff(ptr)[rows]
    seg = np.repeat(np.arange(rows.size, dtype=np.int64), lengths)
    firsts = np.cumsum(lengths) - lengths
    return ptr[rows][seg] + (np.arange(seg.size, dtype=np.int64) - firsts[seg]), seg


def _row_sums(ptr: np.ndarray, idx: np.ndarray, rows: np.ndarray, mix: np.ndarray) -> np.ndarray:
    """Per row, the sum (mod 2**64) of the mixes of its neighbours: from the arcs of ``rows``
    alone, or, when they hold a good share of the graph's, from a pass over every arc."""
    if 4 * int(np.diff(ptr)[rows].sum()) < idx.size:
        out = np.zeros(rows.size, dtype=np.uint64)
        for part in _chunks(ptr, rows):
            pos, _ = _arcs(ptr, rows[part])
            out[part] = _segment_sums(mix[idx[pos]], np.diff(ptr)[rows[part]])
        return out
    every = np.zeros(ptr.size - 1, dtype=np.uint64)
    for part in _chunks(ptr, np.arange(ptr.size - 1)):
        lo, hi = int(ptr[part.start]), int(ptr[part.stop])
        every[part] = _segment_sums(mix[idx[lo:hi]], np.diff(ptr[part.start : part.stop + 1]))
    return every[rows]


def _segment_sums(values: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Sums (uint64, wrapping) of consecutive segments of ``values`` of the given lengths."""
    total = np.zeros(values.size + 1, dtype=np.uint64)
    np.cumsum(values, dtype=np.uint64, out=total[1:])
    ends = np.cumsum(lengths)
    return total[ends] - total[ends - lengths]


def _candidates(hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions that share their hash with an earlier one, and that earlier first one."""
    order = np.argsort(hashes, kind="stable")
    sorted_hashes = hashes[order]
    new = np.ones(order.size, dtype=bool)
    new[1:] = sorted_hashes[1:] != sorted_hashes[:-1]
    first = order[np.maximum.accumulate(np.where(new, np.arange(order.size), 0))]
    return order[~new], first[~new]


def _same_open(ptr: np.ndarray, idx: np.ndarray, v: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Whether ``N(v[i]) == N(r[i])``, list against list."""
    ok = np.diff(ptr)[v] == np.diff(ptr)[r]
    at = np.flatnonzero(ok)
    for part in _chunks(ptr, v[at]):
        pv, seg = _arcs(ptr, v[at][part])
        pr, _ = _arcs(ptr, r[at][part])
        ok[at[part][seg[idx[pv] != idx[pr]]]] = False
    return ok


def _same_closed(ptr: np.ndarray, idx: np.ndarray, v: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Whether ``N[v[i]] == N[r[i]]``: v and r are adjacent, and their neighbour lists without
    each other agree (on an undirected graph each drops one entry or none: they stay aligned)."""
    ok = np.diff(ptr)[v] == np.diff(ptr)[r]
    at = np.flatnonzero(ok)
    for part in _chunks(ptr, v[at]):
        vs, rs = v[at][part], r[at][part]
        pv, seg = _arcs(ptr, vs)
        pr, _ = _arcs(ptr, rs)
        nv, nr = idx[pv], idx[pr]
        drop_v, drop_r = nv == rs[seg], nr == vs[seg]
        adjacent = np.bincount(seg[drop_v], minlength=vs.size) > 0
        adjacent[seg[~drop_v][nv[~drop_v] != nr[~drop_r]]] = False
        ok[at[part]] = adjacent
    return ok
