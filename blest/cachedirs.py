"""The per-user cache directory, and whether it can be trusted.

Location: ``$BLEST_CACHE_DIR``, else ``$XDG_CACHE_HOME/blest``, else ``~/.cache/blest``. Its
parts (``kernels/`` for compiled CUDA kernels, ``numba/`` for Numba's compiled CPU code) are
used only when nobody else can change what blest will load from them, the rule ssh and pip
apply:

* the directory and every part blest uses belong to the user and are not writable by the
  group or others, unless a directory above them within the cache lets nobody else in
  (missing ones are created with mode 0700);
* every directory above it belongs to the user or to root and is not writable by others, unless
  it has the sticky bit (as ``/tmp`` has);
* every file read from it is a regular file (not a link) that belongs to the user and, in a
  directory others may enter, is not writable by them.

Otherwise the part is not used: one ``RuntimeWarning`` per directory says why, and the work runs
without the cache. Entries are written with mode 0600, atomically (a temporary file beside the
entry, then :func:`os.replace`).
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
import warnings
from pathlib import Path

__all__ = [
    "cache_root",
    "forget_warnings",
    "private_dir",
    "read_entry",
    "sealed",
    "untrusted_entry",
    "untrusted_file",
    "write_entry",
]

_warned: set[str] = set()


def cache_root() -> Path:
    """The cache directory (not created here)."""
    root = os.environ.get("BLEST_CACHE_DIR")
    if not root:
        xdg = os.environ.get("XDG_CACHE_HOME")
        root = os.path.join(xdg, "blest") if xdg else os.path.join("~", ".cache", "blest")
    return Path(root).expanduser()


def _warn(where: Path, text: str) -> None:
    key = str(where)
    if key not in _warned:
        _warned.add(key)
        warnings.warn(text, RuntimeWarning, stacklevel=3)


def forget_warnings() -> None:
    """Warn again about directories already warned about (for tests)."""
    _warned.clear()


def _writable_by_others(mode: int) -> bool:
    return bool(mode & (stat.S_IWGRP | stat.S_IWOTH))


def _untrusted_dir(st: os.stat_result, own: bool, sealed: bool) -> str | None:
    """Why a directory cannot be trusted (None: it can). ``own``: a part of the cache, which
    must belong to the user; else an ancestor, which may also belong to root and be writable by
    others when sticky. ``sealed``: a directory above it lets nobody else in."""
    uid = os.geteuid()
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a directory"
    if st.st_uid != uid and (own or st.st_uid != 0):
        return f"it belongs to another user (uid {st.st_uid})"
    if sealed or (not own and st.st_mode & stat.S_ISVTX):
        return None
    if _writable_by_others(st.st_mode):
        return f"others can write to it (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def _closed(st: os.stat_result) -> bool:
    return not st.st_mode & 0o077


def private_dir(*parts: str) -> Path | None:
    """``cache_root()/parts...``, created as needed (mode 0700), if it can be trusted; else
    None, after one warning naming the directory and the reason."""
    target = cache_root().joinpath(*parts)
    try:
        root = Path(os.path.realpath(cache_root()))
        real = root.joinpath(*parts)
        _make(real)
        sealed = False
        for d in [*reversed(root.parents), root, *_below(root, real)]:
            own = d == root or root in d.parents
            st = os.lstat(d)
            why = _untrusted_dir(st, own, sealed)
            if why is not None:
                _warn(
                    target,
                    f"not using the blest cache {target}: {d} cannot be trusted ({why}); "
                    "running without it (make it yours with mode 700, or set BLEST_CACHE_DIR)",
                )
                return None
            sealed = sealed or (own and _closed(st))
    except OSError as exc:
        _warn(
            target,
            f"the blest cache {target} is not writable ({exc.strerror or exc}); running "
            "without it (set BLEST_CACHE_DIR to change it)",
        )
        return None
    return real


def _below(root: Path, target: Path) -> list[Path]:
    """The directories from ``root`` (excluded) down to ``target`` (included)."""
    out, d = [], target
    while d != root:
        out.append(d)
        d = d.parent
    return out[::-1]


def _make(d: Path) -> None:
    """Create ``d`` and its missing parents with mode 0700 (the umask may only narrow it)."""
    missing = []
    while not os.path.lexists(d):
        missing.append(d)
        d = d.parent
    for m in reversed(missing):
        try:
            os.mkdir(m, 0o700)
        except FileExistsError:
            pass


def sealed(directory: Path) -> bool:
    """Whether nobody else may enter ``directory`` (a trusted part of the cache): it, or a
    directory above it within the cache, has no permissions for the group and others."""
    root = Path(os.path.realpath(cache_root()))
    for d in [directory, *directory.parents]:
        if _closed(os.stat(d)):
            return True
        if d == root:
            break
    return False


def untrusted_file(st: os.stat_result, is_sealed: bool) -> str | None:
    """Why a file found in a cache directory cannot be trusted (None: it can).
    ``is_sealed``: nobody else may enter its directory (see :func:`sealed`)."""
    if not stat.S_ISREG(st.st_mode):
        return "it is not a regular file"
    if st.st_uid != os.geteuid():
        return f"it belongs to another user (uid {st.st_uid})"
    if not is_sealed and _writable_by_others(st.st_mode):
        return f"others can write to it (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def untrusted_entry(path: Path, why: str) -> None:
    """Say (once) that the cache file ``path`` is not used, and why."""
    _warn(path, f"not using the blest cache entry {path}: {why}")


def read_entry(path: Path, limit: int) -> bytes | None:
    """The bytes of the cache file ``path`` (at most ``limit``), or None: missing, too large,
    or untrusted (then after one warning naming it)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        untrusted_entry(path, "it is a symbolic link" if exc.errno == errno.ELOOP else
                        exc.strerror or str(exc))  # fmt: skip
        return None
    with os.fdopen(fd, "rb") as f:
        why = untrusted_file(os.fstat(fd), sealed(path.parent))
        if why is not None:
            untrusted_entry(path, why)
            return None
        data = f.read(limit + 1)
    return data if len(data) <= limit else None


def write_entry(path: Path, data: bytes) -> None:
    """Publish ``data`` as ``path`` (mode 0600) atomically; OSError when it cannot be."""
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=path.suffix, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:  # mkstemp creates the file with mode 0600
            f.write(data)
        os.replace(tmp, path)
        tmp = ""
    finally:
        if tmp:
            try:
                os.unlink(tmp)
            except OSError:
                pass
