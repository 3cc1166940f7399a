"""``blest``: inspect variants and configs, run BFS, benchmark, and the bundled demo."""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from blest.cli.common import (
    Parser,
    common_flags,
    given_spec_flags,
    is_config,
    load,
    read_config,
    run,
    spec_args,
    spec_from,
    target_spec,
)
from blest.codegen.spec import VariantSpec, variants
from blest.defaults import DEFAULT_ARCH, DEFAULT_ETA, SIGMAS, SOURCE_SEED
from blest.errors import BlestError

EXAMPLES = """examples:
  blest demo                                   # the bundled road graph, end to end
  blest-tune graph.mtx                         # tune: writes graph.blest.json + graph.blest.npz
  blest bfs graph.blest.json 0 --out levels.npy  # BFS with the tuned variant
  blest info graph.blest.json                  # graph, preparation, chosen variant, timings
  blest source graph.blest.json                # the generated CUDA of the chosen variant
  blest info graph.mtx                         # sizes, cleaning, BVSS statistics per sigma
  blest source --sigma 8 --update lazy         # the generated CUDA of any variant
  blest ptx --sigma 16 --update eager --no-switching --arch sm_90
  blest bfs graph.mtx 0 --out levels.npy       # BFS on the GPU (CPU emulator without one)
  blest variants                               # every variant name
"""


def _cmd_source(args: argparse.Namespace) -> int:
    from blest.codegen.render import render

    spec, _ = target_spec(args)
    sys.stdout.write(render(spec))
    return 0


def _cmd_ptx(args: argparse.Namespace) -> int:
    from blest.codegen.compile import compile_source
    from blest.codegen.render import render

    spec, cfg = target_spec(args)
    tuned_arch = cfg.gpu.arch if cfg is not None and cfg.gpu is not None else None
    arch = args.arch or tuned_arch or DEFAULT_ARCH
    arch = arch.replace("sm_", "compute_")
    sys.stdout.write(compile_source(render(spec), arch=arch, target="ptx").decode())
    return 0


def _cmd_variants(args: argparse.Namespace) -> int:
    for spec in variants():
        print(spec.name)
    return 0


def _describe(graph: object, sigmas: Sequence[int]) -> None:
    from blest.graph.bvss import build_bvss

    g = graph
    kind = "directed" if g.directed else "undirected"
    print(f"graph       {g.report.source or '(object)'}")
    print(f"vertices    {g.n:,}  ({g.isolated:,} isolated)")
    print(f"arcs        {g.nnz:,}  ({kind}; {g.report.summary()})")
    deg = g.out_degree
    if g.n:
        print(f"out-degree  mean {deg.mean():.2f}  max {int(deg.max()):,}")
    print("BVSS        sigma   Ns         Nv         real slices  compression  U_div     MiB")
    for sigma in sigmas:
        st = build_bvss(g, sigma).stats()
        print(
            f"            {sigma:<7} {st.n_slice_sets:<10,} {st.n_vss:<10,} {st.real_slices:<12,} "
            f"{st.compression_ratio:<12.4f} {st.u_div:<9.1f} {st.gpu_bytes / 2**20:.1f}"
        )


def _cmd_info(args: argparse.Namespace) -> int:
    if is_config(args.graph):
        from blest.tuning.summary import summary_lines, timing_lines

        cfg = read_config(args.graph)
        lines = summary_lines(cfg) + [f"artifact   {cfg.artifact_path}"]
        lines += [f"note       {n}" for n in cfg.notes] + timing_lines(cfg)
        print("\n".join(lines))
        return 0
    _describe(load(args.graph, args.directed), args.sigmas)
    return 0


