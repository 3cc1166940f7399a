"""Brandes' betweenness centrality on the CPU, batch by batch, reduced over the fixed tree of
:mod:`blest.reference.treesum`.

Definitions and scaling are NetworkX's (``betweenness_centrality``,
``edge_betweenness_centrality``; ``docs/betweenness.md``). For each source s, a BFS over
out-arcs gives levels and path counts ``sigma_s`` (:mod:`blest.reference.paths`: a pull over
the in-arcs, float64), then the dependencies are accumulated level by level from the deepest,
**pulled** over the out-arcs in ``out_csr`` order::

    delta_s(v) = sum over out-arcs v -> w with level(w) = level(v) + 1
                 of (sigma_s(v) / sigma_s(w)) * (1 + delta_s(w))

each sum taken left to right (:func:`~blest.reference.paths.segment_sums`), with no
atomics, so every ``delta_s(v)`` is a fixed function of the graph and s. Source s contributes
``delta_s(v)`` to every ``v != s`` (with ``endpoints``: ``delta_s(v) + 1`` to every reached
``v != s`` and the number of vertices s reaches, itself excluded, to s); an arc's term above
is its contribution to the arc's score.

The batch-runner interface (what a GPU runner implements to replace :class:`CPURunner`)::

    runner.width     # int, a power of two: the most sources one batch takes
    runner.length    # int: length of the vectors it returns
    runner.run_batch(sources) -> ndarray   # float64, shape (length,)

``sources`` holds the user ids at ``2**j`` consecutive source positions ``[i * 2**j,
(i + 1) * 2**j)`` (``2**j <= width``), and the result is that node of the tree: the rows of
the batch's per-source contributions (shape ``(2**j, length)``, in source order) added by
:func:`~blest.reference.treesum.tree_sum`'s pairing. A vector holds the n vertex
contributions (user ids), followed, for a runner built with ``edges=True``, by one per arc in
``out_csr`` order. :func:`run_range` drives a runner over a range of positions and returns
its canonical pieces; :func:`~blest.reference.treesum.combine` turns the pieces of all
positions into the sums, the same bits whatever the batch widths or ranges were.

Memory: a batch of b sources holds levels, counts and dependencies for every (source, vertex)
pair, 20 bytes each, plus the arcs of one level of the b searches at up to
:data:`BYTES_PER_ARC` bytes each (and 8 bytes per (source, arc) with ``edges``):
:func:`batch_width` picks the widest power of two, at most :data:`MAX_WIDTH`, whose worst case
fits :data:`BATCH_BYTES`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from blest.errors import ArgumentError
from blest.reference.bitmaps import concat_ranges
from blest.reference.paths import segment_sums
from blest.reference.treesum import Piece, TreeStack, aligned_blocks, combine, tree_sum

__all__ = [
    "BATCH_BYTES",
    "BatchRunner",
    "CPURunner",
    "MAX_WIDTH",
    "SourcePlan",
    "batch_contributions",
    "batch_width",
    "brandes",
    "choose_sources",
    "edge_scores",
    "rescale",
    "run_range",
]

#: The widest CPU batch (sources at once).
MAX_WIDTH = 64
#: Bytes a CPU batch may take (its worst case; see the module docstring).
BATCH_BYTES = 256 << 20
#: Worst-case bytes per arc of one level's temporaries (positions, heads, terms, padding).
BYTES_PER_ARC = 96

#: A source's counts at a level are scaled down by a power of two once one reaches this.
SCALE_AT = 2.0**512

Progress = Callable[[int, int], None]


class BatchRunner(Protocol):
    """Computes the tree node of a batch of sources (see the module docstring)."""

    width: int
    length: int

    def run_batch(self, sources: np.ndarray) -> np.ndarray: ...


# ---------------------------------------------------------------------------- sources
class SourcePlan:
    """The sources of a call and how the scores scale: ``sources`` (int64 user ids, in tree
    order) and ``sampled`` (False: every vertex, the exact scores)."""

    def __init__(self, sources: np.ndarray, sampled: bool) -> None:
        self.sources = sources
        self.sampled = sampled


def choose_sources(n: int, k: Any = None, seed: Any = None, sources: Any = None) -> SourcePlan:
    """Every vertex in id order; or ``k`` of them drawn by
    ``numpy.random.default_rng(seed).choice(n, k, replace=False)``, sorted increasingly
    (``k == n`` is every vertex, exactly); or the distinct ``sources`` given, in their order
    (scaled as ``k = len(sources)`` sampled sources)."""
    if sources is not None:
        if k is not None or seed is not None:
            raise ArgumentError("give sources= or k= (with seed=), not both")
        arr = np.asarray(sources)
        if arr.ndim != 1 or arr.size == 0 or arr.dtype.kind not in "iu":
            raise ArgumentError("sources must be a non-empty 1-D sequence of integer vertex ids")
        arr = arr.astype(np.int64)
        if arr.min() < 0 or arr.max() >= n:
            raise ArgumentError(f"sources must be vertex ids in 0 .. {n - 1}")
        if np.unique(arr).size != arr.size:
            raise ArgumentError("sources must not repeat a vertex")
        return SourcePlan(arr, True)
    if k is None:
        if seed is not None:
            raise ArgumentError("seed= only applies with k=")
        return SourcePlan(np.arange(n, dtype=np.int64), False)
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
        raise ArgumentError(f"k must be an integer, got {k!r}")
    if not 1 <= k <= n:
        raise ArgumentError(f"k must be in 1 .. {n} (the number of vertices), got {k}")
    if k == n:
        return SourcePlan(np.arange(n, dtype=np.int64), False)
    try:
        rng = np.random.default_rng(seed)
    except (TypeError, ValueError) as exc:
        raise ArgumentError(f"seed must be None, an integer or a Generator: {exc}") from None
    picked = np.sort(rng.choice(n, size=int(k), replace=False)).astype(np.int64)
    return SourcePlan(picked, True)


# ---------------------------------------------------------------------------- one batch
def batch_width(n: int, nnz: int, *, edges: bool = False, budget: int = BATCH_BYTES) -> int:
    """The widest power of two (1 .. MAX_WIDTH) whose batch fits ``budget`` bytes."""
    per_source = 20 * n + BYTES_PER_ARC * nnz + (16 * nnz if edges else 0) + 1
    width = MAX_WIDTH
    while width > 1 and width * per_source > budget:
        width >>= 1
    return width


def _out_arcs(ptr: np.ndarray, rows: np.ndarray, verts: np.ndarray) -> tuple:
    """(arc positions, row of each arc, segment pointers) of the out-arcs of (row, vertex)
    pairs, in pair order and ``out_csr`` order within a pair."""
    starts = ptr[verts]
    lens = ptr[verts + 1] - starts
    seg = np.zeros(verts.size + 1, dtype=np.int64)
    np.cumsum(lens, out=seg[1:])
    return concat_ranges(starts, lens), np.repeat(rows, lens), seg


def batch_contributions(
    graph: Any, sources: np.ndarray, *, endpoints: bool = False, edges: bool = False
) -> np.ndarray:
    """Per source of the batch, its contribution to every vertex (and, with ``edges``, to
    every arc after them): float64, shape ``(len(sources), n [+ nnz])``."""
    n, m = int(graph.n), int(graph.nnz)
    out_ptr, out_idx = np.asarray(graph.out_ptr), np.asarray(graph.out_idx)
    in_ptr, in_idx = np.asarray(graph.in_ptr), np.asarray(graph.in_idx)
    sources = np.asarray(sources, dtype=np.int64)
    b = sources.size
    level = np.full(b * n, -1, dtype=np.int32)
    sigma = np.zeros(b * n, dtype=np.float64)
    front = np.arange(b, dtype=np.int64) * n + sources
    level[front] = 0
    sigma[front] = 1.0
    fronts = [front]
    scale = [np.zeros(b, dtype=np.int64)]  # per level and source: stored sigma = sigma / 2**e
    with np.errstate(over="ignore", invalid="ignore"):
        while True:  # forward: levels by a push, counts by a pull over the in-arcs
            rows, verts = np.divmod(fronts[-1], n)
            arcs, arc_rows, _ = _out_arcs(out_ptr, rows * n, verts)
            cand = arc_rows + out_idx[arcs]
            cand = np.unique(cand[level[cand] < 0])
            if cand.size == 0:
                break
            depth = len(fronts)
            level[cand] = depth
            rows, verts = np.divmod(cand, n)
            arcs, arc_rows, seg = _out_arcs(in_ptr, rows * n, verts)
            tails = arc_rows + in_idx[arcs]
            terms = np.where(level[tails] == depth - 1, sigma[tails], 0.0)
            sigma[cand] = segment_sums(terms, seg)
            scale.append(_rescale_level(sigma, cand, rows, b, scale[-1]))
            fronts.append(cand)
        delta = np.zeros(b * n, dtype=np.float64)
        arc_terms = np.zeros(b * m if edges else 0, dtype=np.float64)
        for depth in range(len(fronts) - 2, -1, -1):  # backward: a pull over the out-arcs
            front = fronts[depth]
            rows, verts = np.divmod(front, n)
            arcs, arc_rows, seg = _out_arcs(out_ptr, rows * n, verts)
            heads = arc_rows + out_idx[arcs]
            down = np.flatnonzero(level[heads] == depth + 1)
            tail_sigma = np.repeat(sigma[front], np.diff(seg))[down]
            h = heads[down]
            terms = np.zeros(arcs.size, dtype=np.float64)
            ratio = tail_sigma / sigma[h]
            shift = scale[depth] - scale[depth + 1]
            if shift.any():  # exact: multiplies by a power of two
                ratio = np.ldexp(ratio, shift[arc_rows[down] // n])
            terms[down] = ratio * (1.0 + delta[h])
            delta[front] = segment_sums(terms, seg)
            if edges:
                arc_terms[(arc_rows[down] // n) * m + arcs[down]] = terms[down]
    contrib = delta.reshape(b, n)
    at_source = (np.arange(b), sources)
    if endpoints:
        reached = level.reshape(b, n) > 0
        contrib[reached] += 1.0
        contrib[at_source] = reached.sum(axis=1)
    else:
        contrib[at_source] = 0.0
    if not edges:
        return contrib
    return np.concatenate([contrib, arc_terms.reshape(b, m)], axis=1)


def _rescale_level(
    sigma: np.ndarray, front: np.ndarray, rows: np.ndarray, b: int, above: np.ndarray
) -> np.ndarray:
    """The exponents of a new level's stored counts (``above``: the level above's): where a
    source's largest count reaches :data:`SCALE_AT`, that source's counts at this level are
    divided by a power of two (exact), so that counts past the float64 range still give
    their ratios; elsewhere nothing changes."""
    values = sigma[front]
    if values.size == 0 or values.max() < SCALE_AT:
        return above
    largest = np.zeros(b, dtype=np.float64)
    np.maximum.at(largest, rows, values)
    extra = np.where(largest >= SCALE_AT, np.frexp(largest)[1], 0).astype(np.int64)
    sigma[front] = np.ldexp(values, -extra[rows])
    return above + extra


class CPURunner:
    """The CPU batch runner: :func:`batch_contributions` of a batch, reduced by the tree."""

    def __init__(
        self,
        graph: Any,
        *,
        edges: bool = False,
        endpoints: bool = False,
        width: int | None = None,
    ) -> None:
        self.graph = graph
        self.edges = bool(edges)
        self.endpoints = bool(endpoints)
        self.width = batch_width(graph.n, graph.nnz, edges=edges) if width is None else width
        if self.width < 1 or self.width & (self.width - 1):
            raise ArgumentError(f"the batch width must be a power of two, got {self.width}")
        self.length = int(graph.n) + (int(graph.nnz) if edges else 0)

    def run_batch(self, sources: np.ndarray) -> np.ndarray:
        rows = batch_contributions(self.graph, sources, endpoints=self.endpoints, edges=self.edges)
        return tree_sum(rows)


# ---------------------------------------------------------------------------- driving
def run_range(
    runner: BatchRunner,
    sources: np.ndarray,
    start: int,
    stop: int,
    progress: Progress | None = None,
) -> list[Piece]:
    """The canonical pieces of source positions ``[start, stop)``, run in aligned batches of
    at most ``runner.width``; ``progress(done, stop - start)`` after each batch."""
    stack = TreeStack(start)
    for j, i in aligned_blocks(start, stop, runner.width):
        lo = i << j
        vector = np.asarray(runner.run_batch(sources[lo : lo + (1 << j)]))
        if vector.dtype != np.float64 or vector.shape != (runner.length,):
            raise ValueError(
                f"a batch runner returned {vector.dtype} {vector.shape}, "
                f"expected float64 ({runner.length},)"
            )
        stack.push(j, i, vector)
        if progress is not None:
            progress(stack.stop - start, stop - start)
    return stack.pieces


def rescale(
    scores: np.ndarray,
    n: int,
    plan: SourcePlan,
    *,
    normalized: bool,
    directed: bool,
    endpoints: bool,
) -> np.ndarray:
    """NetworkX's rescaling of summed vertex (or, with ``endpoints=True``, arc) scores."""
    big_n = n if endpoints else n - 1
    if big_n < 2:
        return scores
    k = plan.sources.size if plan.sampled else big_n
    correction = 1 if directed else 2
    if not plan.sampled or endpoints:
        scale = 1 / (k * (big_n - 1)) if normalized else big_n / (k * correction)
        return scores * scale if scale != 1 else scores
    if normalized:
        at_source = 1 / ((k - 1) * (big_n - 1)) if k > 1 else np.nan
        elsewhere = 1 / (k * (big_n - 1))
    else:
        at_source = big_n / ((k - 1) * correction) if k > 1 else np.nan
        elsewhere = big_n / (k * correction)
    factor = np.full(scores.size, elsewhere)
    factor[plan.sources] = at_source
    return scores * factor


