"""The fixed reduction tree (blest.reference.treesum, runtime.distributed.reduce_tree): every
partition of the source positions into contiguous ranges and every batch width give the same
bits as the full padded tree, while a plain left-to-right sum does not; betweenness scores are
bit-identical over batch widths, ranks (threads sharing a communicator) and worker processes."""

from __future__ import annotations

import itertools
import threading

import numpy as np
import pytest
from random_graphs import GRAPH_CLASSES

import blest
from blest.reference.betweenness import CPURunner, brandes, run_range
from blest.reference.treesum import (
    PieceSet,
    TreeStack,
    aligned_blocks,
    canonical_pieces,
    combine,
    tree_sum,
)
from blest.runtime.distributed import contiguous_ranges, reduce_pieces, reduce_tree

WIDTHS = (1, 2, 4, 8, 16, 32, 64)


def full_tree(values: np.ndarray) -> np.ndarray:
    """Independent reference: pad to a power of two with zero rows, add pairs level by level."""
    p = values.shape[0]
    size = 1
    while size < p:
        size *= 2
    level = [values[i] if i < p else np.zeros(values.shape[1]) for i in range(size)]
    while len(level) > 1:
        level = [level[i] + level[i + 1] for i in range(0, len(level), 2)]
    return level[0]


class ListRunner:
    """A batch runner over precomputed per-source rows (rows of ``values`` by position)."""

    def __init__(self, values: np.ndarray, width: int) -> None:
        self.values, self.width, self.length = values, width, values.shape[1]

    def run_batch(self, positions: np.ndarray) -> np.ndarray:
        return tree_sum(self.values[positions])


def tree_reducer(values: np.ndarray, cuts: list[int], width: int) -> np.ndarray:
    """The product's way: each range run in aligned batches, pieces combined."""
    runner = ListRunner(values, width)
    positions = np.arange(values.shape[0])
    pieces = []
    for start, stop in itertools.pairwise(cuts):
        pieces += run_range(runner, positions, start, stop)
    return combine(pieces, values.shape[0])


def plain_reducer(values: np.ndarray, cuts: list[int], width: int) -> np.ndarray:
    """The mutant: each range summed left to right, then the ranges' sums in order."""
    total = np.zeros(values.shape[1])
    for start, stop in itertools.pairwise(cuts):
        part = np.zeros(values.shape[1])
        for row in values[start:stop]:
            part = part + row
        total = total + part
    return total


def partitions(p: int, most: int):
    """Every split of range(p) into 1 .. most contiguous non-empty ranges, as cut lists."""
    for parts in range(1, min(most, p) + 1):
        for inner in itertools.combinations(range(1, p), parts - 1):
            yield [0, *inner, p]


def distinct_results(reducer, values: np.ndarray, exhaustive: bool, rng) -> set[bytes]:
    p = values.shape[0]
    if exhaustive:
        cut_lists = list(partitions(p, 7))
    else:
        cut_lists = [
            [0, *sorted(rng.choice(np.arange(1, p), int(r) - 1, replace=False)), p]
            for r in rng.integers(1, 8, size=40)
        ]
    return {reducer(values, cuts, w).tobytes() for cuts in cut_lists for w in WIDTHS}


def random_values(rng, p: int) -> np.ndarray:
    """Per-source vectors of very different magnitudes, so the order of additions shows."""
    return rng.lognormal(0.0, 6.0, size=(p, 4)) * rng.choice([1e-8, 1.0, 1e8], size=(p, 1))


@pytest.mark.parametrize("p", [1, 2, 3, 5, 7, 11, 12])
def test_every_partition_and_width_gives_the_full_trees_bits(p, rng):
    values = random_values(rng, p)
    assert distinct_results(tree_reducer, values, True, rng) == {full_tree(values).tobytes()}


@pytest.mark.parametrize("p", [57, 200, 1000])
def test_random_partitions_of_longer_lists(p, rng):
    values = random_values(rng, p)
    assert distinct_results(tree_reducer, values, False, rng) == {full_tree(values).tobytes()}


def test_a_plain_sum_fails_the_same_check(rng):
    values = random_values(rng, 12)
    assert len(distinct_results(plain_reducer, values, True, rng)) > 1
    values = random_values(rng, 200)
    assert len(distinct_results(plain_reducer, values, False, rng)) > 1


def test_blocks_and_pieces():
    assert aligned_blocks(3, 17, 4) == [(0, 3), (2, 1), (2, 2), (2, 3), (0, 16)]
    assert canonical_pieces(3, 17) == [(0, 3), (2, 1), (3, 1), (0, 16)]
    assert canonical_pieces(0, 13) == [(3, 0), (2, 2), (0, 12)]
    for start, stop in [(0, 1), (5, 6), (7, 100), (64, 128)]:
        covered = []
        for j, i in canonical_pieces(start, stop):
            covered += range(i << j, (i + 1) << j)
        assert covered == list(range(start, stop))
    with pytest.raises(ValueError):
        aligned_blocks(0, 10, 3)  # not a power of two
    stack = TreeStack()
    stack.push(0, 0, np.ones(2))
    with pytest.raises(ValueError):
        stack.push(0, 2, np.ones(2))  # a gap
    with pytest.raises(ValueError):
        stack.root(3)  # does not cover the positions


