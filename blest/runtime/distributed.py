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

import signal
import time
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np

from blest.graph.core import Graph
from blest.reference.centrality import SourceSums, as_sources, source_sums
from blest.reference.treesum import Piece, TreeStack, canonical_pieces
from blest.runtime.balance import assign_batches
from blest.runtime.mpi import abort_world, local_rank, mpi_world

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
    "local_rank",
    "mpi_world",
    "partition",
    "reduce_sums",
    "reduce_pieces",
    "reduce_tree",
    "run_local_workers",
    "stop_workers",
]

#: The summation op of the communicators defined here (MPI communicators use ``MPI.SUM``).
SUM = "sum"


# ---------------------------------------------------------------------------- partition
def _check_count(name: str, value: int, low: int) -> int:
    if isinstance(value, bool) or int(value) != value or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


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


# ---------------------------------------------------------------------------- reduction
def _sum_op(comm: Any) -> Any:
    """``MPI.SUM`` for an mpi4py communicator, else the comm's own ``SUM`` or :data:`SUM`."""
    if type(comm).__module__.startswith("mpi4py"):
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


def _reduce_buffers(buffers: list[np.ndarray], op: Any) -> np.ndarray:
    if op not in (SUM, None):
        raise ValueError(f"unsupported reduction op {op!r}; only {SUM!r} is implemented")
    total = buffers[0].copy()
    for b in buffers[1:]:
        total += b
    return total


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


# ---------------------------------------------------------------------------- local workers
class WorkerError(RuntimeError):
    """A worker process failed; carries its rank and its traceback text.

    Attributes
    ----------
    rank : int
    remote_traceback : str
        The traceback as the worker formatted it ("" when the worker died without one).
    """

    def __init__(self, rank: int, message: str, remote_traceback: str = ""):
        self.rank = rank
        self.remote_traceback = remote_traceback
        text = f"worker {rank}: {message}"
        if remote_traceback:
            text += "\n\nTraceback in the worker:\n" + remote_traceback.rstrip()
        super().__init__(text)


class LocalComm:
    """The communicator of a :func:`run_local_workers` worker: reductions go through the parent.

    ``Allreduce`` sends the buffer over the worker's pipe; the parent sums the buffers of all
    ranks in rank order and sends the total back to each.
    """

    SUM = SUM

    def __init__(self, rank: int, size: int, conn: Any):
        self.rank, self.size, self._conn = rank, size, conn
        self.local_rank = rank  # every worker runs on this machine

    def Get_rank(self) -> int:
        return self.rank

    def Get_size(self) -> int:
        return self.size

    def Allreduce(self, sendbuf: np.ndarray, recvbuf: np.ndarray, op: Any = SUM) -> None:
        if op not in (SUM, None):
            raise ValueError(f"unsupported reduction op {op!r}; only {SUM!r} is implemented")
        self._conn.send(("allreduce", np.ascontiguousarray(sendbuf)))
        recvbuf[...] = self._conn.recv()

    def progress(self, done: int, total: int) -> None:
        """Tell the parent this rank's progress (the parent adds up every rank's latest and
        reports it to the caller's ``progress``); no answer is awaited."""
        self._conn.send(("progress", (int(done), int(total))))


