"""Code generation: VariantSpec → CUDA C++ (jinja2) → PTX / cubin (NVRTC) → loaded module."""

from blest.codegen.compile import (
    compile_cubin,
    compile_many,
    compile_ptx,
    compile_source,
    launch,
    load_module,
    max_active_blocks,
    max_cooperative_grid,
)
from blest.codegen.render import render
from blest.codegen.spec import VariantSpec, variants
from blest.codegen.toolchain import have_gpu, require_gpu

__all__ = [
    "VariantSpec",
    "compile_cubin",
    "compile_many",
    "compile_ptx",
    "compile_source",
    "have_gpu",
    "launch",
    "load_module",
    "max_active_blocks",
    "max_cooperative_grid",
    "render",
    "require_gpu",
    "variants",
]
