"""Sources over several processes (one per GPU): partition, exact reduction, local workers.

The sources of a multi-source BFS are cut into consecutive batches of ``kappa`` (the GPU runs
``kappa`` searches per batch; consecutive ids are close in the graph's ordering, so a batch
shares most of its frontier). Whole batches are dealt round robin over the ranks, or by
predicted cost (:mod:`blest.runtime.balance`); each rank computes
:class:`~blest.reference.centrality.SourceSums` for its positions, and :func:`reduce_sums`
scatters them into full-length zero arrays and sums those over the ranks. Every position is
computed by exactly one rank, so the float sums are exact (``x + 0.0 == x``) and the result is
bit-identical to a single-process run, whatever the order of the reduction.

Betweenness centrality adds float vectors, whose sums depend on their order: there every rank
takes one contiguous range of source positions (:func:`contiguous_ranges`), and
:func:`reduce_tree` rebuilds the fixed binary tree over the positions from every rank's pieces
(:mod:`blest.reference.treesum`), so the result is bit-identical for any number of ranks.

Two ways to get ranks:

* MPI, one process per GPU over one or more hosts::

      mpirun -n 4 python my_script.py

  where ``my_script.py`` does::

      world = mpi_world()                  # (comm, rank, size), or None outside mpirun
      comm, rank, size = world if world else (SerialComm(), 0, 1)
      sums = cpu_sums_worker(rank, size, comm, graph, sources, kappa, graph.directed)

  (``mpi4py`` and an MPI library must be installed; every rank gets the reduced sums.)
* :func:`run_local_workers`, one spawned process per local GPU, no MPI needed::

      sums = run_local_workers(cpu_sums_worker, 2, graph, sources, kappa, graph.directed)

A communicator is duck-typed: ``Allreduce(sendbuf, recvbuf, op=...)`` on NumPy arrays, with
``Get_rank()`` / ``Get_size()``, as ``mpi4py.MPI.Comm`` has. Only summation is used.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from blest.graph.core import Graph
from blest.reference.centrality import SourceSums, as_sources, source_sums
from blest.reference.treesum import Piece, TreeStack, canonical_pieces
from blest.runtime.balance import assign_batches
from blest.runtime.local_workers import (
    SUM,
    LocalComm,
    WorkerError,
    _check_count,
    _reduce_buffers,
    run_local_workers,
    stop_workers,
)
from blest.runtime.mpi import abort_world, is_mpi4py, local_rank, mpi_world

__all__ = [
    "SUM",
    "JobProgress",
    "LocalComm",
    "SerialComm",
    "WorkerError",
    "abort_world",
    "batches",
    "contiguous_ranges",
    "cpu_sums_worker",
    "job_progress",
    "local_rank",
    "mpi_world",
    "partition",
    "reduce_sums",
    "reduce_pieces",
    "reduce_tree",
    "run_local_workers",
    "stop_workers",
]


# ---------------------------------------------------------------------------- partition
def batches(n_sources: int, kappa: int) -> list[range]:
    """Consecutive batches of ``kappa`` source positions (the last one may be shorter)."""
    n_sources = _check_count("n_sources", n_sources, 0)
    kappa = _check_count("kappa", kappa, 1)
    return [range(at, min(at + kappa, n_sources)) for at in range(0, n_sources, kappa)]


def partition(n_sources: int, kappa: int, rank: int, size: int, *, costs: Any = None) -> np.ndarray:
    """Source positions of ``rank`` among ``size``, whole batches of ``kappa``.

    Without ``costs`` batch ``b`` goes to rank ``b % size``; with ``costs`` (the predicted cost
    of each batch, :func:`blest.runtime.balance.batch_costs`) the batches are dealt longest
    first to the least loaded rank (:func:`blest.runtime.balance.assign_batches`). Returns an
    int64 array, increasing; the ranks together hold every position of ``range(n_sources)``
    exactly once, and ranks past the number of batches hold none.
    """
    n_sources = _check_count("n_sources", n_sources, 0)
    kappa = _check_count("kappa", kappa, 1)
    size = _check_count("size", size, 1)
    rank = _check_count("rank", rank, 0)
    if rank >= size:
        raise ValueError(f"rank {rank} out of range for {size} ranks")
    positions = np.arange(n_sources, dtype=np.int64)
    if costs is None:
        return positions[(positions // kappa) % size == rank]
    costs = np.asarray(costs)
    if costs.shape != (-(-n_sources // kappa),):
        raise ValueError(f"{costs.size} batch costs for {n_sources} sources in batches of {kappa}")
    return positions[assign_batches(costs, size)[positions // kappa] == rank]


class JobProgress:
    """The job's progress from rank 0's: ``progress(done, total)`` over all ``total`` sources,
    ``resumed`` of them done before (a checkpoint's), the rest extrapolated from this rank's
    ``own`` sources (the ranks keep pace: their shares are balanced). On one rank it is exact.
    Call it with the sources of its own done so far; :meth:`within` makes the callback of a
    call that runs its sources from ``base`` on."""

    def __init__(self, progress: Callable[[int, int], None], total: int, resumed: int, own: int):
        self.progress, self.total, self.resumed, self.own = progress, total, resumed, own

    def __call__(self, own_done: int) -> None:
        rest = self.total - self.resumed
        done = self.resumed + (rest * own_done // self.own if self.own else rest)
        self.progress(done, self.total)

    def within(self, base: int) -> Callable[[int, int], None]:
        return lambda done, _total: self(base + done)


def job_progress(
    progress: Callable[[int, int], None] | None,
    rank: int,
    total: int,
    resumed: int,
    own: int,
    per_rank: bool = False,
) -> JobProgress | None:
    """The progress this rank reports, already called once with nothing of its own done; None
    where it reports nothing. Rank 0 reports the job (``total`` sources, ``resumed`` of them
    done before, the rest extrapolated from its ``own``). With ``per_rank`` (local workers,
    whose parent adds up every rank's latest counts) each rank reports its own share exactly:
    the resumed sources on rank 0, which read them, and its ``own``."""
    if progress is None or (rank != 0 and not per_rank):
        return None
    if per_rank:
        resumed = resumed if rank == 0 else 0
        total = resumed + own
    report = JobProgress(progress, total, resumed, own)
    report(0)
    return report


# ---------------------------------------------------------------------------- reduction
def _sum_op(comm: Any) -> Any:
    """``MPI.SUM`` for an mpi4py communicator, else the comm's own ``SUM`` or :data:`SUM`."""
    if is_mpi4py(comm):
        from mpi4py import MPI

        return MPI.SUM
    return getattr(comm, "SUM", SUM)


def reduce_sums(comm: Any, n_sources: int, positions: Any, local: SourceSums) -> SourceSums:
    """Full :class:`SourceSums` on every rank from each rank's sums at its ``positions``.

    Parameters
    ----------
    comm
        A communicator (``Allreduce``); every rank must call this with the same
        ``n_sources``, and the ranks' ``positions`` must not overlap.
    n_sources : int
        Length of the full source list.
    positions : array of int
        Positions (in the full list) of this rank's sources, in the order of ``local``.
    local : SourceSums
        This rank's sums (with pendant sums on every rank or on none).
    """
    positions = np.asarray(positions, dtype=np.int64)
    if positions.shape != (len(local),):
        raise ValueError(f"{positions.size} positions for {len(local)} local sums")
    full = local.scatter(positions, _check_count("n_sources", n_sources, 0))
    op = _sum_op(comm)
    ints = np.stack([full.dist, full.reach])
    floats = np.stack(full.arrays()[2:])  # harmonic, and pendant where there is one
    ints_out, floats_out = np.empty_like(ints), np.empty_like(floats)
    comm.Allreduce(ints, ints_out, op=op)
    comm.Allreduce(floats, floats_out, op=op)
    return SourceSums(ints_out[0], ints_out[1], *floats_out)


def contiguous_ranges(n_sources: int, align: int, size: int) -> list[tuple[int, int]]:
    """``size`` contiguous ranges of source positions, one per rank, in rank order: whole
    blocks of ``align`` positions dealt as evenly as they go (later ranks may get none)."""
    n_sources = _check_count("n_sources", n_sources, 0)
    align = _check_count("align", align, 1)
    size = _check_count("size", size, 1)
    blocks = -(-n_sources // align)
    cuts = [min(n_sources, (r * blocks // size) * align) for r in range(size + 1)]
    return list(zip(cuts[:-1], cuts[1:], strict=True))


def reduce_tree(
    comm: Any, ranges: list[tuple[int, int]], rank: int, pieces: list[Piece], length: int
) -> np.ndarray:
    """The root of the fixed tree over all source positions (:mod:`blest.reference.treesum`),
    on every rank, from each rank's canonical pieces of its range.

    Every rank calls this with the same ``ranges`` (rank r computed ``ranges[r]``, together
    they cover ``[0, P)`` in order) and its own ``pieces``. Each piece of each rank goes
    through one ``Allreduce`` of ``length`` float64s, in position order: its owner sends the
    vector, the others zeros, so the sum is the vector itself (``x + 0.0 == x``) whatever order
    the communicator adds in; every rank then merges the pieces as one process would. Memory:
    O(log P) vectors.
    """
    mine = {(j, i): v for j, i, v in pieces}
    expected = canonical_pieces(*ranges[rank])
    if sorted(mine) != sorted(expected):
        raise ValueError(f"rank {rank}'s pieces are not those of its range {ranges[rank]}")
    owned = [
        (j, i, r)
        for r, (start, stop) in enumerate(ranges)
        for j, i in canonical_pieces(start, stop)
    ]
    return _fold(comm, rank, owned, mine, length)


def reduce_pieces(comm: Any, rank: int, pieces: list[Piece], total: int, length: int) -> np.ndarray:
    """The root of the fixed tree over ``total`` source positions on every rank, from each
    rank's ``pieces``: disjoint tree nodes that together cover ``[0, total)``, wherever they
    lie (a resumed run's blocks, say). One ``Allreduce`` of ``total`` int64s tells every rank
    every piece's place and owner; the vectors then travel as in :func:`reduce_tree`."""
    code = np.zeros(total, dtype=np.int64)  # at a piece's first position: 1 + level + 64 * rank
    for j, i, _ in pieces:
        code[i << j] = 1 + j + 64 * rank
    agreed = np.empty_like(code)
    comm.Allreduce(code, agreed, op=_sum_op(comm))
    owned, at = [], 0
    for start in np.flatnonzero(agreed).tolist():
        j, owner = (int(agreed[start]) - 1) % 64, (int(agreed[start]) - 1) // 64
        if start != at or start & ((1 << j) - 1):
            raise ValueError(f"the ranks' pieces do not tile [0, {total}) at position {start}")
        owned.append((j, start >> j, owner))
        at = start + (1 << j)
    if at != total:
        raise ValueError(f"the ranks' pieces cover [0, {at}), not [0, {total})")
    return _fold(comm, rank, owned, {(j, i): v for j, i, v in pieces}, length)


def _fold(
    comm: Any,
    rank: int,
    owned: list[tuple[int, int, int]],
    mine: dict[tuple[int, int], np.ndarray],
    length: int,
) -> np.ndarray:
    """Every piece ``(j, i, owner)`` of ``owned`` (in position order) through one
    ``Allreduce`` (its owner sends the vector, the others zeros), merged as one process
    would; the root."""
    op = _sum_op(comm)
    stack = TreeStack()
    zeros = np.zeros(length, dtype=np.float64)
    for j, i, owner in owned:
        send = mine[(j, i)] if owner == rank else zeros
        got = np.empty(length, dtype=np.float64)
        comm.Allreduce(np.ascontiguousarray(send, dtype=np.float64), got, op=op)
        stack.push(j, i, got)
    if stack.stop == 0:
        return zeros
    return stack.root(stack.stop)


def cpu_sums_worker(
    rank: int, size: int, comm: Any, graph: Graph, sources: Any, kappa: int, reverse: bool
) -> SourceSums:
    """One rank's share of :func:`~blest.reference.centrality.source_sums`, reduced.

    Computes the sums of this rank's batches on the CPU and returns the sums of all
    ``sources`` (every rank gets them). A worker function for :func:`run_local_workers`.
    """
    srcs = as_sources(sources, graph.n)
    positions = partition(srcs.size, kappa, rank, size)
    local = source_sums(graph, srcs[positions], reverse=reverse)
    return reduce_sums(comm, srcs.size, positions, local)


class SerialComm:
    """A communicator of one rank: ``Allreduce`` copies."""

    rank = 0
    size = 1
    local_rank = 0
    SUM = SUM

    def Get_rank(self) -> int:
        return 0

    def Get_size(self) -> int:
        return 1

    def Allreduce(self, sendbuf: np.ndarray, recvbuf: np.ndarray, op: Any = SUM) -> None:
        recvbuf[...] = _reduce_buffers([np.asarray(sendbuf)], op)
