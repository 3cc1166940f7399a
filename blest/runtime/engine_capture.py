"""Plain BFS calls replayed from a captured CUDA graph: the engine's side of
:mod:`blest.runtime.call_graph`. Mixed into :class:`blest.runtime.engine.Engine`.

A plain call is one source in range, no depth limit, no parents, on a persistent or block
variant. Its work is captured at first use, once with the levels copied to the engine's pinned
host buffer (``out=None`` or a pageable NumPy ``out``) and once without (device outputs, and a
pinned NumPy ``out``, which the levels reach by one copy enqueued after the graph); later plain
calls write the seed to a pinned word and launch the graph. The captured graph holds the
addresses of the engine's buffers, so it lives and dies with them.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from blest.runtime.call_graph import CapturedCall, copy_async, record_event
from blest.runtime.device import pinned_array

__all__ = ["CallCapture", "plain_id"]


def plain_id(src: Any, n: int) -> bool:
    """Whether ``src`` is one vertex id in range, as a Python or NumPy integer (the calls that
    replay a captured graph; anything else takes the general checks)."""
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
    _call_graphs: dict[tuple[bool, float, int], CapturedCall]
    eta: float
    small_queue: int
    _graph_seed: tuple[Any, Any] | None
    _events: tuple[Any, Any]
    _state: dict[str, Any]
    _host_ctl: Any
    _host_levels: Any
    _block_seeds: tuple
    n: int
    spec: Any

    def _call_graph(self, host: bool) -> CapturedCall | None:
        """The captured plain call (with the levels copied to pinned host memory, or not) at
        the engine's current ``eta`` and ``small_queue``, which a graph holds as kernel
        arguments (the tuner changes them between runs); None where this engine launches
        kernel by kernel."""
        if not self._capture:
            return None
        key = (host, float(self.eta), int(self.small_queue))
        graph = self._call_graphs.get(key)
        if graph is None:
            self._call_graphs = {k: g for k, g in self._call_graphs.items() if k[1:] == key[1:]}
            if self._graph_seed is None:
                self._graph_seed = (
                    self._cp.empty(1, dtype=self._cp.int32),
                    pinned_array(self._cp, 1, np.int32),
                )
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

    def _enqueue_call(self, stream: Any, host: bool) -> None:
        """A plain call's work, as captured: the seed from pinned memory, init, the timed
        traversal, the control block (and the levels when ``host``) back to pinned memory."""
        cp = self._cp
        seed_device, seed_host = self._graph_seed  # type: ignore[misc]
        copy_async(cp, seed_device.data.ptr, seed_host.ctypes.data, 4, stream)
        seeds = (seed_device, np.int32(1), np.int32(0))
        if self.spec.launch == "block":
            self._block_seeds = seeds
        else:
            self._launch("init", seeds)
        start, stop = self._events
        record_event(start, stream)
        self._enqueue_traversal(-1)
        record_event(stop, stream)
        ctl = self._state["ctl"]
        copy_async(cp, self._host_ctl.ctypes.data, ctl.data.ptr, ctl.nbytes, stream)
        if host:
            levels = self._levels()
            copy_async(cp, self._host_levels.ctypes.data, levels.data.ptr, levels.nbytes, stream)

    def _replay(self, graph: CapturedCall, staged: bool, internal: int, user: int, out: Any) -> Any:
        """One plain call through ``graph`` (``staged``: the one that copies the levels to the
        engine's pinned buffer). A fresh device result, or a pinned ``out``, is copied before
        the wait, so that its submission overlaps the traversal."""
        cp = self._cp
        self._graph_seed[1][0] = internal  # type: ignore[index]
        graph()
        levels, stream = self._levels(), cp.cuda.get_current_stream()
        fresh = None
        if isinstance(out, str) and out == "device":  # a plain copy: CuPy's copy() costs more
            fresh = cp.empty(self.n, dtype=cp.int32)
            copy_async(cp, fresh.data.ptr, levels.data.ptr, levels.nbytes, stream)
        elif isinstance(out, np.ndarray) and not staged:  # a pinned out
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