def _worker_main(fn: Callable[..., Any], rank: int, size: int, conn: Any, args: tuple) -> None:
    """Body of a worker process: run ``fn`` and report its result or its exception."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    try:
        result = fn(rank, size, LocalComm(rank, size, conn), *args)
        conn.send(("result", result))  # an unpicklable result is reported as an error
    except BaseException as exc:
        conn.send(("error", f"{type(exc).__name__}: {exc}", traceback.format_exc()))
    finally:
        conn.close()


def stop_workers(procs: list[Any], finished: bool = False, grace: float = 0.5) -> None:
    """Wait up to ``grace`` seconds for workers told to end (``finished``), then terminate
    those still running, and kill those still there ``grace`` seconds later."""
    if finished:
        deadline = time.monotonic() + grace
        for p in procs:
            p.join(max(0.0, deadline - time.monotonic()))
    for p in procs:
        if p.is_alive():
            p.terminate()
    deadline = time.monotonic() + grace
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join()


def run_local_workers(
    fn: Callable[..., Any],
    n_workers: int,
    *args: Any,
    progress: Callable[[int, int], None] | None = None,
) -> Any:
    """Run ``fn(rank, size, comm, *args)`` in ``n_workers`` spawned processes.

    ``fn`` must be a picklable top-level function, and every worker must make the same
    sequence of ``comm.Allreduce`` calls. Returns rank 0's result (after an ``Allreduce``
    every rank holds the same reduced arrays). Workers are not daemons, so they may start
    processes of their own (a kernel compile pool); they never outlive this call. A worker's
    ``comm.progress(done, total)`` reaches ``progress`` here, as the sums of every rank's
    latest counts (from the time every rank has reported once).

    Raises
    ------
    WorkerError
        A worker raised (its traceback text is in the message) or died; the other workers
        are stopped.
    KeyboardInterrupt
        After stopping every worker (SIGTERM, then SIGKILL 0.5 s later). Workers ignore
        SIGINT, so a Ctrl-C sent to the whole process group is handled here only.
    """
    import multiprocessing as mp

    size = _check_count("n_workers", n_workers, 1)
    ctx = mp.get_context("spawn")
    conns: list[Any] = []
    procs: list[Any] = []
    try:
        for rank in range(size):
            parent_end, child_end = ctx.Pipe()
            conns.append(parent_end)
            p = ctx.Process(
                target=_worker_main,
                args=(fn, rank, size, child_end, args),
                name=f"blest-worker-{rank}",
            )
            p.start()  # a failure here (arguments that do not pickle) propagates as it is
            procs.append(p)
            child_end.close()
        return _serve(conns, procs, progress)
    finally:
        stop_workers(procs)
        for c in conns:
            c.close()


def _serve(
    conns: list[Any], procs: list[Any], progress: Callable[[int, int], None] | None = None
) -> Any:
    """The parent's loop: answer reductions, pass progress on, collect results, surface
    failures."""
    from multiprocessing.connection import wait

    size = len(conns)
    counts = np.zeros((size, 2), dtype=np.int64)  # each rank's latest (done, total)
    heard = np.zeros(size, dtype=bool)  # reported once every rank has: the total is whole
    by_conn = {id(c): r for r, c in enumerate(conns)}
    by_sentinel = {p.sentinel: r for r, p in enumerate(procs)}
    pending: dict[int, np.ndarray] = {}
    results: dict[int, Any] = {}
    while len(results) < size:
        todo = [r for r in range(size) if r not in results]
        for ready in wait([conns[r] for r in todo] + [procs[r].sentinel for r in todo]):
            if isinstance(ready, int):  # a process ended; fine once its last message is read
                r = by_sentinel[ready]
                if r not in results and not conns[r].poll():
                    raise _died(r, procs[r])
                continue
            r = by_conn[id(ready)]
            kind, payload = _receive(ready, r, procs[r])
            if kind == "result":
                results[r] = payload
                continue
            if kind == "progress":
                counts[r], heard[r] = payload, True
                if progress is not None and heard.all():
                    done, total = counts.sum(axis=0).tolist()
                    progress(done, total)
                continue
            if results:
                raise WorkerError(r, "called Allreduce after another worker returned")
            pending[r] = payload
            if len(pending) == size:
                total = _reduce_buffers([pending[q] for q in range(size)], SUM)
                for q in range(size):
                    conns[q].send(total)
                pending.clear()
    return results[0]


def _died(rank: int, proc: Any) -> WorkerError:
    proc.join(1.0)
    return WorkerError(rank, f"exited with code {proc.exitcode} without a result")


def _receive(conn: Any, rank: int, proc: Any) -> tuple[str, Any]:
    """The next ("allreduce" | "progress" | "result", payload) message of a worker; raises its
    failure."""
    try:
        kind, *payload = conn.recv()
    except EOFError:
        raise _died(rank, proc) from None
    if kind == "error":
        raise WorkerError(rank, payload[0], payload[1])
    return kind, payload[0]
