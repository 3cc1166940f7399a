"""The timing protocol, applied to engines: every figure blest reports is measured this way.

Protocol: 64 sources per graph drawn without replacement from the vertices with out-degree > 0
by ``numpy.random.default_rng(SOURCE_SEED)`` (user ids). Traversal time = CUDA events around the
traversal launch(es) after the per-source init, mean over the sources, after 0.2 s of warm-up
calls per engine. Whole-call time = host wall clock of ``bfs(src, out="device")`` (init +
traversal + user-id levels, synchronized) on the same engine with its ``timing`` off, as a
caller who does not ask for the traversal time runs it (no events; on the persistent variants
one kernel a call); host copy = the device-to-host copy of the levels through the pinned
staging buffer.

Whole calls are timed back to back, the results checked afterwards: a GPU left idle for a few
milliseconds (while the host checks a result, say) takes 50-90 us longer over its next launch,
an empty kernel's included (benchmarks/NOTES.md). That wake-up belongs to the GPU,
not to the call; a host copy is timed after an untimed call that wakes it.
GTEPS = edges of the reached part / traversal time, where an undirected edge counts once and a
directed arc once (Graph500's convention for undirected graphs).

``blest bench`` reports GAP-style statistics (:func:`bench_statistics`): mean and quartiles
(min, Q1, median, Q3, max) of the traversal and whole-call times over the sources, and the
harmonic mean of the per-source TEPS (the TEPS of the total time over equal work shares).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from blest.defaults import SOURCE_SEED, TIMING_SOURCES
from blest.errors import ArgumentError
from blest.graph.core import Graph

__all__ = [
    "SOURCE_SEED",
    "timing_sources",
    "BenchRow",
    "BenchSamples",
    "BenchStats",
    "Spread",
    "bench_statistics",
    "edges_reached",
    "time_sources",
    "warm_up",
    "bench_engine",
    "scipy_ms",
    "rate_until",
]


def timing_sources(
    graph: Graph, count: int = TIMING_SOURCES, seed: int = SOURCE_SEED
) -> np.ndarray:
    """``count`` distinct sources with out-degree > 0 (fewer if the graph has fewer)."""
    active = np.flatnonzero(graph.out_degree > 0)
    if active.size == 0:
        raise ArgumentError("the graph has no vertex with an out-arc: nothing to time")
    rng = np.random.default_rng(seed)
    return rng.choice(active, size=min(count, active.size), replace=False)


@dataclass
class BenchRow:
    """Timings of one variant on one graph (milliseconds, means over the sources)."""

    graph: str
    variant: str
    eta: float
    traversal_ms: float
    traversal_ms_median: float
    whole_call_ms: float
    host_copy_ms: float
    gteps: float
    depth_mean: float
    bottom_up_levels_mean: float
    sources: int
    #: The whole call inside ``Engine.serving`` (persistent variants; NaN elsewhere).
    served_call_ms: float = float("nan")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def edges_reached(graph: Graph, levels: np.ndarray) -> float:
    """Edges of the part of ``graph`` that ``levels`` reached (an undirected edge once)."""
    reached = levels >= 0
    arcs = float(graph.out_degree[reached].sum())
    return arcs if graph.directed else arcs / 2.0


def warm_up(
    engine: Any, src: int, seconds: float = 0.2, synchronize: Callable[[], None] | None = None
) -> None:
    """Run ``src`` until ``seconds`` have passed (at least once), each call followed by
    ``synchronize`` (default: the device's): after the idle gap of building an engine, or of
    compiling its serving kernel, the GPU's clocks need a moment, and a single warm-up call left
    the first variants of a run up to 20% slow on latency-bound graphs (benchmarks/NOTES.md)."""
    import cupy as cp

    synchronize = synchronize or cp.cuda.Device().synchronize
    end = time.perf_counter() + seconds
    while True:
        engine.bfs(src, out="device")
        synchronize()
        if time.perf_counter() >= end:
            return


def bench_engine(engine: Any, graph: Graph, sources: np.ndarray, name: str) -> BenchRow:
    """Time ``engine`` on ``sources`` following the protocol (after :func:`warm_up`)."""
    import cupy as cp

    warm_up(engine, int(sources[0]))
    srcs = [int(s) for s in sources]
    trav, copy, teps, depth, bottom = [], [], [], [], []
    for src in srcs:  # timed by events: the traversal
        _timed_device_call(engine, src)
        stats = engine.stats
        trav.append(stats.traversal_ms)
        depth.append(stats.depth)
        bottom.append(len(stats.bottom_up_levels))
    whole = _untimed_whole_calls(engine, srcs)
    served = _served_whole_calls(engine, srcs)
    for i, src in enumerate(srcs):
        engine.bfs(src, out="device")  # untimed: wakes the GPU after the previous check
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        host = engine.bfs(src)  # the same traversal again, plus the host copy
        copy.append(max(0.0, (time.perf_counter() - t0) * 1e3 - whole[i]))
        teps.append(edges_reached(graph, host) / (trav[i] * 1e-3) / 1e9)
    return BenchRow(
        graph=name,
        variant=engine.spec.name,
        eta=engine.eta,
        traversal_ms=float(np.mean(trav)),
        traversal_ms_median=float(np.median(trav)),
        whole_call_ms=float(np.mean(whole)),
        host_copy_ms=float(np.mean(copy)),
        gteps=float(np.mean(teps)),
        depth_mean=float(np.mean(depth)),
        bottom_up_levels_mean=float(np.mean(bottom)),
        sources=len(sources),
        served_call_ms=float(np.mean(served)) if served else float("nan"),
    )


def scipy_ms(graph: Graph, sources: np.ndarray) -> float:
    """Mean ms of SciPy's ``breadth_first_order`` (the protocol's CPU reference)."""
    from scipy.sparse.csgraph import breadth_first_order

    csr = graph.out_csr
    t0 = time.perf_counter()
    for s in sources:
        breadth_first_order(csr, int(s), directed=graph.directed, return_predecessors=False)
    return (time.perf_counter() - t0) * 1e3 / len(sources)


# ---------------------------------------------------------------------- blest bench
@dataclass(frozen=True)
class Spread:
    """Mean and quartiles of a sample (linear interpolation between order statistics)."""

    mean: float
    min: float
    q1: float
    median: float
    q3: float
    max: float

    @classmethod
    def of(cls, values: Any) -> Spread:
        x = np.asarray(values, dtype=np.float64)
        if x.size == 0:
            raise ArgumentError("no values")
        q = np.percentile(x, [0, 25, 50, 75, 100])
        return cls(float(x.mean()), *(float(v) for v in q))


@dataclass(frozen=True)
class BenchStats:
    """GAP-style summary of one benchmark: times in ms, TEPS in edges per second."""

    sources: int
    traversal_ms: Spread
    whole_call_ms: Spread
    teps_harmonic_mean: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def bench_statistics(traversal_ms: Any, whole_call_ms: Any, edges: Any) -> BenchStats:
    """Statistics of per-source measurements (pure). TEPS of a source = ``edges`` / traversal
    time; their harmonic mean is ``n / sum(time / edges)`` (0 when a source traversed no
    edge, infinite only when every time is 0)."""
    t = np.asarray(traversal_ms, dtype=np.float64)
    e = np.asarray(edges, dtype=np.float64)
    if not t.size == len(whole_call_ms) == e.size or t.size == 0:
        raise ArgumentError("need one traversal time, whole-call time and edge count per source")
    if np.any(t < 0) or np.any(e < 0):
        raise ArgumentError("times and edge counts must be >= 0")
    if np.any(e == 0):
        hmean = 0.0
    else:
        inverse = float(np.sum(t * 1e-3 / e))
        hmean = t.size / inverse if inverse > 0 else float("inf")
    return BenchStats(int(t.size), Spread.of(t), Spread.of(whole_call_ms), hmean)


@dataclass
class BenchSamples:
    """Per-source measurements of :func:`time_sources` (lists in source order)."""

    sources: list[int]
    traversal_ms: list[float]
    whole_call_ms: list[float]
    edges: list[float]
    depth: list[int]
    differs: list[int]  # sources whose levels differ from SciPy's (with ``verify``)

    def statistics(self) -> BenchStats:
        return bench_statistics(self.traversal_ms, self.whole_call_ms, self.edges)


def _timed_device_call(engine: Any, src: int) -> float:
    """Host milliseconds of one synchronized ``bfs(src, out="device")``."""
    import cupy as cp

    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    engine.bfs(src, out="device")
    cp.cuda.Device().synchronize()
    return (time.perf_counter() - t0) * 1e3


def _served_whole_calls(engine: Any, sources: list[int]) -> list[float]:
    """Host milliseconds of each ``bfs(src, out="device")`` inside ``engine.serving()``, back to
    back after :func:`warm_up` (whose first call starts the server; an engine's first
    ``serving()`` compiles the serving kernel, and the GPU idles meanwhile), each synchronized on
    the current stream (a device-wide synchronization would wait for the server's end); [] where
    the engine does not serve (a CPU engine, or a variant without a serving kernel)."""
    from blest.codegen.render import has_serving_kernel

    spec = getattr(engine, "spec", None)
    if spec is None or getattr(spec, "launch", None) is None or not has_serving_kernel(spec):
        return []
    if not hasattr(engine, "serving"):
        return []
    import cupy as cp

    stream = cp.cuda.get_current_stream()
    walls = []
    with engine.serving():
        warm_up(engine, sources[0], synchronize=stream.synchronize)
        for src in sources:
            stream.synchronize()
            t0 = time.perf_counter()
            engine.bfs(src, out="device")
            stream.synchronize()
            walls.append((time.perf_counter() - t0) * 1e3)
    return walls


def _untimed_whole_calls(engine: Any, sources: list[int]) -> list[float]:
    """:func:`_timed_device_call` of each source, back to back, with the engine's ``timing``
    off (engines without one are timed as they are), which is left as it was; after one
    untimed call (the first call of a setting captures its CUDA graph)."""
    timing = getattr(engine, "timing", None)
    if timing is not None:
        engine.timing = False
    try:
        _timed_device_call(engine, sources[0])
        return [_timed_device_call(engine, src) for src in sources]
    finally:
        if timing is not None:
            engine.timing = timing


def time_sources(
    engine: Any,
    graph: Graph,
    sources: Any,
    *,
    gpu: bool,
    verify: bool = False,
    progress: Any = None,
) -> BenchSamples:
    """Run ``engine`` from every source (after a warm-up) and collect the measurements;
    with ``verify`` every source's levels are compared with SciPy's."""
    from blest.reference import bfs_levels

    srcs = [int(s) for s in sources]
    if gpu:
        warm_up(engine, srcs[0])
    else:
        engine.bfs(srcs[0])
    out = BenchSamples(srcs, [], [], [], [], [])

    def check(src: int, levels: np.ndarray) -> None:
        out.depth.append(int(levels.max()))
        out.edges.append(edges_reached(graph, levels))
        if verify and not np.array_equal(levels, bfs_levels(graph, src)):
            out.differs.append(src)

    for i, src in enumerate(srcs):
        if progress is not None:
            progress(f"source {i + 1}/{len(srcs)}: {src}")
        if gpu:  # timed back to back; the levels are checked after the loops
            _timed_device_call(engine, src)
        else:
            t0 = time.perf_counter()
            levels = engine.bfs(src)
            out.whole_call_ms.append((time.perf_counter() - t0) * 1e3)
            check(src, levels)
        out.traversal_ms.append(float(engine.stats.traversal_ms))
    if gpu:
        out.whole_call_ms = _untimed_whole_calls(engine, srcs)
        for src in srcs:
            check(src, engine.bfs(src))
    return out


class _PastLimit(Exception):
    """Raised from the progress hook of :func:`rate_until` once the run is past its limit."""


def rate_until(
    run: Callable[[Callable[[int, int], None]], Any], limit_s: float | None = None
) -> tuple[float, int]:
    """``(seconds per unit done, units done)`` of ``run(progress)``, which reports
    ``progress(done, total)`` as it goes. With ``limit_s``, the run stops at the first report
    past ``limit_s`` seconds that is not its last, and the rate so far is returned (the tuners
    time a candidate that already lost only that long)."""
    reached = [0]
    t0 = time.perf_counter()

    def watch(done: int, total: int) -> None:
        reached[0] = done
        if limit_s is not None and done < total and time.perf_counter() - t0 > limit_s:
            raise _PastLimit

    try:
        run(watch)
    except _PastLimit:
        pass
    return (time.perf_counter() - t0) / max(reached[0], 1), reached[0]
