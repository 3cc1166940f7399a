"""Bit-parallel multi-source BFS on the CPU: 64 searches per machine word, in NumPy.

A *group* of up to 64 sources runs as one level-synchronous search. Each vertex holds three
64-bit words, one bit per source: F (the sources whose search reached it at the last level), U
(the sources that have not reached it yet) and the next frontier, pulled from its predecessors:
``next(v) = OR of F(u) over the arcs u -> v``, then ``next &= U(v)`` and ``U(v) ^= next``.

Which vertices can gain bits at a level is bounded by one BFS from the group's centre ``c``.
The group is ``c`` and the 63 sources nearest to it (:func:`plan_groups`), and every vertex is
numbered by its position in ``c``'s BFS order, so the vertices at one distance from ``c`` (one
*c-level*) are one contiguous range. A vertex reached at the next level is a successor of a
frontier vertex: at most one c-level farther from ``c`` and, on an undirected graph, at most
one nearer (on a directed graph, the nearest c-level of any successor of the frontier). So a
level pulls only into the contiguous range of positions spanning those c-levels: a handful of
NumPy calls on slices, which matters on deep graphs (road networks: about a thousand levels).

Per source the result is the level histogram ``cnt[L]``, counted from the new words of every
level by a vertical popcount (bit ``8 i + j`` of each word moved into byte lane ``i`` by
``(w >> j) & 0x0101..01`` and summed over at most 255 words). The sums made from it
(:func:`blest.reference.centrality.sums_from_counts`) are those of the SciPy reference, bit
for bit.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import breadth_first_order

from blest.graph.core import Graph

__all__ = [
    "GROUP",
    "bit_parallel_pays",
    "Frame",
    "Traversal",
    "group_counts",
    "group_levels",
    "plan_groups",
    "vertical_counts",
]

#: Sources per group: the bits of one word.
GROUP = 64
#: New words counted at once (the vertical popcount's working set stays in cache).
COUNT_ROWS = 8192
#: The cost model of :func:`bit_parallel_pays` (seconds; their ratios are what matter): a
#: position pulled in a level's range, a level, a level written out by the bit-parallel
#: search; a vertex or arc of one SciPy BFS, and the rest of a SciPy BFS (levels and sums).
ROW_COST = 4e-9
LEVEL_COST = 20e-6
WRITE_COST = 6e-9
SCIPY_COST = 9e-9
SCIPY_CALL = 100e-6
#: A position and a level of the search compiled by Numba.
JIT_ROW_COST = 2.5e-9
JIT_LEVEL_COST = 1e-6
_LANES = np.uint64(0x0101010101010101)
_SHIFTS = np.arange(8, dtype=np.uint64)
_ONE = np.uint64(1)
_BITS = np.left_shift(_ONE, np.arange(GROUP, dtype=np.uint64))


@dataclass(frozen=True, eq=False)
class Traversal:
    """The graph as a search walks it: ``succ`` the arcs a BFS follows, ``pred`` the reverse
    (what a level pulls over); ``symmetric`` when they are the same arcs. ``nth[j][v]`` is
    vertex v's predecessor j, for the first few (see :func:`_padded`; ``n`` where it has
    fewer), and ``more`` marks the vertices with further ones."""

    n: int
    succ_ptr: np.ndarray
    succ_idx: np.ndarray
    pred_ptr: np.ndarray
    pred_idx: np.ndarray
    symmetric: bool
    matrix: sp.csr_matrix
    nth: tuple[np.ndarray, ...]
    more: np.ndarray

    @classmethod
    def of(cls, graph: Graph, reverse: bool) -> Traversal:
        """BFS over out-arcs, or over in-arcs when ``reverse`` (distances *to* the source)."""
        out = (_own(graph.out_ptr), _own(graph.out_idx))
        inn = out if not graph.directed else (_own(graph.in_ptr), _own(graph.in_idx))
        succ, pred = (inn, out) if reverse else (out, inn)
        n = int(graph.n)
        matrix = sp.csr_matrix(
            (np.ones(succ[1].size), succ[1].astype(np.int32), succ[0].astype(np.int32)),
            shape=(n, n),
        )
        ptr, idx = pred
        deg = np.diff(ptr)
        nth = []
        for j in range(_padded(deg)):
            ids = np.full(n, n, dtype=np.int64)
            has = np.flatnonzero(deg > j)
            ids[has] = idx[ptr[has] + j]
            nth.append(ids)
        return cls(n, *succ, *pred, not graph.directed, matrix, tuple(nth), deg > len(nth))


def _own(a: np.ndarray) -> np.ndarray:
    """``a`` as a C-contiguous, writeable int64 array (a copy unless it already is one: the
    compiled search takes writeable arrays)."""
    return np.require(a, np.int64, ["C", "W"])


def _padded(deg: np.ndarray) -> int:
    """Predecessors a level reads by plain gathers (the rest by a segmented OR): the fewest,
    from 1 to 4, that leave at most 1/32 of the vertices with more."""
    for count in (1, 2, 3):
        if np.count_nonzero(deg > count) * 32 <= deg.size:
            return count
    return 4


@dataclass(frozen=True, eq=False)
class Frame:
    """One centre's view of the graph: its BFS order and the pull arrays in positions.

    ``order[p]`` is the vertex at position ``p`` (the ``k`` vertices the centre reaches, by
    distance), ``pos`` the inverse (``k`` for the others and at index ``n``), ``level[p]`` the
    c-level and ``level_start[L]`` the first position of c-level ``L`` (``level_start[-1] ==
    k``). A position's first predecessors are ``preds[j, p]`` (``k``, a word that stays zero,
    when it has fewer); the others, of the positions ``extra``, are the CSR ``extra_ptr``,
    ``extra_idx``. ``low[p]`` (directed graphs only) is the least c-level of the
    successors of position ``p``.
    """

    order: np.ndarray
    pos: np.ndarray
    level: np.ndarray
    level_start: list[int]
    preds: np.ndarray
    extra: np.ndarray
    extra_ptr: np.ndarray
    extra_idx: np.ndarray
    low: np.ndarray | None

    @property
    def k(self) -> int:
        return int(self.order.size)

    def radius(self, members: np.ndarray) -> int:
        """The largest c-level of ``members``."""
        return int(self.level[self.pos[members]].max())

    @classmethod
    def around(cls, trav: Traversal, centre: int) -> Frame:
        order, pred = breadth_first_order(
            trav.matrix, int(centre), directed=True, return_predecessors=True
        )
        order = order.astype(np.int64)
        k = order.size
        pos = np.full(trav.n + 1, k, dtype=np.int64)
        pos[order] = np.arange(k, dtype=np.int64)
        level_start = _level_starts(pos[pred[order[1:]]], k)
        level = np.repeat(np.arange(len(level_start) - 1, dtype=np.int64), np.diff(level_start))
        preds = np.empty((len(trav.nth), k), dtype=np.int64)
        for j, ids in enumerate(trav.nth):
            np.take(pos, ids[order], out=preds[j])
        extra = np.flatnonzero(trav.more[order])
        vertices = order[extra]
        start = trav.pred_ptr[vertices] + preds.shape[0]
        more = trav.pred_ptr[vertices + 1] - start
        extra_ptr = np.zeros(extra.size + 1, dtype=np.int64)
        np.cumsum(more, out=extra_ptr[1:])
        extra_idx = pos[trav.pred_idx[_ranges(start, more, extra_ptr)]]
        low = None
        if not trav.symmetric:
            low = _least_successor_level(trav, order, pos, level)
        return cls(order, pos, level, level_start, preds, extra, extra_ptr, extra_idx, low)


def _ranges(starts: np.ndarray, counts: np.ndarray, ptr: np.ndarray) -> np.ndarray:
    """``concatenate(arange(s, s + c))`` over the ranges; ``ptr`` is their exclusive cumsum
    with the total last."""
    total = int(ptr[-1])
    return np.repeat(starts - ptr[:-1], counts) + np.arange(total, dtype=np.int64)


def _level_starts(parent: np.ndarray, k: int) -> list[int]:
    """First position of every level of a BFS order of ``k`` vertices, then ``k``, from the
    positions of the parents of positions 1 .. k-1.

    Along a BFS order the parents' positions never decrease, so level L + 1 ends where the
    first position whose parent lies past level L stands: the number of positions whose parent
    comes before the start of level L + 1, a prefix count.
    """
    before = np.zeros(k + 1, dtype=np.int64)
    np.cumsum(np.bincount(parent, minlength=k), out=before[1:])  # before[x]: parents < x
    starts = [0, 1]
    while starts[-1] < k:
        starts.append(1 + int(before[starts[-1]]))
    return starts


def _least_successor_level(
    trav: Traversal, order: np.ndarray, pos: np.ndarray, level: np.ndarray
) -> np.ndarray:
    """Per position, the least c-level among its successors (past the deepest if none)."""
    first = trav.succ_ptr[order]
    deg = trav.succ_ptr[order + 1] - first
    low = np.full(order.size, int(level[-1]) + 1, dtype=np.int64)
    has = np.flatnonzero(deg)
    if has.size:
        ptr = np.zeros(has.size + 1, dtype=np.int64)
        np.cumsum(deg[has], out=ptr[1:])
        heads = pos[trav.succ_idx[_ranges(first[has], deg[has], ptr)]]
        low[has] = np.minimum.reduceat(level[heads], ptr[:-1])
    return low


# ---------------------------------------------------------------------------- planning
def plan_groups(trav: Traversal, sources: np.ndarray) -> Iterator[np.ndarray]:
    """Groups of at most :data:`GROUP` distinct sources, each led by its centre (element 0).

    Greedy balls: a centre, then the sources nearest to it (by a bounded BFS from it that
    stops once it has seen 64 ungrouped sources); the next centre is the next ungrouped source
    that search met, so consecutive balls touch, or, when it met none, the smallest ungrouped
    source. Every source of a group is reachable from its centre.
    """
    n = trav.n
    todo = np.zeros(n, dtype=bool)
    todo[sources] = True
    left = int(np.count_nonzero(todo))
    seen = np.zeros(n, dtype=np.int64)  # stamp of the last search that saw each vertex
    ptr, idx = trav.succ_ptr, trav.succ_idx
    cursor = 0
    ordered = np.sort(sources)
    stamp = 0
    centre = int(ordered[0]) if left else 0
    while left:
        stamp += 1
        found, nxt = _nearest(ptr, idx, centre, todo, seen, stamp, GROUP + 1)
        group = found[:GROUP]
        todo[group] = False
        left -= group.size
        yield group
        if not left:
            return
        if nxt is not None and todo[nxt]:
            centre = nxt
            continue
        while not todo[ordered[cursor]]:
            cursor += 1
        centre = int(ordered[cursor])


def _nearest(
    ptr: np.ndarray,
    idx: np.ndarray,
    centre: int,
    todo: np.ndarray,
    seen: np.ndarray,
    stamp: int,
    want: int,
) -> tuple[np.ndarray, int | None]:
    """The first ``want`` ungrouped sources in BFS order from ``centre`` (centre first), as
    (the first ``want - 1``, the next one or None)."""
    frontier = np.array([centre], dtype=np.int64)
    seen[centre] = stamp
    found = [frontier]
    count = 1
    while count < want and frontier.size:
        first = ptr[frontier]
        deg = ptr[frontier + 1] - first
        total = int(deg.sum())
        if total == 0:
            break
        offsets = np.zeros(deg.size + 1, dtype=np.int64)
        np.cumsum(deg, out=offsets[1:])
        heads = idx[_ranges(first, deg, offsets)]
        heads = heads[seen[heads] != stamp]
        heads = np.unique(heads)
        seen[heads] = stamp
        frontier = heads
        hit = heads[todo[heads]]
        found.append(hit)
        count += hit.size
    ids = np.concatenate(found)[:want]
    if ids.size == want:
        return ids[: want - 1], int(ids[-1])
    return ids, None


def bit_parallel_pays(
    trav: Traversal, frame: Frame, members: np.ndarray, levels: bool, jit: bool = False
) -> bool:
    """Whether the bit-parallel search of a group is expected to be faster than one SciPy BFS
    per member (``levels``: when the levels are written out, not only counted; ``jit``: the
    search compiled by Numba, :mod:`blest.reference.msbfs_numba`).

    A level of the group pulls into c-levels spanning twice the group's radius r, so the
    search costs about ``(2 r + 3) k`` positions and ``depth + r`` levels; a group of sources
    scattered over a deep graph is better searched one source at a time.
    """
    r = frame.radius(members)
    depth = len(frame.level_start) - 2
    row, level = (JIT_ROW_COST, JIT_LEVEL_COST) if jit else (ROW_COST, LEVEL_COST)
    cost = row * (2 * r + 3) * frame.k + level * (depth + r)
    if levels:
        cost += WRITE_COST * members.size * frame.k
    return cost < members.size * (SCIPY_COST * (trav.n + trav.succ_idx.size) + SCIPY_CALL)


# ---------------------------------------------------------------------------- one group
def _search(
    frame: Frame, members: np.ndarray, keep: bool
) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """Run the group's levels; yield ``(level, positions, words)`` of every level from 1 on:
    the positions that gained bits (a mask of the level's range unless ``keep``) and the bits
    they gained."""
    k = frame.k
    level_start, level = frame.level_start, frame.level
    top = len(level_start) - 2  # the deepest c-level
    f = np.zeros(k + 1, dtype=np.uint64)  # position k stays zero: "no predecessor"
    f2 = np.zeros(k + 1, dtype=np.uint64)
    u = np.full(k, _member_bits(members.size), dtype=np.uint64)
    scratch = np.empty(k, dtype=np.uint64)
    flags = np.empty(k, dtype=bool)
    at = frame.pos[members]
    f[at] = _BITS[: members.size]
    u[at] ^= f[at]
    lo_pos, hi_pos = int(at.min()), int(at.max()) + 1
    low = frame.low
    near = int(low[at].min()) if low is not None else int(level[lo_pos]) - 1
    far = int(level[hi_pos - 1]) + 1
    first_pred, *other_preds = frame.preds
    extra, extra_idx = frame.extra, frame.extra_idx
    extra_at, extra_ptr = extra.tolist(), frame.extra_ptr.tolist()
    depth = 0
    while True:
        depth += 1
        lo = level_start[min(max(near, 0), top + 1)]
        hi = level_start[min(far, top) + 1]
        if hi <= lo:  # no successors (a directed graph)
            return
        nxt = f2[lo:hi]
        np.take(f, first_pred[lo:hi], out=nxt, mode="clip")
        tmp = scratch[: hi - lo]
        for pred in other_preds:
            np.take(f, pred[lo:hi], out=tmp, mode="clip")
            nxt |= tmp
        x0, x1 = bisect_left(extra_at, lo), bisect_left(extra_at, hi)
        if x1 > x0:
            a0 = extra_ptr[x0]
            more = np.bitwise_or.reduceat(
                f[extra_idx[a0 : extra_ptr[x1]]], frame.extra_ptr[x0:x1] - a0
            )
            nxt[extra[x0:x1] - lo] |= more
        mask = u[lo:hi]
        nxt &= mask
        mask ^= nxt
        f[lo_pos:hi_pos] = 0
        f, f2 = f2, f
        hit = np.not_equal(nxt, 0, out=flags[: hi - lo])
        first = int(hit.argmax())
        if not hit[first]:
            return
        last = hi - lo - int(hit[::-1].argmax())
        yield depth, (np.flatnonzero(hit) + lo if keep else hit), nxt[hit]
        lo_pos, hi_pos = lo + first, lo + last
        if low is not None:
            near = int(low[lo:hi][hit].min())
        else:
            near = int(level[lo_pos]) - 1
        far = int(level[hi_pos - 1]) + 1


def group_counts(frame: Frame, members: np.ndarray) -> np.ndarray:
    """Level histograms of the group's searches: int64 ``(len(members), depth + 1)``, row i
    for ``members[i]`` (``cnt[0] == 1``)."""
    parts = [np.ones((1, GROUP), dtype=np.int64)]
    words: list[np.ndarray] = []
    rows: list[int] = []
    pending = 0
    for _, _, gained in _search(frame, members, keep=False):
        words.append(gained)
        rows.append(gained.size)
        pending += gained.size
        if pending >= COUNT_ROWS:
            parts.append(vertical_counts(np.concatenate(words), np.asarray(rows)))
            words, rows, pending = [], [], 0
    if words:
        parts.append(vertical_counts(np.concatenate(words), np.asarray(rows)))
    return np.ascontiguousarray(np.concatenate(parts).T[: members.size])


def vertical_counts(words: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Per run of ``rows[L]`` consecutive words (each run nonempty), how many words have each
    bit set: int64 ``(len(rows), 64)``, column ``b`` for bit ``b``."""
    runs = rows.size
    nseg = (rows + 254) // 255  # a byte lane holds at most 255
    first = np.cumsum(nseg) - nseg
    starts = np.cumsum(rows) - rows
    seg = np.repeat(starts - first * 255, nseg) + 255 * np.arange(int(nseg.sum()))
    sums = np.empty((seg.size, 8), dtype="<u8")
    lane = np.empty_like(words)
    for j in range(8):  # byte i of lane j holds bit 8 i + j
        np.right_shift(words, _SHIFTS[j], out=lane)
        lane &= _LANES
        sums[:, j] = np.add.reduceat(lane, seg)
    counts = sums.view(np.uint8).reshape(-1, 8, 8).astype(np.int64)  # [segment, j, i]
    if counts.shape[0] != runs:
        counts = np.add.reduceat(counts, first, axis=0)
    return counts.transpose(0, 2, 1).reshape(runs, GROUP)


def group_levels(frame: Frame, members: np.ndarray, out: np.ndarray) -> None:
    """Write the levels of the group's searches into ``out`` (int32 ``(len(members), n)``,
    row i for ``members[i]``; -1 where unreachable)."""
    out.fill(-1)
    out[np.arange(members.size), members] = 0
    flat = out.reshape(-1)
    n = out.shape[1]
    order = frame.order
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    pending = 0
    for depth, at, gained in _search(frame, members, keep=True):
        parts.append((order[at], gained, np.full(at.size, depth, dtype=np.int32)))
        pending += at.size
        if pending >= COUNT_ROWS:
            _write_levels(flat, n, parts)
            parts, pending = [], 0
    if parts:
        _write_levels(flat, n, parts)


def _member_bits(count: int) -> np.uint64:
    """The word with the bits of ``count`` members (the low ``count`` bits) set."""
    return np.uint64((1 << count) - 1)


def _bit_index(bit: np.ndarray) -> np.ndarray:
    """The index of the one bit set in each word (int64): the binary exponent of the word as
    a float64, exact for every power of two up to 2**63."""
    return np.frexp(bit.astype(np.float64))[1].astype(np.int64) - 1


def _write_levels(flat: np.ndarray, n: int, parts: list) -> None:
    """``flat[b * n + v] = level`` for every bit b of every word gained at vertex v."""
    vertex, words, level = (np.concatenate(p) for p in zip(*parts, strict=True))
    while words.size:
        low = words & (~words + _ONE)  # the lowest bit set
        flat[_bit_index(low) * n + vertex] = level
        words ^= low
        left = words != 0
        vertex, words, level = vertex[left], words[left], level[left]
