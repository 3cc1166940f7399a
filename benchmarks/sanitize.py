"""One small BFS per kernel family, for compute-sanitizer (memcheck, synccheck, initcheck,
racecheck):

    compute-sanitizer --tool memcheck python3 benchmarks/sanitize.py
    compute-sanitizer --tool racecheck python3 benchmarks/sanitize.py --grid-blocks 2
    compute-sanitizer --tool memcheck python3 benchmarks/sanitize.py --ms-only   # multi-source only

Exits 1 if any result differs from SciPy; the sanitizer's own summary says the rest. Racecheck
instruments every shared-memory access and serializes a spinning persistent grid, so it wants
a grid of a few blocks (``--grid-blocks``).
"""

from __future__ import annotations

import argparse

import numpy as np

from blest import VariantSpec  # noqa: E402
from blest.codegen.msspec import MSSpec  # noqa: E402
from blest.datasets.classes import make_directed, make_grid  # noqa: E402
from blest.graph.bvss import build_bvss  # noqa: E402
from blest.graph.prepared import Prepared  # noqa: E402
from blest.reference import bfs_levels  # noqa: E402
from blest.runtime.engine import Engine  # noqa: E402

FAMILIES = [
    VariantSpec(sigma=8, update="eager", queue="vss", switching=False),
    VariantSpec(sigma=32, update="eager", queue="sweep", switching=False),
    VariantSpec(sigma=4, update="lazy", queue="vss", switching=True),
    VariantSpec(sigma=16, update="lazy", dirty_sets=True, queue="sweep", switching=True),
    VariantSpec(sigma=8, update="lazy", dirty_sets=True, queue="vss", switching=True),
    VariantSpec(sigma=8, update="lazy", dirty_sets=True, launch="per_level"),
]


MS_FAMILIES = [
    MSSpec(8, 64, "grid", "mma"),
    MSSpec(32, 32, "grid", "shuffle"),
    MSSpec(8, 128, "block", "shuffle"),
    MSSpec(16, 256, "block", "mma"),
    MSSpec(8, 64, "block", "csr"),
    MSSpec(4, 128, "grid", "csr"),
    MSSpec(8, 64, "smem", "csr"),
]


def multi_source(graphs: dict, block_size: int) -> int:
    """The multi-source families (both forms, both expansions, eta never / always), parents and
    several seeds on the single-source kernels; the number of wrong results."""
    bad = 0
    for spec in MS_FAMILIES:
        for name, g in graphs.items():
            for eta in (0.0, 1e9):
                prepared = Prepared.from_graph(g, spec.sigma, bvss=build_bvss(g, spec.sigma))
                with Engine(prepared) as eng:
                    eng.many.configure(spec, eta=eta, block_size=block_size)
                    srcs = [0, 5, 5, g.n - 1]
                    rows = eng.bfs_many(srcs)
                    ok = all(np.array_equal(rows[i], bfs_levels(g, s)) for i, s in enumerate(srcs))
                bad += not ok
                print(f"{spec.name:<26} {name:<9} eta={eta:<6g} {'ok' if ok else 'WRONG'}")
    spec = VariantSpec(sigma=8, update="lazy", dirty_sets=True, switching=True)
    for name, g in graphs.items():
        prepared = Prepared.from_graph(g, 8, bvss=build_bvss(g, 8))
        with Engine(prepared, spec) as eng:
            levels, parents = eng.bfs([1, 3, 3], parents=True)
            from blest.api import validate

            validate(g, [1, 3], levels, parents)
        print(f"multi-seed + parents       {name:<9} ok")
    return bad


def _who_holds(cupy) -> None:
    """Print the live CuPy arrays (largest first) and, for the largest, two levels of what
    refers to it (dict keys shown, so that a runner's or engine's buffers can be told apart)."""
    import gc

    live = [o for o in gc.get_objects() if isinstance(o, cupy.ndarray)]
    live.sort(key=lambda a: -a.nbytes)
    print(f"{len(live)} live CuPy arrays, {sum(a.nbytes for a in live)} B")

    def describe(obj) -> str:
        if isinstance(obj, dict):
            return f"dict{sorted(map(str, obj))[:6]}"
        return type(obj).__name__

    skip = {id(live)}
    for a in live[:2]:
        for r in gc.get_referrers(a):
            if id(r) in skip:
                continue
            up = [describe(q) for q in gc.get_referrers(r) if id(q) not in skip][:4]
            print(f"  {a.nbytes} B {a.shape} <- {describe(r)} <- {up}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid-blocks", type=int, default=None, help="blocks of every launch")
    ap.add_argument("--ms-only", action="store_true", help="the multi-source families only")
    ap.add_argument(
        "--free-pool",
        action="store_true",
        help="hand CuPy's cached blocks back to the driver before exit (what a leak check then "
        "reports is held by blest, not by CuPy's memory pool)",
    )
    args = ap.parse_args(argv)
    rng = np.random.default_rng(7)
    graphs = {"directed": make_directed(rng, 700), "grid": make_grid(rng, 600)}
    bad = multi_source(graphs, 128)
    for spec in [] if args.ms_only else FAMILIES:
        for name, g in graphs.items():
            for small in (0, 64):
                src = int(np.flatnonzero(g.out_degree > 0)[0])
                # A NumPy BVSS keeps CuPy's own kernels out of the sanitizer's report.
                prepared = Prepared.from_graph(g, spec.sigma, bvss=build_bvss(g, spec.sigma))
                with Engine(
                    prepared,
                    spec,
                    eta=4.0,
                    block_size=128,
                    small_queue=small,
                    grid_blocks=args.grid_blocks,
                ) as eng:
                    ok = np.array_equal(eng.bfs(src), bfs_levels(g, src))
                bad += not ok
                print(f"{spec.name:<32} {name:<9} small_queue={small:<3} {'ok' if ok else 'WRONG'}")
    if args.free_pool:
        import gc

        import cupy

        gc.collect()
        pool = cupy.get_default_memory_pool()
        used, held = pool.used_bytes(), pool.total_bytes()
        print(f"CuPy pool before freeing: {used} B in use, {held} B held")
        _who_holds(cupy)
        pool.free_all_blocks()
        cupy.get_default_pinned_memory_pool().free_all_blocks()
        print(f"CuPy pool after freeing: {pool.used_bytes()} B in use, {pool.total_bytes()} B held")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
