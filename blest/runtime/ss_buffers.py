"""The device buffers of a single-source variant: every value its kernels' common arguments
name (:func:`~blest.codegen.render.graph_params`, :func:`~blest.codegen.render.state_params`).

* The BVSS variants read the BVSS (of B = A + ... + A^K under ``hops`` = K), the in-adjacency
  where they switch to bottom-up levels, and for ``expand="csr"`` the out-adjacency and the hub
  bitmap (:func:`csr_arrays`). Their per-level state sits in one aligned allocation
  (:mod:`blest.runtime.hot_buffers`).
* The one-block launch (``launch="block"``) walks the out-adjacency of the prepared graph, with
  each vertex's degree and first arcs in a 32-byte record (:func:`vertex_heads`); its visited
  bitmap and queue heads live in shared memory (:func:`block_plan`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from blest.codegen.compile import arch_number
from blest.codegen.contract import (
    CTL_WORDS,
    HUB_COUNT_SHIFT,
    HUB_DEGREE,
    block_max_vertices,
    block_smem_bytes,
    block_smem_queue,
    frontier_buffers,
    level_clock_words,
    queue_buffers,
)
from blest.codegen.spec import VariantSpec
from blest.defaults import CLUSTER_COMPUTE_CAPABILITY
from blest.errors import ArgumentError
from blest.graph.prepared import Prepared
from blest.runtime.device import (
    device_buffers,
    device_in_csr,
    format_bytes,
    mask_words,
    out_csr,
)
from blest.runtime.hot_buffers import hot_buffers

__all__ = [
    "SingleSourceBuffers",
    "bvss_buffers",
    "block_buffers",
    "block_plan",
    "csr_arrays",
    "vertex_heads",
    "INLINE_HEADS",
    "MAX_HUBS",
]

#: Out-arcs of a vertex held in its 32-byte record beside its degree (see :func:`vertex_heads`).
INLINE_HEADS = 7
#: The hub counter keeps the count in the bits above HUB_COUNT_SHIFT of a 64-bit word.
MAX_HUBS = (1 << (64 - HUB_COUNT_SHIFT)) - 1


@dataclass
class SingleSourceBuffers:
    """What :func:`bvss_buffers` and :func:`block_buffers` return: ``values`` by kernel
    parameter name, the in-adjacency on the device where the variant holds it (the parents
    post-pass reuses it), and the levels in the user's ids (None: the kernels' own levels are
    in the user's ids already)."""

    values: dict[str, Any]
    in_csr: tuple[Any, Any] | None
    user_levels: Any


def vertex_heads(xp: Any, out_ptr: Any, out_idx: Any) -> Any:
    """Per vertex a 32-byte record, int32 ``[degree, head_0, ..., head_6]`` (-1 past the degree),
    as an (n, 8) array of NumPy or CuPy (``xp``). The block kernel reads a frontier vertex's
    record with two 16-byte loads of one sector: on road networks and meshes the degree and
    every head in one round trip to memory where the CSR takes two (out_ptr, then out_idx);
    heads past the seventh still come from the CSR."""
    n = int(out_ptr.size) - 1
    starts = out_ptr[:-1]
    degree = (out_ptr[1:] - starts).astype(xp.int32)
    records = xp.full((n, 1 + INLINE_HEADS), -1, dtype=xp.int32)
    records[:, 0] = degree
    for k in range(INLINE_HEADS):
        has = xp.nonzero(degree > k)[0]
        records[has, 1 + k] = out_idx[starts[has] + k]
    return records


def block_plan(n: int, limit: int, cluster: int = 1, arch: str | None = None) -> tuple[int, int]:
    """(queue entries in shared memory, dynamic shared-memory bytes per block) of the block
    launch on ``cluster`` blocks for a graph of ``n`` vertices within ``limit`` bytes a block;
    :class:`ArgumentError` when the visited bitmap alone does not fit, saying how many vertices
    would, or when ``arch`` (the GPU's) has no thread-block clusters and ``cluster`` > 1."""
    if cluster > 1 and arch is not None and arch_number(arch) < CLUSTER_COMPUTE_CAPABILITY:
        raise ArgumentError(
            f"launch='block' on a cluster of {cluster} blocks needs thread-block clusters "
            f"(sm_90 or newer); this GPU is {arch}: use cluster=1"
        )
    if block_smem_bytes(n, 0, cluster) > limit:
        where = "one block's" if cluster == 1 else f"the shared memory of {cluster} blocks'"
        raise ArgumentError(
            f"launch='block' keeps a visited bit per vertex in {where} shared memory: "
            f"{format_bytes(limit)} a block hold {block_max_vertices(limit, cluster):,} "
            f"vertices here, and the graph has {n:,}; use launch='persistent' or 'per_level'"
        )
    smem_queue = block_smem_queue(n, limit, cluster=cluster)
    return smem_queue, block_smem_bytes(n, smem_queue, cluster)


def csr_arrays(
    cp: Any, prep: Prepared, in_csr: tuple[Any, Any] | None, n_words: int
) -> tuple[dict[str, Any], int]:
    """``expand="csr"``: (``out_ptr``, ``out_idx`` and ``hubs`` on the device, the number of
    hubs), the hub bitmap a bit per vertex of more than HUB_DEGREE out-arcs (the vertices whose
    arcs every warp shares, listed per level by the kernels). ``in_csr``: the in-adjacency
    already on the device, if any."""
    in_ptr, in_idx = in_csr or device_in_csr(cp, prep)
    out_ptr, out_idx = out_csr(cp, prep, in_ptr, in_idx)
    is_hub = cp.diff(out_ptr) > HUB_DEGREE
    hubs = int(cp.count_nonzero(is_hub))
    if hubs > MAX_HUBS:
        raise ArgumentError(
            f"expand='csr' lists at most {MAX_HUBS:,} hubs (vertices of more than {HUB_DEGREE} "
            f"out-arcs); this graph has {hubs:,}: use expand='mma'"
        )
    bits = cp.zeros(4 * n_words, dtype=cp.uint8)
    packed = cp.packbits(is_hub, bitorder="little")
    bits[: packed.size] = packed
    return {"out_ptr": out_ptr, "out_idx": out_idx, "hubs": bits.view(cp.uint32)}, hubs


