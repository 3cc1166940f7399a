"""Checkpoints of closeness and harmonic runs: the exact sums of every finished block of
sources, kept in a directory, so that a run stopped by Ctrl-C, a kill or a failure continues
where it stopped and ends with the same bits as a run never stopped.

The directory (created with mode 0700 when missing; its parent must exist) holds:

* ``blest-checkpoint.json``, the manifest: it binds the directory to one graph
  (:meth:`~blest.graph.Graph.content_hash`), one list of source vertices (its SHA-256), the
  sums kept and the blest version. Written once; a run whose graph, sources or version differ
  is refused with :class:`~blest.errors.CheckpointError`, never mixed.
* ``blest-block-<16 hex digits>.bin``, one per finished block: the block's positions in the
  source list, their vertices and their sums (int64 distances, int64 reaches, float64
  harmonic sums, bit for bit), the manifest's digest and a SHA-256 of it all. Each goes to a
  temporary file beside it, is flushed to the disk and renamed into place, so a block is whole
  or absent; each process (rank, local worker) writes its own blocks under fresh names.

A block is ``BLOCK_SOURCES`` sources (``$BLEST_CHECKPOINT_BLOCK`` sets another count), whole
batches of the engine's width: large enough that a GPU runs it at full speed. Only rank 0
reads the directory; the other ranks learn the finished positions through the communicator,
and check that they see the same manifest (on several machines the directory must be on a
filesystem they share). Files are opened without following symbolic links, must be regular
files of the user's and are size-checked before they are read. A block that fails a check
(truncated, damaged, a link, another user's, another manifest's) is not used: a
``RuntimeWarning`` names it and why, and its sources are computed again. Temporary files that
a kill left (``.blest-block-*.tmp``) are ignored. One run at a time per directory.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import secrets
import stat
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

from blest._version import __version__
from blest.environment import env_count
from blest.errors import CheckpointError
from blest.reference.centrality import SourceSums
from blest.runtime.balance import share
from blest.runtime.distributed import JobProgress, _sum_op, reduce_sums
from blest.tuning.storage import atomic_write

__all__ = ["BLOCK_ENV", "BLOCK_SOURCES", "Checkpoint", "Finished", "block_sources", "run"]

#: Sources per block by default, and the environment variable that sets another count.
BLOCK_SOURCES = 16384
BLOCK_ENV = "BLEST_CHECKPOINT_BLOCK"
MANIFEST = "blest-checkpoint.json"
BLOCK_NAME = re.compile(r"blest-block-[0-9a-f]{16}\.bin")
FORMAT, BLOCK_FORMAT, VERSION = "blest-checkpoint", "blest-checkpoint-block", 1
#: What the sums are: those of closeness and harmonic centrality (and, for the exact
#: reductions, the pendant harmonic sums).
SUMS = "distance, reach and harmonic sums of BFSs over in-arcs"
PENDANT_SUMS = SUMS + ", and pendant harmonic sums"
#: Largest manifest, and largest block header, read.
MANIFEST_BYTES = HEADER_BYTES = 4096
#: Bytes per source of a block: position, vertex, distance, reach, harmonic sum (and the
#: pendant harmonic sum, where the run asks for it: 8 more).
SOURCE_BYTES = 40
#: Bytes of an error message rank 0 sends the other ranks.
MESSAGE_BYTES = 1024


def block_sources(kappa: int) -> int:
    """Sources per block: ``$BLEST_CHECKPOINT_BLOCK`` or :data:`BLOCK_SOURCES`, in whole
    batches of ``kappa`` (at least one)."""
    count = env_count(BLOCK_ENV) or BLOCK_SOURCES
    return max(1, count // kappa) * kappa


@dataclass(frozen=True)
class Finished:
    """The sums a checkpoint holds: ``positions`` (increasing) in the source list, ``sums``."""

    positions: np.ndarray
    sums: SourceSums


class Checkpoint:
    """A checkpoint directory for the sums of ``users`` (vertices) on ``graph``, with their
    pendant harmonic sums when ``pendant``."""

    def __init__(
        self, path: str | os.PathLike[str], graph: Any, users: np.ndarray, pendant: bool = False
    ) -> None:
        self.path = Path(path)
        self.users = np.ascontiguousarray(users, dtype=np.int64)
        self.n = int(graph.n)
        self.pendant = bool(pendant)
        self.columns = 6 if self.pendant else 5
        fields = {
            "format": FORMAT,
            "version": VERSION,
            "blest": __version__,
            "sums": PENDANT_SUMS if self.pendant else SUMS,
            "graph": graph.content_hash(),
            "n": self.n,
            "directed": bool(graph.directed),
            "sources": hashlib.sha256(self.users.astype("<i8").tobytes()).hexdigest(),
            "count": int(self.users.size),
        }
        self.fields = fields
        self.manifest = (json.dumps(fields, sort_keys=True, indent=1) + "\n").encode()
        self.digest = hashlib.sha256(self.manifest).hexdigest()

    # ------------------------------------------------------------------ the manifest
    def open(self) -> None:
        """Create the directory and its manifest, or check those there (rank 0)."""
        self._check_dir(create=True)
        target = self.path / MANIFEST
        if not os.path.lexists(target):
            if any(BLOCK_NAME.fullmatch(name) for name in os.listdir(self.path)):
                raise self._error("holds blocks but no manifest")
            atomic_write(target, self._write_manifest)
            _sync_dir(self.path)
        self.check()

    def _write_manifest(self, f: IO[bytes]) -> None:
        f.write(self.manifest)

    def check(self) -> None:
        """Refuse the directory unless it holds this run's manifest."""
        self._check_dir(create=False)
        data, why = _read_own(self.path / MANIFEST, MANIFEST_BYTES)
        if data is None:
            raise self._error(f"its manifest {MANIFEST} cannot be used: {why}")
        if data == self.manifest:
            return
        try:
            found = json.loads(data)
        except ValueError:
            found = None
        if not isinstance(found, dict) or found.get("format") != FORMAT:
            raise self._error(f"{MANIFEST} is not a blest checkpoint manifest")
        raise self._error(_difference(found, self.fields))

    def _check_dir(self, create: bool) -> None:
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            if not create:
                raise self._error(
                    "does not exist here (not on a filesystem every rank sees?)"
                ) from None
            if not self.path.parent.is_dir():
                raise self._error(f"directory {self.path.parent} does not exist") from None
            try:
                os.mkdir(self.path, 0o700)
            except FileExistsError:
                pass
            except OSError as exc:
                raise self._error(f"cannot be created ({exc.strerror or exc})") from None
            st = os.lstat(self.path)
        if stat.S_ISLNK(st.st_mode):
            raise self._error("is a symbolic link (give the directory it points to)")
        if not stat.S_ISDIR(st.st_mode):
            raise self._error("is not a directory")
        if st.st_uid != os.geteuid():
            raise self._error(f"belongs to another user (uid {st.st_uid})")
        if not os.access(self.path, os.W_OK | os.X_OK):
            raise self._error("is not writable")

    def _error(self, why: str) -> CheckpointError:
        return CheckpointError(f"checkpoint {self.path}: {why}")

    # ------------------------------------------------------------------ blocks
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
        header = {
            "format": BLOCK_FORMAT,
            "version": VERSION,
            "manifest": self.digest,
            "count": int(positions.size),
            "sha256": hashlib.sha256(payload).hexdigest(),
        }

        def write(f: IO[bytes]) -> None:
            f.write(json.dumps(header, sort_keys=True).encode() + b"\n")
            f.write(payload)

        target = self.path / f"blest-block-{secrets.token_hex(8)}.bin"
        while os.path.lexists(target):  # pragma: no cover - 64 random bits
            target = self.path / f"blest-block-{secrets.token_hex(8)}.bin"
        atomic_write(target, write)
        _sync_dir(self.path)
        return target

    def finished(self) -> Finished:
        """Every finished source of the valid blocks (see the module docstring); two blocks
        that disagree on a source refuse the checkpoint."""
        parts: list[tuple[np.ndarray, SourceSums]] = []
        for name in sorted(os.listdir(self.path)):
            if BLOCK_NAME.fullmatch(name):
                block = self._read_block(self.path / name)
                if isinstance(block, str):
                    warnings.warn(
                        f"not using the checkpoint block {self.path / name}: {block}; its "
                        "sources are computed again (delete the file)",
                        RuntimeWarning,
                        stacklevel=2,
                    )
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

    def _read_block(self, path: Path) -> tuple[np.ndarray, SourceSums] | str:
        """The positions and sums of a block file, or why it is not used."""
        width = SOURCE_BYTES + (8 if self.pendant else 0)
        data, why = _read_own(path, HEADER_BYTES + width * self.users.size)
        if data is None:
            return why
        end = data.find(b"\n", 0, HEADER_BYTES)
        try:
            header = json.loads(data[:end]) if end > 0 else None
        except ValueError:
            header = None
        if not isinstance(header, dict) or header.get("format") != BLOCK_FORMAT:
            return "not a checkpoint block"
        if header.get("version") != VERSION or header.get("manifest") != self.digest:
            return "written for another manifest"
        count, payload = header.get("count"), data[end + 1 :]
        if type(count) is not int or count < 1 or len(payload) != width * count:
            return "truncated"
        if hashlib.sha256(payload).hexdigest() != header.get("sha256"):
            return "damaged (its checksum does not match)"
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


