"""Level-by-level NumPy emulation of the blest BFS kernels (docs/algorithm.md, exactly).

Each level L is either expanded top-down on (emulated) tensor cores over the queued VSSs, with
the eager update (Blest paper, Alg. 2: visited check, level write and queue append in the hot
path) or the lazy update (Alg. 3: marks into V_next, then a finalization sweep over all words or,
with dirty sets, over the dirty words plus the old frontier's words), or - lazy variants with
switching only - bottom-up on CUDA cores over ``in_csr`` (Alg. 4) when
``unvisited_L < eta * |Q_L|`` (with ``alpha > 0``, and ``alpha * m_f > m_u``: the in-arcs of
F_L against those of the unvisited vertices) or, with ``beta > 0`` after a bottom-up level,
while ``|F_L| * beta >= n``. The per-level popcounts come from the bit-exact MMA emulation
(:mod:`blest.reference.mma`) on the real fragment packing, vectorized over all VSSs of the queue.
Buffers are kept the way the kernels keep them (one frontier buffer overwritten in place by the
lazy finalization, V_next cleared only where finalized), so a wrong word set shows up as a wrong
state. The recorded per-level states are the same for every variant (docs/algorithm.md).

Several seeds start together at level 0 (``F_0`` = every seed, ``Q_0`` = the VSSs of every slice
set holding one). :func:`emulate_parents` is the parents post-pass of the kernels: the first
in-neighbour, in ``in_csr`` order, one level up.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from blest.defaults import DEFAULT_ALPHA, DEFAULT_BETA, DEFAULT_ETA
from blest.errors import ArgumentError
from blest.reference.bitmaps import (
    bitmap_to_bool,
    bits_set,
    concat_ranges,
    ids_to_bitmap,
    ids_to_words,
    popcount32,
    set_alphas,
    sets_of_words,
    vss_of_sets,
    words_to_ids,
)
from blest.reference.mma import SIGMAS, slot_popcounts
from blest.reference.scipy_bfs import check_seeds

__all__ = ["LevelState", "EmulatorResult", "emulate_bfs", "emulate_parents", "emulate_spec"]

TOP_DOWN = "top_down"
BOTTOM_UP = "bottom_up"
#: VSSs per batch of the emulated MMA (bounds the (batch, 8, 8, 4) temporaries).
_CHUNK = 8192


@dataclass(frozen=True, eq=False)
class LevelState:
    """State at the start of level ``level`` (after level ``level - 1`` was finalized).

    ``frontier``: F_L words; ``visited``: words of vertices with level <= L; ``queue``: sorted
    VSS ids of Q_L (int64); ``direction``: how level L was expanded, ``"top_down"`` or
    ``"bottom_up"``, or None where the run stopped (F_L empty, or L == depth_limit);
    ``unvisited``: n - popcount(visited).
    """

    level: int
    frontier: np.ndarray
    visited: np.ndarray
    queue: np.ndarray
    direction: str | None
    unvisited: int


@dataclass(frozen=True, eq=False)
class EmulatorResult:
    """Levels (int32, -1 unreachable, internal ids), depth (largest level reached) and, when
    recorded, one :class:`LevelState` per level the run reached: levels 0 .. depth + 1 (the
    last one with an empty frontier), or 0 .. depth_limit when the limit stopped it."""

    levels: np.ndarray
    depth: int
    states: list[LevelState] | None = None

    @property
    def directions(self) -> list[str | None]:
        if self.states is None:
            raise ArgumentError("states were not recorded (record=False)")
        return [s.direction for s in self.states]

    @property
    def bottom_up_levels(self) -> tuple[int, ...]:
        """The levels that ran bottom-up, as ``BFSStats.bottom_up_levels`` lists them."""
        return tuple(i for i, d in enumerate(self.directions) if d == BOTTOM_UP)


def _in_adjacency(graph_or_in_csr: Any, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(in_ptr, in_idx) from a Graph, a SciPy sparse in_csr, or a (ptr, idx) pair."""
    g = graph_or_in_csr
    if hasattr(g, "in_ptr") and hasattr(g, "in_idx"):
        if int(g.n) != n:
            raise ArgumentError(f"graph has {g.n} vertices but the BVSS has {n}")
        return np.asarray(g.in_ptr, dtype=np.int64), np.asarray(g.in_idx, dtype=np.int64)
    if hasattr(g, "tocsr"):
        m = g.tocsr()
        if m.shape != (n, n):
            raise ArgumentError(f"in_csr has shape {m.shape}, expected ({n}, {n})")
        if not m.has_sorted_indices:
            m = m.sorted_indices()
        return np.asarray(m.indptr, dtype=np.int64), np.asarray(m.indices, dtype=np.int64)
    ptr, idx = g
    ptr = np.asarray(ptr, dtype=np.int64)
    if ptr.shape != (n + 1,):
        raise ArgumentError(f"in_ptr must have n + 1 = {n + 1} entries, got {ptr.shape}")
    return ptr, np.asarray(idx, dtype=np.int64)


