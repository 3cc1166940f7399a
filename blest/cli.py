"""Command-line tools: ``blest`` (inspect, run, benchmark) and ``blest-tune`` (the tuner).

Every user error (a :class:`~blest.errors.BlestError`: bad file, bad argument, missing GPU; or an
``OSError``) is one line on stderr and exit status 2. Anything else is a bug in blest: its
traceback is printed and the exit status is 1. Ctrl-C exits with status 130.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from blest._version import __version__
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

TUNE_EXAMPLES = """examples:
  blest-tune graph.mtx                         # → ./graph.blest.json + ./graph.blest.npz
  blest-tune graph.mtx.gz -o out/g.blest.json --budget 120
  blest-tune edges.txt --undirected --sigma 8 16 --quiet

Without a GPU the graph is still prepared and the candidate kernels are compiled (NVRTC), and
the config is written with the paper's rules ("tuned": false); blest.load_tuned() then runs the
NumPy emulator of that variant.
"""


class _Progress:
    """One self-overwriting status line on stderr, only when stderr is a terminal."""

    def __init__(self, prog: str, enabled: bool = True) -> None:
        self.prog = prog
        self.enabled = enabled and sys.stderr.isatty()
        self._shown = False

    def __call__(self, message: str) -> None:
        if self.enabled:
            width = max(20, _columns() - 1)
            sys.stderr.write(f"\r\x1b[K{self.prog}: {message}"[: width + 4])
            sys.stderr.flush()
            self._shown = True

    def clear(self) -> None:
        if self._shown:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
            self._shown = False


def _columns() -> int:
    try:
        return os.get_terminal_size(sys.stderr.fileno()).columns or 80
    except OSError:
        return 80


def _is_config(target: str) -> bool:
    """A tuned config is named ``*.json``; anything else is a graph file."""
    return target.lower().endswith(".json")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2
        self.exit(2, f"{self.prog}: error: {message}\n")


def _common_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    p.add_argument(
        "--debug", action="store_true", help="show the traceback of errors too (default: one line)"
    )


_SPEC_FLAGS = ("sigma", "update", "dirty_sets", "queue", "switching", "launch")


def _spec_args(p: argparse.ArgumentParser) -> None:
    d = VariantSpec()
    p.add_argument("--sigma", type=int, choices=SIGMAS, help=f"default {d.sigma}")
    p.add_argument("--update", choices=("eager", "lazy"), help=f"default {d.update}")
    p.add_argument("--dirty-sets", action=argparse.BooleanOptionalAction, default=None)
    p.add_argument("--queue", choices=("vss", "sweep"), help=f"default {d.queue}")
    p.add_argument(
        "--switching", action=argparse.BooleanOptionalAction, default=None, help="default: lazy"
    )
    p.add_argument("--launch", choices=("persistent", "per_level"), help=f"default {d.launch}")


def _given_spec_flags(args: argparse.Namespace) -> list[str]:
    return ["--" + k.replace("_", "-") for k in _SPEC_FLAGS if getattr(args, k, None) is not None]


def _spec_from(args: argparse.Namespace) -> VariantSpec:
    d = VariantSpec()
    update = args.update or d.update
    switching = args.switching if args.switching is not None else update == "lazy"
    return VariantSpec(
        sigma=args.sigma or d.sigma,
        update=update,
        dirty_sets=d.dirty_sets if args.dirty_sets is None else args.dirty_sets,
        queue=args.queue or d.queue,
        switching=switching,
        launch=args.launch or d.launch,
    )


def _read_config(path: str) -> object:
    from blest.tuning.config import TunedConfig

    return TunedConfig.read(path)


def _target_spec(args: argparse.Namespace) -> tuple[VariantSpec, object]:
    """The spec of ``args.config`` (a tuned config) or of the spec flags; and the config."""
    if args.config is None:
        return _spec_from(args), None
    if not _is_config(args.config):
        raise BlestError(f"{args.config} is not a tuned config (*.blest.json from blest-tune)")
    flags = _given_spec_flags(args)
    if flags:
        raise BlestError(f"{', '.join(flags)} cannot be combined with a tuned config")
    cfg = _read_config(args.config)
    return cfg.spec, cfg


def _cmd_source(args: argparse.Namespace) -> int:
    from blest.codegen.render import render

    spec, _ = _target_spec(args)
    sys.stdout.write(render(spec))
    return 0


def _cmd_ptx(args: argparse.Namespace) -> int:
    from blest.codegen.compile import compile_source
    from blest.codegen.render import render

    spec, cfg = _target_spec(args)
    tuned_arch = cfg.gpu.arch if cfg is not None and cfg.gpu is not None else None
    arch = args.arch or tuned_arch or DEFAULT_ARCH
    arch = arch.replace("sm_", "compute_")
    sys.stdout.write(compile_source(render(spec), arch=arch, target="ptx").decode())
    return 0


def _cmd_variants(args: argparse.Namespace) -> int:
    for spec in variants():
        print(spec.name)
    return 0


def _load(path: str, directed: bool | None) -> object:
    from blest.graph.io import load_graph

    return load_graph(path, directed=directed)


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
    if _is_config(args.graph):
        from blest.tuning.summary import summary_lines, timing_lines

        cfg = _read_config(args.graph)
        lines = summary_lines(cfg) + [f"artifact   {cfg.artifact_path}"]
        lines += [f"note       {n}" for n in cfg.notes] + timing_lines(cfg)
        print("\n".join(lines))
        return 0
    _describe(_load(args.graph, args.directed), args.sigmas)
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

    given = _given_spec_flags(args)
    given += [f for f, v in (("--eta", args.eta), ("--directed", args.directed)) if v is not None]
    if given:
        raise BlestError(f"{', '.join(given)} cannot be combined with a tuned config")
    check_source(args.src, _read_config(args.graph).graph.n)  # before any warning
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
    if _is_config(args.graph):
        levels, n, how = _tuned_bfs(args)
    else:
        graph = _load(args.graph, args.directed)
        eta = DEFAULT_ETA if args.eta is None else args.eta
        levels, how = _run_bfs(graph, args.src, _spec_from(args), eta)
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
    status = tune_main(argv)
    if status:
        return status
    print(f"$ python -c 'blest.load_tuned(\"{config}\").bfs(src)'")
    from blest.runtime.factory import resolve_device

    device = "emulator" if resolve_device(None) == "cpu" else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the no-GPU notice was printed by blest-tune already
        engine = load_tuned(config, device=device)
    graph = _load(str(example_path()), None)
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

    if not _is_config(args.config):
        raise BlestError(f"{args.config} is not a tuned config (*.blest.json from blest-tune)")
    if args.n < 1:
        raise BlestError(f"-n must be at least 1, got {args.n}")
    cfg = _read_config(args.config)
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
    p = _Parser(
        prog="blest",
        description="blest: breadth-first search compiled into tensor-core kernels.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _common_flags(p)
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
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
        _spec_args(s)
        if name == "ptx":
            s.add_argument("--arch", help="default: the config's GPU, else sm_90")
        s.set_defaults(func=func)
    b = sub.add_parser("bfs", help="BFS levels from one source (a tuned config or a graph file)")
    b.add_argument("graph", metavar="CONFIG_OR_GRAPH")
    b.add_argument("src", type=int)
    b.add_argument("--out", help="write the levels (int32, -1 unreachable) to this .npy")
    b.add_argument("--eta", type=float, help="graph files only (default 10)")
    b.add_argument("--directed", action=argparse.BooleanOptionalAction, default=None)
    _spec_args(b)
    b.set_defaults(func=_cmd_bfs)
    v = sub.add_parser("variants", help="list every variant")
    v.set_defaults(func=_cmd_variants)
    bench = sub.add_parser("bench", help="time a tuned config by the timing protocol (GPU)")
    bench.add_argument("config", metavar="CONFIG", help="a tuned *.blest.json")
    bench.add_argument("-n", type=int, default=64, help="sources (default 64)")
    bench.set_defaults(func=_cmd_bench)
    return p


def _run(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> int:
    args = parser.parse_args(argv)

    def one_line(message: Warning | str, *_: object, **__: object) -> None:
        print(f"{parser.prog}: warning: {message}", file=sys.stderr)

    with warnings.catch_warnings():
        warnings.showwarning = one_line
        try:
            return int(args.func(args) or 0)
        except (BlestError, OSError) as exc:
            if getattr(args, "debug", False):
                raise
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            print(f"{parser.prog}: error: {first}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print(f"{parser.prog}: interrupted", file=sys.stderr)
            return 130
        except Exception:
            import traceback

            traceback.print_exc()
            print(
                f"{parser.prog}: internal error (a bug in blest {__version__}): please report it "
                "with the command line and the traceback above",
                file=sys.stderr,
            )
            return 1


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``blest``."""
    return _run(build_parser(), argv)


