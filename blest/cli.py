"""Command-line tools: ``blest`` (inspect, run, benchmark) and ``blest-tune`` (the tuner).

Every user error (bad file, bad argument, missing GPU) is one line on stderr and exit
status 2; never a traceback.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

import numpy as np

from blest.codegen.spec import VariantSpec, variants
from blest.errors import BlestError

EXAMPLES = """examples:
  blest demo                                   # the bundled road graph, end to end
  blest info graph.mtx                         # sizes, cleaning, BVSS statistics per sigma
  blest source --sigma 8 --update lazy         # the generated CUDA of any variant
  blest ptx --sigma 16 --update eager --no-switching --arch sm_90
  blest bfs graph.mtx 0 --out levels.npy       # BFS on the GPU (CPU emulator without one)
  blest variants                               # every variant name
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2
        self.exit(2, f"{self.prog}: error: {message}\n")


def _spec_args(p: argparse.ArgumentParser) -> None:
    d = VariantSpec()
    p.add_argument("--sigma", type=int, choices=(4, 8, 16, 32), default=d.sigma)
    p.add_argument("--update", choices=("eager", "lazy"), default=d.update)
    p.add_argument("--dirty-sets", action=argparse.BooleanOptionalAction, default=d.dirty_sets)
    p.add_argument("--queue", choices=("vss", "sweep"), default=d.queue)
    p.add_argument("--switching", action=argparse.BooleanOptionalAction, default=None)
    p.add_argument("--launch", choices=("persistent", "per_level"), default=d.launch)


def _spec_from(args: argparse.Namespace) -> VariantSpec:
    switching = args.switching if args.switching is not None else args.update == "lazy"
    return VariantSpec(
        sigma=args.sigma,
        update=args.update,
        dirty_sets=args.dirty_sets,
        queue=args.queue,
        switching=switching,
        launch=args.launch,
    )


def _cmd_source(args: argparse.Namespace) -> int:
    from blest.codegen.render import render

    sys.stdout.write(render(_spec_from(args)))
    return 0


def _cmd_ptx(args: argparse.Namespace) -> int:
    from blest.codegen.compile import compile_source
    from blest.codegen.render import render

    arch = args.arch.replace("sm_", "compute_")
    sys.stdout.write(compile_source(render(_spec_from(args)), arch=arch, target="ptx").decode())
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
    _describe(_load(args.graph, args.directed), args.sigmas)
    return 0


def _run_bfs(graph: object, src: int, spec: VariantSpec, eta: float) -> tuple[np.ndarray, str]:
    """Levels from the GPU engine, or from the CPU emulator (with a notice) without a GPU."""
    from blest.codegen.toolchain import have_gpu

    if have_gpu():
        from blest.runtime.engine import Engine

        with Engine(graph, spec, eta=eta) as eng:
            levels = eng.bfs(src)
            return levels, f"GPU {eng.device_name}, {eng.stats.traversal_ms:.3f} ms traversal"
    from blest.graph.bvss import build_bvss
    from blest.reference import check_source, emulate_spec

    src = check_source(src, graph.n)
    result = emulate_spec(build_bvss(graph, spec.sigma), graph, src, spec, eta=eta, record=False)
    return result.levels, "no GPU: NumPy emulator of the kernel (slow but exact)"


def _cmd_bfs(args: argparse.Namespace) -> int:
    graph = _load(args.graph, args.directed)
    levels, how = _run_bfs(graph, args.src, _spec_from(args), args.eta)
    reached = int((levels >= 0).sum())
    print(
        f"source {args.src}: {reached:,} of {graph.n:,} reached, depth {int(levels.max())} ({how})"
    )
    if args.out:
        np.save(args.out, levels)
        print(f"levels written to {args.out}")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from blest.datasets import example_path
    from blest.graph.ordering import permute_graph, rcm
    from blest.reference import bfs_levels

    t0 = time.perf_counter()
    graph = _load(str(example_path()), None)
    print(f"loaded the bundled example in {time.perf_counter() - t0:.2f} s")
    _describe(graph, (8,))
    t0 = time.perf_counter()
    perm = rcm(graph)
    ordered = permute_graph(graph, perm)
    print(f"RCM ordering in {time.perf_counter() - t0:.2f} s")
    _describe(ordered, (8,))
    spec = VariantSpec(sigma=8, update="lazy", dirty_sets=True, switching=True)
    rng = np.random.default_rng(27491095)
    for src in rng.choice(np.flatnonzero(graph.out_degree > 0), size=args.sources, replace=False):
        src = int(src)
        levels, how = _run_bfs(graph, src, spec, 10.0)
        want = bfs_levels(graph, src)
        ok = "matches SciPy" if np.array_equal(levels, want) else "DIFFERS FROM SCIPY"
        print(f"  bfs({src}): depth {int(levels.max())}, {ok} [{how}]")
        if ok != "matches SciPy":
            return 1
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    from pathlib import Path

    runner = Path(__file__).resolve().parents[1] / "benchmarks" / "run.py"
    if not runner.exists():
        raise BlestError("blest bench runs benchmarks/run.py from a source checkout of blest")
    import runpy

    sys.argv = [str(runner), *args.rest]
    runpy.run_path(str(runner), run_name="__main__")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="blest",
        description="blest: breadth-first search compiled into tensor-core kernels.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    d = sub.add_parser("demo", help="load, prepare and traverse the bundled example graph")
    d.add_argument("--sources", type=int, default=3)
    d.set_defaults(func=_cmd_demo)
    i = sub.add_parser("info", help="graph and BVSS statistics")
    i.add_argument("graph")
    i.add_argument("--sigmas", type=int, nargs="*", default=[4, 8, 16, 32])
    i.add_argument("--directed", action=argparse.BooleanOptionalAction, default=None)
    i.set_defaults(func=_cmd_info)
    for name, func, doc in (
        ("source", _cmd_source, "print the generated CUDA source of a variant"),
        ("ptx", _cmd_ptx, "print the PTX of a variant (NVRTC, no GPU needed)"),
    ):
        s = sub.add_parser(name, help=doc)
        _spec_args(s)
        if name == "ptx":
            s.add_argument("--arch", default="sm_90")
        s.set_defaults(func=func)
    b = sub.add_parser("bfs", help="BFS levels from one source")
    b.add_argument("graph")
    b.add_argument("src", type=int)
    b.add_argument("--out", help="write the levels (int32, -1 unreachable) to this .npy")
    b.add_argument("--eta", type=float, default=10.0)
    b.add_argument("--directed", action=argparse.BooleanOptionalAction, default=None)
    _spec_args(b)
    b.set_defaults(func=_cmd_bfs)
    v = sub.add_parser("variants", help="list every variant")
    v.set_defaults(func=_cmd_variants)
    bench = sub.add_parser("bench", help="run benchmarks/run.py (source checkout)")
    bench.add_argument("rest", nargs=argparse.REMAINDER)
    bench.set_defaults(func=_cmd_bench)
    return p


def _run(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> int:
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (BlestError, ValueError, IndexError, TypeError, OSError) as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``blest``."""
    return _run(build_parser(), argv)


def tune_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``blest-tune`` (the tuner lands with its own issue)."""
    p = _Parser(
        prog="blest-tune",
        description="Tune blest for one graph: writes GRAPH.blest.json and a prepared graph. "
        "Not implemented yet in this release; see `blest --help` for what works now.",
    )
    p.add_argument("graph")
    p.add_argument("-o", "--output")
    args = p.parse_args(argv)
    print(f"blest-tune: error: the tuner is not implemented yet ({args.graph})", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
