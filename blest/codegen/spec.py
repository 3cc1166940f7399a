"""VariantSpec: the compile-time choices that make one generated BFS kernel differ from another.

Axes (docs/variants.md):

* ``sigma`` - slice width of the BVSS (4, 8, 16, 32); theta = 32/sigma slices per lane.
* ``update`` - ``eager`` (Alg. 2: visited/level/frontier atomics in the MMA loop) or ``lazy``
  (Alg. 3: no-return atomic marks into V_next, then a coalesced finalization sweep).
* ``dirty_sets`` - lazy only: Stage 1 also marks which V_next words it touched, so the
  finalization visits only those (plus the words of the old frontier it must clear).
* ``queue`` - ``vss`` (a work queue of the VSSs of frontier-touching slice sets) or ``sweep``
  (every VSS each level, skipping those whose frontier word is zero).
* ``switching`` - lazy only: levels where #unvisited < eta * |Q_curr| run the CUDA-core
  bottom-up step (Alg. 4) over ``in_csr`` instead of the tensor cores; eta is a runtime argument.
* ``launch`` - ``persistent`` (one cooperative kernel with grid barriers), ``per_level``
  (a host loop of one launch per stage per level) or ``block`` (the whole BFS in one thread
  block on CUDA cores: visited bits in shared memory, the frontier a queue of vertex ids, out-arcs
  walked from the CSR; no BVSS, so only ``update="eager"``, ``dirty_sets=False``, ``queue="vss"``,
  ``switching=False`` - one block variant per sigma, the sigma of the graph's preparation).
* ``cluster`` - block launch only: the thread blocks that run the BFS together, 1 (one block,
  ``bfs_block.cu.j2``) or a Hopper thread-block cluster of 2, 4, 8 or 16 (``bfs_cluster.cu.j2``:
  the visited bitmap spread over the blocks' shared memory and reached through distributed
  shared memory, one cluster barrier per level, each warp expanding its 32 frontier vertices'
  out-arcs together, 32 arcs a step).

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

__all__ = ["VariantSpec", "variants", "SPEC_FORMAT", "BLOCK_AXES"]

SPEC_FORMAT = 1

_CHOICES: dict[str, tuple] = {
    "sigma": SIGMAS,
    "update": ("eager", "lazy"),
    "dirty_sets": (False, True),
    "queue": ("vss", "sweep"),
    "switching": (False, True),
    "launch": ("persistent", "per_level", "block"),
    "cluster": (1, 2, 4, 8, 16),
}

#: The one combination of the other axes that ``launch="block"`` takes (it reads no BVSS).
BLOCK_AXES: dict[str, object] = {
    "update": "eager",
    "dirty_sets": False,
    "queue": "vss",
    "switching": False,
}


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

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            allowed = _CHOICES[f.name]
            if value not in allowed or type(value) is not type(allowed[0]):
                raise ArgumentError(f"VariantSpec.{f.name} must be one of {allowed}, got {value!r}")
        if self.update == "eager" and (self.dirty_sets or self.switching):
            raise ArgumentError("dirty_sets and switching need update='lazy' (it owns V_next)")
        if self.cluster != 1 and self.launch != "block":
            raise ArgumentError(f"cluster={self.cluster} needs launch='block'")
        if self.launch == "block":
            wrong = [
                f"{k}={getattr(self, k)!r}" for k, v in BLOCK_AXES.items() if getattr(self, k) != v
            ]
            if wrong:
                need = ", ".join(f"{k}={v!r}" for k, v in BLOCK_AXES.items())
                raise ArgumentError(
                    f"launch='block' walks out-arcs on CUDA cores and reads no BVSS: it needs "
                    f"{need}, got {', '.join(wrong)}"
                )

    @classmethod
    def block(cls, sigma: int = DEFAULT_SIGMA, cluster: int = 1) -> VariantSpec:
        """The ``launch="block"`` variant at ``sigma`` on ``cluster`` blocks (its other axes are
        fixed by the launch)."""
        return cls(sigma=sigma, launch="block", cluster=cluster, **BLOCK_AXES)  # type: ignore[arg-type]

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
        parts = [f"s{self.sigma}", self.update]
        if self.dirty_sets:
            parts.append("dirty")
        parts.append(self.queue)
        if self.switching:
            parts.append("switch")
        parts.append("pers" if self.launch == "persistent" else "perlevel")
        return "_".join(parts)

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict:
        """``cluster`` is written only when it is not 1, so every other spec's JSON is what it
        was before the axis existed."""
        d = asdict(self)
        if d["cluster"] == 1:
            del d["cluster"]
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
    axes = {k: ((fixed[k],) if k in fixed else v) for k, v in _CHOICES.items()}
    for combo in itertools.product(*axes.values()):
        kwargs = dict(zip(axes, combo, strict=True))
        if kwargs["update"] == "eager" and (kwargs["dirty_sets"] or kwargs["switching"]):
            continue
        if kwargs["launch"] == "block" and any(kwargs[k] != v for k, v in BLOCK_AXES.items()):
            continue
        if kwargs["cluster"] != 1 and kwargs["launch"] != "block":
            continue
        yield VariantSpec(**kwargs)
