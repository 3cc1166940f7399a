"""Where a short multi-source run's time goes: one launch's wall time against its batches.

    python3 benchmarks/probe_launch.py wiki_chameleon ms_s8_k32_smem_csr --block 1024 --eta 2

Times (median of --reps) the runner's whole run for the first 1, 2, 8 and all batches of the
graph's vertices, an empty launch (no batch), and the same with the grid cut to the batches.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from bench_msbfs import Prepare
from profile_ms import parse_spec

from blest.runtime.msbfs import MSRunner


def timed(fn, reps: int) -> float:
    import cupy as cp

    fn()
    cp.cuda.Device().synchronize()
    walls = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        cp.cuda.Device().synchronize()
        walls.append(time.perf_counter() - t0)
    return statistics.median(walls) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("graph")
    ap.add_argument("variant")
    ap.add_argument("--block", type=int, default=1024)
    ap.add_argument("--eta", type=float, default=0.0)
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    spec = parse_spec(args.variant)
    p = Prepare(args.graph)
    prep = p(spec.sigma)
    sources = np.arange(prep.n, dtype=np.int32)
    batches = -(-prep.n // spec.kappa)
    for cut in (False, True):
        runner = MSRunner(prep, spec, eta=args.eta, block_size=args.block,
                          max_slots=batches if cut else None)  # fmt: skip
        probe(runner, p.cp.asarray(sources), batches, args, straggler=not cut)
        runner.close()


def probe(runner: MSRunner, dev, batches: int, args, straggler: bool) -> None:
    """Print the times of one runner (see the module docstring)."""
    kappa, n = runner.spec.kappa, runner.n
    sums = runner.run(dev[:kappa])
    empty = timed(lambda: runner._launch(dev, n, 0, 0, None, 0, sums), args.reps)
    row = [f"grid {runner.grid}: empty launch {empty:.1f} us"]
    for b in (1, 2, 8, batches):
        k = min(n, b * kappa)
        row.append(f"{b} batches {timed(lambda k=k: runner.run(dev[:k]), args.reps):.1f} us")
    row.append(f"source_sums(all) {timed(lambda: runner.source_sums(None), args.reps):.1f} us")
    print(f"{args.graph} {runner.spec.name} b{args.block} eta={args.eta:g} " + " | ".join(row))
    if straggler:  # each batch alone: is one of them a straggler?
        one = [timed(lambda b=b: runner.run(dev, batches=(b, b + 1)), 5) for b in range(batches)]
        worst = int(np.argmax(one))
        print(
            f"  one batch alone: median {statistics.median(one):.1f} us, "
            f"max {one[worst]:.1f} us (batch {worst})"
        )


if __name__ == "__main__":
    main()
