"""The timing harness and the pruned search, independent of how engines are made.

``make_engine(candidate)`` returns an object with ``bfs(src, out=...)``, ``stats.traversal_ms``,
writable ``eta`` and ``small_queue`` attributes and ``close()`` (a :class:`blest.Engine`, or a
fake in tests). Protocol (:mod:`blest.tuning.protocol`): one warm-up traversal, then every
source ``repeats`` times; traversal time from the engine's CUDA events; a candidate's score is
the median over the tuning sources, held-out figures are means.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from blest.tuning.space import (
    Candidate,
    eta_variants,
    per_level_variant,
    small_queue_variants,
)

__all__ = ["NOISE", "Timed", "measure", "Search", "relative"]

#: Differences under 3% are noise (the spread of repeated timings of one variant).
NOISE = 0.03
#: Fractions of the budget after which the coarse pass and the refinement stop.
COARSE_SHARE, REFINE_SHARE = 0.7, 0.9


@dataclass
class Timed:
    """One candidate's timings (ms per traversal, in source order) or the error it raised."""

    candidate: Candidate
    stage: str
    times_ms: list[float] = field(default_factory=list)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.times_ms)

    @property
    def median_ms(self) -> float:
        return statistics.median(self.times_ms) if self.ok else float("inf")

    @property
    def mean_ms(self) -> float:
        return statistics.fmean(self.times_ms) if self.ok else float("inf")

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.candidate.to_dict(),
            "label": self.candidate.label,
            "stage": self.stage,
            "median_ms": self.median_ms if self.ok else None,
            "mean_ms": self.mean_ms if self.ok else None,
            "times_ms": [round(t, 6) for t in self.times_ms],
            "error": self.error,
        }


def configure(engine: Any, c: Candidate, default_small_queue: int) -> None:
    """Set the runtime knobs of ``c`` on a live engine."""
    engine.eta = c.engine_eta
    engine.small_queue = default_small_queue if c.small_queue is None else int(c.small_queue)


def measure(engine: Any, sources: Sequence[int], repeats: int = 1) -> list[float]:
    """Traversal ms per run: one warm-up, then each source ``repeats`` times."""
    engine.bfs(int(sources[0]), out="device")
    times = []
    for s in sources:
        for _ in range(repeats):
            engine.bfs(int(s), out="device")
            times.append(float(engine.stats.traversal_ms))
    return times


def relative(a: float, b: float) -> str:
    """``a`` against ``b`` as a ratio, marked as noise under 3%."""
    if not (np.isfinite(a) and np.isfinite(b)) or b <= 0:
        return "n/a"
    r = a / b
    return f"{r:.3f}x" + (" (noise)" if abs(r - 1) < NOISE else "")


class Search:
    """Coarse pass, then refinement of the best few, within a time budget (seconds).

    ``clock`` and ``make_engine`` are injectable (tests drive the search with fakes).
    """

    def __init__(
        self,
        make_engine: Callable[[Candidate], Any],
        sources: Sequence[int],
        *,
        budget_s: float = 60.0,
        repeats: int = 1,
        top_k: int = 3,
        per_level: bool = True,
        clock: Callable[[], float] = time.perf_counter,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self.make_engine = make_engine
        self.sources = [int(s) for s in sources]
        self.budget_s = float(budget_s)
        self.repeats = int(repeats)
        self.top_k = int(top_k)
        self.per_level = per_level
        self.clock = clock
        self.progress = progress or (lambda msg: None)
        self.results: list[Timed] = []
        self._seen: set[Candidate] = set()
        self._start = clock()

    # ------------------------------------------------------------------ budget
    @property
    def elapsed_s(self) -> float:
        return self.clock() - self._start

    def _within(self, share: float) -> bool:
        return self.elapsed_s < share * self.budget_s

    # ------------------------------------------------------------------ timing
    def time_group(self, cands: Sequence[Candidate], stage: str, share: float = 1.0) -> None:
        """Time candidates that share one engine (same :attr:`Candidate.engine_key`)."""
        todo = [c for c in cands if c not in self._seen]
        if not todo or not self._within(share):
            return
        try:  # built with the engine's default small_queue, which configure() restores
            engine = self.make_engine(replace(todo[0], small_queue=None))
        except Exception as exc:  # a candidate that cannot run is recorded, not fatal
            for c in todo:
                self._record(Timed(c, stage, error=_describe(exc)))
            return
        try:
            default_sq = int(engine.small_queue)
            for c in todo:
                if not self._within(share):
                    break
                self.progress(f"timing {stage} {len(self.results) + 1}: {c.label}")
                try:
                    configure(engine, c, default_sq)
                    self._record(Timed(c, stage, measure(engine, self.sources, self.repeats)))
                except Exception as exc:
                    self._record(Timed(c, stage, error=_describe(exc)))
        finally:
            engine.close()

    def _record(self, t: Timed) -> None:
        self._seen.add(t.candidate)
        self.results.append(t)

    def time_one(self, c: Candidate, stage: str, share: float = 1.0) -> Timed | None:
        self.time_group([c], stage, share)
        return next((t for t in self.results if t.candidate == c), None)

    # ------------------------------------------------------------------ search
    def best(self, k: int, *, distinct_engines: bool = True) -> list[Timed]:
        """The k fastest successful results (one per engine key by default)."""
        ranked = sorted((t for t in self.results if t.ok), key=lambda t: t.median_ms)
        out: list[Timed] = []
        keys: set = set()
        for t in ranked:
            key = t.candidate.engine_key if distinct_engines else t.candidate
            if key in keys:
                continue
            keys.add(key)
            out.append(t)
            if len(out) == k:
                break
        return out

    def run(self, coarse: Sequence[Candidate], baseline: Candidate | None = None) -> list[Timed]:
        """The whole search; returns every result (the baseline, if given, is timed first and
        regardless of the budget)."""
        if baseline is not None:
            self.time_group([baseline], "paper", share=float("inf"))
        for c in coarse:
            if not self._within(COARSE_SHARE):
                break
            self.time_group([c], "coarse", COARSE_SHARE)
        refine_share = REFINE_SHARE if self.per_level else 1.0
        for t in self.best(self.top_k):
            c = t.candidate
            self.time_group(eta_variants(c), "eta", refine_share)
        for t in self.best(self.top_k):
            self.time_group(small_queue_variants(t.candidate), "small_queue", refine_share)
        if self.per_level:
            for t in self.best(self.top_k):
                pl = per_level_variant(t.candidate)
                if pl is not None:
                    self.time_one(pl, "per_level", 1.0)
        return self.results

    def pick(self, eligible: Callable[[Candidate], bool] = lambda c: True) -> Timed | None:
        """The fastest successful eligible result."""
        ok = [t for t in self.results if t.ok and eligible(t.candidate)]
        return min(ok, key=lambda t: t.median_ms) if ok else None


def _describe(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}"[:300]
