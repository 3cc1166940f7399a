"""The tuner's search space: candidates = ordering × VariantSpec × eta × launch geometry.

The coarse candidates are every persistent variant of the allowed sigmas at eta = 10, in both
coarse geometries, for every ordering, and, where the graph's visited bitmap fits in one
block's shared memory, the block launch (one block of 256, 512 or 1024 threads, and on GPUs
with thread-block clusters one cluster of 16 blocks of 512); refinement adds, on the best few,
the other geometries (persistent variants), the eta grid, the return rule's beta and the
edge-ratio guard's alpha (switching variants), the register budget (eager persistent variants
in one block of at most 512 threads per SM), the small-queue threshold (persistent variants)
and the per-level launch (:mod:`blest.tuning.search` runs the stages).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from blest.codegen.contract import (
    HOPPER_SMEM_OPTIN,
    SMEM_STATIC_RESERVE,
    block_max_vertices,
    max_block_size,
)
from blest.codegen.spec import VariantSpec, variants
from blest.defaults import DEFAULT_ALPHA, DEFAULT_BETA, DEFAULT_ETA, SIGMAS
from blest.tuning.paper import paper_spec

__all__ = [
    "COARSE_ETA",
    "ETA_GRID",
    "BETA_GRID",
    "ALPHA_GRID",
    "BEAMER_ALPHA",
    "ALPHA_ETA",
    "GEOMETRIES",
    "REFINE_GEOMETRIES",
    "family_of",
    "BLOCK_GEOMETRIES",
    "CLUSTER_GEOMETRIES",
    "HOPPER_SMEM_LIMIT",
    "SMALL_QUEUES",
    "RESIDENT_MAX_N",
    "Candidate",
    "persistent_specs",
    "block_specs",
    "block_fits",
    "coarse_candidates",
    "HOP_CANDIDATES",
    "eta_variants",
    "beta_variants",
    "alpha_variants",
    "geometry_variants",
    "register_variants",
    "small_queue_variants",
    "per_level_variant",
    "paper_candidate",
]

#: Switching constants tried in refinement; 0 forbids bottom-up levels ("off").
ETA_GRID = (2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 0.0)
COARSE_ETA = DEFAULT_ETA
#: Return-rule constants tried in refinement besides "off" (after a bottom-up level, stay
#: bottom-up while |F| * beta >= n). On kron-22 the tail levels that bottom-up wins hold 111K
#: or more of 4.2M vertices and those top-down wins 3.5K or fewer; on urand-22 top-down wins a
#: last level of 3-4K (benchmarks/NOTES.md): n / beta between the two.
BETA_GRID = (24.0, 100.0, 400.0)
#: The edge-ratio guard's published value (Beamer's direction-optimizing rule): a level may go
#: bottom-up only while alpha * m_f > m_u, the in-arcs of the frontier against those of the
#: vertices not yet visited.
BEAMER_ALPHA = 14.0
#: Guard constants tried in refinement: 4 (stricter: bottom-up needs a wider frontier),
#: Beamer's and 50 (looser). The guard pays where it lets a large eta run without the eta
#: rule's early mistakes: on kron-22 a few sources put ~100 hubs on level 2, whose VSSs fill
#: |Q|, and eta 200 sends that level bottom-up to scan nearly the whole in-CSR (3.48 ms against
#: 0.30 top-down; benchmarks/NOTES.md), while the guard keeps it top-down (m_f 0.78M arcs, m_u
#: 128M). Hence :func:`alpha_variants` tries it mostly at :data:`ALPHA_ETA`, where the eta rule
#: alone misfires most.
ALPHA_GRID = (4.0, BEAMER_ALPHA, 50.0)
#: The eta the guard is tried at besides the leader's own: the largest of the grid.
ALPHA_ETA = max(ETA_GRID)
#: (threads per block, blocks per SM or None for what the occupancy API allows)
GEOMETRIES: tuple[tuple[int, int | None], ...] = ((256, None), (1024, 1))
#: Geometries the refinement tries on the leaders: one block of 128 to 512 threads per SM. On
#: graphs of a few thousand vertices a level's work is small and its barriers dominate; smaller
#: blocks wait less at them (benchmarks/NOTES.md: twitch_FR 0.047 ms at 1024
#: threads, 0.036 at 512; musae_facebook 0.092 at 1024, 0.064 at 256).
REFINE_GEOMETRIES: tuple[tuple[int, int | None], ...] = ((512, 1), (256, 1), (128, 1))
#: Threads of the one block of the block launch (launch="block").
BLOCK_GEOMETRIES: tuple[int, ...] = (256, 512, 1024)  # 512: the fastest on luxembourg_osm
#: (blocks per cluster, threads per block) of the block launch on a thread-block cluster: the
#: fastest shape measured (benchmarks/NOTES.md).
CLUSTER_GEOMETRIES: tuple[tuple[int, int], ...] = ((16, 512),)
#: Dynamic shared memory a block may have where no device is asked (Hopper).
HOPPER_SMEM_LIMIT = HOPPER_SMEM_OPTIN - SMEM_STATIC_RESERVE
#: Graphs of at most this many vertices also screen the resident queue (``queue="resident"``):
#: each warp keeps a few VSSs in registers, so it pays only while the BVSS has a few VSSs per
#: warp of the grid (twitch_FR: 6.5K vertices, 5.5K VSSs at sigma 32; 4.2K warps at most on an
#: H100); beyond that its warps load the rest at every level.
RESIDENT_MAX_N = 1 << 17
#: small_queue thresholds tried besides the engine's default (0: no one-block levels).
SMALL_QUEUES = (32, 128)


@dataclass(frozen=True)
class Candidate:
    """One timed configuration. ``eta`` is None for variants without switching, ``beta`` None
    for the return rule off, ``alpha`` None for the edge-ratio guard off and ``small_queue``
    None for the engine's default."""

    ordering: str
    spec: VariantSpec
    eta: float | None = None
    block_size: int = 256
    blocks_per_sm: int | None = None
    small_queue: int | None = None
    beta: float | None = None
    alpha: float | None = None

    @property
    def engine_key(self) -> tuple[Any, ...]:
        """What needs a fresh engine; eta, beta, alpha and small_queue are set on a live one."""
        return (self.ordering, self.spec, self.block_size, self.blocks_per_sm)

    @property
    def engine_eta(self) -> float:
        return COARSE_ETA if self.eta is None else float(self.eta)

    @property
    def engine_beta(self) -> float:
        return DEFAULT_BETA if self.beta is None else float(self.beta)

    @property
    def engine_alpha(self) -> float:
        return DEFAULT_ALPHA if self.alpha is None else float(self.alpha)

    @property
    def label(self) -> str:
        parts = [f"{self.ordering}/{self.spec.name}"]
        if self.spec.switching:
            parts.append(f"eta={self.eta:g}" if self.eta else "eta=off")
            if self.beta:
                parts.append(f"beta={self.beta:g}")
            if self.alpha:
                parts.append(f"alpha={self.alpha:g}")
        bps = "occ" if self.blocks_per_sm is None else str(self.blocks_per_sm)
        parts.append(f"{self.block_size}x{bps}")
        if self.small_queue is not None:
            parts.append(f"sq={self.small_queue}")
        return " ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ordering": self.ordering,
            "variant": self.spec.name,
            "spec": self.spec.to_dict(),
            "eta": self.eta,
            "block_size": self.block_size,
            "blocks_per_sm": self.blocks_per_sm,
            "small_queue": self.small_queue,
            "beta": self.beta,
            "alpha": self.alpha,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Candidate:
        return cls(
            ordering=str(d["ordering"]),
            spec=VariantSpec.from_dict(d["spec"]),
            eta=None if d.get("eta") is None else float(d["eta"]),
            block_size=int(d.get("block_size", 256)),
            blocks_per_sm=d.get("blocks_per_sm"),
            small_queue=d.get("small_queue"),
            beta=None if d.get("beta") is None else float(d["beta"]),
            alpha=None if d.get("alpha") is None else float(d["alpha"]),
        )


