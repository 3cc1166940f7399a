"""The timing protocol, applied to engines: every figure blest reports is measured this way.

Protocol: 64 sources per graph drawn without replacement from the vertices with out-degree > 0
by ``numpy.random.default_rng(SOURCE_SEED)`` (user ids). Traversal time = CUDA events around the
traversal launch(es) after the per-source init, mean over the sources, after 0.2 s of warm-up
calls per engine. Whole-call time = host
wall clock of ``bfs(src, out="device")`` (init + traversal + user-id levels, synchronized);
host copy = the device-to-host copy of the levels through the pinned staging buffer.
GTEPS = edges of the reached part / traversal time, where an undirected edge counts once and a
directed arc once (Graph500's convention for undirected graphs).
"""

from __future__ import annotations

import time
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
    "warm_up",
    "bench_engine",
    "scipy_ms",
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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _edges_reached(graph: Graph, levels: np.ndarray) -> float:
    reached = levels >= 0
    arcs = float(graph.out_degree[reached].sum())
    return arcs if graph.directed else arcs / 2.0


def warm_up(engine: Any, src: int, seconds: float = 0.2) -> None:
    """Run ``src`` until ``seconds`` have passed (at least once): after the idle gap of building
    an engine the GPU's clocks need a moment, and a single warm-up call left the first variants
    of a run up to 20% slow on latency-bound graphs (benchmarks/NOTES.md)."""
    import cupy as cp

    end = time.perf_counter() + seconds
    while True:
        engine.bfs(src, out="device")
        cp.cuda.Device().synchronize()
        if time.perf_counter() >= end:
            return


def bench_engine(engine: Any, graph: Graph, sources: np.ndarray, name: str) -> BenchRow:
    """Time ``engine`` on ``sources`` following the protocol (after :func:`warm_up`)."""
    import cupy as cp

    warm_up(engine, int(sources[0]))
    trav, whole, copy, teps, depth, bottom = [], [], [], [], [], []
    for src in sources:
        src = int(src)
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        dev = engine.bfs(src, out="device")
        cp.cuda.Device().synchronize()
        whole.append((time.perf_counter() - t0) * 1e3)
        stats = engine.stats
        trav.append(stats.traversal_ms)
        depth.append(stats.depth)
        bottom.append(len(stats.bottom_up_levels))
        t0 = time.perf_counter()
        host = engine.bfs(src)  # the same traversal again, plus the host copy
        copy.append(max(0.0, (time.perf_counter() - t0) * 1e3 - whole[-1]))
        del dev
        teps.append(_edges_reached(graph, host) / (stats.traversal_ms * 1e-3) / 1e9)
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
    )


def scipy_ms(graph: Graph, sources: np.ndarray) -> float:
    """Mean ms of SciPy's ``breadth_first_order`` (the protocol's CPU reference)."""
    from scipy.sparse.csgraph import breadth_first_order

    csr = graph.out_csr
    t0 = time.perf_counter()
    for s in sources:
        breadth_first_order(csr, int(s), directed=graph.directed, return_predecessors=False)
    return (time.perf_counter() - t0) * 1e3 / len(sources)
