"""The GPU engine's many-source calls: the multi-source kernel it runs, chosen by a tuned config
or by default from the graph's depth, on the graph or its reverse (for BFS over in-arcs); and,
for the sums of every vertex at once, the dense form where a config or the graph's size and
depth choose it."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from blest.codegen.dense import DenseSpec, row_words
from blest.codegen.msspec import MSSpec, queue_smem_bytes
from blest.defaults import QUEUE_KAPPAS
from blest.errors import ArgumentError
from blest.reference.centrality import SourceSums
from blest.runtime.dense import DENSE_BLOCK_SIZE, DenseRunner, dense_fits
from blest.runtime.msbfs import MSRunner
from blest.runtime.multi import Progress, gpu_bfs_many, gpu_source_sums

__all__ = [
    "GPUManySources",
    "MultiSourceChoice",
    "DenseChoice",
    "DEEP_GRAPH_LEVELS",
    "dense_takes",
]

#: BFS depth from which the default multi-source kernel runs one batch per block.
DEEP_GRAPH_LEVELS = 64
#: The dense form an engine takes by default, and the most bytes of rows it may be predicted to
#: pull (in-arcs x row bytes x depth; about 16 ms at 4 TB/s) for the default to take it.
DEFAULT_DENSE = DenseSpec(4, 32)
DENSE_AUTO_BYTES = 64 << 30
#: Shared memory of a block of the default queue form: a seventh of a Hopper multiprocessor's
#: (seven batches of 256 threads per multiprocessor; on luxembourg_osm kappa = 2 at 256
#: threads was the fastest, see benchmarks/NOTES.md), or at most what one block may have.
QUEUE_SMEM_SHARE = 32 * 1024
QUEUE_SMEM_BLOCK = 223 * 1024


@dataclass(frozen=True)
class MultiSourceChoice:
    """The multi-source kernel of an engine and its runtime choices."""

    spec: MSSpec | None
    eta: float
    block_size: int
    blocks_per_sm: int | None = None


@dataclass(frozen=True)
class DenseChoice:
    """The dense form of an engine's every-vertex sums."""

    spec: DenseSpec
    block_size: int = DENSE_BLOCK_SIZE


