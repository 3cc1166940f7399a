"""The GPU batch runner of betweenness centrality: one generated :class:`BCSpec` module.

:class:`BCRunner` is the batch runner of :mod:`blest.reference.betweenness` on one GPU:
``width`` (a power of two: the most sources a call takes), ``length`` (n) and
``run_batch(sources)``, which returns the call's node of the fixed reduction tree, the same
bits as :class:`~blest.reference.betweenness.CPURunner`. It uploads the graph in the user's ids
(out_csr and in_csr; one copy when undirected), keeps the batch slots (one for the grid form;
for the block form one per resident block, as many as fit in half of the free memory: "N slots
of X MiB", :meth:`BCRunner.memory_summary`) and a row of n per batch of a call (the width:
:func:`plan_width`). A call is one or a few launches of ``"bc"`` for its batches (a wave of the
slots at first, then about a quarter second each: progress and Ctrl-C are handled between
calls and launches), one of ``"combine"`` for the tree over their rows, and one copy of the
control block, the batches' flags and the node to the host. A batch whose counts reach 2^512
is flagged by the kernel (the CPU runner rescales such counts); its row is computed by the CPU
runner instead and the rows combined again, with a RuntimeWarning once per runner.
:class:`BCRunners` keeps an engine's choice of variant (a tuned config's, or
:func:`default_choice`) and builds the runner on first use.

What bounds a call. Per batch of kappa sources, with f the mean number of distinct levels at
which a vertex is reached by the batch's sources (1 when the sources are close, up to kappa):
every arc is walked f times by each phase (discover: 4-byte heads and masks; settle: the
in-neighbour's kappa levels, 4 bytes a lane, and the count of each lane at the level above,
8 bytes; backward: the out-neighbour's levels, counts and dependencies, 4 + 8 + 8 bytes a
matching lane), so about 24 bytes per arc per source reach L2 or memory when f is small, and
up to a 32-byte sector per lane when the sources share nothing. Every level costs three
barriers of the team (discover, settle, backward): block barriers in the block form, grid
barriers (a few microseconds each) in the grid form. The sums are sequential per lane, in arc
order: a vertex of degree d costs its lane d / 8 dependent rounds of loads, so a vertex of
``wide_degree`` or more arcs (2,048 in the grid form, 256 in the block form; tuned) is worked
on by a whole block instead, 4,096 (arc, source) terms a round (a hub of kron-21, about 10^5
arcs, then costs each level that settles it about a millisecond rather than tens).
Predictions for one H200 (3 to 4 TB/s):

* musae_facebook (22K vertices, 342K arcs, ~11 levels), every source: 22K x 342K arc-sources
  x ~24 bytes = ~180 GB, some 60 ms of traffic, in the block form (700 batches of 32 over
  every SM; 33 block barriers a batch); twitch_FR (6.5K, 225K): ~35 GB, ~12 ms; wiki_chameleon
  (2.3K, 63K): ~3.4 GB, ~1 ms, but only 72 batches of 32 (kappa 8: 285): latency-bound;
* luxembourg_osm (115K, 239K, ~1,000 levels): ~660 GB in the block form, 0.2 s of traffic, and
  per batch some 3,000 block barriers and level latencies of a few microseconds each: the
  slots (several hundred blocks at once) hide them;
* kron-21 (2.1M, 63.5M, ~7 levels), k = 100: four batches in the grid form, each ~7 x 3 grid
  barriers and ~60 GB (f near 3, a lane's level read on every arc), plus the hubs' chunks:
  0.1 to 0.3 s.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from blest.codegen.bc_render import bc_program
from blest.codegen.bcspec import (
    BC_SLOT_WORDS,
    BCSpec,
    queue_shared_bytes,
    slot_bytes,
    wide_vertices,
)
from blest.codegen.contract import CTL, CTL_WORDS
from blest.errors import ArgumentError, EngineError, GPUUnavailableError
from blest.reference.betweenness import BatchRunner, CPURunner, run_range
from blest.reference.treesum import combine
from blest.runtime.device import (
    cupy_module,
    device_smem_limit,
    format_bytes,
    pinned_array,
    require_memory,
)
from blest.runtime.device_program import DeviceProgram, LaunchShape

__all__ = [
    "BCChoice",
    "BCRunner",
    "BCRunners",
    "DEEP_LEVELS",
    "GRID_ARCS",
    "QUEUE_MAX_DEGREE",
    "MAX_WIDTH",
    "WIDE_DEGREE",
    "cpu_rows",
    "default_choice",
    "default_wide_degree",
    "largest_degree",
    "plan_width",
]

#: The widest call a runner takes (sources): enough batches for several hundred slots.
MAX_WIDTH = 1 << 15
#: Share of the free device memory a call's rows (one of n float64 per batch) may take.
ROWS_MEMORY_SHARE = 0.125
#: Batches of a call per slot the width aims at (so that blocks that finish early take more).
BATCHES_PER_SLOT = 4
#: Share of the free device memory the slots may take.
SLOT_MEMORY_SHARE = 0.5
#: Seconds one launch should take (progress and Ctrl-C are handled between launches).
LAUNCH_SECONDS = 0.25
#: Control words cleared between two launches of a call (the grid barrier's count, the block
#: form's batch counter); ERROR and DEPTH carry over.
_RESET = slice(min(CTL["barrier_count"], CTL["next_batch"]), CTL["barrier_count"] + 2)
#: Threads per block of the combination.
COMBINE_BLOCK = 256
#: The default variant: the queue form on graphs of this many BFS levels or more whose vertices
#: have at most QUEUE_MAX_DEGREE in- and out-arcs (a thread adds a vertex's terms alone), the
#: block form on other deep graphs and on those of fewer arcs than GRID_ARCS; the grid form
#: elsewhere (big shallow graphs).
DEEP_LEVELS = 64
GRID_ARCS = 1 << 22
QUEUE_MAX_DEGREE = 64
DEFAULT_KAPPA = 32
DEFAULT_BLOCK = 512
#: The queue form's default: small batches, many blocks per multiprocessor (ms_queue's).
QUEUE_KAPPA = 2
QUEUE_BLOCK = 256
#: Vertices of this many in- or out-arcs are worked on by a whole block (bcspec's "wide"): the
#: grid form's default (a level of a big graph holds many such vertices, which warps take in
#: parallel), and the block form's (where a level's few entries wait for the longest sum).
WIDE_DEGREE = 2048
BLOCK_WIDE_DEGREE = 256


@dataclass(frozen=True)
class BCChoice:
    """The betweenness kernel of an engine, its block size and its wide degree."""

    spec: BCSpec
    block_size: int = DEFAULT_BLOCK
    wide_degree: int = WIDE_DEGREE


def default_wide_degree(spec: BCSpec) -> int:
    """The wide degree a form takes unless told otherwise (the queue form ignores it)."""
    return WIDE_DEGREE if spec.form == "grid" else BLOCK_WIDE_DEGREE


def default_choice(n: int, arcs: int, depth: int, max_degree: int | None = None) -> BCChoice:
    """The variant an engine runs when no config chose one: the queue form at kappa 2 on deep
    graphs whose largest in- or out-degree (``max_degree``; None: unknown, taken as large) is at
    most QUEUE_MAX_DEGREE; else kappa 32, the block form on deep or small graphs, the grid form
    on big shallow ones."""
    deep = depth >= DEEP_LEVELS
    if deep and max_degree is not None and max_degree <= QUEUE_MAX_DEGREE:
        spec = BCSpec(QUEUE_KAPPA, "queue")
        return BCChoice(spec, QUEUE_BLOCK, default_wide_degree(spec))
    spec = BCSpec(DEFAULT_KAPPA, "grid" if not deep and arcs >= GRID_ARCS else "block")
    block = DEFAULT_BLOCK if spec.form == "block" else 1024
    return BCChoice(spec, block, default_wide_degree(spec))


def largest_degree(graph: Any) -> int:
    """The largest in- or out-degree of ``graph`` (0 without arcs)."""
    degrees = (np.asarray(d) for d in (graph.in_degree, graph.out_degree))
    return max((int(d.max()) for d in degrees if d.size), default=0)


def plan_width(slots: int, kappa: int, n: int = 0, rows_bytes: int | None = None) -> int:
    """The width of a runner of ``slots`` slots: the largest power of two up to
    BATCHES_PER_SLOT batches of kappa per slot, at most MAX_WIDTH, and (given n and
    ``rows_bytes``) whose rows, n float64 per batch, fit ``rows_bytes``; at least kappa."""
    most = max(kappa, min(MAX_WIDTH, slots * kappa * BATCHES_PER_SLOT))
    width = 1 << (most.bit_length() - 1)
    while width > kappa and rows_bytes is not None and 8 * n * (width // kappa) > rows_bytes:
        width >>= 1
    return width


def cpu_rows(
    graph: Any, sources: np.ndarray, kappa: int, batches: list[int], endpoints: bool
) -> dict[int, np.ndarray]:
    """The rows of the given batches of a call (batch b: its sources ``[b * kappa, (b + 1) *
    kappa)``), computed by the CPU runner: each its batch's node of the tree."""
    cpu = CPURunner(graph, endpoints=endpoints)
    rows = {}
    for b in batches:
        part = np.asarray(sources[b * kappa : (b + 1) * kappa], dtype=np.int64)
        rows[b] = combine(run_range(cpu, part, 0, part.size), part.size)
    return rows


