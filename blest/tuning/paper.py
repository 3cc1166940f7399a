"""The paper's fixed choice of variant, kept as the baseline every tuned pick is compared with.

sigma = 8; the lazy update path when U_div exceeds 25,000 (an id spread), else eager; the VSS
queue; one persistent launch; eta = 10; and, for lazy variants, switching to bottom-up only when
three timed runs from random sources are faster with it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from blest.codegen.spec import VariantSpec
from blest.defaults import DEFAULT_SIGMA, U_DIV_LAZY

__all__ = ["paper_spec", "three_run_rule"]


def paper_spec(u_div: float, switching: bool) -> VariantSpec:
    """The paper's fixed choice: sigma=8, lazy iff U_div > 25,000, VSS queue, persistent;
    switching (lazy only) as decided by the three-run rule."""
    if u_div > U_DIV_LAZY:
        return VariantSpec(sigma=DEFAULT_SIGMA, update="lazy", queue="vss", switching=switching)
    return VariantSpec(sigma=DEFAULT_SIGMA, update="eager", queue="vss", switching=False)


def three_run_rule(make_engine: Any, sources: np.ndarray) -> bool:
    """Switching on iff three timed runs from random sources are faster with it (paper)."""
    picks = sources[:3]
    times = {}
    for switching in (False, True):
        eng = make_engine(switching)
        eng.bfs(int(picks[0]), out="device")
        total = 0.0
        for s in picks:
            eng.bfs(int(s), out="device")
            total += eng.stats.traversal_ms
        times[switching] = total
        eng.close()
    return times[True] < times[False]
