"""PullSpec: TurboBFS's pull, single-source BFS over the in-arcs, with or without shortest-path
counts (rendered by :mod:`blest.codegen.pull_render`).

Level L + 1 is a masked sparse matrix-vector product pulled over the in-adjacency: every vertex
not yet visited looks at its in-neighbours and is reached when one of them is in F_L (a bitmap of
level L); with counts, ``sigma(v)`` is the sum of ``sigma(u)`` over its in-arcs ``u -> v`` with
u in F_L, exact in 64-bit integers (any order gives the same sum), and a count that would pass
2^63 - 1 raises a flag instead (the host then follows docs/betweenness.md's overflow rule).

Axes (docs/variants.md):

* ``form`` - ``scalar``: a lane per vertex walks its in-arcs (TurboBFS's thread per column);
  ``vector``: a warp per vertex, its lanes over the in-arcs, then a warp reduction (a warp per
  column); ``hybrid``: a lane per vertex of at most HYBRID_DEGREE in-arcs, then the warp
  together over each heavier vertex of the word (XBFS's warp-centric bottom-up balance).
  Scalar suits graphs of a few in-arcs a vertex, vector those of many
  (:func:`default_pull_form`), hybrid those of both (power-law graphs).
* ``counts`` - whether the kernel counts shortest paths; without them a vertex stops at its
  first in-neighbour in F_L.
* ``asynchronous`` - without counts only: XBFS's asynchronous bottom-up. A vertex that finds
  no in-neighbour in F_L but one reached at level L + 1 in the same pass takes level L + 2
  there and then (it has read all its in-arcs already), so the next pass skips it.

Every variant is one persistent cooperative kernel a call, a grid barrier between levels (the
``_pers`` of its name).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

from blest.codegen.contract import CTL_WORDS
from blest.codegen.program import KERNEL_PREFIX
from blest.codegen.specjson import JsonSpec
from blest.errors import ArgumentError

__all__ = [
    "PullSpec",
    "pull_variants",
    "default_pull_form",
    "pull_bytes",
    "PULL_KERNEL",
    "PULL_FORMS",
    "PULL_OVERFLOW",
    "PULL_EARLY",
    "PULL_CTL_WORDS",
    "VECTOR_MIN_DEGREE",
    "PULL_SPEC_FORMAT",
]

PULL_SPEC_FORMAT = 1
#: The one entry point of a pull module.
PULL_KERNEL = f"{KERNEL_PREFIX}_pull"
PULL_FORMS = ("scalar", "vector", "hybrid")
#: The pull kernels' control block: the common one (codegen/contract.py), then the pull's own
#: words. ``PULL_OVERFLOW`` is nonzero when some count reached 2^63 (the counts are then void);
#: ``PULL_EARLY`` counts the vertices an asynchronous pull gave their level a pass early.
PULL_OVERFLOW = CTL_WORDS
PULL_EARLY = CTL_WORDS + 1
PULL_CTL_WORDS = CTL_WORDS + 2
#: Average in-degree above which the vector form is the default: a warp then has most of its
#: lanes busy on a vertex's in-arcs, where the scalar form would leave one lane walking them.
VECTOR_MIN_DEGREE = 8.0


@dataclass(frozen=True)
class PullSpec(JsonSpec):
    """One point of the pull family's variant space; hashable and JSON round-trippable."""

    FORMAT: ClassVar[int] = PULL_SPEC_FORMAT

    form: str = "scalar"
    counts: bool = True
    asynchronous: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.form, str) or self.form not in PULL_FORMS:
            raise ArgumentError(f"PullSpec.form must be one of {PULL_FORMS}, got {self.form!r}")
        for axis in ("counts", "asynchronous"):
            if type(getattr(self, axis)) is not bool:
                raise ArgumentError(f"PullSpec.{axis} must be True or False")
        if self.asynchronous and self.counts:
            raise ArgumentError(
                "PullSpec.asynchronous takes counts=False: a count needs every in-neighbour "
                "of the level before, final"
            )

    @property
    def name(self) -> str:
        """A short identifier, e.g. ``pull_vector_counts_pers``, ``pull_scalar_async_pers``."""
        kind = "_counts" if self.counts else "_async" if self.asynchronous else ""
        return f"pull_{self.form}{kind}_pers"

    @property
    def frontiers(self) -> int:
        """Frontier bitmaps the kernel keeps: F_L and F_{L+1}, and F_{L+2} when asynchronous."""
        return 3 if self.asynchronous else 2


def pull_variants() -> Iterator[PullSpec]:
    """Every PullSpec."""
    for form, counts in itertools.product(PULL_FORMS, (False, True)):
        yield PullSpec(form, counts)
        if not counts:
            yield PullSpec(form, counts, asynchronous=True)


def default_pull_form(n: int, arcs: int) -> str:
    """The form an untuned engine takes: vector above :data:`VECTOR_MIN_DEGREE` in-arcs a
    vertex on average, else scalar."""
    return "vector" if arcs > VECTOR_MIN_DEGREE * max(n, 1) else "scalar"


def pull_bytes(spec: PullSpec, n: int, arcs: int, *, permuted: bool, in_csr: bool = True) -> int:
    """Device bytes a pull runner allocates on a graph of n vertices and ``arcs`` arcs: the
    in-adjacency (unless shared, ``in_csr=False``), visited and the frontier bitmaps, levels,
    and with counts sigma (twice on a reordered graph: internal and the user's ids), the
    permutation on a reordered graph, and the control block."""
    words = (n + 31) // 32
    total = (1 + spec.frontiers) * 4 * words + 4 * n + 4 * PULL_CTL_WORDS
    if in_csr:
        total += 8 * (n + 1) + 4 * max(arcs, 1)
    if permuted:
        total += 4 * n
    if spec.counts:
        total += 8 * n * (2 if permuted else 1)
    return total
