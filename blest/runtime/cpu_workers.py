"""All-source work of the CPU engine: bit-parallel groups of 64 searches over every core.

The sources are deduplicated and planned into groups of up to 64, each a centre and the
sources nearest to it (:mod:`blest.reference.msbfs_cpu`), and the groups are dealt to worker
processes forked from this one: they share the graph, one per usable core (the CPU affinity
mask; ``BLEST_CPU_WORKERS`` sets another count). A level of a deep graph is mostly Python
between short NumPy calls, which hold the GIL, so threads do not scale and processes do. When
Numba imports and the work is large enough to repay its compile (a second or two, done here
before the workers start), the sums use the compiled search (:mod:`blest.reference
.msbfs_numba`); ``BLEST_CPU_JIT=0`` keeps NumPy, ``1`` asks for Numba whatever the size. Per
source sums come back through a pipe, levels (``bfs_many``) through a buffer each worker shares
with this process. Workers ignore SIGINT (Ctrl-C is this process's to handle) and are stopped
when the call ends, however it ends; a worker that dies is reported as a
:class:`~blest.runtime.distributed.WorkerError`.
"""

from __future__ import annotations

import mmap
import multiprocessing as mp
import os
import signal
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from typing import Any, cast

import numpy as np

from blest.environment import env_count
from blest.errors import ArgumentError, BlestError, GraphLimitError
from blest.graph.core import Graph
from blest.reference import centrality, msbfs_numba
from blest.reference.centrality import SourceSums, sums_from_counts
from blest.reference.msbfs_cpu import (
    GROUP,
    Frame,
    Traversal,
    bit_parallel_pays,
    group_counts,
    group_levels,
    plan_groups,
)
from blest.runtime.arguments import Progress, host_memory_limit
from blest.runtime.distributed import WorkerError, stop_workers
from blest.signals import held_signals

__all__ = ["JIT_ENV", "WORKERS_ENV", "bfs_many", "cpu_workers", "source_sums", "use_jit"]

#: Environment variable with the number of worker processes (default: the usable cores).
WORKERS_ENV = "BLEST_CPU_WORKERS"
#: Environment variable: 0 never compiles with Numba, 1 always does (when it imports).
JIT_ENV = "BLEST_CPU_JIT"
#: Groups times vertices from which Numba's compile pays for itself.
JIT_WORK = 2e7
#: Groups a worker holds at once when results come back through its pipe.
IN_FLIGHT = 2


def cpu_workers() -> int:
    """Worker processes for all-source work: ``$BLEST_CPU_WORKERS`` if set, else the cores
    this process may run on."""
    count = env_count(WORKERS_ENV)
    if count is not None:
        return count
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def use_jit(groups: int, n: int) -> bool:
    """Whether the sums of ``groups`` groups on ``n`` vertices run compiled (see the module
    docstring)."""
    text = os.environ.get(JIT_ENV, "").strip()
    if text not in ("", "0", "1"):
        raise ArgumentError(f"{JIT_ENV} must be 0 or 1, got {text!r}")
    if text == "0" or not msbfs_numba.have_numba():
        return False
    return text == "1" or groups * n >= JIT_WORK


def _plan(graph: Graph, users: np.ndarray, reverse: bool) -> tuple[Any, ...]:
    if int(graph.nnz) + int(graph.n) >= np.iinfo(np.int32).max:
        raise GraphLimitError(
            f"the CPU multi-source BFS indexes arcs with int32: {graph.nnz:,} arcs are too many"
        )
    uniq, inverse = np.unique(np.asarray(users, dtype=np.int64), return_inverse=True)
    trav = Traversal.of(graph, reverse)
    groups = list(plan_groups(trav, uniq))
    weight = np.bincount(inverse, minlength=uniq.size)
    return uniq, inverse.reshape(-1), trav, groups, weight


