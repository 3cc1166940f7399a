"""Scale-free-like classification and the paper's default ordering.

Test (docs/notation.md, "Scale-free-like", after the Blest paper's footnote and the original C++):
a graph is scale-free-like when, on its out-degrees or on its in-degrees,

* the top 1% of vertices (⌈n/100⌉ of them, by degree) hold ≥ 5% of the degree AND the top 10%
  (⌈n/10⌉) hold ≥ 40% of it, or
* an ordinary least-squares fit of ln(count) on ln(k), over degrees k ≥ 5 with count > 0, has
  slope −γ with R² ≥ 0.70 and γ ∈ [1, 5] (at least 3 such degrees are needed for a fit: two
  points always give R² = 1), and those degrees span at least a decade (a mesh's 5 to 12 can
  fit a steep line well without being a heavy tail),

or when its average degree (arcs / n; an undirected edge counts twice, as both arcs are
stored) exceeds 18 (the original code's extra rule; why its urand-20 run used Jaccard).

Default ordering: scale-free-like → ``"jaccard"`` (JaccardWithWindows, W = 2^16), else
``"rcm"``. The tuner may override it by timing.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from blest.graph.core import Graph

__all__ = [
    "AVG_DEGREE_LIMIT",
    "Classification",
    "DegreeEvidence",
    "classify",
    "default_ordering",
    "degree_evidence",
    "is_scale_free_like",
]

TOP1_SHARE = 0.05
TOP10_SHARE = 0.40
MIN_FIT_DEGREE = 5
MIN_FIT_POINTS = 3
#: The fitted degrees must span at least this ratio (a decade): a line through the few degrees
#: of a mesh (5 to 12 on a Delaunay triangulation) fits well and steeply without being a tail.
MIN_FIT_SPAN = 10.0
MIN_R2 = 0.70
GAMMA_RANGE = (1.0, 5.0)
AVG_DEGREE_LIMIT = 18.0


@dataclass(frozen=True)
class DegreeEvidence:
    """The two footnote tests on one degree sequence (``direction``: "out" or "in")."""

    direction: str
    top1_share: float  # share of the degree held by the top 1% of vertices
    top10_share: float  # ... by the top 10%
    gamma: float | None  # −slope of the fit; None without enough points
    r2: float | None
    fit_points: int  # distinct degrees k >= 5 with count > 0
    top_share_rule: bool
    power_law_rule: bool

    @property
    def passed(self) -> bool:
        return self.top_share_rule or self.power_law_rule


@dataclass(frozen=True)
class Classification:
    """Whether a graph is scale-free-like, with the evidence for the statistics printout."""

    scale_free_like: bool
    reason: str  # the first rule that holds, or "none"
    avg_degree: float
    avg_degree_rule: bool
    out: DegreeEvidence
    in_: DegreeEvidence

    @property
    def ordering(self) -> str:
        """The paper's default ordering for this graph."""
        return "jaccard" if self.scale_free_like else "rcm"

    def summary(self) -> str:
        parts = []
        for e in (self.out, self.in_):
            fit = f"gamma={e.gamma:.2f} R2={e.r2:.2f}" if e.gamma is not None else "no fit"
            parts.append(
                f"{e.direction}: top1%={e.top1_share:.3f} top10%={e.top10_share:.3f} {fit}"
            )
        verdict = "scale-free-like" if self.scale_free_like else "not scale-free-like"
        return f"{verdict} ({self.reason}); avg degree {self.avg_degree:.2f}; " + "; ".join(parts)


def degree_evidence(degrees: np.ndarray, direction: str = "out") -> DegreeEvidence:
    """The top-share test and the power-law fit on one degree sequence."""
    deg = np.asarray(degrees, dtype=np.int64)
    n = deg.size
    total = int(deg.sum())
    top1 = top10 = 0.0
    if n and total:
        desc = np.sort(deg)[::-1]
        csum = np.cumsum(desc)
        top1 = float(csum[math.ceil(n / 100) - 1]) / total
        top10 = float(csum[math.ceil(n / 10) - 1]) / total
    counts = np.bincount(deg) if n else np.zeros(0, dtype=np.int64)
    ks = np.flatnonzero(counts)
    ks = ks[ks >= MIN_FIT_DEGREE]
    gamma = r2 = None
    if ks.size >= MIN_FIT_POINTS:
        x, y = np.log(ks.astype(np.float64)), np.log(counts[ks].astype(np.float64))
        xm, ym = x.mean(), y.mean()
        sxx, sxy, syy = ((x - xm) ** 2).sum(), ((x - xm) * (y - ym)).sum(), ((y - ym) ** 2).sum()
        slope = sxy / sxx
        gamma = float(-slope)
        r2 = float(sxy * sxy / (sxx * syy)) if syy > 0 else 0.0
    power_law = (
        gamma is not None
        and r2 is not None
        and r2 >= MIN_R2
        and GAMMA_RANGE[0] <= gamma <= GAMMA_RANGE[1]
        and ks[-1] >= MIN_FIT_SPAN * ks[0]
    )
    return DegreeEvidence(
        direction=direction,
        top1_share=top1,
        top10_share=top10,
        gamma=gamma,
        r2=r2,
        fit_points=int(ks.size),
        top_share_rule=bool(top1 >= TOP1_SHARE and top10 >= TOP10_SHARE),
        power_law_rule=bool(power_law),
    )


def classify(graph: Graph) -> Classification:
    """Apply the scale-free-like test to ``graph`` (out- and in-degrees, average degree)."""
    out = degree_evidence(graph.out_degree, "out")
    if graph.directed:
        in_ = degree_evidence(graph.in_degree, "in")
    else:  # in-degrees equal out-degrees
        in_ = dataclasses.replace(out, direction="in")
    avg = graph.nnz / graph.n if graph.n else 0.0
    avg_rule = avg > AVG_DEGREE_LIMIT
    reason = "none"
    for e in (out, in_):
        if e.top_share_rule:
            reason = f"top-share ({e.direction}-degrees)"
            break
        if e.power_law_rule:
            reason = f"power-law fit ({e.direction}-degrees)"
            break
    if reason == "none" and avg_rule:
        reason = f"average degree > {AVG_DEGREE_LIMIT:g}"
    return Classification(
        scale_free_like=reason != "none",
        reason=reason,
        avg_degree=float(avg),
        avg_degree_rule=bool(avg_rule),
        out=out,
        in_=in_,
    )


def is_scale_free_like(graph: Graph) -> bool:
    return classify(graph).scale_free_like


def default_ordering(graph: Graph) -> str:
    """``"jaccard"`` for scale-free-like graphs, else ``"rcm"`` (the paper's default)."""
    return classify(graph).ordering
