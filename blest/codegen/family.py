"""The kernel families, one interface: a spec type, its variants, and an emitter.

===========  ==============================  =========================================
family       spec                            emitter
===========  ==============================  =========================================
single       ``codegen.spec.VariantSpec``    ``codegen.render.program``
multi        ``codegen.msspec.MSSpec``       ``codegen.ms_render.ms_program``
dense        ``codegen.densespec.DenseSpec`` ``codegen.dense_render.dense_program``
pull         ``codegen.pullspec.PullSpec``   ``codegen.pull_render.pull_program``
betweenness  ``codegen.bcspec.BCSpec``       ``codegen.bc_render.bc_program``
===========  ==============================  =========================================

Every emitter returns a :class:`~blest.codegen.program.KernelProgram`, which is all the runtime
needs to load and launch a module (:class:`blest.runtime.device_program.DeviceProgram`); the tuning
layer adds each family's search space (:mod:`blest.tuning.families`). A new family registers a
:class:`Family` here and is then compiled, cached, loaded and tested like the others.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from blest.codegen.bc_render import bc_program
from blest.codegen.bcspec import BCSpec, bc_variants
from blest.codegen.dense_render import dense_program
from blest.codegen.densespec import DenseSpec, dense_variants
from blest.codegen.ms_render import ms_program
from blest.codegen.msspec import MSSpec, ms_variants
from blest.codegen.program import KernelProgram
from blest.codegen.pull_render import pull_program
from blest.codegen.pullspec import PullSpec, pull_variants
from blest.codegen.render import program
from blest.codegen.spec import VariantSpec, variants
from blest.errors import ArgumentError

__all__ = ["Family", "FAMILIES", "family_of", "emit", "every_spec"]


@dataclass(frozen=True)
class Family:
    """One kernel family: its spec type, every valid spec, and the emitter of a spec's module
    (keyword options such as ``serving`` pass through)."""

    name: str
    spec_type: type
    variants: Callable[[], Iterator[Any]]
    emit: Callable[..., KernelProgram]


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("single", VariantSpec, variants, program),
        Family("multi", MSSpec, ms_variants, ms_program),
        Family("dense", DenseSpec, dense_variants, dense_program),
        Family("pull", PullSpec, pull_variants, pull_program),
        Family("betweenness", BCSpec, bc_variants, bc_program),
    )
}


def family_of(spec: Any) -> Family:
    """The family whose spec type ``spec`` is."""
    for family in FAMILIES.values():
        if isinstance(spec, family.spec_type):
            return family
    raise ArgumentError(f"no kernel family takes a {type(spec).__name__}")


def emit(spec: Any, **options: Any) -> KernelProgram:
    """The :class:`KernelProgram` of ``spec``, whatever its family."""
    return family_of(spec).emit(spec, **options)


def every_spec() -> Iterator[Any]:
    """Every spec of every family (what CI compiles)."""
    for family in FAMILIES.values():
        yield from family.variants()
