"""One multi-source launch of a chosen variant, for ncu or compute-sanitizer to look at.

    ncu --kernel-name regex:blest --launch-count 1 --section SpeedOfLight \\
        python3 benchmarks/profile_ms.py luxembourg_osm ms_s8_k64_block_csr --batches 132

Prepares the graph with its default ordering (as bench_msbfs.py does), compiles and warms the
variant on one batch, then runs ``--batches`` batches of random sources in one launch and prints
the time per batch and per source.
"""

from __future__ import annotations

import argparse
import re
import time

import numpy as np
from bench_msbfs import Prepare

from blest.codegen.msspec import MSSpec
from blest.runtime.ms_runner import MSRunner


def parse_spec(name: str) -> MSSpec:
    m = re.fullmatch(r"ms_s(\d+)_k(\d+)_(grid|block|smem|queue)(_shfl|_csr)?", name)
    if m is None:
        raise SystemExit(f"not a multi-source variant name: {name}")
    expand = {None: "mma", "_shfl": "shuffle", "_csr": "csr"}[m.group(4)]
    return MSSpec(int(m.group(1)), int(m.group(2)), m.group(3), expand)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("graph")
    ap.add_argument("variant")
    ap.add_argument("--batches", type=int, default=132)
    ap.add_argument("--eta", type=float, default=0.0)
    ap.add_argument("--block", type=int, default=1024)
    ap.add_argument("--slots", type=int, default=None, help="default: as many as are resident")
    ap.add_argument("--min-blocks", type=int, default=1, help="__launch_bounds__ min blocks/SM")
    ap.add_argument("--lineinfo", action="store_true", help="compile with -lineinfo (ncu source)")
    args = ap.parse_args()
    spec = parse_spec(args.variant)
    if args.lineinfo:
        import functools

        import blest.codegen.compile as compile_module

        compile_module.compile_source = functools.partial(
            compile_module.compile_source, lineinfo=True
        )
        from blest.codegen.ms_render import render_ms

        with open(f"blest_{spec.name}.cu", "w") as f:  # where ncu --import-source looks
            f.write(render_ms(spec))
    if args.min_blocks > 1:  # an experiment: ask nvcc for fewer registers
        import dataclasses

        import blest.runtime.ms_runner as ms_runner

        plain = ms_runner.ms_program
        bound = f"__launch_bounds__(1024, {args.min_blocks})"
        ms_runner.ms_program = lambda s: dataclasses.replace(
            plain(s), source=plain(s).source.replace("__launch_bounds__(1024)", bound)
        )
    p = Prepare(args.graph)
    prep = p(spec.sigma)
    rng = np.random.default_rng(1)
    k = min(prep.n, args.batches * spec.kappa)
    sources = np.sort(rng.choice(prep.n, size=k, replace=False)).astype(np.int32)
    runner = MSRunner(prep, spec, eta=args.eta, block_size=args.block, max_slots=args.slots)
    runner.run(sources[: spec.kappa])  # compile, allocate, warm
    t0 = time.perf_counter()
    runner.run(sources)
    p.cp.cuda.Device().synchronize()
    secs = time.perf_counter() - t0
    run = runner.last_run
    print(
        f"{args.graph} {spec.name} b{args.block} min{args.min_blocks}: {run.batches} batches "
        f"on {runner.slots} slots, "
        f"{run.launches} launches, {secs:.3f} s, {secs / k * 1e6:.2f} us/source",
        flush=True,
    )


if __name__ == "__main__":
    main()
