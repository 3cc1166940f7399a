"""The GPU BFS engine: one prepared graph, one compiled variant, many calls.

``Engine(prepared, spec)`` uploads the prepared graph once (a :class:`~blest.graph.Graph` is
prepared first, its BVSS built on the GPU), compiles the variant through NVRTC (disk-cached)
and keeps the per-traversal buffers for reuse. ``bfs(src)`` returns int32 levels in the user's
ids, -1 for unreachable. The engine is composed of:

* a :class:`~blest.runtime.traversal.Traversal`: the variant's module
  (:class:`~blest.runtime.device_program.DeviceProgram`), buffers and the phases of a call;
* its call paths: a plain call (one source, no depth limit, no parents) is replayed from a CUDA
  graph captured at its first use (:class:`~blest.runtime.captured.CapturedCalls`; untimed calls
  of the persistent variants capture one fused kernel), or inside :meth:`Engine.serving` posted
  to a kernel that stays on the GPU (:class:`~blest.runtime.served.ServedCalls`); other calls
  launch kernel by kernel here;
* ``many``: the many-source work (:class:`~blest.runtime.many.ManySources`);
* ``probes``: a read-only view of the last call (:class:`~blest.runtime.probes.EngineProbes`).

Thread safety: calls on one Engine are serialized by a lock (they share device buffers); use one
Engine per thread. A kernel failure (a grid barrier that timed out) voids the engine for good.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any, cast

import numpy as np

from blest.codegen.contract import check_block_size
from blest.codegen.spec import VariantSpec
from blest.defaults import DEFAULT_ALPHA, DEFAULT_BETA, DEFAULT_ETA
from blest.errors import ArgumentError, EngineError
from blest.graph.core import Graph
from blest.graph.ordering import Permutation
from blest.graph.prepared import Prepared
from blest.inputs import BFSResult, OutSpec, Seed, Seeds, Sources
from blest.reference.betweenness import BatchRunner, brandes
from blest.reference.centrality import SourceSums, closeness_from_sums, harmonic_from_sums
from blest.runtime import arguments
from blest.runtime.arguments import Progress, RuleSetting, call_rules, check_idle_ms
from blest.runtime.bc_runner import BCRunners
from blest.runtime.captured import CapturedCalls, plain_id
from blest.runtime.engine_protocol import BFSEngine, BFSStats, Geometry
from blest.runtime.footprint import estimate_bytes, resident_bytes
from blest.runtime.many import ManySources, MultiSourceChoice
from blest.runtime.probes import EngineProbes
from blest.runtime.served import UNSERVED, ServedCalls
from blest.runtime.traversal import Traversal

__all__ = ["Engine", "BFSStats"]


class Engine(BFSEngine):
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
        Launch geometry (see :class:`~blest.runtime.engine_protocol.Geometry`); the block
        launch runs ``block_size`` threads in one block and ignores the rest.
    record_levels : bool
        Record when each level starts (global timer), for ``probes.level_times_ms()``.
    capture : bool
        Replay plain calls from a captured CUDA graph (default); False launches every kernel
        of every call separately (for comparisons).
    timing : bool
        Time each traversal by CUDA events for ``stats.traversal_ms`` (default). False saves
        each call the events' cost, and on the persistent variants runs a plain call's init,
        traversal and delivery in one kernel instead of three launches; ``traversal_ms`` is then
        NaN. An attribute too, which may be changed between calls, as may ``eta``, ``beta``,
        ``alpha`` and ``small_queue``.
    """

    device_name: str
    arch: str

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
        from blest.runtime.device import cupy_module, device_smem_limit, require_memory
        from blest.runtime.ss_buffers import block_plan

        geometry = Geometry(block_size, blocks_per_sm, grid_blocks, small_queue)
        device_id, self.arch, self.device_name = toolchain.require_gpu(device)
        cp = cupy_module()
        if spec is None:
            spec = VariantSpec(sigma=graph.sigma) if isinstance(graph, Prepared) else VariantSpec()
        check_block_size(spec, block_size)
        if spec.launch == "block":  # refuse a graph whose visited bitmap does not fit first
            block_plan(graph.n, device_smem_limit(cp, device_id), spec.cluster, self.arch)
        if isinstance(graph, Graph):
            if graph.n == 0:
                raise ArgumentError("the graph has no vertices")
            with cp.cuda.Device(device_id):
                require_memory(estimate_bytes(graph, spec), device_id, graph)
                graph = Prepared.from_graph(graph, spec.sigma, permutation, xp=cp)
        elif not isinstance(graph, Prepared):
            raise ArgumentError(
                f"an engine is built from a blest.graph.Prepared, got {type(graph).__name__}"
            )
        elif permutation is not None:
            raise ArgumentError("permutation applies to a Graph; a Prepared graph has its own")
        if spec.sigma != graph.sigma:
            raise ArgumentError(
                f"the variant has sigma={spec.sigma} but the graph was prepared at "
                f"sigma={graph.sigma}"
            )
        if graph.n == 0:
            raise ArgumentError("the graph has no vertices")
        if alpha and spec.launch == "per_level":  # as its kernels: no barrier to count at
            raise ArgumentError(f"alpha > 0 needs a persistent variant, not {spec.name}")
        rules = call_rules(eta, beta, alpha, 0, timing)  # checked before anything is built
        self.spec, self.prepared, self.n = spec, graph, graph.n
        self.graph, self.permutation = graph.graph, graph.permutation
        self._device_id = device_id
        self._lock = threading.RLock()  # engine methods may call bfs
        self._closed = False
        with cp.cuda.Device(device_id):
            require_memory(resident_bytes(graph, spec), device_id, graph.graph)
            tr = self._tr = Traversal(graph, spec, device_id, self.arch, geometry, record_levels)
        self._rules = rules._replace(small_queue=tr.small_queue)
        launched_only = not capture or spec.launch == "per_level"
        self._captured = None if launched_only else CapturedCalls(tr, fuse=False)
        persistent = spec.launch == "persistent" and not launched_only
        self._fused = CapturedCalls(tr, fuse=True) if persistent else None
        self._served = ServedCalls(tr)
        self._serving = False
        choice = MultiSourceChoice(None, rules.eta, tr.block_size)
        #: The many-source work (``bfs_many``, ``closeness``, ``harmonic``) of this engine.
        self.many = ManySources(graph, device_id, choice, self._sample_depth)
        #: The betweenness batch runners of this engine (:mod:`blest.runtime.bc_runner`).
        self.betweenness_runners = BCRunners(graph.graph, device_id, self._sample_depth)
        #: A read-only view of the last call's clocks and state.
        self.probes = EngineProbes(tr, self._served, self._lock)
        #: Calls with ``paths=True``: a pull runner (runtime/pull_runner.py), made at the first.
        self.pull: Any = None
        self._pull_last = False  # whether ``stats`` describes the pull runner's call

    # ------------------------------------------------------------------ settings
    #: The rules of the next calls, settable between calls (checked as at construction).
    eta = RuleSetting[float]()  #: the switching constant (>= 0, inf allowed)
    beta = RuleSetting[float]()  #: the return rule (>= 0; 0: off)
    alpha = RuleSetting[float]()  #: the edge-ratio guard (>= 0; 0: off; persistent variants)
    small_queue = RuleSetting[int]()  #: levels of at most this many VSSs in one block (0: never)
    timing = RuleSetting[bool]()  #: time calls by CUDA events (``stats.traversal_ms``)

    @property
    def block_size(self) -> int:
        """Threads per block of the traversal."""
        return self._tr.block_size

    @property
    def grid_size(self) -> int:
        """Blocks of the traversal (the block launch: one block or one cluster)."""
        return self._tr.grid_size

    # ------------------------------------------------------------------ traversal
    def bfs(
        self,
        src: Seeds,
        *,
        out: OutSpec = None,
        depth_limit: int | None = None,
        parents: bool = False,
        paths: bool = False,
    ) -> BFSResult:
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
        paths : bool
            Also return the number of shortest paths from the seeds to every vertex, last:
            :meth:`bfs_paths`.
        """
        if paths:
            return self.bfs_paths(src, out=out, depth_limit=depth_limit, parents=parents)
        self._pull_last = False
        tr, rules = self._tr, self._rules
        plain = depth_limit is None and not parents and plain_id(src, self.n)
        if plain and self._serving:
            with self._lock:
                if self._serving:
                    self._check_open()
                    levels = self._served.run(int(cast(int, src)), out, rules)
                    if levels is not UNSERVED:
                        return levels
        if plain:
            path = self._fused if not rules.timing and self._fused else self._captured
            if path is not None:
                with self._lock, tr.cp.cuda.Device(self._device_id):
                    self._check_open()
                    tr.check_out(out)
                    self._served.stop()
                    levels = path.run(int(cast(int, src)), out, rules)
                    if levels is not None:
                        return levels
        return self._launched(src, out, depth_limit, parents)

    def _launched(self, src: Any, out: Any, depth_limit: Any, parents: bool) -> Any:
        """A call launched kernel by kernel: any seeds, depth limit and parents."""
        tr, rules = self._tr, self._rules
        self._check_open()
        tr.check_out(out)
        user, internal = arguments.seeds(src, self.n, tr.new_of_old)
        limit = arguments.depth_limit(depth_limit)
        with self._lock, tr.cp.cuda.Device(self._device_id):
            self._check_open()
            self._served.stop()
            parent_args = tr.prepare_parents() if parents else None
            tr.submit_init(internal[0] if internal.size == 1 else internal)
            tr.submit_traversal(limit, rules)
            if parent_args is not None:
                tr.launch("parents", parent_args)
            tr.wait(int(user[0]), int(internal.size), rules.timing)
            levels = tr.deliver(out)
            if parent_args is None:
                return levels
            device = isinstance(out, str) or isinstance(out, tr.cp.ndarray)
            found = parent_args[2]
            return levels, (found.copy() if device else found.get())

    def bfs_paths(
        self,
        src: Seeds,
        *,
        out: OutSpec = None,
        depth_limit: int | None = None,
        parents: bool = False,
    ) -> BFSResult:
        """``(levels, counts)`` or, with ``parents``, ``(levels, parents, counts)``: levels as
        :meth:`bfs` gives them (``out`` too), a parent the first in-neighbour one level up
        (``in_csr`` order), and the number of shortest paths from the seeds to every vertex:
        int64, exact; float64 past int64, with a RuntimeWarning (docs/betweenness.md). Runs the
        pull family's kernel with counts (docs/variants.md), built at the first call in the form
        the graph's average in-degree picks; parents and counts are CuPy arrays where the
        levels go to the device."""
        from blest.runtime.pull_runner import PullRunner

        with self._lock, self._tr.cp.cuda.Device(self._device_id):
            self._check_open()
            self._served.stop()
            if self.pull is None:
                tr = self._tr
                self.pull = PullRunner(self.prepared, device=self._device_id,
                                       block_size=tr.block_size, in_csr=tr.in_csr)  # fmt: skip
            self.pull.timing = self._rules.timing
            self._pull_last = True
            return self.pull.bfs(src, out=out, depth_limit=depth_limit, parents=parents,
                                 paths=True)  # fmt: skip

    @property
    def stats(self) -> BFSStats:
        """Statistics of the last ``bfs`` call (read from the GPU on first access)."""
        with self._lock:
            return self.pull.stats if self._pull_last else self._tr.stats()

    @contextlib.contextmanager
    def serving(self, idle_ms: float = 20.0) -> Iterator[Engine]:
        """Serve plain calls (one source, no depth limit, no parents) from a kernel that stays
        on the GPU while the block runs: each call costs a few bus round trips beyond its
        traversal instead of a launch and a wait. The kernel holds the GPU's SMs meanwhile, so
        other GPU work may wait for the block's end, or for ``idle_ms`` without a call, after
        which the kernel ends and the next call starts it again. The persistent variants and
        the one-block launch only (the others run their calls as usual inside the block);
        ``stats.traversal_ms`` is NaN for served calls. The first ``serving()`` of a variant
        compiles its serving kernel (a second or two, then cached on disk). Yields the
        engine."""
        check_idle_ms(idle_ms)
        with self._lock:
            self._check_open()
            if self._serving:
                raise ArgumentError("this engine is serving already")
            with self._tr.cp.cuda.Device(self._device_id):
                served = self._served.load()
            if served:
                self._served.begin(idle_ms)
                self._serving = True
        if not served:  # no serving kernel: calls run as usual
            yield self
            return
        try:
            yield self
        finally:
            with self._lock:
                self._serving = False
                self._served.end()

    @property
    def source(self) -> str:
        """The generated CUDA C++ of this engine's variant, for this graph: an eager variant
        holds only the claims that the graph's ordering uses (``contract.claims_form``)."""
        return self._tr.program.program.source

    @property
    def serving_source(self) -> str | None:
        """The generated CUDA C++ of this engine's serving kernel (:meth:`serving`), or None
        for variants without one (neither persistent nor one block)."""
        return self._served.source

    @property
    def ptx(self) -> str:
        """PTX of the variant for this engine's GPU architecture."""
        from blest.codegen.compile import compile_source

        arch = self.arch.replace("sm_", "compute_")
        return compile_source(self.source, arch=arch, target="ptx").decode()

    # ------------------------------------------------------------------ many sources
    def bfs_many(
        self, sources: Sources, *, out: np.ndarray | None = None, progress: Progress | None = None
    ) -> np.ndarray:
        """Levels from every source: an int32 array of shape ``(len(sources), n)``, row i the
        levels from ``sources[i]`` (user ids; repeats allowed), -1 for unreachable vertices.
        ``out`` may be an int32 array of that shape (a ``numpy.memmap`` for results larger than
        memory); ``progress(done, total)`` is called as batches of sources finish."""
        self._check_open()
        users = arguments.bfs_many_sources(sources, self.n)
        result = arguments.many_out(out, users.size, self.n)
        with self._lock:
            self._served.stop()
            return self.many.bfs_many(users, result, progress)

    def source_sums(
        self,
        sources: Sources | None = None,
        *,
        progress: Progress | None = None,
        pendant: bool = False,
    ) -> SourceSums:
        """Per vertex of ``sources`` (default: every vertex): the exact sum of distances *to*
        it, the number of vertices that reach it (itself included) and the harmonic sum; with
        ``pendant``, also the pendant harmonic sum (:mod:`blest.reference.centrality`)."""
        self._check_open()
        users = arguments.centrality_sources(sources, self.n)
        with self._lock:
            self._served.stop()
            return self.many.source_sums(users, progress, pendant=pendant)

    def closeness(
        self,
        sources: Sources | None = None,
        *,
        wf_improved: bool = True,
        progress: Progress | None = None,
    ) -> np.ndarray:
        """Closeness centrality of ``sources`` (default: every vertex, in id order), float64,
        exactly as NetworkX's ``closeness_centrality`` defines it (see docs/design.md)."""
        sums = self.source_sums(sources, progress=progress)
        return closeness_from_sums(sums, self.n, wf_improved=wf_improved)

    def harmonic(
        self, sources: Sources | None = None, *, progress: Progress | None = None
    ) -> np.ndarray:
        """Harmonic centrality of ``sources`` (default: every vertex), float64."""
        return harmonic_from_sums(self.source_sums(sources, progress=progress))

    def betweenness(
        self,
        *,
        k: int | None = None,
        seed: Seed = None,
        sources: Sources | None = None,
        normalized: bool = True,
        endpoints: bool = False,
        edges: bool = False,
        progress: Progress | None = None,
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """Betweenness centrality as NetworkX defines it, its batches on this GPU (see
        :func:`blest.betweenness` and docs/betweenness.md)."""
        self._check_open()
        return brandes(self.graph, k=k, seed=seed, sources=sources, normalized=normalized,
                       endpoints=endpoints, edges=edges, make_runner=self.betweenness_runner,
                       progress=progress)  # fmt: skip

    def betweenness_runner(self, *, edges: bool = False, endpoints: bool = False) -> BatchRunner:
        """The batch runner of betweenness on this GPU (edge scores: the CPU's)."""
        self._check_open()
        with self._lock:
            self._served.stop()  # a serving kernel would hold the SMs
            return self.betweenness_runners.runner(edges=edges, endpoints=endpoints)

    def _sample_depth(self) -> int:
        """The BFS depth from a highest-out-degree vertex (the default multi-source form's)."""
        self.bfs(int(np.argmax(self.graph.out_degree)), out="device")
        return int(self.stats.depth)

    # ------------------------------------------------------------------ lifetime
    def _check_open(self) -> None:
        if self._closed:
            raise EngineError("this Engine is closed")
        self._tr.check_void()

    def close(self) -> None:
        """Release what the engine holds; further calls raise :class:`EngineError`."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._serving = False
            self._served.close()
            self.many.close()
            self.betweenness_runners.close()
            if self.pull is not None:
                self.pull.close()
            for path in (self._captured, self._fused):
                if path is not None:
                    path.close()
            self._tr.close()
            self.prepared = None  # type: ignore[assignment]  # its BVSS may live on the GPU

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = " closed" if self._closed else ""
        return f"<blest.Engine {self.spec.name} n={self.n} on {self.device_name}{state}>"
