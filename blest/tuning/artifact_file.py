"""The artifact's bytes, read once: the file is checked, copied whole into private memory and
hashed there, so that what is verified is what is parsed (the members are views into it).

:class:`ArtifactFile` opens the file without blocking and refuses, before reading a byte of
it, anything that is not a regular file (a FIFO or a device would block or never end); the
caller then checks its size against what the config's graph allows; :meth:`ArtifactFile.read`
refuses a file that is not a zip archive or does not fit in the memory limit
(:mod:`blest.graph.io.limits`), then reads it into an anonymous private mapping and, when asked
to, hashes it. A mapping of the file itself would spare the copy but not stay what was hashed:
another process may change or truncate the file under it.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from blest.errors import ConfigError
from blest.graph.io.limits import human_bytes, memory_limit

__all__ = ["ArtifactBytes", "ArtifactFile"]

_ZIP_MAGIC = b"PK\x03\x04"
#: Private anonymous memory (the fd is -1), its pages faulted in with the mapping where the
#: system can (Linux): a little faster than one fault per page as they are read into.
_MAP_FLAGS = mmap.MAP_PRIVATE | getattr(mmap, "MAP_POPULATE", 0)
_T = TypeVar("_T")


@dataclass(frozen=True)
class ArtifactBytes:
    """An artifact's bytes in private, writable memory, their hex SHA-256 when asked for, and
    the bytes the memory limit leaves beside them (None: no limit)."""

    data: memoryview
    sha256: str | None
    room: float | None


class ArtifactFile:
    """The artifact at ``path``, open for one read (use as a context manager)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = path
        if not stat.S_ISREG(self._call(os.stat, path).st_mode):  # not opened: it may block
            raise self._not_regular()
        self._fd = self._call(os.open, path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
        info = os.fstat(self._fd)  # what was opened, should the name have changed meanwhile
        if not stat.S_ISREG(info.st_mode):
            os.close(self._fd)
            raise self._not_regular()
        #: The file's size in bytes when it was opened.
        self.size = info.st_size

    def __enter__(self) -> ArtifactFile:
        return self

    def __exit__(self, *exc: object) -> None:
        os.close(self._fd)

    def read(self, *, digest: bool = False) -> ArtifactBytes:
        """The whole file in private memory (and its SHA-256 with ``digest``); refused when it
        is not a zip archive, does not fit in the memory limit, or shrinks while it is read."""
        head = self._call(os.pread, self._fd, len(_ZIP_MAGIC), 0)
        if self.size < len(_ZIP_MAGIC) or head != _ZIP_MAGIC:
            raise ConfigError(f"prepared artifact {self.path} is not a .npz archive")
        limit = memory_limit(None)
        if limit.nbytes is not None and self.size > limit.nbytes:
            raise ConfigError(
                f"prepared artifact {self.path} has {human_bytes(self.size)}, more than the "
                f"memory limit leaves ({human_bytes(limit.nbytes)}, {limit.origin})"
            )
        data = memoryview(self._call(mmap.mmap, -1, self.size, _MAP_FLAGS))
        got = 0
        while got < self.size:
            step = self._call(os.preadv, self._fd, [data[got:]], got)
            if not step:
                raise ConfigError(f"prepared artifact {self.path} shrank while it was read")
            got += step
        sha256 = hashlib.sha256(data).hexdigest() if digest else None
        room = None if limit.nbytes is None else limit.nbytes - self.size
        return ArtifactBytes(data, sha256, room)

    def _call(self, call: Callable[..., _T], *args: Any) -> _T:
        """``call(*args)``, an OSError turned into the ConfigError that names the artifact."""
        try:
            return call(*args)
        except FileNotFoundError:
            raise ConfigError(f"prepared artifact {self.path} is missing") from None
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            raise ConfigError(f"prepared artifact {self.path} is unreadable ({reason})") from None

    def _not_regular(self) -> ConfigError:
        return ConfigError(
            f"prepared artifact {self.path} is not a regular file (a directory, device or pipe)"
        )
