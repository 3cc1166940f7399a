"""Plain calls replayed from a captured CUDA graph: the captured and the fused call paths.

A plain call is one source in range, no depth limit, no parents, on a persistent or block
variant. Its work is captured at first use (:class:`~blest.runtime.call_graph.CapturedCall`): a
24-byte copy of the call's slot from pinned host memory (the seed, the destination of the
levels: a fresh ``out="device"`` array, a CuPy ``out``, or the engine's own buffer; and a zero
for the grid barrier's count), init, the timed traversal, the deliver pass (the levels to that
destination, the control block straight into pinned host memory, which a kernel writes in place
under unified addressing), and for ``out=None`` or a pageable NumPy ``out`` a copy of the levels
to the engine's pinned host buffer. So a call is one graph launch and one wait, and no result
passes through a copy of its own.

The **fused** path (``fuse=True``; untimed calls of the persistent variants) captures init,
traversal and deliver pass as the traversal's one cooperative launch: the graph is the slot
copy and that launch. A captured graph holds the engine's buffers' addresses and the call's
rules as kernel arguments, so it is kept per rules and lives and dies with the engine.

The slot is copied rather than read in place by the kernels: each block's read of pinned host
memory costs about a microsecond, one after the other (benchmarks/NOTES.md).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from blest.runtime.arguments import CallRules
from blest.runtime.call_graph import CapturedCall, copy_async, record_event
from blest.runtime.traversal import Traversal

__all__ = ["CapturedCalls", "plain_id"]


def plain_id(src: Any, n: int) -> bool:
    """Whether ``src`` is one vertex id in range, as a Python or NumPy integer (the calls that
    replay a captured graph; anything else takes the general checks). A plain ``int`` is
    tested first, by its class alone: served calls feel a tenth of a microsecond."""
    if src.__class__ is int:  # (not bool, whose class is bool)
        return 0 <= src < n
    return (
        isinstance(src, (int, np.integer))
        and not isinstance(src, (bool, np.bool_))
        and bool(0 <= src < n)
    )


class CapturedCalls:
    """The captured call path of a :class:`Traversal` (``fuse``: the fused one)."""

    def __init__(self, traversal: Traversal, fuse: bool) -> None:
        self.tr = traversal
        self.fuse = fuse
        #: Captured graphs by (levels to the host, rules); the graphs of other rules are
        #: dropped when the rules change (the tuner changes them between runs).
        self.graphs: dict[tuple[bool, CallRules], CapturedCall] = {}
        self.disabled = False  # capture failed once (an old driver, say): launch instead
        self.spare: Any = None  # the next out="device" call's array, or None

    def run(self, src: int, out: Any, rules: CallRules) -> Any:
        """One plain call (``src`` a valid user id, ``out`` checked), or None when this path
        cannot capture (the caller then launches kernel by kernel)."""
        tr = self.tr
        staged = tr.staged(out)
        graph = self._graph(staged, rules)
        if graph is None:
            return None
        return self._replay(graph, staged, src, out, rules.timing)

    def _graph(self, host: bool, rules: CallRules) -> CapturedCall | None:
        if self.disabled:
            return None
        key = (host, rules)
        graph = self.graphs.get(key)
        if graph is None:
            self.graphs = {k: g for k, g in self.graphs.items() if k[1] == rules}
            try:
                graph = CapturedCall(self.tr.cp, lambda stream: self._enqueue(stream, host, rules))
            except Exception as exc:  # an old driver, say: the launch path still works
                self.disabled = True
                warnings.warn(
                    f"could not capture a BFS call as a CUDA graph ({exc}); launching kernel "
                    "by kernel",
                    RuntimeWarning,
                    stacklevel=4,
                )
                return None
            self.graphs[key] = graph
        return graph

    def _enqueue(self, stream: Any, host: bool, rules: CallRules) -> None:
        """A plain call's work, as captured: the slot to the device, init from its seed, the
        timed traversal, the deliver pass (levels to the slot's destination, the control block
        to the pinned host mirror), and with ``host`` the levels to the pinned host buffer."""
        tr = self.tr
        cp, slot = tr.cp, tr.slot
        copy_async(cp, slot.data.ptr, tr.call_slot.ctypes.data, slot.nbytes, stream)
        ctl_out = tr.host_ctl.ctypes.data
        if self.fuse:  # one kernel: init, traversal and deliver pass
            tr.enqueue_traversal(-1, rules, fused_ctl_out=ctl_out)
        else:
            self._enqueue_parts(stream, ctl_out, rules)
        if host:
            levels = tr.levels()
            copy_async(cp, tr.host_levels.ctypes.data, levels.data.ptr, levels.nbytes, stream)

    def _enqueue_parts(self, stream: Any, ctl_out: int, rules: CallRules) -> None:
        """Init, the traversal between the timing events, and the deliver pass, each a launch
        of its own."""
        tr = self.tr
        slot = tr.slot
        tr.init_from((slot, np.int32(1), np.int32(0)))  # the seed: slot's first int32
        start, stop = tr.events
        if rules.timing:
            record_event(start, stream)
        tr.enqueue_traversal(-1, rules)
        dst_slot = slot.data.ptr + slot.itemsize
        if tr.reorders:
            tr.enqueue_deliver(dst_slot, ctl_out)
        if rules.timing:
            record_event(stop, stream)
        if not tr.reorders:
            tr.enqueue_deliver(dst_slot, ctl_out)

    def _replay(self, graph: CapturedCall, staged: bool, user: int, out: Any, timed: bool) -> Any:
        """One plain call through ``graph`` (``staged``: the one that copies the levels to the
        engine's pinned buffer). What can wait runs while the GPU works: a pinned NumPy ``out``
        takes the levels by a copy enqueued before the wait, and an ``out="device"`` call
        allocates the next such call's array (allocating costs the host about as much as the
        deliver pass costs the GPU)."""
        tr = self.tr
        cp = tr.cp
        fresh, refill = None, False
        dst = tr.own_ptr  # the engine's own buffer (0: levels stay where the kernel wrote)
        if isinstance(out, str) and out == "device":
            fresh, refill, self.spare = self.spare, True, None
            if fresh is None:
                fresh = cp.empty(tr.n, dtype=cp.int32)
            dst = fresh.data.ptr
        elif isinstance(out, cp.ndarray) and tr.direct(out):
            dst, fresh = out.data.ptr, out
        slot = tr.slot_words  # the pinned call slot as Python-int words: {seed, dst, 0}
        slot[0] = tr.internal_ids[user]
        slot[1] = dst
        graph()
        stream = cp.cuda.get_current_stream()
        if refill:  # the next out="device" call's array, allocated while the GPU works
            self.spare = cp.empty(tr.n, dtype=cp.int32)
        elif isinstance(out, np.ndarray) and not staged:  # a pinned out
            levels = tr.levels()
            copy_async(cp, out.ctypes.data, levels.data.ptr, levels.nbytes, stream)
        stream.synchronize()
        tr.check_ctl(user, 1, timed)
        if fresh is not None:
            return fresh
        if out is None:
            return tr.host_levels.copy()
        if isinstance(out, np.ndarray):
            if staged:
                np.copyto(out, tr.host_levels)
            return out
        return tr.deliver(out)

    def close(self) -> None:
        self.graphs = {}
        self.spare = None