def _top_down_reached(
    masks: np.ndarray,
    rows: np.ndarray,
    v2r: np.ndarray,
    alphas: np.ndarray,
    queue: np.ndarray,
    sigma: int,
) -> np.ndarray:
    """Row ids reached by the VSSs of ``queue`` (with repeats): slots whose MMA count is > 0."""
    out = [np.zeros(0, dtype=np.int64)]
    for start in range(0, queue.size, _CHUNK):
        q = queue[start : start + _CHUNK]
        counts = slot_popcounts(masks[q], alphas[v2r[q]], sigma)  # (k, 32, theta)
        hit = counts.reshape(q.size, -1) > 0  # position lane*theta + slot
        out.append(rows[q][hit].astype(np.int64))
    return np.concatenate(out)


def _bottom_up_reached(
    in_ptr: np.ndarray, in_idx: np.ndarray, visited: np.ndarray, frontier: np.ndarray, n: int
) -> np.ndarray:
    """Unvisited vertices with an in-neighbour in the frontier (Alg. 4), ascending."""
    unv = np.flatnonzero(~bitmap_to_bool(visited, n))
    starts = in_ptr[unv]
    deg = in_ptr[unv + 1] - starts
    nbrs = in_idx[concat_ranges(starts, deg)]
    owner = np.repeat(np.arange(unv.size, dtype=np.int64), deg)
    hits = np.bincount(owner[bits_set(frontier, nbrs)], minlength=unv.size)
    return unv[hits > 0]


