"""Runtime: engines that run a prepared graph (GPU kernels, SciPy on the CPU, or the kernel
emulator), kernel loading and launching, and the GPU dispatch of JaccardWithWindows.

Build engines with :func:`make_engine`; every engine follows :class:`BFSEngine`.
"""

from blest.runtime.engine_protocol import BFSEngine, BFSStats, Geometry
from blest.runtime.factory import DEVICES, make_engine, resolve_device

__all__ = ["BFSEngine", "BFSStats", "DEVICES", "Geometry", "make_engine", "resolve_device"]
