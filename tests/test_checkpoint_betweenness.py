"""Checkpointed betweenness runs (blest.checkpoint.nodes) on the CPU path: a run stopped after
some blocks resumes to the bits of a run never stopped (vertices, endpoints, edges, sampled,
directed; one process, ranks, local workers; other block sizes), the missing positions are cut
into tree nodes and dealt in contiguous runs, and damaged, forged, disagreeing or mismatched
blocks are never trusted."""

from __future__ import annotations

import os

import numpy as np
import pytest
from random_graphs import make_directed, make_disconnected, make_grid, make_power_law
from test_betweenness_tree import run_ranks

import blest
from blest import checkpoint as ck
from blest.checkpoint import nodes
from blest.errors import ArgumentError, CheckpointError
from blest.reference.betweenness import CPURunner

BLOCK = 64  # sources per block in these tests (whole batches of the CPU runner: 64 at most)


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch):
    monkeypatch.setenv(ck.BLOCK_ENV, str(BLOCK))


class Stop(KeyboardInterrupt):
    """Ctrl-C from the progress callback."""


def stop_after(after: int):
    def progress(done: int, total: int) -> None:
        if done > after:
            raise Stop

    return progress


def blocks(path) -> list[str]:
    return sorted(p for p in os.listdir(path) if ck.BLOCK_NAME.fullmatch(p))


def scores(g, path=None, edges=False, **kw):
    if edges:
        return blest.edge_betweenness(g, checkpoint=path, **kw)[1]
    return blest.betweenness(g, checkpoint=path, **kw)


def interrupted(g, path, after, **kw) -> None:
    with pytest.raises(Stop):
        scores(g, path, progress=stop_after(after), **kw)


@pytest.fixture
def graph(rng):
    return make_disconnected(rng, int(rng.integers(300, 400)))


