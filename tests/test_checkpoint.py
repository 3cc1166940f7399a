"""Checkpointed closeness and harmonic runs (blest.checkpoint) on the CPU path: blocks round
trip, a run stopped after two blocks resumes to bit-identical scores (one process, local
workers), another graph or source list is refused, and damaged, truncated, linked, foreign or
stray files are never trusted."""

from __future__ import annotations

import json
import os
import threading
import warnings

import numpy as np
import pytest
from random_graphs import make_directed, make_disconnected, make_power_law

import blest
import blest.centrality as bc
from blest import checkpoint as ck
from blest.defaults import DEFAULT_KAPPA
from blest.errors import ArgumentError, CheckpointError
from blest.graph.core import Graph
from blest.graph.reductions import plan_sources
from blest.reference.centrality import SourceSums, source_sums
from blest.runtime.distributed import SUM, WorkerError

KAPPA = DEFAULT_KAPPA  # the CPU engine's batch width
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="os.chown to another user needs root")


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch):
    """Blocks of one batch (the environment reaches spawned workers too)."""
    monkeypatch.setenv(ck.BLOCK_ENV, str(KAPPA))


class Stop(KeyboardInterrupt):
    """What the progress callback raises: Ctrl-C after ``after`` sources."""


def stopper(after: int):
    """A progress callback that stops the run once more than ``after`` sources are done: in
    the block after the first ``after`` sources, before it is published."""
    seen: list[tuple[int, int]] = []

    def progress(done: int, total: int) -> None:
        seen.append((done, total))
        if done > after:
            raise Stop

    return progress, seen


def bfs_count(g, sources=None) -> int:
    """The BFSs a reduced run makes (what the checkpoint's blocks and progress count)."""
    users = np.arange(g.n) if sources is None else np.asarray(sources)
    return int(plan_sources(g, users).bfs.size)


def blocks(path) -> list[str]:
    return sorted(p for p in os.listdir(path) if ck.BLOCK_NAME.fullmatch(p))


def interrupted(g, path, after, sources=None) -> None:
    progress, _ = stopper(after)
    with pytest.raises(Stop):
        bc.closeness(g, sources, checkpoint=path, progress=progress)


@pytest.fixture
def graph(rng):
    return make_disconnected(rng, int(rng.integers(1400, 1800)))


# ---------------------------------------------------------------------- round trip, resume
def test_blocks_round_trip(tmp_path, rng):
    g = make_power_law(rng, 300)
    users = rng.choice(g.n, 500)
    store = ck.Checkpoint(tmp_path / "ck", g, users)
    store.open()
    assert oct(os.stat(tmp_path / "ck").st_mode & 0o777) == "0o700"
    want = source_sums(g, users, reverse=False)
    for part in (np.arange(0, 200), np.arange(300, 500)[::-1]):
        store.write(part, want.take(part))
    got = ck.Checkpoint(tmp_path / "ck", g, users).finished()
    assert got.positions.tolist() == [*range(200), *range(300, 500)]
    assert got.sums.identical(want.take(got.positions))
    assert len(blocks(tmp_path / "ck")) == 2