def edge_scores(graph: Any, arc_totals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(edges, sums): every arc ``(tail, head)`` of a directed graph in ``out_csr`` order, or
    every edge of an undirected one once, as ``(u, v)`` with ``u < v`` in that order, its two
    arcs' sums added."""
    n = int(graph.n)
    ptr = np.asarray(graph.out_ptr)
    tails = np.repeat(np.arange(n, dtype=np.int64), np.diff(ptr))
    heads = np.asarray(graph.out_idx, dtype=np.int64)
    if graph.directed:
        return np.stack([tails, heads], axis=1), arc_totals.copy()
    keys = tails * n + heads  # sorted: out_csr is sorted by tail, then head
    reverse = np.searchsorted(keys, heads * n + tails)
    one = tails < heads
    sums = arc_totals[one] + arc_totals[reverse[one]]
    return np.stack([tails[one], heads[one]], axis=1), sums


def brandes(
    graph: Any,
    *,
    k: Any = None,
    seed: Any = None,
    sources: Any = None,
    normalized: bool = True,
    endpoints: bool = False,
    edges: bool = False,
    make_runner: Callable[..., BatchRunner] | None = None,
    progress: Progress | None = None,
) -> Any:
    """Betweenness centrality of every vertex (float64, length n), or with ``edges=True``
    ``(edges, scores)`` of every edge (:func:`edge_scores`), as NetworkX defines them.

    ``make_runner(edges=..., endpoints=...)`` builds the batch runner (default
    :class:`CPURunner` on ``graph``). Sources: see :func:`choose_sources`.
    """
    plan = choose_sources(int(graph.n), k, seed, sources)
    make = make_runner or (lambda **kw: CPURunner(graph, **kw))
    runner = make(edges=edges, endpoints=endpoints and not edges)
    pieces = run_range(runner, plan.sources, 0, plan.sources.size, progress)
    total = combine(pieces, plan.sources.size) if pieces else np.zeros(runner.length)
    return finish(graph, total, plan, normalized=normalized, endpoints=endpoints, edges=edges)


def finish(
    graph: Any,
    total: np.ndarray,
    plan: SourcePlan,
    *,
    normalized: bool,
    endpoints: bool,
    edges: bool,
) -> Any:
    """The scores from the summed vector of a runner (see :func:`brandes`)."""
    n = int(graph.n)
    if not edges:
        return rescale(
            total[:n].copy(),
            n,
            plan,
            normalized=normalized,
            directed=graph.directed,
            endpoints=endpoints,
        )
    pairs, sums = edge_scores(graph, total[n:])
    scaled = rescale(sums, n, plan, normalized=normalized, directed=graph.directed, endpoints=True)
    return pairs, scaled
