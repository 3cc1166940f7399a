"""``tune(graph)``: prepare, choose a variant (by timing on a GPU, by the paper's rules without
one) and build the prepared artifact; :func:`write_tuned` publishes config + artifact.

On a GPU: every available ordering is prepared, candidates are compiled up front
(:func:`blest.codegen.compile.compile_many`) and searched within the budget (:mod:`.search`) on
8 seeded tuning sources; the pick is checked against SciPy on one source, then re-timed beside
the paper's fixed choice and the best other candidates on the protocol's 64 held-out sources.
Without a GPU: the paper's rules (default ordering, sigma=8, lazy iff U_div > 25,000, switching
on with eta=10), nothing compiled unless asked (``compile_check``: NVRTC compiles the candidates
as a check); ``tuned`` is false.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from blest.codegen.compile import arch_number
from blest.codegen.spec import VariantSpec
from blest.defaults import (
    CLUSTER_COMPUTE_CAPABILITY,
    DEFAULT_ARCH,
    DEFAULT_ETA,
    DEFAULT_SIGMA,
    SIGMAS,
    SOURCE_SEED,
)
from blest.errors import ArgumentError, GPUUnavailableError
from blest.graph.bvss import u_div
from blest.graph.core import Graph
from blest.graph.hops import TWO_HOP_RATIO, two_hop_arcs_bound
from blest.graph.prepared import Prepared
from blest.runtime.engine_protocol import Geometry
from blest.tuning.config import GPUInfo, TunedConfig
from blest.tuning.paper import paper_spec, three_run_rule
from blest.tuning.prepare import (
    OrderingUnavailable,
    Preparation,
    available_orderings,
    default_ordering,
    graph_info,
    preparation_info,
    prepare,
    prepare_with_fallback,
    upload_all,
)
from blest.tuning.publish import write_tuned
from blest.tuning.search import Search, Timed, measure, relative
from blest.tuning.space import (
    CLUSTER_GEOMETRIES,
    HOP_CANDIDATES,
    Candidate,
    block_fits,
    block_specs,
    coarse_candidates,
    paper_candidate,
    persistent_specs,
)
from blest.tuning.timing import timing_sources

__all__ = [
    "TuneOutcome",
    "split_sources",
    "tune",
    "write_tuned",
    "HELD_OUT",
    "TUNING_SOURCES",
]

TUNING_SOURCES = 8
CONFIRM_SOURCES = 16
HELD_OUT = 64
#: top candidates (besides the pick and the paper's choice) re-timed on the held-out sources
ORACLE_POOL = 5
Progress = Callable[[str], None]


@dataclass
class TuneOutcome:
    """What :func:`tune` decided: the config (artifact fields still empty) and the artifact."""

    config: TunedConfig
    prepared: Prepared


def _quiet(msg: str) -> None:
    pass


def _draw_active(graph: Graph, taken: np.ndarray, n: int, seed: int) -> np.ndarray:
    """A seeded draw of up to ``n`` vertices with out-degree > 0 outside ``taken`` (empty when
    none are left)."""
    rest = np.setdiff1d(np.flatnonzero(graph.out_degree > 0), taken)
    if not rest.size:
        return rest
    return np.random.default_rng(seed).choice(rest, size=min(n, rest.size), replace=False)


def split_sources(
    graph: Graph, n_tuning: int = TUNING_SOURCES, n_held: int = HELD_OUT
) -> tuple[np.ndarray, np.ndarray, str | None]:
    """(tuning, held-out, note): held-out = the protocol's sources; tuning = a seeded draw
    from the other vertices with out-degree > 0 (overlapping only when there are none left)."""
    held = timing_sources(graph, n_held)
    tuning = _draw_active(graph, held, n_tuning, SOURCE_SEED + 1)
    if tuning.size:
        return tuning, held, None
    note = "too few vertices with out-arcs for disjoint tuning and held-out sources"
    return held[:n_tuning], held, note


def confirmation_sources(graph: Graph, taken: np.ndarray, n: int = CONFIRM_SOURCES) -> np.ndarray:
    """A seeded draw of ``n`` vertices with out-degree > 0 outside ``taken`` (the tuning and
    held-out sources); empty when none are left (the search then skips confirmation)."""
    return _draw_active(graph, taken, n, SOURCE_SEED + 2)


# ---------------------------------------------------------------------- entry point
def tune(
    graph: Graph,
    *,
    source: str | None = None,
    budget_s: float = 60.0,
    n_sources: int = TUNING_SOURCES,
    sigmas: Sequence[int] = SIGMAS,
    orderings: Sequence[str] | None = None,
    use_gpu: bool | None = None,
    repeats: int = 1,
    progress: Progress | None = None,
    compile_check: bool = False,
) -> TuneOutcome:
    """Choose a variant for ``graph``; see the module docstring. ``use_gpu=None`` times on a
    GPU when one is usable, else applies the paper's rules; then nothing is compiled unless
    ``compile_check`` asks for NVRTC to compile the candidates (a check of the toolchain: no
    kernel can run here)."""
    if graph.n == 0:
        raise ArgumentError("the graph has no vertices: nothing to tune")
    sigmas = tuple(sorted(set(int(s) for s in sigmas)))
    bad = [s for s in sigmas if s not in SIGMAS]
    if bad or not sigmas:
        raise ArgumentError(f"sigma must be among {SIGMAS}, got {bad or 'none'}")
    if not 0 < budget_s < float("inf") or n_sources < 1:
        raise ArgumentError("the budget must be a finite number of seconds > 0 and sources >= 1")
    progress = progress or _quiet
    if use_gpu is None:  # where an engine would run (runtime.factory's one policy)
        from blest.runtime.factory import resolve_device

        use_gpu = resolve_device(None) != "cpu"
    why = "no GPU"
    if use_gpu and not np.any(graph.out_degree > 0):
        use_gpu, why = False, "no vertex has an out-arc"  # nothing to time
    if use_gpu:
        return _tune_gpu(graph, source, budget_s, n_sources, sigmas, orderings, repeats, progress)
    return _paper_rules(graph, source, sigmas, orderings, progress, why, compile_check)


# ---------------------------------------------------------------------- without a GPU
def _paper_rules(
    graph: Graph,
    source: str | None,
    sigmas: tuple[int, ...],
    orderings: Sequence[str] | None,
    progress: Progress,
    why: str = "no GPU",
    compile_check: bool = False,
) -> TuneOutcome:
    notes = [f"{why}: variant chosen by the paper's rules, not timed"]
    default = default_ordering(graph)
    wanted = orderings[0] if orderings else default
    sigma = DEFAULT_SIGMA if DEFAULT_SIGMA in sigmas else sigmas[0]
    if sigma != DEFAULT_SIGMA:
        notes.append(f"--sigma excludes the paper's sigma={DEFAULT_SIGMA}: used sigma={sigma}")
    progress(f"ordering: {wanted}")
    prep, why_notes = prepare_with_fallback(graph, wanted, sigma)
    notes += why_notes
    progress("BVSS")
    u8 = u_div(prep.bvss(DEFAULT_SIGMA))
    spec = replace(paper_spec(u8, switching=True), sigma=sigma)
    if spec.switching:
        notes.append(f"switching on with eta={DEFAULT_ETA:g} (the three-run rule needs a GPU)")
    compiled: list[str] = []
    seconds = 0.0
    if compile_check:
        specs = [*persistent_specs(sigmas), spec]
        specs += block_specs(sigmas) if block_fits(graph.n) else []
        reordered = (not prep.permutation.is_identity,)
        compiled, seconds = _compile_check(specs, DEFAULT_ARCH, notes, progress, reordered)
    else:
        notes.append("no kernel compiled (nothing can run them here)")
    cfg = TunedConfig(
        graph=graph_info(graph, source),
        preparation=preparation_info(prep, sigma, u8, default, {prep.ordering: prep.seconds}),
        artifact="",
        artifact_sha256="",
        spec=spec,
        eta=DEFAULT_ETA,
        tuned=False,
        notes=notes,
        timing={
            "candidates": [],
            "compiled": compiled,
            "compile_arch": DEFAULT_ARCH,
            "compile_seconds": seconds,
        },
    )
    return TuneOutcome(cfg, prep.prepared(sigma))


def _compile_check(
    specs: Sequence[VariantSpec],
    arch: str,
    notes: list[str],
    progress: Progress,
    reordered: Sequence[bool] = (False, True),
) -> tuple[list[str], float]:
    """NVRTC-compile the rendered specs (disk-cached; the sources are what Engine compiles for
    graphs that are reordered or not, as ``reordered`` lists: an eager kernel's claims form
    depends on it), reporting each finished module through ``progress``."""
    from blest.codegen.compile import compile_many
    from blest.codegen.contract import claims_form
    from blest.codegen.render import render

    unique = list(dict.fromkeys(specs))
    sources = list(
        dict.fromkeys(render(s, claims=claims_form(s, r)) for s in unique for r in reordered)
    )
    what = f"compiling {len(unique)} variants for {arch}"
    progress(what)

    def step(done: int, total: int) -> None:
        bar = "#" * (20 * done // max(total, 1))
        progress(f"{what} [{bar:<20}] {done}/{total}")

    t0 = time.perf_counter()
    try:
        compile_many(sources, arch=arch, progress=step)
    except GPUUnavailableError as exc:
        notes.append(f"candidates not compiled ({exc})")
        return [], 0.0
    return [s.name for s in unique], time.perf_counter() - t0


# ---------------------------------------------------------------------- on a GPU
def _gpu_preparations(
    graph: Graph,
    sigmas: tuple[int, ...],
    orderings: Sequence[str] | None,
    notes: list[str],
    progress: Progress,
) -> tuple[dict[str, Preparation], str]:
    """Every requested ordering, prepared; and the default one (the paper's choice uses it)."""
    default = default_ordering(graph)
    names = list(dict.fromkeys([default, *(orderings or available_orderings())]))
    if orderings:
        names = [n for n in names if n in orderings]
    preps: dict[str, Preparation] = {}
    order_sigma = DEFAULT_SIGMA if DEFAULT_SIGMA in sigmas else sigmas[0]
    for name in names:
        progress(f"ordering: {name}")
        try:
            prep = prepare(graph, name, order_sigma)
        except OrderingUnavailable as exc:
            notes.append(f"{exc}: not tuned over")
            continue
        notes += prep.notes
        preps.setdefault(prep.ordering, prep)  # a fallback may repeat an ordering
    if not preps:
        raise OrderingUnavailable("none of the requested orderings could be computed")
    if default not in preps:
        fallback = "rcm" if "rcm" in preps else next(iter(preps))
        notes.append(
            f"the default ordering {default} is unavailable: paper's choice uses {fallback}"
        )
        default = fallback
    return preps, default


def _paper_baseline(
    factory: Any, default: str, u8: float, tuning: np.ndarray, progress: Progress
) -> Candidate:
    """The paper's fixed choice, its switching decided by the three-run rule."""
    paper = paper_candidate(default, u8, False)
    if paper.spec.update == "lazy":
        progress("paper's three-run rule")
        switching = three_run_rule(lambda sw: factory(paper_candidate(default, u8, sw)), tuning)
        paper = paper_candidate(default, u8, switching)
    return paper


def _tune_gpu(
    graph: Graph,
    source: str | None,
    budget_s: float,
    n_sources: int,
    sigmas: tuple[int, ...],
    orderings: Sequence[str] | None,
    repeats: int,
    progress: Progress,
) -> TuneOutcome:
    import cupy

    from blest.codegen.toolchain import require_gpu
    from blest.runtime.device import device_smem_limit
    from blest.tuning.gpu import EngineFactory

    device, arch, gpu_name = require_gpu()
    smem_limit = device_smem_limit(cupy, device)
    notes: list[str] = []
    tuning, held, note = split_sources(graph, n_sources)
    notes += [note] if note else []
    confirm = confirmation_sources(graph, np.concatenate([tuning, held]))
    preps, default = _gpu_preparations(graph, sigmas, orderings, notes, progress)
    factory = EngineFactory(preps)
    try:
        progress(f"BVSS sigma={DEFAULT_SIGMA} and U_div")
        u8 = u_div(preps[default].bvss(DEFAULT_SIGMA, xp=cupy))
        # Several levels a phase: for graphs whose B = A + A^2 is small, in the default
        # ordering at HOP_CANDIDATES, B built with the BVSSs (outside the budget).
        small = two_hop_arcs_bound(graph) <= TWO_HOP_RATIO * graph.nnz
        hops_orderings = (default,) if small else ()
        hops = [(k, s) for k, s in HOP_CANDIDATES if s in sigmas] if small else []
        specs = [s for s in persistent_specs(sigmas) if s.hops == 1 or (s.hops, s.sigma) in hops]
        specs += [paper_spec(u8, False), paper_spec(u8, True)]
        specs += block_specs(sigmas) if block_fits(graph.n, smem_limit) else []
        clusters = arch_number(arch) >= CLUSTER_COMPUTE_CAPABILITY
        for cluster, _ in CLUSTER_GEOMETRIES if clusters else ():
            if block_fits(graph.n, smem_limit, cluster):
                specs += block_specs(sigmas, (cluster,))
        reordered = sorted({not p.permutation.is_identity for p in preps.values()})
        compiled, compile_s = _compile_check(specs, arch, notes, progress, reordered)
        upload_all(preps, sigmas, cupy, notes, progress, hops={default: hops})
        paper = _paper_baseline(factory, default, u8, tuning, progress)
        search = Search(
            factory,
            tuning,
            confirm_sources=confirm,
            budget_s=budget_s,
            repeats=repeats,
            progress=progress,
        )
        coarse = coarse_candidates(
            list(preps), sigmas, n=graph.n, smem_limit=smem_limit, clusters=clusters,
            hops_orderings=hops_orderings,
        )  # fmt: skip
        search.run(coarse, baseline=paper)
        searched_s = search.elapsed_s  # the budget's part; the checks and the report come after
        pick = _verified_pick(search, factory, graph, int(tuning[0]), set(sigmas), progress)
        report = _held_out(search, factory, pick, paper, held, progress)
        checked_s = search.elapsed_s - searched_s
        c = pick.candidate
        prep = preps[c.ordering]
        timing = {
            "statistic": "mean traversal ms over the tuning sources (one warm-up first); "
            "the pick: the fastest on the confirmation sources (stage confirm)",
            "tuning_sources": [int(s) for s in tuning],
            "repeats": repeats,
            "warmup": 1,
            "budget_s": budget_s,
            "elapsed_s": searched_s,
            "check_and_report_s": checked_s,
            "compiled": compiled,
            "compile_arch": arch,
            "compile_seconds": compile_s,
            "confirmation_sources": [int(s) for s in confirm],
            "confirmation_rounds": search.confirm_rounds,
            "candidates": [t.to_dict() for t in search.results + search.confirmed],
        }
        seconds = {name: p.seconds for name, p in preps.items()}
        cfg = TunedConfig(
            graph=graph_info(graph, source),
            preparation=preparation_info(prep, c.spec.sigma, u8, default, seconds),
            artifact="",
            artifact_sha256="",
            spec=c.spec,
            eta=c.engine_eta,
            beta=c.engine_beta,
            alpha=c.engine_alpha,
            geometry=Geometry(c.block_size, c.blocks_per_sm, None, c.small_queue),
            gpu=GPUInfo(gpu_name, f"{arch[3:-1]}.{arch[-1]}", arch),
            tuned=True,
            notes=notes,
            timing=timing,
            report=report,
        )
        return TuneOutcome(cfg, prep.prepared(c.spec.sigma))
    finally:
        factory.release()


def _verified_pick(
    search: Search, factory: Any, graph: Graph, src: int, sigmas: set[int], progress: Progress
) -> Timed:
    """The fastest candidate whose levels from ``src`` equal SciPy's (wrong ones are marked)."""
    from blest.reference import bfs_levels

    want = bfs_levels(graph, src)
    for _ in range(5):
        pick = search.pick(lambda c: c.spec.sigma in sigmas)
        if pick is None:
            break
        progress(f"checking {pick.candidate.label} against SciPy")
        engine = factory(pick.candidate)
        try:
            ok = np.array_equal(engine.bfs(src), want)
        finally:
            engine.close()
        if ok:
            return pick
        pick.error = f"levels from source {src} differ from SciPy's"
    raise RuntimeError("no timed candidate produced correct levels; please report this graph")


def _held_out(
    search: Search,
    factory: Any,
    pick: Timed,
    paper: Candidate,
    held: np.ndarray,
    progress: Progress,
) -> dict[str, Any]:
    """Mean traversal ms on the held-out sources: the pick, the paper's choice, the oracle."""
    pool = [pick.candidate, paper] + [
        t.candidate for t in search.best(ORACLE_POOL, distinct_engines=False)
    ]
    rows = []
    t0 = time.perf_counter()
    for c in dict.fromkeys(pool):
        progress(f"held-out: {c.label}")
        row: dict[str, Any] = {"label": c.label, **c.to_dict()}
        try:
            engine = factory(c)
            try:
                times = measure(engine, held)
            finally:
                engine.close()
            row.update(mean_ms=float(np.mean(times)), median_ms=float(np.median(times)))
        except Exception as exc:  # recorded; the pick and the paper's choice ran before
            row.update(mean_ms=None, median_ms=None, error=f"{type(exc).__name__}: {exc}")
        rows.append(row)
    report = summarize_held_out(rows, pick.candidate.label, paper.label, len(held))
    report["seconds"] = time.perf_counter() - t0
    report["held_out_sources"] = [int(s) for s in held]
    return report


def summarize_held_out(
    rows: list[dict[str, Any]], pick_label: str, paper_label: str, n_sources: int
) -> dict[str, Any]:
    """Pick vs paper vs oracle (best held-out mean of the rows) with the 3% noise rule."""
    timed = [r for r in rows if r.get("mean_ms") is not None]
    by_label = {r["label"]: r["mean_ms"] for r in timed}
    pick_ms = by_label.get(pick_label, float("inf"))
    paper_ms = by_label.get(paper_label, float("inf"))
    oracle = min(timed, key=lambda r: r["mean_ms"]) if timed else None
    oracle_ms = oracle["mean_ms"] if oracle else float("inf")
    return {
        "sources": n_sources,
        "statistic": "mean traversal ms over the held-out sources (one warm-up first)",
        "rows": rows,
        "pick": pick_label,
        "paper": paper_label,
        "oracle": oracle["label"] if oracle else None,
        "pick_ms": pick_ms,
        "paper_ms": paper_ms,
        "oracle_ms": oracle_ms,
        "pick_vs_paper": relative(pick_ms, paper_ms),
        "pick_vs_oracle": relative(pick_ms, oracle_ms),
        "pick_is_oracle": oracle is not None and oracle["label"] == pick_label,
        "pick_within_noise_of_oracle": bool(pick_ms <= oracle_ms * 1.03),
    }
