"""Partitioning sources over ranks and reducing their sums (blest.runtime.distributed).

Ranks are simulated with threads sharing one fake communicator, with spawned processes
(``run_local_workers``), and with a real ``mpirun -n 2`` when mpi4py and an MPI launcher are
installed. Every distributed result must be bit-identical to the single-process one.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mpi_launch import mpi_launcher, needs_mpi
from random_graphs import arcs_of, make_directed, make_disconnected, make_power_law

from blest.reference.centrality import SourceSums, closeness, closeness_from_sums, source_sums
from blest.runtime import distributed as D
from blest.runtime import mpi as M
from blest.runtime.distributed import (
    SerialComm,
    WorkerError,
    batches,
    cpu_sums_worker,
    mpi_world,
    partition,
    reduce_sums,
    run_local_workers,
)

REPO = Path(__file__).resolve().parent.parent


def assert_identical(a: SourceSums, b: SourceSums) -> None:
    assert a.identical(b), "sums differ in some bit"


# ---------------------------------------------------------------------- partition
def test_batches():
    assert batches(0, 4) == []
    assert batches(10, 4) == [range(0, 4), range(4, 8), range(8, 10)]
    assert batches(3, 8) == [range(0, 3)]
    with pytest.raises(ValueError):
        batches(5, 0)
    with pytest.raises(ValueError):
        batches(-1, 2)


@settings(max_examples=300, deadline=None)
@given(
    n_sources=st.integers(0, 400),
    kappa=st.integers(1, 50),
    size=st.integers(1, 12),
)
def test_partition_deals_whole_batches_round_robin(n_sources, kappa, size):
    parts = [partition(n_sources, kappa, rank, size) for rank in range(size)]
    joined = np.concatenate(parts)
    np.testing.assert_array_equal(np.sort(joined), np.arange(n_sources))
    n_batches = len(batches(n_sources, kappa))
    for rank, positions in enumerate(parts):
        assert positions.dtype == np.int64
        assert np.all(np.diff(positions) > 0)
        mine = [b for i, b in enumerate(batches(n_sources, kappa)) if i % size == rank]
        np.testing.assert_array_equal(positions, [p for b in mine for p in b])
        if rank >= n_batches:
            assert positions.size == 0


def test_partition_rejects_bad_ranks():
    for args in [(10, 2, 2, 2), (10, 2, -1, 2), (10, 2, 0, 0), (10, 0, 0, 1), (-1, 2, 0, 1)]:
        with pytest.raises(ValueError):
            partition(*args)


# ---------------------------------------------------------------------- reduction
class ThreadComm:
    """One rank of an in-process communicator: ranks are threads, reductions meet at a barrier
    and each rank sums every rank's buffer in rank order, as MPI_Allreduce would."""

    SUM = "my-sum"

    def __init__(self, shared: dict, rank: int, size: int):
        self.shared, self.rank, self.size = shared, rank, size

    def Get_rank(self) -> int:
        return self.rank

    def Get_size(self) -> int:
        return self.size

    def Allreduce(self, sendbuf, recvbuf, op=None) -> None:
        assert op == self.SUM
        barrier, slots = self.shared["barrier"], self.shared["slots"]
        slots[self.rank] = np.array(sendbuf, copy=True)
        barrier.wait()
        total = np.zeros_like(slots[0])
        for q in range(self.size):
            total += slots[q]
        barrier.wait()
        recvbuf[...] = total
        self.shared["calls"][self.rank] += 1


