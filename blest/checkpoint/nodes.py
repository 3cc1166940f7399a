"""Checkpoints of betweenness runs: the finished nodes of the fixed reduction tree
(:mod:`blest.reference.treesum`), so that a run stopped by Ctrl-C, a kill or a failure
continues where it stopped and ends with the same bits as a run never stopped
(:mod:`blest.checkpoint.store` holds the directory's rules).

A block is an aligned dyadic interval of source positions, ``2**j`` of them starting at a
multiple of ``2**j``: a node of the tree. Its file holds that node, the float64 sum, in the
tree's order, of the dependencies (per vertex, or per arc) of its sources. Whatever blocks a
rerun finds, the rest of the positions are cut into nodes too, and the root of the tree over
all of them is the same sum, bit for bit, as a run in one piece. Blocks are
``BLOCK_SOURCES`` sources (``$BLEST_CHECKPOINT_BLOCK`` sets another count), rounded down to a
power of two and at least one batch of the runner; the ranks share the missing blocks in
contiguous runs of about equal source counts. A block whose node cannot be this run's (outside
the source list, of another length, a negative or non-finite value) is not used; two valid
blocks of one node that disagree refuse the checkpoint.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import numpy as np

from blest.checkpoint.store import Store, block_count, resume
from blest.reference.betweenness import BatchRunner, run_range
from blest.reference.treesum import Piece, PieceSet, aligned_blocks, combine
from blest.runtime.distributed import job_progress, reduce_pieces

__all__ = ["TreeCheckpoint", "block_width", "run", "what_is_summed"]


def what_is_summed(edges: bool, endpoints: bool) -> str:
    """The manifest's description of a node's vector."""
    if edges:
        return "betweenness dependencies of arcs"
    return "betweenness dependencies of vertices" + (", with endpoints" if endpoints else "")


def block_width(batch: int) -> int:
    """Sources per block: the asked count rounded down to a power of two, at least ``batch``
    (the runner's width, a power of two)."""
    count = block_count()
    return max(int(batch), 1 << (count.bit_length() - 1))


class TreeCheckpoint(Store):
    """A checkpoint directory for the tree nodes of ``sources`` on ``graph``: vectors of
    ``length`` float64s holding ``what`` (:func:`what_is_summed`)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        graph: Any,
        sources: np.ndarray,
        what: str,
        length: int,
    ) -> None:
        self.sources = np.ascontiguousarray(sources, dtype=np.int64)
        self.length = int(length)
        fields = {
            "sums": what,
            "graph": graph.content_hash(),
            "n": int(graph.n),
            "directed": bool(graph.directed),
            "sources": hashlib.sha256(self.sources.astype("<i8").tobytes()).hexdigest(),
            "count": int(self.sources.size),
            "length": self.length,
        }
        super().__init__(path, fields)

    def write(self, j: int, i: int, vector: np.ndarray) -> Path:
        """Publish node ``(j, i)``, the sum over positions ``[i * 2**j, (i + 1) * 2**j)``."""
        payload = np.ascontiguousarray(vector, dtype="<f8").tobytes()
        return self.publish({"level": int(j), "index": int(i)}, payload)

    def finished(self) -> PieceSet:
        """The nodes of the valid blocks, merged with their siblings as the tree merges them;
        a node inside another is dropped, and two copies of one node that differ refuse the
        checkpoint. The files are read twice (checked, then summed), so that no more than a
        few vectors are held at a time."""
        found: dict[tuple[int, int], tuple[Path, str]] = {}
        for path, header, payload in self.blocks(8 * self.length):
            node = self._read_block(header, payload)
            if isinstance(node, str):
                self.unused(path, node)
                continue
            key, digest = node[:2], header["sha256"]
            if key in found and found[key][1] != digest:
                raise self._error("two blocks disagree on the same sources (damaged)")
            found[key] = (path, digest)
        held, end = PieceSet(), 0
        for (j, i), (path, digest) in sorted(found.items(), key=_by_position):
            if i << j < end:  # dyadic intervals nest or lie apart: this one is inside
                continue
            end = (i + 1) << j
            held.add(*self._reread(path, digest))
        return held

    def _reread(self, path: Path, digest: str) -> Piece:
        """The node of the block at ``path``, read again: it must still be the one checked."""
        for _, header, payload in self.blocks(8 * self.length, [path.name]):
            node = self._read_block(header, payload)
            if header["sha256"] == digest and not isinstance(node, str):
                return node
        raise self._error(f"the block {path.name} changed while it was being read")

    def _read_block(self, header: dict[str, Any], payload: bytes) -> Piece | str:
        """The node of a block whose envelope holds, or why it is not used."""
        j, i = header.get("level"), header.get("index")
        if type(j) is not int or type(i) is not int or not 0 <= j < 63 or i < 0:
            return "not a node of the tree"
        if (i + 1) << j > self.sources.size:
            return "its sources lie outside the source list"
        if len(payload) != 8 * self.length:
            return f"its vector is not {self.length:,} values long"
        vector = np.frombuffer(payload, dtype="<f8").astype(np.float64)
        if not (np.isfinite(vector).all() and (vector >= 0).all()):
            return "its sums are out of range"
        return j, i, vector


def _by_position(item: tuple[tuple[int, int], Any]) -> tuple[int, int]:
    (j, i), _ = item
    return i << j, -j  # a node before the nodes inside it


def missing_blocks(done: np.ndarray, width: int) -> list[tuple[int, int]]:
    """The nodes, in position order, that cut every run of positions not ``done`` into
    blocks of at most ``width`` sources."""
    edges = np.flatnonzero(np.diff(np.concatenate([[True], done, [True]]).astype(np.int8)))
    blocks = []
    for lo, hi in zip(edges[0::2].tolist(), edges[1::2].tolist(), strict=True):
        blocks += aligned_blocks(lo, hi, width)
    return blocks


def deal(blocks: list[tuple[int, int]], rank: int, size: int) -> list[tuple[int, int]]:
    """Rank ``rank``'s contiguous run of ``blocks``: those whose first source falls in its
    ``1 / size`` share of the missing sources."""
    counts = np.array([1 << j for j, _ in blocks], dtype=np.int64)
    before = np.cumsum(counts) - counts
    total = int(counts.sum())
    lo, hi = rank * total // size, (rank + 1) * total // size
    return [b for b, at in zip(blocks, before.tolist(), strict=True) if lo <= at < hi]


# ---------------------------------------------------------------------- the run
def run(
    runner: BatchRunner,
    sources: np.ndarray,
    path: str | os.PathLike[str],
    graph: Any,
    what: str,
    rank: int = 0,
    size: int = 1,
    comm: Any = None,
    progress: Any = None,
    per_rank: bool = False,
) -> np.ndarray:
    """The root of the tree over ``sources`` (the sum of their dependencies) on every rank,
    through the checkpoint at ``path``: rank 0 reads the finished nodes, the missing positions
    are cut into blocks and dealt to the ranks, and each block is published as soon as it is
    done. ``progress(done, total)`` (rank 0) counts the resumed sources as done; with
    ``per_rank`` every rank reports its own share
    (:func:`~blest.runtime.distributed.job_progress`)."""
    store = TreeCheckpoint(path, graph, sources, what, runner.length)
    total = int(store.sources.size)

    def read() -> tuple[PieceSet, np.ndarray]:
        found = store.finished()
        done = np.zeros(total, bool)
        for j, i, _ in found.pieces:
            done[i << j : (i + 1) << j] = True
        return found, done

    finished, done = resume(store, rank, size, comm, read, PieceSet())
    mine = deal(missing_blocks(done, block_width(runner.width)), rank, size)
    own = sum(1 << j for j, _ in mine)
    report = job_progress(progress, rank, total, int(done.sum()), own, per_rank)
    held, ran = finished, 0
    for j, i in mine:
        lo = i << j
        inner = None if report is None else report.within(ran)
        ((pj, pi, vector),) = run_range(runner, store.sources, lo, lo + (1 << j), inner)
        store.write(pj, pi, vector)
        held.add(pj, pi, vector)
        ran += 1 << j
        if report is not None:
            report(ran)
    if size > 1:
        return reduce_pieces(comm, rank, held.pieces, total, runner.length)
    return combine(held.pieces, total) if total else np.zeros(runner.length)