def bvss_buffers(
    cp: Any, prep: Prepared, spec: VariantSpec, by_level_ids: bool, record_levels: bool
) -> SingleSourceBuffers:
    """The graph arrays and traversal state of the BVSS variants. ``by_level_ids``: the kernels
    get the permutation and claim by level (a reordered graph, or any graph under ``hops`` > 1,
    whose levels the deliver pass then gathers: contract.claims_form)."""
    n = prep.n
    n_words = (n + 31) // 32
    b = prep.hops_bvss(spec.hops) if spec.hops > 1 else prep.bvss  # B = A + .. + A^K
    values = device_buffers(cp, row_ids=b.row_ids, masks=mask_words(cp, b),
                            real_ptrs=b.real_ptrs,
                            virtual_to_real=b.virtual_to_real)  # fmt: skip
    in_csr = None
    if spec.switching:
        values["in_ptr"] = cp.asarray(prep.in_ptr, dtype=cp.int64)
        values["in_idx"] = cp.asarray(prep.in_idx, dtype=cp.int32)
        in_csr = (values["in_ptr"], values["in_idx"])
    max_hubs = 0
    if spec.expand == "csr":
        csr, max_hubs = csr_arrays(cp, prep, in_csr, n_words)
        values.update(csr)
    perm = prep.permutation
    for way in ("old_of_new", "new_of_old"):  # the deliver pass gathers by new_of_old
        values[way] = cp.asarray(getattr(perm, way), cp.int32) if by_level_ids else np.uint64(0)
    values.update(n=np.int32(n), n_words=np.int32(n_words), n_vss=np.int32(b.n_vss),
                  n_sets=np.int32(b.n_slice_sets))  # fmt: skip
    values.update(_state(cp, spec, n, b.n_vss, max_hubs, record_levels))
    user_levels = cp.empty(n, dtype=cp.int32) if by_level_ids else None
    return SingleSourceBuffers(values, in_csr, user_levels)


def _state(
    cp: Any, spec: VariantSpec, n: int, n_vss: int, max_hubs: int, record_levels: bool
) -> dict[str, Any]:
    words = (n + 31) // 32
    # Every level polls or hits these: one allocation, one layout (hot_buffers.py).
    hot = [("ctl", CTL_WORDS), ("visited", words), ("frontier", frontier_buffers(spec) * words)]
    if spec.update == "lazy":
        hot.append(("v_next", words))
    dirty_words = (words + 31) // 32
    if spec.dirty_sets:
        hot.append(("dirty", 2 * dirty_words))
    state: dict[str, Any] = hot_buffers(cp, [*hot, ("bottom_up_levels", words)])
    if spec.dirty_sets:
        state["dirty_words"] = np.int32(dirty_words)
    if spec.queue == "vss":  # entries are {VSS id, slice set} pairs
        state["queue"] = cp.zeros(2 * queue_buffers(spec) * max(n_vss, 1), dtype=cp.int32)
    if spec.expand == "csr":  # entries are {hub, offset of its first arc} pairs
        hubs = max(max_hubs, 1)
        state["hub_queue"] = cp.zeros(2 * queue_buffers(spec) * hubs, dtype=cp.int64)
        state["max_hubs"] = np.int32(hubs)
    state["levels"] = cp.empty(n, dtype=cp.int32)  # internal ids
    clock = level_clock_words(spec, n)
    state["level_clock"] = cp.zeros(clock, dtype=cp.uint64) if record_levels else np.uint64(0)
    return state


def block_buffers(
    cp: Any, prep: Prepared, spec: VariantSpec, smem_queue: int, record_levels: bool
) -> SingleSourceBuffers:
    """The graph arrays and traversal state of the block kernel; the in-adjacency is kept for
    the parents post-pass when it is also the out-adjacency (undirected graphs)."""
    n = prep.n
    in_ptr, in_idx = device_in_csr(cp, prep)
    out_ptr, out_idx = out_csr(cp, prep, in_ptr, in_idx)
    identity = prep.permutation.is_identity
    user_levels = None if identity else cp.empty(n, dtype=cp.int32)
    clock = level_clock_words(spec, n)
    values = {
        "heads": vertex_heads(cp, out_ptr, out_idx),
        "out_ptr": out_ptr,
        "out_idx": out_idx,
        "old_of_new": (
            np.uint64(0) if identity else cp.asarray(prep.permutation.old_of_new, cp.int32)
        ),
        "n": np.int32(n),
        "n_words": np.int32((n + 31) // 32),
        "queue": cp.empty(2 * spec.cluster * max(n, 1), dtype=cp.int32),
        "smem_queue": np.int32(smem_queue),
        "ctl": cp.zeros(CTL_WORDS, dtype=cp.uint32),
        "levels": cp.empty(n, dtype=cp.int32),  # internal ids
        "user_levels": np.uint64(0) if identity else user_levels,
        "level_clock": cp.zeros(clock, dtype=cp.uint64) if record_levels else np.uint64(0),
    }
    in_csr = (in_ptr, in_idx) if out_idx is in_idx else None
    return SingleSourceBuffers(values, in_csr, user_levels)
