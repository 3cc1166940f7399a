"""blest: breadth-first search compiled into tensor-core kernels for NVIDIA GPUs.

The pipeline: :func:`load_graph` → :class:`Graph` (out_csr / in_csr) → a :class:`Prepared` graph
(vertex ordering, BVSS arrays) → a generated, NVRTC-compiled kernel variant (:mod:`blest.codegen`)
→ an engine (:func:`make_engine`, :class:`Engine`), whose ``bfs(src)`` returns levels in the
graph's own vertex ids. Everything but the GPU engine works without CuPy or a GPU.
"""

from __future__ import annotations

from typing import Any

from blest._version import __version__
from blest.codegen.spec import VariantSpec, variants
from blest.errors import (
    ArgumentError,
    BlestError,
    CompileError,
    ConfigError,
    DeviceMemoryError,
    EngineError,
    GPUUnavailableError,
    GraphFormatError,
    GraphLimitError,
    VertexError,
)
from blest.graph import Graph, build_bvss, load_graph
from blest.graph.prepared import Prepared

__all__ = [
    "ArgumentError",
    "BlestError",
    "CompileError",
    "ConfigError",
    "DeviceMemoryError",
    "Engine",
    "EngineError",
    "GPUUnavailableError",
    "Graph",
    "GraphFormatError",
    "GraphLimitError",
    "Prepared",
    "VariantSpec",
    "VertexError",
    "__version__",
    "build_bvss",
    "load_graph",
    "load_tuned",
    "make_engine",
    "variants",
]

_LAZY = {
    "Engine": ("blest.runtime.engine", "Engine"),
    "make_engine": ("blest.runtime.factory", "make_engine"),
    "load_tuned": ("blest.tuning.loader", "load_tuned"),
}


def __getattr__(name: str) -> Any:
    # The engines and the tuner load on first use: ``import blest`` stays cheap and GPU-free.
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'blest' has no attribute {name!r}")
