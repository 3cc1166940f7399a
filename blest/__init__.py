"""blest: breadth-first search compiled into tensor-core kernels for NVIDIA GPUs.

One call: :func:`bfs` (levels, parents, one source or several seeds; GPU when there is one,
else SciPy on the CPU) and :func:`validate` (the Graph500 checks of a result); many BFSs:
:func:`closeness`, :func:`harmonic`, :func:`betweenness` and :func:`edge_betweenness`.

The pipeline: :func:`load_graph` → :class:`Graph` (out_csr / in_csr) → a :class:`Prepared` graph
(vertex ordering, BVSS arrays) → a generated, NVRTC-compiled kernel variant (:mod:`blest.codegen`)
→ an engine (:func:`make_engine`, :class:`Engine`), whose ``bfs(src)`` returns levels in the
graph's own vertex ids. Everything but the GPU engine works without CuPy or a GPU; NetworkX can
dispatch to blest through :mod:`blest.nx`.
"""

from __future__ import annotations

from typing import Any

from blest._version import __version__
from blest.errors import (
    ArgumentError,
    BlestError,
    CheckpointError,
    CompileError,
    ConfigError,
    DeviceMemoryError,
    EngineError,
    GPUUnavailableError,
    GraphFormatError,
    GraphLimitError,
    ValidationError,
    VertexError,
)

__all__ = [
    "ArgumentError",
    "BlestError",
    "CheckpointError",
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
    "ValidationError",
    "VariantSpec",
    "VertexError",
    "__version__",
    "betweenness",
    "bfs",
    "bfs_many",
    "build_bvss",
    "closeness",
    "edge_betweenness",
    "harmonic",
    "load_graph",
    "load_tuned",
    "make_engine",
    "validate",
    "variants",
    "vertex_ids",
]

# Everything but the version and the exceptions loads on first use: ``import blest`` stays
# cheap (NetworkX imports ``blest.nx`` to list its backends) and GPU-free.
_LAZY = {
    "Engine": ("blest.runtime.engine", "Engine"),
    "Graph": ("blest.graph.core", "Graph"),
    "Prepared": ("blest.graph.prepared", "Prepared"),
    "VariantSpec": ("blest.codegen.spec", "VariantSpec"),
    "betweenness": ("blest.brandes", "betweenness"),
    "bfs": ("blest.api", "bfs"),
    "bfs_many": ("blest.centrality", "bfs_many"),
    "build_bvss": ("blest.graph.bvss", "build_bvss"),
    "closeness": ("blest.centrality", "closeness"),
    "edge_betweenness": ("blest.brandes", "edge_betweenness"),
    "harmonic": ("blest.centrality", "harmonic"),
    "load_graph": ("blest.graph.io", "load_graph"),
    "load_tuned": ("blest.tuning.loader", "load_tuned"),
    "make_engine": ("blest.runtime.factory", "make_engine"),
    "validate": ("blest.api", "validate"),
    "variants": ("blest.codegen.spec", "variants"),
    "vertex_ids": ("blest.api", "vertex_ids"),
}


#: Subpackages reachable as attributes after a plain ``import blest``.
_SUBMODULES = frozenset(
    (
        "api",
        "brandes",
        "centrality",
        "checkpoint",
        "cli",
        "codegen",
        "datasets",
        "defaults",
        "graph",
        "nx",
        "reference",
        "runtime",
        "tuning",
    )
)


def __getattr__(name: str) -> Any:
    import importlib

    if name in _LAZY:
        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value  # later lookups skip this function
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f"blest.{name}")
    raise AttributeError(f"module 'blest' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