def source_sums(
    graph: Graph,
    users: np.ndarray,
    *,
    reverse: bool,
    progress: Progress | None = None,
    workers: int | None = None,
    jit: bool | None = None,
    pendant: bool = False,
) -> SourceSums:
    """:class:`SourceSums` of a BFS from each of ``users`` (checked ids; repeats allowed), in
    their order; over in-arcs when ``reverse``; with the pendant harmonic sums when
    ``pendant``. Bit-identical to :func:`blest.reference.centrality.source_sums`. ``jit``:
    search compiled by Numba (None: :func:`use_jit` decides)."""
    if np.asarray(users).size == 0:
        return SourceSums.zeros(0, pendant=pendant)
    uniq, inverse, trav, groups, weight = _plan(graph, users, reverse)
    sums = SourceSums.zeros(uniq.size, pendant=pendant)
    done = [0]
    if jit is None:
        jit = use_jit(len(groups), int(graph.n))
    if jit:
        msbfs_numba.compile_now()  # here, once, before the workers are forked
    count_group = msbfs_numba.group_counts if jit else group_counts
    make_frame = msbfs_numba.frame_around if jit else Frame.around

    def task(i: int, _slot: Any) -> tuple[np.ndarray, ...]:
        members = groups[i]
        frame = make_frame(trav, int(members[0]))
        if bit_parallel_pays(trav, frame, members, levels=False, jit=jit):
            part = sums_from_counts(count_group(frame, members), pendant=pendant)
        else:
            part = centrality.source_sums(graph, members, reverse=reverse, pendant=pendant)
        return part.arrays()

    def collect(i: int, result: tuple[np.ndarray, ...], _slot: Any) -> None:
        at = np.searchsorted(uniq, groups[i])
        for into, got in zip(sums.arrays(), result, strict=True):
            into[at] = got
        _advance(done, int(weight[at].sum()), inverse.size, progress)

    _run(len(groups), task, collect, _count(workers, len(groups)), None, IN_FLIGHT)
    return sums.take(inverse)


