"""Betweenness centrality in one call (Brandes' algorithm): ``betweenness`` (per vertex) and
``edge_betweenness`` (per edge), as NetworkX defines them, on one device, every local GPU, or
MPI ranks. Both are also ``blest.betweenness`` and ``blest.edge_betweenness`` (this module is
not named after them, so that importing it never hides the function ``blest.betweenness``).

The target is a tuned config or anything :func:`blest.load_graph` reads, as for
:func:`blest.closeness`. The sources (every vertex, or ``k`` sampled by ``seed``: see
:func:`blest.reference.betweenness.choose_sources`) are cut into contiguous ranges, one per
process (``gpus="all"`` or a count: local workers; under ``mpirun -n N``: the ranks), each
process runs its range batch by batch, and the per-source contributions are added over a
fixed binary tree over the source positions (:mod:`blest.reference.treesum`), so the scores
are bit-identical whatever the number of processes, GPUs or the batch width
(``docs/betweenness.md``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from blest.centrality import _device_of, _mpi, _workers, engine_for
from blest.inputs import Device, GraphInput, Seed, Sources
from blest.reference.betweenness import (
    CPURunner,
    choose_sources,
    finish,
    run_range,
)
from blest.reference.treesum import combine

__all__ = ["RANK_ALIGN", "betweenness", "edge_betweenness"]

Progress = Callable[[int, int], None]

#: The processes' ranges of source positions start at multiples of this (a power of two), so
#: that a process runs whole batches of up to this many sources.
RANK_ALIGN = 64


def betweenness(
    target: GraphInput,
    *,
    k: int | None = None,
    seed: Seed = None,
    sources: Sources | None = None,
    normalized: bool = True,
    endpoints: bool = False,
    directed: bool | None = None,
    device: Device = None,
    gpus: int | str | None = None,
    progress: Progress | None = None,
) -> np.ndarray:
    """Betweenness centrality of every vertex: float64, in the graph's ids.

    Parameters
    ----------
    target : tuned config path or graph input
        As for :func:`blest.closeness`.
    k : int, optional
        Sample ``k`` sources: ``numpy.random.default_rng(seed).choice(n, k, replace=False)``,
        sorted; the sums are scaled as NetworkX scales sampled betweenness. ``k == n``, or
        no ``k``: every vertex, exact.
    seed : int, numpy Generator or None
        The sampling's seed (only with ``k``); the same seed gives the same sources.
    sources : sequence of int, optional
        The sampled sources themselves (distinct ids; instead of ``k`` and ``seed``).
    normalized, endpoints : bool
        NetworkX's ``normalized`` and ``endpoints`` (docs/betweenness.md).
    directed, device, gpus, progress
        As for :func:`blest.closeness`; ``progress(done, total)`` counts the sources of
        this process.
    """
    options = {
        "k": k,
        "seed": seed,
        "sources": sources,
        "normalized": bool(normalized),
        "endpoints": bool(endpoints),
        "edges": False,
    }
    return _run(target, options, directed, device, gpus, progress)


def edge_betweenness(
    target: GraphInput,
    *,
    k: int | None = None,
    seed: Seed = None,
    sources: Sources | None = None,
    normalized: bool = True,
    directed: bool | None = None,
    device: Device = None,
    gpus: int | str | None = None,
    progress: Progress | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Betweenness centrality of every edge, as NetworkX's ``edge_betweenness_centrality``.

    Returns ``(edges, scores)``: ``edges`` an int64 ``(m, 2)`` array, on a directed graph
    every arc ``(u, v)`` and on an undirected one every edge once as ``(u, v)`` with
    ``u < v``, sorted; ``scores`` float64, aligned. Arguments as for :func:`betweenness`.

    ``edges`` holds vertex positions ``0 .. n-1``, the order of :func:`blest.vertex_ids`, as
    every per-vertex result does (ids of any type fit no int64 array): on a graph with labels,
    ``blest.vertex_ids(target)[edges]`` gives each edge's endpoints as the graph's own ids.
    """
    options = {
        "k": k,
        "seed": seed,
        "sources": sources,
        "normalized": bool(normalized),
        "endpoints": False,
        "edges": True,
    }
    return _run(target, options, directed, device, gpus, progress)


# ---------------------------------------------------------------------- sharing the work
def _run(target: Any, options: dict, directed: Any, device: Any, gpus: Any, progress: Any) -> Any:
    world = _mpi()
    if world is not None:
        comm, rank, size = world
        return _share(rank, size, comm, target, directed, options, progress, None)
    workers = _workers(gpus)
    if workers <= 1:
        return _share(0, 1, None, target, directed, options, progress, device)
    from blest.runtime.distributed import run_local_workers

    return run_local_workers(_worker, workers, target, directed, options)


def _fresh_seed() -> int:
    """A seed below 2**62 drawn from the operating system's entropy."""
    entropy = np.random.SeedSequence().entropy
    assert isinstance(entropy, int)  # a SeedSequence made without entropy draws one int
    return entropy % 2**62


def _agreed_seed(comm: Any, rank: int, options: dict) -> dict:
    """With ``k`` and no seed, every process must draw the same sources: rank 0's fresh seed,
    sent to every rank through a sum (the others add zero)."""
    if options["k"] is None or options["seed"] is not None or options["sources"] is not None:
        return options
    mine = np.array([_fresh_seed() if rank == 0 else 0], np.int64)
    agreed = np.empty_like(mine)
    from blest.runtime.distributed import _sum_op

    comm.Allreduce(mine, agreed, op=_sum_op(comm))
    return {**options, "seed": int(agreed[0])}


def _share(
    rank: int,
    size: int,
    comm: Any,
    target: Any,
    directed: Any,
    options: dict,
    progress: Progress | None,
    device: Any,
) -> Any:
    """This process's range of sources, run batch by batch, reduced over the tree; the
    scores. ``device`` None in a worker or an MPI rank: the rank's own GPU."""
    from blest.runtime.distributed import contiguous_ranges, reduce_tree

    if size > 1:
        options = _agreed_seed(comm, rank, options)
        if device is None:
            device = _device_of(rank, comm)
    edges, endpoints = options["edges"], options["endpoints"]
    with engine_for(target, directed=directed, device=device) as eng:
        graph = eng.graph
        plan = choose_sources(eng.n, options["k"], options["seed"], options["sources"])
        make = getattr(eng, "betweenness_runner", None)
        kind = {"edges": edges, "endpoints": endpoints and not edges}
        runner = make(**kind) if make is not None else CPURunner(graph, **kind)
        total = plan.sources.size
        ranges = contiguous_ranges(total, RANK_ALIGN, size)
        report = progress if rank == 0 else None
        pieces = run_range(runner, plan.sources, *ranges[rank], report)
        length = runner.length
    if size > 1:
        summed = reduce_tree(comm, ranges, rank, pieces, length)
    else:
        summed = combine(pieces, total) if pieces else np.zeros(length)
    return finish(
        graph, summed, plan, normalized=options["normalized"], endpoints=endpoints, edges=edges
    )


def _worker(rank: int, size: int, comm: Any, target: Any, directed: Any, options: dict) -> Any:
    return _share(rank, size, comm, target, directed, options, None, None)