class GPUManySources:
    """Mixed into :class:`blest.runtime.engine.Engine` (it provides the graph, lock, device)."""

    _ms_choice: MultiSourceChoice | None
    _runners: dict[bool, MSRunner]
    #: "auto" (the graph decides), None (the batched forms) or a DenseChoice.
    _dense_choice: DenseChoice | str | None = "auto"
    _dense_built = False  # whether dense_runner() has decided
    _dense: DenseRunner | None = None
    _depth_sample: int | None = None

    def configure_multi_source(
        self,
        spec: MSSpec | None = None,
        *,
        eta: float | None = None,
        block_size: int | None = None,
        blocks_per_sm: int | None = None,
        dense: DenseChoice | str | None = "auto",
    ) -> None:
        """Choose the multi-source kernel of :meth:`bfs_many`, :meth:`closeness` and
        :meth:`harmonic` (a tuned config does this); None keeps the default for that field.
        ``dense``: how the sums of every vertex run: a :class:`DenseChoice`, None (the batched
        kernel) or "auto" (the dense form on small shallow graphs, see :meth:`dense_runner`)."""
        if spec is not None and spec.sigma != self.spec.sigma:
            raise ArgumentError(f"{spec.name} needs sigma={self.spec.sigma} on this engine")
        if not (dense is None or dense == "auto" or isinstance(dense, DenseChoice)):
            raise ArgumentError(f"dense must be 'auto', None or a DenseChoice, got {dense!r}")
        self._ms_choice = MultiSourceChoice(
            spec, self.eta if eta is None else float(eta), block_size or self.block_size,
            blocks_per_sm,
        )  # fmt: skip
        self._dense_choice = dense
        self._close_runners()

    def dense_runner(self) -> DenseRunner | None:
        """The dense runner of this engine's every-vertex sums, built on first use; None where
        the batched kernel runs them: by choice, or by default ("auto") where
        :func:`dense_takes` says no (graphs it does not take, deep ones, and those whose
        predicted pull exceeds DENSE_AUTO_BYTES)."""
        if not self._dense_built:
            choice = self._dense_choice
            if choice == "auto":
                choice = self._default_dense()
            if isinstance(choice, DenseChoice):
                with self._cp.cuda.Device(self._device_id):
                    self._dense = DenseRunner(
                        self.prepared, choice.spec, device=self._device_id,
                        block_size=choice.block_size,
                    )  # fmt: skip
            self._dense_built = True
        return self._dense

    def _default_dense(self) -> DenseChoice | None:
        n, arcs = self.n, int(self.prepared.in_ptr[-1])
        with self._cp.cuda.Device(self._device_id):  # the engine's device, not the current one
            free, _ = self._cp.cuda.runtime.memGetInfo()
        if not dense_fits(DEFAULT_DENSE, n, arcs, free):  # before the sample BFS it needs
            return None
        depth = self._sampled_depth()
        if not dense_takes(n, arcs, depth, free):
            return None
        warnings.warn(
            f"this engine was not tuned for many sources: the sums of every vertex use "
            f"{DEFAULT_DENSE.name} (all {n:,} BFSs at once; BFS depth {depth} from a sample "
            "source); blest-tune --workload closeness tunes it",
            RuntimeWarning,
            stacklevel=7,
        )
        return DenseChoice(DEFAULT_DENSE)

    def _sampled_depth(self) -> int:
        """The BFS depth from a highest-out-degree vertex (measured once)."""
        if self._depth_sample is None:
            self.bfs(int(np.argmax(self.graph.out_degree)), out="device")
            self._depth_sample = int(self.stats.depth)
        return self._depth_sample

    def ms_runner(self, *, reverse: bool = False) -> MSRunner:
        """The multi-source runner on this graph (``reverse``: its arcs reversed), built on
        first use; without a configured variant, a default chosen from the graph's depth."""
        key = bool(reverse and self.graph.directed)
        if key not in self._runners:
            choice = self._ms_choice or MultiSourceChoice(None, self.eta, self.block_size)
            if choice.spec is None:
                choice = self._ms_choice = replace(choice, spec=self._default_ms_spec())
            prepared = self.prepared.reversed(xp=self._cp) if key else self.prepared
            with self._cp.cuda.Device(self._device_id):
                self._runners[key] = MSRunner(
                    prepared, choice.spec, eta=choice.eta, device=self._device_id,
                    block_size=choice.block_size, blocks_per_sm=choice.blocks_per_sm,
                )  # fmt: skip
        return self._runners[key]

    def _default_ms_spec(self) -> MSSpec:
        """kappa = 256 on the grid for shallow graphs; for deep ones (a grid barrier per level
        costs more than a level there, and their frontiers are sparse) the queue form with the
        largest kappa whose visited bits take at most a seventh of a multiprocessor's shared
        memory (the smallest, if only that fits a block), else kappa = 32 per block with the
        CUDA-core out-arc expansion; said in a warning."""
        depth = self._sampled_depth()
        deep = depth >= DEEP_GRAPH_LEVELS
        if deep:
            spec = MSSpec(self.spec.sigma, 32, "block", "csr")
            fits = [k for k in QUEUE_KAPPAS if queue_smem_bytes(k, self.n) <= QUEUE_SMEM_SHARE]
            if fits or queue_smem_bytes(1, self.n) <= QUEUE_SMEM_BLOCK:
                spec = MSSpec(self.spec.sigma, max(fits or [1]), "queue", "csr")
        else:
            spec = MSSpec(self.spec.sigma, 256, "grid")
        warnings.warn(
            f"this engine was not tuned for many sources: bfs_many/closeness use {spec.name} "
            f"(BFS depth {depth} from a sample source); blest-tune --workload closeness tunes it",
            RuntimeWarning,
            stacklevel=5,
        )
        return spec

    def _bfs_many(self, users: np.ndarray, out: np.ndarray, progress: Progress | None) -> Any:
        with self._lock:
            return gpu_bfs_many(self, users, out, progress)

    def _source_sums(self, users: np.ndarray, progress: Progress | None) -> SourceSums:
        with self._lock:
            return gpu_source_sums(self, users, progress)

    def _close_runners(self) -> None:
        for runner in self._runners.values():
            runner.close()
        self._runners = {}
        if self._dense is not None:
            self._dense.close()
        self._dense, self._dense_built = None, False


def dense_takes(n: int, arcs: int, depth: int, free_bytes: int | None = None) -> bool:
    """Whether the dense form is worth running (and timing) on a graph: it takes the graph
    (:func:`~blest.runtime.dense.dense_fits`), the graph is shallow (BFS depth below
    DEEP_GRAPH_LEVELS) and its predicted pull (in-arcs x row bytes x depth) stays within
    DENSE_AUTO_BYTES."""
    if depth >= DEEP_GRAPH_LEVELS or not dense_fits(DEFAULT_DENSE, n, arcs, free_bytes):
        return False
    return 4 * arcs * row_words(DEFAULT_DENSE, n) * max(depth, 1) <= DENSE_AUTO_BYTES