CASES = {
    "vertices": {},
    "endpoints": {"endpoints": True},
    "edges": {"edges": True},
    "sampled": {"k": 150, "seed": 11, "normalized": False},
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("make", [make_disconnected, make_directed, make_power_law])
def test_a_stopped_run_resumes_to_the_same_bits(tmp_path, rng, make, case):
    g = make(rng, int(rng.integers(200, 330)))
    kw = CASES[case]
    want = scores(g, **kw).tobytes()
    path = tmp_path / "ck"
    after = int(rng.integers(BLOCK, kw.get("k", g.n) - 1))
    interrupted(g, path, after, **kw)
    kept = len(blocks(path))
    assert kept >= 1
    seen: list[tuple[int, int]] = []
    assert scores(g, path, progress=lambda d, t: seen.append((d, t)), **kw).tobytes() == want
    assert BLOCK <= seen[0][0] <= after and seen[-1][0] == seen[-1][1]  # resumed, then all
    assert scores(g, path, **kw).tobytes() == want  # everything finished: nothing to run


def test_a_rerun_with_other_block_sizes_and_widths_keeps_the_bits(tmp_path, rng, monkeypatch):
    g = make_grid(rng, 380)
    want = blest.betweenness(g).tobytes()
    path = tmp_path / "ck"
    for size, after in ((64, 70), (16, 200), (256, 300)):
        monkeypatch.setenv(ck.BLOCK_ENV, str(size))
        interrupted(g, path, after)
    got = nodes.run(CPURunner(g, width=4), np.arange(g.n), path, g, _what())
    assert got.tobytes() == _plain(g).tobytes()
    assert blest.betweenness(g, checkpoint=path).tobytes() == want


def _what(edges=False, endpoints=False):
    return nodes.what_is_summed(edges, endpoints)


def _plain(g):
    from blest.reference.betweenness import run_range
    from blest.reference.treesum import combine

    return combine(run_range(CPURunner(g), np.arange(g.n), 0, g.n), g.n)


@pytest.mark.parametrize("size", [2, 3])
def test_ranks_share_the_missing_blocks_and_agree(tmp_path, graph, size):
    """A run stopped on one process, resumed on ``size`` ranks (threads): every rank returns
    the same root as one process; rank 0 alone read the directory."""
    interrupted(graph, tmp_path / "ck", 90)
    want = _plain(graph).tobytes()

    def work(rank, comm):
        runner = CPURunner(graph, width=8)
        path = tmp_path / "ck"
        return nodes.run(runner, np.arange(graph.n), path, graph, _what(), rank, size, comm)

    assert [x.tobytes() for x in run_ranks(size, work)] == [want] * size


def test_local_workers_resume_a_stopped_run(tmp_path, graph):
    want = blest.betweenness(graph).tobytes()
    interrupted(graph, tmp_path / "ck", 60)
    assert blest.betweenness(graph, gpus=2, checkpoint=tmp_path / "ck").tobytes() == want
    assert blest.betweenness(graph, gpus=3, checkpoint=tmp_path / "w").tobytes() == want
    assert blest.betweenness(graph, checkpoint=tmp_path / "w").tobytes() == want


# ---------------------------------------------------------------------- blocks and dealing
def test_missing_blocks_tile_what_is_not_done(rng):
    for _ in range(50):
        total = int(rng.integers(1, 500))
        done = rng.random(total) < rng.random()
        width = int(rng.choice([1, 4, 32, 64]))
        keys = nodes.missing_blocks(done, width)
        covered = np.zeros(total, int)
        for j, i in keys:
            assert 1 << j <= width
            covered[i << j : (i + 1) << j] += 1
        np.testing.assert_array_equal(covered, ~done)
        for size in (1, 2, 3, 7):
            dealt = [nodes.deal(keys, r, size) for r in range(size)]
            assert sum(dealt, []) == keys  # contiguous runs, in rank order
            counts = [sum(1 << j for j, _ in d) for d in dealt]
            assert max(counts) - min(counts) <= 2 * width


def test_block_width_is_a_power_of_two_of_whole_batches(monkeypatch):
    monkeypatch.setenv(ck.BLOCK_ENV, "1000")
    assert nodes.block_width(64) == 512
    assert nodes.block_width(1024) == 1024
    monkeypatch.delenv(ck.BLOCK_ENV)
    assert nodes.block_width(128) == ck.BLOCK_SOURCES


# ---------------------------------------------------------------------- untrusted blocks
def _damage(path, how: str) -> None:
    data = path.read_bytes()
    head = data.index(b"\n") + 1
    if how == "truncated":
        path.write_bytes(data[:-13])
    elif how == "flipped":
        path.write_bytes(data[:-3] + bytes([data[-3] ^ 1]) + data[-2:])
    elif how == "header":
        path.write_bytes(b"{not json\n" + data[head:])
    elif how == "huge":
        path.write_bytes(data + b"\0" * len(data))


@pytest.mark.parametrize("how", ["truncated", "flipped", "header", "huge"])
def test_a_damaged_block_is_computed_again(tmp_path, graph, how):
    path = tmp_path / "ck"
    interrupted(graph, path, 2 * BLOCK)
    bad = path / blocks(path)[0]
    _damage(bad, how)
    with pytest.warns(RuntimeWarning, match=f"not using the checkpoint block {bad}"):
        got = blest.betweenness(graph, checkpoint=path)
    assert got.tobytes() == blest.betweenness(graph).tobytes()


def test_forged_blocks_with_valid_checksums_are_checked(tmp_path, graph):
    store = nodes.TreeCheckpoint(tmp_path / "ck", graph, np.arange(graph.n), _what(), graph.n)
    store.open()
    good = np.ones(graph.n)
    store.write(20, 0, good)  # past the source list
    store.publish({"level": "x", "index": 0}, good.tobytes())  # not a node
    store.write(0, 3, good[:-1])  # too short
    store.write(0, 4, -good)  # dependencies are never negative
    store.write(0, 5, good * np.nan)
    with pytest.warns(RuntimeWarning) as caught:
        held = store.finished()
    reasons = sorted(str(w.message).split(": ")[1].split(";")[0] for w in caught)
    assert reasons == sorted(
        [
            f"its vector is not {graph.n:,} values long",
            "its sources lie outside the source list",
            "its sums are out of range",
            "its sums are out of range",
            "not a node of the tree",
        ]
    )
    assert held.pieces == []


def test_copies_of_a_node_must_agree_and_nested_nodes_are_dropped(tmp_path, graph):
    store = nodes.TreeCheckpoint(tmp_path / "ck", graph, np.arange(graph.n), _what(), graph.n)
    store.open()
    values = np.arange(graph.n, dtype=np.float64)
    store.write(3, 1, values)
    store.write(3, 1, values)  # the same again: fine
    store.write(1, 5, values + 1)  # positions 10, 11: inside (3, 1), dropped
    assert [(j, i) for j, i, _ in store.finished().pieces] == [(3, 1)]
    store.write(3, 1, values + 1)
    with pytest.raises(CheckpointError, match="disagree"):
        store.finished()


def test_another_run_is_refused(tmp_path, graph):
    path = tmp_path / "ck"
    interrupted(graph, path, BLOCK)
    with pytest.raises(CheckpointError, match="for other sums"):
        blest.betweenness(graph, endpoints=True, checkpoint=path)
    with pytest.raises(CheckpointError, match="for other sums"):
        blest.edge_betweenness(graph, checkpoint=path)
    with pytest.raises(CheckpointError, match="another list of sources"):
        blest.betweenness(graph, k=50, seed=1, checkpoint=path)
    other = make_disconnected(np.random.default_rng(5), graph.n)
    with pytest.raises(CheckpointError, match="another graph"):
        blest.betweenness(other, checkpoint=path)
    with pytest.raises(ArgumentError, match="needs a seed"):
        blest.betweenness(graph, k=50, checkpoint=tmp_path / "k")
    assert not (tmp_path / "k").exists()


def test_ranks_fail_alike_on_a_refused_checkpoint(tmp_path, graph):
    interrupted(graph, tmp_path / "ck", BLOCK)

    def work(rank, comm):
        runner = CPURunner(graph, width=8)
        what = _what(endpoints=True)  # not what the directory holds
        try:
            nodes.run(runner, np.arange(graph.n), tmp_path / "ck", graph, what, rank, 2, comm)
        except CheckpointError as exc:
            return str(exc)
        return None

    out = run_ranks(2, work)
    assert out[0] == out[1] and "for other sums" in out[0]


def test_the_command_refuses_a_checkpoint_it_could_not_resume(tmp_path, graph, capsys):
    """Before any work: -k without --seed, a --checkpoint that is the output or the input."""
    from blest.cli import main
    from blest.datasets import write_mtx

    g, out = tmp_path / "g.mtx", tmp_path / "b.npy"
    write_mtx(graph, g)
    bad = [
        (["-k", "5", "--checkpoint", str(tmp_path / "ck")], "needs --seed"),
        (["--checkpoint", str(out)], "is the --out file"),
        (["--checkpoint", str(g)], "input graph"),
    ]
    for extra, message in bad:
        assert main(["betweenness", str(g), "-o", str(out), *extra]) == 2
        assert message in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.mtx"]
    assert main(["betweenness", str(g), "-o", str(out), "-k", "5", "--seed", "3",
                 "--checkpoint", str(tmp_path / "ck")]) == 0  # fmt: skip
    want = blest.betweenness(graph, k=5, seed=3)
    assert np.load(out).tobytes() == want.tobytes() and blocks(tmp_path / "ck")
