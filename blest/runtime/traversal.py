"""The single-source driver: one prepared graph, one variant, its :class:`DeviceProgram`, and
the three phases of a BFS call.

:class:`Traversal` builds the variant's buffers (:mod:`blest.runtime.ss_buffers`), loads its
module (rendered with the claims form its graph's ordering uses), sizes the launches, and
enqueues a call's phases: **init** (levels to -1, the seeds at level 0), the **traversal** (one
cooperative persistent launch, a host loop of per-level launches, or the one-block launch,
which also initializes), and the **deliver pass** (the levels in the user's ids to where the
call wants them, the control block to host memory). It then checks the control block and keeps
what :meth:`stats` reports. The call paths (:mod:`blest.runtime.calls`,
:mod:`blest.runtime.captured`, :mod:`blest.runtime.served`) decide how a call's phases are
submitted; this object holds no lock and knows nothing of them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from blest.codegen.contract import (
    CALL_SLOT,
    CTL,
    FUSED_ONCE,
    SERVE_WORDS,
    claims_form,
)
from blest.codegen.render import program
from blest.codegen.spec import VariantSpec
from blest.errors import ArgumentError, EngineError, GPUUnavailableError
from blest.graph.prepared import Prepared
from blest.runtime.arguments import CallRules, check_out
from blest.runtime.device import (
    deliver_levels,
    device_in_csr,
    device_smem_limit,
    pinned_array,
    require_memory,
    staged,
)
from blest.runtime.device_program import DeviceProgram, LaunchShape
from blest.runtime.engine_protocol import BFSStats, Geometry
from blest.runtime.ss_buffers import block_buffers, block_plan, bvss_buffers

__all__ = ["Traversal", "PER_LEVEL_BATCH", "launch_shapes"]

#: Levels the per-level host loop launches between two looks at whether the BFS has ended.
PER_LEVEL_BATCH = 16
_ERROR = CTL["error"]


def launch_shapes(
    spec: VariantSpec, roles: Any, block: int, grid: int, shared_bytes: int, pass_grid: int
) -> dict[str, LaunchShape]:
    """Each role's launch: the grid-wide variants run every kernel on ``grid`` blocks, the
    traversal cooperatively; the block launch runs its traversal on one block or cluster with
    ``shared_bytes`` of shared memory, and its one-pass kernels (the parents post-pass, the
    deliver pass) on ``pass_grid`` blocks."""
    if spec.launch != "block":
        return {role: LaunchShape(grid, block, 0, role == "bfs") for role in roles}
    return {
        role: LaunchShape(grid, block, shared_bytes)
        if role == "bfs"
        else LaunchShape(pass_grid, block)
        for role in roles
    }


class Traversal:
    """The driver of one single-source variant on one GPU (see the module docstring)."""

    def __init__(
        self,
        prepared: Prepared,
        spec: VariantSpec,
        device_id: int,
        arch: str,
        geometry: Geometry,
        record_levels: bool,
    ) -> None:
        from blest.runtime.device import cupy_module

        cp = self.cp = cupy_module()
        self.prepared, self.spec, self.n = prepared, spec, prepared.n
        self.device_id, self.arch = device_id, arch
        self.record_levels = record_levels
        self.permutation = prepared.permutation
        #: Whether the kernels get new_of_old and claim by level: a reordered graph, or any
        #: graph under hops > 1 (whose levels init sets to -1; contract.claims_form).
        self.by_level_ids = not self.permutation.is_identity or spec.hops > 1
        self.claims = claims_form(spec, self.by_level_ids)
        self.n_words = (self.n + 31) // 32
        self.smem_queue = self.shared_bytes = 0
        if spec.launch == "block":
            limit = device_smem_limit(cp, device_id)
            self.smem_queue, self.shared_bytes = block_plan(self.n, limit, spec.cluster, arch)
            bufs = block_buffers(cp, prepared, spec, self.smem_queue, record_levels)
        else:
            bufs = bvss_buffers(cp, prepared, spec, self.by_level_ids, record_levels)
        self.values, self.in_csr, self.user_levels = bufs.values, bufs.in_csr, bufs.user_levels
        kernels = program(spec, claims=self.claims)
        self.program = DeviceProgram(kernels, device_id, arch, bufs.values, host_words=SERVE_WORDS)
        self._size(geometry)
        self.host_block = self.program.host_block  # the control block's copy, then a request block
        self.host_ctl = self.program.host_ctl
        self.host_levels = pinned_array(cp, self.n, np.int32)
        self.events = (cp.cuda.Event(), cp.cuda.Event())
        # A captured call's {seed, where the levels go (0: the engine's own buffer), 0 for the
        # barrier's count} in pinned memory, copied by the call's first node to the device
        # slot: the control block's call slot, or the block launch's own.
        self.call_slot = pinned_array(cp, 3, np.int64)
        self.slot_words = memoryview(self.call_slot)  # for the call's stores (a tenth of NumPy's)
        self.new_of_old = np.ascontiguousarray(self.permutation.new_of_old)
        self.internal_ids = self.new_of_old.data
        if spec.launch == "persistent":
            first, words = CALL_SLOT
            self.slot = self.values["ctl"][first : first + words].view(cp.int64)
        else:
            self.slot = cp.zeros(3, dtype=cp.int64)
        #: Whether the deliver pass maps internal ids to the user's (the block launch writes the
        #: user's ids itself): it is then timed with the traversal, as the mapping belongs to it.
        self.reorders = self.user_levels is not None and spec.launch != "block"
        self.own_ptr = self.user_levels.data.ptr if self.reorders else 0
        self.own_dst = cp.full(1, self.own_ptr, dtype=cp.uint64)
        self._seed_buffer: Any = None  # internal seeds of multi-seed calls, grown on demand
        self._block_seeds: tuple = ()  # the block launch's (seeds, n_seeds, src) of the call
        self.parent_args: tuple | None = None  # (in_ptr, in_idx, user parents) once asked
        #: The last call: (user source, timing events or None, seeds, device control block to
        #: read its statistics from, or None for the host mirror's).
        self.last: tuple | None = None
        self._stats: BFSStats | None = None
        self.void = ""

    # ------------------------------------------------------------------ geometry
    def _size(self, geometry: Geometry) -> None:
        spec, prog = self.spec, self.program
        main = "bfs" if "bfs" in prog.kernels else "stage1"
        per_sm = prog.occupancy(main, geometry.block_size, self.shared_bytes)
        if per_sm < 1:
            raise GPUUnavailableError(
                f"kernel {spec.name} cannot run {geometry.block_size} threads per block here"
            )
        if geometry.blocks_per_sm is not None:
            per_sm = max(1, min(per_sm, int(geometry.blocks_per_sm)))
        self.sms = int(self.cp.cuda.Device(self.device_id).attributes["MultiProcessorCount"])
        self.block_size = block = geometry.block_size
        self.grid_size = per_sm * self.sms
        if geometry.grid_blocks is not None:
            self.grid_size = min(self.grid_size, int(geometry.grid_blocks))
        self.small_queue = int(geometry.small_queue or 0)  # the engine's default threshold
        if spec.queue == "resident" and (self.n + 2) * self.grid_size >= 1 << 33:
            # grid_barrier_sum.cu.j2 counts arrivals (blocks x half of <= n + 2 barriers) in u32
            raise ArgumentError(f"queue='resident': {self.grid_size} blocks is too many for "
                                f"{self.n} vertices (2^33 / (n + 2) at most)")  # fmt: skip
        pass_grid = 0
        if spec.launch == "block":
            self._check_cluster(block)
            self.grid_size = spec.cluster
            pass_grid = max(1, prog.occupancy("parents", block)) * self.sms
        shapes = launch_shapes(spec, prog.kernels, block, self.grid_size, self.shared_bytes,
                               pass_grid)  # fmt: skip
        prog.shapes.update(shapes)

    def _check_cluster(self, block: int) -> None:
        """A cluster the device cannot place is refused here, not at the first call."""
        from blest.runtime.device_program import max_active_clusters

        cluster, prog = self.spec.cluster, self.program
        if cluster > 1:
            fits = max_active_clusters(prog.kernels["bfs"], cluster, block, self.shared_bytes)
            if fits < 1:
                from blest.runtime.device import format_bytes

                raise GPUUnavailableError(
                    f"kernel {self.spec.name}: this GPU cannot run a cluster of {cluster} "
                    f"blocks of {block} threads with {format_bytes(self.shared_bytes)} of "
                    "shared memory each; use a smaller cluster or block"
                )

    # ------------------------------------------------------------------ a call's phases
    def launch(self, role: str, extra: tuple = ()) -> None:
        self.program.launch(role, extra)

    def submit_init(self, internal: Any) -> None:
        """Enqueue the init kernel for one internal seed (an int) or several (sorted, unique);
        the block launch only keeps the seed arguments (its traversal kernel initializes)."""
        if np.ndim(internal) == 0:
            args: tuple = (np.uint64(0), np.int32(1), np.int32(internal))
        else:
            seeds = np.asarray(internal, dtype=np.int32)
            k = seeds.size
            if self._seed_buffer is None or self._seed_buffer.size < k:
                self._seed_buffer = self.cp.empty(max(k, 1024), dtype=self.cp.int32)
            self._seed_buffer[:k].set(seeds)
            args = (self._seed_buffer, np.int32(k), np.int32(seeds[0]))
        self.init_from(args)

    def init_from(self, seeds: tuple) -> None:
        """Enqueue init from (seeds pointer or null, their count, the one seed) (the block
        launch keeps them for its traversal kernel)."""
        if self.spec.launch == "block":
            self._block_seeds = seeds
        else:
            self.launch("init", seeds)

    def enqueue_traversal(
        self, limit: int, rules: CallRules, fused_ctl_out: int | None = None
    ) -> None:
        """The traversal's launches (the block launch: its one kernel, which also initializes
        and writes the user's ids). ``fused_ctl_out`` (persistent variants, captured calls):
        the kernel also initializes from the call slot and delivers, the control block to that
        address."""
        launch = self.spec.launch
        eta, beta, alpha = np.float64(rules.eta), np.float64(rules.beta), np.float64(rules.alpha)
        if launch == "block":
            self.launch("bfs", (*self._block_seeds, np.int32(limit)))
        elif launch == "persistent":
            mode = FUSED_ONCE if fused_ctl_out is not None else 0
            extra = (np.int32(limit), eta, beta, alpha, np.uint32(rules.small_queue),
                     np.uint64(fused_ctl_out or 0), np.int32(mode))  # fmt: skip
            self.launch("bfs", extra)
        elif rules.alpha > 0:
            raise ArgumentError(f"alpha > 0 needs a persistent variant, not {self.spec.name}")
        else:
            self._per_level_loop(limit, eta, beta)

    def enqueue_deliver(self, dst_slot: int, ctl_out: int) -> None:
        """The deliver pass: the levels to ``*dst_slot`` (a device word holding an address) in
        the user's ids, the control block to ``ctl_out`` (an address, or 0 for none)."""
        self.launch("deliver", (np.uint64(dst_slot), np.uint64(ctl_out)))

    def submit_traversal(self, limit: int, rules: CallRules) -> None:
        """Enqueue the traversal, and the pass to the user's ids, between the timing events."""
        start, stop = self.events
        if rules.timing:
            start.record()
        self.enqueue_traversal(limit, rules)
        if self.reorders:
            self.enqueue_deliver(self.own_dst.data.ptr, 0)
        if rules.timing:
            stop.record()

    def _per_level_loop(self, limit: int, eta: np.float64, beta: np.float64) -> None:
        level, stage2 = 0, "stage2" in self.program.kernels
        while True:
            for _ in range(PER_LEVEL_BATCH):
                self.launch("stage1", (np.int32(level), np.int32(limit), eta, beta))
                if stage2:
                    self.launch("stage2", (np.int32(level),))
                level += 1
            if self.program.read_ctl()[CTL["done"]]:
                return

    def wait(self, user: int, seeds: int, timed: bool) -> None:
        """Wait for the call's work; void the engine if a grid barrier timed out."""
        self.program.read_ctl()
        self.check_ctl(user, seeds, timed)

    def check_ctl(self, user: int, seeds: int, timed: bool, ctl_copy: Any = None) -> None:
        """After the wait: void the engine if a grid barrier timed out, else keep the call for
        :meth:`stats` (``timed``: whether it recorded the timing events; ``ctl_copy``: the
        device array its control block is in, when the host mirror does not hold it)."""
        if self.host_ctl[_ERROR]:
            self.void = (
                f"kernel {self.spec.name}: a grid barrier timed out (a block never arrived) and "
                "the result is void"
            )
            raise EngineError(f"{self.void}. Please report this with the graph and source.")
        self.last = (user, self.events if timed else None, seeds, ctl_copy)
        self._stats = None

    def check_void(self) -> None:
        if self.void:
            raise EngineError(f"{self.void}; build a new engine to continue")

    # ------------------------------------------------------------------ parents
    def prepare_parents(self) -> tuple:
        """The parents post-pass's arguments: the in-adjacency (uploaded unless the variant
        holds it) and the parents buffer."""
        if self.parent_args is None:
            cp, prep = self.cp, self.prepared
            if self.in_csr is not None:  # the variant holds it already
                in_ptr, in_idx = self.in_csr
            else:
                need = 8 * (self.n + 1) + 4 * int(prep.graph.nnz) + 4 * self.n
                require_memory(need, self.device_id, prep.graph)
                in_ptr, in_idx = device_in_csr(cp, prep)
            self.parent_args = (in_ptr, in_idx, cp.empty(self.n, dtype=cp.int32))
        return self.parent_args

    # ------------------------------------------------------------------ results
    def check_out(self, out: Any) -> None:
        """Refuse an ``out`` that no call can fill (see ``Engine.bfs``)."""
        check_out(out, self.n, self.cp)

    def levels(self) -> Any:
        """The device array that holds the last call's levels in the user's ids."""
        return self.values["levels"] if self.user_levels is None else self.user_levels

    def staged(self, out: Any) -> bool:
        """Whether the levels reach ``out`` through the engine's pinned buffer."""
        return staged(self.cp, out)

    def direct(self, out: Any) -> bool:
        """Whether the deliver pass can write the levels straight into CuPy array ``out``."""
        return out.flags.c_contiguous and out.device.id == self.device_id

    def deliver(self, out: Any) -> Any:
        """The last call's levels as ``out`` asks (checked by the engine)."""
        return deliver_levels(self.cp, self.levels(), out, self.host_levels)

    def stats(self) -> BFSStats:
        """Statistics of the last call (read from the GPU on first access)."""
        if self._stats is None:
            if self.last is None:
                raise EngineError("no bfs call yet")
            self._stats = self._read_stats()
        return self._stats

    def _read_stats(self) -> BFSStats:
        assert self.last is not None
        user, events, seeds, ctl_copy = self.last
        ctl = self.host_ctl
        with self.cp.cuda.Device(self.device_id):
            if ctl_copy is not None:  # the call's control block is on the device
                ctl_copy.get(out=ctl)
            ms = np.nan if events is None else self.cp.cuda.get_elapsed_time(*events)
            bottom_up: tuple[int, ...] = ()
            if self.spec.switching:  # a bit per level: the words of the levels run, not all n/32
                words = (int(ctl[CTL["levels_run"]]) + 31) // 32
                bits = self.values["bottom_up_levels"][: max(words, 1)].get()
                flat = np.unpackbits(bits.view(np.uint8), bitorder="little")
                bottom_up = tuple(int(x) for x in np.flatnonzero(flat))
        return BFSStats(
            source=user,
            depth=int(np.int32(ctl[CTL["depth"]])),
            visited=int(ctl[CTL["visited"]]),
            levels_run=int(ctl[CTL["levels_run"]]),
            traversal_ms=float(ms),
            bottom_up_levels=bottom_up,
            seeds=seeds,
        )

    # ------------------------------------------------------------------ lifetime
    def close(self) -> None:
        """Drop every device buffer, the pinned staging memory and the module."""
        self.program.close()
        self.values = {}
        self.slot = self.own_dst = self.call_slot = None
        # A closed traversal is never used again: mypy cannot type that state.
        self.slot_words = None  # type: ignore[assignment]  # holds the pinned call slot
        self.user_levels = self._seed_buffer = self.parent_args = self.in_csr = None
        self._block_seeds = ()
        self.host_levels = self.host_ctl = self.host_block = None
        self.prepared = None  # type: ignore[assignment]  # its BVSS may live on the GPU
