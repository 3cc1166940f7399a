"""Safe file output for the tuner and the command line: atomic and content-addressed writes,
temporary files removed on errors and on SIGTERM / SIGHUP / SIGINT, stale temporaries swept,
an exclusive lock per output, and the SHA-256 of a file.

Temporary files are named ``.<final name>.<random>.tmp`` and live beside their target, so that
:func:`os.replace` publishes them atomically.

Fault injection, a private hook for the tests: ``BLEST_FAILPOINT=<point>[:<action>]`` makes
:func:`failpoint` act at the named point; ``action`` is ``kill`` (SIGKILL, the default), ``int``
(SIGINT), ``term`` (SIGTERM), ``raise`` (``RuntimeError``) or ``sleep=<seconds>``. The points
are listed in :data:`FAILPOINTS`.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from blest.errors import ArgumentError

__all__ = [
    "FAILPOINTS",
    "STALE_SECONDS",
    "Terminated",
    "atomic_write",
    "check_output_path",
    "exclusive_lock",
    "failpoint",
    "publish_by_hash",
    "raise_if_stopped",
    "removing_on_error",
    "sha256_file",
    "signals_raise",
    "stops_recorded",
    "sweep_stale_temps",
]

#: Where :func:`failpoint` may act: a temporary file written but not published, published.
FAILPOINTS = (
    "artifact-written",
    "after-artifact",
    "config-written",
    "after-config",
)
#: Temporary files and orphaned artifacts older than this (seconds) are swept.
STALE_SECONDS = 3600.0


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP turned into an exception (see :func:`signals_raise`); ``signum``."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"terminated by signal {signum}")
        self.signum = signum


# ---------------------------------------------------------------------- signals
#: The stop signal received inside :func:`stops_recorded` (0: none yet).
_STOP = [0]


def _raise_terminated(owner: int, record: bool = False) -> Callable[[int, object], None]:
    def handler(signum: int, _frame: object) -> None:
        if os.getpid() != owner:  # a forked child inherited the handler: die as by default
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        if record:
            _STOP[0] = signum
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise Terminated(signum)

    return handler


@contextlib.contextmanager
def stops_recorded() -> Iterator[None]:
    """For a command line: within the block, SIGINT raises KeyboardInterrupt and SIGTERM /
    SIGHUP (where still at their default disposition) raise :class:`Terminated`, and each
    signal is also remembered, for :func:`raise_if_stopped`. An exception raised in a signal
    handler can be lost: Numba reports and drops the ones raised inside its ctypes callbacks,
    so a Ctrl-C during a JIT compile would let the work go on and publish its files. Main
    thread only (elsewhere the block runs unchanged); the previous handlers are restored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handler = _raise_terminated(os.getpid(), record=True)
    previous = {signal.SIGINT: signal.signal(signal.SIGINT, handler)}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) == signal.SIG_DFL:
            previous[sig] = signal.signal(sig, handler)
    _STOP[0] = 0
    try:
        yield
    finally:
        _STOP[0] = 0
        for sig, old in previous.items():
            signal.signal(sig, old)


def raise_if_stopped() -> None:
    """Raise again the stop a signal asked for within :func:`stops_recorded`, in case its
    exception was lost on the way (nothing outside that block)."""
    if _STOP[0] == signal.SIGINT:
        raise KeyboardInterrupt
    if _STOP[0]:
        raise Terminated(_STOP[0])


@contextlib.contextmanager
def signals_raise() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise :class:`Terminated` (as SIGINT raises
    ``KeyboardInterrupt``), so that ``finally`` blocks remove temporary files.

    Only signals still at their default disposition are taken over, and only in the main
    thread (elsewhere the block runs unchanged); the previous handlers are restored on exit.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handler = _raise_terminated(os.getpid())
    previous = {}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) == signal.SIG_DFL:
            previous[sig] = signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def failpoint(name: str) -> None:
    """Act as ``$BLEST_FAILPOINT`` asks when it names this point (see the module docstring)."""
    spec = os.environ.get("BLEST_FAILPOINT", "")
    point, _, action = spec.partition(":")
    if not spec or point != name:
        return
    action = action or "kill"
    if action.startswith("sleep="):
        time.sleep(float(action[len("sleep=") :]))
        return
    if action == "raise":
        raise RuntimeError(f"failpoint {name}")
    sig = {"kill": signal.SIGKILL, "int": signal.SIGINT, "term": signal.SIGTERM}[action]
    os.kill(os.getpid(), sig)
    time.sleep(5)  # the signal arrives while we wait (a Python handler runs at the next tick)


