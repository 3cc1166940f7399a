"""How a call's results leave the GPU: plain calls replayed from a captured CUDA graph (the
engine's side of :mod:`blest.runtime.call_graph`), the deliver pass every call ends with, and
the delivery of the levels as ``out`` asks. Mixed into :class:`blest.runtime.engine.Engine`.

A plain call is one source in range, no depth limit, no parents, on a persistent or block
variant. Its work is captured at first use: a 24-byte copy of the call's slot from pinned host
memory (the seed, the destination of the levels: a fresh ``out="device"`` array, a CuPy
``out``, or the engine's own buffer; and a zero for the grid barrier's count), init, the timed
traversal, the deliver pass (the levels to that destination, the control block straight into
pinned host memory, which a kernel writes in place under unified addressing), and for
``out=None`` or a pageable NumPy ``out`` a copy of the levels to the engine's pinned host
buffer. So a call is one graph launch and one wait, and no result passes through a copy of its
own. With ``timing=False`` the persistent variants do init, traversal and deliver pass in one
kernel: the graph is the slot copy and that launch. The graph holds the addresses of the
engine's buffers, so it lives and dies with them.

The slot is copied rather than read in place by the kernels: each block's read of pinned host
memory costs about a microsecond, one after the other (``benchmarks/NOTES.md``, session 12).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from blest.runtime.call_graph import CapturedCall, copy_async, record_event
from blest.runtime.device import is_pinned

__all__ = ["CallCapture", "plain_id"]


def plain_id(src: Any, n: int) -> bool:
    """Whether ``src`` is one vertex id in range, as a Python or NumPy integer (the calls that
    replay a captured graph; anything else takes the general checks). A plain ``int`` is
    tested first, by its class alone: served calls feel a tenth of a microsecond."""
    if src.__class__ is int:  # (not bool, whose class is bool)
        return 0 <= src < n
    return (
        isinstance(src, (int, np.integer))
        and not isinstance(src, (bool, np.bool_))
        and 0 <= src < n
    )


class CallCapture:
    """Mixed into :class:`blest.runtime.engine.Engine`, which provides the buffers, the
    launches and the checks used here."""

    _cp: Any
    _capture: bool
    _call_graphs: dict[tuple[bool, float, float, float, int, bool, bool], CapturedCall]
    eta: float
    beta: float
    alpha: float
    timing: bool
    #: Whether an untimed call of a persistent variant is one kernel (False: three launches,
    #: as timed calls; benchmarks/probe_fused.py compares the two).
    _fuse: bool = True
    small_queue: int
    _call_slot: Any
    _spare: Any  # the next out="device" call's array, or None
    _slot: Any
    _own_ptr: int  # where the levels of reordered graphs go by default (else 0)
    _user_levels: Any
    _device_id: int
    _events: tuple[Any, Any]
    _state: dict[str, Any]
    _host_ctl: Any
    _host_levels: Any
    _block_seeds: tuple
    n: int
    spec: Any

    def _call_graph(self, host: bool) -> CapturedCall | None:
        """The captured plain call (with the levels copied to pinned host memory, or not) at
        the engine's current ``eta``, ``beta``, ``alpha`` and ``small_queue``, which a graph
        holds as kernel arguments (the tuner changes them between runs), with timing events or
        not; None where this engine launches kernel by kernel."""
        if not self._capture:
            return None
        # (NumPy and Python numbers of one value hash and compare alike.)
        key = (host, self.eta, self.beta, self.alpha, self.small_queue, self.timing, self._fuse)
        graph = self._call_graphs.get(key)
        if graph is None:
            self._call_graphs = {k: g for k, g in self._call_graphs.items() if k[1:] == key[1:]}
            try:
                graph = CapturedCall(self._cp, lambda stream: self._enqueue_call(stream, host))
            except Exception as exc:  # an old driver, say: the launch path still works
                self._capture = False
                warnings.warn(
                    f"could not capture a BFS call as a CUDA graph ({exc}); launching kernel "
                    "by kernel",
                    RuntimeWarning,
                    stacklevel=3,
                )
                return None
            self._call_graphs[key] = graph
        return graph

    @property
    def _reorders(self) -> bool:
        """Whether the deliver pass maps internal ids to the user's (the block launch writes
        the user's ids itself): it is then timed with the traversal, as the mapping belongs
        to it."""
        return self._user_levels is not None and self.spec.launch != "block"

    def _enqueue_deliver(self, dst_slot: int, ctl_out: int) -> None:
        """The deliver pass: the levels to ``*dst_slot`` (a device word holding an address) in
        the user's ids, the control block to ``ctl_out`` (an address, or 0 for none)."""
        self._launch("deliver", (np.uint64(dst_slot), np.uint64(ctl_out)))

    def _enqueue_call(self, stream: Any, host: bool) -> None:
        """A plain call's work, as captured: the slot to the device, init from its seed, the
        timed traversal, the deliver pass (levels to the slot's destination, the control block
        to the pinned ``_host_ctl``), and with ``host`` the levels to the pinned
        ``_host_levels``. Untimed calls of the persistent variants run init, traversal and
        deliver pass in the traversal's one cooperative launch (``fused``)."""
        cp, slot = self._cp, self._slot
        copy_async(cp, slot.data.ptr, self._call_slot.ctypes.data, slot.nbytes, stream)
        ctl_out = self._host_ctl.ctypes.data
        if self.spec.launch == "persistent" and not self.timing and self._fuse:  # one kernel
            self._enqueue_traversal(-1, fused_ctl_out=ctl_out)
        else:
            self._enqueue_parts(stream, ctl_out)
        if host:
            levels = self._levels()
            copy_async(cp, self._host_levels.ctypes.data, levels.data.ptr, levels.nbytes, stream)

    def _enqueue_parts(self, stream: Any, ctl_out: int) -> None:
        """Init, the traversal between the timing events, and the deliver pass, each a launch
        of its own (the timed calls, and the block launch's)."""
        slot = self._slot
        seeds = (slot, np.int32(1), np.int32(0))  # the seed: slot's first int32 (little-endian)
        if self.spec.launch == "block":
            self._block_seeds = seeds
        else:
            self._launch("init", seeds)
        start, stop = self._events
        if self.timing:
            record_event(start, stream)
        self._enqueue_traversal(-1)
        dst_slot = slot.data.ptr + slot.itemsize
        if self._reorders:
            self._enqueue_deliver(dst_slot, ctl_out)
        if self.timing:
            record_event(stop, stream)
        if not self._reorders:
            self._enqueue_deliver(dst_slot, ctl_out)

    def _direct(self, out: Any) -> bool:
        """Whether the deliver pass can write the levels straight into CuPy array ``out``."""
        return out.flags.c_contiguous and out.device.id == self._device_id

    def _replay(self, graph: CapturedCall, staged: bool, user: int, out: Any) -> Any:
        """One plain call through ``graph`` (``staged``: the one that copies the levels to the
        engine's pinned buffer). What can wait runs while the GPU works: a pinned NumPy
        ``out`` takes the levels by a copy enqueued before the wait, and an ``out="device"``
        call allocates the next such call's array (allocating costs the host about as much as
        the deliver pass costs the GPU)."""
        cp = self._cp
        fresh, refill = None, False
        dst = self._own_ptr  # the engine's own buffer (0: levels stay where the kernel wrote)
        if isinstance(out, str) and out == "device":
            fresh, refill, self._spare = self._spare, True, None
            if fresh is None:
                fresh = cp.empty(self.n, dtype=cp.int32)
            dst = fresh.data.ptr
        elif isinstance(out, cp.ndarray) and self._direct(out):
            dst, fresh = out.data.ptr, out
        slot = self._slot_words  # the pinned call slot as Python-int words: {seed, dst, 0}
        slot[0] = self._internal_ids[user]
        slot[1] = dst
        graph()
        stream = cp.cuda.get_current_stream()
        if refill:  # the next out="device" call's array, allocated while the GPU works
            self._spare = cp.empty(self.n, dtype=cp.int32)
        elif isinstance(out, np.ndarray) and not staged:  # a pinned out
            levels = self._levels()
            copy_async(cp, out.ctypes.data, levels.data.ptr, levels.nbytes, stream)
        stream.synchronize()
        self._check_ctl(user, 1)
        if fresh is not None:
            return fresh
        if out is None:
            return self._host_levels.copy()
        if isinstance(out, np.ndarray):
            if staged:
                np.copyto(out, self._host_levels)
            return out
        return self._deliver(out)

    def _staged(self, out: Any) -> bool:
        """Whether the levels reach ``out`` through the engine's pinned buffer: for None and
        pageable NumPy arrays (a pinned one takes them directly, the device ones on the GPU)."""
        return out is None or (isinstance(out, np.ndarray) and not is_pinned(self._cp, out))

    def _levels(self) -> Any:
        """The device array that holds the last call's levels in the user's ids."""
        return self._state["levels"] if self._user_levels is None else self._user_levels

    def _deliver(self, out: Any) -> Any:
        """The last call's levels as ``out`` asks (checked by :meth:`_check_out`)."""
        levels = self._levels()
        if isinstance(out, str):
            return levels.copy() if out == "device" else levels
        if out is None:
            levels.get(out=self._host_levels)
            return self._host_levels.copy()
        if isinstance(out, self._cp.ndarray):
            out[...] = levels
            return out
        if not self._staged(out):  # pinned: straight into it
            levels.get(out=out)
            return out
        levels.get(out=self._host_levels)
        np.copyto(out, self._host_levels)
        return out
