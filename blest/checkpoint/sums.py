"""Checkpoints of closeness and harmonic runs: the exact sums of every finished block of
sources (:mod:`blest.checkpoint.store` holds the directory's rules), so that a run stopped by
Ctrl-C, a kill or a failure continues where it stopped and ends with the same bits as a run
never stopped.

A block file holds the block's positions in the source list, their vertices and their sums
(int64 distances, int64 reaches, float64 harmonic sums and, where the run asks for them, the
pendant harmonic sums), bit for bit. A block is ``BLOCK_SOURCES`` sources
(``$BLEST_CHECKPOINT_BLOCK`` sets another count), whole batches of the engine's width: large
enough that a GPU runs it at full speed. The finished positions go to the other ranks through
the communicator; on several machines the directory must be on a filesystem they share. A
block whose sources or sums cannot be this run's is not used, and two valid blocks that
disagree on a source refuse the checkpoint.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from blest.checkpoint.store import Store, block_count, resume
from blest.reference.centrality import SourceSums
from blest.runtime.balance import share
from blest.runtime.distributed import job_progress, reduce_sums

__all__ = ["Checkpoint", "Finished", "block_sources", "run"]

#: What the sums are: those of closeness and harmonic centrality (and, for the exact
#: reductions, the pendant harmonic sums).
SUMS = "distance, reach and harmonic sums of BFSs over in-arcs"
PENDANT_SUMS = SUMS + ", and pendant harmonic sums"
#: Bytes per source of a block: position, vertex, distance, reach, harmonic sum (and the
#: pendant harmonic sum, where the run asks for it: 8 more).
SOURCE_BYTES = 40


def block_sources(kappa: int) -> int:
    """Sources per block: ``$BLEST_CHECKPOINT_BLOCK`` or :data:`BLOCK_SOURCES`, in whole
    batches of ``kappa`` (at least one)."""
    return max(1, block_count() // kappa) * kappa


@dataclass(frozen=True)
class Finished:
    """The sums a checkpoint holds: ``positions`` (increasing) in the source list, ``sums``."""

    positions: np.ndarray
    sums: SourceSums


class Checkpoint(Store):
    """A checkpoint directory for the sums of ``users`` (vertices) on ``graph``, with their
    pendant harmonic sums when ``pendant``."""

    def __init__(
        self, path: str | os.PathLike[str], graph: Any, users: np.ndarray, pendant: bool = False
    ) -> None:
        self.users = np.ascontiguousarray(users, dtype=np.int64)
        self.n = int(graph.n)
        self.pendant = bool(pendant)
        self.columns = 6 if self.pendant else 5
        fields = {
            "sums": PENDANT_SUMS if self.pendant else SUMS,
            "graph": graph.content_hash(),
            "n": self.n,
            "directed": bool(graph.directed),
            "sources": hashlib.sha256(self.users.astype("<i8").tobytes()).hexdigest(),
            "count": int(self.users.size),
        }
        super().__init__(path, fields)

    def write(self, positions: np.ndarray, sums: SourceSums) -> Path:
        """Publish the sums of the sources at ``positions`` as a new block file."""
        positions = np.ascontiguousarray(positions, dtype="<i8")
        columns = [
            (positions, "<i8"),
            (self.users[positions], "<i8"),
            (sums.dist, "<i8"),
            (sums.reach, "<i8"),
            (sums.harmonic, "<f8"),
        ]
        if self.pendant:
            if sums.pendant is None:
                raise ValueError("this checkpoint keeps pendant sums: the block has none")
            columns.append((sums.pendant, "<f8"))
        payload = b"".join(np.ascontiguousarray(a, dtype=t).tobytes() for a, t in columns)
        return self.publish({"count": int(positions.size)}, payload)

    def finished(self) -> Finished:
        """Every finished source of the valid blocks (see the module docstring); two blocks
        that disagree on a source refuse the checkpoint."""
        width = SOURCE_BYTES + (8 if self.pendant else 0)
        parts: list[tuple[np.ndarray, SourceSums]] = []
        for path, header, payload in self.blocks(width * self.users.size):
            block = self._read_block(header, payload, width)
            if isinstance(block, str):
                self.unused(path, block)
            else:
                parts.append(block)
        if not parts:
            return Finished(np.zeros(0, np.int64), SourceSums.zeros(0, pendant=self.pendant))
        positions = np.concatenate([p for p, _ in parts])
        sums = SourceSums.concat([s for _, s in parts])
        order = np.argsort(positions, kind="stable")
        positions, sums = positions[order], sums.take(order)
        keep = np.ones(positions.size, bool)
        keep[1:] = positions[1:] != positions[:-1]
        if not keep.all():
            first = np.flatnonzero(keep)[np.cumsum(keep) - 1]  # the first copy of each
            bits = _bits(sums)
            if not np.array_equal(bits[:, first], bits):
                raise self._error("two blocks disagree on a source's sums (damaged)")
        return Finished(positions[keep], sums.take(keep))

    def _read_block(
        self, header: dict[str, Any], payload: bytes, width: int
    ) -> tuple[np.ndarray, SourceSums] | str:
        """The positions and sums of a block whose envelope holds, or why it is not used."""
        count = header.get("count")
        if type(count) is not int or count < 1 or len(payload) != width * count:
            return "truncated"
        arrays = np.frombuffer(payload, dtype="<i8").reshape(self.columns, count)
        positions, vertices, dist, reach = (a.astype(np.int64) for a in arrays[:4])
        harmonic = arrays[4].view("<f8").astype(np.float64)
        pendant = arrays[5].view("<f8").astype(np.float64) if self.pendant else None
        if positions.min() < 0 or positions.max() >= self.users.size:
            return "its positions lie outside the source list"
        if np.unique(positions).size != count or not np.array_equal(
            vertices, self.users[positions]
        ):
            return "its sources are not those of the source list"
        bad = (reach < 1) | (reach > self.n) | (dist < 0) | ~(harmonic >= 0)
        if pendant is not None:
            bad |= ~(pendant >= 0) | ~np.isfinite(pendant)
        if bad.any() or not np.isfinite(harmonic).all():
            return "its sums are out of range"
        return positions, SourceSums(dist, reach, harmonic, pendant)


def _bits(sums: SourceSums) -> np.ndarray:
    return np.stack([a.view(np.int64) for a in sums.arrays()])


# ---------------------------------------------------------------------- the run
def run(
    engine: Any,
    users: np.ndarray,
    path: str | os.PathLike[str],
    kappa: int,
    rank: int = 0,
    size: int = 1,
    comm: Any = None,
    progress: Any = None,
    pendant: bool = False,
    per_rank: bool = False,
) -> SourceSums:
    """The sums of every vertex of ``users`` (the list to BFS, in the caller's order), on
    every rank, through the checkpoint at ``path``: the finished blocks are read (rank 0), the
    other positions shared by predicted cost (:func:`blest.runtime.balance.share`) and run a
    block at a time, each block published as soon as it is done. ``progress(done, total)``
    (rank 0) counts the resumed sources as done. ``pendant``: with the pendant harmonic sums
    (the checkpoint says so in its manifest). ``per_rank``: every rank reports its own share
    (:func:`~blest.runtime.distributed.job_progress`)."""
    store = Checkpoint(path, engine.graph, users, pendant)
    total = int(store.users.size)
    empty = Finished(np.zeros(0, np.int64), SourceSums.zeros(0, pendant=pendant))

    def read() -> tuple[Finished, np.ndarray]:
        found = store.finished()
        done = np.zeros(total, bool)
        done[found.positions] = True
        return found, done

    finished, done = resume(store, rank, size, comm, read, empty)
    todo = np.flatnonzero(~done)
    new_of_old = engine.permutation.new_of_old
    mine = share(engine.graph, new_of_old, store.users, todo, kappa, rank, size)
    report = job_progress(progress, rank, total, total - todo.size, mine.size, per_rank)
    step, parts = block_sources(kappa), []
    for at in range(0, mine.size, step):
        block = mine[at : at + step]
        inner = None if report is None else report.within(at)
        sums = engine.source_sums(store.users[block], progress=inner, pendant=pendant)
        store.write(block, sums)
        parts.append(sums)
        if report is not None:
            report(at + block.size)
    positions = np.concatenate([mine, finished.positions])
    local = SourceSums.concat([*parts, finished.sums])
    if size == 1:
        return local.scatter(positions, total)
    return reduce_sums(comm, total, positions, local)