class BCRunner:
    """Betweenness batches of one :class:`BCSpec` on one GPU (see the module docstring).
    ``endpoints`` is the runner's own; :meth:`run_batch` takes another per call."""

    def __init__(
        self,
        graph: Any,
        spec: BCSpec,
        *,
        device: int | None = None,
        block_size: int = DEFAULT_BLOCK,
        blocks_per_sm: int | None = None,
        max_slots: int | None = None,
        endpoints: bool = False,
        wide_degree: int | None = None,
        vis_smem: bool | None = None,
    ) -> None:
        from blest.codegen import toolchain

        if block_size % 32 or not 32 <= block_size <= 1024:
            raise ArgumentError(
                f"block_size must be a multiple of 32 in [32, 1024], got {block_size}"
            )
        if int(graph.n) < 1:
            raise ArgumentError("the graph has no vertices")
        self.graph, self.spec, self.block_size = graph, spec, int(block_size)
        self.endpoints = bool(endpoints)
        self.n = self.length = int(graph.n)
        wide = default_wide_degree(spec) if wide_degree is None else wide_degree
        self.wide_degree = max(0, int(wide))
        queue = spec.form == "queue"  # no wide list: a thread adds a vertex's terms alone
        self.wide = (
            0 if queue else wide_vertices(graph.in_degree, graph.out_degree, self.wide_degree)
        )
        self.wide_cap = max(1, self.wide * spec.kappa)
        self.vis_smem = False
        self.device_id, self.arch, self.device_name = toolchain.require_gpu(device)
        self._warned = self._void = False
        self.last_depth = 0
        cp = self._cp = cupy_module()
        with cp.cuda.Device(self.device_id):
            self._upload(graph)
            self._program = DeviceProgram(bc_program(spec), self.device_id, self.arch)
            self._plan(blocks_per_sm, max_slots, vis_smem)
            self._allocate()

    # ------------------------------------------------------------------ set-up
    def _upload(self, graph: Any) -> None:
        cp = self._cp
        out_ptr = cp.asarray(np.asarray(graph.out_ptr, dtype=np.int64))
        out_idx = cp.asarray(np.asarray(graph.out_idx, dtype=np.int32))
        if out_idx.size == 0:
            out_idx = cp.zeros(1, dtype=cp.int32)  # kernels need a valid pointer
        if graph.directed:
            in_ptr = cp.asarray(np.asarray(graph.in_ptr, dtype=np.int64))
            in_idx = cp.asarray(np.asarray(graph.in_idx, dtype=np.int32))
            if in_idx.size == 0:
                in_idx = cp.zeros(1, dtype=cp.int32)
        else:  # in_csr is out_csr
            in_ptr, in_idx = out_ptr, out_idx
        self._graph = {"out_ptr": out_ptr, "out_idx": out_idx, "in_ptr": in_ptr,
                       "in_idx": in_idx, "n": np.int32(self.n),
                       "wide_degree": np.int64(self.wide_degree)}  # fmt: skip

    def _plan(
        self, blocks_per_sm: int | None, max_slots: int | None, vis_smem: bool | None
    ) -> None:
        """Slots, the launch's blocks, the width and the rows; the queue form's visited bits
        in shared memory where a block can have them (``vis_smem`` None), or as told."""
        cp, spec = self._cp, self.spec
        shared = self._program.program.shared_bytes(self.n)
        if spec.form == "queue":
            fits = shared <= device_smem_limit(cp, self.device_id)
            if vis_smem and not fits:
                raise ArgumentError(
                    f"{spec.name}: the visited bits of {self.n:,} vertices do not fit a block's "
                    "shared memory here"
                )
            self.vis_smem = fits if vis_smem is None else bool(vis_smem)
            shared = queue_shared_bytes(spec.kappa, self.n, self.vis_smem)
        self.per_slot = slot_bytes(spec, self.n, self.wide)
        per_sm = self._program.occupancy("bc", self.block_size, shared)
        if blocks_per_sm is not None:
            per_sm = min(per_sm, int(blocks_per_sm))
        blocks = per_sm * int(cp.cuda.Device(self.device_id).attributes["MultiProcessorCount"])
        if spec.form == "grid":  # every block co-resident: a cooperative launch
            self.grid, self.slots = blocks, 1
        else:
            free, _ = cp.cuda.runtime.memGetInfo()
            fit = int(SLOT_MEMORY_SHARE * free) // self.per_slot
            self.slots = self.grid = max(1, min(blocks, fit, max_slots or blocks))
        if blocks < 1:
            raise GPUUnavailableError(f"{spec.name} cannot run {self.block_size} threads here")
        free, _ = cp.cuda.runtime.memGetInfo()
        rows = int(ROWS_MEMORY_SHARE * free)
        self.width = plan_width(self.slots, spec.kappa, self.n, rows)
        self.max_rows = max(1, self.width // spec.kappa)
        self.shared = shared

    def _allocate(self) -> None:
        cp, spec, n, slots = self._cp, self.spec, self.n, self.slots
        rows_bytes = 8 * self.max_rows * n
        require_memory(slots * self.per_slot + rows_bytes + 8 * n, self.device_id, self.graph)
        pairs = slots * n * spec.kappa
        queue = spec.form == "queue"  # no next masks, no wide list
        # What a call returns, fetched in one copy: the control block and the batches' flags
        # (u32, padded to u64), then the node.
        self._head = -(-(CTL_WORDS + self.max_rows) // 2)
        self._out = cp.zeros(self._head + n, dtype=cp.uint64)
        self._host = pinned_array(cp, self._head + n, np.uint64)
        status = self._out[: self._head].view(cp.uint32)
        self._ctl, self._flags = status[:CTL_WORDS], status[CTL_WORDS : CTL_WORDS + self.max_rows]
        self._rows = cp.empty(self.max_rows * n, dtype=cp.float64)
        self._sources = cp.zeros(self.width, dtype=cp.int32)
        self._host_ctl = pinned_array(cp, CTL_WORDS, np.uint32)
        # Batches a launch takes at first: a wave of the slots (the grid form: one); then what
        # fits LAUNCH_SECONDS.
        self._step = self.slots
        state = {
            "level": cp.full(pairs, -1, dtype=cp.int32),
            "sigma": cp.empty(pairs, dtype=cp.float64),
            "delta": cp.empty(pairs, dtype=cp.float64),
            "visited": cp.zeros(slots * n, dtype=cp.uint32),
            "next": cp.zeros(1 if queue else slots * n, dtype=cp.uint32),
            "queue": cp.empty(2 * pairs, dtype=cp.int32),
            "qoff": cp.empty(slots * 2 * (n + 2), dtype=cp.int64),
            "wide": cp.empty(slots * self.wide_cap, dtype=cp.int64),
            "wide_cap": np.int64(self.wide_cap),
            "slot_ctl": cp.zeros(slots * BC_SLOT_WORDS, dtype=cp.uint64),
            "ctl": self._ctl,
            "vis_smem": np.int32(self.vis_smem),
        }
        run = {
            "sources": self._sources,
            "n_sources": np.int32(0),
            "batch_first": np.int32(0),
            "batch_last": np.int32(0),
            "rows": self._rows,
            "flags": self._flags,
            "node": self._out[self._head :].view(cp.float64),
            "endpoints": np.int32(self.endpoints),
        }
        self._program.bind({**self._graph, **state, **run})
        self._program.shapes["bc"] = LaunchShape(
            self.grid, self.block_size, self.shared, self.spec.form == "grid"
        )
        sms = cp.cuda.Device(self.device_id).attributes["MultiProcessorCount"]
        combine_grid = max(1, min(-(-n // COMBINE_BLOCK), 8 * int(sms)))
        self._program.shapes["combine"] = LaunchShape(combine_grid, COMBINE_BLOCK)

    # ------------------------------------------------------------------ running
    def run_batch(self, sources: Any, *, endpoints: bool | None = None) -> np.ndarray:
        """The tree node of a call: the user ids at 2^j <= width consecutive, aligned source
        positions (see the module docstring); float64 of length n."""
        src = np.ascontiguousarray(sources, dtype=np.int64)
        k = int(src.size)
        if src.ndim != 1 or not 1 <= k <= self.width or (k & (k - 1)):
            raise ArgumentError(
                f"a call takes a 1-D array of 2^j <= {self.width} sources, got shape {src.shape}"
            )
        if src.min() < 0 or src.max() >= self.n:
            raise ArgumentError(f"sources must be vertex ids in 0 .. {self.n - 1}")
        if self._void:
            raise EngineError(f"this {self.spec.name} runner failed before; build another")
        ends = self.endpoints if endpoints is None else bool(endpoints)
        kappa = self.spec.kappa
        batches = -(-k // kappa)
        cp, program = self._cp, self._program
        with cp.cuda.Device(self.device_id):
            self._sources[:k].set(src.astype(np.int32))
            self._out[: self._head].fill(0)
            program.rebind(n_sources=np.int32(k), endpoints=np.int32(ends))
            self._launch_batches(batches)
            program.launch("combine")
            self._out.get(out=self._host)
            status = self._host[: self._head].view(np.uint32)
            self._check(status)
            self.last_depth = int(status[CTL["depth"]])
            flagged = np.flatnonzero(status[CTL_WORDS : CTL_WORDS + batches]).tolist()
            if flagged:
                self._redo_on_cpu(src, flagged, ends)
            return self._host[self._head :].view(np.float64).copy()

    def _launch_batches(self, batches: int) -> None:
        """Batches [0, batches) of the call, in launches of about LAUNCH_SECONDS each."""
        program, b = self._program, 0
        while b < batches:
            end = min(batches, b + self._step)
            program.rebind(batch_first=np.int32(b), batch_last=np.int32(end))
            t0 = time.perf_counter()
            program.launch("bc")
            if end < batches:  # timed: the next launches take what fits LAUNCH_SECONDS
                self._ctl.get(out=self._host_ctl)
                self._check(self._host_ctl)
                self._step = _next_step(self._step, end - b, time.perf_counter() - t0, self.slots)
                self._ctl[_RESET].fill(0)  # the barrier's count, the block form's batch counter
            b = end

    def _check(self, ctl: np.ndarray) -> None:
        if ctl[CTL["error"]]:
            self._void = True
            raise EngineError(
                f"kernel {self.spec.name}: a grid barrier timed out (a block never arrived); "
                "the result is void. Please report this with the graph."
            )

    def _redo_on_cpu(self, src: np.ndarray, flagged: list[int], endpoints: bool) -> None:
        """Rows of flagged batches from the CPU runner, then the combination again."""
        if not self._warned:
            self._warned = True
            warnings.warn(
                "betweenness: shortest-path counts reach 2^512 (the CPU rescales them); "
                "those batches run on the CPU",
                RuntimeWarning,
                stacklevel=4,
            )
        n, rows = self.n, cpu_rows(self.graph, src, self.spec.kappa, flagged, endpoints)
        for b, row in rows.items():
            self._rows[b * n : (b + 1) * n].set(row)
        self._program.launch("combine")
        self._out[self._head :].get(out=self._host[self._head :])

    def memory_summary(self) -> str:
        """How the runner holds its batches, e.g. ``264 slots of 20.1 MiB``."""
        slots = f"{self.slots} slot{'s' if self.slots > 1 else ''}"
        shared = ""
        if self.spec.form == "queue":
            where = "shared" if self.vis_smem else "global"
            shared = f", {format_bytes(self.shared)} shared memory, visited bits in {where} memory"
        return (
            f"{slots} of {format_bytes(self.per_slot)} ({self.spec.name}, {self.grid} blocks "
            f"of {self.block_size} threads{shared}); calls of up to {self.width} sources"
        )

    def close(self) -> None:
        self._program.close()
        self._graph = {}
        self._rows = self._out = self._sources = self._ctl = self._flags = None


def _next_step(step: int, done: int, seconds: float, slots: int) -> int:
    """Batches for the next launch, aiming at LAUNCH_SECONDS (whole waves of slots)."""
    if seconds <= 0:
        return 2 * step
    want = max(1, int(done * LAUNCH_SECONDS / seconds))
    want = min(want, 4 * max(step, 1))
    return max(slots, want // slots * slots)


class _Bound:
    """A runner's view with its own ``endpoints`` (what an engine hands to one call)."""

    def __init__(self, runner: BCRunner, endpoints: bool) -> None:
        self.runner, self.endpoints = runner, endpoints
        self.width, self.length = runner.width, runner.length

    def run_batch(self, sources: Any) -> np.ndarray:
        return self.runner.run_batch(sources, endpoints=self.endpoints)


class BCRunners:
    """The betweenness runners of one GPU engine: the choice of variant (a config's through
    :meth:`configure`, else :func:`default_choice` with a RuntimeWarning) and the runner, built
    on first use. ``depth_probe()`` returns the BFS depth from a sample source."""

    def __init__(self, graph: Any, device_id: int, depth_probe: Callable[[], int]) -> None:
        self.graph, self.device_id = graph, device_id
        self._probe = depth_probe
        self.choice: BCChoice | None = None
        self._runner: BCRunner | None = None

    def configure(
        self, spec: BCSpec, block_size: int = DEFAULT_BLOCK, wide_degree: int | None = None
    ) -> None:
        """Choose the variant (a tuned config does this); ``wide_degree`` None: the form's
        default."""
        self.close()
        wide = default_wide_degree(spec) if wide_degree is None else int(wide_degree)
        self.choice = BCChoice(spec, int(block_size), wide)

    def runner(self, *, edges: bool = False, endpoints: bool = False) -> BatchRunner:
        """A batch runner: the GPU's, or for edge scores the CPU runner."""
        if edges:
            return CPURunner(self.graph, edges=True, endpoints=endpoints)
        if self._runner is None:
            if self.choice is None:
                self.choice = self._default()
            c = self.choice
            self._runner = BCRunner(
                self.graph,
                c.spec,
                device=self.device_id,
                block_size=c.block_size,
                wide_degree=c.wide_degree,
            )
        return _Bound(self._runner, bool(endpoints))

    def _default(self) -> BCChoice:
        depth = int(self._probe())
        g = self.graph
        choice = default_choice(int(g.n), int(g.nnz), depth, largest_degree(g))
        warnings.warn(
            f"this engine was not tuned for betweenness: it runs {choice.spec.name} "
            f"(BFS depth {depth} from a sample source); blest-tune --workload betweenness "
            "tunes it",
            RuntimeWarning,
            stacklevel=5,
        )
        return choice

    def close(self) -> None:
        if self._runner is not None:
            self._runner.close()
            self._runner = None
