"""Toolchain discovery (NVRTC, CUDA headers) and GPU guards.

Nothing here needs a GPU except :func:`require_gpu` / :func:`device_arch`, and nothing imports
CuPy at module import time. Header search order:

1. ``$BLEST_CUDA_INCLUDE`` (``os.pathsep``-separated, used verbatim: an explicit override);
2. ``$CUDA_PATH/include``, ``$CUDA_HOME/include``;
3. the NVIDIA wheels on ``nvidia.__path__``: ``cu13/include`` (CUDA 13 layout),
   ``cuda_runtime/include`` + ``cuda_cccl/include`` (CUDA 12 layout);
4. ``/usr/local/cuda/include``.

Candidates whose ``CUDART_VERSION`` matches the loaded NVRTC (major.minor, then major) are
preferred, so a CUDA 12 toolkit on ``$CUDA_PATH`` does not shadow CUDA 13 wheels used by a
CUDA 13 NVRTC. CCCL (``<nv/target>``, ``<cuda/std/...>``) lives in ``include/cccl`` on CUDA 13
and directly in ``include`` (toolkit) or ``nvidia/cuda_cccl/include`` (wheel) on CUDA 12; it is
recognised by ``cuda/std/version`` (the CUDA 13 wheels also drop a lone ``nv/target`` into
``include``, so ``nv/target`` alone does not identify it).
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path
from typing import Any

from blest.defaults import MIN_COMPUTE_CAPABILITY
from blest.errors import GPUUnavailableError

__all__ = [
    "nvrtc",
    "nvrtc_version",
    "nvrtc_build",
    "supported_archs",
    "include_dirs",
    "header_version",
    "toolchain_fingerprint",
    "have_gpu",
    "require_gpu",
    "device_arch",
    "MIN_COMPUTE_CAPABILITY",
    "INSTALL_HINT",
]

INSTALL_HINT = 'pip install "blest-bfs[cuda13]" (driver >= 580) or "blest-bfs[cuda12]"'
_HEADERS_HINT = (
    "CUDA headers not found: pip install nvidia-cuda-runtime==13.0.* nvidia-cuda-cccl==13.0.* "
    "(or the -cu12 wheels), or set CUDA_PATH to a CUDA toolkit"
)
_CCCL_MARKER = "cuda/std/version"  # cooperative_groups.h includes <cuda/atomic> (CCCL)
_CUDART_ERR_INSUFFICIENT_DRIVER = 35
_CUDART_ERR_NO_DEVICE = 100


# --------------------------------------------------------------------------- NVRTC
@functools.cache
def nvrtc() -> Any:
    """CuPy's NVRTC binding (``cupy_backends.cuda.libs.nvrtc``), its library loaded and checked."""
    try:
        from cupy_backends.cuda.libs import nvrtc as mod
    except ImportError:
        try:
            from cupy.cuda import nvrtc as mod
        except ImportError as exc:
            raise GPUUnavailableError(f"CuPy is not installed: {INSTALL_HINT}") from exc
    try:
        mod.getVersion()
    except Exception as exc:  # library not found / not loadable
        raise GPUUnavailableError(
            f"NVRTC cannot be loaded ({exc}); pip install nvidia-cuda-nvrtc==13.0.* "
            f"(or {INSTALL_HINT})"
        ) from exc
    return mod


@functools.cache
def nvrtc_version() -> tuple[int, int]:
    """(major, minor) of the NVRTC library CuPy loaded."""
    major, minor = nvrtc().getVersion()
    return int(major), int(minor)


@functools.cache
def supported_archs() -> tuple[int, ...]:
    """Compute capabilities NVRTC can target, e.g. ``(75, 80, 86, ..., 90, 100, 120)``."""
    return tuple(int(a) for a in nvrtc().getSupportedArchs())


@functools.cache
def nvrtc_build() -> str:
    """NVRTC's exact build, e.g. ``"13.0 V13.0.88 CL-36424714"`` (from an empty compile's PTX).

    ``getVersion`` only gives major.minor; the PTX header also names the patch release and build,
    which is what the kernel cache must key on. Costs one ≈20 ms compile, once per process.
    """
    mod = nvrtc()
    prog = mod.createProgram("", "blest_probe.cu", (), ())
    try:
        mod.compileProgram(prog, [])
        head = mod.getPTX(prog)[:1024].decode("ascii", "replace")
    except Exception:
        head = ""
    finally:
        mod.destroyProgram(prog)
    found = re.findall(r"(V\d+\.\d+\.\d+|CL-\d+)", head)
    major, minor = nvrtc_version()
    return " ".join([f"{major}.{minor}", *found])


