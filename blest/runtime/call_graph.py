"""A BFS call captured once as a CUDA graph and replayed: one ``cudaGraphLaunch`` per call.

Launched one by one, a call is several driver calls (the init kernel, two timing events, the
traversal, the user-id pass, the control-block copy), each a few microseconds of host work that
the GPU waits for in turn (``benchmarks/NOTES.md``, "The whole call"). Captured from a private
stream into a graph, the same work is one launch. What changes from call to call (the seed,
where the levels go) travels through pinned host memory that the graph's first node copies
to the device when the graph runs, so the graph itself never changes; the pointers it holds are
the engine's, fixed for its life.

The timing events are recorded as graph nodes (``cuEventRecordWithFlags`` with the external
flag): a plain event record inside a capture only orders the capture and takes no timestamp.
Needs a GPU and CUDA 12 or later.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from blest.runtime.device_program import cuda_driver

__all__ = ["CapturedCall", "copy_async", "record_event"]

_EVENT_RECORD_EXTERNAL = 0x1  # CU_EVENT_RECORD_EXTERNAL


def record_event(event: Any, stream: Any) -> None:
    """Record CuPy ``event`` on ``stream``; during a capture, as a node that takes a timestamp
    each time the graph runs."""
    rc = cuda_driver().cuEventRecordWithFlags(event.ptr, stream.ptr, _EVENT_RECORD_EXTERNAL)
    if rc != 0:
        raise RuntimeError(f"cuEventRecordWithFlags failed (CUresult {rc})")


def copy_async(cp: Any, dst: int, src: int, nbytes: int, stream: Any) -> None:
    """Enqueue a copy of ``nbytes`` between two pointers (device or pinned host) on ``stream``."""
    runtime = cp.cuda.runtime
    runtime.memcpyAsync(dst, src, nbytes, runtime.memcpyDefault, stream.ptr)


class CapturedCall:
    """The work ``enqueue(stream)`` puts on a stream, captured once; calling the object
    launches it on the current stream.

    ``enqueue`` must only enqueue (kernels, async copies between device and pinned memory,
    :func:`record_event`): no allocation, no synchronization. A failure during capture ends
    the capture and raises; the stream is left usable.
    """

    def __init__(self, cp: Any, enqueue: Callable[[Any], None]) -> None:
        self._cp = cp
        stream = cp.cuda.Stream(non_blocking=True)
        with stream:
            stream.begin_capture()
            try:
                enqueue(stream)
            except BaseException:
                try:
                    stream.end_capture()
                except Exception:  # the capture was invalidated by the failure: nothing to keep
                    pass
                raise
            self._graph = stream.end_capture()
            self._graph.upload(stream)
            stream.synchronize()
        self._stream = stream  # kept with the graph it captured

    def __call__(self) -> None:
        self._graph.launch(self._cp.cuda.get_current_stream())
