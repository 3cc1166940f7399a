"""Render an :class:`MSSpec` into CUDA C++ (``templates/ms_bfs.cu.j2`` and its parts).

The kernel takes flat parameters in three groups (graph, per-slot state, this launch's run);
:func:`ms_params` gives their order, which the host (:mod:`blest.runtime.ms_runner`) follows
through :func:`ms_program`.
"""

from __future__ import annotations

import functools

from blest.codegen.contract import SLOT_FIELDS, SLOT_WORDS
from blest.codegen.msspec import MSSpec, shared_bytes
from blest.codegen.program import (
    KERNEL_PREFIX,
    KernelParam,
    KernelProgram,
    ParamGroup,
    kernel_context,
    render_file,
)

__all__ = [
    "MS_KERNEL",
    "ms_graph_params",
    "ms_state_params",
    "ms_run_params",
    "ms_params",
    "render_ms",
    "ms_program",
]

#: The one entry point of a multi-source module.
MS_KERNEL = f"{KERNEL_PREFIX}_ms"


def ms_graph_params() -> list[KernelParam]:
    """Read-only graph arrays and sizes."""
    return [
        KernelParam("const int* __restrict__", "row_ids", "Nv * TAU row ids"),
        KernelParam("const u32* __restrict__", "masks", "Nv * 32 mask words"),
        KernelParam("const int* __restrict__", "real_ptrs", "rho + 1: VSS range of each slice set"),
        KernelParam("const long long* __restrict__", "in_ptr", "n + 1 (in_csr)"),
        KernelParam("const int* __restrict__", "in_idx", "in-neighbours"),
        KernelParam("const long long* __restrict__", "out_ptr", "n + 1 (out_csr; csr expansion)"),
        KernelParam("const int* __restrict__", "out_idx", "out-neighbours (csr expansion)"),
        KernelParam("const int* __restrict__", "old_of_new", "n, or null for the identity"),
        KernelParam("int", "n"),
        KernelParam("int", "rho", "slice sets: ceil(n / SIGMA)"),
        KernelParam("int", "n_vss"),
        KernelParam("int", "dirty_words", "ceil(rho / 32)"),
    ]


def ms_state_params() -> list[KernelParam]:
    """Buffers of every batch slot, and the launch's control block."""
    return [
        KernelParam("u32*", "visited", "slots * CHUNKS * SIGMA * rho"),
        KernelParam("u32*", "frontier", "slots * 2 * CHUNKS * SIGMA * rho: F_L at L & 1"),
        KernelParam("u32*", "next", "slots * CHUNKS * SIGMA * rho; zero between levels"),
        KernelParam("u32*", "touched", "slots * rho * SIGMA / 32: bit getVI(v) = v touched"),
        KernelParam("u32*", "queued", "slots * 2 * dirty_words: bit s = set s queued"),
        KernelParam("int*", "lists", "slots * 5 * n: touched (2), then frontier (3) vertices"),
        KernelParam("int2*", "queue", "slots * 2 * n_vss (queue form: 2 * (n * KAPPA + KAPPA))"),
        KernelParam("u64*", "slot_ctl", "slots * SLOT_WORDS"),
        KernelParam("u32*", "cnt", "slots * 2 * KAPPA"),
        KernelParam("u32*", "ctl", "CTL_WORDS, zeroed before each launch"),
        KernelParam("int", "smem_queue", "queue form: entries of each queue in shared memory"),
    ]


def ms_run_params() -> list[KernelParam]:
    """What one launch computes: a range of batches of the sources, and where results go."""
    return [
        KernelParam("const int* __restrict__", "sources", "n_sources internal ids"),
        KernelParam("int", "n_sources"),
        KernelParam("int", "batch_first", "batches [batch_first, batch_last) of KAPPA sources"),
        KernelParam("int", "batch_last"),
        KernelParam("int*", "levels_out", "null, or rows of n levels (user ids) per source"),
        KernelParam("long long", "out_first", "the source index of levels_out's first row"),
        KernelParam("u64*", "dist", "n_sources: sum of distances"),
        KernelParam("u64*", "reach", "n_sources: vertices reached, the source included"),
        KernelParam("double*", "harm", "n_sources: sum over levels L >= 1 of count_L / L"),
        KernelParam("double*", "pend", "n_sources or null: sum of (count_L - [L == 1]) / (L + 1)"),
        KernelParam("double", "eta", "bottom-up when unvisited pairs / batch < eta * |Q|"),
    ]


def ms_params() -> list[KernelParam]:
    """Every kernel parameter, in order."""
    return ms_graph_params() + ms_state_params() + ms_run_params()


def _groups() -> tuple[ParamGroup, ...]:
    return (
        ParamGroup("Graph", "g", "graph", tuple(ms_graph_params())),
        ParamGroup("State", "st", "state", tuple(ms_state_params())),
        ParamGroup("Run", "run", "run", tuple(ms_run_params())),
    )


def _context(spec: MSSpec) -> dict:
    return kernel_context(
        spec,
        _groups(),
        kappa=spec.kappa,
        chunks=spec.chunks,
        slot_fields=SLOT_FIELDS,
        slot_words=SLOT_WORDS,
    )


@functools.lru_cache(maxsize=64)
def render_ms(spec: MSSpec) -> str:
    """The CUDA C++ source of ``spec``: readable, self-contained, deterministic."""
    return render_file("ms_bfs.cu.j2", _context(spec))


@functools.lru_cache(maxsize=64)
def ms_program(spec: MSSpec) -> KernelProgram:
    """The module of ``spec`` as the runtime loads it: one role, ``"ms"``."""

    def shared(n: int, smem_queue: int = 0) -> int:
        return shared_bytes(spec, n, smem_queue)

    return KernelProgram(
        family="multi",
        name=spec.name,
        source=render_ms(spec),
        kernels={"ms": MS_KERNEL},
        groups=_groups(),
        tables=("CTL", "SLOT"),
        shared_bytes=shared,
    )
