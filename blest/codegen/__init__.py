"""Code generation: VariantSpec → CUDA C++ (jinja2) → PTX / cubin (NVRTC).

Rendering and compiling need no GPU; loading and launching live in :mod:`blest.runtime`.
"""

from blest.codegen.compile import (
    compile_cubin,
    compile_many,
    compile_ptx,
    compile_source,
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
    "render",
    "require_gpu",
    "variants",
]
