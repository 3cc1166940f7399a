"""The device arrays of ``expand="csr"`` (top-down levels on CUDA cores from the out-CSR): the
out-adjacency of the reordered graph and the hub bitmap, a bit per vertex of more than
:data:`~blest.codegen.contract.HUB_DEGREE` out-arcs (the vertices whose arcs every warp shares,
listed per level by the kernels)."""

from __future__ import annotations

from typing import Any

from blest.codegen.contract import HUB_COUNT_SHIFT, HUB_DEGREE
from blest.errors import ArgumentError
from blest.graph.prepared import Prepared
from blest.runtime.device import device_in_csr, out_csr

__all__ = ["csr_arrays", "MAX_HUBS"]

#: The hub counter keeps the count in the bits above HUB_COUNT_SHIFT of a 64-bit word.
MAX_HUBS = (1 << (64 - HUB_COUNT_SHIFT)) - 1


def csr_arrays(
    cp: Any, prep: Prepared, in_csr: tuple[Any, Any] | None, n_words: int
) -> tuple[dict[str, Any], int]:
    """(``out_ptr``, ``out_idx`` and ``hubs`` on the device, the number of hubs). ``in_csr`` is
    the in-adjacency already on the device, if any."""
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