# --------------------------------------------------------------------------- headers
def header_version(include_dir: str | os.PathLike) -> int | None:
    """``CUDART_VERSION`` (e.g. 13000) of a CUDA include dir, or None if unreadable."""
    try:
        text = (Path(include_dir) / "cuda_runtime_api.h").read_text(errors="replace")
    except OSError:
        return None
    m = re.search(r"#define\s+CUDART_VERSION\s+(\d+)", text)
    return int(m.group(1)) if m else None


def _wheel_roots() -> list[Path]:
    try:
        import nvidia  # namespace package of the nvidia-* wheels
    except ImportError:
        return []
    return [Path(p) for p in getattr(nvidia, "__path__", [])]


def _candidates(env: dict[str, str]) -> tuple[list[Path], list[Path]]:
    """(dirs that may hold cooperative_groups.h, dirs that may hold nv/target), search order."""
    cuda_dirs: list[Path] = []
    cccl_dirs: list[Path] = []
    for var in ("CUDA_PATH", "CUDA_HOME"):
        if env.get(var):
            inc = Path(env[var]) / "include"
            cuda_dirs.append(inc)
            cccl_dirs += [inc / "cccl", inc]
    for root in _wheel_roots():
        for sub in sorted(root.glob("cu[0-9]*"), reverse=True):  # cu13, cu12 ... newest first
            cuda_dirs.append(sub / "include")
            cccl_dirs.append(sub / "include" / "cccl")
        cuda_dirs.append(root / "cuda_runtime" / "include")
        cccl_dirs.append(root / "cuda_cccl" / "include")
    sys_inc = Path("/usr/local/cuda/include")
    cuda_dirs.append(sys_inc)
    cccl_dirs += [sys_inc / "cccl", sys_inc]
    return cuda_dirs, cccl_dirs


def _rank(include_dir: Path, want: tuple[int, int] | None) -> int:
    ver = header_version(include_dir)
    if want is None or ver is None:
        return 2
    major, minor = ver // 1000, (ver % 1000) // 10
    return 0 if (major, minor) == want else 1 if major == want[0] else 3


@functools.cache
def _find_include_dirs(
    cuda_path: str, cuda_home: str, override: str, want: tuple[int, int] | None
) -> tuple[str, ...]:
    if override:
        return tuple(p for p in override.split(os.pathsep) if p)
    cuda_dirs, cccl_dirs = _candidates({"CUDA_PATH": cuda_path, "CUDA_HOME": cuda_home})
    found: list[Path] = []
    for d in cuda_dirs:
        if (d / "cooperative_groups.h").is_file() and d.resolve() not in {
            f.resolve() for f in found
        }:
            found.append(d)
    if not found:
        return ()
    main = min(found, key=lambda d: _rank(d, want))  # stable: first of the best rank
    same_root = [main / "cccl", main, main.parent.parent / "cuda_cccl" / "include"]
    for d in same_root + cccl_dirs:
        if (d / _CCCL_MARKER).is_file() and (d / "nv" / "target").is_file():
            # CCCL first, as NVIDIA's own tools order them; CUDA 12 toolkits hold it in include/
            return (str(main),) if d == main else (str(d), str(main))
    return (str(main),)


def include_dirs() -> list[str]:
    """Dirs to pass with ``-I``: CCCL (when separate), then the one with cooperative_groups.h.

    Empty when no CUDA headers are found (sources that include none still compile).
    """
    try:
        want: tuple[int, int] | None = nvrtc_version()
    except GPUUnavailableError:
        want = None
    env = os.environ
    return list(
        _find_include_dirs(
            env.get("CUDA_PATH", ""),
            env.get("CUDA_HOME", ""),
            env.get("BLEST_CUDA_INCLUDE", ""),
            want,
        )
    )


def headers_hint() -> str:
    """One line saying how to get the CUDA headers NVRTC needs."""
    return _HEADERS_HINT