def _run_bfs(graph: object, src: int, spec: VariantSpec, eta: float) -> tuple[np.ndarray, str]:
    """Levels from the GPU engine, or from the kernel emulator (with a notice) without a GPU."""
    from blest.graph.prepared import Prepared
    from blest.runtime.factory import make_engine, resolve_device

    device = resolve_device(None)
    if device == "cpu":
        device = "emulator"  # the CLI shows what the kernel computes
    prep = Prepared.from_graph(graph, spec.sigma)
    with make_engine(prep, spec, eta=eta, device=device) as eng:
        levels = eng.bfs(src)
        if device == "emulator":
            return levels, "no GPU: NumPy emulator of the kernel (slow but exact)"
        return levels, f"GPU {eng.device_name}, {eng.stats.traversal_ms:.3f} ms traversal"


def _check_out_path(path: str | None) -> None:
    if path and not Path(path).resolve().parent.is_dir():
        raise BlestError(f"cannot write {path}: directory {Path(path).parent} does not exist")


def _save_levels(path: str, levels: np.ndarray) -> None:
    from blest.tuning.files import atomic_write

    atomic_write(path, lambda f: np.save(f, levels))


def _tuned_bfs(args: argparse.Namespace) -> tuple[np.ndarray, int, str]:
    from blest.reference import check_source
    from blest.tuning.loader import load_tuned

    given = given_spec_flags(args)
    given += [f for f, v in (("--eta", args.eta), ("--directed", args.directed)) if v is not None]
    if given:
        raise BlestError(f"{', '.join(given)} cannot be combined with a tuned config")
    check_source(args.src, read_config(args.graph).graph.n)  # before any warning
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "no GPU: blest runs", RuntimeWarning)
        eng = load_tuned(args.graph)
    with eng:
        levels = eng.bfs(args.src)
        if eng.device_name.startswith("CPU"):
            return levels, eng.n, f"no GPU: {eng.device_name}, {eng.stats.traversal_ms:.1f} ms"
        return levels, eng.n, f"GPU {eng.device_name}, {eng.stats.traversal_ms:.3f} ms traversal"


