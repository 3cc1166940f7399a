"""Tuning the multi-source kernels for the all-sources workload (closeness, harmonic).

A candidate is an :class:`MSSpec` (sigma, kappa, form) with eta and a block size. Each is timed
on the same sample of sources: windows of consecutive internal ids, as the full run takes them
(consecutive ids are close in the graph's ordering, so a batch's BFSs share frontiers). The
score is seconds per source; the search runs within a budget, the most promising candidates
first (the block form leads only on deep graphs whose real run fills every SM with batches),
stops a candidate once it is clearly slower than the best so far, and refines eta on the best
few.

Where the dense form takes the graph (every source at once, :mod:`blest.codegen.densespec`),
:func:`search_dense` times its variants on whole runs; the tuner keeps it for the sums of every
vertex when its run beats the batched pick's seconds per source times n.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from blest.codegen.densespec import DenseSpec, dense_variants
from blest.codegen.msspec import MSSpec, is_ms_variant, queue_smem_bytes, smem_bytes
from blest.defaults import DEFAULT_BLOCK_SIZE, DEFAULT_ETA, KAPPAS, SOURCE_SEED
from blest.graph.prepared import Prepared
from blest.tuning.timing import rate_until

__all__ = [
    "MS_ETA_GRID",
    "MSCandidate",
    "MSTimed",
    "sample_sources",
    "ms_candidates",
    "time_candidate",
    "search_multi_source",
    "search_dense",
    "search_every_vertex",
    "time_dense",
    "DenseTimed",
    "EveryVertexPick",
]

#: eta values tried in refinement (0: never bottom-up).
MS_ETA_GRID = (0.0, 1.0, 4.0, 16.0, 64.0)
#: Block sizes of the block form tried in the coarse pass.
MS_BLOCKS = (1024, 256)
#: Shared memory the search assumes a block can have for the smem form (Hopper: 227 KiB, less
#: what the kernel declares statically); a smaller GPU refuses the candidate at run time.
SMEM_BYTES = 223 * 1024
#: kappa in the order the coarse pass tries it (spread out, so a short budget sees the range).
KAPPA_ORDER = (64, 256, 512, 128, 32)
#: Bitmap layouts in the order the coarse pass tries them (vertex-major first: its bottom-up
#: pulls read a vertex's words in one sector).
LAYOUT_ORDER = ("vertex", "chunk")
#: The queue form's kappa and block sizes, in the order the coarse pass tries them.
QUEUE_KAPPA_ORDER = (2, 1, 4, 8, 16, 32)
QUEUE_BLOCKS = (256, 128, 1024)
#: Block sizes of the dense form: every variant at the first, the fastest at the others.
DENSE_BLOCKS = (512, 1024, 256)
#: Share of the budget the dense form's variants get where it takes the graph.
DENSE_BUDGET_SHARE = 0.2


@dataclass(frozen=True)
class MSCandidate:
    spec: MSSpec
    eta: float = DEFAULT_ETA
    block_size: int = DEFAULT_BLOCK_SIZE

    @property
    def label(self) -> str:
        return f"{self.spec.name} eta={self.eta:g} b{self.block_size}"

    def to_dict(self) -> dict[str, Any]:
        return {"spec": self.spec.to_dict(), "eta": self.eta, "block_size": self.block_size}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> MSCandidate:
        return cls(MSSpec.from_dict(d["spec"]), float(d["eta"]), int(d["block_size"]))


@dataclass
class MSTimed:
    candidate: MSCandidate
    seconds_per_source: float | None = None
    error: str | None = None
    stage: str = "coarse"

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.candidate.to_dict(),
            "label": self.candidate.label,
            "stage": self.stage,
            "us_per_source": None
            if self.seconds_per_source is None
            else self.seconds_per_source * 1e6,
            "error": self.error,
        }


def _per_source(r: MSTimed) -> float:
    """The seconds per source of a candidate that ran (only those are ranked)."""
    assert r.seconds_per_source is not None
    return r.seconds_per_source


def sample_sources(n: int, count: int, windows: int = 8, seed: int = SOURCE_SEED) -> np.ndarray:
    """``count`` internal ids (all of them when n <= count): ``windows`` runs of consecutive
    ids starting at seeded random places, in increasing order."""
    if n <= count:
        return np.arange(n, dtype=np.int32)
    rng = np.random.default_rng(seed)
    per = max(1, count // windows)
    starts = np.sort(rng.choice(n - per + 1, size=windows, replace=False))
    ids = np.unique(np.concatenate([np.arange(s, s + per) for s in starts]))
    return ids.astype(np.int32)


def ms_candidates(
    sigmas: Sequence[int],
    depth: int,
    kappas: Sequence[int] = KAPPAS,
    *,
    workload: int | None = None,
    sms: int | None = None,
    n: int | None = None,
) -> list[MSCandidate]:
    """The coarse pass, most promising first.

    Deep graphs (depth >= 64) try the queue form first where a batch's visited bits fit in a
    block's shared memory, and the CUDA-core out-arc expansion before the BVSS ones; shallow
    graphs the reverse, and the queue form last. The grid form leads, unless the graph is deep
    and the ``workload`` (the sources of the real run) holds enough batches of 64 to give each
    of the ``sms`` multiprocessors two. Small graphs (``n`` vertices whose batch state fits in a
    block's shared memory) try the smem form first.
    """
    deep = depth >= 64
    block_first = deep and workload is not None and sms is not None and workload >= 128 * sms
    forms = ("block", "grid") if block_first else ("grid", "block")
    expands = ("csr", "shuffle", "mma") if deep else ("shuffle", "mma", "csr")
    queue = []
    if n is not None:
        for kappa in QUEUE_KAPPA_ORDER:
            if queue_smem_bytes(kappa, n) <= SMEM_BYTES:
                for block in QUEUE_BLOCKS if deep else QUEUE_BLOCKS[:1]:
                    queue.append(MSCandidate(MSSpec(sigmas[0], kappa, "queue", "csr"), 0.0, block))
    out = list(queue) if deep else []
    if n is not None:
        for kappa in [k for k in KAPPA_ORDER if k in kappas]:
            if (
                is_ms_variant(sigmas[0], kappa, "smem", "csr")
                and smem_bytes(kappa, n) <= SMEM_BYTES
            ):
                for block in MS_BLOCKS:
                    out.append(MSCandidate(MSSpec(sigmas[0], kappa, "smem", "csr"), 0.0, block))
    for form in forms:
        blocks = MS_BLOCKS if form == "block" else (DEFAULT_BLOCK_SIZE,)
        for expand in expands:
            for kappa in [k for k in KAPPA_ORDER if k in kappas]:
                for sigma in sigmas[:1] if expand == "csr" else sigmas:  # csr reads no BVSS
                    for layout in LAYOUT_ORDER:
                        if not is_ms_variant(sigma, kappa, form, expand, layout):
                            continue
                        for block in blocks:
                            spec = MSSpec(sigma, kappa, form, expand, layout)
                            out.append(MSCandidate(spec, DEFAULT_ETA, block))
    return out if deep else out + queue


def time_candidate(
    prepared: Prepared, c: MSCandidate, sources: np.ndarray, limit_s: float | None = None
) -> float:
    """Seconds per source of one warm run over ``sources`` (internal ids) on the GPU. With
    ``limit_s``, the run stops after the first launch that ends past it, and the rate so far
    is returned (launches cover whole batches, so the estimate is fair)."""
    from blest.runtime.ms_runner import MSRunner

    runner = MSRunner(prepared, c.spec, eta=c.eta, block_size=c.block_size)
    try:
        runner.run(sources[:1])  # module load and first-launch costs, off the clock
        return rate_until(lambda watch: runner.run(sources, progress=watch), limit_s)[0]
    finally:
        runner.close()


@dataclass
class MultiSourceSearch:
    """Coarse pass, then eta refinement of the best few, within ``budget_s``."""

    prepared: Callable[[int], Prepared]  # sigma -> prepared graph (cached by the caller)
    sources: np.ndarray
    budget_s: float
    progress: Callable[[str], None] = lambda msg: None
    results: list[MSTimed] = field(default_factory=list)
    _start: float = field(default_factory=time.perf_counter)

    def _left(self, share: float) -> bool:
        return time.perf_counter() - self._start < share * self.budget_s

    def time(self, c: MSCandidate, stage: str) -> None:
        if any(r.candidate == c for r in self.results):
            return
        self.progress(f"timing {stage} {len(self.results) + 1}: {c.label}")
        best = self.best(1)
        limit = None if not best else max(0.2, 3.0 * _per_source(best[0]) * self.sources.size)
        try:
            secs = time_candidate(self.prepared(c.spec.sigma), c, self.sources, limit)
            self.results.append(MSTimed(c, secs, stage=stage))
        except Exception as exc:  # recorded: a candidate that cannot run is not fatal
            self.results.append(MSTimed(c, None, f"{type(exc).__name__}: {exc}"[:300], stage))

    def best(self, k: int) -> list[MSTimed]:
        ok = [r for r in self.results if r.seconds_per_source is not None]
        return sorted(ok, key=_per_source)[:k]

    def run(self, coarse: Sequence[MSCandidate]) -> MSTimed:
        precompile([c.spec for c in coarse], self.progress)
        for i, c in enumerate(coarse):
            if i and not self._left(0.7):
                break
            self.time(c, "coarse")
        for r in self.best(3):
            if r.candidate.spec.form == "queue":
                continue  # every level goes top-down: eta changes nothing
            for eta in MS_ETA_GRID:
                if self._left(1.0):
                    self.time(replace(r.candidate, eta=eta), "eta")
        best = self.best(1)
        if not best:
            raise RuntimeError("no multi-source candidate ran; see the timing table")
        return best[0]


@dataclass
class DenseTimed:
    """One dense candidate: its spec and block size, and the seconds of a whole run."""

    spec: DenseSpec
    block_size: int
    seconds: float | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "spec": self.spec.to_dict(),
            "block_size": self.block_size,
            "label": f"{self.spec.name} b{self.block_size}",
            "seconds": self.seconds,
            "error": self.error,
        }


def _seconds(t: DenseTimed) -> float:
    """The seconds of a dense candidate that ran (only those are ranked)."""
    assert t.seconds is not None
    return t.seconds


def time_dense(prepared: Prepared, spec: DenseSpec, block_size: int, repeats: int = 3) -> float:
    """Seconds of the fastest of ``repeats`` warm runs of the dense form over every source."""
    from blest.runtime.dense_runner import DenseRunner

    runner = DenseRunner(prepared, spec, block_size=block_size)
    try:
        runner.sums()  # module load and first-launch costs, off the clock
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            runner.sums()
            best = min(best, time.perf_counter() - t0)
        return best
    finally:
        runner.close()


def search_dense(
    prepared: Prepared, budget_s: float, progress: Callable[[str], None] | None = None
) -> list[DenseTimed]:
    """Every dense variant at DENSE_BLOCKS[0] threads, then the fastest at the other block
    sizes, within ``budget_s``; the table, fastest first (errors last)."""
    say = progress or (lambda m: None)
    start = time.perf_counter()
    specs = list(dense_variants())
    precompile(specs, say)
    table: list[DenseTimed] = []

    def run(spec: DenseSpec, block: int) -> None:
        say(f"timing dense {len(table) + 1}: {spec.name} b{block}")
        try:
            table.append(DenseTimed(spec, block, time_dense(prepared, spec, block)))
        except Exception as exc:  # recorded: a candidate that cannot run is not fatal
            table.append(DenseTimed(spec, block, None, f"{type(exc).__name__}: {exc}"[:300]))

    for spec in specs:
        if table and time.perf_counter() - start > budget_s:
            break
        run(spec, DENSE_BLOCKS[0])
    ok = sorted((t for t in table if t.seconds is not None), key=_seconds)
    for block in DENSE_BLOCKS[1:]:
        if ok and time.perf_counter() - start < budget_s:
            run(ok[0].spec, block)
    return sorted(table, key=lambda t: (t.seconds is None, t.seconds or 0.0))


def precompile(specs: Sequence[Any], progress: Callable[[str], None]) -> None:
    """Compile every variant up front, in parallel (disk-cached): the budget is for timing."""
    from blest.codegen.compile import compile_many
    from blest.codegen.toolchain import require_gpu

    unique = list(dict.fromkeys(specs))
    progress(f"compiling {len(unique)} multi-source variants")
    compile_many(unique, arch=require_gpu(None)[1])


def search_multi_source(
    prepared: Callable[[int], Prepared],
    sigmas: Sequence[int],
    depth: int,
    budget_s: float,
    sample: int = 4096,
    progress: Callable[[str], None] | None = None,
    workload: int | None = None,
    sources: np.ndarray | None = None,
) -> tuple[MSTimed, list[MSTimed]]:
    """The fastest candidate per source and the whole table. ``workload``: the number of
    sources the real run will have (default: every vertex, as closeness has); ``sources``:
    the internal ids to time on (default: ``sample`` of them, see :func:`sample_sources`)."""
    from blest.codegen.toolchain import require_gpu

    n = prepared(sigmas[0]).n
    if sources is None:
        sources = sample_sources(n, sample)
    sources = np.sort(np.asarray(sources, dtype=np.int32))
    search = MultiSourceSearch(prepared, sources, budget_s, progress or (lambda m: None))
    sms = _multiprocessors(require_gpu(None)[0])
    total = n if workload is None else workload
    best = search.run(ms_candidates(sigmas, depth, workload=total, sms=sms, n=n))
    return best, search.results


@dataclass
class EveryVertexPick:
    """What runs the sums of every vertex: the batched pick, and the dense form's choice
    (``dense``: {spec, block_size}, or None where the batched kernel won; absent from
    :meth:`multi_source` where the dense form was not timed)."""

    best: MSTimed
    table: list[MSTimed]
    dense_table: list[DenseTimed] | None = None
    dense: dict[str, Any] | None = None

    def multi_source(self) -> dict[str, Any]:
        """The config's ``multi_source`` section."""
        out = self.best.candidate.to_dict()
        if self.dense_table is not None:
            out["dense"] = self.dense
        return out

    def summary(self, n: int) -> str:
        batched = f"batched {_per_source(self.best) * n * 1e3:.3f} ms (estimated)"
        if self.dense_table is None:
            return f"every vertex: {batched}; the dense form does not take this graph"
        win = self.dense_table[0] if self.dense_table else None
        if win is None or win.seconds is None:
            return f"every vertex: {batched}; the dense form failed"
        return f"every vertex: {batched}, dense {win.seconds * 1e3:.3f} ms ({win.spec.name})"


def search_every_vertex(
    prepared: Callable[[int], Prepared],
    sigmas: Sequence[int],
    depth: int,
    budget_s: float,
    *,
    progress: Callable[[str], None] | None = None,
    sample: int = 4096,
) -> EveryVertexPick:
    """The batched search (:func:`search_multi_source`) and, where the dense form is worth it
    (:func:`~blest.runtime.many.dense_takes`), the dense variants (a fifth of the
    budget) on whole runs; the dense form is kept when its run beats the batched pick's rate
    times n."""
    import cupy

    from blest.runtime.many import dense_takes

    prep = prepared(sigmas[0])
    free, _ = cupy.cuda.runtime.memGetInfo()
    dense_ok = dense_takes(prep.n, int(prep.in_ptr[-1]), depth, free)
    share = DENSE_BUDGET_SHARE if dense_ok else 0.0
    best, table = search_multi_source(
        prepared, sigmas, depth, (1 - share) * budget_s, sample, progress=progress
    )
    pick = EveryVertexPick(best, table)
    if dense_ok:
        pick.dense_table = search_dense(prep, share * budget_s, progress)
        win = pick.dense_table[0] if pick.dense_table else None
        if win is not None and win.seconds is not None:
            if win.seconds < _per_source(best) * prep.n:
                pick.dense = {"spec": win.spec.to_dict(), "block_size": win.block_size}
    if progress is not None:
        progress(pick.summary(prep.n))
    return pick


def _multiprocessors(device: int) -> int:
    import cupy

    return int(cupy.cuda.Device(device).attributes["MultiProcessorCount"])
