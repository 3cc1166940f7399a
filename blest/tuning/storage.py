"""Safe file output for the tuner and the command line: atomic and content-addressed writes,
temporary files removed on errors and on SIGTERM / SIGHUP / SIGINT, stale temporaries swept,
an exclusive lock per output, and the SHA-256 of a file.

Temporary files are named ``.<final name>.blest-<8 random characters>.tmp`` and live beside
their target, so that :func:`os.replace` publishes them atomically; a sweep removes only such
files that also hold what their writer writes (see :func:`sweep_stale_temps`).

:func:`failpoint` marks the points of a write where the tests inject faults (listed in
:data:`FAILPOINTS`); it does nothing unless a test installs :data:`fault_hook`.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import re
import signal
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from blest.errors import ArgumentError, ConfigError
from blest.signals import held_signals

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
    "write_error",
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
#: What marks a temporary file as blest's, between the final name and the random part.
TEMP_MARK = "blest-"
#: The fault-injection hook of the tests: ``fault_hook(point)`` is called at each failpoint.
fault_hook: Callable[[str], None] | None = None


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP turned into an exception (see :func:`signals_raise`); ``signum``."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"terminated by signal {signum}")
        self.signum = signum


# ---------------------------------------------------------------------- signals
#: The stop signal received inside :func:`stops_recorded` (0: none yet).
_STOP = [0]
#: Set inside :func:`stops_recorded` once the command's result is published (see
#: :func:`atomic_write`'s ``final``): stop signals then change nothing.
_DONE = [False]
_RECORDING = [False]


def _raise_terminated(owner: int, record: bool = False) -> Callable[[int, object], None]:
    def handler(signum: int, _frame: object) -> None:
        if os.getpid() != owner:  # a forked child inherited the handler: die as by default
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        if record:
            if _DONE[0]:  # the result is out: finish, and exit as if no signal had come
                return
            _STOP[0] = signum
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise Terminated(signum)

    return handler


@contextlib.contextmanager
def stops_recorded() -> Iterator[None]:
    """For a command line: within the block, SIGINT raises KeyboardInterrupt and SIGTERM /
    SIGHUP raise :class:`Terminated` (each where not ignored, SIGTERM and SIGHUP where still at
    their default disposition), and each signal is also remembered, for
    :func:`raise_if_stopped`. An exception raised in a signal handler can be lost: Numba
    reports and drops the ones raised inside its ctypes callbacks, so a Ctrl-C during a JIT
    compile would let the work go on and publish its files. Once the command's result is
    published (:func:`atomic_write` with ``final=True``), signals are ignored: the command
    finishes its clean-up and exits as it would have. Main thread only (elsewhere the block
    runs unchanged); the previous handlers are restored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handler = _raise_terminated(os.getpid(), record=True)
    previous = {}
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:  # nohup, `cmd &` in a script
        previous[signal.SIGINT] = signal.signal(signal.SIGINT, handler)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) == signal.SIG_DFL:
            previous[sig] = signal.signal(sig, handler)
    outer = _STOP[0], _DONE[0], _RECORDING[0]  # a command run by another (blest demo)
    _STOP[0], _DONE[0], _RECORDING[0] = 0, False, True
    try:
        yield
    finally:
        _STOP[0], _DONE[0], _RECORDING[0] = outer
        for sig, old in previous.items():
            signal.signal(sig, old)


def raise_if_stopped() -> None:
    """Raise again the stop a signal asked for within :func:`stops_recorded`, in case its
    exception was lost on the way (nothing outside that block, nor after the result is out)."""
    if _DONE[0]:
        return
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
    """A point of a write where the tests inject faults: calls :data:`fault_hook` when set."""
    if fault_hook is not None:
        fault_hook(name)


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


def write_error(exc: OSError, path: str | os.PathLike[str]) -> OSError:
    """``exc`` as an OSError whose message names ``path`` (not a temporary file), and says
    "disk full" for a full disk or quota."""
    if exc.errno == errno.ENOSPC:
        reason = "the disk is full (no space left on device)"
    elif exc.errno == errno.EDQUOT:
        reason = "the disk quota is exceeded"
    else:
        reason = exc.strerror or str(exc) or type(exc).__name__
    return OSError(exc.errno, f"cannot write {path}: {reason}")


def _temp_beside(path: Path) -> tuple[int, str]:
    """A new temporary file beside ``path``; an error names ``path``, never the temporary."""
    try:
        return tempfile.mkstemp(
            prefix=f".{path.name}.{TEMP_MARK}", suffix=".tmp", dir=path.parent or "."
        )
    except OSError as exc:
        raise write_error(exc, path) from None