#: The (hops, sigma) pairs at which the tuner screens several levels a phase: on delaunay-20
#: (H100) two levels at sigma 16 and 32 took 1.04-1.05 ms, at sigma 8 1.49; three at sigma 32
#: 0.95 (benchmarks/NOTES.md). B's BVSS is built for each pair screened.
HOP_CANDIDATES = ((2, 16), (2, 32), (3, 16), (3, 32))

#: Within a sigma, one variant of each family comes before the rest of the coarse pass, so that
#: a budget that ends the screen early has still tried each: lazy with switching on tensor cores
#: (the paper's); several levels a phase, three before two (screened only on deep graphs of few
#: arcs, where they win: coarse_candidates; a budget-20 screen of delaunay-20 that tried them
#: fourth never reached three); eager (the fastest one-level grid launch on deep graphs), the
#: CUDA-core top-down; then the other lazy variants with switching, the other eager ones, the
#: rest.
_FAMILIES: tuple[Callable[[VariantSpec], bool], ...] = (
    lambda s: (
        s.update == "lazy"
        and s.switching
        and s.expand == "mma"
        and s.queue == "vss"
        and not s.dirty_sets
    ),
    lambda s: s.hops > 1,
    lambda s: s.update == "eager" and s.queue == "vss",
    lambda s: s.expand == "csr" and s.switching,
    lambda s: s.update == "lazy" and s.switching,
    lambda s: s.update == "eager",
)


