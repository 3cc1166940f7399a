"""BCSpec: the compile-time choices of one generated Brandes kernel (betweenness centrality),
rendered by :mod:`blest.codegen.bc_render`.

The kernel computes, for a batch of kappa sources, each source's BFS levels, shortest-path
counts ``sigma`` and dependencies ``delta`` over the graph in the user's ids, and adds the
batch's per-source contribution rows in the fixed tree of :mod:`blest.reference.treesum`
(``docs/betweenness.md``), with the CPU runner's sums in the CPU runner's order.

Axes (docs/variants.md):

* ``kappa`` - sources per batch (8, 16, 32; the queue form 1, 2, 4, 8): one bit per source
  in a 32-bit mask per vertex, and kappa lanes of a warp per vertex (lane s computes source
  s), so a warp reads a vertex's kappa levels, counts or dependencies in one coalesced access;
* ``form`` - ``block``: every thread block runs batches of its own (block barriers only), for
  deep or small graphs, where a grid barrier per level costs more than the level; ``grid``:
  every block works on one batch together (a cooperative launch, grid barriers), for big
  shallow graphs whose levels hold millions of arcs; ``queue``: every block runs small batches
  of its own with the visited bits in shared memory and a thread per queue entry (vertex,
  source bits), one block barrier a level (forward and backward), for deep graphs of small
  degrees (road networks, meshes: ~1,000 levels of a few hundred vertices).

A vertex with ``wide_degree`` or more in- or out-arcs (a runtime choice) is *wide*: its
sequential sums would hold one warp for a long chain of loads, so a whole block computes their
terms a chunk at a time (:data:`BC_CHUNK_PAIRS`) and one lane per source adds them in order.

Memory of one batch slot (:func:`slot_bytes`): levels, counts and dependencies of every
(vertex, source) pair (4 + 8 + 8 bytes), the queue of (vertex, source mask) entries of every
level (8 bytes, at most n x kappa of them), two masks per vertex (visited, next), the level
offsets, the list of the wide vertices' entries (at most kappa per wide vertex) and
:data:`BC_SLOT_WORDS` counters. The queue form keeps levels, counts, dependencies and the
queue (every (vertex, source) pair is in one entry), the visited bits (kappa per vertex) when
they are not in shared memory, and the level offsets (:func:`slot_bytes`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, fields
from typing import ClassVar

import numpy as np

from blest.codegen.contract import CtlField
from blest.codegen.program import KERNEL_PREFIX
from blest.codegen.specjson import JsonSpec
from blest.errors import ArgumentError

__all__ = [
    "BCSpec",
    "BC_KAPPAS",
    "BC_QUEUE_KAPPAS",
    "BC_FORMS",
    "BC_QUEUE_HEAD_WORDS",
    "BC_SPEC_FORMAT",
    "BC_KERNEL",
    "BC_COMBINE_KERNEL",
    "BC_SLOT_FIELDS",
    "BC_SLOT",
    "BC_SLOT_WORDS",
    "BC_MAX_ROWS",
    "BC_CHUNK_PAIRS",
    "BC_SHARED_BYTES",
    "wide_vertices",
    "bc_variants",
    "form_kappas",
    "slot_bytes",
    "queue_shared_bytes",
]

BC_SPEC_FORMAT = 1
#: Sources per batch the generator supports.
BC_KAPPAS: tuple[int, ...] = (8, 16, 32)
#: Sources per batch of the queue form (small batches: many blocks, each alone on its batch).
BC_QUEUE_KAPPAS: tuple[int, ...] = (1, 2, 4, 8)
BC_FORMS: tuple[str, ...] = ("block", "grid", "queue")
#: Words of the queue form's dynamic shared memory before its visited bits: the batch, three
#: level sizes, the reach of each source.
BC_QUEUE_HEAD_WORDS = 4 + max(BC_QUEUE_KAPPAS)
#: The entry points: the batches of a launch, and the tree over their rows.
BC_KERNEL = f"{KERNEL_PREFIX}_bc"
BC_COMBINE_KERNEL = f"{KERNEL_PREFIX}_bc_combine"
#: Most batch rows one combination takes (the tree over them is folded in registers).
BC_MAX_ROWS = 1 << 15
#: (arc, source) terms a block computes at once for a wide vertex (a chunk of its arcs).
BC_CHUNK_PAIRS = 4096
#: Dynamic shared memory of a block: four words, then a chunk's terms.
BC_SHARED_BYTES = 16 + 8 * BC_CHUNK_PAIRS

#: Words (u64) of one batch slot's counters.
BC_SLOT_WORDS = 48

BC_SLOT_FIELDS: tuple[CtlField, ...] = (
    CtlField("QEND", 0, 1, "entries in the queue (every level of the batch so far)"),
    CtlField("DEPTH", 1, 1, "the deepest level of the last batch"),
    CtlField("WEND", 2, 1, "entries in the wide list (every level of the batch so far)"),
    CtlField("REACH", 16, 32, "[KAPPA] vertices each source reaches, itself excluded"),
)
#: Slot counter offsets by lower-case name.
BC_SLOT: dict[str, int] = {f.name.lower(): f.offset for f in BC_SLOT_FIELDS}

_CHOICES: dict[str, tuple] = {"kappa": tuple(sorted(set(BC_KAPPAS) | set(BC_QUEUE_KAPPAS))),
                              "form": BC_FORMS}  # fmt: skip


def form_kappas(form: str) -> tuple[int, ...]:
    """The kappas a form takes."""
    return BC_QUEUE_KAPPAS if form == "queue" else BC_KAPPAS


@dataclass(frozen=True)
class BCSpec(JsonSpec):
    """One point of the Brandes kernel's variant space; hashable and JSON round-trippable."""

    FORMAT: ClassVar[int] = BC_SPEC_FORMAT

    kappa: int = 32
    form: str = "block"

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            allowed = _CHOICES[f.name]
            if value not in allowed or type(value) is not type(allowed[0]):
                raise ArgumentError(f"BCSpec.{f.name} must be one of {allowed}, got {value!r}")
        if self.kappa not in form_kappas(self.form):
            raise ArgumentError(
                f"BCSpec.kappa of the {self.form} form must be one of {form_kappas(self.form)}, "
                f"got {self.kappa}"
            )

    @property
    def groups(self) -> int:
        """Vertices a warp works on at once (32 / kappa lanes each)."""
        return 32 // self.kappa

    @property
    def name(self) -> str:
        """A short identifier, e.g. ``bc_k32_block``."""
        return f"bc_k{self.kappa}_{self.form}"


