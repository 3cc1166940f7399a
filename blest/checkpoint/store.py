"""A checkpoint directory: a manifest that binds it to one run, and block files, each whole or
absent, that no other user's file, link or damaged copy can pass for.

The directory (created with mode 0700 when missing; its parent must exist) holds:

* ``blest-checkpoint.json``, the manifest: the run's graph (its content hash), its list of
  sources (their SHA-256), what the blocks hold and the blest version. Written once; a run
  whose manifest differs is refused with :class:`~blest.errors.CheckpointError`, never mixed.
* ``blest-block-<16 hex digits>.bin``, one per finished block: a one-line JSON header (the
  manifest's digest, the payload's SHA-256 and what the kind of block needs) and the payload.
  Each goes to a temporary file beside it, is flushed to the disk and renamed into place; each
  process (rank, local worker) writes its own blocks under fresh names.

Files are opened without following symbolic links, must be regular files of the user's and are
size-checked before they are read. A block that fails a check is not used: a
``RuntimeWarning`` names it and why, and its sources are computed again. Temporary files that
a kill left (``.blest-block-*.tmp``) are ignored. One run at a time per directory. Only rank 0
reads the directory; :func:`agree` gives the other ranks what it found.
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
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, TypeVar

import numpy as np

from blest._version import __version__
from blest.environment import env_count
from blest.errors import CheckpointError
from blest.runtime.distributed import _sum_op
from blest.tuning.storage import atomic_write

__all__ = ["BLOCK_ENV", "BLOCK_NAME", "BLOCK_SOURCES", "MANIFEST", "Store", "agree", "resume"]

T = TypeVar("T")

#: Sources per block by default, and the environment variable that sets another count.
BLOCK_SOURCES = 16384
BLOCK_ENV = "BLEST_CHECKPOINT_BLOCK"
MANIFEST = "blest-checkpoint.json"
BLOCK_NAME = re.compile(r"blest-block-[0-9a-f]{16}\.bin")
FORMAT, BLOCK_FORMAT, VERSION = "blest-checkpoint", "blest-checkpoint-block", 1
#: Largest manifest, and largest block header, read.
MANIFEST_BYTES = HEADER_BYTES = 4096
#: Bytes of an error message rank 0 sends the other ranks.
MESSAGE_BYTES = 1024


def block_count() -> int:
    """Sources per block asked for: ``$BLEST_CHECKPOINT_BLOCK`` or :data:`BLOCK_SOURCES`."""
    return env_count(BLOCK_ENV) or BLOCK_SOURCES


class Store:
    """The checkpoint directory ``path`` of the run that ``fields`` describe (they go into
    the manifest beside its format, version and the blest version)."""

    def __init__(self, path: str | os.PathLike[str], fields: dict[str, Any]) -> None:
        self.path = Path(path)
        self.fields = {"format": FORMAT, "version": VERSION, "blest": __version__, **fields}
        self.manifest = (json.dumps(self.fields, sort_keys=True, indent=1) + "\n").encode()
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
    def publish(self, header: dict[str, Any], payload: bytes) -> Path:
        """Write ``payload`` under ``header`` (plus the envelope: format, version, manifest
        digest, checksum) as a new block file, atomically; its path."""
        head = {
            **header,
            "format": BLOCK_FORMAT,
            "version": VERSION,
            "manifest": self.digest,
            "bytes": len(payload),
            "sha256": hashlib.sha256(payload).hexdigest(),
        }

        def write(f: IO[bytes]) -> None:
            f.write(json.dumps(head, sort_keys=True).encode() + b"\n")
            f.write(payload)

        target = self.path / f"blest-block-{secrets.token_hex(8)}.bin"
        while os.path.lexists(target):  # pragma: no cover - 64 random bits
            target = self.path / f"blest-block-{secrets.token_hex(8)}.bin"
        atomic_write(target, write)
        _sync_dir(self.path)
        return target

    def blocks(
        self, limit: int, names: list[str] | None = None
    ) -> Iterator[tuple[Path, dict[str, Any], bytes]]:
        """Every block file of this manifest (or those of ``names``) whose envelope holds, in
        name order, as ``(path, header, payload)``; ``limit`` caps a payload's bytes. The
        others are passed over with :meth:`unused`."""
        for name in sorted(os.listdir(self.path) if names is None else names):
            if not BLOCK_NAME.fullmatch(name):
                continue
            path = self.path / name
            data, why = _read_own(path, HEADER_BYTES + limit)
            if data is None:
                self.unused(path, why)
                continue
            end = data.find(b"\n", 0, HEADER_BYTES)
            try:
                header = json.loads(data[:end]) if end > 0 else None
            except ValueError:
                header = None
            payload = data[end + 1 :]
            if not isinstance(header, dict) or header.get("format") != BLOCK_FORMAT:
                self.unused(path, "not a checkpoint block")
            elif header.get("version") != VERSION or header.get("manifest") != self.digest:
                self.unused(path, "written for another manifest")
            elif hashlib.sha256(payload).hexdigest() != header.get("sha256"):
                why = "truncated" if _short(header, payload) else "damaged"
                self.unused(path, f"{why} (its checksum does not match)")
            else:
                yield path, header, payload

    @staticmethod
    def unused(path: Path, why: str) -> None:
        """Warn that the block at ``path`` is not used, and why."""
        warnings.warn(
            f"not using the checkpoint block {path}: {why}; its sources are computed again "
            "(delete the file)",
            RuntimeWarning,
            stacklevel=3,
        )


def _short(header: dict[str, Any], payload: bytes) -> bool:
    size = header.get("bytes")
    return type(size) is int and len(payload) < size


def _difference(found: dict, expected: dict) -> str:
    """Why a manifest of another run does not fit this one, and what to do."""
    if found.get("version") != expected["version"] or found.get("blest") != expected["blest"]:
        what = f"by blest {found.get('blest')!s:.40} (this is {expected['blest']})"
    elif any(found.get(k) != expected.get(k) for k in ("graph", "n", "directed")):
        what = "for another graph"
    elif any(found.get(k) != expected.get(k) for k in ("sources", "count")):
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


# ---------------------------------------------------------------------- several ranks
def resume(
    store: Store,
    rank: int,
    size: int,
    comm: Any,
    read: Callable[[], tuple[T, np.ndarray]],
    empty: T,
) -> tuple[T, np.ndarray]:
    """Open the checkpoint and ``read()`` it on rank 0 (what it holds, and the mask of the
    finished positions); every rank gets the mask (:func:`agree`), the others ``empty``. On
    one process a refusal raises at once; on several it reaches every rank."""
    found, message, done = empty, "", None
    if rank == 0:
        try:
            store.open()
            found, done = read()
        except (CheckpointError, OSError) as exc:
            if size == 1:
                raise
            message = str(exc) or type(exc).__name__
    if done is None:
        done = np.zeros(int(store.fields["count"]), bool)
    if size > 1:
        done = agree(comm, rank, size, store, done, message)
    return found, done


def agree(
    comm: Any, rank: int, size: int, store: Store, done: np.ndarray, message: str
) -> np.ndarray:
    """Rank 0's mask of finished positions on every rank, once every rank sees this run's
    manifest; any rank's failure (rank 0's ``message``, or another rank's check) raises
    :class:`CheckpointError` on all of them, so none is left waiting."""
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