def family_of(spec: VariantSpec) -> int:
    """The index of the first of :data:`_FAMILIES` that ``spec`` belongs to (one past the last
    for the rest: the block launch, lazy without switching, the CUDA-core top-down without)."""
    return next((i for i, f in enumerate(_FAMILIES) if f(spec)), len(_FAMILIES))


def _priority(spec: VariantSpec) -> tuple:
    """sigma 8 first (the paper's), then by family (:data:`_FAMILIES`; within several levels a
    phase, more levels first), the larger register budget (refinement only) last."""
    return (spec.sigma != 8, spec.sigma, spec.registers, family_of(spec), -spec.hops, spec.name)


def persistent_specs(sigmas: Iterable[int] = SIGMAS) -> list[VariantSpec]:
    """Every persistent variant of the given sigmas, most promising first."""
    wanted = set(sigmas)
    return sorted((s for s in variants(launch="persistent") if s.sigma in wanted), key=_priority)


def block_specs(
    sigmas: Iterable[int] = SIGMAS, clusters: Iterable[int] = (1,)
) -> list[VariantSpec]:
    """The block-launch variant of each given sigma, on each given cluster size."""
    wanted, sizes = set(sigmas), set(clusters)
    return [s for s in variants(launch="block") if s.sigma in wanted and s.cluster in sizes]


def block_fits(n: int, smem_limit: int = HOPPER_SMEM_LIMIT, cluster: int = 1) -> bool:
    """Whether the block launch's visited bitmap of ``n`` vertices fits in ``smem_limit`` bytes
    of dynamic shared memory a block over ``cluster`` blocks (one block: about 1.8M vertices on
    Hopper)."""
    return n <= block_max_vertices(smem_limit, cluster)


def coarse_candidates(
    orderings: Sequence[str],
    sigmas: Iterable[int] = SIGMAS,
    *,
    n: int | None = None,
    smem_limit: int = HOPPER_SMEM_LIMIT,
    clusters: bool = False,
    hops_orderings: Collection[str] = (),
) -> list[Candidate]:
    """The coarse pass, interleaved: one candidate of each (geometry, ordering, sigma) group in
    turn, each group most promising first, so that any prefix is a balanced sample. With the
    graph's ``n``, the block launch joins each (ordering, sigma) group of each of its block
    sizes when its bitmap fits in ``smem_limit`` bytes (:func:`block_fits`), and with
    ``clusters`` (a GPU that has them) its :data:`CLUSTER_GEOMETRIES` too; without ``n``, it
    is left out. The resident queue joins only graphs of at most :data:`RESIDENT_MAX_N`
    vertices; the larger register budget only in refinement (:func:`register_variants`);
    several levels a phase (``hops`` > 1) only in ``hops_orderings`` (the tuner names the
    default one for a graph whose B = A + A^2 is small:
    :func:`blest.graph.hops.two_hop_arcs_bound`), at :data:`HOP_CANDIDATES`, and first in
    their groups (a budget-20 screen of delaunay-20 reached the second of the groups' rows only
    at sigma 4 and 8: the block launches' rows are slow)."""
    sigmas = tuple(sigmas)
    groups: dict[tuple, list[Candidate]] = {}
    resident = n is not None and n <= RESIDENT_MAX_N
    for spec in persistent_specs(sigmas):
        if (spec.queue == "resident" and not resident) or spec.registers != 64:
            continue
        if spec.hops > 1 and (spec.hops, spec.sigma) not in HOP_CANDIDATES:
            continue
        for block, bps in GEOMETRIES:
            for ordering in orderings:
                if spec.hops > 1 and ordering not in hops_orderings:
                    continue
                eta = COARSE_ETA if spec.switching else None
                c = Candidate(ordering, spec, eta, block, bps)
                groups.setdefault((block, bps, ordering, spec.sigma), []).append(c)
    if n is not None and block_fits(n, smem_limit):
        for spec in block_specs(sigmas):
            for block in BLOCK_GEOMETRIES:
                for ordering in orderings:
                    c = Candidate(ordering, spec, None, block, 1)
                    groups.setdefault(("block", block, ordering, spec.sigma), []).append(c)
    for cluster, block in CLUSTER_GEOMETRIES if clusters and n is not None else ():
        if block_fits(n, smem_limit, cluster):  # type: ignore[arg-type]
            for spec in block_specs(sigmas, (cluster,)):
                for ordering in orderings:
                    c = Candidate(ordering, spec, None, block, 1)
                    key = ("cluster", cluster, block, ordering, spec.sigma)
                    groups.setdefault(key, []).append(c)
    for key, group in groups.items():  # several levels a phase first where screened at all
        groups[key] = sorted(group, key=lambda c: c.spec.hops == 1)
    return [c for row in itertools.zip_longest(*groups.values()) for c in row if c is not None]


