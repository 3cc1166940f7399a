"""How much more memory this process may take: the smallest of what the system, the process's
resource limits and its control group allow.

- ``MemAvailable`` of ``/proc/meminfo`` (else free pages from ``os.sysconf``);
- the address-space limit (``ulimit -v``, ``RLIMIT_AS``) less the process's virtual size, and
  the data limit (``ulimit -d``, ``RLIMIT_DATA``) less its data segment;
- the memory limit of its control group and of every group above it: cgroup v2 ``memory.max``
  less ``memory.current``, cgroup v1 ``memory.limit_in_bytes`` less ``memory.usage_in_bytes``;
  file pages the kernel can reclaim at once (``inactive_file``) do not count as used.

Each reading that is unavailable (no ``/proc``, no limit, no cgroup file) is left out.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Headroom", "available_memory", "cgroup_headroom", "rlimit_headroom"]

_UNLIMITED_V1 = 1 << 60  # cgroup v1 writes "no limit" as a number near 2**63


@dataclass(frozen=True)
class Headroom:
    """Bytes that may still be allocated, and what sets that bound."""

    nbytes: int
    origin: str


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None


def _proc_status_kib(key: str) -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError, UnicodeDecodeError):
        pass
    return None


def _mem_available() -> Headroom | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return Headroom(int(line.split()[1]) * 1024, "the memory available now")
    except (OSError, ValueError, IndexError, UnicodeDecodeError):
        pass
    try:
        free = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
    except (OSError, ValueError, AttributeError):
        return None
    return Headroom(int(free), "the memory available now")


def rlimit_headroom() -> list[Headroom]:
    """What the soft address-space and data limits leave, when they are set."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return []
    out = []
    for name, status_key, shell in (
        ("RLIMIT_AS", "VmSize", "ulimit -v"),
        ("RLIMIT_DATA", "VmData", "ulimit -d"),
    ):
        which = getattr(resource, name, None)
        if which is None:
            continue
        try:
            soft = resource.getrlimit(which)[0]
        except (OSError, ValueError):  # pragma: no cover
            continue
        if soft == resource.RLIM_INFINITY or soft < 0:
            continue
        used = _proc_status_kib(status_key) or 0
        out.append(
            Headroom(max(0, soft - used), f"the process's {name} limit ({shell}) less its use")
        )
    return out


def _v1_memory_dirs(proc_cgroup: Path, root: Path) -> list[Path]:
    """The cgroup v1 memory directories of this process, innermost first."""
    try:
        lines = proc_cgroup.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) == 3 and "memory" in parts[1].split(","):
            return _ancestors(root / "memory", parts[2])
    return []


def _v2_dirs(proc_cgroup: Path, root: Path) -> list[Path]:
    """The cgroup v2 directories of this process, innermost first."""
    try:
        lines = proc_cgroup.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    for line in lines:
        if line.startswith("0::"):
            return _ancestors(root, line[3:])
    return []


def _ancestors(mount: Path, cgroup_path: str) -> list[Path]:
    """``mount/cgroup_path`` and every directory above it up to ``mount``, innermost first;
    just ``mount`` when the group is not visible there (a namespace shows it as the root)."""
    rel = [p for p in cgroup_path.strip().split("/") if p and p not in (".", "..")]
    inner = mount.joinpath(*rel)
    if not inner.is_dir():
        return [mount] if mount.is_dir() else []
    return [mount.joinpath(*rel[:k]) for k in range(len(rel), -1, -1)]


def _inactive_file(stat: Path, keys: tuple[str, ...]) -> int:
    try:
        for line in stat.read_text(encoding="ascii").splitlines():
            key, _, value = line.partition(" ")
            if key in keys and value.strip().isdigit():
                return int(value)
    except (OSError, UnicodeDecodeError):
        pass
    return 0


def cgroup_headroom(
    proc_cgroup: str | os.PathLike[str] = "/proc/self/cgroup",
    root: str | os.PathLike[str] = "/sys/fs/cgroup",
) -> list[Headroom]:
    """What the memory limits of this process's control groups (v2, else v1) leave."""
    proc_cgroup, root = Path(proc_cgroup), Path(root)
    out = []
    for d in _v2_dirs(proc_cgroup, root):
        limit = _read_int(d / "memory.max")  # "max" (no limit) reads as None
        used = _read_int(d / "memory.current")
        if limit is not None and used is not None:
            used -= _inactive_file(d / "memory.stat", ("inactive_file",))
            out.append(Headroom(max(0, limit - max(used, 0)), f"the cgroup limit {d}/memory.max"))
    if out:
        return out
    for d in _v1_memory_dirs(proc_cgroup, root):
        limit = _read_int(d / "memory.limit_in_bytes")
        used = _read_int(d / "memory.usage_in_bytes")
        if limit is not None and used is not None and limit < _UNLIMITED_V1:
            used -= _inactive_file(d / "memory.stat", ("total_inactive_file", "inactive_file"))
            where = f"the cgroup limit {d}/memory.limit_in_bytes"
            out.append(Headroom(max(0, limit - max(used, 0)), where))
    return out


def available_memory() -> Headroom | None:
    """The smallest headroom of all (see the module docstring); None when none is known."""
    found = [h for h in [_mem_available(), *rlimit_headroom(), *cgroup_headroom()] if h]
    return min(found, key=lambda h: h.nbytes) if found else None
