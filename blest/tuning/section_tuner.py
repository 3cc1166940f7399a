"""Tuning a workload whose pick is one section of the config (``multi_source``,
``betweenness``) beside the paper's single-source variant.

On a GPU: the graph is prepared with the first ordering asked for (else its default), one BFS
from the vertex of largest out-degree measures the depth (which decides the forms a search
tries first), the workload's search picks within the budget, and the config records the pick's
section, its timing tables and the single-source variant by the paper's rules at the pick's
sigma. Without a GPU nothing can be timed: the paper's rules choose, and engines take the
workload's default variant when they first need it (the config's notes say so).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from blest.defaults import DEFAULT_ETA, DEFAULT_SIGMA
from blest.graph.bvss import u_div
from blest.graph.core import Graph
from blest.graph.prepared import Prepared
from blest.tuning.config import GPUInfo, TunedConfig
from blest.tuning.paper import paper_spec
from blest.tuning.prepare import (
    Preparation,
    default_ordering,
    graph_info,
    preparation_info,
    prepare_with_fallback,
)
from blest.tuning.tuner import TuneOutcome

__all__ = ["SectionPick", "Start", "tune_section"]


@dataclass
class Start:
    """What a search starts from: the graph's preparation and its depth, on the GPU."""

    graph: Graph
    prep: Preparation
    depth: int
    _on_gpu: dict[int, Prepared] = field(default_factory=dict, repr=False)

    def prepared(self, sigma: int) -> Prepared:
        """The prepared graph at ``sigma`` on the GPU (built once per sigma)."""
        if sigma not in self._on_gpu:
            import cupy

            self._on_gpu[sigma] = self.prep.prepared(sigma, xp=cupy)
        return self._on_gpu[sigma]


@dataclass(frozen=True)
class SectionPick:
    """A search's answer: the sigma the artifact is prepared at, the config section(s) it
    fills (``TunedConfig`` keyword → value) and its timing tables (name → rows)."""

    sigma: int
    section: dict[str, Any]
    tables: dict[str, list[dict[str, Any]]]


def tune_section(
    graph: Graph,
    *,
    workload: str,
    variant: str,
    search: Callable[[Start, float], SectionPick],
    source: str | None,
    budget_s: float,
    sigmas: Sequence[int],
    orderings: Sequence[str] | None,
    progress: Callable[[str], None],
) -> TuneOutcome:
    """Tune ``graph`` for ``workload``, whose kernels (named ``variant`` in the notes) ``search``
    picks from a :class:`Start` within ``budget_s`` seconds."""
    from blest.runtime.factory import resolve_device
    from blest.tuning import tuner

    if resolve_device(None) == "cpu":  # where an engine would run (runtime.factory's policy)
        outcome = tuner.tune(graph, source=source, use_gpu=False, sigmas=sigmas,
                             orderings=orderings, progress=progress)  # fmt: skip
        outcome.config.notes.append(
            f"no GPU: the {variant} variant is chosen when an engine first needs it"
        )
        return outcome
    return _tune_gpu(graph, workload, search, source, budget_s, orderings, progress)


def _tune_gpu(
    graph: Graph,
    workload: str,
    search: Callable[[Start, float], SectionPick],
    source: str | None,
    budget_s: float,
    orderings: Sequence[str] | None,
    progress: Callable[[str], None],
) -> TuneOutcome:
    from blest.codegen.toolchain import require_gpu
    from blest.runtime.engine import Engine

    _device, arch, gpu_name = require_gpu()
    default = default_ordering(graph)
    wanted = orderings[0] if orderings else default
    progress(f"ordering: {wanted}")
    prep, notes = prepare_with_fallback(graph, wanted, DEFAULT_SIGMA)
    start = Start(graph, prep, depth=0)
    with Engine(start.prepared(DEFAULT_SIGMA)) as eng:  # the depth decides which form goes first
        eng.bfs(int(graph.out_degree.argmax()), out="device")
        start.depth = eng.stats.depth
    t0 = time.perf_counter()
    pick = search(start, budget_s)
    u8 = u_div(start.prepared(DEFAULT_SIGMA).bvss)
    timing = {
        "workload": workload,
        "statistic": "seconds per source of one warm run over the sample",
        "budget_s": budget_s,
        "elapsed_s": time.perf_counter() - t0,
        "depth": start.depth,
        **pick.tables,
    }
    cfg = TunedConfig(
        graph=graph_info(graph, source),
        preparation=preparation_info(prep, pick.sigma, u8, default, {prep.ordering: prep.seconds}),
        artifact="",
        artifact_sha256="",
        spec=replace(paper_spec(u8, switching=True), sigma=pick.sigma),
        eta=DEFAULT_ETA,
        gpu=GPUInfo(gpu_name, f"{arch[3:-1]}.{arch[-1]}", arch),
        tuned=True,
        notes=notes + [f"single-source variant by the paper's rules (workload {workload})"],
        timing=timing,
        **pick.section,
    )
    return TuneOutcome(cfg, prep.prepared(pick.sigma))
