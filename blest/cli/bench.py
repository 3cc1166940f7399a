"""``blest bench``: time BFS from many sources by the timing protocol and report GAP-style
statistics (mean and quartiles of the times, harmonic-mean TEPS), optionally checking every
source against SciPy and plotting the times."""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path
from typing import Any

from blest.cli.common import Progress, is_config, positive_int, read_config, say
from blest.cli.graphs import GRAPH_HELP, given_graph_flags, graph_flags, load
from blest.cli.outputs import check_outputs_apart, print_json
from blest.defaults import DEFAULT_SIGMA, TIMING_SOURCES
from blest.errors import ArgumentError
from blest.tuning.storage import check_output_path

__all__ = ["bench_parser"]

PLOT_SUFFIXES = (".png", ".pdf", ".svg")


def _check_plot(path: str | None) -> None:
    """Before any work: a writable path of a known image type, and matplotlib."""
    if path is None:
        return
    if Path(path).suffix.lower() not in PLOT_SUFFIXES:
        raise ArgumentError(f"cannot plot to {path}: use {', '.join(PLOT_SUFFIXES)}")
    check_output_path(path)
    from blest.tuning.plots import require_matplotlib

    require_matplotlib()


def _config_engine(args: argparse.Namespace, gpu: bool) -> tuple[Any, Any, dict[str, Any]]:
    """(engine, graph, timeline recipe) of a tuned config, on its GPU variant or the CPU."""
    from blest.tuning.loader import load_tuned

    flags = given_graph_flags(args)
    if flags:
        raise ArgumentError(f"{', '.join(flags)} cannot be combined with a tuned config")
    cfg = read_config(args.target)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "no GPU: blest runs", RuntimeWarning)
        engine = load_tuned(args.target)
    return engine, engine.graph, {"geometry": cfg.geometry}


def _graph_engine(args: argparse.Namespace, gpu: bool) -> tuple[Any, Any, dict[str, Any]]:
    """(engine, graph, timeline recipe) of a graph file: on a GPU the paper's default
    ordering and the default variant; without one, SciPy on the CPU."""
    from blest.codegen.spec import VariantSpec
    from blest.graph.prepared import Prepared
    from blest.runtime.factory import make_engine
    from blest.tuning.prepare import default_ordering, prepare_with_fallback

    graph = load(args.target, args)
    spec = VariantSpec(sigma=DEFAULT_SIGMA)
    if gpu:
        prep, _notes = prepare_with_fallback(graph, default_ordering(graph), DEFAULT_SIGMA)
        prepared = prep.prepared(DEFAULT_SIGMA)
    else:  # SciPy reads the graph alone: no ordering to compute
        prepared = Prepared.from_graph(graph, DEFAULT_SIGMA)
    return make_engine(prepared, spec, device=None), graph, {"geometry": None}


def _timeline(engine: Any, recipe: dict[str, Any], src: int) -> dict[str, Any]:
    """Milliseconds per level of one GPU run (an engine that records level starts)."""
    from blest.runtime.factory import make_engine

    geometry = recipe["geometry"]
    with make_engine(
        engine.prepared,
        engine.spec,
        eta=engine.eta,
        beta=engine.beta,
        alpha=engine.alpha,
        geometry=geometry,
        record_levels=True,
    ) as eng:
        eng.bfs(src)
        ms, bottom_up = eng.probes.level_times_ms()
    return {"source": src, "level_ms": ms.tolist(), "bottom_up_levels": list(bottom_up)}


def _text(result: dict[str, Any]) -> list[str]:
    s = result["statistics"]

    def row(name: str, q: dict[str, float]) -> str:
        return (
            f"{name:<14}mean {q['mean']:.4f}  min {q['min']:.4f}  Q1 {q['q1']:.4f}  "
            f"median {q['median']:.4f}  Q3 {q['q3']:.4f}  max {q['max']:.4f}"
        )

    lines = [
        f"bench       {result['target']}: {s['sources']} sources, {result['engine']}",
        f"variant     {result['variant']}",
        row("traversal ms", s["traversal_ms"]),
        row("whole call ms", s["whole_call_ms"]),
        f"TEPS          {s['teps_harmonic_mean']:.4g} (harmonic mean; "
        f"{s['teps_harmonic_mean'] / 1e9:.3f} GTEPS)",
    ]
    if result["verified"] is not None:
        bad = result["verified"]["differ"]
        lines.append(
            f"verified    {s['sources'] - len(bad)} of {s['sources']} sources match SciPy"
            + (f"; DIFFER: {bad[:10]}" if bad else "")
        )
    return lines