# ---------------------------------------------------------------------- blest-tune
def _tune_outputs(args: argparse.Namespace) -> tuple[Path, Path]:
    from blest.tuning.config import default_outputs

    config, artifact = default_outputs(args.graph, args.output)
    if not config.name.endswith(".json"):
        raise BlestError(f"the config name must end in .json (got {config})")
    for p in (config, artifact):
        if not p.resolve().parent.is_dir():
            raise BlestError(f"cannot write {p}: directory {p.parent} does not exist")
        if p.exists() and p.resolve() == Path(args.graph).resolve():
            raise BlestError(f"{p} would overwrite the input graph")
        if p.is_dir():
            raise BlestError(f"cannot write {p}: it is a directory")
    return config, artifact


def _cmd_tune(args: argparse.Namespace) -> int:
    from blest.tuning.summary import summary_lines
    from blest.tuning.tuner import tune, write_tuned

    if not 0 < args.budget < float("inf"):
        raise BlestError(f"--budget must be a finite number of seconds > 0, got {args.budget:g}")
    if args.sources < 1:
        raise BlestError(f"--sources must be at least 1, got {args.sources}")
    if args.ordering:
        from blest.tuning.prepare import available_orderings

        unknown = [o for o in args.ordering if o not in available_orderings()]
        if unknown:
            known = ", ".join(available_orderings())
            raise BlestError(f"unknown ordering {', '.join(unknown)} (available: {known})")
    config, artifact = _tune_outputs(args)
    progress = _Progress("blest-tune", enabled=not args.quiet)
    try:
        progress(f"loading {args.graph}")
        t0 = time.perf_counter()
        graph = _load(args.graph, args.directed)
        load_s = time.perf_counter() - t0
        outcome = tune(
            graph,
            source=str(Path(args.graph).resolve()),
            budget_s=args.budget,
            n_sources=args.sources,
            sigmas=args.sigma,
            orderings=args.ordering,
            progress=progress,
        )
        outcome.config.preparation.load_seconds = load_s
        progress(f"writing {config}")
        cfg = write_tuned(outcome, config, artifact)
    finally:
        progress.clear()
    if not args.quiet:
        if cfg.notes:
            print(f"blest-tune: note: {'; '.join(cfg.notes)}", file=sys.stderr)
        print("\n".join(summary_lines(cfg)))
        print(f"wrote      {config} and {artifact}")
    return 0