def _cmd_bfs(args: argparse.Namespace) -> int:
    _check_out_path(args.out)
    if is_config(args.graph):
        levels, n, how = _tuned_bfs(args)
    else:
        graph = load(args.graph, args.directed)
        eta = DEFAULT_ETA if args.eta is None else args.eta
        levels, how = _run_bfs(graph, args.src, spec_from(args), eta)
        n = graph.n
    reached = int((levels >= 0).sum())
    print(f"source {args.src}: {reached:,} of {n:,} reached, depth {int(levels.max())} ({how})")
    if args.out:
        _save_levels(args.out, levels)
        print(f"levels written to {args.out}")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    """The user's flow on the bundled road graph: blest-tune, then load_tuned(...).bfs(src),
    each result checked against SciPy."""
    from blest.datasets import example_path
    from blest.reference import bfs_levels
    from blest.tuning import load_tuned

    out = Path(args.dir)
    out.mkdir(parents=True, exist_ok=True)
    config = out / "luxembourg_osm.blest.json"
    argv = [str(example_path()), "-o", str(config), "--budget", str(args.budget)]
    print(f"$ blest-tune {' '.join(argv)}")
    from blest.cli.tune import tune_main

    status = tune_main(argv)
    if status:
        return status
    print(f"$ python -c 'blest.load_tuned(\"{config}\").bfs(src)'")
    from blest.runtime.factory import resolve_device

    device = "emulator" if resolve_device(None) == "cpu" else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the no-GPU notice was printed by blest-tune already
        engine = load_tuned(config, device=device)
    graph = load(str(example_path()), None)
    rng = np.random.default_rng(SOURCE_SEED)
    for src in rng.choice(np.flatnonzero(graph.out_degree > 0), size=args.sources, replace=False):
        src = int(src)
        t0 = time.perf_counter()
        levels = engine.bfs(src)
        ms = (time.perf_counter() - t0) * 1e3
        ok = np.array_equal(levels, bfs_levels(graph, src))
        print(
            f"  bfs({src}): depth {int(levels.max())}, {int((levels >= 0).sum()):,} reached, "
            f"{ms:.1f} ms, {'matches SciPy' if ok else 'DIFFERS FROM SCIPY'}"
        )
        if not ok:
            return 1
    print(f"generated CUDA of the chosen variant: blest source {config}")
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    """The timing protocol on a tuned config's engine (GPU only)."""
    from blest.tuning.loader import load_prepared, load_tuned
    from blest.tuning.protocol import bench_engine, scipy_ms, timing_sources

    if not is_config(args.config):
        raise BlestError(f"{args.config} is not a tuned config (*.blest.json from blest-tune)")
    if args.n < 1:
        raise BlestError(f"-n must be at least 1, got {args.n}")
    cfg = read_config(args.config)
    graph = load_prepared(cfg).graph
    sources = timing_sources(graph, args.n)
    with load_tuned(args.config, device="gpu") as eng:
        row = bench_engine(eng, graph, sources, Path(args.config).name)
    cpu = scipy_ms(graph, sources[: min(8, len(sources))])
    print(
        f"{row.graph}: {row.variant} eta={row.eta:g}, {row.sources} sources: traversal mean "
        f"{row.traversal_ms:.4f} ms (median {row.traversal_ms_median:.4f}), whole call "
        f"{row.whole_call_ms:.4f} ms, host copy {row.host_copy_ms:.4f} ms, {row.gteps:.2f} GTEPS; "
        f"SciPy {cpu:.2f} ms"
    )
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="blest",
        description="blest: breadth-first search compiled into tensor-core kernels.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    common_flags(p)
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    d = sub.add_parser("demo", help="load, prepare and traverse the bundled example graph")
    d.add_argument("--sources", type=int, default=3)
    d.add_argument("--dir", default="blest-demo", help="where the config and artifact go")
    d.add_argument("--budget", type=float, default=20.0, help="tuning seconds on a GPU")
    d.set_defaults(func=_cmd_demo)
    i = sub.add_parser(
        "info", help="graph and BVSS statistics, or a tuned config's choice and timings"
    )
    i.add_argument("graph", metavar="GRAPH_OR_CONFIG")
    i.add_argument(
        "--sigmas", type=int, nargs="*", choices=SIGMAS, default=list(SIGMAS), help="default: all"
    )
    i.add_argument("--directed", action=argparse.BooleanOptionalAction, default=None)
    i.set_defaults(func=_cmd_info)
    for name, func, doc in (
        ("source", _cmd_source, "print the generated CUDA source of a config's or any variant"),
        ("ptx", _cmd_ptx, "print the PTX of a config's or any variant (NVRTC, no GPU needed)"),
    ):
        s = sub.add_parser(name, help=doc, description=doc)
        s.add_argument("config", nargs="?", metavar="CONFIG", help="a tuned *.blest.json")
        spec_args(s)
        if name == "ptx":
            s.add_argument("--arch", help="default: the config's GPU, else sm_90")
        s.set_defaults(func=func)
    b = sub.add_parser("bfs", help="BFS levels from one source (a tuned config or a graph file)")
    b.add_argument("graph", metavar="CONFIG_OR_GRAPH")
    b.add_argument("src", type=int)
    b.add_argument("--out", help="write the levels (int32, -1 unreachable) to this .npy")
    b.add_argument("--eta", type=float, help="graph files only (default 10)")
    b.add_argument("--directed", action=argparse.BooleanOptionalAction, default=None)
    spec_args(b)
    b.set_defaults(func=_cmd_bfs)
    v = sub.add_parser("variants", help="list every variant")
    v.set_defaults(func=_cmd_variants)
    bench = sub.add_parser("bench", help="time a tuned config by the timing protocol (GPU)")
    bench.add_argument("config", metavar="CONFIG", help="a tuned *.blest.json")
    bench.add_argument("-n", type=int, default=64, help="sources (default 64)")
    bench.set_defaults(func=_cmd_bench)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``blest``."""
    return run(build_parser(), argv)
