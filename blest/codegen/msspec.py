"""MSSpec: the compile-time choices of one generated multi-source BFS kernel.

Axes (docs/variants.md):

* ``sigma`` - slice width of the BVSS (4, 8, 16, 32), as for single-source BFS.
* ``kappa`` - BFSs per batch (32 to 512; the queue form 1, 2, 4, 8, 16, 32): every vertex
  holds kappa/32 32-bit chunks of frontier, visited and next-frontier bits (the queue form:
  kappa visited bits).
* ``form`` - ``grid``: one batch at a time over the whole (cooperative) grid, grid barriers
  between the stages; ``block``: every thread block runs batches of its own, block barriers
  only (for deep graphs, where a grid barrier per level costs more than the level); ``smem``:
  as ``block``, with the batch's whole state (visited and two frontiers, kappa bits per
  vertex) in the block's shared memory, for small graphs (with ``expand="csr"`` only);
  ``queue``: one batch per block with kappa <= 32 visited bits per vertex in shared memory and
  the frontier a queue of (vertex, BFS bits) entries, for deep graphs whose BFSs reach few
  vertices per level (``expand="csr"`` only).
* ``expand`` - how a queued VSS finds the rows the batch reaches: ``mma``, the paper's Alg. 5
  (per active BFS, a warp ballot rebuilds its sigma-bit frontier word and the binary MMA tests
  every slot against it); ``shuffle``, on CUDA cores (each nonzero KAPPA-bit frontier word of
  the set's sigma vertices is broadcast by one warp shuffle and OR-ed into the slots whose mask
  has that column: sigma shuffles at most, however many BFSs are active); ``csr``, on CUDA
  cores without the BVSS (one thread per frontier vertex and 32-BFS chunk walks the vertex's
  out-arcs and ORs its frontier word into each head: a thread, not a warp, per unit of work,
  for the sparse frontiers of deep graphs).
* ``layout`` - where the kappa/32 chunks of a vertex's bitmap words live (grid and block forms):
  ``chunk``, chunk-major (chunk j of every vertex together: a bottom-up pull reads one 32-byte
  sector per in-arc and chunk); ``vertex``, vertex-major (a vertex's chunks side by side: the
  pull reads them with 128-bit loads, one sector per in-arc for kappa <= 256).

Both forms go top-down (as ``expand`` says) or bottom-up on CUDA cores, chosen per level by eta (a
runtime argument), so switching is not an axis.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import asdict, dataclass, fields
from typing import Any, ClassVar

from blest.codegen.specjson import JsonSpec
from blest.defaults import DEFAULT_KAPPA, DEFAULT_SIGMA, KAPPAS, QUEUE_KAPPAS, SIGMAS
from blest.errors import ArgumentError

__all__ = [
    "MSSpec",
    "ms_variants",
    "smem_bytes",
    "queue_smem_bytes",
    "queue_capacity",
    "shared_bytes",
    "MS_SPEC_FORMAT",
    "is_ms_variant",
]

MS_SPEC_FORMAT = 1

_CHOICES: dict[str, tuple] = {
    "sigma": SIGMAS,
    "kappa": tuple(sorted(set(KAPPAS) | set(QUEUE_KAPPAS))),
    "form": ("grid", "block", "smem", "queue"),
    "expand": ("mma", "shuffle", "csr"),
    "layout": ("chunk", "vertex"),
}


def _invalid(choice: dict[str, Any]) -> str | None:
    """Why a combination of valid axis values is not a variant (None: it is one)."""
    form, kappa, expand = choice["form"], choice["kappa"], choice["expand"]
    if form in ("smem", "queue") and expand != "csr":
        return f"MSSpec form {form!r} walks out-arcs: it needs expand='csr'"
    if choice["layout"] == "vertex" and (form in ("smem", "queue") or kappa < 64):
        return "MSSpec layout 'vertex' is for the grid and block forms with kappa >= 64"
    if kappa == 512 and choice["layout"] != "vertex":
        return "MSSpec kappa 512 needs layout='vertex' (chunk-major words cost a sector each)"
    kappas = QUEUE_KAPPAS if form == "queue" else KAPPAS
    if kappa not in kappas:
        return f"MSSpec form {form!r} runs kappa in {kappas}, got {kappa}"
    return None


def is_ms_variant(sigma: int, kappa: int, form: str, expand: str, layout: str = "chunk") -> bool:
    """Whether these axis values make a variant (:class:`MSSpec` refuses the others)."""
    choice = {"sigma": sigma, "kappa": kappa, "form": form, "expand": expand, "layout": layout}
    if any(v not in _CHOICES[k] for k, v in choice.items()):
        return False
    return _invalid(choice) is None


@dataclass(frozen=True)
class MSSpec(JsonSpec):
    """One point of the multi-source BFS variant space; hashable and JSON round-trippable."""

    FORMAT: ClassVar[int] = MS_SPEC_FORMAT

    sigma: int = DEFAULT_SIGMA
    kappa: int = DEFAULT_KAPPA
    form: str = "grid"
    expand: str = "mma"
    layout: str = "chunk"

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            allowed = _CHOICES[f.name]
            if value not in allowed or type(value) is not type(allowed[0]):
                raise ArgumentError(f"MSSpec.{f.name} must be one of {allowed}, got {value!r}")
        why = _invalid(asdict(self))
        if why:
            raise ArgumentError(why)

    @property
    def theta(self) -> int:
        """Slices per lane."""
        return 32 // self.sigma

    @property
    def tau(self) -> int:
        """Slices per VSS."""
        return 32 * self.theta

    @property
    def chunks(self) -> int:
        """32-bit words per vertex and bitmap (kappa / 32; 1 for the queue form's kappa < 32)."""
        return max(1, self.kappa // 32)

    @property
    def name(self) -> str:
        """A short identifier, e.g. ``ms_s8_k64_block`` (``_shfl``, ``_csr``: those expansions;
        ``_vx``: the vertex-major layout)."""
        suffix = {"mma": "", "shuffle": "_shfl", "csr": "_csr"}[self.expand]
        layout = "_vx" if self.layout == "vertex" else ""
        return f"ms_s{self.sigma}_k{self.kappa}_{self.form}{suffix}{layout}"


def ms_variants(**fixed: Any) -> Iterator[MSSpec]:
    """Every valid MSSpec, optionally with some axes fixed (``ms_variants(sigma=8)``)."""
    for key in fixed:
        if key not in _CHOICES:
            raise ArgumentError(f"unknown axis {key!r}")
    axes = {k: ((fixed[k],) if k in fixed else v) for k, v in _CHOICES.items()}
    for combo in itertools.product(*axes.values()):
        choice = dict(zip(axes, combo, strict=True))
        if _invalid(choice):
            continue  # not a variant (see MSSpec)
        yield MSSpec(**choice)


def smem_bytes(kappa: int, n: int) -> int:
    """Dynamic shared memory of the ``smem`` form on a graph of n vertices: visited and two
    frontier bitmaps of kappa bits per vertex, and kappa per-level counts."""
    return 4 * (3 * (kappa // 32) * n + kappa)


def queue_capacity(kappa: int, n: int) -> int:
    """Entries a level of the queue form may hold: each holds a (vertex, BFS) pair reached for
    the first time, or a source."""
    return n * kappa + kappa


def queue_smem_bytes(kappa: int, n: int, smem_queue: int = 0) -> int:
    """Dynamic shared memory of the ``queue`` form: kappa visited bits per vertex, kappa
    per-level counts (the two rounded to 8 bytes), then two queues of ``smem_queue`` 8-byte
    entries."""
    words = -(-n * kappa // 32) + kappa
    return 4 * (words + (words & 1)) + 2 * 8 * smem_queue


def shared_bytes(spec: MSSpec, n: int, smem_queue: int = 0) -> int:
    """Dynamic shared memory a block of ``spec`` needs on n vertices (0: the global forms)."""
    if spec.form == "smem":
        return smem_bytes(spec.kappa, n)
    if spec.form == "queue":
        return queue_smem_bytes(spec.kappa, n, smem_queue)
    return 0
