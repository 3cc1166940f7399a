"""Device-memory estimates of a single-source engine, checked before anything is allocated."""

from __future__ import annotations

from blest.codegen.spec import VariantSpec
from blest.graph.core import Graph
from blest.graph.prepared import Prepared

__all__ = ["estimate_bytes", "resident_bytes", "resident_from_sizes"]


def estimate_bytes(g: Graph, spec: VariantSpec) -> int:
    """GPU bytes to build the BVSS of ``g`` on the device and keep the engine's buffers."""
    build = 5 * 8 * g.nnz  # sort keys and segment arrays while building the BVSS
    return build + resident_from_sizes(g.n, g.nnz, spec)


def resident_bytes(prep: Prepared, spec: VariantSpec) -> int:
    """GPU bytes an engine keeps for ``prep``: its graph arrays and traversal state."""
    return resident_from_sizes(prep.n, prep.graph.nnz, spec)


def resident_from_sizes(n: int, nnz: int, spec: VariantSpec) -> int:
    """:func:`resident_bytes` from the vertex and arc counts (upper bounds)."""
    if spec.launch == "block":  # out-adjacency (and its transposition), levels, two queues
        return 8 * (n + 1) + 24 * nnz + 8 * n + 8 * spec.cluster * n
    slices = nnz  # at most one slice per arc
    csr = 8 * (n + 1) + 4 * nnz + n // 8 if spec.expand == "csr" else 0  # out-CSR (an upper bound)
    # The hot buffers' alignment (hot_buffers.py): at most twice their n / 8 bytes a bitmap
    # (seven at most), plus the smallest alignment and the pitch of each.
    hot_slack = 2 * n + (1 << 18)
    return 4 * (slices + 32 * slices // spec.tau) + 20 * n + 12 * nnz + csr + hot_slack
