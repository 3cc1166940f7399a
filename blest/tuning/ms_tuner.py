"""``blest-tune --workload closeness``: choose the multi-source kernel for all-sources work.

On a GPU the graph is prepared with its default ordering, the multi-source search
(:mod:`blest.tuning.ms_search`) times (kappa, sigma, form, expand, block size) and eta on a sample
of sources, and the config records the pick in its ``multi_source`` section (with, on small
shallow graphs, whether the dense form runs the sums of every vertex); the single-source
variant at the picked sigma follows the paper's rules (tune with the default workload for it).
Without a GPU nothing can be timed: the paper's rules choose, and engines take the default
multi-source variant at run time (and say so).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from blest.defaults import DEFAULT_SIGMA
from blest.graph.core import Graph
from blest.tuning.ms_search import search_every_vertex
from blest.tuning.section_tuner import SectionPick, Start, tune_section
from blest.tuning.tuner import TuneOutcome

__all__ = ["tune_closeness", "MS_SIGMAS"]

#: Slice widths the closeness search tries (the MMA needs sigma >= 8 to pay; 4 was never picked).
MS_SIGMAS = (8, 32)


def tune_closeness(
    graph: Graph,
    *,
    source: str | None,
    budget_s: float,
    sigmas: Sequence[int],
    orderings: Sequence[str] | None,
    progress: Callable[[str], None],
) -> TuneOutcome:
    """A :class:`~blest.tuning.tuner.TuneOutcome` for the closeness workload."""
    allowed = [s for s in MS_SIGMAS if s in sigmas] or [DEFAULT_SIGMA]

    def search(start: Start, budget: float) -> SectionPick:
        pick = search_every_vertex(start.prepared, allowed, start.depth, budget, progress=progress)
        return SectionPick(
            sigma=pick.best.candidate.spec.sigma,
            section={"multi_source": pick.multi_source()},
            tables={
                "ms_candidates": [t.to_dict() for t in pick.table],
                "dense_candidates": [t.to_dict() for t in pick.dense_table or []],
            },
        )

    return tune_section(graph, workload="closeness", variant="multi-source", search=search,
                        source=source, budget_s=budget_s, sigmas=sigmas, orderings=orderings,
                        progress=progress)  # fmt: skip