@dataclass(eq=False)
class _Run:
    """The mutable state of one emulated traversal (internal ids, as the kernels keep it)."""

    masks: np.ndarray
    rows: np.ndarray
    real_ptrs: np.ndarray
    v2r: np.ndarray
    sigma: int
    n: int
    levels: np.ndarray
    frontier: np.ndarray
    visited: np.ndarray
    v_next: np.ndarray
    dirty: np.ndarray
    queue: np.ndarray
    unvisited: int

    @classmethod
    def start(cls, b: Any, seeds: np.ndarray) -> _Run:
        """Level 0: every seed (sorted, no repeats) in F_0 and visited, its VSSs in Q_0."""
        sigma, n, nv = int(b.sigma), int(b.n), b.n_vss
        levels = np.full(n, -1, dtype=np.int32)
        levels[seeds] = 0
        frontier = ids_to_bitmap(seeds, n)
        real_ptrs = np.asarray(b.real_ptrs, dtype=np.int64)
        return cls(
            masks=np.asarray(b.masks, dtype=np.uint32).reshape(nv, 32),
            rows=np.asarray(b.row_ids).reshape(nv, b.tau),
            real_ptrs=real_ptrs,
            v2r=np.asarray(b.virtual_to_real, dtype=np.int64),
            sigma=sigma,
            n=n,
            levels=levels,
            frontier=frontier,
            visited=frontier.copy(),
            v_next=np.zeros_like(frontier),
            dirty=np.zeros(frontier.size, dtype=bool),
            queue=vss_of_sets(np.unique(seeds // sigma), real_ptrs),  # Q_0 (queue="vss")
            unvisited=n - int(seeds.size),
        )


def _check_options(update: str, queue: str, switching: bool, dirty_sets: bool) -> None:
    if update not in ("eager", "lazy"):
        raise ArgumentError(f"update must be 'eager' or 'lazy', got {update!r}")
    if queue not in ("vss", "sweep", "resident"):
        raise ArgumentError(f"queue must be 'vss', 'sweep' or 'resident', got {queue!r}")
    if queue == "resident" and update != "eager":
        raise ArgumentError("queue='resident' needs update='eager'")
    if update == "eager" and (switching or dirty_sets):
        raise ArgumentError("dirty_sets and switching need update='lazy' (it owns V_next)")


def _update_eager(r: _Run, candidates: np.ndarray, queue: str) -> np.ndarray:
    """atomicOr(visited) decides who is new; F_{L+1} is a fresh buffer; the first thread to
    light a slice set appends its VSSs. Returns the new vertices."""
    new_ids = np.unique(candidates)
    w, bits = ids_to_words(new_ids)
    r.frontier = np.zeros_like(r.frontier)
    r.frontier[w] = bits
    r.visited[w] |= bits
    r.unvisited -= int(new_ids.size)
    if queue == "vss":
        r.queue = vss_of_sets(np.unique(new_ids // r.sigma), r.real_ptrs)
    return new_ids


def _update_lazy(r: _Run, candidates: np.ndarray, queue: str, dirty_sets: bool) -> np.ndarray:
    """No-return atomicOr into V_next, then finalization over every word (or, with dirty sets,
    over the dirty words and the old frontier's words). Returns the new vertices."""
    w, bits = ids_to_words(candidates)
    r.v_next[w] |= bits
    if dirty_sets:  # top-down and bottom-up mark the words they OR into alike
        r.dirty[w] = True
    if dirty_sets:
        fin = np.flatnonzero(r.dirty | (r.frontier != 0))
    else:
        fin = np.arange(r.frontier.size, dtype=np.int64)
    new = r.v_next[fin] & ~r.visited[fin]
    r.visited[fin] |= new
    r.frontier[fin] = new  # in place: words outside ``fin`` keep their old value
    r.v_next[fin] = 0
    r.dirty[fin] = False
    r.unvisited -= int(popcount32(new).sum(dtype=np.int64))
    if queue == "vss":
        r.queue = vss_of_sets(sets_of_words(new, fin, r.sigma), r.real_ptrs)
    return words_to_ids(new, fin)


def _edge_ratio_allows(
    alpha: float, in_deg: np.ndarray, frontier: np.ndarray, visited: np.ndarray, n: int
) -> bool:
    """The edge-ratio guard: ``alpha * m_f > m_u`` in doubles, as the kernels compare them."""
    m_f = int(in_deg[bitmap_to_bool(frontier, n)].sum(dtype=np.uint64))
    m_u = int(in_deg[~bitmap_to_bool(visited, n)].sum(dtype=np.uint64))
    return alpha * float(m_f) > float(m_u)


def emulate_bfs(
    bvss: Any,
    graph_or_in_csr: Any,
    src: Any,
    *,
    update: str = "lazy",
    switching: bool = False,
    eta: float = DEFAULT_ETA,
    beta: float = DEFAULT_BETA,
    alpha: float = DEFAULT_ALPHA,
    dirty_sets: bool = False,
    queue: str = "vss",
    depth_limit: int | None = None,
    record: bool = True,
) -> EmulatorResult:
    """Run one BFS from ``src`` (one id or several seeds) the way the generated kernels do, on
    the CPU.

    Parameters
    ----------
    bvss : BVSS
        BVSS of the graph (any sigma); ids are its internal ids.
    graph_or_in_csr : Graph, scipy sparse matrix, (in_ptr, in_idx) or None
        In-adjacency for the bottom-up step (row v = in-neighbours of v); only read when
        ``switching``. A Graph is also checked against the BVSS.
    src : int or sequence of int
        Source vertex, or several seeds all at level 0 (internal ids; repeats allowed).
    update : "eager" or "lazy"
    switching : bool
        Lazy only: bottom-up at levels with ``unvisited < eta * |Q|`` (see ``beta``).
    eta : float
        Switching constant.
    beta : float
        Return rule: after a bottom-up level, bottom-up again while ``|F_L| * beta >= n``
        (eta is not consulted there); 0 turns it off.
    alpha : float
        Edge-ratio guard beside eta: a level that eta sends bottom-up goes so only when also
        ``alpha * m_f > m_u`` (m_f: the in-arcs of F_L; m_u: those of the unvisited vertices);
        0 turns it off.
    dirty_sets : bool
        Lazy only: finalize only dirty V_next words plus the old frontier's words. Both the
        top-down and the bottom-up step mark the words they OR into V_next as dirty.
    queue : "vss", "sweep" or "resident"
        Materialized VSS queue, or a sweep over all VSSs skipping those with alpha == 0
        (``resident``, eager only, expands the same VSSs as the sweep).
    depth_limit : int, optional
        Stop after computing level ``depth_limit``.
    record : bool
        Keep a copy of every level's state.
    """
    _check_options(update, queue, switching, dirty_sets)
    if depth_limit is not None and int(depth_limit) < 0:
        raise ArgumentError(f"depth_limit must be >= 0, got {depth_limit}")
    b = bvss.to_numpy()
    sigma, n = int(b.sigma), int(b.n)
    if sigma not in SIGMAS:
        raise ArgumentError(f"unsupported sigma {sigma}")
    if hasattr(graph_or_in_csr, "n") and int(graph_or_in_csr.n) != n:
        raise ArgumentError(f"graph has {graph_or_in_csr.n} vertices but the BVSS has {n}")
    seeds = np.unique(check_seeds(src, n))
    lazy = update == "lazy"
    if switching and graph_or_in_csr is None:
        raise ArgumentError("switching needs the in-adjacency (a Graph or in_csr)")
    in_adj = _in_adjacency(graph_or_in_csr, n) if switching else None
    in_deg = np.diff(in_adj[0]).astype(np.uint64) if in_adj is not None and alpha > 0 else None
    r = _Run.start(b, seeds)
    states: list[LevelState] = []
    level = 0
    after_bottom_up = False
    while True:
        alphas = set_alphas(r.frontier, sigma, b.n_slice_sets)
        if queue != "vss":  # sweep, resident: every VSS, skipping those of no frontier bit
            r.queue = np.flatnonzero(alphas[r.v2r] != 0)
        stop = not r.frontier.any() or (depth_limit is not None and level >= depth_limit)
        direction = None
        if not stop:
            if after_bottom_up and beta > 0:
                bottom_up = int(popcount32(r.frontier).sum(dtype=np.int64)) * beta >= n
            else:
                bottom_up = lazy and switching and r.unvisited < eta * r.queue.size
                if bottom_up and in_deg is not None:
                    bottom_up = _edge_ratio_allows(alpha, in_deg, r.frontier, r.visited, n)
            after_bottom_up = bottom_up
            direction = BOTTOM_UP if bottom_up else TOP_DOWN
        if record:
            states.append(
                LevelState(
                    level, r.frontier.copy(), r.visited.copy(), np.sort(r.queue), direction,
                    r.unvisited,
                )
            )  # fmt: skip
        if stop:
            break
        if direction == TOP_DOWN:
            reached = _top_down_reached(r.masks, r.rows, r.v2r, alphas, r.queue, sigma)
            candidates = reached[~bits_set(r.visited, reached)]
        else:
            assert in_adj is not None  # a level goes bottom-up only with switching
            candidates = _bottom_up_reached(*in_adj, r.visited, r.frontier, n)
        if lazy:
            new_ids = _update_lazy(r, candidates, queue, dirty_sets)
        else:
            new_ids = _update_eager(r, candidates, queue)
        r.levels[new_ids] = level + 1
        level += 1
        if level > n:  # a BFS has at most n levels; stale frontier bits would loop forever
            raise RuntimeError(f"emulation diverged: level {level} on {n} vertices")
    depth = int(r.levels.max()) if n else 0
    return EmulatorResult(levels=r.levels, depth=depth, states=states if record else None)


def emulate_spec(
    bvss: Any,
    graph: Any,
    src: Any,
    spec: Any,
    *,
    eta: float = DEFAULT_ETA,
    beta: float = DEFAULT_BETA,
    alpha: float = DEFAULT_ALPHA,
    depth_limit: int | None = None,
    record: bool = True,
) -> EmulatorResult:
    """:func:`emulate_bfs` with the options of a :class:`blest.VariantSpec` (launch is
    irrelevant to the per-level semantics)."""
    if int(spec.sigma) != int(bvss.sigma):
        raise ArgumentError(f"spec has sigma={spec.sigma} but the BVSS was built at {bvss.sigma}")
    return emulate_bfs(
        bvss,
        graph,
        src,
        update=spec.update,
        switching=spec.switching,
        eta=eta,
        beta=beta,
        alpha=alpha,
        dirty_sets=spec.dirty_sets,
        queue=spec.queue,
        depth_limit=depth_limit,
        record=record,
    )


def emulate_parents(levels: np.ndarray, in_ptr: np.ndarray, in_idx: np.ndarray) -> np.ndarray:
    """The parents post-pass of the kernels (``parents.cu.j2``), in the ids of ``levels``.

    The parent of a vertex v at level L > 0 is the first in-neighbour u of v, in ``in_csr``
    order (``in_ptr``, ``in_idx``), with level L - 1; seeds and unreached vertices get -1.
    """
    levels = np.asarray(levels)
    n = levels.size
    in_ptr = np.asarray(in_ptr, dtype=np.int64)
    in_idx = np.asarray(in_idx, dtype=np.int64)
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(in_ptr))
    row_level = levels[rows]
    hit = np.flatnonzero((row_level > 0) & (levels[in_idx] == row_level - 1))
    first = hit[np.r_[True, rows[hit][1:] != rows[hit][:-1]]] if hit.size else hit
    parents = np.full(n, -1, dtype=np.int32)
    parents[rows[first]] = in_idx[first]
    return parents
