"""Time :func:`blest.load_graph` on a large random directed graph (Matrix Market or edge list).

The file is generated once (seeded, uniform random arcs, written with vectorized NumPy) and
reused. Usage::

    python benchmarks/bench_load.py                       # 60M arcs, 2**22 vertices, .mtx
    python benchmarks/bench_load.py --arcs 16000000 --format both --repeat 3

Reports wall and CPU seconds of the whole load and of its two stages (parsing the file,
cleaning it with :meth:`Graph.from_arcs`), with the graph's size after cleaning.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import scipy.io

import blest
from blest.graph.core import Graph

SEED = 27491095
_BLOCK = 1 << 22  # lines generated per write


def _digits(values: np.ndarray, width: int) -> np.ndarray:
    """ASCII digits of non-negative ints, right-aligned in ``width`` columns (zero padded)."""
    out = np.empty((values.size, width), dtype=np.uint8)
    rest = values.astype(np.int64)
    for k in range(width - 1, -1, -1):
        out[:, k] = rest % 10 + ord("0")
        rest //= 10
    return out


def _lines(u: np.ndarray, v: np.ndarray, sep: bytes) -> bytes:
    """``f"{u}{sep}{v}\\n"`` for every pair, built without Python loops."""
    width = len(str(int(max(u.max(), v.max()))))
    du, dv = _digits(u, width), _digits(v, width)
    sep_bytes = np.frombuffer(sep, dtype=np.uint8)
    table = np.concatenate(
        [du, np.tile(sep_bytes, (u.size, 1)), dv, np.full((u.size, 1), ord("\n"), np.uint8)],
        axis=1,
    )
    keep = np.ones(table.shape, dtype=bool)
    lead = np.arange(width)
    # Drop leading zeros (keep the last digit of each number).
    keep[:, :width] = lead >= (width - _num_len(u))[:, None]
    start_v = width + sep_bytes.size
    keep[:, start_v : start_v + width] = lead >= (width - _num_len(v))[:, None]
    return table[keep].tobytes()


_POWERS = 10 ** np.arange(1, 19, dtype=np.int64)


def _num_len(values: np.ndarray) -> np.ndarray:
    """Decimal digits of each non-negative int."""
    return np.searchsorted(_POWERS, values, side="right") + 1


def generate(path: Path, n: int, arcs: int, fmt: str, seed: int = SEED) -> None:
    """Write ``arcs`` uniform random arcs on ``n`` vertices (1-based in .mtx)."""
    rng = np.random.default_rng(seed)
    tmp = path.with_name(path.name + ".part")
    with open(tmp, "wb") as f:
        if fmt == "mtx":
            f.write(b"%%MatrixMarket matrix coordinate pattern general\n")
            f.write(f"% blest benchmark: uniform random arcs, seed {seed}\n".encode())
            f.write(f"{n} {n} {arcs}\n".encode())
        else:
            f.write(f"# blest benchmark: uniform random arcs, seed {seed}\n".encode())
        base = 1 if fmt == "mtx" else 0
        for start in range(0, arcs, _BLOCK):
            m = min(_BLOCK, arcs - start)
            u = rng.integers(0, n, m) + base
            v = rng.integers(0, n, m) + base
            f.write(_lines(u, v, b" " if fmt == "mtx" else b"\t"))
    os.replace(tmp, path)


def _timed(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def bench(path: Path, fmt: str, repeat: int) -> None:
    size_mb = path.stat().st_size / 1e6
    for r in range(repeat):
        g, wall, cpu = _timed(lambda: blest.load_graph(path))
        print(
            f"{fmt:8s} load_graph  run {r + 1}: {wall:6.2f} s wall, {cpu:6.2f} s cpu  "
            f"({size_mb:.0f} MB file; n={g.n} arcs={g.nnz} loops={g.report.self_loops} "
            f"dups={g.report.duplicates})"
        )
        del g
    if fmt == "mtx":
        coo, wall, cpu = _timed(lambda: scipy.io.mmread(str(path), spmatrix=False))
        print(f"{fmt:8s}   parse (scipy.io.mmread): {wall:6.2f} s wall, {cpu:6.2f} s cpu")
        row, col, n = coo.row, coo.col, coo.shape[0]
        del coo
        _, wall, cpu = _timed(lambda: Graph.from_arcs(row, col, n, directed=True))
        print(f"{fmt:8s}   clean (Graph.from_arcs): {wall:6.2f} s wall, {cpu:6.2f} s cpu")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arcs", type=int, default=60_000_000)
    parser.add_argument("--scale", type=int, default=22, help="n = 2**scale vertices")
    parser.add_argument("--format", choices=("mtx", "edgelist", "both"), default="mtx")
    parser.add_argument("--dir", type=Path, default=Path("/tmp"))
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args(argv)
    n = 1 << args.scale
    for fmt in ("mtx", "edgelist") if args.format == "both" else (args.format,):
        ext = "mtx" if fmt == "mtx" else "txt"
        path = args.dir / f"blest_bench_urand_s{args.scale}_m{args.arcs}.{ext}"
        if not path.exists():
            _, wall, _ = _timed(lambda p=path, f=fmt: generate(p, n, args.arcs, f))
            print(f"generated {path} ({path.stat().st_size / 1e6:.0f} MB) in {wall:.1f} s")
        bench(path, fmt, args.repeat)


if __name__ == "__main__":
    main()
