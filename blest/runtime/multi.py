"""Many BFSs per call, for every engine: ``bfs_many``, ``closeness`` and ``harmonic``.

The GPU engine runs them through a multi-source kernel (:class:`~blest.runtime.msbfs.MSRunner`):
sources are put in increasing internal id (consecutive ids are close in the graph's ordering, so
a batch's BFSs share their frontiers), run kappa at a time, and the results are put back in the
caller's order. Closeness and harmonic centrality need distances *to* each vertex: on a directed
graph they run on the reversed graph. The CPU engines use the SciPy references
(:mod:`blest.reference.centrality`), which give bit-identical sums.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from blest.errors import ArgumentError
from blest.reference.centrality import (
    SourceSums,
    as_sources,
    closeness_from_sums,
    harmonic_from_sums,
)

__all__ = [
    "Progress",
    "check_out",
    "host_memory_limit",
    "gpu_bfs_many",
    "gpu_source_sums",
    "centrality_sources",
    "finish_closeness",
    "finish_harmonic",
]

Progress = Callable[[int, int], None]
#: Device bytes a bfs_many window of levels may take.
WINDOW_BYTES = 1 << 30


def host_memory_limit() -> int:
    """Bytes of host memory a result may take: what this process may still allocate (the
    available memory, ``ulimit -v`` and the cgroup limit: :mod:`blest.graph.io.memory`)."""
    from blest.graph.io.memory import available_memory

    room = available_memory()
    return room.nbytes if room is not None else 1 << 34


def check_out(out: Any, k: int, n: int) -> np.ndarray:
    """The ``(k, n)`` int32 result array: ``out`` checked, or a new one if it fits in memory."""
    if out is None:
        need = 4 * k * n
        if need > host_memory_limit():
            raise ArgumentError(
                f"bfs_many of {k:,} sources on {n:,} vertices needs {need / 2**30:.1f} GiB of "
                "memory, more than is available: pass out= (a numpy.memmap, say) or fewer sources"
            )
        return np.empty((k, n), dtype=np.int32)
    if not isinstance(out, np.ndarray) or out.dtype != np.int32 or out.shape != (k, n):
        raise ArgumentError(f"out must be an int32 NumPy array of shape ({k}, {n})")
    if not out.flags.writeable:
        raise ArgumentError("out must be writeable")
    return out


def centrality_sources(sources: Any, n: int) -> np.ndarray:
    """The vertices to score: every vertex by default, else the given ids (checked)."""
    if sources is None:
        return np.arange(n, dtype=np.int64)
    return as_sources(sources, n)


def _sorted(engine: Any, users: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(internal ids in increasing order, the permutation that sorted them)."""
    internal = np.asarray(engine.permutation.new_of_old)[users].astype(np.int32)
    order = np.argsort(internal, kind="stable")
    return internal[order], order


def gpu_bfs_many(
    engine: Any, users: np.ndarray, out: np.ndarray, progress: Progress | None = None
) -> np.ndarray:
    """Levels of every source into ``out`` (rows in the caller's order) with the forward
    multi-source runner, a window of rows at a time on the device."""
    runner = engine.ms_runner(reverse=False)
    cp, n, kappa = engine._cp, engine.n, runner.spec.kappa
    internal, order = _sorted(engine, users)
    k = internal.size
    rows = max(kappa, min(k, WINDOW_BYTES // max(4 * n, 1)) // kappa * kappa)
    with cp.cuda.Device(runner.device_id):
        window = cp.empty((min(rows, k), n), dtype=cp.int32)
        for start in range(0, k, rows):
            stop = min(k, start + rows)
            window.fill(-1)
            runner.run(
                internal,
                levels=window,
                out_first=start,
                batches=(start // kappa, -(-stop // kappa)),
                progress=_offset(progress, start, k),
            )
            out[order[start:stop]] = window[: stop - start].get()
    return out


def gpu_source_sums(engine: Any, users: np.ndarray, progress: Progress | None = None) -> SourceSums:
    """Exact sums of BFSs over in-arcs from every source (the caller's order)."""
    if users.size == engine.n and _is_every_vertex(users):
        # Every vertex: internal ids 0 .. n-1 in order, user u's at new_of_old[u]. The dense
        # form's per-target sums over all sources are these sums (distances to each vertex).
        dense = engine.dense_runner()
        if dense is not None:
            return dense.sums(progress=progress).take(engine._new_of_old)
        runner = engine.ms_runner(reverse=engine.graph.directed)
        return runner.source_sums(None, progress).take(engine._new_of_old)
    runner = engine.ms_runner(reverse=engine.graph.directed)
    internal, order = _sorted(engine, users)
    sums = runner.source_sums(internal, progress)
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size)
    return sums.take(inverse)


def _is_every_vertex(users: np.ndarray) -> bool:
    """Whether ``users`` is 0, 1, ..., n - 1 (``centrality_sources(None, n)``)."""
    return bool(users[0] == 0 and np.all(np.diff(users) == 1))


def finish_closeness(sums: SourceSums, n: int, wf_improved: bool) -> np.ndarray:
    return closeness_from_sums(sums, n, wf_improved=wf_improved)


def finish_harmonic(sums: SourceSums) -> np.ndarray:
    return harmonic_from_sums(sums)


def _offset(progress: Progress | None, base: int, total: int) -> Progress | None:
    if progress is None:
        return None
    return lambda done, _: progress(base + done, total)