def sweep_stale_temps(
    directory: str | os.PathLike[str],
    names: list[str],
    recognise: Callable[[bytes], bool],
    max_age_s: float = STALE_SECONDS,
) -> list[Path]:
    """Remove the temporary files that writers of ``names`` killed while writing left in
    ``directory`` more than ``max_age_s`` ago. A file goes only if all of these hold: its name
    is ``.<name>.blest-<8 characters>.tmp``, it is a regular file of the caller's, and it is
    empty or ``recognise(its first 4 KiB)`` (what that writer writes). Returns what went."""
    removed = []
    now = time.time()
    for name in names:
        pattern = re.compile(re.escape(f".{name}.{TEMP_MARK}") + r"[A-Za-z0-9_]{8}\.tmp")
        for p in Path(directory).glob(f".{name}.{TEMP_MARK}*.tmp"):
            with contextlib.suppress(OSError):
                if pattern.fullmatch(p.name) and now - p.lstat().st_mtime > max_age_s:
                    head = own_file_head(p)
                    if head is not None and (head == b"" or recognise(head)):
                        p.unlink()
                        removed.append(p)
    return removed


def own_file_head(path: Path, size: int = 4096) -> bytes | None:
    """The first ``size`` bytes of ``path`` when it is a regular file (not a link) of the
    caller's; else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            return None
        return f.read(size)


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


def _write_and_flush(f: IO[bytes], write: Callable[[IO[bytes]], None], path: Path) -> None:
    try:
        write(f)
        _flush(f)
    except OSError as exc:
        raise write_error(exc, path) from None


def atomic_write(
    path: str | os.PathLike[str],
    write: Callable[[IO[bytes]], None],
    *,
    point: str | None = None,
    then: Callable[[], None] | None = None,
    final: bool = False,
) -> Path:
    """Call ``write(f)`` on a temporary file beside ``path``, then publish it with os.replace.

    Readers see the old file or the whole new one; on any error or signal (see
    :func:`signals_raise`) before the replace, the temporary file is removed and ``path`` is
    left as it was; an error while writing names ``path`` (and says when the disk is full).
    ``point`` names the :func:`failpoint` between writing and publishing. The replace and
    ``then()`` (what must follow the publication) run with stop signals held
    (:func:`blest.signals.held_signals`): a signal cannot cut them apart. ``final``: this file
    is the command's result, so that within :func:`stops_recorded` a later stop signal no
    longer stops the command.
    """
    path = Path(path)
    with _temporary(path) as (f, tmp):
        _write_and_flush(f, write, path)
        if point:
            failpoint(point)
        raise_if_stopped()
        with held_signals():
            os.replace(tmp, path)
            if final and _RECORDING[0]:
                _DONE[0] = True
            if then is not None:
                then()
    return path


def publish_by_hash(
    base: str | os.PathLike[str], write: Callable[[IO[bytes]], None], *, point: str | None = None
) -> tuple[Path, str]:
    """Write like :func:`atomic_write`, but publish under a name holding the content's hash:
    ``dir/stem.<first 12 hex digits of the SHA-256>.suffix`` for ``base = dir/stem.suffix``.
    Returns (path, full hex SHA-256)."""
    base = Path(base)
    with _temporary(base) as (f, tmp):
        _write_and_flush(f, write, base)
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
    whoever locked a file that was removed meanwhile retries on the new one.

    The lock file is opened without following symbolic links and must be a regular file of the
    caller's with no other link: anything else (planted by another user in a shared
    directory, say) is refused with a :class:`~blest.errors.ConfigError` naming it."""
    lock = Path(f"{os.fspath(path)}.lock")
    waited = False
    while True:
        fd = _open_lock(lock)
        if fd is None:  # removed by its holder between our open and fstat: open the new one
            continue
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
            if _same_file(fd, lock):  # never another file put in its place
                os.unlink(lock)
        os.close(fd)


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


_LOCK_FLAGS = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


def _open_lock(lock: Path) -> int | None:
    """Open (creating) the lock file; None if it was unlinked before we could check it."""
    try:
        fd = os.open(lock, _LOCK_FLAGS, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _refused(lock, "it is a symbolic link") from None
        reason = exc.strerror or type(exc).__name__
        raise OSError(exc.errno or errno.EIO, f"cannot lock {lock}: {reason}") from None
    st = os.fstat(fd)
    why = None
    if st.st_nlink == 0 and stat.S_ISREG(st.st_mode):
        os.close(fd)
        return None
    if not stat.S_ISREG(st.st_mode):
        why = "it is not a regular file"
    elif st.st_uid != os.geteuid():
        why = f"it belongs to another user (uid {st.st_uid})"
    elif st.st_nlink != 1:
        why = "it has other hard links"
    if why is not None:
        os.close(fd)
        raise _refused(lock, why)
    return fd


def _refused(lock: Path, why: str) -> ConfigError:
    return ConfigError(
        f"refusing the lock file {lock}: {why}; remove it if no blest-tune is writing there"
    )


def _same_file(fd: int, lock: Path) -> bool:
    try:
        st = os.lstat(lock)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)
