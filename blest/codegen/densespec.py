"""DenseSpec: the every-vertex multi-source BFS (rendered by :mod:`blest.codegen.dense_render`).

Closeness or harmonic centrality of *every* vertex needs all n BFSs. On a small, shallow graph
the dense form runs them at once: kappa = n, one bit per source in each row of an n x n bitmap,
every level one pull over the in-arcs of the whole cooperative grid. Its sums are kept per
*target*: source s reaching v at level L means d(s -> v) = L, so the sums at v are those that
closeness and harmonic centrality of v need (distances to v; on an undirected graph the two
directions agree), level by level, as the batched forms keep them per source.

Axes (docs/variants.md):

* ``vec`` - 32-bit words a lane loads at once (1, 2, 4: 32-, 64- and 128-bit loads); a warp's
  unit of work covers 32 x vec words of a row, 1024 x vec sources (a *chunk*).
* ``seg`` - in-arcs per unit (8, 16, 32; a lane loads up to 8 rows at once): a vertex with
  more in-arcs is split into several units, which combine their words with atomics. Fewer
  arcs per unit: more units and a shorter chain of dependent loads in each.

Memory: four bitmaps of n rows (visited and three rotating frontiers), each row rounded up to
whole chunks: :func:`dense_bytes`. The form serves graphs of at most :data:`DENSE_MAX_N`
vertices.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, fields
from typing import ClassVar

from blest.codegen.program import KERNEL_PREFIX
from blest.codegen.specjson import JsonSpec
from blest.errors import ArgumentError

__all__ = [
    "DenseSpec",
    "dense_variants",
    "row_words",
    "chunk_sources",
    "dense_bytes",
    "DENSE_KERNEL",
    "DENSE_MAX_N",
    "DENSE_SPEC_FORMAT",
]

DENSE_SPEC_FORMAT = 1
#: The one entry point of a dense module.
DENSE_KERNEL = f"{KERNEL_PREFIX}_ms_dense"
#: Most vertices the dense form takes: its n x n bits then stay within 2 GiB per bitmap and
#: every arc offset fits an int.
DENSE_MAX_N = 46_340

_CHOICES: dict[str, tuple[int, ...]] = {"vec": (1, 2, 4), "seg": (8, 16, 32)}


@dataclass(frozen=True)
class DenseSpec(JsonSpec):
    """One point of the dense form's variant space; hashable and JSON round-trippable."""

    FORMAT: ClassVar[int] = DENSE_SPEC_FORMAT

    vec: int = 4
    seg: int = 32

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if type(value) is not int or value not in _CHOICES[f.name]:
                raise ArgumentError(
                    f"DenseSpec.{f.name} must be one of {_CHOICES[f.name]}, got {value!r}"
                )

    @property
    def chunk_words(self) -> int:
        """Words of a row one warp's unit covers (32 lanes x vec)."""
        return 32 * self.vec

    @property
    def name(self) -> str:
        """A short identifier, e.g. ``ms_dense_v2_g32``."""
        return f"ms_dense_v{self.vec}_g{self.seg}"


def dense_variants() -> Iterator[DenseSpec]:
    """Every DenseSpec."""
    for vec, seg in itertools.product(*_CHOICES.values()):
        yield DenseSpec(vec, seg)


def chunk_sources(spec: DenseSpec) -> int:
    """Sources (bits) of one chunk of a row."""
    return 32 * spec.chunk_words


def row_words(spec: DenseSpec, n: int) -> int:
    """32-bit words of one row: n source bits, rounded up to whole chunks."""
    return -(-max(n, 1) // chunk_sources(spec)) * spec.chunk_words


def dense_bytes(spec: DenseSpec, n: int) -> int:
    """Device bytes of the four bitmaps of n rows, and two per-vertex counters."""
    return 4 * 4 * n * row_words(spec, n) + 4 * 2 * n
