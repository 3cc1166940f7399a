"""The GPU engine's many-source work: ``bfs_many``, and the sums behind ``closeness`` and
``harmonic``, through a multi-source kernel or the dense form.

:class:`ManySources` belongs to one :class:`~blest.runtime.engine.Engine` (one prepared graph
on one GPU). It runs the multi-source kernel a tuned config chose, or a default chosen from the
graph's depth; on the graph, or on its reverse for BFSs over in-arcs (closeness and harmonic
centrality measure distances *to* each vertex); and for the sums of every vertex at once, the
dense form where a config, or the graph's size and depth, choose it. Sources are put in
increasing internal id (consecutive ids are close in the graph's ordering, so a batch's BFSs
share their frontiers), run kappa at a time, and the results are put back in the caller's
order. :attr:`ManySources.kappa` answers the batch width without building a runner.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from blest.codegen.densespec import DenseSpec, row_words
from blest.codegen.msspec import MSSpec, queue_smem_bytes
from blest.defaults import DEEP_KAPPA, DEFAULT_KAPPA, KAPPAS, QUEUE_KAPPAS
from blest.errors import ArgumentError
from blest.graph.prepared import Prepared
from blest.reference.centrality import SourceSums
from blest.runtime.arguments import Progress
from blest.runtime.dense_runner import DENSE_BLOCK_SIZE, DenseRunner, dense_fits
from blest.runtime.device import available_memory, format_bytes, require_memory
from blest.runtime.ms_runner import MSRunner, runner_bytes

__all__ = [
    "ManySources",
    "MultiSourceChoice",
    "DenseChoice",
    "DEEP_GRAPH_LEVELS",
    "dense_takes",
    "fitting_spec",
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
#: Device bytes a bfs_many window of levels may take.
WINDOW_BYTES = 1 << 30


@dataclass(frozen=True)
class MultiSourceChoice:
    """The multi-source kernel of an engine and its runtime choices (spec None: the default)."""

    spec: MSSpec | None
    eta: float
    block_size: int
    blocks_per_sm: int | None = None


@dataclass(frozen=True)
class DenseChoice:
    """The dense form of an engine's every-vertex sums."""

    spec: DenseSpec
    block_size: int = DENSE_BLOCK_SIZE


