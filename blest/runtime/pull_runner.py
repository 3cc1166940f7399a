"""The GPU pull runner: single-source BFS pulled over the in-arcs (a :class:`PullSpec`), with or
without shortest-path counts, one cooperative launch a call (``templates/pull_bfs.cu.j2``).

:class:`PullRunner` uploads the reordered graph's in-adjacency (or shares an engine's), keeps
the bitmaps, levels and counts for reuse, and answers ``bfs(src, paths=...)`` in the user's ids:

* levels: int32, -1 unreached, written by the kernel straight into the user's ids;
* counts (``paths=True``): the number of shortest paths from the seeds, int64 and exact; when
  the kernel's overflow flag says a count reached 2^63, the whole result is the CPU
  reference's float64 counts with its RuntimeWarning (:mod:`blest.reference.paths`, the overflow
  rule of docs/betweenness.md);
* parents (``parents=True``): the first in-neighbour one level up in ``in_csr`` order, from the
  levels on the host, as the CPU engines give them.

It offers what the timing protocol reads of an engine (``bfs(src, out="device")``, ``stats``,
``spec.name``, ``eta``, ``timing``, ``close``), so the benchmarks time it beside the engines.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from blest.codegen.contract import CTL
from blest.codegen.pull_render import PULL_SHARED_BYTES, pull_program
from blest.codegen.pullspec import (
    PULL_CTL_WORDS,
    PULL_OVERFLOW,
    PullSpec,
    default_pull_form,
    pull_bytes,
)
from blest.defaults import DEFAULT_BLOCK_SIZE
from blest.errors import ArgumentError, EngineError, GPUUnavailableError
from blest.graph.prepared import Prepared
from blest.runtime import arguments
from blest.runtime.device import cupy_module, deliver_levels, device_in_csr, pinned_array
from blest.runtime.device_program import DeviceProgram, LaunchShape
from blest.runtime.engine_protocol import BFSStats, Geometry

__all__ = ["PullRunner", "first_parents"]


def first_parents(graph: Any, levels: np.ndarray) -> np.ndarray:
    """Per vertex, its first in-neighbour (``graph``'s ``in_csr`` order) one level up; -1 for
    the seeds and unreached vertices. ``levels`` in ``graph``'s ids."""
    n = int(graph.n)
    in_ptr, in_idx = np.asarray(graph.in_ptr), np.asarray(graph.in_idx)
    lv = np.asarray(levels, dtype=np.int64)
    heads = np.repeat(np.arange(n, dtype=np.int64), np.diff(in_ptr))
    arcs = np.flatnonzero((lv[heads] > 0) & (lv[in_idx] == lv[heads] - 1))
    vertices, first = np.unique(heads[arcs], return_index=True)  # heads ascend along the arcs
    parents = np.full(n, -1, dtype=np.int32)
    parents[vertices] = in_idx[arcs[first]]
    return parents


class PullRunner:
    """One :class:`PullSpec` on one GPU (see the module docstring).

    Parameters
    ----------
    prepared : Prepared
        The graph (its in-adjacency in internal ids and the permutation are used as they are).
    spec : PullSpec, optional
        Default: counts, in the form :func:`~blest.codegen.pullspec.default_pull_form` picks.
    device : int, optional
        CUDA device id (default: the current device).
    block_size, blocks_per_sm, grid_blocks
        Launch geometry of the cooperative kernel (:class:`~blest.runtime.engine_protocol.
        Geometry`).
    in_csr : (in_ptr, in_idx), optional
        The in-adjacency already on this device (int64 pointers, int32 heads), shared.
    timing : bool
        Time each call by CUDA events (``stats.traversal_ms``); settable.
    """

    #: No switching constant: the timing protocol's rows report NaN.
    eta = float("nan")

    def __init__(
        self,
        prepared: Prepared,
        spec: PullSpec | None = None,
        *,
        device: int | None = None,
        block_size: int = DEFAULT_BLOCK_SIZE,
        blocks_per_sm: int | None = None,
        grid_blocks: int | None = None,
        in_csr: tuple[Any, Any] | None = None,
        timing: bool = True,
    ) -> None:
        from blest.codegen import toolchain
        from blest.runtime.device import require_memory

        geometry = Geometry(block_size, blocks_per_sm, grid_blocks)
        if not isinstance(prepared, Prepared):
            raise ArgumentError(
                f"a pull runner is built from a blest.graph.Prepared, got {type(prepared).__name__}"
            )
        n, arcs = prepared.n, int(prepared.graph.nnz)
        if n == 0:
            raise ArgumentError("the graph has no vertices")
        if spec is None:
            spec = PullSpec(default_pull_form(n, arcs), counts=True)
        elif not isinstance(spec, PullSpec):
            raise ArgumentError(f"a pull runner runs a PullSpec, got {type(spec).__name__}")
        self.spec, self.prepared, self.n = spec, prepared, n
        self.graph, self.permutation = prepared.graph, prepared.permutation
        self.timing = bool(timing)
        self.device_id, self.arch, self.device_name = toolchain.require_gpu(device)
        self._new_of_old = np.ascontiguousarray(prepared.permutation.new_of_old)
        self._lock = threading.RLock()
        self._closed = False
        self.void = ""
        self._last: tuple | None = None
        cp = self.cp = cupy_module()
        permuted = not prepared.permutation.is_identity
        with cp.cuda.Device(self.device_id):
            need = pull_bytes(spec, n, arcs, permuted=permuted, in_csr=in_csr is None)
            require_memory(need, self.device_id, prepared.graph)
            self._allocate(in_csr, permuted)
            self._load(geometry)

    def _allocate(self, in_csr: tuple[Any, Any] | None, permuted: bool) -> None:
        cp, n = self.cp, self.n
        words = (n + 31) // 32
        in_ptr, in_idx = in_csr if in_csr is not None else device_in_csr(cp, self.prepared)
        self._levels = cp.empty(n, dtype=cp.int32)  # the user's ids
        self._ctl = cp.zeros(PULL_CTL_WORDS, dtype=cp.uint32)
        self._host_ctl = pinned_array(cp, PULL_CTL_WORDS, np.uint32)
        self._host_levels = pinned_array(cp, n, np.int32)
        null = np.uint64(0)
        old_of_new = self.permutation.old_of_new
        self.values: dict[str, Any] = {
            "in_ptr": in_ptr,
            "in_idx": in_idx,
            "old_of_new": cp.asarray(old_of_new, dtype=cp.int32) if permuted else null,
            "n": np.int32(n),
            "n_words": np.int32(words),
            "visited": cp.empty(words, dtype=cp.uint32),
            "frontier": cp.empty(self.spec.frontiers * words, dtype=cp.uint32),
            "levels": self._levels,
            "ctl": self._ctl,
        }
        self._sigma: Any = None  # the counts in the user's ids, as uint64
        if self.spec.counts:
            sigma = cp.empty(n, dtype=cp.uint64)
            self._sigma = cp.empty(n, dtype=cp.uint64) if permuted else sigma
            self.values["sigma"] = sigma
            self.values["sigma_out"] = self._sigma if permuted else null
        self._seed_buffer: Any = None
        self._events = (cp.cuda.Event(), cp.cuda.Event())

    def _load(self, geometry: Geometry) -> None:
        program = pull_program(self.spec)
        self.program = DeviceProgram(program, self.device_id, self.arch, self.values)
        block = geometry.block_size
        per_sm = self.program.occupancy("pull", block, PULL_SHARED_BYTES)
        if per_sm < 1:
            raise GPUUnavailableError(f"kernel {self.spec.name} cannot run {block} threads here")
        if geometry.blocks_per_sm is not None:
            per_sm = max(1, min(per_sm, int(geometry.blocks_per_sm)))
        self.sms = int(self.cp.cuda.Device(self.device_id).attributes["MultiProcessorCount"])
        grid = per_sm * self.sms
        if geometry.grid_blocks is not None:
            grid = min(grid, int(geometry.grid_blocks))
        self.block_size, self.grid_size = block, grid
        self.program.shapes["pull"] = LaunchShape(grid, block, PULL_SHARED_BYTES, True)

    # ------------------------------------------------------------------ calls
    def bfs(
        self,
        src: Any,
        *,
        out: Any = None,
        depth_limit: int | None = None,
        paths: bool = False,
        parents: bool = False,
    ) -> Any:
        """Levels from ``src`` (a user id, or several seeds all at level 0); with ``parents``
        and ``paths``, ``(levels, parents, counts)``, ``(levels, parents)`` or ``(levels,
        counts)`` (see the module docstring). ``out`` as for :meth:`blest.Engine.bfs`; parents
        and counts are CuPy arrays where the levels go to the device, else NumPy."""
        if paths and not self.spec.counts:
            raise ArgumentError(f"{self.spec.name} counts no paths (a PullSpec with counts does)")
        with self._lock:
            self._check_open()
            self.check_out(out)
            user, internal = arguments.seeds(src, self.n, self._new_of_old)
            limit = arguments.depth_limit(depth_limit)
            with self.cp.cuda.Device(self.device_id):
                overflow = self._run(user, internal, limit)
                levels = self._deliver(out)
                on_device = isinstance(out, str) or isinstance(out, self.cp.ndarray)
                extra = []
                if parents:
                    host = levels if isinstance(levels, np.ndarray) else levels.get()
                    extra.append(self._as(first_parents(self.graph, host), on_device))
                if paths:
                    extra.append(self._counts(user, limit, overflow, out, on_device))
        return (levels, *extra) if extra else levels

    def _run(self, user: np.ndarray, internal: np.ndarray, limit: int) -> bool:
        """One launch from ``internal`` (sorted, unique), waited for; whether a count
        overflowed."""
        k = int(internal.size)
        seeds: Any = np.uint64(0)
        if k > 1:
            if self._seed_buffer is None or self._seed_buffer.size < k:
                self._seed_buffer = self.cp.empty(max(k, 1024), dtype=self.cp.int32)
            self._seed_buffer[:k].set(internal)
            seeds = self._seed_buffer
        self._ctl.data.memset_async(0, self._ctl.nbytes)
        start, stop = self._events
        timed = self.timing
        if timed:
            start.record()
        self.program.launch("pull", (seeds, np.int32(k), np.int32(internal[0]), np.int32(limit)))
        if timed:
            stop.record()
        self._ctl.get(out=self._host_ctl)  # waits for the kernel
        ctl = self._host_ctl
        if ctl[CTL["error"]]:
            self.void = (
                f"kernel {self.spec.name}: a grid barrier timed out (a block never arrived) and "
                "the result is void"
            )
            raise EngineError(f"{self.void}. Please report this with the graph and source.")
        self._last = (int(user[0]), k, timed, ctl.copy())
        return bool(ctl[PULL_OVERFLOW])

    def _counts(
        self, user: np.ndarray, limit: int, overflow: bool, out: Any, on_device: bool
    ) -> Any:
        if overflow:  # past int64: the whole result float64, from the CPU (with its warning)
            from blest.reference.paths import bfs_paths

            bound = None if limit < 0 else limit
            return self._as(bfs_paths(self.graph, user, depth_limit=bound)[1], on_device)
        counts = self._sigma.view(self.cp.int64)
        if isinstance(out, str) and out == "view":
            return counts
        return counts.copy() if on_device else counts.get()

    def _as(self, array: np.ndarray, on_device: bool) -> Any:
        return self.cp.asarray(array) if on_device else array

    # ------------------------------------------------------------------ results
    def check_out(self, out: Any) -> None:
        """Refuse an ``out`` that no call can fill (as :meth:`blest.Engine.bfs`)."""
        arguments.check_out(out, self.n, self.cp)

    def _deliver(self, out: Any) -> Any:
        return deliver_levels(self.cp, self._levels, out, self._host_levels)

    @property
    def stats(self) -> BFSStats:
        """Statistics of the last call."""
        if self._last is None:
            raise EngineError("no bfs call yet")
        source, seeds, timed, ctl = self._last
        ms = float("nan")
        if timed:
            with self.cp.cuda.Device(self.device_id):
                ms = float(self.cp.cuda.get_elapsed_time(*self._events))
        return BFSStats(
            source=source,
            depth=int(np.int32(ctl[CTL["depth"]])),
            visited=int(ctl[CTL["visited"]]),
            levels_run=int(ctl[CTL["levels_run"]]),
            traversal_ms=ms,
            seeds=seeds,
        )

    @property
    def source(self) -> str:
        """The generated CUDA C++ of this runner's variant."""
        return self.program.program.source

    # ------------------------------------------------------------------ lifetime
    def _check_open(self) -> None:
        if self._closed:
            raise EngineError("this PullRunner is closed")
        if self.void:
            raise EngineError(f"{self.void}; build a new runner to continue")

    def close(self) -> None:
        """Release the module and every buffer; further calls raise :class:`EngineError`."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self.program.close()
            self.values = {}
            self._levels = self._sigma = self._ctl = self._seed_buffer = None
            self._host_ctl = self._host_levels = None

    def __enter__(self) -> PullRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = " closed" if self._closed else ""
        return f"<blest PullRunner {self.spec.name} n={self.n} on {self.device_name}{state}>"
