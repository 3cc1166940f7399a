"""Code generation: VariantSpec → CUDA C++ (jinja2) → PTX / cubin (NVRTC) → loaded module."""

from blest.codegen.spec import VariantSpec, variants

__all__ = ["VariantSpec", "variants"]
