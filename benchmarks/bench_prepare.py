"""Time the CPU preparation steps: graph generation/loading and the BVSS build for each sigma.

    python3 benchmarks/bench_prepare.py kron-21 urand-20 --sigmas 8        # NumPy (this CPU)
    python3 benchmarks/bench_prepare.py kron-21 --gpu                      # CuPy (a GPU machine)

Prints graph, arcs, seconds and the BVSS statistics (compression ratio, U_div, bytes).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

from graphs import anchor_graph  # noqa: E402

from blest.graph.bvss import build_bvss  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("graphs", nargs="+")
    ap.add_argument("--sigmas", type=int, nargs="*", default=[4, 8, 16, 32])
    ap.add_argument("--gpu", action="store_true", help="build with CuPy on the GPU")
    args = ap.parse_args(argv)
    xp = None
    if args.gpu:
        import cupy as xp
    print(f"machine: {os.cpu_count()} CPUs; {'GPU (CuPy)' if xp else 'NumPy'} build")
    print("graph            arcs          load s   sigma  build s   compression  U_div      MiB")
    for name in args.graphs:
        t0 = time.perf_counter()
        g = anchor_graph(name)
        load_s = time.perf_counter() - t0
        for sigma in args.sigmas:
            if xp is not None:
                build_bvss(g, sigma, xp=xp)  # warm-up: CuPy compiles its kernels once
                xp.cuda.Device().synchronize()
            t0 = time.perf_counter()
            b = build_bvss(g, sigma, xp=xp)
            if xp is not None:
                xp.cuda.Device().synchronize()
            build_s = time.perf_counter() - t0
            st = b.stats()
            print(
                f"{name:<16} {g.nnz:<13,} {load_s:<8.2f} {sigma:<6} {build_s:<9.2f} "
                f"{st.compression_ratio:<12.4f} {st.u_div:<10.0f} {st.gpu_bytes / 2**20:.0f}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
