"""blest: breadth-first search compiled into tensor-core kernels for NVIDIA GPUs.

The pipeline: :func:`load_graph` → :class:`Graph` (out_csr / in_csr) → BVSS arrays
(:func:`blest.graph.build_bvss`) → a generated, NVRTC-compiled kernel variant
(:mod:`blest.codegen`) → :class:`blest.runtime.Engine`, whose ``bfs(src)`` returns levels in the
graph's own vertex ids. The CPU parts work without CuPy or a GPU.
"""

from __future__ import annotations

from blest.codegen.spec import VariantSpec, variants
from blest.errors import (
    BlestError,
    CompileError,
    ConfigError,
    GPUUnavailableError,
    GraphFormatError,
    GraphLimitError,
)
from blest.graph import Graph, build_bvss, load_graph
from blest.tuning.loader import load_tuned

__version__ = "0.1.0"

__all__ = [
    "BlestError",
    "CompileError",
    "ConfigError",
    "GPUUnavailableError",
    "Graph",
    "GraphFormatError",
    "GraphLimitError",
    "VariantSpec",
    "build_bvss",
    "load_graph",
    "load_tuned",
    "variants",
    "Engine",
]


def __getattr__(name: str):
    # The engine imports CuPy lazily; keep `import blest` cheap and GPU-free.
    if name == "Engine":
        from blest.runtime.engine import Engine

        return Engine
    raise AttributeError(f"module 'blest' has no attribute {name!r}")
