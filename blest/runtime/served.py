"""Served calls: a traversal kernel that stays on the GPU between plain calls (``Engine.serving``).

A plain call replayed from its CUDA graph still costs a launch, and the wait for the kernel's
end, each several microseconds of host and GPU time: on a graph of a few thousand vertices
that is a third of the call. Inside ``with engine.serving():`` the persistent variants instead
launch their serving kernel once (``render(spec, serving=True)``, ``templates/serve.cu.j2``; a
module of its own, compiled at the first ``serving()`` and cached on disk like the others): it
waits for calls that the host posts in page-locked memory (where the levels go, tagged with the
call's number, then the number and the seed in one store), runs each as a captured call would
(init, levels, the pass to the user's ids), keeps a copy of the control block in device memory
(read only for ``stats``), and the last block to finish publishes the call's number, which the
host spins on. A call's GPU part is then one bus round trip to start and two grid barriers
beyond its traversal. On a graph in its own ids the traversal writes the levels straight into
an ``out="device"`` array, and the host names the next call's array (the spare, allocated while
the GPU works) during this call, so that the server can fill it with -1s between the calls:
that call then has nothing left to deliver. The one-block launch (``launch="block"``, one block,
not a cluster) has a server of its own (``templates/serve_block.cu.j2``) that speaks the same
protocol: its block waits for a call, runs it as its timed kernel does and publishes the
answer; it has no barrier, no deliver pass and no fill ahead.

While it waits, the kernel holds the GPU's SMs: other kernels (the caller's, or another
engine's) may wait for it to end, which it does when the ``with`` block ends, after ``idle_ms``
without a call (the next call launches it again), at a call it does not serve (a depth limit,
parents, several seeds: it ends first, and that call runs as usual) and at ``close``. Served
calls see the caller's earlier work on the current stream done, as launched calls would.
"""

from __future__ import annotations

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
from blest.codegen.render import has_serving_kernel, program
from blest.errors import EngineError
from blest.runtime.arguments import CallRules
from blest.runtime.device_program import DeviceProgram, LaunchShape
from blest.runtime.traversal import Traversal

__all__ = ["ServedCalls", "UNSERVED", "resident_counts_full"]

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
#: What :meth:`ServedCalls.run` returns for a call the server cannot take.
UNSERVED = object()


def resident_counts_full(arrivals: int, n: int, blocks: int) -> bool:
    """Whether a serving resident kernel that has counted ``arrivals`` grid-barrier arrivals
    (both counters together) might overflow their 32-bit halves in its next call, which meets
    at most n + 4 times (every level, and the request, answer and clearing barriers)."""
    return arrivals + (n + 4) * blocks >= _ARRIVALS_LIMIT