def _cmd_bench(args: argparse.Namespace) -> int:
    from blest.codegen.toolchain import have_gpu
    from blest.tuning.timing import time_sources, timing_sources

    _check_plot(args.plot)
    check_outputs_apart({"--plot": args.plot}, target=args.target)
    gpu = have_gpu()
    build = _config_engine if is_config(args.target) else _graph_engine
    engine, graph, recipe = build(args, gpu)
    with engine:
        on_gpu = gpu and not engine.device_name.startswith("CPU")
        where = f"GPU {engine.device_name}" if on_gpu else "no GPU: SciPy's BFS on the CPU"
        sources = timing_sources(graph, args.n)
        progress = Progress("blest bench", enabled=not args.json)
        try:
            samples = time_sources(
                engine, graph, sources, gpu=on_gpu, verify=args.verify, progress=progress
            )
            timeline = _timeline(engine, recipe, int(sources[0])) if on_gpu else None
        finally:
            progress.clear()
        result = {
            "target": args.target,
            "engine": where,
            "variant": engine.spec.name + ("" if on_gpu else " (the GPU kernel, not run)"),
            "eta": engine.eta,
            "beta": engine.beta,
            "alpha": engine.alpha,
            "statistics": samples.statistics().to_dict(),
            "per_source": {
                "sources": samples.sources,
                "traversal_ms": samples.traversal_ms,
                "whole_call_ms": samples.whole_call_ms,
                "edges": samples.edges,
                "depth": samples.depth,
            },
            "verified": {"differ": samples.differs} if args.verify else None,
            "timeline": timeline,
        }
    if args.plot:
        from blest.tuning.plots import plot_bench

        plot_bench(result, args.plot)
    if args.json:
        print_json(result)
    else:
        say(*_text(result))
        if args.plot:
            say(f"plot        {args.plot}")
    if samples.differs:
        print(
            f"blest bench: {len(samples.differs)} sources gave levels that differ from SciPy's "
            "(a bug in blest: please report it)",
            file=sys.stderr,
        )
        return 1
    return 0


def bench_parser(sub: Any) -> None:
    b = sub.add_parser(
        "bench",
        help="time BFS from many sources: mean, quartiles, harmonic-mean TEPS",
        description="Time BFS from -n sources drawn by the timing protocol (seeded, vertices "
        "with out-arcs). A tuned config runs its variant; a graph file the paper's default "
        "ordering and the default variant (no tuning). Without a GPU, SciPy's BFS on the CPU "
        "is timed (and the output says so). TEPS per source = edges of the reached part "
        "(an undirected edge once) / traversal time.",
    )
    b.add_argument(
        "target", metavar="CONFIG_OR_GRAPH", help=f"a *.json tuned config or {GRAPH_HELP}"
    )
    b.add_argument(
        "-n",
        type=positive_int,
        default=TIMING_SOURCES,
        metavar="N",
        help=f"sources (default {TIMING_SOURCES}; fewer if the graph has fewer)",
    )
    b.add_argument(
        "--verify", action="store_true", help="check every source's levels against SciPy's"
    )
    b.add_argument(
        "--plot",
        metavar="PATH",
        help="plot per-source times (and a per-level timeline on a GPU) to a .png, .pdf or "
        '.svg (default: no plot); needs matplotlib: pip install "blest-bfs[plot]"',
    )
    b.add_argument("--json", action="store_true", help="print the results as JSON")
    graph_flags(b)
    b.set_defaults(func=_cmd_bench)
