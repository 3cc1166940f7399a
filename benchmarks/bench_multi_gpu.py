"""Exact closeness of a sample of vertices on one GPU, on every GPU of the machine, or on MPI
ranks; the scores must be bit-identical.

    python3 benchmarks/bench_multi_gpu.py delaunay-20 --sources 131072 --out DIR
    mpirun -n 2 python3 benchmarks/bench_multi_gpu.py delaunay-20 --sources 131072 --out DIR --mpi

The graph is relabelled in RCM order first (as the tuner would order a mesh). Without --mpi it
times ``blest.closeness(graph, sources)`` on one GPU (engine set-up and traversals timed apart)
and then with ``gpus="all"`` (one worker process per GPU, set-up included), and checks that
the two score arrays are equal bit for bit. With --mpi every rank runs the same call and rank 0
compares its scores with the one-GPU scores saved in --out by a run without --mpi. Every run
makes one BFS per source (``reduce=False``), as the engine's own call does, so that the times
compare like with like.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np
from graphs import anchor_graph

import blest
from blest.centrality import engine_for
from blest.graph.ordering import permute_graph
from blest.runtime.device_ordering import device_ordering


def load(name: str, k: int) -> tuple[object, np.ndarray]:
    graph = anchor_graph(name)
    graph = permute_graph(graph, device_ordering(graph, "rcm"))
    rng = np.random.default_rng(2026)
    sources = np.sort(rng.choice(graph.n, size=min(k, graph.n), replace=False))
    return graph, sources


def local(name: str, k: int, out: Path) -> dict:
    import cupy as cp

    graph, sources = load(name, k)
    t0 = time.perf_counter()
    with engine_for(graph) as eng:
        eng.many.runner()  # the default multi-source variant, compiled and allocated
        t1 = time.perf_counter()
        one = eng.closeness(sources)
        t2 = time.perf_counter()
        variant = eng.many.runner().spec.name
    t3 = time.perf_counter()
    many = blest.closeness(graph, sources, gpus="all", reduce=False)
    t4 = time.perf_counter()
    np.save(out / "closeness-1gpu.npy", one)
    row = {
        "graph": name, "n": graph.n, "arcs": graph.nnz, "sources": int(sources.size),
        "variant": variant, "gpus": int(cp.cuda.runtime.getDeviceCount()),
        "one_gpu_setup_s": t1 - t0, "one_gpu_closeness_s": t2 - t1, "one_gpu_whole_s": t2 - t0,
        "all_gpus_whole_s": t4 - t3, "speedup_whole": (t2 - t0) / (t4 - t3),
        "identical": bool(np.array_equal(one, many)),
    }  # fmt: skip
    return row


def mpi(name: str, k: int, out: Path) -> dict | None:
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    graph, sources = load(name, k)
    comm.Barrier()
    t0 = time.perf_counter()
    scores = blest.closeness(graph, sources, reduce=False)
    comm.Barrier()
    wall = time.perf_counter() - t0
    if comm.Get_rank() != 0:
        return None
    row = {"graph": name, "sources": int(sources.size), "ranks": comm.Get_size()}
    row["mpi_whole_s"] = wall
    ref = out / "closeness-1gpu.npy"
    if ref.exists():
        row["identical_to_one_gpu"] = bool(np.array_equal(np.load(ref), scores))
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("graph")
    ap.add_argument("--sources", type=int, default=131072)
    ap.add_argument("--out", default="bench-out")
    ap.add_argument("--mpi", action="store_true")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    warnings.simplefilter("ignore", RuntimeWarning)  # the untuned default variant is intended
    row = mpi(args.graph, args.sources, out) if args.mpi else local(args.graph, args.sources, out)
    if row is not None:
        print(json.dumps(row, indent=1), flush=True)
        tag = "mpi" if args.mpi else "local"
        (out / f"multi-gpu-{tag}.json").write_text(json.dumps(row, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
