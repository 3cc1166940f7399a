"""The fast CPU engine: SciPy's breadth-first search on the user's graph.

:class:`CPUEngine` answers the same calls as the GPU engine with
``scipy.sparse.csgraph.breadth_first_order`` (compiled C), levels recovered from the BFS tree
(:class:`~blest.reference.scipy_bfs.ScipyBFS`; several seeds through a super-source). It is the
default on machines without a GPU. Its ``source`` and ``ptx`` still show the kernel variant the
engine stands for (the one a GPU would run).

Many sources (``bfs_many``, ``source_sums``, ``closeness``, ``harmonic``) run as bit-parallel
searches of 64 sources each, on every core (:mod:`blest.runtime.cpu_workers`); the sums are
bit-identical to those of one SciPy BFS per source.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from blest.codegen.spec import VariantSpec
from blest.defaults import DEFAULT_ALPHA, DEFAULT_BETA, DEFAULT_ETA
from blest.graph.core import Graph
from blest.graph.prepared import Prepared
from blest.reference.centrality import SourceSums
from blest.reference.scipy_bfs import ScipyBFS
from blest.runtime import arguments, cpu_workers
from blest.runtime.arguments import Progress
from blest.runtime.host_engine import HostEngine

__all__ = ["CPUEngine"]


class CPUEngine(HostEngine):
    """BFS with SciPy on the CPU (see the module docstring)."""

    device_name = "CPU (SciPy)"

    def __init__(
        self,
        prepared: Prepared | Graph,
        spec: VariantSpec | None = None,
        *,
        eta: float = DEFAULT_ETA,
        beta: float = DEFAULT_BETA,
        alpha: float = DEFAULT_ALPHA,
    ) -> None:
        super().__init__(prepared, spec, eta, beta, alpha)
        self._scipy = ScipyBFS(self.graph)

    def bfs(
        self,
        src: Any,
        *,
        out: Any = None,
        depth_limit: int | None = None,
        parents: bool = False,
        paths: bool = False,
    ) -> Any:
        """BFS levels from ``src`` (a user id, or a sequence of seeds all at level 0): int32,
        -1 for unreachable vertices; with ``parents=True``, ``(levels, parents)`` (int32, -1
        for the seeds and unreached vertices; SciPy's BFS tree).

        ``out`` may be an int32 NumPy array of length n, filled with the levels and returned.
        ``paths=True`` adds the number of shortest paths to every vertex, last:
        :meth:`bfs_paths`.
        """
        self._check_open()
        self._check_out(out)
        if paths:  # with the number of shortest paths: HostEngine.bfs_paths
            return self.bfs_paths(src, out=out, depth_limit=depth_limit, parents=parents)
        user, internal = self._seeds(src)
        limit = arguments.depth_limit(depth_limit)
        t0 = time.perf_counter()
        levels, par = self._scipy.run(
            user, depth_limit=None if limit < 0 else limit, parents=bool(parents)
        )
        ms = (time.perf_counter() - t0) * 1e3
        self.last_stats = self._stats(user, levels, int(internal.size), ms)
        return self._host_result(levels, par, out)

    def _release(self) -> None:
        self._scipy = None  # type: ignore[assignment]

    # ------------------------------------------------------------------ many sources
    def _bfs_many(self, users: np.ndarray, out: np.ndarray, progress: Progress | None) -> Any:
        return cpu_workers.bfs_many(self.graph, users, out, progress=progress)

    def _source_sums(
        self, users: np.ndarray, progress: Progress | None, pendant: bool
    ) -> SourceSums:
        return cpu_workers.source_sums(
            self.graph, users, reverse=self.graph.directed, progress=progress, pendant=pendant
        )
