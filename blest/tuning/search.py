"""The timing harness and the search, independent of how engines are made.

``make_engine(candidate)`` returns an object with ``bfs(src, out=...)``, ``stats.traversal_ms``,
writable ``eta``, ``beta``, ``alpha`` and ``small_queue`` attributes and ``close()`` (a
:class:`blest.Engine`, or a fake in tests). Protocol (:mod:`blest.tuning.timing`): one
warm-up traversal per engine, then every source ``repeats`` times; traversal time from the
engine's CUDA events. Scores are means over the sources, the protocol's own statistic: a
configuration that costs much more on a few sources (a switching rule that misfires on their
tails) loses by the mean where a median hides it (kron-22 on an H200: eta 50 and
eta 20 both 0.29-0.30 ms by the median of the held-out sources, 0.340 and 0.320 ms by the
mean).

The search runs in three stages, each within its share of the budget, so that a short budget
trims every stage a little instead of leaving a whole part of the space untried:

1. *screen* (to ``SCREEN_SHARE``): successive halving over the coarse candidates. Every candidate
   runs on the first ``SCREEN_SOURCES`` tuning sources, in an order that interleaves geometries,
   orderings and sigmas (:func:`~blest.tuning.space.coarse_candidates`), so a budget that ends
   mid-round leaves a balanced sample; the faster half then runs on twice as many sources, and
   so on, until ``top_k`` remain or every tuning source has run. Candidates are ranked on the
   sources they all ran.
2. *refine* (to ``REFINE_SHARE``): the leaders run on every tuning source, then in the other
   launch geometries, then the leaders (by then perhaps in another geometry) get their eta
   grid, the return rule's beta, the edge-ratio guard's alpha (at their eta and the largest),
   the register budget, small-queue thresholds and per-level launch.
3. *confirm* (the rest): the best configuration of each of the ``CONFIRM_K`` fastest (ordering,
   sigma, geometry) groups (the block launch a group apart), and the leader at the smallest and
   the largest eta that tie with it (``CONFIRM_ETAS``), runs on confirmation sources, drawn
   apart from the tuning and held-out ones (variants of one group tend to err together on a few
   sources), in rounds (each takes its turn; at most ``CONFIRM_ROUNDS``, fewer once one leads by
   more than the noise). The pick is the fastest on confirmation: not the candidate that a few
   tuning sources happened to favour.

When the three stages end with budget to spare (the leaders' refinements and confirmation are
often quick) and coarse candidates the screen never reached remain, a second pass runs the same
three stages over those, in the rest of the budget, split by the same shares; its confirmation
weighs the new leaders against the old ones, and replaces the first only when it completes a
round. Budget still to spare then goes to the variant families no leader belongs to
(:func:`~blest.tuning.space.family_of`): the best of each, if within ``FAMILY_SPREAD`` of the
leaders, runs on every tuning source and in every geometry, whichever of those now leads gets
its knobs, and confirmation runs again. A family can trail in both coarse geometries and lead
in another: on twitch_FR the eager kernels took 0.061 ms in the coarse geometries against 0.048
for the lazy leaders, and 0.036 with one block of 512 threads per SM.
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
    alpha_variants,
    beta_variants,
    eta_variants,
    family_of,
    geometry_variants,
    per_level_variant,
    register_variants,
    small_queue_variants,
)

__all__ = ["NOISE", "Timed", "measure", "Search", "relative"]

#: Differences under 3% are noise (the spread of repeated timings of one variant).
NOISE = 0.03
#: Fractions of the budget by which the screen and the refinement stop; confirmation gets the rest.
SCREEN_SHARE, REFINE_SHARE = 0.5, 0.75
#: Tuning sources per candidate in the screen's first round.
SCREEN_SOURCES = 2
#: Configurations confirmed, and the most rounds they get.
CONFIRM_K, CONFIRM_ROUNDS = 3, 4
#: Confirmation also runs the leading configuration at the smallest and the largest eta that tie
#: with it on the tuning sources (same ordering, variant and geometry; 0 turns it off): on
#: kron-22 the eta grid tied within 1% on the 8 tuning sources, while eta 100 and 200 cost 2-3x
#: on a tenth of the other sources (their mean traversal 0.42 ms against 0.32 at eta 20, on an
#: H200; benchmarks/NOTES.md).
CONFIRM_ETAS = 2
#: A second pass over the coarse candidates left untried starts only before this budget share.
SECOND_PASS_BEFORE = 0.85
#: The refinement tries the other geometries for a family no leader belongs to only when its
#: best runs within this factor of the leaders' in the coarse geometries: the launch geometry
#: alone moved a variant by at most 1.45x in a sweep of the small social graphs.
FAMILY_SPREAD = 1.5


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

    #: What the search ranks by (the module's docstring says why the mean).
    score_ms = mean_ms

    def score_of_first(self, count: int) -> float:
        """The score of the first ``count`` timings (those every compared candidate has)."""
        return statistics.fmean(self.times_ms[:count]) if self.ok else float("inf")

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
    engine.beta = c.engine_beta
    engine.alpha = c.engine_alpha
    engine.small_queue = default_small_queue if c.small_queue is None else int(c.small_queue)


def measure(engine: Any, sources: Sequence[int] | np.ndarray, repeats: int = 1) -> list[float]:
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
    """Screen, refine and confirm within a time budget (seconds); see the module docstring.

    ``sources`` are the tuning sources, ``confirm_sources`` the confirmation ones (none: no
    confirmation stage). ``clock`` and ``make_engine`` are injectable (tests drive the search
    with fakes).
    """

    def __init__(
        self,
        make_engine: Callable[[Candidate], Any],
        sources: Sequence[int] | np.ndarray,
        *,
        confirm_sources: Sequence[int] | np.ndarray = (),
        budget_s: float = 60.0,
        repeats: int = 1,
        top_k: int = 3,
        per_level: bool = True,
        clock: Callable[[], float] = time.perf_counter,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self.make_engine = make_engine
        self.sources = [int(s) for s in sources]
        self.confirm_sources = [int(s) for s in confirm_sources]
        self.budget_s = float(budget_s)
        self.repeats = int(repeats)
        self.top_k = int(top_k)
        self.per_level = per_level
        self.clock = clock
        self.progress = progress or (lambda msg: None)
        self.results: list[Timed] = []  # on the tuning sources, one per candidate
        self.confirmed: list[Timed] = []  # on the confirmation sources
        self.confirm_rounds = 0
        self._timed: dict[Candidate, Timed] = {}
        self._start = clock()

    # ------------------------------------------------------------------ budget
    @property
    def elapsed_s(self) -> float:
        return self.clock() - self._start

    def _within(self, share: float) -> bool:
        return self.elapsed_s < share * self.budget_s

    # ------------------------------------------------------------------ timing
    def runs(self, c: Candidate) -> int:
        """Tuning sources ``c`` has run on (0 if untimed or failed)."""
        t = self._timed.get(c)
        return len(t.times_ms) // self.repeats if t is not None and t.ok else 0

    def time_group(
        self, cands: Sequence[Candidate], stage: str, share: float = 1.0, upto: int | None = None
    ) -> None:
        """Run candidates that share one engine (same :attr:`Candidate.engine_key`) on the
        tuning sources they have not run yet, up to the first ``upto`` (default: all)."""
        upto = len(self.sources) if upto is None else min(upto, len(self.sources))
        failed = {c for c, t in self._timed.items() if t.error is not None}
        todo = [c for c in cands if c not in failed and self.runs(c) < upto]
        if not todo or not self._within(share):
            return
        try:  # built with the engine's default small_queue, which configure() restores
            engine = self.make_engine(replace(todo[0], small_queue=None))
        except Exception as exc:  # a candidate that cannot run is recorded, not fatal
            for c in todo:
                self._record(c, stage, error=_describe(exc))
            return
        try:
            default_sq = int(engine.small_queue)
            for c in todo:
                if not self._within(share):
                    break
                self.progress(f"timing {stage} {len(self.results) + 1}: {c.label}")
                try:
                    configure(engine, c, default_sq)
                    todo_sources = self.sources[self.runs(c) : upto]
                    self._record(c, stage, measure(engine, todo_sources, self.repeats))
                except Exception as exc:
                    self._record(c, stage, error=_describe(exc))
        finally:
            engine.close()

    def _record(
        self, c: Candidate, stage: str, times: Sequence[float] = (), error: str = ""
    ) -> None:
        t = self._timed.get(c)
        if t is None:
            t = self._timed[c] = Timed(c, stage)
            self.results.append(t)
        t.times_ms += list(times)
        if error:
            t.error = error

    def time_one(self, c: Candidate, stage: str, share: float = 1.0) -> Timed | None:
        self.time_group([c], stage, share)
        return self._timed.get(c)

    # ------------------------------------------------------------------ ranking
    def best(self, k: int, *, distinct_engines: bool = True) -> list[Timed]:
        """The k best successful results (one per engine key by default): those that ran on
        more tuning sources first (they survived more halving rounds), then by score."""
        ranked = sorted(
            (t for t in self.results if t.ok), key=lambda t: (-len(t.times_ms), t.score_ms)
        )
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

    # ------------------------------------------------------------------ stages
    def run(self, coarse: Sequence[Candidate], baseline: Candidate | None = None) -> list[Timed]:
        """The whole search; returns every result on the tuning sources (the baseline, if
        given, runs first and regardless of the budget)."""
        if baseline is not None:
            self.time_group([baseline], "paper", share=float("inf"))
        self._pass(coarse, 0.0)
        rest = [c for c in dict.fromkeys(coarse) if c not in self._timed]
        if rest and self._within(SECOND_PASS_BEFORE):
            self._pass(rest, self.elapsed_s / self.budget_s)
        if self._within(SECOND_PASS_BEFORE):
            left = 1.0 - self.elapsed_s / self.budget_s
            confirmed = [t.candidate for t in self.confirmed]
            if self._refine_families(1.0 - (1.0 - REFINE_SHARE) * left) and (
                self.confirm_sources and self._contenders() != confirmed
            ):
                self._confirm()
        return self.results

    def _pass(self, coarse: Sequence[Candidate], start: float) -> None:
        """Screen, refine and confirm in the budget left after share ``start``."""
        left = 1.0 - start
        self._screen(coarse, start + SCREEN_SHARE * left)
        self._refine_leaders(start + REFINE_SHARE * left)
        self._confirm()

    def _screen(self, coarse: Sequence[Candidate], share: float) -> None:
        """Successive halving over ``coarse`` (in its order) within ``share``."""
        pool = list(dict.fromkeys(coarse))
        count = min(SCREEN_SOURCES, len(self.sources))
        while pool and self._within(share):
            for c in pool:
                if not self._within(share):
                    break
                self.time_group([c], "coarse", share, upto=count)
            ran = [self._timed[c] for c in pool if self.runs(c) >= count]
            if count >= len(self.sources) or len(ran) <= self.top_k:
                return
            ran.sort(key=lambda t: t.score_of_first(count * self.repeats))
            pool = [t.candidate for t in ran[: max(self.top_k, (len(ran) + 1) // 2)]]
            count = min(2 * count, len(self.sources))

    def _refine_families(self, share: float) -> bool:
        """The best of each family no leader belongs to, if within ``FAMILY_SPREAD`` of the
        leaders, refined as the leaders are, within ``share``; whether there was any."""
        leaders = self.best(self.top_k)
        if not leaders:
            return False
        families = {family_of(t.candidate.spec) for t in leaders}
        lead = min(t.score_ms for t in leaders)
        others: dict[int, Timed] = {}
        for t in self.best(len(self.results)):  # best first
            others.setdefault(family_of(t.candidate.spec), t)
        outsiders = [
            t.candidate
            for f, t in others.items()
            if f not in families and t.score_ms < FAMILY_SPREAD * lead
        ]
        if outsiders:
            self._refine_leaders(share, outsiders)
        return bool(outsiders)

    def _refine_leaders(self, share: float, extra: Sequence[Candidate] = ()) -> None:
        """``extra`` (default: the leaders) on every tuning source and in the other geometries,
        then the leaders' eta grid, return rule (beta), edge-ratio guard (alpha), register
        budget, small-queue thresholds and per-level launch (candidates that ran already are
        skipped: :meth:`time_group`)."""
        for c in list(extra) or [t.candidate for t in self.best(self.top_k)]:
            self.time_group([c], "coarse", share)
        # (the leaders again: running on every source may have changed them)
        for c in list(extra) or [t.candidate for t in self.best(self.top_k)]:
            for g in geometry_variants(c):
                self.time_one(g, "geometry", share)
        for t in self.best(self.top_k):
            self.time_group(eta_variants(t.candidate), "eta", share)
        for t in self.best(self.top_k):
            self.time_group(beta_variants(t.candidate), "beta", share)
        for t in self.best(self.top_k):
            self.time_group(alpha_variants(t.candidate), "alpha", share)
        for t in self.best(self.top_k):
            self.time_group(register_variants(t.candidate), "registers", share)
        for t in self.best(self.top_k):
            self.time_group(small_queue_variants(t.candidate), "small_queue", share)
        if self.per_level:
            for t in self.best(self.top_k):
                pl = per_level_variant(t.candidate)
                if pl is not None:
                    self.time_one(pl, "per_level", share)

    def _confirm(self) -> None:
        """The best configuration of each of the CONFIRM_K best (ordering, sigma, geometry)
        groups (the block launch a group apart) on the confirmation sources, in rounds. A later
        call replaces the earlier confirmation only when it completes a round."""
        if not self.confirm_sources:
            return
        earlier, rounds_before = self.confirmed, self.confirm_rounds
        contenders = self._contenders()
        timed = {c: Timed(c, "confirm") for c in contenders}
        for _ in range(CONFIRM_ROUNDS if len(contenders) > 1 else 1):
            if not self._within(1.0):
                break
            complete = True  # every contender measured in this round
            for c in contenders:
                if timed[c].error:
                    continue
                if not self._within(1.0):
                    complete = False
                    break
                self.progress(f"confirming {c.label}")
                try:
                    engine = self.make_engine(replace(c, small_queue=None))
                    try:
                        configure(engine, c, int(engine.small_queue))
                        timed[c].times_ms += measure(engine, self.confirm_sources, self.repeats)
                    finally:
                        engine.close()
                except Exception as exc:
                    timed[c].error = _describe(exc)
            if not complete:
                break
            self.confirm_rounds += 1
            if _clear_leader([t for t in timed.values() if t.ok]):
                break
        if earlier and self.confirm_rounds == rounds_before:
            return  # no full round: the new contenders were not all measured
        self.confirmed = [t for t in timed.values() if t.times_ms or t.error]

    def _contenders(self) -> list[Candidate]:
        """The best configuration of each of the CONFIRM_K best groups (run on every tuning
        source), and the first one's best at up to CONFIRM_ETAS other eta values."""
        full = len(self.sources) * self.repeats
        everything = self.best(len(self.results), distinct_engines=False)
        ranked = [t.candidate for t in everything if len(t.times_ms) == full]
        contenders: list[Candidate] = []
        groups: set[tuple] = set()  # one per (ordering, sigma, geometry): those err together
        for c in ranked:
            if _group(c) not in groups and len(contenders) < CONFIRM_K:
                groups.add(_group(c))
                contenders.append(c)
        if contenders and contenders[0].spec.switching and CONFIRM_ETAS:
            contenders += self._eta_extremes(contenders[0], ranked)
        return contenders

    def _eta_extremes(self, lead: Candidate, ranked: Sequence[Candidate]) -> list[Candidate]:
        """The best configurations at the smallest and the largest eta that tie with ``lead``
        (within NOISE, same ordering, variant and geometry) on the tuning sources: the two that
        behave most unlike each other where the tuning sources cannot tell them apart."""
        bound = self._timed[lead].score_ms * (1 + NOISE)
        key = (lead.ordering, lead.spec, lead.block_size, lead.blocks_per_sm)
        ties: dict[float, Candidate] = {}
        for c in ranked:  # best first: the first of each eta is its best
            same = (c.ordering, c.spec, c.block_size, c.blocks_per_sm) == key
            if same and c.eta not in (None, lead.eta) and self._timed[c].score_ms <= bound:
                ties.setdefault(c.eta, c)  # type: ignore[arg-type]
        etas = sorted(ties)
        ends = etas[:1] + etas[1:][-1:]  # the smallest and the largest (one when only one)
        return [ties[e] for e in ends][:CONFIRM_ETAS]

    def pick(self, eligible: Callable[[Candidate], bool] = lambda c: True) -> Timed | None:
        """The fastest eligible result: on the confirmation sources where it was confirmed
        (and not failed since), else on the tuning sources."""
        confirmed = [
            t
            for t in self.confirmed
            if t.ok and eligible(t.candidate) and self._timed[t.candidate].ok
        ]
        if confirmed:
            return self._timed[min(confirmed, key=lambda t: t.score_ms).candidate]
        ok = [t for t in self.results if t.ok and eligible(t.candidate)]
        return min(ok, key=lambda t: t.score_ms) if ok else None


def _group(c: Candidate) -> tuple:
    """Configurations that err together on a source: one ordering, sigma and geometry (the block
    launch, another kernel altogether, is a group of its own)."""
    return (c.ordering, c.spec.sigma, c.block_size, c.blocks_per_sm, c.spec.launch == "block")


def _clear_leader(timed: list[Timed]) -> bool:
    """Whether the fastest leads every other by more than the noise."""
    if len(timed) < 2:
        return True
    first, second = sorted(t.score_ms for t in timed)[:2]
    return first * (1 + NOISE) < second


def _describe(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}"[:300]
