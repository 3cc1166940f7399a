"""Many BFSs in one call: ``bfs_many``, exact ``closeness`` and ``harmonic`` centrality, on one
GPU, on every GPU of the machine, or on MPI ranks across machines.

The target is a tuned config (``*.blest.json``: its engine, multi-source variant included) or
anything :func:`blest.load_graph` reads (prepared at the default sigma, natural vertex order).
Where it runs: ``device=`` as everywhere (``None``: the GPU when there is one, else SciPy on the
CPU). ``gpus=`` spreads the sources over several processes, one per GPU: ``"all"`` or a count
starts local workers; under ``mpirun -n N`` (mpi4py) every rank runs the same call and takes
its share. Sources are dealt in whole batches of kappa by predicted cost
(:mod:`blest.runtime.balance`), each source is computed by exactly one process, and the
integer sums are reduced exactly: the scores are bit-identical to one GPU.

``checkpoint=DIR`` keeps the sums of every finished block of sources in a directory
(:mod:`blest.checkpoint`): the same call after a Ctrl-C, a kill or a failure computes only
what is missing, with the same bits as a run never stopped.

Exact reductions (``reduce=True``, the default; :mod:`blest.graph.reductions`): isolated
vertices, vertices of degree one and twins of an undirected graph get their sums from other
BFSs, bit-identical to their own (on a directed graph, vertices without in-arcs only). Every
process plans the same BFSs; ``report`` receives one line saying how many were saved. Where
the dense form computes every vertex at once there is nothing to save, and the plan is not
made.

Vertex ids: ``sources`` are the target's own ids (its labels, when it has them: a NetworkX
graph of named nodes, a file read with ``relabel=True``, a config tuned with ``--relabel``),
always a sequence (one source ``v``: ``[v]``). Results follow the sources given, or, with
``sources=None``, the vertex order of :func:`blest.vertex_ids`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from blest.defaults import DEFAULT_KAPPA
from blest.errors import ArgumentError
from blest.graph.labels import id_sequence, vertices_of
from blest.graph.reductions import SourcePlan, plan_sources
from blest.inputs import CheckpointPath, Device, GraphInput, Sources
from blest.reference.centrality import SourceSums, closeness_from_sums, harmonic_from_sums

__all__ = ["bfs_many", "closeness", "harmonic", "source_sums", "engine_for", "graph_of"]

Progress = Callable[[int, int], None]
Report = Callable[[str], None]


def engine_for(target: Any, *, directed: bool | None = None, device: Any = None) -> Any:
    """An engine for a tuned config path or any graph input (see the module docstring)."""
    if _is_config(target):
        from blest.tuning.loader import load_tuned

        if directed is not None:
            raise ArgumentError("directed= does not apply to a tuned config")
        return load_tuned(target, device=device)
    from blest.graph.io import load_graph
    from blest.runtime.factory import make_engine

    graph = load_graph(target, directed=directed)
    if graph.n == 0:
        raise ArgumentError("the graph has no vertices")
    return make_engine(graph, device=device)


def graph_of(target: Any, *, directed: bool | None = None) -> Any:
    """The :class:`~blest.graph.Graph` of a tuned config path (its verified artifact's, labels
    included) or of any graph input."""
    if _is_config(target):
        from blest.tuning.config import TunedConfig
        from blest.tuning.loader import load_prepared

        if directed is not None:
            raise ArgumentError("directed= does not apply to a tuned config")
        return load_prepared(TunedConfig.read(target)).graph
    from blest.graph.io import load_graph

    return load_graph(target, directed=directed)


def _is_config(target: Any) -> bool:
    return isinstance(target, (str, os.PathLike)) and os.fspath(target).lower().endswith(".json")


def bfs_many(
    target: GraphInput,
    sources: Sources,
    *,
    out: np.ndarray | None = None,
    directed: bool | None = None,
    device: Device = None,
    progress: Progress | None = None,
) -> np.ndarray:
    """Levels from every source (the target's own ids, see the module docstring), shape
    ``(len(sources), n)``: row i holds the levels from ``sources[i]``, one column per vertex
    in vertex order (see ``engine.bfs_many``)."""
    sources = id_sequence(sources)
    with engine_for(target, directed=directed, device=device) as eng:
        return eng.bfs_many(vertices_of(eng.graph, sources), out=out, progress=progress)


def source_sums(
    target: GraphInput,
    sources: Sources | None = None,
    *,
    directed: bool | None = None,
    device: Device = None,
    gpus: int | str | None = None,
    progress: Progress | None = None,
    checkpoint: CheckpointPath | None = None,
    reduce: bool = True,
    report: Report | None = None,
) -> SourceSums:
    """Exact per-vertex sums of distances, reaches and harmonic sums over in-arcs;
    ``checkpoint``, ``reduce`` and ``report`` as in :func:`closeness`."""
    options = (checkpoint, reduce, report)
    return _sums_and_n(target, sources, directed, device, gpus, progress, *options)[0]


def _sums_and_n(
    target: Any,
    sources: Any,
    directed: Any,
    device: Any,
    gpus: Any,
    progress: Any,
    checkpoint: CheckpointPath | None,
    reduce: bool,
    report: Report | None,
) -> tuple[SourceSums, int]:
    if sources is not None:
        sources = id_sequence(sources)
    if checkpoint is not None:
        checkpoint = os.fspath(checkpoint)
    world = _mpi()
    if world is not None:
        comm, rank, size = world
        sums, n, line = _share(
            rank, size, comm, target, directed, sources, progress, None, checkpoint, reduce
        )
    elif _workers(gpus) <= 1:
        sums, n, line = _share(
            0, 1, None, target, directed, sources, progress, device, checkpoint, reduce
        )
    else:
        from blest.runtime.distributed import run_local_workers

        if sources is not None:  # ids checked here: an unknown one is the caller's error
            sources = _Vertices(vertices_of(graph_of(target, directed=directed), sources))
        workers = _workers(gpus)
        sums, n, line = run_local_workers(
            _worker,
            workers,
            target,
            directed,
            sources,
            checkpoint,
            reduce,
            progress is not None,
            progress=progress,
        )
    if report is not None and line is not None:
        report(line)
    return sums, n


def closeness(
    target: GraphInput,
    sources: Sources | None = None,
    *,
    wf_improved: bool = True,
    directed: bool | None = None,
    device: Device = None,
    gpus: int | str | None = None,
    progress: Progress | None = None,
    checkpoint: CheckpointPath | None = None,
    reduce: bool = True,
    report: Report | None = None,
) -> np.ndarray:
    """Exact closeness centrality of ``sources`` (default: every vertex, in id order), float64,
    as NetworkX's ``closeness_centrality`` defines it (distances to each vertex).
    ``checkpoint``: a directory that keeps finished blocks, to resume; ``reduce``: the exact
    reductions; ``report(line)``: how many BFSs they saved (see the module docstring)."""
    options = (checkpoint, reduce, report)
    sums, n = _sums_and_n(target, sources, directed, device, gpus, progress, *options)
    return closeness_from_sums(sums, n, wf_improved=wf_improved)


def harmonic(
    target: GraphInput,
    sources: Sources | None = None,
    *,
    directed: bool | None = None,
    device: Device = None,
    gpus: int | str | None = None,
    progress: Progress | None = None,
    checkpoint: CheckpointPath | None = None,
    reduce: bool = True,
    report: Report | None = None,
) -> np.ndarray:
    """Harmonic centrality of ``sources`` (default: every vertex): the sum over the other
    vertices v of 1 / d(v, u), float64; ``checkpoint``, ``reduce`` and ``report`` as in
    :func:`closeness`."""
    options = (checkpoint, reduce, report)
    sums, _ = _sums_and_n(target, sources, directed, device, gpus, progress, *options)
    return harmonic_from_sums(sums)


# ---------------------------------------------------------------------- sharing the work
def _workers(gpus: int | str | None) -> int:
    if gpus is None:
        return 1
    if gpus == "all":
        try:
            import cupy

            return max(1, int(cupy.cuda.runtime.getDeviceCount()))
        except Exception as exc:
            raise ArgumentError(f"gpus='all' needs CuPy and a GPU ({exc})") from None
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise ArgumentError(f"gpus must be 'all' or a count >= 1, got {gpus!r}")
    return gpus


def _mpi() -> Any:
    from blest.runtime.distributed import mpi_world

    return mpi_world()


def _device_of(rank: int, comm: Any) -> Any:
    """The GPU of rank ``rank``: its index among the ranks of its own machine
    (:func:`~blest.runtime.distributed.local_rank`, a collective call) modulo the machine's
    GPUs, so that ranks placed on several machines in any order spread over each machine's
    GPUs; None where the machine has none (the CPU runs). A warning says when ranks of one
    machine share a GPU."""
    import warnings

    from blest.codegen.toolchain import have_gpu
    from blest.runtime.distributed import local_rank

    local = local_rank(comm, rank)
    if not have_gpu():
        return None
    import cupy

    count = int(cupy.cuda.runtime.getDeviceCount())
    if local >= count:
        warnings.warn(
            f"rank {rank} is rank {local} of its machine, which has {count} GPU(s): it shares "
            f"GPU {local % count} with another rank (start at most {count} rank(s) per machine)",
            RuntimeWarning,
            stacklevel=3,
        )
    return local % count


def _share(
    rank: int,
    size: int,
    comm: Any,
    target: Any,
    directed: bool | None,
    sources: Any,
    progress: Progress | None,
    device: Any,
    checkpoint: CheckpointPath | None = None,
    reduce: bool = True,
    per_rank: bool = False,
) -> tuple[SourceSums, int, str | None]:
    """The sums of every source on this process (the plan's BFSs: this process's share
    computed here, the rest reduced from the others, then expanded to every source), n, and
    the plan's summary (rank 0, where a plan was made). ``device`` None in a worker or an MPI
    rank: the rank's own GPU. ``progress`` is rank 0's, scaled to the whole job, unless
    ``per_rank`` (local workers: every rank reports its own share, and the parent adds them
    up)."""
    from blest.runtime.balance import share
    from blest.runtime.distributed import job_progress, reduce_sums

    if device is None and size > 1:
        device = _device_of(rank, comm)
    with engine_for(target, directed=directed, device=device) as eng:
        users = _vertices(eng, sources)  # the vertices to score
        plan, line = _plan(eng, users, reduce, size, checkpoint)
        line = line if rank == 0 else None
        bfs, pendant = plan.bfs, plan.pendant  # the vertices to BFS
        n, kappa = eng.n, _kappa(eng)
        if checkpoint is not None:
            from blest.checkpoint import run

            at = checkpoint, kappa, rank, size, comm, progress, pendant, per_rank
            local = run(eng, bfs, *at)
            return plan.expand(local), n, line
        if size == 1:
            return plan.expand(eng.source_sums(bfs, progress=progress, pendant=pendant)), n, line
        every = np.arange(bfs.size, dtype=np.int64)
        positions = share(eng.graph, eng.permutation.new_of_old, bfs, every, kappa, rank, size)
        job = job_progress(progress, rank, bfs.size, 0, positions.size, per_rank)
        report = None if job is None else job.within(0)
        local = eng.source_sums(bfs[positions], progress=report, pendant=pendant)
    return plan.expand(reduce_sums(comm, bfs.size, positions, local)), n, line


def _plan(
    engine: Any, users: np.ndarray, reduce: bool, size: int, checkpoint: Any
) -> tuple[SourcePlan, str | None]:
    """The BFSs behind the sums of ``users`` (one per source without ``reduce``, or where the
    dense form runs every vertex at once), and the line that says what was saved."""
    if not reduce:
        return SourcePlan.identity(users), None
    if size == 1 and checkpoint is None and _all_at_once(engine, users):
        return SourcePlan.identity(users), "every vertex at once (the dense form): no BFS saved"
    plan = plan_sources(engine.graph, users)
    return plan, plan.summary()


def _all_at_once(engine: Any, users: np.ndarray) -> bool:
    """Whether the engine runs the sums of ``users`` in the dense form (every vertex at once:
    no BFS to save)."""
    many = getattr(engine, "many", None)  # the GPU engine's many-source work
    return many is not None and bool(many.all_at_once(users))


@dataclass(frozen=True)
class _Vertices:
    """Sources already turned into the target's vertices (0 .. n-1)."""

    ids: np.ndarray


def _vertices(engine: Any, sources: Any) -> np.ndarray:
    """The vertices to score: every vertex by default, else those of the given ids."""
    if sources is None:
        return np.arange(engine.n, dtype=np.int64)
    if isinstance(sources, _Vertices):
        return sources.ids
    return vertices_of(engine.graph, sources)


def _worker(
    rank: int,
    size: int,
    comm: Any,
    target: Any,
    directed: Any,
    sources: Any,
    checkpoint: Any,
    reduce: bool,
    report: bool,
) -> Any:
    """A local worker's share; with ``report``, its progress goes to the parent."""
    progress = comm.progress if report else None
    return _share(
        rank, size, comm, target, directed, sources, progress, None, checkpoint, reduce, True
    )


def _kappa(engine: Any) -> int:
    """The batch width the engine runs (the partition deals whole batches)."""
    many = getattr(engine, "many", None)  # the GPU engine's many-source work
    return DEFAULT_KAPPA if many is None else int(many.kappa)