# ---------------------------------------------------------------------- paths
def check_output_path(path: str | os.PathLike[str]) -> Path:
    """``path`` as a :class:`Path` if a file can be written there, else :class:`ArgumentError`
    naming it: its directory must exist and be writable, and it must not be a directory."""
    p = Path(path)
    parent = p.parent
    if p.is_dir():
        raise ArgumentError(f"cannot write {p}: it is a directory")
    if not parent.exists():
        raise ArgumentError(f"cannot write {p}: directory {parent} does not exist")
    if not parent.is_dir():
        raise ArgumentError(f"cannot write {p}: {parent} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ArgumentError(f"cannot write {p}: permission denied in directory {parent}")
    return p


def _temp_beside(path: Path) -> tuple[int, str]:
    """A new temporary file beside ``path``; an error names ``path``, never the temporary."""
    try:
        return tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise OSError(exc.errno, f"cannot write {path}: {reason}") from None


def sweep_stale_temps(
    directory: str | os.PathLike[str], names: list[str], max_age_s: float = STALE_SECONDS
) -> list[Path]:
    """Remove the temporary files ``.<name>.*.tmp`` (for each of ``names``) in ``directory``
    older than ``max_age_s``: left by a process killed while writing. Returns what went."""
    removed = []
    now = time.time()
    for name in names:
        for p in Path(directory).glob(f".{name}.*.tmp"):
            with contextlib.suppress(OSError):
                if now - p.lstat().st_mtime > max_age_s and p.is_file():
                    p.unlink()
                    removed.append(p)
    return removed


# ---------------------------------------------------------------------- writing
@contextlib.contextmanager
def _temporary(path: Path) -> Iterator[tuple[IO[bytes], str]]:
    """An open temporary file beside ``path``, removed unless the block moved it away."""
    with signals_raise():
        fd, tmp = _temp_beside(path)
        try:
            os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual permissions
            with os.fdopen(fd, "wb") as f:
                yield f, tmp
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)  # a no-op after a successful os.replace


def _flush(f: IO[bytes]) -> None:
    f.flush()
    os.fsync(f.fileno())


def atomic_write(
    path: str | os.PathLike[str],
    write: Callable[[IO[bytes]], None],
    *,
    point: str | None = None,
) -> Path:
    """Call ``write(f)`` on a temporary file beside ``path``, then publish it with os.replace.

    Readers see the old file or the whole new one; on any error or signal (see
    :func:`signals_raise`) the temporary file is removed and ``path`` is left as it was.
    ``point`` names the :func:`failpoint` between writing and publishing.
    """
    path = Path(path)
    with _temporary(path) as (f, tmp):
        write(f)
        _flush(f)
        if point:
            failpoint(point)
        raise_if_stopped()
        os.replace(tmp, path)
    return path


def publish_by_hash(
    base: str | os.PathLike[str], write: Callable[[IO[bytes]], None], *, point: str | None = None
) -> tuple[Path, str]:
    """Write like :func:`atomic_write`, but publish under a name holding the content's hash:
    ``dir/stem.<first 12 hex digits of the SHA-256>.suffix`` for ``base = dir/stem.suffix``.
    Returns (path, full hex SHA-256)."""
    base = Path(base)
    with _temporary(base) as (f, tmp):
        write(f)
        _flush(f)
        digest = sha256_file(tmp)
        target = base.with_name(f"{base.stem}.{digest[:12]}{base.suffix}")
        if point:
            failpoint(point)
        raise_if_stopped()
        os.replace(tmp, target)
    return target, digest


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def sha256_file(path: str | os.PathLike[str], chunk: int = 1 << 22) -> str:
    """Hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


@contextlib.contextmanager
def removing_on_error(*paths: Path) -> Iterator[None]:
    """Remove the given files (those that did not exist on entry) if the block raises."""
    fresh = [p for p in paths if not p.exists()]
    try:
        yield
    except BaseException:
        for p in fresh:
            with contextlib.suppress(OSError):
                p.unlink()
        raise


# ---------------------------------------------------------------------- locking
@contextlib.contextmanager
def exclusive_lock(
    path: str | os.PathLike[str], on_wait: Callable[[], None] | None = None
) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``<path>.lock`` for the block; ``on_wait()`` is called
    once if another process holds it (we then wait). The lock file is removed on release;
    whoever locked a file that was removed meanwhile retries on the new one."""
    lock = Path(f"{os.fspath(path)}.lock")
    waited = False
    while True:
        fd = _open_lock(lock)
        try:
            while not _try_lock(fd):  # polled: a blocked flock would not see Ctrl-C when
                if not waited and on_wait is not None:  # the signal lands in another thread
                    on_wait()
                waited = True
                time.sleep(0.05)
            if _same_file(fd, lock):
                break
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # the holder removed it while we waited: lock the new one
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(lock)
        os.close(fd)


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _open_lock(lock: Path) -> int:
    try:
        return os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise OSError(exc.errno or errno.EIO, f"cannot lock {lock}: {reason}") from None


def _same_file(fd: int, lock: Path) -> bool:
    try:
        st = os.stat(lock)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)
