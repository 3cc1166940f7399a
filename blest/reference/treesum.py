"""A fixed binary tree over source positions: sums of float64 vectors that do not depend on
how the sources were split into batches, processes or GPUs.

The tree. The P sources of a call stand at positions 0 .. P-1 (the leaves, in list order),
padded with zero vectors up to the next power of two. Node ``(j, i)`` covers the positions
``[i * 2**j, (i + 1) * 2**j)``: a leaf is a source's vector, every other node is
``left + right`` (one IEEE addition per element). The result is the root. A padded leaf adds
``+0.0``, which leaves every value (never ``-0.0`` here) unchanged, so a node that sticks out
past P equals the sum of its leaves below P and nothing needs to be padded for real.

Pieces. Whoever computes a contiguous range ``[a, b)`` of positions (a batch, a process)
computes the nodes of its *canonical pieces*: the maximal aligned dyadic intervals inside
``[a, b)`` (:func:`canonical_pieces`; at most about ``2 * log2(b - a)`` of them). A batch of
``2**j`` sources aligned at a multiple of ``2**j`` is one node: :func:`tree_sum` of its rows.
:class:`TreeStack` merges pieces as they arrive in position order (two siblings become their
parent), so a range run batch by batch ends with exactly its canonical pieces, holding
O(log) vectors at a time; :meth:`TreeStack.root` (or :func:`combine`) folds the pieces of all
of ``[0, P)`` into the root, node by node as the full tree does. Every partition of the
positions into contiguous ranges, and every batch width that is a power of two, therefore
yields the same bits.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable

import numpy as np

__all__ = [
    "Piece",
    "PieceSet",
    "TreeStack",
    "aligned_blocks",
    "canonical_pieces",
    "combine",
    "tree_sum",
]

#: A node of the tree: (level j, index i, the sum of positions [i * 2**j, (i + 1) * 2**j)).
Piece = tuple[int, int, np.ndarray]


def _check_range(start: int, stop: int) -> tuple[int, int]:
    start, stop = operator.index(start), operator.index(stop)
    if not 0 <= start <= stop:
        raise ValueError(f"need 0 <= start <= stop, got [{start}, {stop})")
    return start, stop


def aligned_blocks(start: int, stop: int, width: int) -> list[tuple[int, int]]:
    """The blocks a range ``[start, stop)`` runs in, left to right: ``(j, i)`` keys of aligned
    dyadic intervals of at most ``width`` (a power of two) positions, each as long as its
    alignment and the range allow."""
    start, stop = _check_range(start, stop)
    width = operator.index(width)
    if width < 1 or width & (width - 1):
        raise ValueError(f"width must be a power of two, got {width}")
    blocks = []
    at = start
    while at < stop:
        size = width if at == 0 else min(width, at & -at)  # the alignment of `at`
        while at + size > stop:
            size >>= 1
        j = size.bit_length() - 1
        blocks.append((j, at >> j))
        at += size
    return blocks


def canonical_pieces(start: int, stop: int) -> list[tuple[int, int]]:
    """Keys ``(j, i)`` of the maximal aligned dyadic intervals inside ``[start, stop)``, left to
    right: the pieces a range ends with, whatever its batches were."""
    start, stop = _check_range(start, stop)
    width = 1 << max(0, stop.bit_length())
    return aligned_blocks(start, stop, width)


def tree_sum(rows: np.ndarray) -> np.ndarray:
    """The tree node over ``2**j`` rows (shape ``(2**j, m)``): pairs ``(0, 1), (2, 3), ...``
    added, then pairs of those, up to one row. Float64 in, a new float64 vector out."""
    rows = np.asarray(rows, dtype=np.float64)
    count = rows.shape[0]
    if rows.ndim != 2 or count < 1 or count & (count - 1):
        raise ValueError(f"tree_sum takes 2**j rows of a 2-D array, got shape {rows.shape}")
    level = rows
    while level.shape[0] > 1:
        level = level[0::2] + level[1::2]
    return level[0].copy()


class TreeStack:
    """Pieces pushed in increasing position order, merged with their siblings on arrival.

    ``push(j, i, vector)`` takes a node whose interval starts where the previous one ended.
    ``pieces`` lists what is held (the canonical pieces of the range pushed so far);
    ``root(total)`` folds them into the root of the tree over ``total`` positions, which
    needs the pushed pieces to cover ``[0, total)``.
    """

    def __init__(self, start: int = 0) -> None:
        self._stack: list[Piece] = []
        self.start = self.stop = int(start)

    @property
    def pieces(self) -> list[Piece]:
        return list(self._stack)

    def push(self, j: int, i: int, vector: np.ndarray) -> None:
        j, i = operator.index(j), operator.index(i)
        lo = i << j
        if lo != self.stop:
            raise ValueError(f"piece ({j}, {i}) starts at {lo}, expected {self.stop}")
        self.stop = lo + (1 << j)
        node: Piece = (j, i, np.asarray(vector, dtype=np.float64))
        while self._stack:
            pj, pi, pv = self._stack[-1]
            if pj != node[0] or pi != node[1] - 1 or pi & 1:
                break
            self._stack.pop()
            node = (pj + 1, pi >> 1, pv + node[2])  # left + right
        self._stack.append(node)

    def root(self, total: int) -> np.ndarray:
        """The root of the tree over ``total`` positions (the pieces must cover them all)."""
        if self.start != 0 or self.stop != total or not self._stack:
            raise ValueError(
                f"the pieces cover [{self.start}, {self.stop}), not [0, {total}) "
                "(or there are none)"
            )
        # Canonical pieces of [0, total) shrink from left to right; a piece's right sibling
        # subtree holds every piece after it (the padding adds nothing), so the root is
        # p0 + (p1 + (p2 + ...)).
        acc = self._stack[-1][2]
        for _, _, vector in reversed(self._stack[:-1]):
            acc = vector + acc
        return acc.copy() if len(self._stack) == 1 else acc


class PieceSet:
    """Disjoint nodes added in any order, each merged with its sibling as soon as both are
    held (``left + right``, as the tree adds them): a checkpoint's blocks and a process's own
    land here in whatever order they come, and contiguous runs of them shrink to O(log)
    vectors. ``pieces`` lists what is held, by position."""

    def __init__(self) -> None:
        self._held: dict[tuple[int, int], np.ndarray] = {}

    @property
    def pieces(self) -> list[Piece]:
        return [
            (j, i, v)
            for (j, i), v in sorted(self._held.items(), key=lambda kv: kv[0][1] << kv[0][0])
        ]

    def add(self, j: int, i: int, vector: np.ndarray) -> None:
        j, i = operator.index(j), operator.index(i)
        vector = np.asarray(vector, dtype=np.float64)
        while (j, i ^ 1) in self._held:
            other = self._held.pop((j, i ^ 1))
            vector = other + vector if i & 1 else vector + other  # left + right
            j, i = j + 1, i >> 1
        self._held[(j, i)] = vector


def combine(pieces: Iterable[Piece], total: int) -> np.ndarray:
    """The root of the tree over ``total`` positions from pieces that cover ``[0, total)``
    without overlap, in any order (``(j, i, vector)`` each)."""
    stack = TreeStack()
    for j, i, vector in sorted(pieces, key=lambda p: p[1] << p[0]):
        stack.push(j, i, vector)
    return stack.root(total)