def _difference(found: dict, expected: dict) -> str:
    """Why a manifest of another run does not fit this one, and what to do."""
    if found.get("version") != expected["version"] or found.get("blest") != expected["blest"]:
        what = f"by blest {found.get('blest')!s:.40} (this is {expected['blest']})"
    elif any(found.get(k) != expected[k] for k in ("graph", "n", "directed")):
        what = "for another graph"
    elif any(found.get(k) != expected[k] for k in ("sources", "count")):
        what = "for another list of sources"
    else:
        what = "for other sums"
    return f"was written {what}; remove it or choose another directory"


def _read_own(path: Path, limit: int) -> tuple[bytes | None, str]:
    """(the bytes of ``path``, "") when it is a regular file of the user's of at most
    ``limit`` bytes, opened without following a link; else (None, why)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None, "it is a symbolic link"
        return None, exc.strerror or str(exc)
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None, "it is not a regular file"
        if st.st_uid != os.geteuid():
            return None, f"it belongs to another user (uid {st.st_uid})"
        if st.st_size > limit:
            return None, f"it is larger ({st.st_size:,} bytes) than it can be"
        data = f.read(limit + 1)
    if len(data) > limit:
        return None, "it grew while being read"
    return data, ""


def _sync_dir(path: Path) -> None:
    """Flush a directory's entries to the disk (best effort: some filesystems refuse)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


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
) -> SourceSums:
    """The sums of every vertex of ``users`` (the list to BFS, in the caller's order), on
    every rank, through the checkpoint at ``path``: the finished blocks are read (rank 0), the
    other positions shared by predicted cost (:func:`blest.runtime.balance.share`) and run a
    block at a time, each block published as soon as it is done. ``progress(done, total)``
    (rank 0) counts the resumed sources as done. ``pendant``: with the pendant harmonic sums
    (the checkpoint says so in its manifest)."""
    store = Checkpoint(path, engine.graph, users, pendant)
    total = int(store.users.size)
    empty = SourceSums.zeros(0, pendant=pendant)
    finished, message = Finished(np.zeros(0, np.int64), empty), ""
    if rank == 0:
        try:
            store.open()
            finished = store.finished()
        except (CheckpointError, OSError) as exc:
            if size == 1:
                raise
            message = str(exc) or type(exc).__name__
    done = np.zeros(total, bool)
    done[finished.positions] = True
    if size > 1:
        done = _agree(comm, rank, size, store, done, message)
    todo = np.flatnonzero(~done)
    new_of_old = engine.permutation.new_of_old
    mine = share(engine.graph, new_of_old, store.users, todo, kappa, rank, size)
    report = None
    if rank == 0 and progress is not None:
        report = JobProgress(progress, total, total - todo.size, mine.size)
        report(0)
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


