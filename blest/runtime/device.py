"""Small GPU helpers shared by the engines: CuPy on demand, uploads, the out-adjacency of a
prepared graph, the memory guard."""

from __future__ import annotations

from typing import Any

import numpy as np

from blest.errors import DeviceMemoryError, GPUUnavailableError
from blest.graph.prepared import Prepared

__all__ = [
    "mask_words",
    "cupy_module",
    "device_buffers",
    "device_in_csr",
    "device_smem_limit",
    "out_csr",
    "deliver_levels",
    "is_pinned",
    "pinned_array",
    "staged",
    "available_memory",
    "require_memory",
    "format_bytes",
]


def cupy_module() -> Any:
    """CuPy, or :class:`GPUUnavailableError` saying how to install it."""
    try:
        import cupy
    except ImportError as exc:  # pragma: no cover - depends on the machine
        raise GPUUnavailableError(
            'the GPU engine needs CuPy: pip install "blest-bfs[cuda13]" (or [cuda12])'
        ) from exc
    return cupy


def device_buffers(cp: Any, **arrays: Any) -> dict[str, Any]:
    """Upload arrays (zero-size arrays become one element: kernels need a valid pointer)."""
    out = {}
    for name, a in arrays.items():
        d = cp.asarray(a)
        out[name] = d if d.size else cp.zeros(1, dtype=d.dtype)
    return out


def mask_words(xp: Any, bvss: Any) -> Any:
    """The mask words the kernels read: the BVSS's, or for B's BVSS (``hops`` > 1, with near
    masks) each VSS's 32 mask words followed by 32 words of each near mask (topdown.cu.j2)."""
    if bvss.near_masks is None:
        return bvss.masks
    near = xp.atleast_2d(xp.asarray(bvss.near_masks))  # hops - 1 rows
    parts = [xp.asarray(bvss.masks).reshape(-1, 32)] + [row.reshape(-1, 32) for row in near]
    return xp.concatenate(parts, axis=1).reshape(-1)


def device_in_csr(cp: Any, prep: Any) -> tuple[Any, Any]:
    """The in-adjacency of a :class:`~blest.graph.prepared.Prepared` graph on the device: int64
    pointers and int32 heads (one zero head when it has no arcs: kernels need a valid
    pointer)."""
    in_ptr = cp.asarray(prep.in_ptr, dtype=cp.int64)
    in_idx = cp.asarray(prep.in_idx, dtype=cp.int32)
    return in_ptr, in_idx if in_idx.size else cp.zeros(1, dtype=cp.int32)


def device_smem_limit(cp: Any, device_id: int) -> int:
    """Dynamic shared memory one block may opt in to on ``device_id``, less the reserve for
    what kernels declare statically."""
    from blest.codegen.contract import SMEM_STATIC_RESERVE

    attrs = cp.cuda.Device(device_id).attributes
    return int(attrs.get("MaxSharedMemoryPerBlockOptin", 48 * 1024)) - SMEM_STATIC_RESERVE


def is_pinned(cp: Any, array: Any) -> bool:
    """Whether a C-contiguous NumPy array lies in page-locked memory (``cupyx.empty_pinned``,
    say), so that the GPU can copy into it directly."""
    if not array.flags.c_contiguous:
        return False
    runtime = cp.cuda.runtime
    try:
        return runtime.pointerGetAttributes(array.ctypes.data).type == runtime.memoryTypeHost
    except runtime.CUDARuntimeError:
        return False


def staged(cp: Any, out: Any) -> bool:
    """Whether levels reach ``out`` through a pinned staging buffer: for None and pageable
    NumPy arrays (a pinned one takes them directly, the device ones on the GPU)."""
    return out is None or (isinstance(out, np.ndarray) and not is_pinned(cp, out))


def deliver_levels(cp: Any, levels: Any, out: Any, host: Any) -> Any:
    """Device ``levels`` as ``out`` asks (already checked): ``"device"`` a copy, ``"view"``
    the array itself, a CuPy array filled on the GPU, a pinned NumPy array filled directly,
    None or a pageable array through the pinned buffer ``host``."""
    if isinstance(out, str):
        return levels.copy() if out == "device" else levels
    if isinstance(out, cp.ndarray):
        out[...] = levels
        return out
    if not staged(cp, out):
        levels.get(out=out)
        return out
    levels.get(out=host)
    if out is None:
        return host.copy()
    np.copyto(out, host)
    return out


def pinned_array(cp: Any, count: int, dtype: Any) -> Any:
    """A zeroed NumPy array of ``count`` items in page-locked host memory (device-to-host
    copies into it skip a staging copy); it keeps its memory alive."""
    import numpy as np

    dtype = np.dtype(dtype)
    memory = cp.cuda.alloc_pinned_memory(max(1, count) * dtype.itemsize)
    out = np.frombuffer(memory, dtype=dtype, count=count)
    out[:] = 0
    return out


def out_csr(xp: Any, prep: Prepared, in_ptr: Any, in_idx: Any) -> tuple[Any, Any]:
    """Out-adjacency (int64 pointers, int32 heads) of the reordered graph from its in-adjacency
    ``in_ptr``, ``in_idx`` (arrays of ``xp``: CuPy on the device, or NumPy): the in-adjacency
    itself when the graph is undirected, else its transpose (a stable sort of the arcs by tail,
    so each list is ascending)."""
    if not prep.graph.directed or prep.graph.nnz == 0:
        return in_ptr, in_idx
    n = prep.n
    heads = xp.repeat(xp.arange(n, dtype=xp.int32), xp.diff(in_ptr).astype(xp.int64))
    order = xp.argsort(in_idx, kind="stable")
    out_idx = heads[order]
    out_ptr = xp.zeros(n + 1, dtype=xp.int64)
    xp.cumsum(xp.bincount(in_idx, minlength=n), out=out_ptr[1:])
    return out_ptr, out_idx


def format_bytes(n: float) -> str:
    """``n`` bytes in binary units, e.g. ``1.5 GiB``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"  # pragma: no cover


def available_memory() -> int:
    """Bytes the current device can still give: its free memory plus the blocks CuPy's pool
    caches (handed back first), at most what the pool's limit leaves, where it has one."""
    import cupy as cp

    free, _total = cp.cuda.runtime.memGetInfo()
    pool = cp.get_default_memory_pool()
    available = int(free) + int(pool.free_bytes())
    limit = pool.get_limit()
    if limit:
        available = min(available, max(0, int(limit) - int(pool.used_bytes())))
    return available


def require_memory(need: int, device_id: int, what: Any = None) -> None:
    """Raise :class:`DeviceMemoryError` before allocating when ``need`` bytes exceed what the
    device has free (CuPy's pool counts as free: it hands its cached blocks back first)."""
    available = available_memory()
    if need > available:
        about = ""
        if what is not None and hasattr(what, "n") and hasattr(what, "nnz"):
            about = f" for a graph of {what.n:,} vertices and {what.nnz:,} arcs"
        raise DeviceMemoryError(
            f"needs about {format_bytes(need)} of GPU memory{about}; device {device_id} has "
            f"{format_bytes(available)} free"
        )
