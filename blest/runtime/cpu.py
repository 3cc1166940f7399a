"""The fast CPU engine: SciPy's breadth-first search on the user's graph.

:class:`CPUEngine` answers the same calls as the GPU engine with
``scipy.sparse.csgraph.breadth_first_order`` (compiled C), levels recovered from the BFS tree.
It is the default on machines without a GPU. Its ``source`` and ``ptx`` still show the kernel
variant the engine stands for (the one a GPU would run).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from scipy.sparse.csgraph import breadth_first_order

from blest.codegen.spec import VariantSpec
from blest.defaults import DEFAULT_ETA
from blest.errors import GPUUnavailableError
from blest.graph.prepared import Prepared
from blest.reference.scipy_bfs import tree_depths
from blest.runtime.base import EngineBase
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
