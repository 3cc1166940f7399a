"""Generated modules on a GPU: loading, launching, and :class:`DeviceProgram`, the runtime's side
of a :class:`~blest.codegen.program.KernelProgram`, whatever its family.

A :class:`DeviceProgram` owns what every kernel family needs to run a module: the module,
compiled through NVRTC (disk-cached) and loaded, and its kernels by role; the arguments every
kernel takes first, bound once from named device buffers and sizes in the order of the
program's ABI (a name the ABI lists and the family did not provide, or one it provided that the
ABI does not list, is refused: the two cannot drift apart); one :class:`PreparedLaunch` per
role and number of extra arguments, packed at its first use, whose extra arguments are
rewritten in place at each launch (packing two dozen arguments costs tens of microseconds, a
call's whole budget on small graphs); the control block (the ``ctl`` buffer, when the ABI has
one) and its page-locked host mirror; :meth:`DeviceProgram.close`. A family's driver (the
single-source :class:`~blest.runtime.traversal.Traversal`, the multi-source
:class:`~blest.runtime.ms_runner.MSRunner`, the dense
:class:`~blest.runtime.dense_runner.DenseRunner`) allocates the buffers, decides the launch
geometry with :meth:`DeviceProgram.occupancy` and sets each role's :class:`LaunchShape`.

Below it, CuPy's driver bindings: :func:`load_module` loads a cubin (or PTX, JIT-compiled by
the driver); :func:`launch` starts a kernel once, cooperatively when asked (after checking that
the grid fits the co-resident limit, which a persistent kernel with grid barriers needs);
:func:`max_active_blocks`, :func:`max_cooperative_grid` and :func:`max_active_clusters` ask the
occupancy API. Everything here needs a GPU.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from blest.codegen.contract import CTL_WORDS
from blest.codegen.program import KernelProgram
from blest.errors import ArgumentError
from blest.runtime.device import pinned_array

__all__ = [
    "DeviceProgram",
    "LaunchShape",
    "Kernel",
    "LoadedModule",
    "PreparedLaunch",
    "load_module",
    "launch",
    "max_active_blocks",
    "max_cooperative_grid",
    "max_active_clusters",
    "cuda_driver",
]

_libcuda: Any = None
#: ``CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED``: clusters of more than 8 blocks.
_NON_PORTABLE_CLUSTER = 14


def cuda_driver() -> Any:
    """The CUDA driver library (loaded by CuPy already; opened here for the few entry points
    CuPy does not bind)."""
    global _libcuda
    if _libcuda is None:
        from blest.errors import GPUUnavailableError

        try:
            lib = ctypes.CDLL("libcuda.so.1")
        except OSError as exc:
            raise GPUUnavailableError(f"cannot open the CUDA driver: {exc}") from exc
        lib.cuEventRecordWithFlags.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint]
        lib.cuEventRecordWithFlags.restype = ctypes.c_int
        lib.cuOccupancyMaxActiveClusters.argtypes = [
            ctypes.POINTER(ctypes.c_int),
            ctypes.c_void_p,
            ctypes.c_void_p,
        ]
        lib.cuOccupancyMaxActiveClusters.restype = ctypes.c_int
        _libcuda = lib
    return _libcuda


class _LaunchConfig(ctypes.Structure):
    """``CUlaunchConfig`` (no launch attributes: the kernel's cluster shape is compiled in)."""

    _fields_ = [
        ("grid", ctypes.c_uint * 3),
        ("block", ctypes.c_uint * 3),
        ("shared_mem", ctypes.c_uint),
        ("stream", ctypes.c_void_p),
        ("attrs", ctypes.c_void_p),
        ("num_attrs", ctypes.c_uint),
    ]


class Kernel:
    """A kernel of a loaded module: ``.function`` (``cupy.cuda.function.Function``), ``.name``,
    ``.device_id``. Launch it with :func:`launch`."""

    __slots__ = ("function", "name", "device_id", "smem_allowed", "_limits")

    def __init__(self, function: Any, name: str, device_id: int):
        self.function = function
        self.name = name
        self.device_id = device_id
        self.smem_allowed = 0  # dynamic shared memory opted in to, bytes
        self._limits: dict[tuple[int, int], int] = {}  # (threads, smem) → cooperative grid

    def __repr__(self) -> str:
        return f"Kernel({self.name!r}, device={self.device_id})"


class LoadedModule:
    """A cubin (or PTX, JIT-compiled by the driver) loaded on one device; ``mod["name"]`` or
    ``mod.get_function("name")`` gives a :class:`Kernel` (``extern "C"`` names). Needs a GPU."""

    def __init__(self, module: Any, device_id: int):
        self.module = module  # keeps the CUmodule loaded
        self.device_id = device_id
        self._kernels: dict[str, Kernel] = {}

    def get_function(self, name: str) -> Kernel:
        kernel = self._kernels.get(name)
        if kernel is None:
            import cupy

            with cupy.cuda.Device(self.device_id):
                try:
                    fn = self.module.get_function(name)
                except cupy.cuda.driver.CUDADriverError as exc:
                    raise KeyError(f"no kernel {name!r} in this module ({exc})") from exc
            kernel = self._kernels[name] = Kernel(fn, name, self.device_id)
        return kernel

    __getitem__ = get_function


def load_module(binary: bytes, device_id: int) -> LoadedModule:
    """Load a cubin (or PTX) on ``device_id`` through ``cupy.cuda.function.Module.load``.

    Needs a GPU; the binary must be for that device's arch (PTX: JIT by the driver, which must
    be at least as new as the NVRTC that emitted it).
    """
    import cupy

    image = bytes(binary)
    if not image.startswith(b"\x7fELF") and not image.endswith(b"\0"):
        image += b"\0"  # cuModuleLoadData wants NUL-terminated PTX
    with cupy.cuda.Device(device_id):
        module = cupy.cuda.function.Module()
        module.load(image)
    return LoadedModule(module, device_id)


def _unwrap(kernel: Any) -> tuple[Any, int | None]:
    if isinstance(kernel, Kernel):
        return kernel.function, kernel.device_id
    return kernel, None


def _device(device_id: int | None) -> Any:
    if device_id is None:
        return contextlib.nullcontext()
    import cupy

    return cupy.cuda.Device(device_id)


def _allow_dynamic_smem(kernel: Any, nbytes: int) -> None:
    """Opt the kernel in to ``nbytes`` of dynamic shared memory. Needed whenever dynamic plus
    static shared memory passes 48 KiB (else launches and occupancy queries fail), so asked for
    any nonzero amount; a :class:`Kernel` remembers it, as it costs a driver call."""
    fn, _ = _unwrap(kernel)
    known = kernel.smem_allowed if isinstance(kernel, Kernel) else -1
    if nbytes <= 0 or known >= nbytes:
        return
    from cupy.cuda import driver

    driver.funcSetAttribute(
        fn.ptr, driver.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(nbytes)
    )
    if isinstance(kernel, Kernel):
        kernel.smem_allowed = int(nbytes)


def _dim3(d: int | Sequence[int]) -> tuple[int, int, int]:
    t = (int(d),) if isinstance(d, int) else tuple(int(x) for x in d)
    if not 1 <= len(t) <= 3 or min(t) < 1:
        raise ValueError(f"grid/block must be 1 to 3 positive ints, got {d!r}")
    return (*t, 1, 1)[:3]  # type: ignore[return-value]


def max_active_blocks(kernel: Any, block_size: int, dynamic_smem: int = 0) -> int:
    """Co-resident blocks per SM (``cuOccupancyMaxActiveBlocksPerMultiprocessor``). Needs a GPU."""
    from cupy.cuda import driver

    fn, dev = _unwrap(kernel)
    with _device(dev):
        _allow_dynamic_smem(kernel, dynamic_smem)
        return int(
            driver.occupancyMaxActiveBlocksPerMultiprocessor(
                fn.ptr, int(block_size), int(dynamic_smem)
            )
        )


def max_cooperative_grid(kernel: Any, block_size: int, dynamic_smem: int = 0) -> int:
    """Largest grid a cooperative launch accepts: blocks per SM × SMs. Needs a GPU."""
    import cupy
    from cupy.cuda import runtime

    _, dev = _unwrap(kernel)
    dev = cupy.cuda.Device().id if dev is None else dev
    sms = runtime.deviceGetAttribute(runtime.cudaDevAttrMultiProcessorCount, dev)
    return max_active_blocks(kernel, block_size, dynamic_smem) * int(sms)


def max_active_clusters(kernel: Any, cluster: int, block_size: int, dynamic_smem: int) -> int:
    """Clusters of ``cluster`` blocks (the kernel's ``__cluster_dims__``) that the device can
    run at once (``cuOccupancyMaxActiveClusters``): 0 when not even one fits. Clusters of more
    than 8 blocks are allowed first (a non-portable size). Needs a GPU."""
    from cupy.cuda import driver

    fn, dev = _unwrap(kernel)
    with _device(dev):
        _allow_dynamic_smem(kernel, dynamic_smem)
        if cluster > 8:
            driver.funcSetAttribute(fn.ptr, _NON_PORTABLE_CLUSTER, 1)
        config = _LaunchConfig(
            (cluster, 1, 1), (int(block_size), 1, 1), int(dynamic_smem), None, None, 0
        )
        count = ctypes.c_int(0)
        rc = cuda_driver().cuOccupancyMaxActiveClusters(
            ctypes.byref(count), ctypes.c_void_p(fn.ptr), ctypes.byref(config)
        )
        if rc != 0:
            raise RuntimeError(f"cuOccupancyMaxActiveClusters failed (CUresult {rc})")
        return int(count.value)


def launch(
    kernel: Any,
    grid: int | Sequence[int],
    block: int | Sequence[int],
    args: Sequence[Any],
    shared_mem: int = 0,
    stream: Any = None,
    cooperative: bool = False,
) -> None:
    """Launch ``kernel`` (a :class:`Kernel` or a CuPy ``Function``). Needs a GPU.

    ``cooperative=True`` uses ``cuLaunchCooperativeKernel`` (CuPy's
    ``Function.__call__(grid, block, args, shared_mem, stream, enable_cooperative_groups)``),
    after checking that the grid fits the co-resident limit: CuPy would otherwise shrink a 1-D
    grid with a warning, which a persistent kernel must not silently get. Args follow CuPy's
    rules: ``cupy.ndarray`` → pointer, NumPy scalars by their dtype, Python int → int64.
    """
    fn, dev = _unwrap(kernel)
    g, b = _dim3(grid), _dim3(block)
    with _device(dev):
        _allow_dynamic_smem(kernel, shared_mem)
        if cooperative:
            _check_cooperative(kernel, g, b, shared_mem)
        fn(g, b, tuple(args), int(shared_mem), stream, bool(cooperative))


def _check_cooperative(kernel: Any, g: tuple, b: tuple, shared_mem: int) -> None:
    """Refuse a cooperative grid above the co-resident limit (CuPy would shrink a 1-D grid
    with a warning, which a persistent kernel must not silently get)."""
    # Kernel objects remember the limit: an occupancy query per launch costs µs per BFS.
    limits = kernel._limits if isinstance(kernel, Kernel) else {}
    key = (math.prod(b), int(shared_mem))
    limit = limits.get(key)
    if limit is None:
        limit = limits[key] = max_cooperative_grid(kernel, *key)
    if math.prod(g) > limit:
        raise ValueError(
            f"cooperative grid of {math.prod(g)} blocks exceeds the {limit} co-resident "
            f"blocks of {math.prod(b)} threads and {shared_mem} B dynamic shared memory"
        )


_CTYPES = {
    np.dtype(np.int32): ctypes.c_int32,
    np.dtype(np.uint32): ctypes.c_uint32,
    np.dtype(np.int64): ctypes.c_int64,
    np.dtype(np.uint64): ctypes.c_uint64,
    np.dtype(np.float32): ctypes.c_float,
    np.dtype(np.float64): ctypes.c_double,
}


def _slot(arg: Any) -> Any:
    """A ctypes holder of one kernel argument, by CuPy's rules (array: its device pointer,
    NumPy scalar: its dtype, Python int: int64, float: double). Pointers are held as uint64,
    so that an array and ``np.uint64(0)`` (a null pointer) may take turns in one argument."""
    if hasattr(arg, "data") and hasattr(arg.data, "ptr"):  # a cupy.ndarray
        return ctypes.c_uint64(arg.data.ptr)
    if isinstance(arg, np.generic):
        return _CTYPES[arg.dtype](arg.item())
    if isinstance(arg, bool) or not isinstance(arg, (int, float)):
        raise TypeError(f"unsupported kernel argument {type(arg).__name__}")
    return ctypes.c_int64(arg) if isinstance(arg, int) else ctypes.c_double(arg)


class PreparedLaunch:
    """One kernel launch with its arguments packed once (``cuLaunchKernel`` or
    ``cuLaunchCooperativeKernel`` through CuPy's driver bindings): a call rewrites only the
    arguments given to :meth:`set` and starts the kernel on the current stream. For the few
    launches of every BFS call, where packing two dozen arguments each time costs tens of µs.
    The arrays passed are kept alive as long as the launch is. Needs a GPU."""

    def __init__(
        self,
        kernel: Kernel,
        grid: int | Sequence[int],
        block: int | Sequence[int],
        args: Sequence[Any],
        shared_mem: int = 0,
        cooperative: bool = False,
    ) -> None:
        self._kernel = kernel
        self._grid, self._block = _dim3(grid), _dim3(block)
        self._shared_mem, self._cooperative = int(shared_mem), bool(cooperative)
        with _device(kernel.device_id):
            _allow_dynamic_smem(kernel, shared_mem)
            if cooperative:
                _check_cooperative(kernel, self._grid, self._block, shared_mem)
        self._args = list(args)  # keeps the arrays alive
        self._slots = [_slot(a) for a in self._args]
        self._params = (ctypes.c_void_p * max(1, len(self._slots)))(
            *[ctypes.addressof(v) for v in self._slots]
        )

    def set(self, index: int, arg: Any) -> None:
        """Argument ``index`` becomes ``arg`` (of the same kind) for the following launches."""
        slot = _slot(arg)
        if type(slot) is not type(self._slots[index]):
            raise TypeError(f"argument {index} changes type: {type(arg).__name__}")
        self._slots[index].value = slot.value
        self._args[index] = arg

    def __call__(self) -> None:
        import cupy
        from cupy.cuda import driver

        start = driver.launchCooperativeKernel if self._cooperative else driver.launchKernel
        start(
            self._kernel.function.ptr,
            *self._grid,
            *self._block,
            self._shared_mem,
            cupy.cuda.get_current_stream().ptr,
            ctypes.addressof(self._params),
            *(() if self._cooperative else (0,)),
        )


@dataclass(frozen=True)
class LaunchShape:
    """Blocks, threads a block, dynamic shared memory and whether the launch is cooperative."""

    grid: int
    block: int
    shared_bytes: int = 0
    cooperative: bool = False


class DeviceProgram:
    """``program`` compiled for ``arch``, loaded on ``device_id``, with its common arguments
    bound from ``values`` (see the module docstring). ``host_words``: extra page-locked words
    after the control block's mirror (a served engine's request block)."""

    def __init__(
        self,
        program: KernelProgram,
        device_id: int,
        arch: str,
        values: Mapping[str, Any] | None = None,
        *,
        host_words: int = 0,
    ) -> None:
        from blest.codegen.compile import compile_source
        from blest.runtime.device import cupy_module

        self.program = program
        self.device_id = device_id
        self.arch = arch
        self.cp = cp = cupy_module()
        binary = compile_source(program.source, arch=arch, target="cubin")
        module = load_module(binary, device_id)
        self.kernels = {role: module.get_function(entry) for role, entry in program.kernels.items()}
        self.shapes: dict[str, LaunchShape] = {}
        self._launches: dict[tuple[str, int], Any] = {}
        self.values: dict[str, Any] = {}
        self.args: tuple = ()
        self._index: dict[str, int] = {}
        self.ctl: Any = None
        self.host_block = pinned_array(cp, CTL_WORDS + host_words, np.uint32)
        self.host_ctl = self.host_block[:CTL_WORDS]
        if values is not None:
            self.bind(values)

    def bind(self, values: Mapping[str, Any]) -> None:
        """Bind the common arguments: one value for each name of the ABI, no other."""
        names = [p.name for p in self.program.params]
        missing = [name for name in names if name not in values]
        unknown = sorted(set(values) - set(names))
        if missing or unknown:
            raise ArgumentError(
                f"{self.program.name}: buffers do not match the kernels' parameters "
                f"(missing {missing}, unknown {unknown})"
            )
        self.values = dict(values)
        self.args = tuple(values[name] for name in names)
        self._index = {name: i for i, name in enumerate(names)}
        self._launches = {}
        self.ctl = values.get("ctl")

    def occupancy(self, role: str, block_size: int, shared_bytes: int = 0) -> int:
        """Blocks of kernel ``role`` that fit on one multiprocessor at once."""
        return max_active_blocks(self.kernels[role], block_size, shared_bytes)

    def launch(self, role: str, extra: tuple = ()) -> None:
        """Start kernel ``role`` on the current stream with the common arguments and ``extra``,
        in the shape set for the role."""
        key = (role, len(extra))
        prepared = self._launches.get(key)
        if prepared is None:
            shape = self.shapes[role]
            prepared = self._launches[key] = PreparedLaunch(
                self.kernels[role], (shape.grid,), (shape.block,), self.args + extra,
                shared_mem=shape.shared_bytes, cooperative=shape.cooperative,
            )  # fmt: skip
        else:
            base = len(self.args)
            for i, arg in enumerate(extra):
                prepared.set(base + i, arg)
        prepared()

    def rebind(self, **values: Any) -> None:
        """Common arguments that change between launches (a multi-source launch's batch
        range, say): the next launches of every role take them."""
        args = list(self.args)
        for name, value in values.items():
            i = self._index[name]
            args[i] = self.values[name] = value
            for prepared in self._launches.values():
                prepared.set(i, value)
        self.args = tuple(args)

    def read_ctl(self) -> Any:
        """The control block copied into its page-locked mirror (waits for the work before)."""
        self.ctl.get(out=self.host_ctl)
        return self.host_ctl

    def close(self) -> None:
        """Drop the module, the launches and every buffer this object holds."""
        self._launches = {}
        self.kernels = {}
        self.values = {}
        self.args = ()
        self.ctl = self.host_block = self.host_ctl = None
