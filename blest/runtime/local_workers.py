"""Local workers: one spawned process per local GPU, and the communicator they share through
their parent (no MPI needed). :func:`run_local_workers` starts them and answers their
reductions; :class:`LocalComm` is a worker's communicator. Small buffers travel over the
workers' pipes, large ones through shared memory (:mod:`blest.runtime.shared_sums`); the
parent adds every rank's buffer in rank order either way.
"""

from __future__ import annotations

import contextlib
import signal
import time
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np

from blest.runtime.shared_sums import SHARED_MIN_BYTES, SharedSlot, SharedSums, shared_dir

__all__ = ["SUM", "LocalComm", "WorkerError", "run_local_workers", "stop_workers"]

#: The summation op of the communicators defined here (MPI communicators use ``MPI.SUM``).
SUM = "sum"


def _check_count(name: str, value: int, low: int) -> int:
    if isinstance(value, bool) or int(value) != value or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def _reduce_buffers(buffers: list[np.ndarray], op: Any) -> np.ndarray:
    if op not in (SUM, None):
        raise ValueError(f"unsupported reduction op {op!r}; only {SUM!r} is implemented")
    total = buffers[0].copy()
    for b in buffers[1:]:
        total += b
    return total


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

    ``Allreduce`` sends the buffer over the worker's pipe, or a large one through shared memory
    (:mod:`blest.runtime.shared_sums`); the parent sums the buffers of all ranks in rank order
    and sends the total back to each.
    """

    SUM = SUM

    def __init__(self, rank: int, size: int, conn: Any):
        self.rank, self.size, self._conn = rank, size, conn
        self.local_rank = rank  # every worker runs on this machine
        self._slot = SharedSlot() if shared_dir() is not None else None

    def Get_rank(self) -> int:
        return self.rank

    def Get_size(self) -> int:
        return self.size

    def Allreduce(self, sendbuf: np.ndarray, recvbuf: np.ndarray, op: Any = SUM) -> None:
        if op not in (SUM, None):
            raise ValueError(f"unsupported reduction op {op!r}; only {SUM!r} is implemented")
        send = np.ascontiguousarray(sendbuf)
        slot = self._slot if send.nbytes >= SHARED_MIN_BYTES else None
        staged, path = slot.stage(send) if slot is not None else (False, None)
        if slot is None or not staged:  # small, or no room in shared memory: the pipe
            self._conn.send(("allreduce", send))
            recvbuf[...] = self._conn.recv()
            return
        self._conn.send(("shared", (path, send.dtype.str, send.size)))
        self._conn.recv()  # the total is in the slot
        slot.result(recvbuf)

    def close(self) -> None:
        """Release the shared buffer."""
        if self._slot is not None:
            self._slot.close()

    def progress(self, done: int, total: int) -> None:
        """Tell the parent this rank's progress (the parent adds up every rank's latest and
        reports it to the caller's ``progress``); no answer is awaited."""
        self._conn.send(("progress", (int(done), int(total))))


def _exit_on_term(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


def _worker_main(fn: Callable[..., Any], rank: int, size: int, conn: Any, args: tuple) -> None:
    """Body of a worker process: run ``fn`` and report its result or its exception."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    # The parent stops a worker with SIGTERM: exit through ``finally``, so that a shared file
    # the parent has not taken yet is unlinked (the default action would leave it behind).
    signal.signal(signal.SIGTERM, _exit_on_term)
    comm = LocalComm(rank, size, conn)
    try:
        result = fn(rank, size, comm, *args)
        # Only rank 0's is returned: the others send None rather than pickle (after a
        # reduction) the same arrays again. An unpicklable result is reported as an error.
        conn.send(("result", result if rank == 0 else None))
    except BaseException as exc:
        conn.send(("error", f"{type(exc).__name__}: {exc}", traceback.format_exc()))
    finally:
        comm.close()
        conn.close()


def stop_workers(procs: list[Any], finished: bool = False, grace: float = 0.5) -> None:
    """Wait up to ``grace`` seconds for workers told to end (``finished``), then terminate
    those still running, and kill those still there ``grace`` seconds later."""
    if finished:
        _join_within(procs, grace)
    for p in procs:
        if p.is_alive():
            p.terminate()
    _join_within(procs, grace)
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join()


def _join_within(procs: list[Any], grace: float) -> None:
    """Join each of ``procs``, all within ``grace`` seconds from now."""
    deadline = time.monotonic() + grace
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))


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
    with contextlib.closing(_Parent(conns, procs, progress)) as parent:
        return parent.run()


class _Parent:
    """The parent's side of :func:`run_local_workers` (see :func:`_serve`)."""

    def __init__(
        self, conns: list[Any], procs: list[Any], progress: Callable[[int, int], None] | None
    ) -> None:
        self.conns, self.procs, self.progress = conns, procs, progress
        size = len(conns)
        self.counts = np.zeros((size, 2), dtype=np.int64)  # each rank's latest (done, total)
        self.heard = np.zeros(size, dtype=bool)  # reported once every rank has: total is whole
        self.pending: dict[int, Any] = {}  # each rank's buffer of the reduction under way
        self.results: dict[int, Any] = {}
        self.shared = SharedSums()

    def run(self) -> Any:
        from multiprocessing.connection import wait

        conns, procs, size = self.conns, self.procs, len(self.conns)
        by_conn = {id(c): r for r, c in enumerate(conns)}
        by_sentinel = {p.sentinel: r for r, p in enumerate(procs)}
        while len(self.results) < size:
            todo = [r for r in range(size) if r not in self.results]
            for ready in wait([conns[r] for r in todo] + [procs[r].sentinel for r in todo]):
                if isinstance(ready, int):  # a process ended; fine once its last message is read
                    r = by_sentinel[ready]
                    if r not in self.results and not conns[r].poll():
                        raise _died(r, procs[r])
                    continue
                r = by_conn[id(ready)]
                self._message(r, *_receive(ready, r, procs[r]))
        return self.results[0]

    def _message(self, r: int, kind: str, payload: Any) -> None:
        if kind == "result":
            self.results[r] = payload
            return
        if kind == "progress":
            self.counts[r], self.heard[r] = payload, True
            if self.progress is not None and self.heard.all():
                done, total = self.counts.sum(axis=0).tolist()
                self.progress(done, total)
            return
        if self.results:
            raise WorkerError(r, "called Allreduce after another worker returned")
        if kind == "shared":  # the buffer is in the worker's shared file
            path, dtype, count = payload
            dtype = np.dtype(dtype)
            if path is not None:
                self.shared.attach(r, path, dtype.itemsize * count)
            payload = self.shared.view(r, dtype, count)
        self.pending[r] = (kind, payload)
        if len(self.pending) == len(self.conns):
            self._reduce()

    def _reduce(self) -> None:
        """Every rank's buffer is in: the total, in rank order, back to each."""
        items = [self.pending[q] for q in range(len(self.conns))]
        self.pending.clear()
        total = _reduce_buffers([buffer for _, buffer in items], SUM)
        for q, (kind, _) in enumerate(items):
            if kind == "shared":
                self.shared.write(q, total)
                self.conns[q].send("summed")
            else:
                self.conns[q].send(total)

    def close(self) -> None:
        self.pending.clear()  # the views of the shared files go first
        self.shared.close()


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