def run_threads(size: int, fn, *args) -> list:
    shared = {"barrier": threading.Barrier(size), "slots": [None] * size, "calls": [0] * size}
    results = [None] * size
    errors = []

    def body(rank):
        try:
            results[rank] = fn(rank, size, ThreadComm(shared, rank, size), *args)
        except BaseException as exc:  # pragma: no cover - shown by the assert below
            errors.append(exc)
            shared["barrier"].abort()

    threads = [threading.Thread(target=body, args=(r,)) for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert len(set(shared["calls"])) == 1
    return results


@pytest.mark.parametrize("size, kappa", [(1, 8), (2, 8), (3, 5), (5, 16), (7, 1), (6, 64)])
def test_reduce_sums_bit_identical_to_one_process(size, kappa, rng):
    graph = make_disconnected(rng, 200)
    sources = rng.integers(0, graph.n, 90)
    serial = source_sums(graph, sources, reverse=graph.directed)
    for result in run_threads(size, cpu_sums_worker, graph, sources, kappa, graph.directed):
        assert_identical(result, serial)


def test_reduce_sums_with_serial_comm_and_checks(rng):
    graph = make_power_law(rng, 120)
    serial = source_sums(graph, np.arange(graph.n), reverse=False)
    result = cpu_sums_worker(0, 1, SerialComm(), graph, np.arange(graph.n), 32, False)
    assert_identical(result, serial)
    with pytest.raises(ValueError):
        reduce_sums(SerialComm(), 10, [0, 1, 2], SourceSums.zeros(2))
    with pytest.raises(ValueError):
        SerialComm().Allreduce(np.zeros(2), np.zeros(2), op="max")


# ---------------------------------------------------------------------- local worker processes
def failing_worker(rank: int, size: int, comm, message: str) -> None:
    if rank == 1:
        raise ValueError(message)
    comm.Allreduce(np.zeros(1), np.zeros(1), op=comm.SUM)  # blocks: rank 1 never joins


def dying_worker(rank: int, size: int, comm) -> None:
    os._exit(3)


def test_local_workers_bit_identical_to_serial(rng):
    graph = make_directed(rng, 300)
    sources = np.arange(graph.n)
    serial = source_sums(graph, sources, reverse=True)
    result = run_local_workers(cpu_sums_worker, 2, graph, sources, 16, True)
    assert_identical(result, serial)
    np.testing.assert_array_equal(closeness_from_sums(result, graph.n), closeness(graph))


def summing_worker(rank: int, size: int, comm, seed: int, shapes: list) -> list:
    """Rank r's random buffers (float64 and int64, of every shape asked, large and small, the
    slot growing and shrinking), each reduced; the totals."""
    rng = np.random.default_rng([seed, rank])
    out = []
    for shape in shapes:
        for dtype in (np.float64, np.int64):
            mine = (
                rng.standard_normal(shape) * 1e3
                if dtype is np.float64
                else rng.integers(-(2**40), 2**40, shape)
            )
            total = np.empty(shape, dtype)
            comm.Allreduce(mine.astype(dtype), total, op=comm.SUM)
            out.append(total)
    return out


def _rank_order_sums(size: int, seed: int, shapes: list) -> list:
    buffers = [summing_worker(r, size, _Echo(), seed, shapes) for r in range(size)]
    totals = []
    for k in range(len(buffers[0])):
        total = buffers[0][k].copy()
        for r in range(1, size):
            total += buffers[r][k]
        totals.append(total)
    return totals


class _Echo:
    """A rank alone: Allreduce returns its own buffer (to collect each rank's)."""

    SUM = "sum"

    def Allreduce(self, send, recv, op=None):
        recv[...] = send


def _shared_files() -> set:
    shm = Path("/dev/shm")
    return set(shm.glob("blest-reduce-*")) if shm.is_dir() else set()


@pytest.mark.parametrize("size", [2, 3])
def test_local_workers_reduce_large_buffers_through_shared_memory(size, rng):
    """Buffers past SHARED_MIN_BYTES (and below it) sum in rank order to the same bits as one
    process adding them; no shared file is left behind."""
    from blest.runtime.shared_sums import SHARED_MIN_BYTES

    big = SHARED_MIN_BYTES // 8
    shapes = [(big + 17,), (3, big), (5,), (big // 2 + 1,), (2 * big, 2)]
    seed = int(rng.integers(2**31))
    before = _shared_files()
    got = run_local_workers(summing_worker, size, seed, shapes)
    want = _rank_order_sums(size, seed, shapes)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        assert g.tobytes() == w.tobytes()
    assert _shared_files() == before


def test_shared_slots_in_one_process(tmp_path, monkeypatch):
    """The slot's own rules: its file is the user's with mode 0600, reused while large enough,
    refused when the shared directory has no room (the caller then takes its pipe), and the
    parent refuses a file that is not the worker's."""
    import stat as st

    from blest.runtime import shared_sums as ss

    monkeypatch.setattr(ss, "_DIR", tmp_path)
    slot, parent = ss.SharedSlot(), ss.SharedSums()
    data = np.arange(1000, dtype=np.float64)
    ok, path = slot.stage(data)
    assert ok and path is not None
    mode = os.stat(path).st_mode
    assert st.S_IMODE(mode) == 0o600 and os.stat(path).st_uid == os.geteuid()
    parent.attach(0, path, data.nbytes)
    assert not Path(path).exists()  # unlinked once both sides map it
    np.testing.assert_array_equal(parent.view(0, np.dtype(np.float64), 1000), data)
    parent.write(0, data * 2)
    out = np.empty(1000)
    slot.result(out)
    np.testing.assert_array_equal(out, data * 2)
    assert slot.stage(data[:10]) == (True, None)  # smaller: the same file
    ok, grown = slot.stage(np.zeros(5000))
    assert ok and grown is not None and grown != path
    other = tmp_path / "planted"
    other.write_bytes(b"x" * 8)
    with pytest.raises(OSError, match="not the worker"):
        parent.attach(1, str(other), 4000)
    os.symlink(grown, tmp_path / "link")
    with pytest.raises(OSError):
        parent.attach(1, str(tmp_path / "link"), 8)
    slot.close()
    parent.close()
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["link", "planted"]  # the refused ones stay; the slot's files are gone

    def no_room(fd, offset, length):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ss.os, "posix_fallocate", no_room)
    assert ss.SharedSlot().stage(np.zeros(10)) == (False, None)
    assert sorted(p.name for p in tmp_path.iterdir()) == names
    monkeypatch.setattr(ss, "_DIR", tmp_path / "missing")
    assert ss.shared_dir() is None and ss.SharedSlot().stage(np.zeros(10)) == (False, None)


def counting_worker(rank: int, size: int, comm, steps: int) -> int:
    """Reports its share's progress (rank r has r + 2 units a step), then meets the others."""
    for step in range(1, steps + 1):
        comm.progress(step * (rank + 2), steps * (rank + 2))
    total = np.zeros(1)
    comm.Allreduce(np.ones(1), total, op=comm.SUM)
    return int(total[0])


def test_local_workers_report_their_summed_progress():
    seen: list[tuple[int, int]] = []
    assert run_local_workers(counting_worker, 3, 4, progress=lambda *a: seen.append(a)) == 3
    whole = 4 * (2 + 3 + 4)
    assert seen and all(total == whole for _, total in seen)  # once every rank has reported
    assert all(a[0] <= b[0] for a, b in zip(seen, seen[1:], strict=False))  # never backwards
    assert seen[-1] == (whole, whole)
    assert run_local_workers(counting_worker, 2, 3) == 2  # no progress asked: nothing breaks


def test_closeness_on_local_workers_shows_progress(rng):
    """``gpus=2`` (two CPU workers here): the caller's progress sees every BFS of the plan done,
    and the scores are those of one process."""
    import blest.centrality as bc
    from blest.graph.reductions import plan_sources

    graph = make_power_law(rng, 400)
    seen: list[tuple[int, int]] = []
    got = bc.closeness(graph, gpus=2, progress=lambda *a: seen.append(a))
    assert got.tobytes() == bc.closeness(graph).tobytes()
    bfs = plan_sources(graph, np.arange(graph.n)).bfs.size
    assert seen and seen[-1][0] == seen[-1][1] >= bfs
    assert all(a[0] <= b[0] for a, b in zip(seen, seen[1:], strict=False))


def _progress_reaches_the_end(seen: list, at_least: int) -> None:
    """The caller's progress went forward and ended with every source done."""
    assert seen and seen[-1][0] == seen[-1][1] >= at_least
    assert all(a[0] <= b[0] for a, b in zip(seen, seen[1:], strict=False))


@pytest.mark.parametrize("what", ["closeness", "betweenness"])
def test_scores_on_local_workers_with_a_checkpoint_show_progress(what, rng, tmp_path):
    """``gpus=2`` with a checkpoint, and betweenness with or without one: every rank reports
    its own share, so the parent (which adds them up once each has reported) passes progress
    on; the scores are those of one process."""
    import blest
    import blest.centrality as bc
    from blest.graph.reductions import plan_sources

    graph = make_power_law(rng, 300)
    score = bc.closeness if what == "closeness" else blest.betweenness
    want = score(graph).tobytes()
    runs = [{"checkpoint": tmp_path / "ck"}] + ([{}] if what == "betweenness" else [])
    for kw in runs:
        seen: list[tuple[int, int]] = []
        got = score(graph, gpus=2, progress=lambda *a, seen=seen: seen.append(a), **kw)
        assert got.tobytes() == want, kw
        count = plan_sources(graph, np.arange(graph.n)).bfs.size if what == "closeness" else 1
        _progress_reaches_the_end(seen, min(count, graph.n))


def test_closeness_on_more_workers_than_batches_shows_progress(rng):
    """A worker whose share is empty still reports (nothing of its own to do), so the others'
    progress reaches the caller."""
    import blest.centrality as bc

    graph = make_power_law(rng, 40)  # one batch: the other workers get no source
    seen: list[tuple[int, int]] = []
    got = bc.closeness(graph, gpus=3, progress=lambda *a: seen.append(a))
    assert got.tobytes() == bc.closeness(graph).tobytes()
    _progress_reaches_the_end(seen, 1)


def test_worker_exception_surfaces_in_parent():
    t0 = time.monotonic()
    with pytest.raises(WorkerError) as info:
        run_local_workers(failing_worker, 2, "no luck on rank 1")
    assert info.value.rank == 1
    text = str(info.value)
    assert "ValueError: no luck on rank 1" in text
    assert "failing_worker" in info.value.remote_traceback and "Traceback" in text
    with pytest.raises(WorkerError, match="exited with code 3"):
        run_local_workers(dying_worker, 1)
    assert time.monotonic() - t0 < 30


def test_a_failed_start_surfaces_as_it_is():
    """Arguments that do not pickle fail the first start; that error reaches the caller (not
    an error of stopping a process that never started)."""
    import pickle

    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)) as info:
        run_local_workers(failing_worker, 2, lambda: None)
    assert not isinstance(info.value, AssertionError)
    assert "pickle" in str(info.value)