@pytest.mark.parametrize("make", [make_disconnected, make_directed])
def test_a_stopped_run_resumes_to_the_same_bits(tmp_path, rng, make):
    g = make(rng, int(rng.integers(1400, 1800)))
    path = tmp_path / "ck"
    interrupted(g, path, after=2 * KAPPA)
    assert len(blocks(path)) == 2
    progress, seen = stopper(g.n)
    got = bc.closeness(g, checkpoint=path, progress=progress)
    assert got.tobytes() == bc.closeness(g).tobytes()
    total = bfs_count(g)
    assert seen[0] == (2 * KAPPA, total) and seen[-1] == (total, total)  # resumed count as done
    assert len(blocks(path)) == -(-total // KAPPA)
    harmonic = bc.harmonic(g, checkpoint=path)  # the same sums: nothing computed again
    assert harmonic.tobytes() == bc.harmonic(g).tobytes()
    assert len(blocks(path)) == -(-total // KAPPA)
    unreduced = bc.closeness(g, reduce=False)  # the reductions change no bit
    assert unreduced.tobytes() == got.tobytes()


def test_sources_with_repeats_resume(tmp_path, rng, graph):
    sources = rng.choice(graph.n, 1100)
    interrupted(graph, tmp_path / "ck", after=KAPPA, sources=sources)
    got = bc.harmonic(graph, sources, checkpoint=tmp_path / "ck")
    assert got.tobytes() == bc.harmonic(graph, sources).tobytes()
    assert bc.source_sums(graph, sources, checkpoint=tmp_path / "ck").identical(
        bc.source_sums(graph, sources)
    )


def test_local_workers_write_their_blocks_and_resume(tmp_path, rng, graph):
    path = tmp_path / "ck"
    interrupted(graph, path, after=2 * KAPPA)
    got = bc.closeness(graph, checkpoint=path, gpus=2)
    assert got.tobytes() == bc.closeness(graph).tobytes()
    assert len(blocks(path)) == -(-bfs_count(graph) // KAPPA)
    again = bc.closeness(graph, checkpoint=path, gpus=3)  # all done: read back only
    assert again.tobytes() == got.tobytes()


def test_local_workers_fill_in_missing_blocks(tmp_path, rng, graph):
    """Blocks written by both workers of a run; with every other one gone, a rerun computes
    those again and keeps the rest."""
    path = tmp_path / "ck"
    bc.closeness(graph, checkpoint=path, gpus=2)
    first = blocks(path)
    for name in first[::2]:
        os.unlink(path / name)  # as if those blocks never finished
    got = bc.closeness(graph, checkpoint=path, gpus=2)
    assert got.tobytes() == bc.closeness(graph).tobytes()
    assert set(first[1::2]) <= set(blocks(path))


def test_an_empty_source_list(tmp_path, graph):
    assert bc.closeness(graph, [], checkpoint=tmp_path / "ck").size == 0


# ---------------------------------------------------------------------- refused
def test_another_graph_or_source_list_is_refused(tmp_path, rng, graph):
    path = tmp_path / "ck"
    interrupted(graph, path, after=KAPPA)
    other = make_disconnected(rng, graph.n)
    with pytest.raises(CheckpointError, match="another graph"):
        bc.closeness(other, checkpoint=path)
    with pytest.raises(CheckpointError, match="another list of sources"):
        bc.closeness(graph, np.arange(graph.n // 2), checkpoint=path)
    with pytest.raises(CheckpointError, match="another list of sources"):  # unreduced: n BFSs
        bc.closeness(graph, checkpoint=path, reduce=False)
    backwards = np.arange(graph.n)[::-1]  # the same BFSs (the plan's are sorted): resumed
    got = bc.closeness(graph, backwards, checkpoint=tmp_path / "ck2")
    assert got.tobytes() == bc.closeness(graph)[::-1].tobytes()
    with pytest.raises(WorkerError, match="another graph"):
        bc.closeness(other, checkpoint=path, gpus=2)
    manifest = json.loads((path / ck.MANIFEST).read_text())
    manifest["blest"] = "0.0.1"
    (path / ck.MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(CheckpointError, match=r"by blest 0\.0\.1"):
        bc.closeness(graph, checkpoint=path)
    (path / ck.MANIFEST).write_text("{}")
    with pytest.raises(CheckpointError, match="not a blest checkpoint manifest"):
        bc.closeness(graph, checkpoint=path)
    assert bc.closeness(graph, checkpoint=tmp_path / "fresh").tobytes() == (
        bc.closeness(graph).tobytes()
    )


def test_unusable_directories_are_refused(tmp_path, graph):
    (tmp_path / "file").write_text("my notes")
    with pytest.raises(CheckpointError, match="not a directory"):
        bc.closeness(graph, checkpoint=tmp_path / "file")
    assert (tmp_path / "file").read_text() == "my notes"
    with pytest.raises(CheckpointError, match="does not exist"):
        bc.closeness(graph, checkpoint=tmp_path / "no" / "ck")
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "link")
    with pytest.raises(CheckpointError, match="symbolic link"):
        bc.closeness(graph, checkpoint=tmp_path / "link")
    interrupted(graph, tmp_path / "ck", after=KAPPA)
    os.unlink(tmp_path / "ck" / ck.MANIFEST)
    with pytest.raises(CheckpointError, match="blocks but no manifest"):
        bc.closeness(graph, checkpoint=tmp_path / "ck")


def test_a_linked_manifest_is_not_followed(tmp_path, graph):
    path = tmp_path / "ck"
    interrupted(graph, path, after=KAPPA)
    os.rename(path / ck.MANIFEST, tmp_path / "elsewhere.json")
    os.symlink(tmp_path / "elsewhere.json", path / ck.MANIFEST)
    with pytest.raises(CheckpointError, match="symbolic link"):
        bc.closeness(graph, checkpoint=path)


@as_root
def test_files_of_another_user_are_not_trusted(tmp_path, graph):
    path = tmp_path / "ck"
    interrupted(graph, path, after=2 * KAPPA)
    os.chown(path / blocks(path)[0], 54321, 54321)
    with pytest.warns(RuntimeWarning, match="belongs to another user"):
        got = bc.closeness(graph, checkpoint=path)
    assert got.tobytes() == bc.closeness(graph).tobytes()
    os.chown(path / ck.MANIFEST, 54321, 54321)
    with pytest.raises(CheckpointError, match="another user"):
        bc.closeness(graph, checkpoint=path)
    os.chown(path, 54321, 54321)
    with pytest.raises(CheckpointError, match="another user"):
        bc.closeness(graph, checkpoint=path)


# ---------------------------------------------------------------------- damaged files
def _damage(path, how: str) -> None:
    data = path.read_bytes()
    if how == "truncated":
        path.write_bytes(data[: len(data) - 13])
    elif how == "flipped":  # a bit of a harmonic sum: only the checksum tells
        path.write_bytes(data[:-3] + bytes([data[-3] ^ 1]) + data[-2:])
    elif how == "header":
        path.write_bytes(b"{not json\n" + data[data.index(b"\n") + 1 :])
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "huge":
        path.write_bytes(data + b"\0" * (ck.SOURCE_BYTES * 10**4))


@pytest.mark.parametrize("how", ["truncated", "flipped", "header", "empty", "huge"])
def test_a_damaged_block_is_computed_again(tmp_path, graph, how):
    path = tmp_path / "ck"
    interrupted(graph, path, after=2 * KAPPA)
    bad = path / blocks(path)[0]
    _damage(bad, how)
    with pytest.warns(RuntimeWarning, match=f"not using the checkpoint block {bad}"):
        got = bc.closeness(graph, checkpoint=path)
    assert got.tobytes() == bc.closeness(graph).tobytes()


def test_a_forged_block_with_a_valid_checksum_is_checked(tmp_path, rng, graph):
    """A block whose sources are not this list's, or whose sums cannot be, is not used."""
    users = np.arange(graph.n, dtype=np.int64)
    store = ck.Checkpoint(tmp_path / "ck", graph, users)
    store.open()
    sums = source_sums(graph, users[:10], reverse=graph.directed)
    store.write(np.arange(10), sums)
    store.users = users[::-1].copy()  # vertices recorded are not the list's
    store.write(np.arange(10, 20), sums)
    store.users = users
    bad = SourceSums(sums.dist, sums.reach + graph.n, sums.harmonic)
    store.write(np.arange(20, 30), bad)
    with pytest.warns(RuntimeWarning) as caught:
        got = ck.Checkpoint(tmp_path / "ck", graph, users).finished()
    reasons = sorted(str(w.message).split(": ")[1].split(";")[0] for w in caught)
    assert reasons == ["its sources are not those of the source list", "its sums are out of range"]
    assert got.positions.tolist() == list(range(10))


def test_blocks_that_disagree_refuse_the_checkpoint(tmp_path, graph):
    users = np.arange(graph.n, dtype=np.int64)
    store = ck.Checkpoint(tmp_path / "ck", graph, users)
    store.open()
    sums = source_sums(graph, users[:10], reverse=graph.directed)
    store.write(np.arange(10), sums)
    store.write(np.arange(5, 10), sums.take(np.arange(5, 10)))  # the same again: fine
    assert store.finished().positions.tolist() == list(range(10))
    other = SourceSums(sums.dist[5:] + 1, sums.reach[5:], sums.harmonic[5:])
    store.write(np.arange(5, 10), other)
    with pytest.raises(CheckpointError, match="disagree"):
        store.finished()


def test_links_and_strays_are_ignored(tmp_path, graph):
    path = tmp_path / "ck"
    interrupted(graph, path, after=2 * KAPPA)
    first = blocks(path)[0]
    os.rename(path / first, tmp_path / "outside.bin")
    os.symlink(tmp_path / "outside.bin", path / first)
    (path / f".{first}.blest-abcdefgh.tmp").write_bytes(b"half a block")  # a kill's leftover
    (path / "notes.txt").write_text("mine")
    with pytest.warns(RuntimeWarning, match="symbolic link") as caught:
        got = bc.closeness(graph, checkpoint=path)
    assert len(caught) == 1
    assert got.tobytes() == bc.closeness(graph).tobytes()
    assert (path / "notes.txt").read_text() == "mine"
    assert os.path.islink(path / first)


def test_a_block_of_another_checkpoint_is_not_used(tmp_path, graph):
    interrupted(graph, tmp_path / "a", after=KAPPA)
    sources = np.arange(graph.n // 2)  # another list of BFSs
    full, half = (plan_sources(graph, s).bfs for s in (np.arange(graph.n), sources))
    assert not np.array_equal(full, half)
    interrupted(graph, tmp_path / "b", after=KAPPA, sources=sources)
    name = blocks(tmp_path / "b")[0]
    os.rename(tmp_path / "b" / name, tmp_path / "a" / name)
    with pytest.warns(RuntimeWarning, match="another manifest"):
        assert bc.closeness(graph, checkpoint=tmp_path / "a").tobytes() == (
            bc.closeness(graph).tobytes()
        )


# ---------------------------------------------------------------------- several ranks
class ThreadComm:
    """A communicator of ``size`` threads: Allreduce sums in rank order."""

    SUM = SUM

    def __init__(self, size: int):
        self.size, self.buffers, self.barrier = size, {}, threading.Barrier(size)

    def rank(self, r: int):
        comm = self

        class Rank:
            SUM = comm.SUM

            def Allreduce(self, send, recv, op=None):
                comm.buffers[r] = np.array(send)
                comm.barrier.wait()
                recv[...] = sum(comm.buffers[q] for q in range(comm.size))
                comm.barrier.wait()

        return Rank()


def _ranks(size, body):
    comm, results = ThreadComm(size), {}

    def run(r):
        try:
            results[r] = body(r, comm.rank(r))
        except BaseException as exc:  # noqa: BLE001 - reported per rank
            results[r] = exc

    threads = [threading.Thread(target=run, args=(r,)) for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return [results[r] for r in range(size)]


def test_every_rank_fails_alike_when_one_cannot_see_the_checkpoint(tmp_path, graph):
    users = np.arange(graph.n, dtype=np.int64)
    paths = [tmp_path / "shared", tmp_path / "local"]  # rank 1 sees another directory

    def body(r, comm):
        store = ck.Checkpoint(paths[r], graph, users)
        if r == 0:
            store.open()
        return ck.agree(comm, r, 2, store, np.zeros(graph.n, bool), "")

    out = _ranks(2, body)
    assert all(isinstance(x, CheckpointError) for x in out), out
    assert "does not exist here" in str(out[1]) and "rank 1 cannot use" in str(out[0])


def test_rank_zero_sends_its_refusal_and_its_finished_blocks(tmp_path, graph):
    users = np.arange(graph.n, dtype=np.int64)
    store = ck.Checkpoint(tmp_path / "ck", graph, users)
    store.open()
    done = np.zeros(graph.n, bool)
    done[3:300:7] = True

    def agree(message):
        def body(r, comm):
            mine = done if r == 0 else np.zeros(graph.n, bool)
            return ck.agree(comm, r, 3, store, mine, message if r == 0 else "")

        return _ranks(3, body)

    for got in agree(""):
        np.testing.assert_array_equal(got, done)
    out = agree("checkpoint X: was written for another graph")
    assert [str(x) for x in out] == ["checkpoint X: was written for another graph"] * 3


def test_progress_of_a_rank_extrapolates_the_job():
    from blest.runtime.distributed import JobProgress

    seen = []
    job = JobProgress(lambda d, t: seen.append((d, t)), total=1000, resumed=200, own=100)
    job(0)
    job.within(50)(25, 999)
    job(100)
    assert seen == [(200, 1000), (800, 1000), (1000, 1000)]


# ---------------------------------------------------------------------- block size
def test_block_size_is_whole_batches(monkeypatch):
    monkeypatch.setenv(ck.BLOCK_ENV, "1000")
    assert ck.block_sources(256) == 768
    monkeypatch.setenv(ck.BLOCK_ENV, "3")
    assert ck.block_sources(256) == 256
    monkeypatch.delenv(ck.BLOCK_ENV)
    assert ck.block_sources(128) == ck.BLOCK_SOURCES
    monkeypatch.setenv(ck.BLOCK_ENV, "many")
    with pytest.raises(ValueError, match=ck.BLOCK_ENV):
        ck.block_sources(128)


def test_no_warning_on_a_clean_resume(tmp_path, graph):
    interrupted(graph, tmp_path / "ck", after=KAPPA)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bc.closeness(graph, checkpoint=tmp_path / "ck")


def test_graph_equal_content_resumes_from_another_object(tmp_path, graph):
    interrupted(graph, tmp_path / "ck", after=KAPPA)
    copy = Graph.from_csr(
        graph.out_ptr.copy(), graph.out_idx.copy(), graph.n, directed=graph.directed
    )
    assert bc.closeness(copy, checkpoint=tmp_path / "ck").tobytes() == (
        bc.closeness(graph).tobytes()
    )


# ---------------------------------------------------------------------- killed commands
@pytest.mark.parametrize("command", ["closeness", "betweenness"])
def test_a_killed_command_resumes_to_the_same_bits(tmp_path, command):
    """``blest closeness --checkpoint`` (or ``betweenness``) killed (SIGKILL, the whole
    process group) after two blocks, then run again: the scores of a run never stopped;
    SIGINT says how to resume."""
    import signal
    import subprocess
    import sys
    import time

    from test_cli_subprocess import cli_env

    from blest.datasets import write_mtx
    from blest.datasets.generators import grid2d

    g = grid2d(90, 90) if command == "closeness" else grid2d(40, 40)
    graph, out, path = tmp_path / "g.mtx", tmp_path / "c.npy", tmp_path / "ck"
    write_mtx(g, graph)
    cmd = [sys.executable, "-m", "blest.cli", command, str(graph), "-o", str(out)]
    cmd += ["--checkpoint", str(path)]
    env = cli_env(tmp_path, **{ck.BLOCK_ENV: str(KAPPA), "BLEST_CPU_JIT": "0"})

    def start():
        return subprocess.Popen(
            cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            start_new_session=True,
        )  # fmt: skip

    def after_blocks(proc, count):
        end = time.monotonic() + 120
        while time.monotonic() < end and proc.poll() is None:
            if path.exists() and len(blocks(path)) >= count:
                return len(blocks(path))
            time.sleep(0.005)
        raise AssertionError(f"no {count} blocks: {proc.poll()} {proc.stderr.read()[-400:]!r}")

    proc = start()
    try:
        after_blocks(proc, 2)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(30)
        proc.stderr.close()
    kept = len(blocks(path))
    assert 2 <= kept < -(-g.n // KAPPA) and not out.exists()
    proc = start()
    try:
        after_blocks(proc, kept + 1)
        proc.send_signal(signal.SIGINT)
        err = proc.communicate(timeout=60)[1].decode()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
    assert proc.returncode in (130, -2), err[-400:]
    assert "the same command resumes from them" in err and "Traceback" not in err
    done = subprocess.run(cmd, env=env, capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr[-400:]
    want = bc.closeness(g) if command == "closeness" else blest.betweenness(g)
    assert np.load(out).tobytes() == want.tobytes()


def test_block_size_from_the_environment(monkeypatch):
    monkeypatch.setenv(ck.BLOCK_ENV, "1000")
    assert ck.block_sources(128) == 896  # whole batches
    monkeypatch.setenv(ck.BLOCK_ENV, "5")
    assert ck.block_sources(128) == 128  # at least one batch
    monkeypatch.delenv(ck.BLOCK_ENV)
    assert ck.block_sources(128) == ck.BLOCK_SOURCES // 128 * 128
    for bad in ("0", "-3", "lots", "1.5"):
        monkeypatch.setenv(ck.BLOCK_ENV, bad)
        with pytest.raises(ArgumentError, match=ck.BLOCK_ENV):
            ck.block_sources(128)