def eta_variants(c: Candidate) -> list[Candidate]:
    """The rest of the eta grid for a switching candidate (none otherwise)."""
    if not c.spec.switching:
        return []
    return [replace(c, eta=e) for e in ETA_GRID if e != c.eta]


def beta_variants(c: Candidate) -> list[Candidate]:
    """The return rule's other settings (off and :data:`BETA_GRID`) for a switching candidate
    (none otherwise)."""
    if not c.spec.switching:
        return []
    return [replace(c, beta=b) for b in (None, *BETA_GRID) if b != c.beta]


def alpha_variants(c: Candidate) -> list[Candidate]:
    """The edge-ratio guard for a switching candidate (none otherwise): :data:`BEAMER_ALPHA` at
    its own eta (unless eta is off: no level goes bottom-up to guard) and at :data:`ALPHA_ETA`,
    and the rest of :data:`ALPHA_GRID` at :data:`ALPHA_ETA`; the candidate itself left out, its
    other knobs kept. The guard is what makes a large eta safe, so that is where it is tried.
    Nothing for the per-level launch, which has no grid barrier to count the arcs at."""
    if not c.spec.switching or c.spec.launch != "persistent":
        return []
    pairs = [(BEAMER_ALPHA, c.eta)] if c.eta else []
    pairs += [(BEAMER_ALPHA, ALPHA_ETA)]
    pairs += [(a, ALPHA_ETA) for a in ALPHA_GRID if a != BEAMER_ALPHA]
    out = [replace(c, alpha=a, eta=e) for a, e in dict.fromkeys(pairs)]
    return [v for v in out if v != c]


def geometry_variants(c: Candidate) -> list[Candidate]:
    """The same persistent candidate in every other geometry of :data:`GEOMETRIES` and
    :data:`REFINE_GEOMETRIES` (none for other launches: the block launch has its own sizes,
    and the per-level launch is refined from a persistent leader)."""
    if c.spec.launch != "persistent":
        return []
    own = (c.block_size, c.blocks_per_sm)
    return [
        replace(c, block_size=block, blocks_per_sm=bps)
        for block, bps in GEOMETRIES + REFINE_GEOMETRIES
        if (block, bps) != own and block <= max_block_size(c.spec)
    ]


def register_variants(c: Candidate) -> list[Candidate]:
    """The same eager persistent candidate compiled for 128 registers a thread, where its
    geometry is one block of at most 512 threads per SM (none otherwise). Where the kernel
    spills at 64 (the resident queue), that took 4% off twitch_FR and musae_facebook; it cost
    the lazy CUDA-core top-down 2% on kron-21 (benchmarks/NOTES.md)."""
    spec = c.spec
    if spec.update != "eager" or spec.launch != "persistent" or spec.registers != 64:
        return []
    if c.blocks_per_sm != 1 or c.block_size > 512:
        return []
    return [replace(c, spec=replace(spec, registers=128))]


def small_queue_variants(c: Candidate) -> list[Candidate]:
    """Other small-queue thresholds for a persistent candidate (none otherwise, nor for the
    resident queue, which keeps no |Q|)."""
    if c.spec.launch != "persistent" or c.spec.queue == "resident":
        return []
    return [replace(c, small_queue=q) for q in SMALL_QUEUES if q != c.small_queue]


def per_level_variant(c: Candidate) -> Candidate | None:
    """The same candidate with one launch per level (small_queue does not apply); None for the
    per-level and block launches, and for expand="csr", the resident queue, the larger
    register budget, the edge-ratio guard and several levels a phase (persistent only)."""
    spec = c.spec
    if spec.launch != "persistent" or spec.expand == "csr" or spec.queue == "resident":
        return None
    if spec.hops != 1:
        return None
    if spec.registers != 64 or c.alpha:
        return None
    return replace(c, spec=replace(c.spec, launch="per_level"), small_queue=None)


def paper_candidate(ordering: str, u_div: float, switching: bool) -> Candidate:
    """The paper's fixed choice: sigma=8, lazy iff U_div > 25,000, eta=10, default geometry."""
    spec = paper_spec(u_div, switching)
    return Candidate(ordering, spec, COARSE_ETA if spec.switching else None)
