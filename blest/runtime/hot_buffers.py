"""One allocation for the small buffers that every level of a grid-wide traversal touches.

The control block (the grid barrier's count, which every block polls, and the level's counters)
and the per-vertex bitmaps (visited, the frontier buffers, V_next, the dirty words, the
bottom-up level bits) are a few L2 lines each on a small graph, and every level polls them or
hits them with atomics. Allocated one by one, CuPy's pool put them wherever its history left
room, and that decided which of them shared an L2 slice: the same engine on the same graph ran
twitch_FR's traversal in 25.4 or 30.6 us, by nothing but the addresses (an H100,
benchmarks/NOTES.md).

Here they are views at fixed offsets into one allocation whose base is aligned to a power of two
at least as large as the whole. Two engines' buffers then differ only in address bits above the
offsets, and a slice hash that XORs address bits sees the same collisions between them every
time.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ALIGN_MIN", "PITCH", "hot_buffers"]

#: Each buffer starts a multiple of this many bytes from the base.
PITCH = 512
#: The smallest alignment of the allocation's base.
ALIGN_MIN = 1 << 17


def _layout(sizes: list[tuple[str, int]]) -> tuple[list[int], int, int]:
    """Each buffer's byte offset, the bytes they span, and the base's alignment."""
    offsets, total = [], 0
    for _, words in sizes:
        offsets.append(total)
        total += -(-4 * max(words, 1) // PITCH) * PITCH
    return offsets, total, max(ALIGN_MIN, 1 << (total - 1).bit_length())


def hot_buffers(cp: Any, sizes: list[tuple[str, int]]) -> dict[str, Any]:
    """Zeroed uint32 arrays of ``sizes`` ((name, words) pairs), laid out in that order in one
    allocation as the module says. Each view keeps the allocation alive."""
    offsets, total, align = _layout(sizes)
    raw = cp.zeros(total + align, dtype=cp.uint8)
    skip = -raw.data.ptr % align
    return {
        name: cp.ndarray((words,), dtype=cp.uint32, memptr=raw.data + skip + at)
        for (name, words), at in zip(sizes, offsets, strict=True)
    }
