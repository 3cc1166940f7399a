"""The kernel emulator as an engine: exactly what the generated kernels compute, on the CPU.

:class:`EmulatedEngine` runs the level-by-level NumPy emulator of its variant
(:mod:`blest.reference.emulator`) on the prepared BVSS, and the parents post-pass
(:func:`~blest.reference.emulator.emulate_parents`) on the reordered in-adjacency. It is exact
and slow (about a hundred times SciPy's BFS); use it to see what a variant does without a GPU.
For speed on a CPU, :class:`blest.runtime.cpu.CPUEngine` runs SciPy's BFS instead.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from blest.codegen.spec import VariantSpec
from blest.defaults import DEFAULT_ALPHA, DEFAULT_BETA, DEFAULT_ETA, DEFAULT_SIGMA
from blest.graph.core import Graph
from blest.graph.prepared import Prepared
from blest.reference.centrality import SourceSums, sums_from_levels
from blest.reference.emulator import emulate_parents, emulate_spec
from blest.reference.hops_emulator import emulate_hops
from blest.runtime import arguments
from blest.runtime.arguments import Progress
from blest.runtime.host_engine import HostEngine

__all__ = ["EmulatedEngine"]


class EmulatedEngine(HostEngine):
    """BFS through the NumPy emulator of ``spec`` (see the module docstring)."""

    device_name = "CPU (NumPy emulator of the kernel)"

    def __init__(
        self,
        prepared: Prepared | Graph,
        spec: VariantSpec | None = None,
        *,
        eta: float = DEFAULT_ETA,
        beta: float = DEFAULT_BETA,
        alpha: float = DEFAULT_ALPHA,
    ) -> None:
        if isinstance(prepared, Graph):  # the emulator reads the BVSS: prepare it here
            prepared = Prepared.from_graph(prepared, spec.sigma if spec else DEFAULT_SIGMA)
        super().__init__(prepared.host(), spec, eta, beta, alpha)
        self._in = (np.asarray(self.prepared.in_ptr), np.asarray(self.prepared.in_idx))
        self._reverse: EmulatedEngine | None = None

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
        -1 for unreachable vertices; with ``parents=True``, ``(levels, parents)`` as the GPU
        kernels compute them.

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
        depth = None if limit < 0 else limit
        if (
            self.spec.hops > 1
        ):  # several levels a phase over B's BVSS (blest.reference.hops_emulator)
            internal_levels = emulate_hops(self.prepared.hops_bvss(self.spec.hops), internal, depth)
        else:
            internal_levels = emulate_spec(
                self.prepared.bvss,
                self._in,
                internal,
                self.spec,
                eta=self.eta,
                beta=self.beta,
                alpha=self.alpha,
                depth_limit=depth,
                record=False,
            ).levels
        levels = internal_levels[self._new_of_old]  # internal levels back to user ids
        par = self._user_parents(internal_levels) if parents else None
        ms = (time.perf_counter() - t0) * 1e3
        self.last_stats = self._stats(user, levels, int(internal.size), ms)
        return self._host_result(levels.astype(np.int32, copy=False), par, out)

    def _user_parents(self, internal_levels: np.ndarray) -> np.ndarray:
        """The parents post-pass in internal ids, then both ends mapped to the user's ids."""
        par = emulate_parents(internal_levels, *self._in)
        old = np.asarray(self.permutation.old_of_new)
        out = np.full(self.n, -1, dtype=np.int32)
        has = par >= 0
        out[old] = np.where(has, old[np.maximum(par, 0)], -1)
        return out

    def _release(self) -> None:
        self._in = (np.zeros(1, np.int64), np.zeros(0, np.int32))
        self._reverse = None

    # ------------------------------------------------------------------ many sources
    def _bfs_many(self, users: np.ndarray, out: np.ndarray, progress: Progress | None) -> Any:
        """One emulated single-source traversal per source (exact; slow)."""
        for i, u in enumerate(users):
            self.bfs(int(u), out=out[i])
            if progress is not None:
                progress(i + 1, users.size)
        return out

    def _source_sums(
        self, users: np.ndarray, progress: Progress | None, pendant: bool
    ) -> SourceSums:
        """Sums of emulated traversals over in-arcs (the reversed graph when directed)."""
        if self._reverse is None:
            rev = self.prepared.reversed()
            self._reverse = (
                self
                if rev is self.prepared
                else EmulatedEngine(rev, self.spec, eta=self.eta, beta=self.beta, alpha=self.alpha)
            )
        row = np.empty((1, self.n), dtype=np.int32)
        parts = []
        for i, u in enumerate(users):
            self._reverse.bfs(int(u), out=row[0])
            parts.append(sums_from_levels(row, pendant=pendant))
            if progress is not None:
                progress(i + 1, users.size)
        return SourceSums.concat(parts) if parts else SourceSums.zeros(0, pendant=pendant)