def build_tune_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="blest-tune",
        description="Tune blest for one graph: prepare it (ordering, BVSS), time the kernel "
        "variants on the GPU and write a tuned config (JSON) plus the prepared graph (.npz).",
        epilog=TUNE_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _common_flags(p)
    p.add_argument("graph", metavar="GRAPH", help="graph file (.mtx, .mtx.gz, edge list, .npz)")
    p.add_argument(
        "-o",
        "--output",
        metavar="CONFIG",
        help="config path (default ./GRAPH.blest.json); the "
        "prepared graph goes beside it as *.blest.npz",
    )
    p.add_argument(
        "--budget",
        type=float,
        default=60.0,
        metavar="S",
        help="seconds for timing candidates (default 60; preparation not counted)",
    )
    p.add_argument("--sources", type=int, default=8, metavar="N", help="tuning sources (default 8)")
    p.add_argument(
        "--sigma",
        type=int,
        nargs="+",
        choices=SIGMAS,
        default=list(SIGMAS),
        help="slice widths to consider (default all)",
    )
    p.add_argument(
        "--ordering",
        nargs="+",
        metavar="NAME",
        help="orderings to consider (default: every available one; natural, rcm, ...)",
    )
    d = p.add_mutually_exclusive_group()
    d.add_argument("--directed", dest="directed", action="store_const", const=True, default=None)
    d.add_argument("--undirected", dest="directed", action="store_const", const=False)
    p.add_argument("-q", "--quiet", action="store_true", help="no progress, no summary")
    p.set_defaults(func=_cmd_tune)
    return p


def tune_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``blest-tune``."""
    return _run(build_tune_parser(), argv)


if __name__ == "__main__":
    raise SystemExit(main())