CTRL_C_SCRIPT = """
import os, sys, time
from blest.runtime.distributed import run_local_workers

def sleeper(rank, size, comm, folder):
    open(os.path.join(folder, f"{rank}.pid"), "w").write(str(os.getpid()))
    if rank == 0:
        time.sleep(300)
    while True:  # busy, in Python
        pass

if __name__ == "__main__":
    run_local_workers(sleeper, 2, sys.argv[1])
"""


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][0]
    except FileNotFoundError:
        return True
    return state in "ZX"


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_ctrl_c_stops_every_worker(tmp_path):
    script = tmp_path / "ctrl_c.py"
    script.write_text(CTRL_C_SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path)],
        env=env,
        start_new_session=True,  # its own process group, as a shell job would have
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while len(list(tmp_path.glob("*.pid"))) < 2:
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline, "workers did not start"
            time.sleep(0.05)
        pids = [int(p.read_text()) for p in tmp_path.glob("*.pid")]
        t0 = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        proc.wait(10)
        elapsed = time.monotonic() - t0
        assert "KeyboardInterrupt" in proc.stderr.read()
        assert all(_gone(pid) for pid in pids)
        assert elapsed < 2.0, f"took {elapsed:.2f} s to stop"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


# ---------------------------------------------------------------------- MPI
def test_mpi_world_outside_a_launcher(monkeypatch):
    for var in M.MPI_ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setitem(sys.modules, "mpi4py", None)  # importing it would now fail
    assert mpi_world() is None
    monkeypatch.setenv("PMI_SIZE", "2")
    assert mpi_world() is None  # launched, but no mpi4py


