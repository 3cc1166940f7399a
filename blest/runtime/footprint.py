"""Device-memory estimates of a single-source engine, checked before anything is allocated."""

from __future__ import annotations

from blest.codegen.spec import VariantSpec
from blest.graph.core import Graph
from blest.graph.prepared import Prepared

__all__ = ["estimate_bytes", "resident_bytes", "resident_from_sizes"]


def estimate_bytes(g: Graph, spec: VariantSpec) -> int:
    """GPU bytes to build the BVSS of ``g`` on the device and keep the engine's buffers
    (``hops`` > 1: B's BVSS beside A's, sized as hops x
    :func:`~blest.graph.hops.two_hop_arcs_bound`, a rough bound)."""
    build = 5 * 8 * g.nnz  # sort keys and segment arrays while building the BVSS
    extra = 0
    if spec.hops > 1:
        from blest.graph.hops import two_hop_arcs_bound

        extra = resident_from_sizes(g.n, (spec.hops - 1) * two_hop_arcs_bound(g), spec)
    return build + resident_from_sizes(g.n, g.nnz, spec) + extra


def resident_bytes(prep: Prepared, spec: VariantSpec) -> int:
    """GPU bytes an engine keeps for ``prep``: its graph arrays and traversal state (``hops`` > 1:
    B's BVSS, which it builds here if it was not built yet)."""
    nnz = prep.hops_bvss(spec.hops).nnz if spec.hops > 1 else prep.graph.nnz
    return resident_from_sizes(prep.n, nnz, spec)


def resident_from_sizes(n: int, nnz: int, spec: VariantSpec) -> int:
    """:func:`resident_bytes` from the vertex and arc counts (upper bounds)."""
    if spec.launch == "block":  # out-adjacency (and its transposition), levels, two queues
        return 8 * (n + 1) + 24 * nnz + 8 * n + 8 * spec.cluster * n
    slices = nnz  # at most one slice per arc
    csr = 8 * (n + 1) + 4 * nnz + n // 8 if spec.expand == "csr" else 0  # out-CSR (an upper bound)
    # The hot buffers' alignment (hot_buffers.py): at most twice their n / 8 bytes a bitmap
    # (seven at most), plus the smallest alignment and the pitch of each.
    hot_slack = 2 * n + (1 << 18)
    masks = 32 * spec.hops * slices // spec.tau  # hops > 1: the near mask words too
    return 4 * (slices + masks) + 20 * n + 12 * nnz + csr + hot_slack
