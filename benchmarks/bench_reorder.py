"""Time the reorderings of the anchor graphs: JaccardWithWindows on kron / urand, RCM on delaunay.

    python3 benchmarks/bench_reorder.py                       # kron-21 urand-20 delaunay-20
    python3 benchmarks/bench_reorder.py --quick               # kron-16 urand-16 delaunay-16
    python3 benchmarks/bench_reorder.py kron-18 --device cpu  # Numba path on this CPU

Per graph: n, arcs, the classification's default ordering, the ordering timed (seconds; the
GPU kernel's NVRTC compile and the Numba JIT are warmed up first and not counted), and the
BVSS statistics at sigma before (natural order) and after: compression ratio and U_div.
Targets (the original C++'s figures; H200 host, 16 cores): kron-21 Jaccard ratio >= 0.1457 in
<= 25 s, urand-20 <= 4.1 s, delaunay-20 RCM <= 1.1 s. ``--json PATH`` also writes the rows.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

from graphs import anchor_graph  # noqa: E402

from blest.graph import jaccard as jw  # noqa: E402
from blest.graph.bvss import build_bvss  # noqa: E402
from blest.graph.classify import classify  # noqa: E402
from blest.graph.ordering import permute_graph  # noqa: E402
from blest.runtime.device_ordering import device_ordering  # noqa: E402

DEFAULT = ["kron-21", "urand-20", "delaunay-20"]
QUICK = ["kron-16", "urand-16", "delaunay-16"]


def _ordering_for(name: str) -> str:
    return "rcm" if name.startswith(("delaunay", "luxembourg")) else "jaccard"


def _device(arg: str) -> int | str | None:
    return None if arg == "auto" else ("cpu" if arg == "cpu" else int(arg))


def _warm_up(sigma: int, window: int, device: int | str | None) -> str:
    """Compile the GPU kernel / JIT the Numba path on a tiny graph; return what will run."""
    small = anchor_graph("kron-10")
    perm = device_ordering(small, "jaccard", sigma=sigma, window=window, device=device)
    if perm.notes:
        return "fallback: " + perm.notes[0]
    if device == "cpu":
        return "numba (cpu)"
    from blest.codegen.toolchain import have_gpu

    return "gpu" if device is not None or have_gpu() else "numba (cpu)"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("graphs", nargs="*", help=f"default: {' '.join(DEFAULT)}")
    ap.add_argument("--quick", action="store_true", help=f"use {' '.join(QUICK)}")
    ap.add_argument("--sigma", type=int, default=8)
    ap.add_argument("--window", type=int, default=jw.DEFAULT_WINDOW)
    ap.add_argument("--device", default="auto", help="auto (GPU if usable), cpu, or a GPU index")
    ap.add_argument("--json", type=Path, help="also write the rows to this file")
    args = ap.parse_args(argv)
    names = args.graphs or (QUICK if args.quick else DEFAULT)
    device = _device(args.device)

    t0 = time.perf_counter()
    backend = _warm_up(args.sigma, args.window, device)
    print(
        f"machine: {os.cpu_count()} CPUs; Jaccard backend: {backend} "
        f"(warm-up {time.perf_counter() - t0:.1f} s); sigma={args.sigma} W={args.window}"
    )
    print(
        f"{'graph':<15} {'n':>10} {'arcs':>12} {'default':>8} {'ordering':>8} {'seconds':>8} "
        f"{'ratio nat':>9} {'ratio':>7} {'U_div nat':>10} {'U_div':>9}"
    )
    rows = []
    for name in names:
        g = anchor_graph(name)
        default = classify(g).ordering
        ordering = _ordering_for(name)
        t = time.perf_counter()
        perm = device_ordering(g, ordering, sigma=args.sigma, window=args.window, device=device)
        seconds = time.perf_counter() - t
        before = build_bvss(g, args.sigma).stats()
        after = build_bvss(permute_graph(g, perm), args.sigma).stats()
        row = {
            "graph": name,
            "n": g.n,
            "arcs": g.nnz,
            "default_ordering": default,
            "ordering": perm.name,
            "notes": list(perm.notes),
            "seconds": seconds,
            "compression_ratio_natural": before.compression_ratio,
            "compression_ratio": after.compression_ratio,
            "u_div_natural": before.u_div,
            "u_div": after.u_div,
            "backend": backend if ordering == "jaccard" else "scipy",
            "sigma": args.sigma,
            "window": args.window,
        }
        rows.append(row)
        print(
            f"{name:<15} {g.n:>10,} {g.nnz:>12,} {default:>8} {perm.name:>8} {seconds:>8.2f} "
            f"{before.compression_ratio:>9.4f} {after.compression_ratio:>7.4f} "
            f"{before.u_div:>10.0f} {after.u_div:>9.0f}",
            flush=True,
        )
        for note in perm.notes:
            print(f"  note: {note}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
