"""The GPU single-source BFS engine: one graph, one compiled variant, many ``bfs(src)`` calls.

``Engine(graph, spec)`` builds the BVSS of the (optionally reordered) graph on the GPU, uploads
it with ``in_csr`` once, compiles the variant through NVRTC (disk-cached) and keeps per-traversal
buffers for reuse. ``bfs(src)`` runs the init kernel, the traversal (one cooperative persistent
launch, or a host loop of per-level launches) and returns int32 levels in the user's ids, -1 for
unreachable; the permutation is undone inside the kernels.

Thread safety: calls on one Engine are serialized by a lock (they share device buffers);
use one Engine per thread for concurrency.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from blest.codegen.render import graph_params, kernel_names, queue_buffers, render, state_params
from blest.codegen.spec import VariantSpec
from blest.errors import GPUUnavailableError
from blest.graph.bvss import BVSS, build_bvss
from blest.graph.core import Graph
from blest.graph.ordering import Permutation, permute_graph

__all__ = ["Engine", "BFSStats"]

CTL_WORDS = 32
CTL = {"qsize": 0, "new": 4, "visited": 8, "depth": 9, "done": 12, "levels_run": 13, "error": 14}
PER_LEVEL_BATCH = 16


@dataclass(frozen=True)
class BFSStats:
    """What one ``bfs`` call did."""

    source: int
    depth: int  # largest level assigned (0 when only the source is reached)
    visited: int  # vertices reached, the source included
    levels_run: int  # levels expanded
    traversal_ms: float  # CUDA events around the traversal launch(es), after init
    bottom_up_levels: tuple[int, ...] = field(default=())


def _cupy() -> Any:
    try:
        import cupy
    except ImportError as exc:  # pragma: no cover - depends on the machine
        raise GPUUnavailableError(
            'the GPU engine needs CuPy: pip install "blest-bfs[cuda13]" (or [cuda12])'
        ) from exc
    return cupy


class Engine:
    """Single-source BFS on the GPU with one generated kernel variant.

    Parameters
    ----------
    graph : Graph
        The graph in the user's ids.
    spec : VariantSpec, optional
        The kernel variant (default: the paper's sigma=8 lazy variant with switching).
    eta : float
        Switching constant (lazy variants with switching): a level runs bottom-up when
        #unvisited < eta * |Q|. ``float("inf")`` forces bottom-up, 0 forbids it.
    permutation : Permutation, optional
        A vertex ordering applied before the BVSS is built (e.g. :func:`blest.graph.ordering.rcm`).
    device : int, optional
        CUDA device id (default: the current device).
    block_size : int
        Threads per block (a multiple of 32, at most 1024).
    blocks_per_sm : int, optional
        Blocks per multiprocessor; default and upper bound: what the occupancy API allows.
    grid_blocks : int, optional
        Blocks of every launch, fewer than one per multiprocessor allowed (fewer blocks meet
        sooner at a grid barrier); at most what ``blocks_per_sm`` gives. Default:
        ``blocks_per_sm`` times the multiprocessors.
    small_queue : int, optional
        Persistent variants: levels whose queue holds at most this many VSSs run in one block,
        without grid barriers (0, the default: never; measured faster on every anchor graph
        once per-level counters were per block, see benchmarks/NOTES.md).
    internal : Graph, optional
        ``graph`` already relabelled by ``permutation`` (saves re-sorting it); its in_csr feeds
        the bottom-up kernel.
    record_levels : bool
        Record when each level starts (global timer), for :meth:`level_times_ms`.
    bvss : BVSS, optional
        A BVSS already built (NumPy or CuPy arrays) from the graph *after* ``permutation``, at
        ``spec.sigma``; saves the build when several engines share a graph.
    """

    def __init__(
        self,
        graph: Graph,
        spec: VariantSpec | None = None,
        *,
        eta: float = 10.0,
        permutation: Permutation | None = None,
        device: int | None = None,
        block_size: int = 256,
        blocks_per_sm: int | None = None,
        grid_blocks: int | None = None,
        bvss: BVSS | None = None,
        small_queue: int | None = None,
        record_levels: bool = False,
        internal: Graph | None = None,
    ) -> None:
        from blest.codegen import toolchain

        self.spec = spec if spec is not None else VariantSpec()
        self.eta = float(eta)
        if block_size % 32 or not 32 <= block_size <= 1024:
            raise ValueError(f"block_size must be a multiple of 32 in [32, 1024], got {block_size}")
        if grid_blocks is not None and int(grid_blocks) < 1:
            raise ValueError(f"grid_blocks must be >= 1, got {grid_blocks}")
        if small_queue is not None and int(small_queue) < 0:
            raise ValueError(f"small_queue must be >= 0, got {small_queue}")
        self._device_id, self.arch, self.device_name = toolchain.require_gpu(device)
        cp = self._cp = _cupy()
        self._lock = threading.Lock()
        self._closed = False
        self.graph = graph
        self.n = graph.n
        if graph.n == 0:
            raise ValueError("the graph has no vertices")
        self.permutation = permutation
        self._record_levels = bool(record_levels)
        if internal is None:
            internal = graph if permutation is None else permute_graph(graph, permutation)
        elif internal.n != graph.n or internal.nnz != graph.nnz:
            raise ValueError("internal must be the graph relabelled by the permutation")
        with cp.cuda.Device(self._device_id):
            self._check_memory(internal)
            if bvss is None:
                bvss = build_bvss(internal, self.spec.sigma, xp=cp)
            elif bvss.sigma != self.spec.sigma or bvss.n != internal.n or bvss.nnz != internal.nnz:
                raise ValueError("the given bvss does not match this graph and spec.sigma")
            self.bvss = bvss
            self._upload(internal)
            self._module_load(block_size, blocks_per_sm, small_queue, grid_blocks)
        self.last_stats: BFSStats | None = None

    # ------------------------------------------------------------------ set-up
    def _check_memory(self, g: Graph) -> None:
        cp = self._cp
        tau = self.spec.tau
        est_slices = g.nnz  # at most one slice per arc
        build = 5 * 8 * g.nnz  # sort keys and segment arrays while building the BVSS
        resident = 4 * (est_slices + 32 * est_slices // tau) + 16 * g.n + 12 * g.nnz
        need = build + resident
        free, _total = cp.cuda.runtime.memGetInfo()
        if need > free:
            raise MemoryError(
                f"the engine needs about {need / 2**20:.0f} MiB of GPU memory for this graph "
                f"(n={g.n}, arcs={g.nnz}); device {self._device_id} has {free / 2**20:.0f} MiB free"
            )

    def _upload(self, g: Graph) -> None:
        cp, spec, b = self._cp, self.spec, self.bvss
        n = g.n
        self._n_words = (n + 31) // 32
        arrays: dict[str, Any] = {
            "row_ids": cp.asarray(b.row_ids),
            "masks": cp.asarray(b.masks),
            "real_ptrs": cp.asarray(b.real_ptrs),
            "virtual_to_real": cp.asarray(b.virtual_to_real),
        }
        if spec.switching:
            arrays["in_ptr"] = cp.asarray(g.in_ptr, dtype=cp.int64)
            arrays["in_idx"] = cp.asarray(g.in_idx, dtype=cp.int32)
        perm = self.permutation
        if perm is None or perm.is_identity:
            arrays["old_of_new"] = np.uint64(0)  # null pointer: identity
            self._new_of_old = None
        else:
            arrays["old_of_new"] = cp.asarray(perm.old_of_new, dtype=cp.int32)
            self._new_of_old = np.asarray(perm.new_of_old, dtype=np.int32)
        # Zero-size arrays still need a valid pointer.
        for key in ("row_ids", "masks", "virtual_to_real"):
            if arrays[key].size == 0:
                arrays[key] = cp.zeros(1, dtype=arrays[key].dtype)
        arrays.update(
            n=np.int32(n),
            n_words=np.int32(self._n_words),
            n_vss=np.int32(b.n_vss),
            n_sets=np.int32(b.n_slice_sets),
        )
        n_frontier = 3 if spec.update == "eager" else 1
        state: dict[str, Any] = {
            "visited": cp.zeros(self._n_words, dtype=cp.uint32),
            "frontier": cp.zeros(n_frontier * self._n_words, dtype=cp.uint32),
        }
        if spec.update == "lazy":
            state["v_next"] = cp.zeros(self._n_words, dtype=cp.uint32)
        if spec.dirty_sets:
            dirty_words = (self._n_words + 31) // 32
            state["dirty"] = cp.zeros(2 * dirty_words, dtype=cp.uint32)
            state["dirty_words"] = np.int32(dirty_words)
        if spec.queue == "vss":
            # Entries are {VSS id, slice set} pairs.
            state["queue"] = cp.zeros(2 * queue_buffers(spec) * max(b.n_vss, 1), dtype=cp.int32)
        state["ctl"] = cp.zeros(CTL_WORDS, dtype=cp.uint32)
        state["bottom_up_levels"] = cp.zeros(self._n_words, dtype=cp.uint32)
        state["levels"] = cp.empty(n, dtype=cp.int32)  # internal ids
        # Reordered graphs: the user's ids, filled by the unpermute kernel after each traversal.
        self._user_levels = None if self._new_of_old is None else cp.empty(n, dtype=cp.int32)
        state["level_clock"] = (
            cp.zeros(2 * (n + 2), dtype=cp.uint64) if self._record_levels else np.uint64(0)
        )
        self._arrays = arrays
        self._state = state
        names = [p.name for p in graph_params(spec)] + [p.name for p in state_params(spec)]
        self._common_args = tuple({**arrays, **state}[name] for name in names)
        self._pinned = cp.cuda.alloc_pinned_memory(4 * n)
        self._host_levels = np.frombuffer(self._pinned, dtype=np.int32, count=n)
        self._ctl_pinned = cp.cuda.alloc_pinned_memory(4 * CTL_WORDS)
        self._host_ctl = np.frombuffer(self._ctl_pinned, dtype=np.uint32, count=CTL_WORDS)
        self._events = (cp.cuda.Event(), cp.cuda.Event())

    def _module_load(
        self,
        block_size: int,
        blocks_per_sm: int | None,
        small_queue: int | None,
        grid_blocks: int | None = None,
    ) -> None:
        from blest.codegen import compile as nvrtc_compile

        self.source = render(self.spec)
        binary = nvrtc_compile.compile_source(self.source, arch=self.arch, target="cubin")
        self._module = nvrtc_compile.load_module(binary, self._device_id)
        names = kernel_names(self.spec)
        self._kernels = {role: self._module.get_function(name) for role, name in names.items()}
        main = self._kernels.get("bfs") or self._kernels["stage1"]
        per_sm = nvrtc_compile.max_active_blocks(main, block_size)
        if per_sm < 1:
            raise GPUUnavailableError(
                f"kernel {self.spec.name} cannot run {block_size} threads per block on this GPU"
            )
        if blocks_per_sm is not None:
            per_sm = max(1, min(per_sm, int(blocks_per_sm)))
        sms = self._cp.cuda.Device(self._device_id).attributes["MultiProcessorCount"]
        self.block_size = block_size
        self.sms = int(sms)
        self.grid_size = per_sm * sms
        if grid_blocks is not None:
            self.grid_size = min(self.grid_size, int(grid_blocks))
        self.small_queue = 0 if small_queue is None else int(small_queue)

    @property
    def ptx(self) -> str:
        """PTX of this engine's variant for its GPU's architecture."""
        from blest.codegen import compile as nvrtc_compile

        arch = self.arch.replace("sm_", "compute_")
        return nvrtc_compile.compile_source(self.source, arch=arch, target="ptx").decode()

    # ------------------------------------------------------------------ traversal
    def _internal_source(self, src: Any) -> tuple[int, int]:
        if isinstance(src, (bool, np.bool_)) or not isinstance(src, (int, np.integer)):
            raise TypeError(f"src must be an integer vertex id, got {type(src).__name__}")
        src = int(src)
        if not 0 <= src < self.n:
            raise IndexError(f"src {src} is out of range for a graph of {self.n} vertices")
        internal = src if self._new_of_old is None else int(self._new_of_old[src])
        return internal, src

    def bfs(self, src: int, *, out: Any = None, depth_limit: int | None = None) -> Any:
        """BFS levels from ``src`` (a user id): int32, -1 for unreachable vertices.

        Parameters
        ----------
        src : int
            Source vertex, in the graph's own ids.
        out : None, "device" or array, optional
            None returns a fresh NumPy array; ``"device"`` a fresh CuPy array; a NumPy or CuPy
            int32 array of length n is filled in place and returned.
        depth_limit : int, optional
            Stop after assigning level ``depth_limit`` (vertices further away report -1).
        """
        if self._closed:
            raise RuntimeError("this Engine is closed")
        internal, user = self._internal_source(src)
        limit = -1 if depth_limit is None else int(depth_limit)
        if depth_limit is not None and limit < 0:
            raise ValueError(f"depth_limit must be >= 0, got {depth_limit}")
        with self._lock, self._cp.cuda.Device(self._device_id):
            self._traverse(internal, user, limit)
            return self._deliver(out)

    def _launch(self, role: str, extra: tuple, cooperative: bool = False) -> None:
        from blest.codegen.compile import launch

        launch(
            self._kernels[role],
            (self.grid_size,),
            (self.block_size,),
            self._common_args + extra,
            cooperative=cooperative,
        )

    def _traverse(self, internal: int, user: int, limit: int) -> None:
        self._submit_init(internal)
        self._submit_traversal(limit)
        self._wait(user)

    # The three phases of a call, separate so that benchmarks/profile_call.py can time each.
    def _submit_init(self, internal: int) -> None:
        self._launch("init", (np.int32(internal),))

    def _submit_traversal(self, limit: int) -> None:
        """Enqueue the traversal (and the unpermute pass) between the two timing events."""
        eta = np.float64(self.eta)
        start, stop = self._events
        start.record()
        if self.spec.launch == "persistent":
            extra = (np.int32(limit), eta, np.uint32(self.small_queue))
            self._launch("bfs", extra, cooperative=True)
        else:
            self._per_level_loop(limit, eta)
        if self._user_levels is not None:
            self._launch("unpermute", (self._user_levels,))
        stop.record()

    def _wait(self, user: int) -> None:
        """Wait for the traversal; raise if a grid barrier timed out; note the call's stats."""
        start, stop = self._events
        self._state["ctl"].get(out=self._host_ctl)
        if self._host_ctl[CTL["error"]]:
            raise RuntimeError(
                f"kernel {self.spec.name}: a grid barrier timed out (a block never arrived); "
                "the result is void. Please report this with the graph and source."
            )
        self._last = (user, start, stop)
        self.last_stats = None

    def _per_level_loop(self, limit: int, eta: np.float64) -> None:
        ctl = self._state["ctl"]
        level = 0
        while True:
            for _ in range(PER_LEVEL_BATCH):
                self._launch("stage1", (np.int32(level), np.int32(limit), eta))
                if "stage2" in self._kernels:
                    self._launch("stage2", (np.int32(level),))
                level += 1
            ctl.get(out=self._host_ctl)
            if self._host_ctl[CTL["done"]]:
                return

    def _deliver(self, out: Any) -> Any:
        cp = self._cp
        levels = self._state["levels"] if self._user_levels is None else self._user_levels
        if isinstance(out, str):
            if out != "device":
                raise ValueError(f"out must be None, 'device' or an array, got {out!r}")
            return levels.copy()
        if out is None:
            levels.get(out=self._host_levels)
            return self._host_levels.copy()
        if isinstance(out, cp.ndarray):
            self._check_out(out)
            out[...] = levels
            return out
        if isinstance(out, np.ndarray):
            self._check_out(out)
            levels.get(out=self._host_levels)
            np.copyto(out, self._host_levels)
            return out
        raise TypeError(f"out must be None, 'device' or an int32 array, got {type(out).__name__}")

    def _check_out(self, out: Any) -> None:
        if out.dtype != np.int32 or out.shape != (self.n,):
            raise ValueError(f"out must be an int32 array of shape ({self.n},)")

    @property
    def stats(self) -> BFSStats:
        """Statistics of the last ``bfs`` call (read from the GPU on first access)."""
        if self.last_stats is None:
            if not hasattr(self, "_last"):
                raise RuntimeError("no bfs call yet")
            user, start, stop = self._last
            ctl = self._host_ctl
            with self._cp.cuda.Device(self._device_id):
                ms = self._cp.cuda.get_elapsed_time(start, stop)
                bottom_up: tuple[int, ...] = ()
                if self.spec.switching:
                    bits = self._state["bottom_up_levels"].get()
                    flat = np.unpackbits(bits.view(np.uint8), bitorder="little")
                    bottom_up = tuple(int(x) for x in np.flatnonzero(flat))
            self.last_stats = BFSStats(
                source=user,
                depth=int(np.int32(ctl[CTL["depth"]])),
                visited=int(ctl[CTL["visited"]]),
                levels_run=int(ctl[CTL["levels_run"]]),
                traversal_ms=float(ms),
                bottom_up_levels=bottom_up,
            )
        return self.last_stats

    def level_times_ms(self) -> tuple[np.ndarray, tuple[int, ...]]:
        """Milliseconds spent on each expanded level of the last call, and the levels that ran
        bottom-up (needs ``record_levels=True``). Timed by block 0's global timer at each level
        start, so a level's time includes its barriers."""
        if not self._record_levels:
            raise RuntimeError("construct the Engine with record_levels=True")
        stats = self.stats
        clock = self._state["level_clock"][: stats.levels_run + 1].get().astype(np.int64)
        return np.diff(clock) / 1e6, stats.bottom_up_levels

    def stage_times_ms(self) -> np.ndarray | None:
        """Lazy variants: milliseconds of Stage 1 (expansion) and Stage 2 (finalization) of each
        expanded level of the last call, shape (levels, 2); None for eager variants (one stage).
        Levels run by one block alone (``small_queue``) are timed the same way."""
        if not self._record_levels:
            raise RuntimeError("construct the Engine with record_levels=True")
        if self.spec.update != "lazy":
            return None
        levels = self.stats.levels_run
        clock = self._state["level_clock"].get().astype(np.int64)
        starts = clock[: levels + 1]
        stage2 = clock[self.n + 2 : self.n + 2 + levels]
        return np.stack([stage2 - starts[:-1], starts[1:] - stage2], axis=1) / 1e6

    def debug_state(self) -> dict[str, np.ndarray]:
        """Bitmaps and queue after the last call (internal ids), for level-by-level checks.

        After ``bfs(src, depth_limit=L)`` these are ``F_L``, ``visited`` (levels <= L) and
        ``Q_L`` as a sorted array of VSS ids with, in ``queue_sets``, the slice set each entry
        carries (the sweep policy keeps no queue: None)."""
        stats = self.stats
        level = stats.levels_run
        nq = queue_buffers(self.spec)
        ctl = self._state["ctl"].get()
        frontier = self._state["frontier"]
        if self.spec.update == "eager":
            w = self._n_words
            frontier = frontier[(level % 3) * w : (level % 3 + 1) * w]
        queue = queue_sets = None
        if self.spec.queue == "vss":
            size = int(ctl[CTL["qsize"] + level % nq])
            nv = max(self.bvss.n_vss, 1)
            start = 2 * (level % nq) * nv
            entries = self._state["queue"][start : start + 2 * size].get().reshape(-1, 2)
            order = np.argsort(entries[:, 0], kind="stable")
            queue = entries[order, 0].astype(np.int64)
            queue_sets = entries[order, 1].astype(np.int64)
        return {
            "visited": self._state["visited"].get(),
            "frontier": frontier.get(),
            "queue": queue,
            "queue_sets": queue_sets,
            "qsize": int(ctl[CTL["qsize"] + level % nq]),
        }

    # ------------------------------------------------------------------ lifetime
    def close(self) -> None:
        """Free the device buffers and the module; the Engine cannot be used afterwards."""
        with self._lock:
            self._closed = True
            self._arrays = self._state = {}
            self._common_args = ()
            self._module = self._kernels = None
            self.bvss = None

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<blest.Engine {self.spec.name} n={self.n} on {self.device_name}>"
