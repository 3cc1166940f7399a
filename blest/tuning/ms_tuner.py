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

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from blest.defaults import DEFAULT_ETA, DEFAULT_SIGMA
from blest.graph.bvss import u_div
from blest.graph.core import Graph
from blest.graph.prepared import Prepared
from blest.tuning.ms_search import search_every_vertex
from blest.tuning.paper import paper_spec

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
) -> Any:
    """A :class:`~blest.tuning.tuner.TuneOutcome` for the closeness workload."""
    from blest.runtime.factory import resolve_device
    from blest.tuning import tuner

    if resolve_device(None) == "cpu":  # where an engine would run (runtime.factory's policy)
        outcome = tuner.tune(graph, source=source, use_gpu=False, sigmas=sigmas,
                             orderings=orderings, progress=progress)  # fmt: skip
        outcome.config.notes.append(
            "no GPU: the multi-source variant is chosen when an engine first needs it"
        )
        return outcome
    return _tune_gpu(graph, source, budget_s, sigmas, orderings, progress)


def _tune_gpu(graph, source, budget_s, sigmas, orderings, progress) -> Any:
    import cupy

    from blest.codegen.toolchain import require_gpu
    from blest.runtime.engine import Engine
    from blest.tuning.config import GPUInfo, TunedConfig
    from blest.tuning.prepare import (
        default_ordering,
        graph_info,
        preparation_info,
        prepare_with_fallback,
    )
    from blest.tuning.tuner import TuneOutcome

    _device, arch, gpu_name = require_gpu()
    default = default_ordering(graph)
    wanted = orderings[0] if orderings else default
    progress(f"ordering: {wanted}")
    prep, notes = prepare_with_fallback(graph, wanted, DEFAULT_SIGMA)
    cache: dict[int, Prepared] = {}

    def prepared(sigma: int) -> Prepared:
        if sigma not in cache:
            cache[sigma] = prep.prepared(sigma, xp=cupy)
        return cache[sigma]

    with Engine(prepared(DEFAULT_SIGMA)) as eng:  # the depth decides which form goes first
        eng.bfs(int(graph.out_degree.argmax()), out="device")
        depth = eng.stats.depth
    allowed = [s for s in MS_SIGMAS if s in sigmas] or [DEFAULT_SIGMA]
    t0 = time.perf_counter()
    pick = search_every_vertex(prepared, allowed, depth, budget_s, progress=progress)
    c = pick.best.candidate
    u8 = u_div(prepared(DEFAULT_SIGMA).bvss)
    spec = replace(paper_spec(u8, switching=True), sigma=c.spec.sigma)
    timing = {
        "workload": "closeness",
        "statistic": "seconds per source of one warm run over the sample",
        "budget_s": budget_s,
        "elapsed_s": time.perf_counter() - t0,
        "depth": depth,
        "ms_candidates": [t.to_dict() for t in pick.table],
        "dense_candidates": [t.to_dict() for t in pick.dense_table or []],
    }
    cfg = TunedConfig(
        graph=graph_info(graph, source),
        preparation=preparation_info(
            prep, c.spec.sigma, u8, default, {prep.ordering: prep.seconds}
        ),
        artifact="",
        artifact_sha256="",
        spec=spec,
        eta=DEFAULT_ETA,
        gpu=GPUInfo(gpu_name, f"{arch[3:-1]}.{arch[-1]}", arch),
        tuned=True,
        notes=notes + ["single-source variant by the paper's rules (workload closeness)"],
        timing=timing,
        multi_source=pick.multi_source(),
    )
    return TuneOutcome(cfg, prep.prepared(c.spec.sigma))
