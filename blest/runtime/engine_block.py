"""The single-source engine's block launch (``launch="block"``, ``bfs_block.cu.j2``).

The whole BFS runs in one thread block: its visited bitmap (a bit per vertex) and the heads of
its two frontier queues live in the block's dynamic shared memory, the rest of the queues in
global memory, and it walks the out-adjacency of the prepared (reordered) graph, uploaded once.
One launch per call initializes the traversal, runs every level and writes the levels in both
id spaces, so there is no init launch and the deliver pass only copies; the parents post-pass
keeps a grid of its own. :class:`BlockLaunch` is mixed into :class:`blest.runtime.engine.Engine`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from blest.codegen.compile import arch_number
from blest.codegen.contract import (
    CTL_WORDS,
    block_max_vertices,
    block_smem_bytes,
    block_smem_queue,
)
from blest.defaults import CLUSTER_COMPUTE_CAPABILITY
from blest.errors import ArgumentError, GPUUnavailableError
from blest.graph.prepared import Prepared
from blest.runtime.device import device_in_csr, device_smem_limit, format_bytes, out_csr

__all__ = ["BlockLaunch", "block_plan", "device_smem_limit", "vertex_heads", "INLINE_HEADS"]

#: Out-arcs of a vertex held in its 32-byte record beside its degree (see :func:`vertex_heads`).
INLINE_HEADS = 7


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


def block_plan(n: int, limit: int, cluster: int = 1) -> tuple[int, int]:
    """(queue entries in shared memory, dynamic shared-memory bytes per block) of the block
    launch on ``cluster`` blocks for a graph of ``n`` vertices within ``limit`` bytes a block;
    :class:`ArgumentError` when the visited bitmap alone does not fit, saying how many vertices
    would."""
    if block_smem_bytes(n, 0, cluster) > limit:
        where = "one block's" if cluster == 1 else f"the shared memory of {cluster} blocks'"
        raise ArgumentError(
            f"launch='block' keeps a visited bit per vertex in {where} shared memory: "
            f"{format_bytes(limit)} a block hold {block_max_vertices(limit, cluster):,} "
            f"vertices here, and the graph has {n:,}; use launch='persistent' or 'per_level'"
        )
    smem_queue = block_smem_queue(n, limit, cluster=cluster)
    return smem_queue, block_smem_bytes(n, smem_queue, cluster)


class BlockLaunch:
    """The block launch's buffers, module geometry and launch (see the module docstring)."""

    _cp: Any
    _device_id: int
    _kernels: dict[str, Any]
    _record_levels: bool
    n: int
    arch: str
    permutation: Any
    spec: Any
    block_size: int
    grid_size: int
    smem_queue: int = 0  # entries of each frontier queue in shared memory
    shared_bytes: int = 0  # dynamic shared memory of the traversal kernel
    _pass_grid: int = 0  # blocks of the one-pass kernels (the parents post-pass)
    _block_seeds: tuple = ()  # (seeds, n_seeds, src) of the pending call
    _in_csr: tuple | None = None  # in-adjacency on the device, when a variant holds it

    def _plan_block(self, n: int, cluster: int) -> None:
        """Size the shared memory for ``n`` vertices over ``cluster`` blocks on this device, or
        refuse the graph (or a cluster on a GPU that has none)."""
        if cluster > 1 and arch_number(self.arch) < CLUSTER_COMPUTE_CAPABILITY:
            raise ArgumentError(
                f"launch='block' on a cluster of {cluster} blocks needs thread-block clusters "
                f"(sm_90 or newer); this GPU is {self.arch}: use cluster=1"
            )
        self.smem_queue, self.shared_bytes = block_plan(
            n, device_smem_limit(self._cp, self._device_id), cluster
        )

    def _block_buffers(self, prep: Prepared) -> tuple[dict[str, Any], dict[str, Any]]:
        """(graph arrays, traversal state) of the block kernel; the in-adjacency is kept for
        the parents post-pass when it is also the out-adjacency (undirected graphs)."""
        cp, n = self._cp, self.n
        in_ptr, in_idx = device_in_csr(cp, prep)
        out_ptr, out_idx = out_csr(cp, prep, in_ptr, in_idx)
        self._in_csr = (in_ptr, in_idx) if out_idx is in_idx else None
        identity = self.permutation.is_identity
        arrays = {
            "heads": vertex_heads(cp, out_ptr, out_idx),
            "out_ptr": out_ptr,
            "out_idx": out_idx,
            "old_of_new": (
                np.uint64(0) if identity else cp.asarray(prep.permutation.old_of_new, cp.int32)
            ),
            "n": np.int32(n),
            "n_words": np.int32((n + 31) // 32),
        }
        self._user_levels = None if identity else cp.empty(n, dtype=cp.int32)
        state = {
            "queue": cp.empty(2 * self.spec.cluster * max(n, 1), dtype=cp.int32),
            "smem_queue": np.int32(self.smem_queue),
            "ctl": cp.zeros(CTL_WORDS, dtype=cp.uint32),
            "levels": cp.empty(n, dtype=cp.int32),  # internal ids
            "user_levels": np.uint64(0) if identity else self._user_levels,
            "level_clock": (
                cp.zeros(n + 2, dtype=cp.uint64) if self._record_levels else np.uint64(0)
            ),
        }
        return arrays, state

    def _load_block(self, sms: int) -> None:
        """Geometry: one block (or one cluster) for the traversal, a full grid for the parents
        post-pass (the caller checked that one block of the traversal kernel fits); a cluster
        the device cannot place is refused here, not at the first call."""
        from blest.runtime.launch import max_active_blocks, max_active_clusters

        cluster = self.spec.cluster
        if cluster > 1:
            fits = max_active_clusters(
                self._kernels["bfs"], cluster, self.block_size, self.shared_bytes
            )
            if fits < 1:
                raise GPUUnavailableError(
                    f"kernel {self.spec.name}: this GPU cannot run a cluster of {cluster} "
                    f"blocks of {self.block_size} threads with "
                    f"{format_bytes(self.shared_bytes)} of shared memory each; use a smaller "
                    "cluster or block"
                )
        self.grid_size = cluster
        per_sm = max_active_blocks(self._kernels["parents"], self.block_size)
        self._pass_grid = max(1, per_sm) * sms

    def _launch_shape(self, role: str) -> tuple[int, int]:
        """(blocks, dynamic shared-memory bytes) of a launch of kernel ``role``."""
        if self.spec.launch != "block":
            return self.grid_size, 0
        return (self.grid_size, self.shared_bytes) if role == "bfs" else (self._pass_grid, 0)