def bc_variants() -> Iterator[BCSpec]:
    """Every BCSpec."""
    for form in BC_FORMS:
        for kappa in form_kappas(form):
            yield BCSpec(kappa, form)


def wide_vertices(in_degree: np.ndarray, out_degree: np.ndarray, wide_degree: int) -> int:
    """Vertices with ``wide_degree`` or more in- or out-arcs: a whole block works on each."""
    return int(np.count_nonzero((in_degree >= wide_degree) | (out_degree >= wide_degree)))


def slot_bytes(spec: BCSpec, n: int, wide: int = 0) -> int:
    """Device bytes of one batch slot on n vertices of which ``wide`` are wide (see the module
    docstring)."""
    pairs = n * spec.kappa
    if spec.form == "queue":
        return (
            28 * pairs  # level, sigma, delta; the queue
            + 4 * n  # visited bits, when not in shared memory
            + 16 * (n + 2)  # where each level starts in the queue
            + 8 * BC_SLOT_WORDS
        )
    return (
        20 * pairs  # level, sigma, delta
        + 8 * pairs  # the queue
        + 8 * n  # visited, next
        + 16 * (n + 2)  # where each level starts in the queue and in the wide list
        + 8 * max(1, wide * spec.kappa)  # the wide list
        + 8 * BC_SLOT_WORDS
    )


def queue_shared_bytes(kappa: int, n: int, vis_smem: bool) -> int:
    """Dynamic shared memory of a queue-form block: the head, then (``vis_smem``) kappa
    visited bits per vertex."""
    vis = 4 * (-(-n * kappa // 32)) if vis_smem else 0
    return 4 * BC_QUEUE_HEAD_WORDS + vis
