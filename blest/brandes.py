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
(``docs/betweenness.md``). ``checkpoint=DIR`` keeps the tree nodes of finished blocks so that a
stopped run resumes to the same bits (:mod:`blest.checkpoint.nodes`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from blest.centrality import _device_of, _mpi, _workers, engine_for
from blest.errors import ArgumentError
from blest.inputs import CheckpointPath, Device, GraphInput, Seed, Sources
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
    checkpoint: CheckpointPath | None = None,
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
        this process (with a checkpoint: of the whole run, resumed ones included).
    checkpoint : path, optional
        A directory that keeps the tree node of every finished block of sources
        (:mod:`blest.checkpoint.nodes`): the same call after a Ctrl-C, a kill or a failure
        computes only the missing blocks and returns the same bits. With ``k``, give a
        ``seed`` too, so that the rerun samples the same sources.
    """
    options = {
        "k": k,
        "seed": seed,
        "sources": sources,
        "normalized": bool(normalized),
        "endpoints": bool(endpoints),
        "edges": False,
        "checkpoint": _checkpoint(checkpoint, k, seed),
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
    checkpoint: CheckpointPath | None = None,
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
        "checkpoint": _checkpoint(checkpoint, k, seed),
    }
    return _run(target, options, directed, device, gpus, progress)


def _checkpoint(path: CheckpointPath | None, k: Any, seed: Any) -> str | None:
    """The checkpoint directory as a string; refused for ``k`` without a ``seed`` (a rerun
    would draw other sources)."""
    if path is None:
        return None
    if k is not None and seed is None:
        raise ArgumentError(
            "a checkpoint of sampled betweenness needs a seed: the rerun must draw "
            "the same k sources"
        )
    return os.fspath(path)


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

    report = progress is not None
    return run_local_workers(_worker, workers, target, directed, options, report, progress=progress)


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
    per_rank: bool = False,
) -> Any:
    """This process's range of sources, run batch by batch, reduced over the tree; the
    scores. ``device`` None in a worker or an MPI rank: the rank's own GPU. ``progress`` is
    rank 0's, scaled to the whole job, unless ``per_rank`` (local workers: every rank reports
    its own share, and the parent adds them up)."""
    from blest.checkpoint import nodes

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
        if options["checkpoint"] is None:
            summed = _in_ranges(runner, plan.sources, rank, size, comm, progress, per_rank)
        else:
            what = nodes.what_is_summed(edges, kind["endpoints"])
            at = options["checkpoint"], graph, what, rank, size, comm, progress, per_rank
            summed = nodes.run(runner, plan.sources, *at)
    return finish(
        graph, summed, plan, normalized=options["normalized"], endpoints=endpoints, edges=edges
    )


def _in_ranges(
    runner: Any,
    sources: np.ndarray,
    rank: int,
    size: int,
    comm: Any,
    progress: Any,
    per_rank: bool,
) -> np.ndarray:
    """The root of the tree over ``sources``: this process's contiguous range run batch by
    batch, then every range's pieces reduced."""
    from blest.runtime.distributed import contiguous_ranges, job_progress, reduce_tree

    total, length = sources.size, runner.length
    ranges = contiguous_ranges(total, RANK_ALIGN, size)
    lo, hi = ranges[rank]
    job = job_progress(progress, rank, total, 0, hi - lo, per_rank)
    pieces = run_range(runner, sources, lo, hi, None if job is None else job.within(0))
    if size > 1:
        return reduce_tree(comm, ranges, rank, pieces, length)
    return combine(pieces, total) if pieces else np.zeros(length)


def _worker(
    rank: int, size: int, comm: Any, target: Any, directed: Any, options: dict, report: bool
) -> Any:
    """A local worker's share; with ``report``, its progress goes to the parent."""
    progress = comm.progress if report else None
    return _share(rank, size, comm, target, directed, options, progress, None, True)
