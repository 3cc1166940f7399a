"""The GPU BFS engine: one prepared graph, one compiled variant, many calls.

``Engine(prepared, spec)`` uploads the prepared graph's BVSS, permutation and in-adjacency once
(a :class:`~blest.graph.Graph` is prepared first, its BVSS built on the GPU), compiles the variant
through NVRTC (disk-cached) and keeps the per-traversal buffers for reuse. ``bfs(src)`` runs the
init kernel and the traversal (one cooperative persistent launch, or a host loop of per-level
launches) and returns int32 levels in the user's ids, -1 for unreachable (``launch="block"``:
the out-adjacency instead of the BVSS, one launch of one block a call; :mod:`.engine_block`).
``src`` may be a sequence of seeds (all at level 0); ``parents=True`` adds a post-pass kernel
that picks a BFS parent for every reached vertex (the in-adjacency is uploaded at the first such
call when the variant does not already hold it).

A plain call (one source, no depth limit, no parents) of a persistent or block variant is
replayed from a CUDA graph captured at its first use (:mod:`.call_graph`): one launch a call
instead of four to six; other calls, and ``capture=False`` engines, launch kernel by kernel.

Thread safety: calls on one Engine are serialized by a lock (they share device buffers); use one
Engine per thread. A kernel failure (a grid barrier that timed out) voids the engine for good.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from blest.codegen.contract import (
    CALL_SLOT,
    CTL,
    CTL_WORDS,
    FUSED_ONCE,
    SERVE_WORDS,
    check_block_size,
    claims_form,
    frontier_buffers,
    queue_buffers,
)
from blest.codegen.render import graph_params, kernel_names, render, state_params
from blest.codegen.spec import VariantSpec
from blest.defaults import DEFAULT_ALPHA, DEFAULT_BETA, DEFAULT_ETA
from blest.errors import ArgumentError, EngineError, GPUUnavailableError
from blest.graph.core import Graph
from blest.graph.ordering import Permutation
from blest.graph.prepared import Prepared
from blest.runtime.base import EngineBase
from blest.runtime.device import (
    cupy_module,
    device_buffers,
    device_in_csr,
    mask_words,
    pinned_array,
    require_memory,
)
from blest.runtime.engine_block import BlockLaunch
from blest.runtime.engine_capture import CallCapture, plain_id
from blest.runtime.engine_csr import csr_arrays
from blest.runtime.engine_multi import GPUManySources, MultiSourceChoice
from blest.runtime.engine_probes import EngineProbes
from blest.runtime.engine_serve import UNSERVED, ServedCalls
from blest.runtime.footprint import estimate_bytes, resident_bytes
from blest.runtime.hot_buffers import hot_buffers
from blest.runtime.msbfs import MSRunner
from blest.runtime.protocol import BFSStats, Geometry

__all__ = ["Engine", "BFSStats"]

PER_LEVEL_BATCH = 16
_ERROR = CTL["error"]


class Engine(ServedCalls, BlockLaunch, CallCapture, GPUManySources, EngineProbes, EngineBase):
    """BFS on the GPU with one generated kernel variant.

    Parameters
    ----------
    graph : Prepared or Graph
        A prepared graph (used as it is), or a graph in the user's ids (prepared here at
        ``spec.sigma`` under ``permutation``).
    spec : VariantSpec, optional
        The kernel variant (default: the paper's sigma=8 lazy variant with switching).
    eta : float
        Switching constant (lazy variants with switching): a level runs bottom-up when
        #unvisited < eta * |Q|. ``float("inf")`` forces bottom-up, 0 forbids it.
    beta : float
        Return rule after a bottom-up level (lazy variants with switching): the next level
        stays bottom-up while |F| * beta >= n, and goes top-down once the frontier is smaller
        (eta is not consulted there). 0 (default) turns it off: eta decides every level.
    alpha : float
        Edge-ratio guard (persistent variants): bottom-up only when also alpha * (in-arcs of F)
        > (in-arcs of the unvisited vertices). 0 (default): off.
    permutation : Permutation, optional
        With a Graph: the vertex ordering applied before the BVSS is built.
    device : int, optional
        CUDA device id (default: the current device).
    block_size, blocks_per_sm, grid_blocks, small_queue
        Launch geometry (see :class:`~blest.runtime.protocol.Geometry`); the block launch
        runs ``block_size`` threads in one block and ignores the rest.
    record_levels : bool
        Record when each level starts (global timer), for :meth:`level_times_ms`.
    capture : bool
        Replay plain calls from a captured CUDA graph (default); False launches every kernel
        of every call separately (for comparisons).
    timing : bool
        Time each traversal by CUDA events for ``stats.traversal_ms`` (default). False saves
        each call the events' cost, and on the persistent variants runs a plain call's init,
        traversal and delivery in one kernel instead of three launches (together 9-20 us less
        a call on small graphs, on an H100); ``traversal_ms`` is then NaN. An attribute too, which
        may be changed between calls.
    """

    def __init__(
        self,
        graph: Prepared | Graph,
        spec: VariantSpec | None = None,
        *,
        eta: float = DEFAULT_ETA,
        beta: float = DEFAULT_BETA,
        alpha: float = DEFAULT_ALPHA,
        permutation: Permutation | None = None,
        device: int | None = None,
        block_size: int = Geometry.block_size,
        blocks_per_sm: int | None = None,
        grid_blocks: int | None = None,
        small_queue: int | None = None,
        record_levels: bool = False,
        capture: bool = True,
        timing: bool = True,
    ) -> None:
        from blest.codegen import toolchain

        geometry = Geometry(block_size, blocks_per_sm, grid_blocks, small_queue)
        self._device_id, self.arch, self.device_name = toolchain.require_gpu(device)
        cp = self._cp = cupy_module()
        if spec is None:
            spec = VariantSpec(sigma=graph.sigma) if isinstance(graph, Prepared) else VariantSpec()
        check_block_size(spec, block_size)
        if spec.launch == "block":  # refuse a graph whose visited bitmap does not fit first
            self._plan_block(graph.n, spec.cluster)
        if isinstance(graph, Graph):
            if graph.n == 0:
                raise ArgumentError("the graph has no vertices")
            with cp.cuda.Device(self._device_id):
                require_memory(estimate_bytes(graph, spec), self._device_id, graph)
                graph = Prepared.from_graph(graph, spec.sigma, permutation, xp=cp)
        elif permutation is not None:
            raise ArgumentError("permutation applies to a Graph; a Prepared graph has its own")
        super().__init__(graph, spec, eta, beta, alpha)
        if self.n == 0:
            raise ArgumentError("the graph has no vertices")
        self._record_levels = bool(record_levels)
        self._capture = bool(capture) and self.spec.launch != "per_level"
        self.timing = bool(timing)
        self._void = ""
        self._ms_choice: MultiSourceChoice | None = None
        self._runners: dict[bool, MSRunner] = {}
        with cp.cuda.Device(self._device_id):
            require_memory(resident_bytes(graph, self.spec), self._device_id, graph.graph)
            self._upload(graph)
            self._module_load(geometry)

    # ------------------------------------------------------------------ set-up
    def _upload(self, prep: Prepared) -> None:
        cp, spec, n = self._cp, self.spec, self.n
        self._n_words = (n + 31) // 32
        if spec.launch == "block":
            self._arrays, self._state = self._block_buffers(prep)
        else:
            self._arrays, self._state = self._bvss_buffers(prep)
        names = [p.name for p in graph_params(spec)] + [p.name for p in state_params(spec)]
        self._common_args = tuple({**self._arrays, **self._state}[name] for name in names)
        self._launches: dict[tuple[str, int], Any] = {}  # PreparedLaunch by (role, extras)
        self._seed_buffer = None  # internal seeds of multi-seed calls, grown on demand
        self._parent_args: tuple | None = None  # (in_ptr, in_idx, user parents) once asked
        self._host_levels = pinned_array(cp, n, np.int32)
        # The control block's copy, then a served engine's request block (engine_serve.py).
        self._host_block = pinned_array(cp, CTL_WORDS + SERVE_WORDS, np.uint32)
        self._host_ctl = self._host_block[:CTL_WORDS]
        self._events = (cp.cuda.Event(), cp.cuda.Event())
        self._call_graphs: dict[tuple, Any] = {}  # by (to the host, eta, beta, alpha, ...)
        # A captured call's {seed, where the deliver pass puts the levels (0: in _levels()), 0 for
        # the barrier's count} in pinned memory, copied by the graph's first node to the control
        # block's call slot (the block launch's own slot); own_dst: launched calls' destination.
        self._call_slot = pinned_array(cp, 3, np.int64)
        self._call_slot[:] = 0
        self._slot_words = memoryview(self._call_slot)  # for the call's stores (a tenth of NumPy's)
        self._internal_ids = memoryview(np.ascontiguousarray(self._new_of_old))
        self._spare = None
        if spec.launch == "persistent":
            first, words = CALL_SLOT
            self._slot = self._state["ctl"][first : first + words].view(cp.int64)
        else:
            self._slot = cp.zeros(3, dtype=cp.int64)
        self._own_ptr = self._user_levels.data.ptr if self._reorders else 0
        self._own_dst = cp.full(1, self._own_ptr, dtype=cp.uint64)

    def _bvss_buffers(self, prep: Prepared) -> tuple[dict[str, Any], dict[str, Any]]:
        """(graph arrays, traversal state) of the BVSS variants."""
        cp, spec, n = self._cp, self.spec, self.n
        b = prep.hops_bvss(spec.hops) if spec.hops > 1 else prep.bvss  # B = A + .. + A^K
        arrays = device_buffers(cp, row_ids=b.row_ids, masks=mask_words(cp, b),
                                real_ptrs=b.real_ptrs,
                                virtual_to_real=b.virtual_to_real)  # fmt: skip
        self._in_csr = None
        if spec.switching:
            arrays["in_ptr"] = cp.asarray(prep.in_ptr, dtype=cp.int64)
            arrays["in_idx"] = cp.asarray(prep.in_idx, dtype=cp.int32)
            self._in_csr = (arrays["in_ptr"], arrays["in_idx"])
        if spec.expand == "csr":
            csr, self._max_hubs = csr_arrays(cp, prep, self._in_csr, self._n_words)
            arrays.update(csr)
        # hops > 1 claims by level on every graph: one in its own ids gets the identity here.
        identity, perm = not self._by_level_ids(), self.permutation
        for way in ("old_of_new", "new_of_old"):  # the deliver pass gathers by new_of_old
            arrays[way] = np.uint64(0) if identity else cp.asarray(getattr(perm, way), cp.int32)
        arrays.update(n=np.int32(n), n_words=np.int32(self._n_words),
                      n_vss=np.int32(b.n_vss), n_sets=np.int32(b.n_slice_sets))  # fmt: skip
        # Reordered graphs: the user's ids, filled by the deliver pass after each traversal.
        self._user_levels = None if identity else cp.empty(n, dtype=cp.int32)
        return arrays, self._state_buffers(b.n_vss)

    def _state_buffers(self, n_vss: int) -> dict[str, Any]:
        cp, spec, words = self._cp, self.spec, self._n_words
        # Every level polls or hits these: one allocation, one layout (hot_buffers.py).
        hot = [("ctl", CTL_WORDS), ("visited", words), ("frontier", frontier_buffers(spec) * words)]
        if spec.update == "lazy":
            hot.append(("v_next", words))
        dirty_words = (words + 31) // 32
        if spec.dirty_sets:
            hot.append(("dirty", 2 * dirty_words))
        state: dict[str, Any] = hot_buffers(cp, [*hot, ("bottom_up_levels", words)])
        if spec.dirty_sets:
            state["dirty_words"] = np.int32(dirty_words)
        if spec.queue == "vss":  # entries are {VSS id, slice set} pairs
            state["queue"] = cp.zeros(2 * queue_buffers(spec) * max(n_vss, 1), dtype=cp.int32)
        if spec.expand == "csr":  # entries are {hub, offset of its first arc} pairs
            hubs = max(self._max_hubs, 1)
            state["hub_queue"] = cp.zeros(2 * queue_buffers(spec) * hubs, dtype=cp.int64)
            state["max_hubs"] = np.int32(hubs)
        state["levels"] = cp.empty(self.n, dtype=cp.int32)  # internal ids
        state["level_clock"] = (
            cp.zeros(2 * (self.n + 2), dtype=cp.uint64) if self._record_levels else np.uint64(0)
        )
        return state

    def _module_load(self, geometry: Geometry) -> None:
        from blest.codegen.compile import compile_source
        from blest.runtime.launch import load_module, max_active_blocks

        binary = compile_source(self.source, arch=self.arch, target="cubin")
        self._module = load_module(binary, self._device_id)
        names = kernel_names(self.spec)
        self._kernels = {role: self._module.get_function(name) for role, name in names.items()}
        main = self._kernels.get("bfs") or self._kernels["stage1"]
        per_sm = max_active_blocks(main, geometry.block_size, self.shared_bytes)
        if per_sm < 1:
            raise GPUUnavailableError(
                f"kernel {self.spec.name} cannot run {geometry.block_size} threads per block here"
            )
        if geometry.blocks_per_sm is not None:
            per_sm = max(1, min(per_sm, int(geometry.blocks_per_sm)))
        sms = self._cp.cuda.Device(self._device_id).attributes["MultiProcessorCount"]
        self.block_size = geometry.block_size
        self.sms = int(sms)
        self.grid_size = per_sm * self.sms
        if geometry.grid_blocks is not None:
            self.grid_size = min(self.grid_size, int(geometry.grid_blocks))
        self.small_queue = int(geometry.small_queue or 0)
        if self.spec.queue == "resident" and (self.n + 2) * self.grid_size >= 1 << 33:
            # grid_barrier_sum.cu.j2 counts arrivals (blocks x half of <= n + 2 barriers) in u32
            raise ArgumentError(f"queue='resident': {self.grid_size} blocks is too many for "
                                f"{self.n} vertices (2^33 / (n + 2) at most)")  # fmt: skip
        if self.spec.launch == "block":
            self._load_block(self.sms)

    @property
    def source(self) -> str:
        """The generated CUDA C++ of this engine's variant, for this graph: an eager variant
        holds only the claims that the graph's ordering uses (``contract.claims_form``)."""
        return render(self.spec, claims=self._claims())

    def _claims(self) -> str | None:
        """The claims form this engine's kernels are rendered with (None: not an eager one)."""
        return claims_form(self.spec, self._by_level_ids())

    # ------------------------------------------------------------------ traversal
    def bfs(
        self, src: Any, *, out: Any = None, depth_limit: int | None = None, parents: bool = False
    ) -> Any:
        """BFS levels from ``src``: int32, -1 for unreachable vertices.

        Parameters
        ----------
        src : int or sequence of int
            Source vertex, or several seeds all at level 0 (repeats allowed), in the graph's
            own ids.
        out : None, "device", "view" or array, optional
            None returns a fresh NumPy array; ``"device"`` a fresh CuPy array; ``"view"`` the
            engine's own CuPy array, without a copy, valid until the next call on this engine
            (which may overwrite it) or its close; a NumPy or CuPy int32 array of length n is
            filled in place and returned. A page-locked NumPy array (``cupyx.empty_pinned``)
            receives the levels straight from the GPU, without the host copy that a fresh
            or pageable array costs (most of the call on graphs of millions of vertices).
            After an error, the contents of ``out`` are undefined.
        depth_limit : int, optional
            Stop after assigning level ``depth_limit`` (vertices further away report -1).
        parents : bool
            Also return a BFS parent of every vertex (int32, the user's ids; -1 for the seeds
            and unreached vertices), as ``(levels, parents)``; parents are a fresh CuPy array
            when the levels go to the device (``out="device"`` or a CuPy ``out``), else NumPy.
            Computed by a post-pass after the timed traversal (``stats.traversal_ms`` leaves
            it out).
        """
        plain = depth_limit is None and not parents and plain_id(src, self.n)
        if plain and self._serve_idle_us is not None:  # served (engine_serve.py)
            with self._lock:
                if self._serve_idle_us is not None:
                    levels = self._serve_call(int(src), out)
                    if levels is not UNSERVED:
                        return levels
        if self._capture and plain:
            with self._lock, self._cp.cuda.Device(self._device_id):
                self._check_open()
                self._check_out(out)
                self._serve_stop()
                staged = self._staged(out)
                graph = self._call_graph(staged)
                if graph is not None:
                    return self._replay(graph, staged, int(src), out)
        self._check_open()
        self._check_out(out)
        user, internal = self._seeds(src)
        limit = self._depth_limit(depth_limit)
        with self._lock, self._cp.cuda.Device(self._device_id):
            self._check_open()
            self._serve_stop()
            if parents:
                self._prepare_parents()
            self._submit_init(internal[0] if internal.size == 1 else internal)
            self._submit_traversal(limit)
            if parents:
                self._launch("parents", self._parent_args)
            self._wait(int(user[0]), int(internal.size))
            levels = self._deliver(out)
            if not parents:
                return levels
            device = isinstance(out, str) or isinstance(out, self._cp.ndarray)
            found = self._parent_args[2]
            return levels, (found.copy() if device else found.get())

    def _check_open(self) -> None:
        super()._check_open()
        if self._void:
            raise EngineError(f"{self._void}; build a new engine to continue")

    def _check_out(self, out: Any) -> None:
        if isinstance(out, str):
            if out not in ("device", "view"):
                raise ArgumentError(f"out must be None, 'device', 'view' or an array, got {out!r}")
        elif isinstance(out, self._cp.ndarray):
            if out.dtype != np.int32 or out.shape != (self.n,):
                raise ArgumentError(f"out must be an int32 array of shape ({self.n},)")
        elif out is not None:
            self._check_host_out(out)

    def _launch(self, role: str, extra: tuple, cooperative: bool = False) -> None:
        """Start kernel ``role`` with the engine's arguments and ``extra``: through a launch
        prepared on first use, whose per-call arguments are rewritten in place."""
        from blest.runtime.launch import PreparedLaunch

        key = (role, len(extra))
        prepared = self._launches.get(key)
        if prepared is None:
            grid, shared_mem = self._launch_shape(role)
            prepared = self._launches[key] = PreparedLaunch(
                self._kernels[role], (grid,), (self.block_size,), self._common_args + extra,
                shared_mem=shared_mem, cooperative=cooperative)  # fmt: skip
        else:
            base = len(self._common_args)
            for i, arg in enumerate(extra):
                prepared.set(base + i, arg)
        prepared()

    def _traverse(self, internal: int, user: int, limit: int) -> None:
        self._submit_init(internal)
        self._submit_traversal(limit)
        self._wait(user)

    # The three phases of a call, separate so that benchmarks/profile_call.py can time each.
    def _submit_init(self, internal: Any) -> None:
        """Enqueue the init kernel for one internal seed (an int) or several (sorted, unique);
        the block launch only keeps the seed arguments (its traversal kernel initializes)."""
        if np.ndim(internal) == 0:
            args: tuple = (np.uint64(0), np.int32(1), np.int32(internal))
        else:
            seeds = np.asarray(internal, dtype=np.int32)
            k = seeds.size
            if self._seed_buffer is None or self._seed_buffer.size < k:
                self._seed_buffer = self._cp.empty(max(k, 1024), dtype=self._cp.int32)
            self._seed_buffer[:k].set(seeds)
            args = (self._seed_buffer, np.int32(k), np.int32(seeds[0]))
        if self.spec.launch == "block":
            self._block_seeds = args
        else:
            self._launch("init", args)

    def _prepare_parents(self) -> None:
        """Upload the in-adjacency (unless the variant holds it) and the parents buffer."""
        if self._parent_args is not None:
            return
        cp, prep = self._cp, self.prepared
        if self._in_csr is not None:  # the variant holds it already
            in_ptr, in_idx = self._in_csr
        else:
            need = 8 * (self.n + 1) + 4 * int(prep.graph.nnz) + 4 * self.n
            require_memory(need, self._device_id, prep.graph)
            in_ptr, in_idx = device_in_csr(cp, prep)
        self._parent_args = (in_ptr, in_idx, cp.empty(self.n, dtype=cp.int32))

    def _submit_traversal(self, limit: int) -> None:
        """Enqueue the traversal, and the pass to the user's ids, between the timing events."""
        start, stop = self._events
        if self.timing:
            start.record()
        self._enqueue_traversal(limit)
        if self._reorders:
            self._enqueue_deliver(self._own_dst.data.ptr, 0)
        if self.timing:
            stop.record()

    def _enqueue_traversal(self, limit: int, fused_ctl_out: int | None = None) -> None:
        """The traversal's launches (the block launch: its one kernel, which also initializes
        and writes the user's ids). ``fused_ctl_out`` (persistent variants, captured calls):
        the kernel also initializes from the call slot and delivers, the control block to that
        address."""
        rules = tuple(np.float64(x) for x in (self.eta, self.beta, self.alpha))
        if self.spec.launch == "block":
            self._launch("bfs", (*self._block_seeds, np.int32(limit)))
        elif self.spec.launch == "persistent":
            mode = FUSED_ONCE if fused_ctl_out is not None else 0
            extra = (np.int32(limit), *rules, np.uint32(self.small_queue),
                     np.uint64(fused_ctl_out or 0), np.int32(mode))  # fmt: skip
            self._launch("bfs", extra, cooperative=True)
        elif self.alpha > 0:
            raise ArgumentError(f"alpha > 0 needs a persistent variant, not {self.spec.name}")
        else:
            self._per_level_loop(limit, *rules[:2])

    def _wait(self, user: int, seeds: int = 1) -> None:
        """Wait for the traversal; void the engine if a grid barrier timed out."""
        self._state["ctl"].get(out=self._host_ctl)
        self._check_ctl(user, seeds)

    def _check_ctl(self, user: int, seeds: int, timed: bool | None = None) -> None:
        """After the wait: void the engine if a grid barrier timed out, else keep the call's
        timing events for :attr:`stats` (``timed``: whether the call recorded them; default
        ``self.timing``)."""
        if self._host_ctl[_ERROR]:
            self._void = (
                f"kernel {self.spec.name}: a grid barrier timed out (a block never arrived) and "
                "the result is void"
            )
            raise EngineError(f"{self._void}. Please report this with the graph and source.")
        if self.timing if timed is None else timed:
            self._last = (user, *self._events, seeds)
        else:
            self._last = (user, None, None, seeds)
        self.last_stats = None

    def _per_level_loop(self, limit: int, eta: np.float64, beta: np.float64) -> None:
        ctl = self._state["ctl"]
        level = 0
        while True:
            for _ in range(PER_LEVEL_BATCH):
                self._launch("stage1", (np.int32(level), np.int32(limit), eta, beta))
                if "stage2" in self._kernels:
                    self._launch("stage2", (np.int32(level),))
                level += 1
            ctl.get(out=self._host_ctl)
            if self._host_ctl[CTL["done"]]:
                return

    # ------------------------------------------------------------------ lifetime
    def _release(self) -> None:
        """Drop every device buffer, the pinned staging memory and the module."""
        try:
            self._serve_stop()  # before its buffers go
        except EngineError:
            pass
        self._close_runners()
        self._call_graphs = {}
        self._call_slot = self._slot = self._own_dst = self._spare = self._slot_words = None
        self._arrays = self._state = {}
        self._common_args = ()
        self._launches = {}
        self._user_levels = self._seed_buffer = self._parent_args = self._in_csr = None
        self._block_seeds = ()
        self._module = self._kernels = None
        self._host_levels = self._host_ctl = self._host_block = None
        self.prepared = None  # type: ignore[assignment]  (its BVSS may live on the GPU)