def toolchain_fingerprint(dirs: list[str] | None = None) -> str:
    """NVRTC build plus identity (version, size, mtime) of the headers: part of every cache key."""
    parts = [f"nvrtc {nvrtc_build()}"]
    for d in include_dirs() if dirs is None else dirs:
        for marker in ("cooperative_groups.h", "cuda_runtime_api.h", _CCCL_MARKER):
            try:
                st = (Path(d) / marker).stat()
            except OSError:
                continue
            parts.append(f"{d}/{marker}:{st.st_size}:{st.st_mtime_ns}")
    return "\n".join(parts)


# --------------------------------------------------------------------------- GPU guards
def _status(exc: BaseException) -> int | None:
    return getattr(exc, "status", None)


def have_gpu() -> bool:
    """True when CuPy imports, a driver is present and at least one device is visible.

    Cheap and never raises (any capability, not only sm_80+; see :func:`require_gpu`).
    """
    try:
        from cupy.cuda import runtime

        return runtime.driverGetVersion() > 0 and runtime.getDeviceCount() > 0
    except Exception:
        return False


def _cupy_runtime() -> Any:
    try:
        import cupy  # noqa: F401
        from cupy.cuda import runtime
    except ImportError as exc:
        raise GPUUnavailableError(f"CuPy is not installed: {INSTALL_HINT}") from exc
    return runtime


def _device_props(device_id: int) -> tuple[int, str]:
    runtime = _cupy_runtime()
    props = runtime.getDeviceProperties(device_id)
    name = props["name"]
    if isinstance(name, bytes):
        name = name.decode(errors="replace")
    return int(props["major"]) * 10 + int(props["minor"]), name


def device_arch(device_id: int) -> str:
    """The device's own arch string, e.g. ``"sm_90"`` (needs a GPU)."""
    cc, _ = _device_props(device_id)
    return f"sm_{cc}"


def require_gpu(device: int | None = None) -> tuple[int, str, str]:
    """Check for a usable GPU; return ``(device_id, arch, name)``, e.g. ``(0, "sm_90", name)``.

    Raises :class:`~blest.errors.GPUUnavailableError` with a one-line reason: CuPy missing
    (names the pip extra), no driver, driver too old for CuPy's CUDA, no device, bad device
    index, or compute capability below 8.0.
    """
    runtime = _cupy_runtime()
    try:
        driver = runtime.driverGetVersion()
    except Exception as exc:
        raise GPUUnavailableError(f"no usable NVIDIA driver ({exc})") from exc
    if driver <= 0:
        raise GPUUnavailableError("no NVIDIA driver found (libcuda cannot be loaded)")
    try:
        count = runtime.getDeviceCount()
    except Exception as exc:
        status = _status(exc)
        if status == _CUDART_ERR_NO_DEVICE:
            raise GPUUnavailableError(_no_device_reason()) from exc
        if status == _CUDART_ERR_INSUFFICIENT_DRIVER:
            rt = runtime.runtimeGetVersion()
            raise GPUUnavailableError(
                f"the NVIDIA driver (CUDA {_ver(driver)}) is older than CuPy's CUDA runtime "
                f"({_ver(rt)}): upgrade the driver or {INSTALL_HINT}"
            ) from exc
        raise GPUUnavailableError(f"CUDA cannot enumerate devices ({exc})") from exc
    if count <= 0:
        raise GPUUnavailableError(_no_device_reason())
    if device is None:
        device = int(runtime.getDevice())
    if not 0 <= device < count:
        raise GPUUnavailableError(f"device {device} requested but {count} device(s) are visible")
    cc, name = _device_props(device)
    if cc < MIN_COMPUTE_CAPABILITY:
        raise GPUUnavailableError(
            f"blest needs sm_80 or newer (binary MMA m8n8k128 with .and.popc); {name} is sm_{cc}"
        )
    return device, f"sm_{cc}", name


def _ver(v: int) -> str:
    return f"{v // 1000}.{(v % 1000) // 10}"


def _no_device_reason() -> str:
    vis = os.environ.get("CUDA_VISIBLE_DEVICES")
    extra = f" (CUDA_VISIBLE_DEVICES={vis!r})" if vis is not None else ""
    return f"no CUDA device is visible{extra}"
