"""One single-source traversal launch of a chosen variant on an anchor graph, for ncu to see.

    ncu --kernel-name regex:blest_bfs --launch-skip 2 --launch-count 1 \\
        --section WarpStateStats --section SchedulerStats --section SpeedOfLight \\
        python3 benchmarks/profile_ss.py delaunay-20 s32_eager_vss_pers --geometry 1024:1:0

Loads the graph with run.py's ordering, builds the engine with capture off (each call launches
init, the traversal and the deliver pass one by one), and runs three calls from the protocol's
first source, printing their traversal times: the third call's traversal (``--launch-skip 2``)
is the one to profile, after the first call's compilation and the second's warm-up.
``--lineinfo`` (with ``--section SourceCounters``) names the source lines where warps stall.
"""

from __future__ import annotations

import argparse

from run import Bench, _by_name

from blest.runtime.engine import Engine


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("graph", help="an anchor graph (benchmarks/graphs.py)")
    ap.add_argument("variant", help="a persistent single-source variant")
    ap.add_argument("--geometry", default="1024:1:0", help="BLOCK:BLOCKS_PER_SM:SMALL_QUEUE")
    ap.add_argument("--eta", type=float, default=10.0)
    ap.add_argument("--lineinfo", action="store_true", help="compile with -lineinfo (ncu source)")
    args = ap.parse_args()
    block, per_sm, small = (int(x) for x in args.geometry.split(":"))
    spec = _by_name(args.variant)
    if args.lineinfo:  # line numbers in the kernel, and its source where ncu looks for it
        import functools

        import blest.codegen.compile as compile_module
        from blest.codegen.render import render

        compile_module.compile_source = functools.partial(
            compile_module.compile_source, lineinfo=True
        )
        with open("blest.cu", "w") as f:
            f.write(render(spec))
    bench = Bench.load(args.graph, 1)
    src = int(bench.sources[0])
    with Engine(bench.prepared(spec.sigma), spec, eta=args.eta, block_size=block,
                blocks_per_sm=per_sm, small_queue=small, capture=False) as eng:  # fmt: skip
        for call in range(3):
            eng.bfs(src, out="view")
            stats = eng.stats
            print(f"{args.graph} {spec.name} call {call}: {stats.traversal_ms:.3f} ms, "
                  f"depth {stats.depth}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
