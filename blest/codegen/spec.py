"""VariantSpec: the compile-time choices that make one generated BFS kernel differ from another.

Axes (docs/variants.md):

* ``sigma`` - slice width of the BVSS (4, 8, 16, 32); theta = 32/sigma slices per lane.
* ``update`` - ``eager`` (Alg. 2: visited/level/frontier atomics in the MMA loop) or ``lazy``
  (Alg. 3: no-return atomic marks into V_next, then a coalesced finalization sweep).
* ``dirty_sets`` - lazy only: Stage 1 also marks which V_next words it touched, so the
  finalization visits only those (plus the words of the old frontier it must clear).
* ``queue`` - ``vss`` (a work queue of the VSSs of frontier-touching slice sets), ``sweep``
  (every VSS each level, skipping those whose frontier word is zero) or ``resident`` (eager,
  persistent only: each warp keeps the VSSs it owns in registers from level to level and checks
  their frontier words at every level; no queue is written and |Q| is not counted, so
  ``small_queue`` does not apply. For graphs of a few thousand VSSs, whose levels are latency).
* ``switching`` - lazy only: levels where #unvisited < eta * |Q_curr| run the CUDA-core
  bottom-up step (Alg. 4) over ``in_csr`` instead of the tensor cores; eta is a runtime argument.
* ``launch`` - ``persistent`` (one cooperative kernel with grid barriers), ``per_level``
  (a host loop of one launch per stage per level) or ``block`` (the whole BFS in one thread
  block on CUDA cores: visited bits in shared memory, the frontier a queue of vertex ids, out-arcs
  walked from the CSR; no BVSS, so only ``update="eager"``, ``dirty_sets=False``, ``queue="vss"``,
  ``switching=False`` - one block variant per sigma, the sigma of the graph's preparation).
* ``expand`` - how a top-down level of the BVSS launches reads the graph: ``mma`` (the tensor
  cores over the BVSS, Alg. 2/3) or ``csr`` (CUDA cores over the out-CSR: each warp walks the
  out-arcs of a few frontier vertices 32 at a time, vertices of more than HUB_DEGREE out-arcs
  are spread over every warp, and each reached unvisited head is OR-ed into V_next). ``csr``
  takes only ``update="lazy"``, ``dirty_sets=False``, ``queue="sweep"`` and
  ``launch="persistent"``; with ``switching`` it is a direction-optimizing CUDA-core BFS.
* ``cluster`` - block launch only: the thread blocks that run the BFS together, 1 (one block,
  ``bfs_block.cu.j2``) or a Hopper thread-block cluster of 2, 4, 8 or 16 (``bfs_cluster.cu.j2``:
  the visited bitmap spread over the blocks' shared memory and reached through distributed
  shared memory, one cluster barrier per level, each warp expanding its 32 frontier vertices'
  out-arcs together, 32 arcs a step).

* ``registers`` - the most registers a thread of the persistent kernel may use: 64 (compiled
  for blocks of up to 1,024 threads) or 128 (eager persistent only, compiled with
  ``__launch_bounds__(512, 1)``: one block of at most 512 threads per SM). The resident queue
  keeps its VSSs in registers, and at 64 it spills; 128 took 4% off twitch_FR and
  musae_facebook at 512 threads (benchmarks/NOTES.md).

* ``hops`` - eager vss persistent only: BFS levels a phase between two grid barriers, 1, 2 or
  3. With K > 1 the kernel expands F_L over the BVSS of B = A + ... + A^K (a slice per row one
  to K arcs from the set's columns, with K - 1 "near" masks: the columns at most 1, ..., K - 1
  arcs away) and offers each reached row the level L + d, d the smallest distance its masks
  show, with an ``atomicMin``: the vertices lowered to L + K are the next phase's frontier
  (docs/algorithm.md, "Several levels a phase"). For graphs of few arcs a vertex and many
  levels (meshes, roads), where B stays small.

Block size and blocks per SM are runtime choices, not spec fields. Later families (multi-source
with kappa, the CUDA-core kernels) extend this class with fields whose defaults keep old JSON valid.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass, fields

from blest.defaults import DEFAULT_SIGMA, SIGMAS
from blest.errors import ArgumentError

__all__ = ["VariantSpec", "variants", "SPEC_FORMAT", "BLOCK_AXES", "CSR_AXES"]

SPEC_FORMAT = 1

_CHOICES: dict[str, tuple] = {
    "sigma": SIGMAS,
    "update": ("eager", "lazy"),
    "dirty_sets": (False, True),
    "queue": ("vss", "sweep", "resident"),
    "switching": (False, True),
    "launch": ("persistent", "per_level", "block"),
    "cluster": (1, 2, 4, 8, 16),
    "expand": ("mma", "csr"),
    "registers": (64, 128),
    "hops": (1, 2, 3),
}

#: The one combination of the other axes that ``launch="block"`` takes (it reads no BVSS).
BLOCK_AXES: dict[str, object] = {
    "update": "eager",
    "dirty_sets": False,
    "queue": "vss",
    "switching": False,
}

#: The one combination of the other axes that ``expand="csr"`` takes (``switching`` is free).
CSR_AXES: dict[str, object] = {
    "update": "lazy",
    "dirty_sets": False,
    "queue": "sweep",
    "launch": "persistent",
}


def _axes_error(what: str, axes: dict[str, object], got: dict[str, object]) -> str | None:
    """The error message when ``got`` breaks ``axes`` (None when it does not)."""
    wrong = [f"{k}={got[k]!r}" for k, v in axes.items() if got[k] != v]
    if not wrong:
        return None
    need = ", ".join(f"{k}={v!r}" for k, v in axes.items())
    return f"{what}: it needs {need}, got {', '.join(wrong)}"


@dataclass(frozen=True)
class VariantSpec:
    """One point of the single-source BFS variant space; hashable and JSON round-trippable."""

    sigma: int = 8
    update: str = "lazy"
    dirty_sets: bool = False
    queue: str = "vss"
    switching: bool = True
    launch: str = "persistent"
    cluster: int = 1
    expand: str = "mma"
    registers: int = 64
    hops: int = 1

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            allowed = _CHOICES[f.name]
            if value not in allowed or type(value) is not type(allowed[0]):
                raise ArgumentError(f"VariantSpec.{f.name} must be one of {allowed}, got {value!r}")
        if self.update == "eager" and (self.dirty_sets or self.switching):
            raise ArgumentError("dirty_sets and switching need update='lazy' (it owns V_next)")
        if self.queue == "resident" and (self.update, self.launch) != ("eager", "persistent"):
            raise ArgumentError(
                "queue='resident' keeps each warp's VSSs in registers across the levels of one "
                "launch: it needs update='eager' and launch='persistent'"
            )
        if self.cluster != 1 and self.launch != "block":
            raise ArgumentError(f"cluster={self.cluster} needs launch='block'")
        if self.registers != 64 and (self.update, self.launch) != ("eager", "persistent"):
            raise ArgumentError(
                f"registers={self.registers} needs update='eager' and launch='persistent'"
            )
        if self.hops != 1 and (self.update, self.queue, self.launch) != (
            "eager",
            "vss",
            "persistent",
        ):
            raise ArgumentError(
                f"hops={self.hops} needs update='eager', queue='vss' and launch='persistent'"
            )
        got = asdict(self)
        if self.launch == "block":
            error = _axes_error(
                "launch='block' walks out-arcs on CUDA cores and reads no BVSS", BLOCK_AXES, got
            )
            if error:
                raise ArgumentError(error)
        if self.expand == "csr":
            error = _axes_error(
                "expand='csr' expands top-down levels from the out-CSR", CSR_AXES, got
            )
            if error:
                raise ArgumentError(error)

    @classmethod
    def block(cls, sigma: int = DEFAULT_SIGMA, cluster: int = 1) -> VariantSpec:
        """The ``launch="block"`` variant at ``sigma`` on ``cluster`` blocks (its other axes are
        fixed by the launch)."""
        return cls(sigma=sigma, launch="block", cluster=cluster, **BLOCK_AXES)  # type: ignore[arg-type]

    @classmethod
    def csr(cls, sigma: int = DEFAULT_SIGMA, switching: bool = True) -> VariantSpec:
        """The ``expand="csr"`` variant at ``sigma`` (its other axes are fixed by the expansion)."""
        return cls(sigma=sigma, switching=switching, expand="csr", **CSR_AXES)  # type: ignore[arg-type]

    # ------------------------------------------------------------------ derived
    @property
    def theta(self) -> int:
        """Slices per lane."""
        return 32 // self.sigma

    @property
    def tau(self) -> int:
        """Slices per VSS."""
        return 32 * self.theta

    @property
    def name(self) -> str:
        """A short identifier, also used as the kernel-name prefix."""
        if self.launch == "block":
            return f"s{self.sigma}_block" + (f"_c{self.cluster}" if self.cluster > 1 else "")
        if self.expand == "csr":
            return f"s{self.sigma}_lazy_csr" + ("_switch" if self.switching else "") + "_pers"
        parts = [f"s{self.sigma}", self.update]
        if self.dirty_sets:
            parts.append("dirty")
        parts.append(self.queue)
        if self.switching:
            parts.append("switch")
        if self.registers != 64:
            parts.append(f"r{self.registers}")
        if self.hops != 1:
            parts.append(f"hop{self.hops}")
        parts.append("pers" if self.launch == "persistent" else "perlevel")
        return "_".join(parts)

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict:
        """``cluster``, ``expand``, ``registers`` and ``hops`` are written only when they are not
        1, ``mma``, 64 and 1, so every other spec's JSON is what it was before those axes
        existed."""
        d = asdict(self)
        for key, default in (("cluster", 1), ("expand", "mma"), ("registers", 64), ("hops", 1)):
            if d[key] == default:
                del d[key]
        return {"format": SPEC_FORMAT, **d}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict) -> VariantSpec:
        data = dict(data)
        fmt = data.pop("format", SPEC_FORMAT)
        if fmt != SPEC_FORMAT:
            raise ArgumentError(
                f"unknown VariantSpec format {fmt!r} (this blest reads {SPEC_FORMAT})"
            )
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ArgumentError(f"unknown VariantSpec fields: {sorted(unknown)}")
        return cls(**data)

    @classmethod
    def from_json(cls, text: str) -> VariantSpec:
        return cls.from_dict(json.loads(text))


def variants(**fixed) -> Iterator[VariantSpec]:
    """Every valid VariantSpec, optionally with some axes fixed (``variants(sigma=8)``)."""
    for key in fixed:
        if key not in _CHOICES:
            raise ArgumentError(f"unknown axis {key!r}")
        if fixed[key] not in _CHOICES[key]:
            raise ArgumentError(f"{key} must be one of {_CHOICES[key]}, got {fixed[key]!r}")
    axes = {k: ((fixed[k],) if k in fixed else v) for k, v in _CHOICES.items()}
    for combo in itertools.product(*axes.values()):
        try:  # __post_init__ is the one statement of which combinations are valid
            spec = VariantSpec(**dict(zip(axes, combo, strict=True)))
        except ArgumentError:
            continue
        yield spec
