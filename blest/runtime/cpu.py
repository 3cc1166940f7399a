"""The fast CPU engine: SciPy's breadth-first search on the user's graph.

:class:`CPUEngine` answers the same calls as the GPU engine with
``scipy.sparse.csgraph.breadth_first_order`` (compiled C), levels recovered from the BFS tree.
It is the default on machines without a GPU. Its ``source`` and ``ptx`` still show the kernel
variant the engine stands for (the one a GPU would run).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.sparse.csgraph import breadth_first_order

from blest.codegen.spec import VariantSpec
from blest.defaults import DEFAULT_ETA
from blest.errors import GPUUnavailableError
from blest.graph.prepared import Prepared
from blest.reference.centrality import SourceSums, bfs_many_levels, source_sums
from blest.reference.scipy_bfs import tree_depths
from blest.runtime.base import EngineBase
from blest.runtime.multi import Progress
from blest.runtime.protocol import BFSStats

__all__ = ["CPUEngine"]


class CPUEngine(EngineBase):
    """Single-source BFS with SciPy on the CPU (see the module docstring)."""

    device_name = "CPU (SciPy)"

    def __init__(
        self, prepared: Prepared, spec: VariantSpec | None = None, *, eta: float = DEFAULT_ETA
    ) -> None:
        super().__init__(prepared, spec, eta)
        self._csr = self.graph.out_csr

    def bfs(self, src: int, *, out: Any = None, depth_limit: int | None = None) -> np.ndarray:
        """BFS levels from ``src`` (a user id): int32, -1 for unreachable vertices.

        ``out`` may be an int32 NumPy array of length n, filled in place and returned.
        """
        self._check_open()
        if isinstance(out, str):
            raise GPUUnavailableError("out='device' needs a GPU engine")
        if out is not None:
            self._check_host_out(out)
        user, _ = self._sources(src)
        limit = self._depth_limit(depth_limit)
        t0 = time.perf_counter()
        order, pred = breadth_first_order(
            self._csr, user, directed=self.graph.directed, return_predecessors=True
        )
        levels = tree_depths(order, pred, self.n)
        if limit >= 0:
            levels[levels > limit] = -1
        depth = int(levels.max())
        self.last_stats = BFSStats(
            source=user,
            depth=depth,
            visited=int((levels >= 0).sum()),
            levels_run=depth + 1,
            traversal_ms=(time.perf_counter() - t0) * 1e3,
        )
        if out is None:
            return levels
        np.copyto(out, levels)
        return out

    # ------------------------------------------------------------------ many sources
    def _bfs_many(self, users: np.ndarray, out: np.ndarray, progress: Progress | None) -> Any:
        _in_blocks(users, progress, lambda at, part: bfs_many_levels(
            self.graph, part, out=out[at : at + part.size]
        ))  # fmt: skip
        return out

    def _source_sums(self, users: np.ndarray, progress: Progress | None) -> SourceSums:
        parts: list[SourceSums] = []
        _in_blocks(users, progress, lambda at, part: parts.append(
            source_sums(self.graph, part, reverse=self.graph.directed)
        ))  # fmt: skip
        return SourceSums.concat(parts)


#: Sources per progress report of the CPU engines.
PROGRESS_BLOCK = 256


def _in_blocks(users: np.ndarray, progress: Progress | None, work: Callable) -> None:
    """``work(start, users[start:stop])`` block by block, reporting progress in between."""
    for at in range(0, users.size, PROGRESS_BLOCK):
        work(at, users[at : at + PROGRESS_BLOCK])
        if progress is not None:
            progress(min(users.size, at + PROGRESS_BLOCK), users.size)
