"""Render a :class:`BCSpec` into CUDA C++ (``templates/bc_brandes.cu.j2`` and its parts).

Two entry points share one ABI in three groups (graph, per-slot state, this launch's run):
``"bc"`` runs batches of sources and writes each batch's tree node as a row; ``"combine"``
adds the rows of a call in the tree. :func:`bc_params` gives the order, which the host
(:mod:`blest.runtime.bc_runner`) follows through :func:`bc_program`.
"""

from __future__ import annotations

import functools

from blest.codegen.bcspec import (
    BC_CHUNK_PAIRS,
    BC_COMBINE_KERNEL,
    BC_KERNEL,
    BC_MAX_ROWS,
    BC_QUEUE_HEAD_WORDS,
    BC_SHARED_BYTES,
    BC_SLOT_FIELDS,
    BC_SLOT_WORDS,
    BCSpec,
    queue_shared_bytes,
)
from blest.codegen.program import (
    KernelParam,
    KernelProgram,
    ParamGroup,
    kernel_context,
    render_file,
)

__all__ = ["bc_graph_params", "bc_state_params", "bc_run_params", "bc_params", "render_bc",
           "bc_program", "SCALE_AT_EXPONENT"]  # fmt: skip

#: A count at or above 2**SCALE_AT_EXPONENT flags its batch (the CPU runner rescales there).
SCALE_AT_EXPONENT = 512


def bc_graph_params() -> list[KernelParam]:
    """The graph in the user's ids (out- and in-adjacency), read only."""
    return [
        KernelParam("const long long* __restrict__", "out_ptr", "n + 1 (out_csr)"),
        KernelParam("const int* __restrict__", "out_idx", "out-neighbours, ascending"),
        KernelParam("const long long* __restrict__", "in_ptr", "n + 1 (in_csr)"),
        KernelParam("const int* __restrict__", "in_idx", "in-neighbours, ascending"),
        KernelParam("int", "n"),
        KernelParam("long long", "wide_degree", "a vertex of this many in- or out-arcs is wide"),
    ]


def bc_state_params() -> list[KernelParam]:
    """Buffers of every batch slot (slot after slot), and the launch's control block."""
    return [
        KernelParam("int*", "level", "slots * n * KAPPA; -1 between batches"),
        KernelParam("double*", "sigma", "slots * n * KAPPA: shortest-path counts"),
        KernelParam("double*", "delta", "slots * n * KAPPA: dependencies"),
        KernelParam("u32*", "visited", "slots * n source masks; zero between batches"),
        KernelParam("u32*", "next", "slots * n source masks; zero between levels"),
        KernelParam("int2*", "queue", "slots * n * KAPPA entries {vertex, source mask}"),
        KernelParam(
            "long long*",
            "qoff",
            "slots * 2 * (n + 2): where each level starts in the queue, then in the wide list",
        ),
        KernelParam("long long*", "wide", "slots * wide_cap: queue positions of wide entries"),
        KernelParam("long long", "wide_cap", "entries of a slot's wide list"),
        KernelParam("u64*", "slot_ctl", "slots * SLOT_WORDS; QEND zero between batches"),
        KernelParam("u32*", "ctl", "CTL_WORDS, zeroed before each launch"),
        KernelParam("int", "vis_smem", "queue form: nonzero: visited bits in shared memory"),
    ]


def bc_run_params() -> list[KernelParam]:
    """What one launch computes: a range of batches of a call's sources, and its outputs."""
    return [
        KernelParam("const int* __restrict__", "sources", "n_sources vertex ids"),
        KernelParam("int", "n_sources", "the call's sources: a power of two, or fewer than KAPPA"),
        KernelParam("int", "batch_first", "batches [batch_first, batch_last) of KAPPA sources"),
        KernelParam("int", "batch_last"),
        KernelParam("double*", "rows", "a row of n per batch of the call: its tree node"),
        KernelParam("u32*", "flags", "per batch: nonzero when a count reached 2^512"),
        KernelParam("double*", "node", "n: the tree node of the call's batches (combine)"),
        KernelParam("int", "endpoints", "nonzero: count the ends of paths (NetworkX's)"),
    ]


def bc_params() -> list[KernelParam]:
    """Every kernel parameter, in order."""
    return bc_graph_params() + bc_state_params() + bc_run_params()


def _groups() -> tuple[ParamGroup, ...]:
    return (
        ParamGroup("Graph", "g", "graph", tuple(bc_graph_params())),
        ParamGroup("State", "st", "state", tuple(bc_state_params())),
        ParamGroup("Run", "run", "run", tuple(bc_run_params())),
    )


def _context(spec: BCSpec) -> dict:
    return kernel_context(
        spec,
        _groups(),
        kappa=spec.kappa,
        warp_groups=spec.groups,
        grid=spec.form == "grid",
        queue=spec.form == "queue",
        queue_head_words=BC_QUEUE_HEAD_WORDS,
        slot_fields=BC_SLOT_FIELDS,
        slot_words=BC_SLOT_WORDS,
        max_rows=BC_MAX_ROWS,
        chunk_pairs=BC_CHUNK_PAIRS,
        fold_depth=BC_MAX_ROWS.bit_length(),
        scale_at_exponent=SCALE_AT_EXPONENT,
        kernel=BC_KERNEL,
        combine_kernel=BC_COMBINE_KERNEL,
    )


@functools.lru_cache(maxsize=16)
def render_bc(spec: BCSpec) -> str:
    """The CUDA C++ source of ``spec``: readable, self-contained, deterministic."""
    return render_file("bc_brandes.cu.j2", _context(spec))


def _shared(n: int, smem_queue: int = 0) -> int:
    return BC_SHARED_BYTES


@functools.lru_cache(maxsize=16)
def bc_program(spec: BCSpec) -> KernelProgram:
    """The module of ``spec`` as the runtime loads it: roles ``"bc"`` (which takes
    :data:`~blest.codegen.bcspec.BC_SHARED_BYTES` of dynamic shared memory; the queue form
    its head and, where they fit, the visited bits: :func:`queue_shared_bytes`) and
    ``"combine"``."""
    shared = _shared
    if spec.form == "queue":

        def shared(n: int, smem_queue: int = 0) -> int:
            return queue_shared_bytes(spec.kappa, n, True)

    return KernelProgram(
        family="betweenness",
        name=spec.name,
        source=render_bc(spec),
        kernels={"bc": BC_KERNEL, "combine": BC_COMBINE_KERNEL},
        groups=_groups(),
        tables=("CTL", "SLOT"),
        shared_bytes=shared,
    )
