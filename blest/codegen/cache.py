"""On-disk cache of compiled kernels (cubin / PTX), safe under concurrent processes.

Location: ``$BLEST_CACHE_DIR`` or ``$XDG_CACHE_HOME/blest`` or ``~/.cache/blest``, subdirectory
``kernels/``; one file ``<sha256>.<target>`` per entry. The key hashes the source, the full NVRTC
option list, arch, target, the toolchain fingerprint (NVRTC build, header identity) and
:data:`CACHE_FORMAT`.

Each entry is ``MAGIC | sha256(payload) | len(payload) | payload``, written to a temporary file in
the same directory and published with :func:`os.replace`, so readers see a whole entry or none;
an entry that fails the check (truncated, corrupted, foreign) is a miss and is overwritten by the
next store. A cache directory that cannot be created or written makes stores no-ops after one
warning; reads from a read-only cache still hit.
"""

from __future__ import annotations

import hashlib
import os
import struct
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path

__all__ = [
    "CACHE_FORMAT",
    "cache_dir",
    "cache_key",
    "load",
    "store",
    "clear",
    "stats",
    "reset_stats",
]

CACHE_FORMAT = 1
_MAGIC = b"BLESTK\x00\x01"
_HEADER = struct.Struct(f"<{len(_MAGIC)}s32sQ")

_stats = {"hits": 0, "misses": 0, "stores": 0, "store_errors": 0}
_warned_dirs: set[str] = set()


def cache_dir() -> Path:
    """The kernels directory (not created here)."""
    root = os.environ.get("BLEST_CACHE_DIR")
    if not root:
        xdg = os.environ.get("XDG_CACHE_HOME")
        root = os.path.join(xdg, "blest") if xdg else os.path.join("~", ".cache", "blest")
    return Path(root).expanduser() / "kernels"


def cache_key(
    source: str, options: Sequence[str], arch: str, target: str, toolchain: str, name: str = ""
) -> str:
    """sha256 hex digest identifying one compilation."""
    h = hashlib.sha256()
    for part in (f"blest-cache-{CACHE_FORMAT}", arch, target, name, toolchain, *options, source):
        data = part.encode("utf-8", "surrogatepass")
        h.update(struct.pack("<Q", len(data)))  # length-prefixed: no ambiguous concatenations
        h.update(data)
    return h.hexdigest()


def _path(key: str, target: str) -> Path:
    return cache_dir() / f"{key}.{target}"


def load(key: str, target: str) -> bytes | None:
    """The cached payload, or None (missing, unreadable, truncated or corrupted)."""
    try:
        blob = _path(key, target).read_bytes()
    except OSError:
        blob = b""
    payload = _unpack(blob)
    _stats["hits" if payload is not None else "misses"] += 1
    return payload


def _unpack(blob: bytes) -> bytes | None:
    if len(blob) < _HEADER.size:
        return None
    magic, digest, size = _HEADER.unpack_from(blob)
    payload = blob[_HEADER.size :]
    if magic != _MAGIC or size != len(payload) or hashlib.sha256(payload).digest() != digest:
        return None
    return payload


def store(key: str, target: str, payload: bytes) -> bool:
    """Publish an entry atomically; False (after one warning per directory) if it can't be."""
    path = _path(key, target)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=f".{target}", dir=path.parent)
        with os.fdopen(fd, "wb") as f:
            f.write(_HEADER.pack(_MAGIC, hashlib.sha256(payload).digest(), len(payload)))
            f.write(payload)
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        _stats["store_errors"] += 1
        where = str(path.parent)
        if where not in _warned_dirs:
            _warned_dirs.add(where)
            warnings.warn(
                f"blest kernel cache {where} is not writable ({exc.strerror or exc}); "
                "compiling without caching (set BLEST_CACHE_DIR to change it)",
                RuntimeWarning,
                stacklevel=3,
            )
        return False
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    _stats["stores"] += 1
    return True


def clear() -> int:
    """Remove every entry (and stale temporary files); return how many files were removed."""
    removed = 0
    d = cache_dir()
    if not d.is_dir():
        return 0
    for p in d.iterdir():
        if p.is_file() and (p.name.startswith(".tmp-") or len(p.name.split(".")[0]) == 64):
            try:
                p.unlink()
                removed += 1
            except OSError:
                pass
    return removed


def stats() -> dict[str, int]:
    """Counters of this process: hits, misses, stores, store_errors."""
    return dict(_stats)


def reset_stats() -> None:
    """Zero the counters and forget which unwritable directories were already warned about."""
    for k in _stats:
        _stats[k] = 0
    _warned_dirs.clear()