class ManySources:
    """Many-source work on one prepared graph and GPU (see the module docstring).

    ``depth_probe()`` returns the BFS depth from a sample source (the engine runs one BFS);
    it is called at most once, when a default must be chosen."""

    def __init__(
        self,
        prepared: Prepared,
        device_id: int,
        choice: MultiSourceChoice,
        depth_probe: Callable[[], int],
    ) -> None:
        from blest.runtime.device import cupy_module

        self.cp = cupy_module()
        self.prepared = prepared
        self.n = prepared.n
        self.device_id = device_id
        self.choice = choice
        #: "auto" (the graph decides), None (the batched forms) or a DenseChoice.
        self.dense_choice: DenseChoice | str | None = "auto"
        self._depth_probe = depth_probe
        self._depth: int | None = None
        self._runners: dict[bool, MSRunner] = {}
        self._dense: DenseRunner | None = None
        self._dense_built = False  # whether dense_runner() has decided

    def configure(
        self,
        spec: MSSpec | None = None,
        *,
        eta: float | None = None,
        block_size: int | None = None,
        blocks_per_sm: int | None = None,
        dense: DenseChoice | str | None = "auto",
    ) -> None:
        """Choose the multi-source kernel of ``bfs_many``, ``closeness`` and ``harmonic`` (a
        tuned config does this); None keeps the default for that field. ``dense``: how the sums
        of every vertex run: a :class:`DenseChoice`, None (the batched kernel) or "auto" (the
        dense form on small shallow graphs, see :meth:`dense_runner`)."""
        if spec is not None and spec.sigma != self.prepared.sigma:
            raise ArgumentError(f"{spec.name} needs sigma={self.prepared.sigma} on this engine")
        if not (dense is None or dense == "auto" or isinstance(dense, DenseChoice)):
            raise ArgumentError(f"dense must be 'auto', None or a DenseChoice, got {dense!r}")
        base = self.choice
        self.choice = MultiSourceChoice(
            spec,
            base.eta if eta is None else float(eta),
            block_size or base.block_size,
            blocks_per_sm,
        )
        self.dense_choice = dense
        self.close()

    @property
    def spec(self) -> MSSpec:
        """The multi-source kernel's spec (the default one is chosen, not built, here)."""
        if self.choice.spec is None:
            self.choice = MultiSourceChoice(
                self._default_spec(), self.choice.eta, self.choice.block_size,
                self.choice.blocks_per_sm,
            )  # fmt: skip
        assert self.choice.spec is not None
        return self.choice.spec

    @property
    def kappa(self) -> int:
        """The BFSs a batch of the chosen kernel runs: the width the partition over several
        GPUs deals whole batches of, the same on every GPU. Where the device's free memory
        cannot hold that width, the runner runs narrower batches (:func:`fitting_spec`), a
        whole number of them per batch dealt."""
        return self.spec.kappa if self.prepared.n else DEFAULT_KAPPA

    def depth(self) -> int:
        """The BFS depth from a highest-out-degree vertex (measured once)."""
        if self._depth is None:
            self._depth = int(self._depth_probe())
        return self._depth

    # ------------------------------------------------------------------ runners
    def runner(self, *, reverse: bool = False) -> MSRunner:
        """The multi-source runner on this graph (``reverse``: its arcs reversed), built on
        first use."""
        key = bool(reverse and self.prepared.graph.directed)
        if key not in self._runners:
            c = self.choice
            prepared = self.prepared.reversed(xp=self.cp) if key else self.prepared
            with self.cp.cuda.Device(self.device_id):
                spec = fitting_spec(self.spec, prepared, available_memory(), self.device_id)
                self._runners[key] = MSRunner(
                    prepared, spec, eta=c.eta, device=self.device_id,
                    block_size=c.block_size, blocks_per_sm=c.blocks_per_sm,
                )  # fmt: skip
        return self._runners[key]

    def dense_runner(self) -> DenseRunner | None:
        """The dense runner of the every-vertex sums, built on first use; None where the
        batched kernel runs them: by choice, or by default ("auto") where :func:`dense_takes`
        says no (graphs it does not take, deep ones, and those whose predicted pull exceeds
        DENSE_AUTO_BYTES)."""
        if not self._dense_built:
            choice = self.dense_choice
            if choice == "auto":
                choice = self._default_dense()
            if isinstance(choice, DenseChoice):
                with self.cp.cuda.Device(self.device_id):
                    self._dense = DenseRunner(
                        self.prepared, choice.spec, device=self.device_id,
                        block_size=choice.block_size,
                    )  # fmt: skip
            self._dense_built = True
        return self._dense

    def _default_dense(self) -> DenseChoice | None:
        n, arcs = self.n, int(self.prepared.in_ptr[-1])
        with self.cp.cuda.Device(self.device_id):  # the engine's device, not the current one
            free, _ = self.cp.cuda.runtime.memGetInfo()
        if not dense_fits(DEFAULT_DENSE, n, arcs, free):  # before the sample BFS it needs
            return None
        depth = self.depth()
        if not dense_takes(n, arcs, depth, free):
            return None
        warnings.warn(
            f"this engine was not tuned for many sources: the sums of every vertex use "
            f"{DEFAULT_DENSE.name} (all {n:,} BFSs at once; BFS depth {depth} from a sample "
            "source); blest-tune --workload closeness tunes it",
            RuntimeWarning,
            stacklevel=6,
        )
        return DenseChoice(DEFAULT_DENSE)

    def _default_spec(self) -> MSSpec:
        """DEFAULT_KAPPA on the grid, vertex-major, for shallow graphs; for deep ones (a grid
        barrier per level costs more than a level there, and their frontiers are sparse) the
        queue form with the largest kappa whose visited bits take at most a seventh of a
        multiprocessor's shared memory (the smallest, if only that fits a block), else
        DEEP_KAPPA per block with the CUDA-core out-arc expansion; said in a warning."""
        depth, sigma = self.depth(), self.prepared.sigma
        if depth >= DEEP_GRAPH_LEVELS:
            spec = MSSpec(sigma, DEEP_KAPPA, "block", "csr")
            fits = [k for k in QUEUE_KAPPAS if queue_smem_bytes(k, self.n) <= QUEUE_SMEM_SHARE]
            if fits or queue_smem_bytes(1, self.n) <= QUEUE_SMEM_BLOCK:
                spec = MSSpec(sigma, max(fits or [1]), "queue", "csr")
        else:
            spec = MSSpec(sigma, DEFAULT_KAPPA, "grid", layout="vertex")
        warnings.warn(
            f"this engine was not tuned for many sources: bfs_many/closeness use {spec.name} "
            f"(BFS depth {depth} from a sample source); blest-tune --workload closeness tunes it",
            RuntimeWarning,
            stacklevel=6,
        )
        return spec

    # ------------------------------------------------------------------ work
    def _sorted(self, users: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(internal ids in increasing order, the permutation that sorted them)."""
        internal = np.asarray(self.prepared.permutation.new_of_old)[users].astype(np.int32)
        order = np.argsort(internal, kind="stable")
        return internal[order], order

    def bfs_many(self, users: np.ndarray, out: np.ndarray, progress: Progress | None) -> Any:
        """Levels of every source into ``out`` (rows in the caller's order) with the forward
        runner, a window of rows at a time on the device."""
        runner = self.runner(reverse=False)
        cp, n, kappa = self.cp, self.n, runner.spec.kappa
        internal, order = self._sorted(users)
        k = internal.size
        with cp.cuda.Device(runner.device_id):
            budget = min(WINDOW_BYTES, available_memory() // 2)  # rows by free memory
            rows = max(kappa, min(k, budget // max(4 * n, 1)) // kappa * kappa)
            require_memory(4 * n * min(rows, k), runner.device_id, self.prepared.graph)
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

    def all_at_once(self, users: np.ndarray) -> bool:
        """Whether the sums of ``users`` run in the dense form: every vertex in id order, and
        the dense runner is chosen (:meth:`dense_runner`)."""
        return users.size == self.n and _is_every_vertex(users) and self.dense_runner() is not None

    def source_sums(
        self, users: np.ndarray, progress: Progress | None, *, pendant: bool = False
    ) -> SourceSums:
        """Exact sums of BFSs over in-arcs from every source (the caller's order); with the
        pendant harmonic sums when ``pendant`` (the batched kernels give them, the dense form
        does not: such a call runs batched)."""
        new_of_old = np.asarray(self.prepared.permutation.new_of_old)
        directed = self.prepared.graph.directed
        if users.size == self.n and _is_every_vertex(users):
            # Every vertex: internal ids 0 .. n-1 in order, user u's at new_of_old[u]. The
            # dense form's per-target sums over all sources are these sums (distances to each
            # vertex).
            dense = None if pendant else self.dense_runner()
            if dense is not None:
                return dense.sums(progress=progress).take(new_of_old)
            runner = self.runner(reverse=directed)
            return runner.source_sums(None, progress, pendant=pendant).take(new_of_old)
        runner = self.runner(reverse=directed)
        internal, order = self._sorted(users)
        sums = runner.source_sums(internal, progress, pendant=pendant)
        inverse = np.empty_like(order)
        inverse[order] = np.arange(order.size)
        return sums.take(inverse)

    def close(self) -> None:
        """Release every runner (the next call builds what it needs again)."""
        for runner in self._runners.values():
            runner.close()
        self._runners = {}
        if self._dense is not None:
            self._dense.close()
        self._dense, self._dense_built = None, False


def dense_takes(n: int, arcs: int, depth: int, free_bytes: int | None = None) -> bool:
    """Whether the dense form is worth running (and timing) on a graph: it takes the graph
    (:func:`~blest.runtime.dense_runner.dense_fits`), the graph is shallow (BFS depth below
    DEEP_GRAPH_LEVELS) and its predicted pull (in-arcs x row bytes x depth) stays within
    DENSE_AUTO_BYTES."""
    if depth >= DEEP_GRAPH_LEVELS or not dense_fits(DEFAULT_DENSE, n, arcs, free_bytes):
        return False
    return 4 * arcs * row_words(DEFAULT_DENSE, n) * max(depth, 1) <= DENSE_AUTO_BYTES


def fitting_spec(spec: MSSpec, prepared: Prepared, free_bytes: int, device_id: int = 0) -> MSSpec:
    """``spec``, or where a runner of it (:func:`~blest.runtime.ms_runner.runner_bytes`) needs
    more than ``free_bytes``, the same kernel with the widest smaller kappa whose runner fits
    (the vertex-major layout becomes chunk-major below kappa 64), said in a warning; ``spec``
    itself when none fits (the runner's memory check then says what is missing). Kappas are
    powers of two, so a batch of the chosen width is a whole number of narrower ones."""
    need = runner_bytes(prepared, spec)
    if need <= free_bytes or spec.form == "smem":
        return spec
    kappas = QUEUE_KAPPAS if spec.form == "queue" else KAPPAS
    for kappa in sorted((k for k in kappas if k < spec.kappa), reverse=True):
        layout = spec.layout if kappa >= 64 else "chunk"
        narrower = MSSpec(spec.sigma, kappa, spec.form, spec.expand, layout)
        if runner_bytes(prepared, narrower) <= free_bytes:
            warnings.warn(
                f"{spec.name} needs about {format_bytes(need)} of GPU memory on this graph and "
                f"device {device_id} has {format_bytes(free_bytes)} free: running "
                f"{narrower.name} (kappa {kappa}, "
                f"{format_bytes(runner_bytes(prepared, narrower))}) instead; the scores are "
                "the same",
                RuntimeWarning,
                stacklevel=4,
            )
            return narrower
    return spec


def _is_every_vertex(users: np.ndarray) -> bool:
    """Whether ``users`` is 0, 1, ..., n - 1 (every vertex in id order)."""
    return bool(users[0] == 0 and np.all(np.diff(users) == 1))


def _offset(progress: Progress | None, base: int, total: int) -> Progress | None:
    if progress is None:
        return None
    return lambda done, _: progress(base + done, total)
