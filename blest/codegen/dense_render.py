"""Render a ``DenseSpec`` into CUDA C++ (``templates/ms_dense.cu.j2``).

One kernel, ``DENSE_KERNEL``, whose flat parameters (:func:`dense_params`) the host
(:mod:`blest.runtime.dense_runner`) passes in order through :func:`dense_program`.
"""

from __future__ import annotations

import functools

from blest.codegen.densespec import DENSE_KERNEL, DenseSpec
from blest.codegen.program import (
    KernelParam,
    KernelProgram,
    ParamGroup,
    kernel_context,
    render_file,
)

__all__ = ["dense_params", "render_dense", "dense_program"]


def dense_params() -> list[KernelParam]:
    """Every kernel parameter, in order (the host, :mod:`blest.runtime.dense_runner`,
    follows it)."""
    return [
        KernelParam("const int* __restrict__", "in_idx", "in-neighbours (in_csr)"),
        KernelParam("const int4* __restrict__", "units", "vertex, first arc, arcs, shared"),
        KernelParam("int", "n"),
        KernelParam("int", "n_units"),
        KernelParam("int", "row_words", "words per row (whole chunks)"),
        KernelParam("u32*", "visited", "n * row_words"),
        KernelParam("u32*", "frontier", "3 * n * row_words: F_L in buffer L % 3"),
        KernelParam("u32*", "cnt", "2 * n: new sources per target at level L, in half L & 1"),
        KernelParam("u32*", "ctl", "CTL_WORDS, zeroed before each launch"),
        KernelParam("int", "chunk_first", "sources of chunks [chunk_first, chunk_last)"),
        KernelParam("int", "chunk_last"),
        KernelParam("u64*", "dist", "n: per target, the sum of distances from the sources"),
        KernelParam("u64*", "reach", "n: per target, the sources that reach it (itself too)"),
        KernelParam("double*", "harm", "n: per target, the sum over L >= 1 of count_L / L"),
    ]


def _groups() -> tuple[ParamGroup, ...]:
    return (ParamGroup("Dense", "d", "dense", tuple(dense_params())),)


def _context(spec: DenseSpec) -> dict:
    return kernel_context(
        spec,
        _groups(),
        vec=spec.vec,
        seg=spec.seg,
        chunk_words=spec.chunk_words,
        vec_type={1: "u32", 2: "uint2", 4: "uint4"}[spec.vec],
        comps={1: [""], 2: [".x", ".y"], 4: [".x", ".y", ".z", ".w"]}[spec.vec],
    )


@functools.lru_cache(maxsize=16)
def render_dense(spec: DenseSpec) -> str:
    """The CUDA C++ source of ``spec``: readable, self-contained, deterministic."""
    return render_file("ms_dense.cu.j2", _context(spec))


@functools.lru_cache(maxsize=16)
def dense_program(spec: DenseSpec) -> KernelProgram:
    """The module of ``spec`` as the runtime loads it: one role, ``"dense"``."""
    return KernelProgram(
        family="dense",
        name=spec.name,
        source=render_dense(spec),
        kernels={"dense": DENSE_KERNEL},
        groups=_groups(),
    )