def _agree(
    comm: Any, rank: int, size: int, store: Checkpoint, done: np.ndarray, message: str
) -> np.ndarray:
    """Rank 0's finished positions on every rank, once every rank sees this run's manifest;
    any rank's failure raises :class:`CheckpointError` on all of them (none is left waiting)."""
    text = message.encode()[:MESSAGE_BYTES]
    packed = np.packbits(done) if rank == 0 else np.zeros((done.size + 7) // 8, np.uint8)
    send = np.zeros(1 + MESSAGE_BYTES + packed.size, np.uint8)
    if rank == 0:
        send[0] = 1 if message else 0
        send[1 : 1 + len(text)] = np.frombuffer(text, np.uint8)
        send[1 + MESSAGE_BYTES :] = packed
    got = np.empty_like(send)
    comm.Allreduce(send, got, op=_sum_op(comm))
    if got[0]:
        raise CheckpointError(
            bytes(got[1 : 1 + MESSAGE_BYTES]).rstrip(b"\0").decode(errors="replace")
        )
    failed, why = np.zeros(size, np.int64), ""
    if rank != 0:
        try:
            store.check()
        except (CheckpointError, OSError) as exc:
            failed[rank], why = 1, str(exc)
    seen = np.empty_like(failed)
    comm.Allreduce(failed, seen, op=_sum_op(comm))
    if seen.any():
        ranks = ", ".join(map(str, np.flatnonzero(seen).tolist()))
        raise CheckpointError(
            why
            or f"rank {ranks} cannot use {store.path} (on several machines the checkpoint "
            "must be on a filesystem every rank sees)"
        )
    return np.unpackbits(got[1 + MESSAGE_BYTES :], count=done.size).astype(bool)
