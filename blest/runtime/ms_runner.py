"""The GPU multi-source runner: batches of kappa BFSs of one generated MSSpec kernel.

:class:`MSRunner` uploads a prepared graph once (BVSS, in-adjacency, permutation), compiles the
variant and keeps the per-slot buffers: one slot for the grid form, one per resident thread
block for the block form (as many as fit in a share of the free memory), none for the smem
form (each resident block keeps its batch in shared memory), and for the queue form one global
overflow queue pair per resident block (its visited bits and the head of its queues are in
shared memory). :meth:`MSRunner.run` takes internal source ids and returns, per source, the
exact sum of distances, the reach and the harmonic sum (and, when asked, the pendant harmonic
sum of :mod:`blest.reference.centrality`); with ``levels`` it also writes each source's levels
(user ids) into rows of a device array. Launches cover a range of batches each, sized to take
about a quarter second, so that progress is reported and Ctrl-C is honoured between them. The
module is a :class:`~blest.runtime.device_program.DeviceProgram` whose run arguments are
rebound at each launch.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from blest.codegen.contract import CTL, CTL_WORDS, SLOT_WORDS, SMEM_STATIC_RESERVE
from blest.codegen.ms_render import ms_program
from blest.codegen.msspec import MSSpec, queue_capacity, queue_smem_bytes
from blest.defaults import DEFAULT_BLOCK_SIZE, DEFAULT_ETA
from blest.errors import ArgumentError, EngineError, GPUUnavailableError
from blest.graph.bvss import to_host
from blest.graph.prepared import Prepared
from blest.reference.centrality import SourceSums
from blest.runtime.device import (
    cupy_module,
    device_buffers,
    device_smem_limit,
    format_bytes,
    out_csr,
    pinned_array,
    require_memory,
)
from blest.runtime.device_program import DeviceProgram, LaunchShape

__all__ = ["MSRunner", "MSRun", "runner_bytes", "slot_bytes"]

#: Seconds one launch should take (progress and Ctrl-C are handled between launches).
LAUNCH_SECONDS = 0.25
#: Per-slot buffers the smem form does not use (passed as one-word placeholders).
_SLOT_BUFFERS = ("visited", "frontier", "next", "touched", "queued", "cnt")
#: Share of the free device memory the block form's slots may take.
SLOT_MEMORY_SHARE = 0.5
#: Most queue entries the queue form keeps in shared memory per queue (two queues a block).
SMEM_QUEUE_MAX = 4096


@dataclass
class MSRun:
    """What one :meth:`MSRunner.run` did."""

    sources: int
    batches: int
    launches: int
    seconds: float


class MSRunner:
    """Multi-source BFS of one :class:`MSSpec` on one GPU (see the module docstring)."""

    def __init__(
        self,
        prepared: Prepared,
        spec: MSSpec,
        *,
        eta: float = DEFAULT_ETA,
        device: int | None = None,
        block_size: int = DEFAULT_BLOCK_SIZE,
        blocks_per_sm: int | None = None,
        max_slots: int | None = None,
        smem_queue: int | None = None,
    ) -> None:
        from blest.codegen import toolchain

        if spec.sigma != prepared.sigma:
            raise ArgumentError(
                f"{spec.name} needs a graph prepared at sigma={spec.sigma}, not {prepared.sigma}"
            )
        if block_size % 32 or not 32 <= block_size <= 1024:
            raise ArgumentError(
                f"block_size must be a multiple of 32 in [32, 1024], got {block_size}"
            )
        self.spec, self.eta, self.block_size = spec, float(eta), int(block_size)
        self.device_id, self.arch, self.device_name = toolchain.require_gpu(device)
        self.prepared = prepared
        self.n = prepared.n
        cp = self._cp = cupy_module()
        with cp.cuda.Device(self.device_id):
            self._upload(prepared)
            self._load(blocks_per_sm, smem_queue)
            self._allocate(max_slots)
            self._bind()
        self.last_run: MSRun | None = None
        self._sums_buffers: tuple | None = None  # ((k, rows), device buffer, rows, pinned host)
        self._every_vertex: Any = None  # 0 .. n-1 on the device, once asked for

    # ------------------------------------------------------------------ set-up
    def _upload(self, prep: Prepared) -> None:
        cp, b = self._cp, prep.bvss
        self.rho = b.n_slice_sets
        self.nvi = self.spec.sigma * self.rho
        self.dirty_words = (self.rho + 31) // 32
        self.n_vss = b.n_vss
        g = device_buffers(
            cp,
            row_ids=b.row_ids,
            masks=b.masks,
            real_ptrs=b.real_ptrs,
            in_ptr=np.asarray(to_host(prep.in_ptr), dtype=np.int64),
            in_idx=np.asarray(to_host(prep.in_idx), dtype=np.int32),
        )
        if self.spec.expand == "csr":
            g["out_ptr"], g["out_idx"] = out_csr(cp, prep, g["in_ptr"], g["in_idx"])
        else:
            g["out_ptr"] = g["out_idx"] = np.uint64(0)  # null: the BVSS expansions
        perm = prep.permutation
        g["old_of_new"] = (
            np.uint64(0) if perm.is_identity else cp.asarray(perm.old_of_new, dtype=cp.int32)
        )
        g.update(
            n=np.int32(self.n),
            rho=np.int32(self.rho),
            n_vss=np.int32(self.n_vss),
            dirty_words=np.int32(self.dirty_words),
        )
        self._graph = g

    def _load(self, blocks_per_sm: int | None, smem_queue: int | None) -> None:
        kernels = ms_program(self.spec)
        self.source = kernels.source
        self._program = DeviceProgram(kernels, self.device_id, self.arch)
        attrs = self._cp.cuda.Device(self.device_id).attributes
        limit = device_smem_limit(self._cp, self.device_id)
        self.smem_queue = 0
        if self.spec.form == "queue":
            per_sm_bytes = int(attrs.get("MaxSharedMemoryPerMultiprocessor", limit))
            self.smem_queue = _smem_queue_entries(
                self.spec.kappa, self.n, self.block_size, limit, per_sm_bytes, smem_queue
            )
        self.shared_bytes = kernels.shared_bytes(self.n, self.smem_queue)
        if self.shared_bytes > limit:
            raise ArgumentError(
                f"{self.spec.name} needs {format_bytes(self.shared_bytes)} of shared memory "
                f"for {self.n:,} vertices; a block has {format_bytes(limit)} here: use a "
                "smaller kappa or the block form"
            )
        per_sm = self._program.occupancy("ms", self.block_size, self.shared_bytes)
        if per_sm < 1:
            raise GPUUnavailableError(f"{self.spec.name} cannot run {self.block_size} threads here")
        if blocks_per_sm is not None:
            per_sm = max(1, min(per_sm, int(blocks_per_sm)))
        sms = self._cp.cuda.Device(self.device_id).attributes["MultiProcessorCount"]
        self.grid = per_sm * int(sms)

    def _bind(self) -> None:
        """The module's arguments: the graph, the slots' state, placeholders for the run."""
        run = {
            "sources": np.uint64(0),
            "n_sources": np.int32(0),
            "batch_first": np.int32(0),
            "batch_last": np.int32(0),
            "levels_out": np.uint64(0),
            "out_first": np.int64(0),
            "dist": np.uint64(0),
            "reach": np.uint64(0),
            "harm": np.uint64(0),
            "pend": np.uint64(0),
            "eta": np.float64(self.eta),
        }
        self._program.bind({**self._graph, **self._state, **run})
        cooperative = self.spec.form == "grid"
        shape = LaunchShape(self.grid, self.block_size, self.shared_bytes, cooperative)
        self._program.shapes["ms"] = shape

    def slot_bytes(self) -> int:
        """Device bytes of one batch slot."""
        return slot_bytes(self.spec, self.n, self.rho, self.n_vss)

    def _allocate(self, max_slots: int | None) -> None:
        cp = self._cp
        if self.spec.form == "smem":  # the state lives in shared memory
            self._allocate_smem(max_slots)
            return
        if self.spec.form == "queue":
            self._allocate_queue(max_slots)
            return
        per_slot = self.slot_bytes()
        if self.spec.form == "grid":
            slots = 1
        else:
            free, _ = cp.cuda.runtime.memGetInfo()
            fit = int(SLOT_MEMORY_SHARE * free) // per_slot
            slots = min(self.grid, fit, max_slots or self.grid)
            if slots < 1:
                slots = 1  # require_memory below says what is missing
            self.grid = slots
        require_memory(slots * per_slot, self.device_id, self.prepared.graph)
        s, words = self.spec, slots * self.spec.chunks * self.nvi
        self.slots = slots
        self._state = {
            "visited": cp.zeros(words, dtype=cp.uint32),
            "frontier": cp.zeros(2 * words, dtype=cp.uint32),
            "next": cp.zeros(words, dtype=cp.uint32),
            "touched": cp.zeros(slots * (self.nvi // 32 + 1), dtype=cp.uint32),
            "queued": cp.zeros(slots * 2 * self.dirty_words, dtype=cp.uint32),
            "lists": cp.zeros(slots * 5 * max(self.n, 1), dtype=cp.int32),
            "queue": cp.zeros(slots * 2 * 2 * max(self.n_vss, 1), dtype=cp.int32),
            "slot_ctl": cp.zeros(slots * SLOT_WORDS, dtype=cp.uint64),
            "cnt": cp.zeros(slots * 2 * s.kappa, dtype=cp.uint32),
            "ctl": cp.zeros(CTL_WORDS, dtype=cp.uint32),
            "smem_queue": np.int32(0),
        }

    def _allocate_smem(self, max_slots: int | None) -> None:
        cp = self._cp
        self.slots = self.grid = min(self.grid, max_slots or self.grid)
        self._state = {name: cp.zeros(1, dtype=cp.uint32) for name in _SLOT_BUFFERS}
        self._state["slot_ctl"] = cp.zeros(1, dtype=cp.uint64)
        self._state["lists"] = cp.zeros(1, dtype=cp.int32)
        self._state["queue"] = cp.zeros(2, dtype=cp.int32)
        self._state["ctl"] = cp.zeros(CTL_WORDS, dtype=cp.uint32)
        self._state["smem_queue"] = np.int32(self.smem_queue)

    def _allocate_queue(self, max_slots: int | None) -> None:
        """The queue form: shared-memory state, plus each resident block's overflow queues."""
        cp, per_slot = self._cp, self.slot_bytes()
        free, _ = cp.cuda.runtime.memGetInfo()
        fit = max(1, int(SLOT_MEMORY_SHARE * free) // per_slot)
        self.grid = min(self.grid, fit, max_slots or self.grid)
        require_memory(self.grid * per_slot, self.device_id, self.prepared.graph)
        self._allocate_smem(None)
        self._state["queue"] = cp.empty(self.grid * per_slot // 4, dtype=cp.int32)

    # ------------------------------------------------------------------ running
    def run(
        self,
        sources: Any,
        *,
        levels: Any = None,
        out_first: int = 0,
        batches: tuple[int, int] | None = None,
        sums: tuple[Any, ...] | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> tuple[Any, ...]:
        """BFS from every internal id in ``sources`` (a NumPy or CuPy array), kappa at a time,
        in the given order.

        Returns device arrays ``(dist, reach, harm, pend)`` of length ``len(sources)`` (uint64,
        uint64, float64, and None), or adds into ``sums`` when given (its ``pend``, when not
        None, receives the pendant harmonic sums). ``batches`` limits the run to batches
        ``[first, last)``; ``levels`` (a device int32 array of rows of n, pre-filled with -1)
        receives the levels of sources ``out_first, out_first + 1, ...`` in user ids.
        ``progress(done, total)`` is called after each launch with source counts.
        """
        cp, kappa = self._cp, self.spec.kappa
        k = int(len(sources))
        n_batches = -(-k // kappa)
        first, last = batches if batches is not None else (0, n_batches)
        with cp.cuda.Device(self.device_id):
            src = sources
            if not isinstance(src, cp.ndarray) or src.dtype != cp.int32:
                src = cp.asarray(np.ascontiguousarray(to_host(sources), dtype=np.int32))
            if sums is None:
                sums = _packed_sums(cp, k)[1]
            t0, launches = time.perf_counter(), 0
            step = 1 if self.spec.form == "grid" else self.slots
            b = first
            while b < last:
                end = min(last, b + step)
                seconds = self._launch(src, k, b, end, levels, out_first, sums)
                launches += 1
                if progress is not None:
                    progress(min(k, end * kappa) - first * kappa, (last - first) * kappa)
                step = _next_step(step, end - b, seconds, self.slots, self.spec.form)
                b = end
            self.last_run = MSRun(k, last - first, launches, time.perf_counter() - t0)
        return sums

    def source_sums(
        self,
        sources: np.ndarray | None,
        progress: Callable[[int, int], None] | None = None,
        *,
        pendant: bool = False,
    ) -> SourceSums:
        """The sums of BFSs from ``sources`` (internal ids; None: every vertex in id order) on
        the host, fetched in one copy; with the pendant harmonic sums when ``pendant``."""
        cp = self._cp
        with cp.cuda.Device(self.device_id):
            if sources is None:
                if self._every_vertex is None:
                    self._every_vertex = cp.arange(self.n, dtype=cp.int32)
                sources = self._every_vertex
            k, rows = int(len(sources)), 4 if pendant else 3
            if self._sums_buffers is None or self._sums_buffers[0] != (k, rows):
                packed, sums = _packed_sums(cp, k, pendant)
                host = pinned_array(cp, rows * k, np.uint64)
                self._sums_buffers = ((k, rows), packed, sums, host)
            _, packed, sums, host = self._sums_buffers
            packed.data.memset_async(0, packed.nbytes)
            self.run(sources, sums=sums, progress=progress)
            packed.get(out=host.reshape(rows, k))
            got = host.reshape(rows, k).copy()  # the staging buffer is reused by the next call
        floats = got[2:].view(np.float64)
        return SourceSums(
            got[0].view(np.int64),
            got[1].view(np.int64),
            floats[0],
            floats[1] if pendant else None,
        )

    def _launch(
        self, src: Any, k: int, b0: int, b1: int, levels: Any, out_first: int, sums
    ) -> float:
        ctl = self._state["ctl"]
        ctl.data.memset_async(0, ctl.nbytes)
        self._program.rebind(
            sources=src,
            n_sources=np.int32(k),
            batch_first=np.int32(b0),
            batch_last=np.int32(b1),
            levels_out=np.uint64(0) if levels is None else levels,
            out_first=np.int64(out_first),
            dist=sums[0],
            reach=sums[1],
            harm=sums[2],
            pend=np.uint64(0) if len(sums) < 4 or sums[3] is None else sums[3],
        )
        t0 = time.perf_counter()
        self._program.launch("ms")
        if self._program.read_ctl()[CTL["error"]]:  # waits for the launch
            raise EngineError(
                f"kernel {self.spec.name}: a grid barrier timed out (a block never arrived); "
                "the result is void. Please report this with the graph."
            )
        return time.perf_counter() - t0

    def memory_summary(self) -> str:
        if self.spec.form == "smem":
            return f"{self.slots} block(s) with {format_bytes(self.shared_bytes)} shared memory"
        if self.spec.form == "queue":
            return (
                f"{self.slots} block(s) with {format_bytes(self.shared_bytes)} shared memory "
                f"({self.smem_queue:,} queue entries) and {format_bytes(self.slot_bytes())} "
                "of overflow queues each"
            )
        return f"{self.slots} slot(s) of {format_bytes(self.slot_bytes())}"

    def close(self) -> None:
        self._program.close()
        self._graph = self._state = {}
        self._every_vertex = None
        self._sums_buffers = None


def slot_bytes(spec: MSSpec, n: int, rho: int, n_vss: int) -> int:
    """Device bytes of one batch slot of ``spec`` on a graph of ``n`` vertices, ``rho`` slice
    sets and ``n_vss`` virtual slice sets (the queue form: one block's overflow queues; the
    smem form keeps its state in shared memory: 0)."""
    if spec.form == "smem":
        return 0
    if spec.form == "queue":  # two overflow queues of 8-byte entries
        return 2 * 8 * queue_capacity(spec.kappa, n)
    nvi, dirty_words = spec.sigma * rho, (rho + 31) // 32
    return (
        4 * 4 * spec.chunks * nvi  # visited, next, two frontier buffers
        + 4 * (nvi // 32 + 1)  # touched bits
        + 4 * 2 * dirty_words  # queued bits
        + 4 * 5 * n  # touched and frontier lists
        + 8 * 2 * max(n_vss, 1)  # queue
        + 8 * SLOT_WORDS
        + 4 * 2 * spec.kappa
    )


def runner_bytes(prepared: Prepared, spec: MSSpec) -> int:
    """Device bytes an :class:`MSRunner` of ``spec`` needs at least on ``prepared``: its copy of
    the graph (BVSS, in-adjacency, out-adjacency for the CUDA-core expansion, permutation) and
    one slot (the grid form runs one; the block and queue forms as many as fit, at least
    one)."""
    b, n, nnz = prepared.bvss, int(prepared.n), int(prepared.graph.nnz)
    graph = sum(int(getattr(a, "nbytes", 0)) for a in (b.row_ids, b.masks, b.real_ptrs))
    graph += (8 * (n + 1) + 4 * nnz) * (2 if spec.expand == "csr" else 1)
    if not prepared.permutation.is_identity:
        graph += 4 * n
    return graph + slot_bytes(spec, n, b.n_slice_sets, b.n_vss)


def _smem_queue_entries(
    kappa: int, n: int, block_size: int, block_limit: int, sm_bytes: int, asked: int | None
) -> int:
    """Queue entries the queue form keeps in shared memory (each of its two queues): ``asked``
    when given (capped by what a block can have), else what is left of the share of a
    multiprocessor's shared memory that each block gets at the occupancy the visited bits and
    the threads allow, at most SMEM_QUEUE_MAX; never more than a level can hold."""
    bitmap = queue_smem_bytes(kappa, n, 0)
    room = max(0, block_limit - bitmap) // 16
    if asked is None:
        blocks = max(1, min(32, 2048 // block_size, sm_bytes // max(bitmap + 1024, 1)))
        room = min(room, max(0, sm_bytes // blocks - 1024 - SMEM_STATIC_RESERVE - bitmap) // 16)
        asked = SMEM_QUEUE_MAX
    return int(max(0, min(asked, room, queue_capacity(kappa, n))))


def _next_step(step: int, done: int, seconds: float, slots: int, form: str) -> int:
    """Batches for the next launch, aiming at LAUNCH_SECONDS (whole waves of slots)."""
    if seconds <= 0:
        return step * 2
    want = max(1, int(done * LAUNCH_SECONDS / seconds))
    if seconds > LAUNCH_SECONDS / 5:
        want = min(want, 4 * max(step, 1))  # grow gently once launches take real time
    if form != "grid":
        want = max(slots, want // slots * slots)
    return want


def _packed_sums(cp: Any, k: int, pendant: bool = False) -> tuple[Any, tuple[Any, ...]]:
    """One zeroed (3, k) device buffer, (4, k) with ``pendant``, and its rows as (dist, reach,
    harm, pend) arrays (pend None without ``pendant``)."""
    packed = cp.zeros((4 if pendant else 3, k), dtype=cp.uint64)
    pend = packed[3].view(cp.float64) if pendant else None
    return packed, (packed[0], packed[1], packed[2].view(cp.float64), pend)
