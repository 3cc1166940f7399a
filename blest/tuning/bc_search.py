"""Tuning the betweenness kernels (``blest-tune --workload betweenness``).

A candidate is a :class:`BCSpec` (kappa, form) and a block size. Each is timed on the same
sample of sources, run as the real computation runs them (in calls of the runner's width,
over windows of consecutive ids: :func:`blest.tuning.ms_search.sample_sources`), and scored in
seconds per source of the warm run. The queue form goes first on deep graphs of small degrees,
the block form on other deep graphs and on small ones, the grid form on big shallow ones
(:func:`blest.runtime.bc_runner.default_choice`); a candidate stops once it is clearly slower
than the best so far, and the search stays within its budget. The config records the pick in
its ``betweenness`` section, which :func:`blest.load_tuned` applies.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from blest.codegen.bcspec import BC_KAPPAS, BCSpec
from blest.defaults import DEFAULT_SIGMA
from blest.graph.core import Graph
from blest.tuning.ms_search import sample_sources
from blest.tuning.section_tuner import SectionPick, Start, tune_section
from blest.tuning.timing import rate_until
from blest.tuning.tuner import TuneOutcome

__all__ = [
    "BCCandidate",
    "BCTimed",
    "SAMPLE",
    "bc_candidates",
    "search_betweenness",
    "time_candidate",
    "tune_betweenness",
]

#: Most sources a candidate is timed on.
SAMPLE = 2048
#: Block sizes of each form, the first tried first.
BLOCKS = {"block": (512, 256, 1024), "grid": (1024, 512), "queue": (256, 512, 128)}
#: Kappas of the queue form, the first tried first (its default, then the neighbours).
QUEUE_KAPPA_ORDER = (2, 4, 1, 8)
#: A candidate stops once its rate is this many times the best's.
GIVE_UP = 3.0


#: Wide degrees the best candidate is tried at after the coarse pass.
WIDE_GRID = (64, 256, 1024, 2048, 8192)


@dataclass(frozen=True)
class BCCandidate:
    spec: BCSpec
    block_size: int
    wide_degree: int

    @property
    def label(self) -> str:
        return f"{self.spec.name} b{self.block_size} w{self.wide_degree}"

    def to_dict(self) -> dict[str, Any]:
        return {"spec": self.spec.to_dict(), "block_size": self.block_size,
                "wide_degree": self.wide_degree}  # fmt: skip


@dataclass
class BCTimed:
    candidate: BCCandidate
    seconds_per_source: float | None = None
    error: str | None = None
    sources: int = 0
    memory: str | None = None  # the runner's memory_summary()

    def to_dict(self) -> dict[str, Any]:
        rate = self.seconds_per_source
        return {
            **self.candidate.to_dict(),
            "label": self.candidate.label,
            "us_per_source": None if rate is None else rate * 1e6,
            "sources_timed": self.sources,
            "memory": self.memory,
            "error": self.error,
        }


def bc_candidates(
    n: int, arcs: int, depth: int, max_degree: int | None = None
) -> list[BCCandidate]:
    """The coarse pass, the most promising first: the default's form (see the module
    docstring; the queue form at kappa 2, 4, 1, 8, the others at 32, 16, 8), then the others
    (on deep graphs the queue form before the grid form, elsewhere last); each form at its
    default wide degree (:data:`WIDE_GRID` refines the best of the block and grid forms)."""
    from blest.runtime.bc_runner import DEEP_LEVELS, default_choice, default_wide_degree

    first = default_choice(n, arcs, depth, max_degree).spec.form
    rest = ("block", "queue", "grid") if depth >= DEEP_LEVELS else ("grid", "block", "queue")
    forms = (first, *(f for f in rest if f != first))
    out = []
    for form in forms:
        kappas = QUEUE_KAPPA_ORDER if form == "queue" else sorted(BC_KAPPAS, reverse=True)
        for block in BLOCKS[form]:
            for kappa in kappas:
                spec = BCSpec(kappa, form)
                out.append(BCCandidate(spec, block, default_wide_degree(spec)))
    return out


def time_candidate(
    graph: Graph, c: BCCandidate, sources: np.ndarray, limit_s: float | None = None
) -> tuple[float, int, str]:
    """(seconds per source, sources timed, the runner's memory summary) of one warm run over
    ``sources`` on the GPU. With ``limit_s``, the run stops after the first call that ends past
    it (the rate so far)."""
    from blest.reference.betweenness import run_range
    from blest.runtime.bc_runner import BCRunner

    runner = BCRunner(graph, c.spec, block_size=c.block_size, wide_degree=c.wide_degree)
    try:
        runner.run_batch(sources[:1])  # module load and first-launch costs, off the clock
        rate, reached = rate_until(
            lambda watch: run_range(runner, sources, 0, sources.size, watch), limit_s
        )
        return rate, reached, runner.memory_summary()
    finally:
        runner.close()


@dataclass
class _Search:
    graph: Graph
    sources: np.ndarray
    budget_s: float
    progress: Callable[[str], None]
    results: list[BCTimed] = field(default_factory=list)
    start: float = field(default_factory=time.perf_counter)

    def best(self) -> BCTimed | None:
        ok = [r for r in self.results if r.seconds_per_source is not None]
        return min(ok, key=lambda r: r.seconds_per_source) if ok else None  # type: ignore

    def time(self, c: BCCandidate) -> None:
        self.progress(f"timing betweenness {len(self.results) + 1}: {c.label}")
        best = self.best()
        limit = None
        if best is not None and best.seconds_per_source is not None:
            limit = max(0.2, GIVE_UP * best.seconds_per_source * self.sources.size)
        try:
            secs, count, memory = time_candidate(self.graph, c, self.sources, limit)
            self.results.append(BCTimed(c, secs, sources=count, memory=memory))
        except Exception as exc:  # recorded: a candidate that cannot run is not fatal
            self.results.append(BCTimed(c, None, f"{type(exc).__name__}: {exc}"[:300]))

    def _left(self, share: float) -> bool:
        return time.perf_counter() - self.start < share * self.budget_s

    def run(self, candidates: Sequence[BCCandidate]) -> BCTimed:
        for i, c in enumerate(candidates):
            if i and not self._left(0.8):
                break
            self.time(c)
        best = self.best()
        if best is None:
            raise RuntimeError("no betweenness candidate ran; see the timing table")
        lead = best.candidate
        refine = () if lead.spec.form == "queue" else WIDE_GRID  # the queue form has no wide
        for wide in refine:  # the wide degree of the leader, in the rest of the budget
            c = BCCandidate(lead.spec, lead.block_size, wide)
            if self._left(1.0) and all(r.candidate != c for r in self.results):
                self.time(c)
        return self.best() or best


def search_betweenness(
    graph: Graph,
    depth: int,
    budget_s: float,
    *,
    sample: int = SAMPLE,
    progress: Callable[[str], None] | None = None,
) -> tuple[BCTimed, list[BCTimed]]:
    """The fastest candidate per source and the whole table (the sample: ``sample`` sources
    in windows of consecutive ids, in increasing order)."""
    from blest.codegen.compile import compile_many
    from blest.codegen.toolchain import require_gpu

    say = progress or (lambda m: None)
    from blest.runtime.bc_runner import largest_degree

    candidates = bc_candidates(graph.n, graph.nnz, depth, max_degree=largest_degree(graph))
    specs = list(dict.fromkeys(c.spec for c in candidates))
    say(f"compiling {len(specs)} betweenness variants")
    compile_many(specs, arch=require_gpu(None)[1])
    sources = sample_sources(graph.n, sample).astype(np.int64)
    search = _Search(graph, sources, budget_s, say)
    return search.run(candidates), search.results


def tune_betweenness(
    graph: Graph,
    *,
    source: str | None,
    budget_s: float,
    sigmas: Sequence[int],
    orderings: Sequence[str] | None,
    progress: Callable[[str], None],
) -> TuneOutcome:
    """A :class:`~blest.tuning.tuner.TuneOutcome` for the betweenness workload: the graph
    prepared as for closeness, the single-source variant by the paper's rules, and the
    ``betweenness`` section from :func:`search_betweenness` (without a GPU: none, and
    engines take the default at run time)."""

    def search(start: Start, budget: float) -> SectionPick:
        best, table = search_betweenness(graph, start.depth, budget, progress=progress)
        return SectionPick(
            sigma=DEFAULT_SIGMA,
            section={"betweenness": best.candidate.to_dict()},
            tables={"bc_candidates": [t.to_dict() for t in table]},
        )

    return tune_section(graph, workload="betweenness", variant="betweenness", search=search,
                        source=source, budget_s=budget_s, sigmas=sigmas, orderings=orderings,
                        progress=progress)  # fmt: skip