class ServedCalls:
    """The served call path of a :class:`Traversal` (see the module docstring). The engine
    holds its lock around every method."""

    #: Graphs of fewer vertices deliver their -1s after the call instead: their pass is one
    #: round trip, and on an H200 the fill between calls cost 7K-vertex graphs 0.4-1.5 us a
    #: call, where it saved a 4.2M-vertex graph 5 (benchmarks/NOTES.md).
    prefill_min_vertices: int = 1 << 17

    def __init__(self, traversal: Traversal) -> None:
        self.tr = traversal
        self.idle_us: int | None = None  # inside serving(): the server's idle limit
        self.stream: Any = None  # the running server's stream, or None
        self.rules: CallRules | None = None  # the running server's rules
        self.seq = 0  # the number of the call posted last
        self.counted = False  # resident queue: its barrier counts are 32-bit
        self.arrivals = 0  # resident queue: grid-barrier arrivals since the launch
        # Inside serving(), memoryviews for the call's path (a tenth of NumPy's cost per item):
        self.words: Any = None  # the host block as u64 words
        self.u32: Any = None  # the host block as u32 words
        self.prefill = False  # inside serving(): name the spare to the server (SERVE_NEXT)
        self.refused = False  # no block of the serving kernel fits on an SM
        self.program: DeviceProgram | None = None  # the serving module, loaded once
        self.ctl_copy: Any = None  # device u32[CTL_WORDS]: the last served call's control block
        self.spare: Any = None  # the next out="device" call's array, or None

    @property
    def source(self) -> str | None:
        """The generated CUDA C++ of the serving kernel, or None for variants without one."""
        tr = self.tr
        if not has_serving_kernel(tr.spec):
            return None
        return program(tr.spec, serving=True, claims=tr.claims).source

    def load(self) -> bool:
        """Whether this engine serves calls (a persistent variant or the one-block launch),
        loading its serving kernel once. The server's grid is the engine's, or as much of it as
        the serving kernel can hold on the GPU at once (a cooperative launch must), should it
        need more registers than the timed kernel (it runs the same levels on fewer blocks
        then); the block launch's is its one block, with the timed kernel's shared memory."""
        tr = self.tr
        if not has_serving_kernel(tr.spec) or self.refused:
            return False
        if self.program is not None:
            return True
        kernels = program(tr.spec, serving=True, claims=tr.claims)
        prog = DeviceProgram(kernels, tr.device_id, tr.arch, tr.values)
        block = tr.spec.launch == "block"
        if block:
            grid = min(1, prog.occupancy("serve", tr.block_size, tr.shared_bytes))
        else:
            grid = min(tr.grid_size, prog.occupancy("serve", tr.block_size) * tr.sms)
        if grid < 1:
            self.refused = True  # (its calls run as usual)
            prog.close()
            return False
        smem = tr.shared_bytes if block else 0
        prog.shapes["serve"] = LaunchShape(grid, tr.block_size, smem, not block)
        self.program = prog
        with tr.cp.cuda.Device(tr.device_id):  # each call's control block, for stats
            self.ctl_copy = tr.cp.zeros(CTL_WORDS, dtype=tr.cp.uint32)
        return True

    def begin(self, idle_ms: float) -> None:
        """Set up a ``serving()`` block (the server starts at the first call)."""
        tr = self.tr
        self.idle_us = max(1, int(idle_ms * 1000))
        self.counted = tr.spec.queue == "resident"
        self.words = memoryview(tr.host_block).cast("B").cast("Q")
        self.words[_NEXT_WIDE] = 0
        # Graphs in their own ids: a served call's traversal writes the levels straight into
        # an out="device" array, which the grid's server can then fill with -1s ahead of it
        # (the block's server writes the -1s itself, as its timed kernel does).
        self.prefill = (
            tr.spec.launch == "persistent" and not tr.reorders and tr.n >= self.prefill_min_vertices
        )
        self.u32 = memoryview(tr.host_block)

    def end(self) -> None:
        """Leave the ``serving()`` block: the server ends."""
        self.idle_us = None
        self.words = self.u32 = None
        self.stop()

    def run(self, src: int, out: Any, rules: CallRules) -> Any:
        """One plain call through the server (``src`` a valid id), or :data:`UNSERVED` when the
        levels' destination cannot be posted."""
        tr = self.tr
        cp = tr.cp
        fresh, host = None, 0
        dst = tr.own_ptr
        device = out.__class__ is str and out == "device"
        if device:
            # A fresh array: the caller cannot have queued work on it. The spare was allocated
            # during the previous call, when none of the caller's work was queued either.
            fresh = self.spare
            if fresh is None:
                with cp.cuda.Device(tr.device_id):
                    fresh = cp.empty(tr.n, dtype=cp.int32)
            dst = fresh.data.ptr
        else:
            tr.check_out(out)
            if isinstance(out, cp.ndarray):
                if tr.direct(out):
                    dst, fresh = out.data.ptr, out
            elif out is None:  # staged
                dst, host = tr.host_levels.ctypes.data, 1
            elif isinstance(out, np.ndarray):
                dst, host = (tr.host_levels if tr.staged(out) else out).ctypes.data, 1
        if dst >= _ADDRESS_LIMIT:
            return UNSERVED
        if device:
            self.spare = None
        else:  # the caller's earlier work first, as a launch would order it
            stream = cp.cuda.get_current_stream()
            if not stream.done:
                stream.synchronize()
        if self.stream is not None and rules != self.rules:
            self.stop()  # the server runs under the rules it was launched with
        counted = self.counted
        if counted and self.stream is not None:
            assert self.program is not None  # a server runs: its module is loaded
            if resident_counts_full(self.arrivals, tr.n, self.program.shapes["serve"].grid):
                self.stop()  # the next launch starts from zeroed counts
        seq = self.seq = (self.seq + 1) & 0xFFFFFFFF or 1
        words = self.words
        tag = (seq & DST_TAG_MASK) << DST_TAG_SHIFT
        words[_DST_WIDE] = dst | tag | host << DST_HOST_BIT
        words[_HEAD_WIDE] = seq | tr.internal_ids[src] << 32  # last: one store, read first
        if self.stream is None:
            self.start(rules)
        try:  # nothing raised here may leave the GPU writing to an array the caller never got
            if device:  # the next out="device" call's array, allocated while the GPU works
                self.spare = self.new_spare()
            if self.prefill:  # the server fills it with -1s after this call (serve.cu.j2)
                spare = self.spare
                words[_NEXT_WIDE] = 0 if spare is None else spare.data.ptr | tag
        finally:
            self.wait(seq)
        # (a timed-out barrier's ERROR, which the kernel writes in the host block, raises here)
        tr.check_ctl(src, 1, False, self.ctl_copy)
        if counted:  # the answer's high word: the barriers met since the launch
            assert self.program is not None  # the call was served: its module is loaded
            self.arrivals = self.u32[_ANSWER + 1] * self.program.shapes["serve"].grid
        if fresh is not None:
            return fresh
        if out is None:
            return tr.host_levels.copy()
        if isinstance(out, np.ndarray):
            if tr.staged(out):
                np.copyto(out, tr.host_levels)
            return out
        return tr.deliver(out)  # "view", or a CuPy out the kernel cannot write directly

    def new_spare(self) -> Any:
        """The next out="device" call's array, or None when device memory is short: that call
        then allocates its own, and raises there, before it posts anything."""
        tr = self.tr
        cp = tr.cp
        try:
            with cp.cuda.Device(tr.device_id):
                return cp.empty(tr.n, dtype=cp.int32)
        except cp.cuda.memory.OutOfMemoryError:
            return None

    def start(self, rules: CallRules) -> None:
        """Launch the server on a stream of its own, with zeroed barrier counts."""
        tr = self.tr
        cp = tr.cp
        assert self.program is not None
        with cp.cuda.Device(tr.device_id):
            cp.cuda.get_current_stream().synchronize()  # nothing of ours still running
            stream = cp.cuda.Stream(non_blocking=True)
            tr.host_block[CTL_WORDS + SERVE["idle_us"]] = self.idle_us or 1
            tr.host_ctl[_ERROR] = 0  # the kernel writes this word of its copy only if set
            self.arrivals = 0
            with stream:
                tr.values["ctl"].fill(0)
                ends = (np.uint64(tr.host_block.ctypes.data), np.uint64(self.ctl_copy.data.ptr))
                if tr.spec.launch == "block":
                    extra: tuple = ends
                else:
                    extra = (np.int32(-1), np.float64(rules.eta), np.float64(rules.beta),
                             np.float64(rules.alpha), np.uint32(rules.small_queue),
                             *ends)  # fmt: skip
                self.program.launch("serve", extra)
            self.stream, self.rules = stream, rules

    def wait(self, seq: int) -> None:
        """Spin until the server answers call ``seq``; start it again if it ended meanwhile
        (idle). A Ctrl-C waits for the answer first, so that the engine stays consistent."""
        interrupt = None
        while True:
            try:
                self.spin(seq)
                break
            except KeyboardInterrupt as exc:
                interrupt = exc
        if interrupt is not None:
            raise interrupt

    def spin(self, seq: int) -> None:
        block = self.u32
        while block[_ANSWER] != seq:
            for _ in range(_SPINS_PER_LOOK):
                if block[_ANSWER] == seq:
                    return
            if not self.stream.done:  # raises if the kernel failed
                continue
            if block[_ANSWER] == seq:
                return
            self.stream = None
            tr = self.tr
            tr.program.read_ctl()
            if tr.host_ctl[_ERROR]:
                tr.check_ctl(-1, 1, False)  # voids the engine and raises
            assert self.rules is not None  # set when the server that ended was launched
            self.start(self.rules)  # it ended, idle, before this call was posted

    def stop(self) -> None:
        """End the server, if one runs, and wait for it (every posted call is answered)."""
        stream = self.stream
        if stream is None:
            return
        tr = self.tr
        # SEED = SERVE_QUIT with SEQ unchanged: no call pending, end.
        tr.host_block.view(np.uint64)[_HEAD_WIDE] = self.seq | SERVE_QUIT << 32
        self.stream = None
        stream.synchronize()
        tr.program.read_ctl()
        if tr.host_ctl[_ERROR]:
            tr.void = "a grid barrier of the serving kernel timed out; the engine is void"
            raise EngineError(tr.void)

    def close(self) -> None:
        try:
            self.stop()  # before its buffers go
        except EngineError:
            pass
        if self.program is not None:
            self.program.close()
        self.program = self.ctl_copy = self.spare = None
