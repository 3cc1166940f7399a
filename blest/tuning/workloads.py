"""What ``blest-tune --workload`` tunes, one interface: a kernel family, its search space and
its tuner.

============  ============  ==========================  ==================================
workload      family        search space (tuning.)      tuner (tuning.)
============  ============  ==========================  ==================================
bfs           single        space.coarse_candidates     tuner.tune
closeness     multi, dense  ms_search.ms_candidates     ms_tuner.tune_closeness
betweenness   betweenness   bc_search.bc_candidates     bc_search.tune_betweenness
============  ============  ==========================  ==================================

A family's spec and emitter are :mod:`blest.codegen.family`'s; every tuner takes the same
arguments (:data:`Tune`) and returns a :class:`~blest.tuning.tuner.TuneOutcome`, which
``write_tuned`` publishes. A new workload registers a :class:`Workload` here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from blest.codegen.family import FAMILIES, Family
from blest.graph.core import Graph
from blest.tuning import tuner
from blest.tuning.bc_search import bc_candidates, tune_betweenness
from blest.tuning.ms_search import ms_candidates
from blest.tuning.ms_tuner import tune_closeness
from blest.tuning.space import coarse_candidates
from blest.tuning.tuner import TuneOutcome

__all__ = ["Workload", "WORKLOADS", "tune_workload"]


@dataclass(frozen=True)
class Workload:
    """One workload: the families its kernels come from, its search space and its tuner."""

    name: str
    families: tuple[Family, ...]
    search_space: Callable[..., list[Any]]
    tune: Callable[..., TuneOutcome]
    summary: str


def _tune_bfs(graph: Graph, *, n_sources: int, compile_check: bool, **common: Any) -> TuneOutcome:
    return tuner.tune(graph, n_sources=n_sources, compile_check=compile_check, **common)


def _without_extras(tuner: Callable[..., TuneOutcome]) -> Callable[..., TuneOutcome]:
    """A tuner that takes the bfs workload's extra arguments and leaves them out."""

    def run(graph: Graph, *, n_sources: int, compile_check: bool, **common: Any) -> TuneOutcome:
        return tuner(graph, **common)

    return run


def _registry() -> dict[str, Workload]:
    return {
        w.name: w
        for w in (
            Workload(
                "bfs", (FAMILIES["single"],), coarse_candidates, _tune_bfs, "single-source BFS"
            ),
            Workload(
                "closeness",
                (FAMILIES["multi"], FAMILIES["dense"]),
                ms_candidates,
                _without_extras(tune_closeness),
                "many sources at once: closeness, harmonic centrality and bfs_many",
            ),
            Workload(
                "betweenness",
                (FAMILIES["betweenness"],),
                bc_candidates,
                _without_extras(tune_betweenness),
                "betweenness centrality",
            ),
        )  # fmt: skip
    }


#: The registered workloads by name, in ``blest.defaults.WORKLOAD_NAMES`` order.
WORKLOADS: dict[str, Workload] = _registry()


def tune_workload(
    name: str,
    graph: Graph,
    *,
    source: str | None,
    budget_s: float,
    sigmas: Sequence[int],
    orderings: Sequence[str] | None,
    progress: Callable[[str], None],
    n_sources: int,
    compile_check: bool,
) -> TuneOutcome:
    """Tune ``graph`` for workload ``name`` (one of :data:`WORKLOADS`)."""
    return WORKLOADS[name].tune(
        graph,
        source=source,
        budget_s=budget_s,
        sigmas=sigmas,
        orderings=orderings,
        progress=progress,
        n_sources=n_sources,
        compile_check=compile_check,
    )
