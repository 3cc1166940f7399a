"""On-disk cache of compiled kernels (cubin / PTX), safe under concurrent processes.

Location: the ``kernels/`` part of the per-user cache directory (:mod:`blest.cachedirs`:
``$BLEST_CACHE_DIR`` or ``$XDG_CACHE_HOME/blest`` or ``~/.cache/blest``), used only when it can
be trusted (it and its entries belong to the user and nobody else can write them; else one
warning, and kernels are compiled every time). One file ``<sha256>.<target>`` per entry. The key
hashes the source, the full NVRTC option list, arch, target, the toolchain fingerprint (NVRTC
build, header identity) and :data:`CACHE_FORMAT`.

Each entry is ``MAGIC | sha256(key, target) | sha256(payload) | len(payload) | payload``,
written with mode 0600 to a temporary file in the same directory and published with
:func:`os.replace`, so readers see a whole entry or none. An entry that fails the check
(truncated, corrupted, foreign, or made for another key: a renamed entry) is a miss and is
overwritten by the next store. A cache directory that cannot be created or written makes stores
no-ops after one warning; reads from a read-only cache still hit.
"""

from __future__ import annotations

import hashlib
import struct
import warnings
from collections.abc import Sequence
from pathlib import Path

import blest.cachedirs as cachedirs

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

CACHE_FORMAT = 2
_MAGIC = b"BLESTK\x00\x02"
_HEADER = struct.Struct(f"<{len(_MAGIC)}s32s32sQ")
_MAX_ENTRY = 1 << 30  # bytes: larger files are not entries

_stats = {"hits": 0, "misses": 0, "stores": 0, "store_errors": 0}
_warned_dirs: set[str] = set()


def cache_dir() -> Path:
    """The kernels directory (not created here)."""
    return cachedirs.cache_root() / "kernels"


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


def _binding(key: str, target: str) -> bytes:
    """What ties an entry to its name: a renamed entry does not load under the new name."""
    return hashlib.sha256(f"{key}.{target}".encode("utf-8", "surrogatepass")).digest()


def _path(key: str, target: str) -> Path:
    return cache_dir() / f"{key}.{target}"


def load(key: str, target: str) -> bytes | None:
    """The cached payload, or None (missing, unreadable, untrusted, truncated, corrupted, or
    another key's)."""
    d = cachedirs.private_dir("kernels")
    blob = cachedirs.read_entry(d / f"{key}.{target}", _MAX_ENTRY) if d is not None else None
    payload = _unpack(blob or b"", _binding(key, target))
    _stats["hits" if payload is not None else "misses"] += 1
    return payload


def _unpack(blob: bytes, binding: bytes) -> bytes | None:
    if len(blob) < _HEADER.size:
        return None
    magic, bound, digest, size = _HEADER.unpack_from(blob)
    payload = blob[_HEADER.size :]
    if magic != _MAGIC or bound != binding or size != len(payload):
        return None
    return payload if hashlib.sha256(payload).digest() == digest else None


def store(key: str, target: str, payload: bytes) -> bool:
    """Publish an entry atomically; False (after one warning per directory) if it can't be."""
    d = cachedirs.private_dir("kernels")
    if d is None:  # untrusted or not creatable: private_dir has said so
        _stats["store_errors"] += 1
        return False
    path = d / f"{key}.{target}"
    header = _HEADER.pack(_MAGIC, _binding(key, target), hashlib.sha256(payload).digest(),
                          len(payload))  # fmt: skip
    try:
        cachedirs.write_entry(path, header + payload)
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
    cachedirs.forget_warnings()
