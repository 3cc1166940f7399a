"""Which sources should share a multi-source batch? A CPU model of the batch's work, by order.

    python3 benchmarks/lab/probe_ms_grouping.py --scale 16 --batches 48 --kappa 64

The multi-source kernels run kappa BFSs in lock step. At a bottom-up level a vertex ORs its
in-neighbours' frontier words and stops once every *active* BFS that has not reached it has
found it; a vertex that some active BFS reaches only later (or never) scans all its in-arcs.
So a batch whose BFSs reach vertices at the same levels stops early more often. This probe
counts, for batches of kappa sources taken in several orders, the arcs a batch reads: per
level, the cheaper of top-down (the out-arcs of the union of the frontiers) and bottom-up (the
in-arcs scanned, with the early stop modelled exactly from every source's levels, plus one
read per vertex). Orders:

* ``internal``: consecutive ids of the graph's default ordering (what a closeness run does);
* ``random``: a random order (the baseline a grouping must beat by far);
* ``degree``: by degree, highest first;
* ``hub``: iBFS's GroupBy idea, sources that share a high-degree neighbour together (key: the
  highest-degree neighbour, then degree);
* ``ring``: by BFS level from the highest-degree vertex, then by hub.

Sources are the vertices of degree >= 2 (leaves and isolated vertices need no BFS of their own).
Prints the mean arcs read per source, per order. A model, not a measurement: it ignores memory
traffic per arc (a vertex-major 128-bit load per in-arc) and the launch and barrier costs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from blest.datasets.generators import kronecker, uniform  # noqa: E402
from blest.graph.classify import default_ordering  # noqa: E402
from blest.graph.ordering import compute_ordering, permute_graph  # noqa: E402
from blest.reference import bfs_levels  # noqa: E402


@njit(cache=True)
def _batch_work(ptr, idx, levels):  # levels: (kappa <= 64, n) int32, -1 unreached
    k, n = levels.shape
    depth = levels.max()
    total = 0
    for L in range(depth):
        frontier = np.zeros(n, np.uint64)
        visited = np.zeros(n, np.uint64)
        active = np.uint64(0)
        for b in range(k):
            bit = np.uint64(1) << np.uint64(b)
            for v in range(n):
                lv = levels[b, v]
                if lv == L:
                    frontier[v] |= bit
                    active |= bit
                if lv >= 0 and lv <= L:
                    visited[v] |= bit
        if active == 0:
            break
        top_down = 0
        for v in range(n):
            if frontier[v] != 0:
                top_down += ptr[v + 1] - ptr[v]
        bottom_up = 0
        for v in range(n):
            todo = ~visited[v] & active
            if todo == 0:
                continue
            got = np.uint64(0)
            for e in range(ptr[v], ptr[v + 1]):
                bottom_up += 1
                got |= frontier[idx[e]]
                if todo & ~got == 0:
                    break
        total += min(top_down, bottom_up + n)  # a bottom-up level also passes every vertex
    return total


def _levels(graph, sources: np.ndarray) -> np.ndarray:
    return np.stack([bfs_levels(graph, int(s)) for s in sources]).astype(np.int32)


def _top(neighbours: np.ndarray, deg: np.ndarray) -> int:
    return int(neighbours[np.argmax(deg[neighbours])])


def grouped(graph, ids: np.ndarray, how: str) -> np.ndarray:
    """``ids`` (vertices of ``graph`` of degree >= 1) in the order ``how`` names: "internal"
    (as given), "degree", "hub" or "ring" (see the module docstring)."""
    if how == "internal":
        return ids
    deg = np.diff(graph.out_ptr)
    ptr, idx = graph.out_ptr, graph.out_idx
    if how == "degree":
        return ids[np.lexsort((ids, -deg[ids]))]
    hub = np.array([_top(idx[ptr[v] : ptr[v + 1]], deg) for v in ids.tolist()])
    if how == "hub":
        return ids[np.lexsort((-deg[ids], hub))]
    if how == "ring":
        ring = bfs_levels(graph, int(np.argmax(deg)))[ids]
        return ids[np.lexsort((hub, ring))]
    raise ValueError(f"unknown order {how!r}")


def orders(graph, rng) -> dict[str, np.ndarray]:
    cand = np.flatnonzero(np.diff(graph.out_ptr) >= 2)
    out = {how: grouped(graph, cand, how) for how in ("internal", "degree", "hub", "ring")}
    out["random"] = rng.permutation(cand)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--family", default="kron", choices=["kron", "urand"])
    ap.add_argument("--scale", type=int, default=16)
    ap.add_argument("--batches", type=int, default=48, help="batches sampled per order")
    ap.add_argument("--kappa", type=int, default=64, choices=[8, 16, 32, 64])
    ap.add_argument("--seed", type=int, default=5)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    raw = (kronecker if a.family == "kron" else uniform)(a.scale)
    graph = permute_graph(raw, compute_ordering(raw, default_ordering(raw)))
    ptr, idx = np.asarray(graph.out_ptr), np.asarray(graph.out_idx)  # undirected: in = out
    print(
        f"{a.family}-{a.scale}: n={graph.n:,} arcs={graph.nnz:,} ordering={default_ordering(raw)}"
    )
    for name, order in orders(graph, rng).items():
        t0 = time.perf_counter()
        starts = rng.choice(order.size // a.kappa, size=a.batches, replace=False) * a.kappa
        work = [
            _batch_work(ptr, idx, _levels(graph, order[s : s + a.kappa])) for s in starts.tolist()
        ]
        per_source = np.mean(work) / a.kappa
        print(
            f"  {name:9s} arcs read per source {per_source:12,.0f}  "
            f"({per_source / graph.nnz:.3f} of the arcs; {time.perf_counter() - t0:.1f} s)"
        )


if __name__ == "__main__":
    main()