MPI_SCRIPT = """
import sys
import numpy as np
from blest import Graph
from blest.runtime.distributed import cpu_sums_worker, mpi_world

data = np.load(sys.argv[1])
graph = Graph.from_arcs(data["src"], data["dst"], int(data["n"]), directed=True)
comm, rank, size = mpi_world()
assert size == 2, size
sums = cpu_sums_worker(rank, size, comm, graph, data["sources"], 8, True)
np.savez(sys.argv[2] + f".{rank}.npz", dist=sums.dist, reach=sums.reach, harmonic=sums.harmonic)
"""


@needs_mpi
def test_real_mpirun_two_ranks(tmp_path, rng):
    graph = make_directed(rng, 150)
    src, dst = arcs_of(graph)
    sources = rng.integers(0, graph.n, 70)
    np.savez(tmp_path / "graph.npz", src=src, dst=dst, n=graph.n, sources=sources)
    script = tmp_path / "mpi_run.py"
    script.write_text(textwrap.dedent(MPI_SCRIPT))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [mpi_launcher(), "-n", "2", sys.executable, str(script)]
    cmd += [str(tmp_path / "graph.npz"), str(tmp_path / "out")]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    serial = source_sums(graph, sources, reverse=True)
    for rank in range(2):
        with np.load(tmp_path / f"out.{rank}.npz") as got:
            assert_identical(SourceSums(got["dist"], got["reach"], got["harmonic"]), serial)


