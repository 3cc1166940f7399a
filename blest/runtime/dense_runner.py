"""The GPU dense runner: the sums of every vertex's BFS in one launch (a ``DenseSpec``).

:class:`DenseRunner` uploads the in-adjacency of a prepared graph and its units of work, keeps
the four n-row bitmaps, and runs all n BFSs at once (``templates/ms_dense.cu.j2``). Its sums are
per target, which for every source at once are exactly the per-source sums of BFSs over in-arcs
(closeness and harmonic centrality of each vertex): :meth:`DenseRunner.sums` returns them by
internal id, bit-identical to the batched runner's and the CPU reference's.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from blest.codegen.contract import CTL, CTL_WORDS
from blest.codegen.dense_render import dense_program
from blest.codegen.densespec import (
    DENSE_MAX_N,
    DenseSpec,
    chunk_sources,
    dense_bytes,
    row_words,
)
from blest.errors import ArgumentError, EngineError
from blest.graph.bvss import to_host
from blest.graph.prepared import Prepared
from blest.reference.centrality import SourceSums
from blest.runtime.device import cupy_module, pinned_array, require_memory
from blest.runtime.device_program import DeviceProgram, LaunchShape

__all__ = ["DenseRunner", "dense_units", "dense_fits"]

#: Threads per block of the dense kernel unless told otherwise.
DENSE_BLOCK_SIZE = 512


def dense_fits(spec: DenseSpec, n: int, arcs: int, free_bytes: int | None = None) -> bool:
    """Whether the dense form takes a graph of n vertices and ``arcs`` arcs (and, given the
    device's free bytes, whether its bitmaps take at most half of them)."""
    if n > DENSE_MAX_N or arcs >= 2**31:
        return False
    return free_bytes is None or 2 * dense_bytes(spec, n) <= free_bytes


def dense_units(in_ptr: np.ndarray, seg: int) -> np.ndarray:
    """The units of work, one int4 row each: (vertex, first in-arc, in-arcs, shared), every
    vertex cut into pieces of at most ``seg`` in-arcs (one unit if it has none); ``shared`` is 1
    where a vertex has several units."""
    in_ptr = np.asarray(in_ptr, dtype=np.int64)
    n = in_ptr.size - 1
    degree = np.diff(in_ptr)
    pieces = np.maximum(1, -(-degree // seg))
    vertex = np.repeat(np.arange(n, dtype=np.int64), pieces)
    first_piece = np.cumsum(pieces) - pieces
    k = np.arange(vertex.size, dtype=np.int64) - np.repeat(first_piece, pieces)
    units = np.empty((vertex.size, 4), dtype=np.int32)
    units[:, 0] = vertex
    units[:, 1] = in_ptr[vertex] + k * seg
    units[:, 2] = np.minimum(seg, degree[vertex] - k * seg)
    units[:, 3] = pieces[vertex] > 1
    return units


class DenseRunner:
    """The dense form of one :class:`DenseSpec` on one GPU (see the module docstring)."""

    def __init__(
        self,
        prepared: Prepared,
        spec: DenseSpec,
        *,
        device: int | None = None,
        block_size: int = DENSE_BLOCK_SIZE,
    ) -> None:
        from blest.codegen import toolchain

        if block_size % 32 or not 32 <= block_size <= 1024:
            raise ArgumentError(
                f"block_size must be a multiple of 32 in [32, 1024], got {block_size}"
            )
        in_ptr = np.asarray(to_host(prepared.in_ptr), dtype=np.int64)
        n, arcs = prepared.n, int(in_ptr[-1])
        if not dense_fits(spec, n, arcs):
            raise ArgumentError(
                f"{spec.name} takes at most {DENSE_MAX_N:,} vertices and 2^31 arcs; this graph "
                f"has {n:,} and {arcs:,}: use the batched forms"
            )
        self.spec, self.n, self.block_size = spec, n, int(block_size)
        self.device_id, self.arch, _ = toolchain.require_gpu(device)
        self.prepared = prepared
        self.row_words = row_words(spec, n)
        self.n_chunks = -(-n // chunk_sources(spec))
        cp = self._cp = cupy_module()
        with cp.cuda.Device(self.device_id):
            require_memory(dense_bytes(spec, n), self.device_id, prepared.graph)
            self._allocate(prepared, in_ptr)
            self._load()
        self.last_seconds = 0.0
        self.depth = 0

    def _allocate(self, prep: Prepared, in_ptr: np.ndarray) -> None:
        cp, n = self._cp, self.n
        units = dense_units(in_ptr, self.spec.seg)
        cells = n * self.row_words
        # One buffer for what a run returns, fetched in one copy: the control block, then the
        # per-target dist, reach and harm.
        head = CTL_WORDS // 2
        self._out = cp.zeros(head + 3 * n, dtype=cp.uint64)
        self._host_out = pinned_array(cp, head + 3 * n, np.uint64)
        self._ctl = self._out[:head].view(cp.uint32)
        self._packed = self._out[head:].reshape(3, n)  # dist, reach, harm
        self._args = {
            "in_idx": cp.asarray(np.asarray(to_host(prep.in_idx), dtype=np.int32)),
            "units": cp.asarray(units.reshape(-1)),
            "n": np.int32(n),
            "n_units": np.int32(units.shape[0]),
            "row_words": np.int32(self.row_words),
            "visited": cp.empty(cells, dtype=cp.uint32),
            "frontier": cp.empty(3 * cells, dtype=cp.uint32),
            "cnt": cp.empty(2 * n, dtype=cp.uint32),
            "ctl": self._ctl,
            "chunk_first": np.int32(0),
            "chunk_last": np.int32(self.n_chunks),
            "dist": self._packed[0],
            "reach": self._packed[1],
            "harm": self._packed[2].view(cp.float64),
        }
        self.units = int(units.shape[0])

    def _load(self) -> None:
        from blest.runtime.device_program import max_cooperative_grid

        kernels = dense_program(self.spec)
        self.source = kernels.source
        self._program = DeviceProgram(kernels, self.device_id, self.arch, self._args)
        self.grid = max_cooperative_grid(self._program.kernels["dense"], self.block_size)
        if self.grid < 1:
            raise EngineError(f"{self.spec.name} cannot run {self.block_size} threads here")
        self._program.shapes["dense"] = LaunchShape(self.grid, self.block_size, 0, True)

    def sums(
        self,
        chunks: tuple[int, int] | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> SourceSums:
        """Per internal id v, the sums over sources s of d(s -> v): with ``chunks=(first,
        last)`` over the sources of those chunks only (internal ids ``[first, last) x
        chunk_sources``), else over every vertex (the closeness sums of v). One launch."""
        first, last = chunks if chunks is not None else (0, self.n_chunks)
        if not 0 <= first < last <= self.n_chunks:
            raise ArgumentError(f"chunks must lie in [0, {self.n_chunks}], got {chunks}")
        cp = self._cp
        with cp.cuda.Device(self.device_id):
            self._program.rebind(chunk_first=np.int32(first), chunk_last=np.int32(last))
            t0 = time.perf_counter()
            self._ctl.data.memset_async(0, self._ctl.nbytes)
            self._program.launch("dense")
            self._out.get(out=self._host_out)  # waits for the kernel
            ctl = self._host_out[: CTL_WORDS // 2].view(np.uint32)
            if ctl[CTL["error"]]:
                raise EngineError(
                    f"kernel {self.spec.name}: a grid barrier timed out (a block never "
                    "arrived); the result is void. Please report this with the graph."
                )
            got = self._host_out[CTL_WORDS // 2 :].reshape(3, self.n).copy()  # buffer reused
            self.last_seconds = time.perf_counter() - t0
            self.depth = int(ctl[CTL["levels_run"]])
        if progress is not None:
            progress(self.n, self.n)
        return SourceSums(got[0].view(np.int64), got[1].view(np.int64), got[2].view(np.float64))

    def memory_summary(self) -> str:
        from blest.runtime.device import format_bytes

        return (
            f"{self.spec.name}: {format_bytes(dense_bytes(self.spec, self.n))} of bitmaps, "
            f"{self.units:,} units, grid {self.grid} x {self.block_size}"
        )

    def close(self) -> None:
        self._program.close()
        self._args = {}
        self._out = self._host_out = self._packed = self._ctl = None