class ThreadComm:
    """Ranks as threads: ``Allreduce`` waits for every rank and sums in rank order."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.barrier = threading.Barrier(size)
        self.slots: list = [None] * size
        self.result = None

    def for_rank(self, rank: int):
        outer = self

        class Rank:
            SUM = "sum"

            def Get_rank(self) -> int:
                return rank

            def Get_size(self) -> int:
                return outer.size

            def Allreduce(self, send, recv, op=None) -> None:
                outer.slots[rank] = np.array(send, copy=True)
                if outer.barrier.wait() == 0:
                    outer.result = sum(outer.slots[1:], outer.slots[0].copy())
                outer.barrier.wait()
                recv[...] = outer.result
                outer.barrier.wait()

        return Rank()


def run_ranks(size: int, work) -> list:
    comm = ThreadComm(size)
    results: list = [None] * size
    errors: list = []

    def body(rank: int) -> None:
        try:
            results[rank] = work(rank, comm.for_rank(rank))
        except BaseException as exc:  # pragma: no cover - surfaced below
            errors.append(exc)
            comm.barrier.abort()

    threads = [threading.Thread(target=body, args=(r,)) for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors, errors
    return results


@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_reduce_tree_over_ranks(size, rng):
    p = int(rng.integers(1, 300))
    values = random_values(rng, p)
    want = full_tree(values).tobytes()
    align = int(rng.choice([1, 4, 64]))
    ranges = contiguous_ranges(p, align, size)
    assert ranges[0][0] == 0 and ranges[-1][1] == p
    assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))

    def work(rank, comm):
        runner = ListRunner(values, int(rng.choice(WIDTHS)))
        pieces = run_range(runner, np.arange(p), *ranges[rank])
        return reduce_tree(comm, ranges, rank, pieces, values.shape[1]).tobytes()

    assert run_ranks(size, work) == [want] * size


def random_tiling(rng, p: int) -> list[tuple[int, int]]:
    """Disjoint tree nodes covering [0, p): the aligned blocks of random cuts and widths."""
    cuts = sorted({0, p, *rng.integers(0, p + 1, size=int(rng.integers(0, 6))).tolist()})
    keys = []
    for a, b in itertools.pairwise(cuts):
        keys += aligned_blocks(a, b, int(rng.choice(WIDTHS)))
    return keys


def node(values: np.ndarray, j: int, i: int) -> np.ndarray:
    return full_tree(values[i << j : (i + 1) << j])


@pytest.mark.parametrize("p", [1, 6, 13, 64, 250])
def test_pieces_added_in_any_order_give_the_full_trees_bits(p, rng):
    values = random_values(rng, p)
    want = full_tree(values).tobytes()
    for _ in range(5):
        keys = random_tiling(rng, p)
        held = PieceSet()
        for k in rng.permutation(len(keys)).tolist():
            held.add(*keys[k], node(values, *keys[k]))
        assert len(held.pieces) <= len(canonical_pieces(0, p))  # siblings were merged
        assert combine(held.pieces, p).tobytes() == want


@pytest.mark.parametrize("size", [1, 2, 3])
def test_reduce_pieces_over_ranks(size, rng):
    """Pieces anywhere, dealt to ranks at random (a resumed run's blocks): the full tree."""
    p = int(rng.integers(1, 300))
    values = random_values(rng, p)
    keys = random_tiling(rng, p)
    owner = rng.integers(0, size, size=len(keys))

    def work(rank, comm):
        mine = [
            (j, i, node(values, j, i)) for (j, i), o in zip(keys, owner, strict=True) if o == rank
        ]
        return reduce_pieces(comm, rank, mine, p, values.shape[1]).tobytes()

    assert run_ranks(size, work) == [full_tree(values).tobytes()] * size

    comm = ThreadComm(1).for_rank(0)
    pieces = [(j, i, node(values, j, i)) for j, i in keys]
    with pytest.raises(ValueError, match="do not tile"):
        reduce_pieces(comm, 0, pieces[1:], p, values.shape[1])  # position 0 is nobody's
    with pytest.raises(ValueError, match="cover"):
        reduce_pieces(comm, 0, pieces[:-1], p, values.shape[1])  # nor is the last one


def test_scores_are_bit_identical_over_widths_ranks_and_workers(rng):
    g = GRAPH_CLASSES["power_law"](rng, 180)
    want = brandes(g, endpoints=True).tobytes()
    for w in WIDTHS:
        runner = lambda w=w, **kw: CPURunner(g, width=w, **kw)  # noqa: E731
        assert brandes(g, endpoints=True, make_runner=runner).tobytes() == want
    from blest.brandes import _share

    options = {"k": None, "seed": None, "sources": None, "normalized": True}
    options |= {"endpoints": True, "edges": False, "checkpoint": None}
    for size in (2, 3, 7):
        got = run_ranks(size, lambda r, c, s=size: _share(r, s, c, g, None, options, None, "cpu"))
        assert {x.tobytes() for x in got} == {want}
    assert blest.betweenness(g, endpoints=True, gpus=2).tobytes() == want  # spawned workers