# ---------------------------------------------------------------------- ranks on several hosts
class HostComm:
    """One rank of a fake MPI world whose ranks live on hosts: ``Split_type`` (collective, as
    MPI's) gives the ranks of the caller's host, ordered by key."""

    COMM_TYPE_SHARED = "shared"

    def __init__(self, shared: dict, rank: int, hosts: list[str]):
        self.shared, self.rank, self.hosts = shared, rank, hosts

    def Split_type(self, kind, key=0):
        assert kind == self.COMM_TYPE_SHARED
        barrier, keys = self.shared["barrier"], self.shared["keys"]
        keys[self.rank] = key
        barrier.wait()
        mine = [r for r in range(len(self.hosts)) if self.hosts[r] == self.hosts[self.rank]]
        mine.sort(key=lambda r: (keys[r], r))
        barrier.wait()
        return HostComm.Node(mine.index(self.rank), self.shared, self.rank)

    class Node:
        def __init__(self, rank, shared, world_rank):
            self.rank, self.shared, self.world_rank = rank, shared, world_rank

        def Get_rank(self):
            return self.rank

        def Free(self):
            self.shared["freed"][self.world_rank] = True


def _local_ranks(hosts: list[str]) -> list[int]:
    size = len(hosts)
    shared = {"barrier": threading.Barrier(size), "keys": [0] * size, "freed": [False] * size}
    out = [None] * size

    def body(rank):
        out[rank] = M.local_rank(HostComm(shared, rank, hosts), rank)

    threads = [threading.Thread(target=body, args=(r,)) for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert all(shared["freed"]), "the node communicators are freed"
    return out


@pytest.mark.parametrize(
    "hosts",
    [
        ["a", "a", "b", "b"],  # packed by host (mpirun --map-by slot)
        ["a", "b", "a", "b"],  # round robin over hosts (mpirun --map-by node)
        ["a", "b", "c", "a", "b", "c", "a", "b"],  # uneven
        ["a"] * 5,
    ],
)
def test_local_rank_is_the_rank_among_its_hosts_ranks(hosts, monkeypatch):
    for var in M.LOCAL_RANK_ENV_VARS:
        monkeypatch.setenv(var, "7")  # the communicator's answer comes first
    got = _local_ranks(hosts)
    for rank, host in enumerate(hosts):
        assert got[rank] == hosts[:rank].count(host)
    # with 2 GPUs per host, every GPU of a host gets one rank while ranks <= GPUs, whatever
    # the placement (rank % 2 would put ranks 0 and 2 of ["a", "b", "a", "b"] on GPU 0)
    for host in set(hosts):
        gpus = [got[r] % 2 for r in range(len(hosts)) if hosts[r] == host]
        assert sorted(gpus[:2]) == list(range(min(2, len(gpus))))


def test_local_rank_from_the_launcher_or_the_comm(monkeypatch):
    for var in M.LOCAL_RANK_ENV_VARS:
        monkeypatch.delenv(var, raising=False)

    class Plain:  # neither local_rank nor Split_type
        pass

    assert M.local_rank(Plain(), 5) == 5  # one machine: the rank itself
    monkeypatch.setenv("SLURM_LOCALID", "2")
    assert M.local_rank(Plain(), 5) == 2
    monkeypatch.setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1")  # the launcher's own comes first
    assert M.local_rank(Plain(), 5) == 1
    monkeypatch.setenv("OMPI_COMM_WORLD_LOCAL_RANK", "x")  # not a number: the next one
    assert M.local_rank(Plain(), 5) == 2
    # local workers and one process know their own: an inherited SLURM_LOCALID is ignored
    assert M.local_rank(D.LocalComm(3, 4, None), 3) == 3
    assert M.local_rank(SerialComm(), 0) == 0

    class Old(Plain):  # an MPI library without MPI-3's Split_type
        COMM_TYPE_SHARED = 1

        def Split_type(self, kind, key=0):
            raise NotImplementedError

    assert M.local_rank(Old(), 5) == 2


def test_device_of_takes_the_local_rank_modulo_the_gpus(monkeypatch):
    import types

    from blest import centrality
    from blest.codegen import toolchain

    fake = types.SimpleNamespace(
        cuda=types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=lambda: 2))
    )
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setattr(toolchain, "have_gpu", lambda: True)
    assert centrality._device_of(6, D.LocalComm(1, 8, None)) == 1
    with pytest.warns(RuntimeWarning, match="shares GPU 0 with another rank"):
        assert centrality._device_of(7, D.LocalComm(2, 8, None)) == 0
    monkeypatch.setattr(toolchain, "have_gpu", lambda: False)
    assert centrality._device_of(7, D.LocalComm(2, 8, None)) is None


