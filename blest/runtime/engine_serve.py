"""Served calls: a traversal kernel that stays on the GPU between plain calls (``Engine.serving``).

A plain call replayed from its CUDA graph still costs a launch, and the wait for the kernel's
end, each several microseconds of host and GPU time: on a graph of a few thousand vertices
that is a third of the call. Inside ``with engine.serving():`` the persistent variants instead
launch their serving kernel once (``render(spec, serving=True)``, ``templates/serve.cu.j2``; a
module of its own, compiled at the first ``serving()`` and cached on disk like the others): it
waits for calls that the host posts in page-locked memory (where the levels go, tagged
with the call's number, then the number and the seed in one store), runs each as a captured
call would (init, levels, the pass to the user's ids), keeps a copy of the control block in
device memory (read only for ``stats``), and the last block to finish publishes the call's
number, which the host spins on. A call's GPU part
is then one bus round trip to start and two grid barriers beyond its traversal: about the
traversal's own time on an H100 (``benchmarks/NOTES.md``, session 19). On a graph in its own ids
the traversal writes the levels straight into an ``out="device"`` array, and the host names
the next call's array (the spare, allocated while the GPU works) during this call, so that the
server can fill it with -1s between the calls: that call then has nothing left to deliver.
The one-block launch (``launch="block"``, one block, not a cluster) has a server of its own
(``templates/serve_block.cu.j2``) that speaks the same protocol: its block waits for a call,
runs it as its timed kernel does (the levels straight to a device destination, or one copy to
a host one) and publishes the answer; it has no barrier, no deliver pass and no fill ahead.

While it waits, the kernel holds the GPU's SMs: other kernels (the caller's, or another
engine's) may wait for it to end, which it does when the ``with`` block ends, after ``idle_ms``
without a call (the next call launches it again), at a call it does not serve (a depth limit,
parents, several seeds: it ends first, and that call runs as usual) and at ``close``. Served
calls see the caller's earlier work on the current stream done, as launched calls would.
Mixed into :class:`blest.runtime.engine.Engine`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from blest.codegen.contract import (
    CTL,
    CTL_WORDS,
    DST_HOST_BIT,
    DST_TAG_MASK,
    DST_TAG_SHIFT,
    SERVE,
    SERVE_QUIT,
)
from blest.codegen.render import has_serving_kernel, kernel_names, render
from blest.errors import ArgumentError, EngineError
from blest.runtime.base import check_idle_ms

__all__ = ["ServedCalls"]

#: Host spins between looks at whether the server is still running.
_SPINS_PER_LOOK = 2048
_ANSWER = CTL_WORDS + SERVE["answer"]
_ERROR = CTL["error"]
#: The request's u64 words in the whole host block: {SEQ, SEED} (one store), the tagged DST.
_HEAD_WIDE = (CTL_WORDS + SERVE["seq"]) // 2
_DST_WIDE = (CTL_WORDS + SERVE["dst"]) // 2  # (contract.py checks the pairing)
_NEXT_WIDE = (CTL_WORDS + SERVE["next"]) // 2
#: Addresses the DST word can carry below its tag (every user-space and unified address on
#: today's 64-bit hosts; a call whose levels go elsewhere runs unserved).
_ADDRESS_LIMIT = 1 << DST_TAG_SHIFT
#: grid_barrier_sum.cu.j2 (the resident queue) counts a launch's arrivals in 32 bits.
_ARRIVALS_LIMIT = 1 << 32
#: What :meth:`ServedCalls._serve_call` returns for a call the server cannot take.
UNSERVED = object()


def resident_counts_full(arrivals: int, n: int, blocks: int) -> bool:
    """Whether a serving resident kernel that has counted ``arrivals`` grid-barrier arrivals
    (both counters together) might overflow their 32-bit halves in its next call, which meets
    at most n + 4 times (every level, and the request, answer and clearing barriers)."""
    return arrivals + (n + 4) * blocks >= _ARRIVALS_LIMIT


class ServedCalls:
    """Mixed into :class:`blest.runtime.engine.Engine`, which provides the buffers, the
    launches and the checks used here."""

    _cp: Any
    _lock: Any
    _device_id: int
    _host_block: Any  # page-locked u32: the control block's copy, then the request block
    _host_ctl: Any
    _host_levels: Any
    _state: dict[str, Any]
    _spare: Any
    _own_ptr: int
    n: int
    spec: Any
    _claims: Any  # () -> the claims form its kernels are rendered with (Engine._claims)
    _serve_idle_us: int | None = None  # inside serving(): the server's idle limit
    _serve_stream: Any = None  # the running server's stream, or None
    _serve_seq: int = 0  # the number of the call posted last
    _serve_counted: bool = False  # resident queue: its barrier counts are 32-bit
    _serve_arrivals: int = 0  # resident queue: grid-barrier arrivals since the launch
    # Inside serving(), memoryviews for the call's path (a tenth of NumPy's cost per item):
    _serve_words: Any = None  # the host block as u64 words
    _serve_u32: Any = None  # the host block as u32 words
    _prefill: bool = False  # inside serving(): name the spare to the server (SERVE_NEXT)
    #: Graphs of fewer vertices deliver their -1s after the call instead: their pass is one
    #: round trip, and on an H200 the fill between calls cost twitch_FR and twitch_ENGB (7K
    #: vertices) 0.4-1.5 us a call, where it saved kron-22 (4.2M) 5 (benchmarks/NOTES.md,
    #: session 24).
    prefill_min_vertices: int = 1 << 17
    _server_refused: bool = False  # no block of the serving kernel fits on an SM
    _serve_grid: int = 0  # the serving kernel's blocks
    _ctl_copy: Any = None  # device u32[CTL_WORDS]: the last served call's control block
    _served_last: Any = None  # the _last of the last served call
    _reorders: bool
    _internal_ids: Any  # new_of_old, as a memoryview
    _kernels: dict[str, Any]
    arch: Any
    block_size: int
    sms: int
    eta: float
    beta: float
    alpha: float
    small_queue: int
    _closed: bool
    _void: str | None
    _last: tuple
    last_stats: Any
    grid_size: int

    @contextlib.contextmanager
    def serving(self, idle_ms: float = 20.0) -> Iterator[Any]:
        """Serve plain calls (one source, no depth limit, no parents) from a kernel that stays on
        the GPU while the block runs: each call costs a few bus round trips beyond its traversal
        instead of a launch and a wait. The kernel holds the GPU's SMs meanwhile, so other GPU work
        may wait for the block's end, or for ``idle_ms`` without a call, after which the kernel ends
        and the next call starts it again. The persistent variants and the one-block launch only
        (the others run their calls as usual inside the block); ``stats.traversal_ms`` is NaN for
        served calls. The first ``serving()`` of a variant compiles its serving kernel (a second or
        two, then cached on disk). Yields the engine."""
        check_idle_ms(idle_ms)
        with self._lock:
            self._check_open()
            if self._serve_idle_us is not None:
                raise ArgumentError("this engine is serving already")
            served = self._load_server()
            if served:
                self._serve_on(idle_ms)
        if not served:  # no serving kernel: calls run as usual
            yield self
            return
        try:
            yield self
        finally:
            with self._lock:
                self._serve_idle_us = None
                self._serve_words = self._serve_u32 = None
                self._serve_stop()

    @property
    def serving_source(self) -> str | None:
        """The generated CUDA C++ of this engine's serving kernel (:meth:`serving`), or None
        for variants without one (neither persistent nor one block)."""
        if not has_serving_kernel(self.spec):
            return None
        return render(self.spec, serving=True, claims=self._claims())

    def _load_server(self) -> bool:
        """Whether this engine serves calls (a persistent variant or the one-block launch),
        loading its serving kernel once. The server's grid is the engine's, or as much of it as
        the serving kernel can hold on the GPU at once (a cooperative launch must), should it
        need more registers than the timed kernel (it runs the same levels on fewer blocks
        then); the block launch's is its one block, with the timed kernel's shared memory."""
        if not has_serving_kernel(self.spec) or self._server_refused:
            return False
        if "serve" in self._kernels:
            return True
        from blest.codegen.compile import compile_source
        from blest.runtime.launch import load_module, max_active_blocks

        binary = compile_source(self.serving_source, arch=self.arch, target="cubin")
        name = kernel_names(self.spec, serving=True)["serve"]
        kernel = load_module(binary, self._device_id).get_function(name)
        if self.spec.launch == "block":
            grid = min(1, max_active_blocks(kernel, self.block_size, self.shared_bytes))
        else:
            grid = min(self.grid_size, max_active_blocks(kernel, self.block_size) * self.sms)
        if grid < 1:
            self._server_refused = True  # (its calls run as usual)
            return False
        self._serve_grid = grid
        self._kernels["serve"] = kernel  # (the kernel's function holds its module)
        with self._cp.cuda.Device(self._device_id):  # each call's control block, for stats
            self._ctl_copy = self._cp.zeros(CTL_WORDS, dtype=self._cp.uint32)
        return True

    def _read_stats(self) -> Any:
        if self._last is self._served_last:  # the call's control block is on the device
            with self._lock, self._cp.cuda.Device(self._device_id):
                self._ctl_copy.get(out=self._host_ctl)
        return super()._read_stats()  # type: ignore[misc]

    def _launch_shape(self, role: str) -> tuple[int, int]:
        if role == "serve":
            return self._serve_grid, self.shared_bytes if self.spec.launch == "block" else 0
        return super()._launch_shape(role)  # type: ignore[misc]

    def _serve_on(self, idle_ms: float) -> None:
        """Set up a ``serving()`` block (under the lock; the server starts at the first call)."""
        self._serve_idle_us = max(1, int(idle_ms * 1000))
        self._serve_counted = self.spec.queue == "resident"
        self._serve_words = memoryview(self._host_block).cast("B").cast("Q")
        self._serve_words[_NEXT_WIDE] = 0
        # Graphs in their own ids: a served call's traversal writes the levels straight
        # into an out="device" array, which the grid's server can then fill with -1s ahead of
        # it (the block's server writes the -1s itself, as its timed kernel does).
        self._prefill = (
            self.spec.launch == "persistent"
            and not self._reorders
            and self.n >= self.prefill_min_vertices
        )
        self._serve_u32 = memoryview(self._host_block)

    def _serve_call(self, src: int, out: Any) -> Any:
        """One plain call through the server (under the engine's lock; ``src`` is a valid id),
        or :data:`UNSERVED` when the levels' destination cannot be posted."""
        if self._closed or self._void:
            self._check_open()
        cp = self._cp
        fresh, host = None, 0
        dst = self._own_ptr
        device = out.__class__ is str and out == "device"
        if device:
            # A fresh array: the caller cannot have queued work on it. The spare was allocated
            # during the previous call, when none of the caller's work was queued either.
            fresh = self._spare
            if fresh is None:
                with cp.cuda.Device(self._device_id):
                    fresh = cp.empty(self.n, dtype=cp.int32)
            dst = fresh.data.ptr
        else:
            self._check_out(out)
            if isinstance(out, cp.ndarray):
                if out.flags.c_contiguous and out.device.id == self._device_id:
                    dst, fresh = out.data.ptr, out
            elif out is None or isinstance(out, np.ndarray):
                dst, host = (self._host_levels if self._staged(out) else out).ctypes.data, 1
        if dst >= _ADDRESS_LIMIT:
            return UNSERVED
        if device:
            self._spare = None
        else:  # the caller's earlier work first, as a launch would order it
            stream = cp.cuda.get_current_stream()
            if not stream.done:
                stream.synchronize()
        counted = self._serve_counted
        if counted and self._serve_stream is not None:
            if resident_counts_full(self._serve_arrivals, self.n, self._serve_grid):
                self._serve_stop()  # the next launch starts from zeroed counts
        seq = self._serve_seq = (self._serve_seq + 1) & 0xFFFFFFFF or 1
        words = self._serve_words
        tag = (seq & DST_TAG_MASK) << DST_TAG_SHIFT
        words[_DST_WIDE] = dst | tag | host << DST_HOST_BIT
        words[_HEAD_WIDE] = seq | self._internal_ids[src] << 32  # last: one store, read first
        if self._serve_stream is None:
            self._serve_start()
        try:  # nothing raised here may leave the GPU writing to an array the caller never got
            if device:  # the next out="device" call's array, allocated while the GPU works
                self._spare = self._new_spare()
            if self._prefill:  # the server fills it with -1s after this call (serve.cu.j2)
                spare = self._spare
                words[_NEXT_WIDE] = 0 if spare is None else spare.data.ptr | tag
        finally:
            self._serve_wait(seq)
        if self._serve_u32[_ERROR]:  # (a timed-out barrier's ERROR, which the kernel writes here)
            self._check_ctl(src, 1, timed=False)  # voids the engine and raises
        # As _check_ctl keeps them; stats read the call's control block from the device.
        self._last = self._served_last = (src, None, None, 1)
        self.last_stats = None
        if counted:  # the answer's high word: the barriers met since the launch
            self._serve_arrivals = self._serve_u32[_ANSWER + 1] * self._serve_grid
        if fresh is not None:
            return fresh
        if out is None:
            return self._host_levels.copy()
        if isinstance(out, np.ndarray):
            if self._staged(out):
                np.copyto(out, self._host_levels)
            return out
        return self._deliver(out)  # "view", or a CuPy out the kernel cannot write directly

    def _new_spare(self) -> Any:
        """The next out="device" call's array, or None when device memory is short: that call
        then allocates its own, and raises there, before it posts anything."""
        cp = self._cp
        try:
            with cp.cuda.Device(self._device_id):
                return cp.empty(self.n, dtype=cp.int32)
        except cp.cuda.memory.OutOfMemoryError:
            return None

    def _serve_start(self) -> None:
        """Launch the server on a stream of its own, with zeroed barrier counts."""
        cp = self._cp
        with cp.cuda.Device(self._device_id):
            cp.cuda.get_current_stream().synchronize()  # nothing of ours still running
            stream = cp.cuda.Stream(non_blocking=True)
            self._host_block[CTL_WORDS + SERVE["idle_us"]] = self._serve_idle_us or 1
            self._host_ctl[_ERROR] = 0  # the kernel writes this word of its copy only if set
            self._serve_arrivals = 0
            block = self.spec.launch == "block"
            with stream:
                self._state["ctl"].fill(0)
                ends = (np.uint64(self._host_block.ctypes.data), np.uint64(self._ctl_copy.data.ptr))
                rules = (np.float64(self.eta), np.float64(self.beta), np.float64(self.alpha))
                grid_args = (np.int32(-1), *rules, np.uint32(self.small_queue))
                extra = ends if block else (*grid_args, *ends)
                self._launch("serve", extra, cooperative=not block)
            self._serve_stream = stream

    def _serve_wait(self, seq: int) -> None:
        """Spin until the server answers call ``seq``; start it again if it ended meanwhile
        (idle). A Ctrl-C waits for the answer first, so that the engine stays consistent."""
        interrupt = None
        while True:
            try:
                self._serve_spin(seq)
                break
            except KeyboardInterrupt as exc:
                interrupt = exc
        if interrupt is not None:
            raise interrupt

    def _serve_spin(self, seq: int) -> None:
        block = self._serve_u32
        while block[_ANSWER] != seq:
            for _ in range(_SPINS_PER_LOOK):
                if block[_ANSWER] == seq:
                    return
            if not self._serve_stream.done:  # raises if the kernel failed
                continue
            if block[_ANSWER] == seq:
                return
            self._serve_stream = None
            self._state["ctl"].get(out=self._host_ctl)
            if self._host_ctl[_ERROR]:
                self._check_ctl(-1, 1, timed=False)  # voids the engine and raises
            self._serve_start()  # it ended, idle, before this call was posted

    def _serve_stop(self) -> None:
        """End the server, if one runs, and wait for it (every posted call is answered)."""
        stream = self._serve_stream
        if stream is None:
            return
        # SEED = SERVE_QUIT with SEQ unchanged: no call pending, end.
        self._host_block.view(np.uint64)[_HEAD_WIDE] = self._serve_seq | SERVE_QUIT << 32
        self._serve_stream = None
        stream.synchronize()
        self._state["ctl"].get(out=self._host_ctl)
        if self._host_ctl[_ERROR]:
            self._void = "a grid barrier of the serving kernel timed out; the engine is void"
            raise EngineError(self._void)

    # Everything else an engine runs shares the server's buffers or its SMs: it ends the server.
    def _serve_end(self) -> None:
        with self._lock:
            self._serve_stop()

    def _bfs_many(self, users: np.ndarray, out: np.ndarray, progress: Any) -> Any:
        self._serve_end()
        return super()._bfs_many(users, out, progress)  # type: ignore[misc]

    def _source_sums(self, users: np.ndarray, progress: Any) -> Any:
        self._serve_end()
        return super()._source_sums(users, progress)  # type: ignore[misc]

    def debug_state(self) -> dict[str, Any]:
        self._serve_end()
        return super().debug_state()  # type: ignore[misc]

    def level_times_ms(self) -> Any:
        self._serve_end()
        return super().level_times_ms()  # type: ignore[misc]