def bfs_many(
    graph: Graph,
    users: np.ndarray,
    out: np.ndarray,
    *,
    reverse: bool = False,
    progress: Progress | None = None,
    workers: int | None = None,
) -> np.ndarray:
    """Fill ``out`` (int32 ``(len(users), n)``) with the levels of a BFS from each of
    ``users`` (checked ids; repeats allowed), row i for ``users[i]``; -1 unreachable."""
    users = np.asarray(users, dtype=np.int64)
    if users.size == 0:
        return out
    uniq, inverse, trav, groups, weight = _plan(graph, users, reverse)
    rows = np.argsort(inverse, kind="stable")  # the rows of each unique source, in turn
    first = np.cumsum(weight) - weight
    n = int(graph.n)
    slot_bytes = 4 * GROUP * max(n, 1)
    count = _count(workers, len(groups))
    if count > 1 and count * slot_bytes > host_memory_limit() // 4:
        count = max(1, int(host_memory_limit() // 4 // slot_bytes))
    done = [0]

    def task(i: int, slot: np.ndarray) -> int:
        members = groups[i]
        frame = Frame.around(trav, int(members[0]))
        if bit_parallel_pays(trav, frame, members, levels=True):
            group_levels(frame, members, slot[: members.size])
        else:
            centrality.bfs_many_levels(graph, members, reverse=reverse, out=slot[: members.size])
        return int(members.size)

    def collect(i: int, size: int, slot: np.ndarray) -> None:
        at = np.searchsorted(uniq, groups[i])
        many = weight[at]
        starts = np.repeat(first[at] - (np.cumsum(many) - many), many)
        out[rows[starts + np.arange(int(many.sum()))]] = slot[np.repeat(np.arange(size), many)]
        _advance(done, int(many.sum()), users.size, progress)

    _run(len(groups), task, collect, count, (GROUP, n), 1)
    return out


def _advance(done: list[int], step: int, total: int, progress: Progress | None) -> None:
    done[0] += step
    if progress is not None:
        progress(done[0], total)


def _count(workers: int | None, groups: int) -> int:
    count = cpu_workers() if workers is None else int(workers)
    if count < 1:
        raise ArgumentError(f"workers must be >= 1, got {workers!r}")
    if "fork" not in mp.get_all_start_methods() or mp.current_process().daemon:
        return 1  # no fork here, or a daemon process, which may not start processes
    return min(count, groups)


# ---------------------------------------------------------------------------- the pool
Task = Callable[[int, Any], Any]
Collect = Callable[[int, Any, Any], None]


def _run(
    count: int,
    task: Task,
    collect: Collect,
    workers: int,
    slot_shape: tuple[int, int] | None,
    in_flight: int,
) -> None:
    """``collect(i, task(i, slot), slot)`` for i in 0 .. count-1: here when ``workers`` is
    1, else in forked workers (``collect`` always here, in completion order)."""
    if workers <= 1:
        slot = None if slot_shape is None else np.empty(slot_shape, dtype=np.int32)
        for i in range(count):
            collect(i, task(i, slot), slot)
        return
    ctx = mp.get_context("fork")
    procs: list[Any] = []
    conns: list[Any] = []
    slots: list[Any] = []
    finished = False
    try:
        for rank in range(workers):
            slots.append(_shared(slot_shape))
            parent_end, child_end = ctx.Pipe()
            proc = ctx.Process(
                target=_serve,
                args=(child_end, task, slots[-1]),
                name=f"blest-cpu-{rank}",
                daemon=True,
            )
            # Stop signals are held over the fork: a Ctrl-C there would otherwise raise in
            # the fork's own handlers (parent or child), where it is printed and lost.
            with held_signals():
                proc.start()
                procs.append(proc)
            child_end.close()
            conns.append(parent_end)
        _deal(count, collect, procs, conns, slots, in_flight)
        finished = True
    finally:
        stop_workers(procs, finished)
        for conn in conns:
            conn.close()


def _shared(shape: tuple[int, int] | None) -> np.ndarray | None:
    """An int32 array in memory shared with the processes forked after it (None: none)."""
    if shape is None:
        return None
    buf = mmap.mmap(-1, max(4 * shape[0] * shape[1], 1))
    return np.frombuffer(buf, dtype=np.int32, count=shape[0] * shape[1]).reshape(shape)


def _deal(
    count: int, collect: Collect, procs: list[Any], conns: list[Any], slots: list[Any], depth: int
) -> None:
    busy = [0] * len(procs)
    sent = 0
    by_conn = {id(c): r for r, c in enumerate(conns)}
    by_sentinel = {p.sentinel: r for r, p in enumerate(procs)}

    def feed(rank: int) -> None:
        nonlocal sent
        while busy[rank] < depth and sent < count:
            try:
                conns[rank].send(sent)
            except OSError:  # it ended: its last message (or its exit) says why
                return
            sent += 1
            busy[rank] += 1

    for rank in range(len(procs)):
        feed(rank)
    done = 0
    while done < count:
        for ready in wait(conns + [p.sentinel for p in procs]):
            if isinstance(ready, int):
                rank = by_sentinel[ready]
                if not conns[rank].poll():  # no worker ends on its own before its last word
                    raise _died(rank, procs[rank])
                continue
            rank = by_conn[id(ready)]
            try:
                message = cast(Connection, ready).recv()
            except (EOFError, OSError):  # the worker died mid-message
                raise _died(rank, procs[rank]) from None
            if message[0] == "error":
                _, exc, text = message
                if isinstance(exc, (BlestError, MemoryError)):
                    raise exc
                raise WorkerError(rank, f"{type(exc).__name__}: {exc}", str(text))
            _, i, result = message
            collect(i, result, slots[rank])
            busy[rank] -= 1
            done += 1
            feed(rank)
    for conn in conns:
        try:
            conn.send(None)
        except OSError:  # ended already; every result is in
            pass


def _died(rank: int, proc: Any) -> WorkerError:
    proc.join(1.0)
    return WorkerError(rank, f"exited with code {proc.exitcode}")


def _serve(conn: Any, task: Task, slot: Any) -> None:
    """A worker: run the groups it is sent until it is sent None."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    try:
        while True:
            i = conn.recv()
            if i is None:
                return
            conn.send(("done", i, task(i, slot)))
    except EOFError:
        return  # the parent is gone
    except BaseException as exc:  # reported, then the worker ends
        try:
            conn.send(("error", exc, traceback.format_exc()))
        except Exception:
            conn.send(("error", RuntimeError(str(exc)), traceback.format_exc()))
    finally:
        conn.close()