class FakeWorld:
    def __init__(self, size):
        self.size, self.aborted = size, []

    def Get_size(self):
        return self.size

    def Abort(self, code):
        self.aborted.append(code)


def test_abort_world_ends_every_rank_of_a_failed_mpi_job(monkeypatch):
    import types

    world = FakeWorld(4)
    monkeypatch.setitem(sys.modules, "mpi4py.MPI", types.SimpleNamespace(COMM_WORLD=world))
    M.abort_world(0)  # success: nothing to do
    M.abort_world(2)
    assert world.aborted == [2]
    world.size = 1  # one rank: its exit status is enough
    M.abort_world(2)
    assert world.aborted == [2]
    monkeypatch.delitem(sys.modules, "mpi4py.MPI")
    M.abort_world(2)  # outside MPI: nothing


def test_the_cli_aborts_the_job_when_a_rank_fails(monkeypatch, tmp_path, capsys):
    import types

    from blest.cli.commands import main

    world = FakeWorld(3)
    monkeypatch.setitem(sys.modules, "mpi4py.MPI", types.SimpleNamespace(COMM_WORLD=world))
    status = main(["closeness", str(tmp_path / "missing.mtx"), "-o", str(tmp_path / "c.npy")])
    assert status != 0 and world.aborted == [status]
    assert "error" in capsys.readouterr().err


def staging_worker(rank: int, size: int, comm, nbytes: int) -> None:
    """Stages a large buffer, says so, and waits for a total that never comes."""
    comm.Allreduce(np.ones(nbytes // 8), np.empty(nbytes // 8), op=comm.SUM)


@pytest.mark.skipif(not Path("/dev/shm").is_dir(), reason="needs /dev/shm")
def test_a_worker_stopped_mid_reduction_leaves_no_shared_file():
    """The parent stops a worker (SIGTERM) after it staged its buffer in shared memory but
    before the parent took the file: the worker unlinks it on the way out."""
    import multiprocessing as mp

    from blest.runtime.local_workers import _worker_main
    from blest.runtime.shared_sums import SHARED_MIN_BYTES

    ctx = mp.get_context("spawn")
    parent_end, child_end = ctx.Pipe()
    proc = ctx.Process(
        target=_worker_main, args=(staging_worker, 0, 2, child_end, (2 * SHARED_MIN_BYTES,))
    )
    proc.start()
    child_end.close()
    try:
        assert parent_end.poll(60)
        kind, (path, _, _) = parent_end.recv()
        assert kind == "shared" and Path(path).exists()
        proc.terminate()
        proc.join(10)
        assert proc.exitcode is not None
        assert not Path(path).exists()
    finally:
        if proc.is_alive():
            proc.kill()
        parent_end.close()
