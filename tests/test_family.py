"""One description of a compiled variant for every kernel family: each emitter's
``KernelProgram`` names entry points that the source defines, with exactly the arguments (C type
and name, in order) that the runtime binds and passes (its ABI), and shared-memory formulas that
agree with the family's sizes. No GPU needed."""

from __future__ import annotations

import re

import pytest

from blest.codegen.contract import CLAIMS_FORMS, block_smem_bytes
from blest.codegen.densespec import DenseSpec
from blest.codegen.family import FAMILIES, emit, every_spec, family_of
from blest.codegen.msspec import MSSpec, shared_bytes
from blest.codegen.program import KernelProgram
from blest.codegen.render import has_serving_kernel, render
from blest.codegen.spec import VariantSpec
from blest.errors import ArgumentError


def _declared(source: str, entry: str) -> list[tuple[str, str]]:
    """(C type, name) of each parameter of ``extern "C"`` kernel ``entry`` in ``source``."""
    found = re.findall(r'extern "C"[^{;]*?\b' + re.escape(entry) + r"\(([^)]*)\)\s*\{", source)
    assert len(found) == 1, f"{entry} is defined {len(found)} times"
    params = []
    for decl in found[0].split(","):
        words = " ".join(decl.split())
        ctype, name = words.rsplit(" ", 1)
        params.append((ctype.replace(" *", "*"), name))
    return params


def _abi(program: KernelProgram, role: str) -> list[tuple[str, str]]:
    return [(p.ctype.replace(" *", "*"), p.name) for p in program.signature(role)]


def _programs():
    for spec in every_spec():
        yield emit(spec)
        if isinstance(spec, VariantSpec):
            if has_serving_kernel(spec):
                yield emit(spec, serving=True)
            if spec.update == "eager" and spec.launch != "block":
                yield from (emit(spec, claims=c) for c in CLAIMS_FORMS)


def test_every_entry_point_takes_the_abi_the_runtime_passes():
    seen = {name: 0 for name in FAMILIES}
    for program in _programs():
        seen[program.family] += 1
        assert program.kernels, program.name
        for role, entry in program.kernels.items():
            declared = _declared(program.source, entry)
            assert declared == _abi(program, role), f"{program.name} {role}"
    assert all(seen.values()), seen


def test_a_mutated_abi_is_caught():
    """The check above fails on a program whose ABI and source disagree."""
    program = emit(VariantSpec())
    swapped = list(program.extras["init"])
    swapped[1], swapped[2] = swapped[2], swapped[1]
    broken = KernelProgram(
        program.family, program.name, program.source, program.kernels, program.groups,
        {**program.extras, "init": tuple(swapped)},
    )  # fmt: skip
    assert _declared(program.source, program.kernels["init"]) != _abi(broken, "init")


def test_emitters_agree_with_the_family_renderers_and_sizes():
    spec = VariantSpec(sigma=16, update="eager", queue="vss", switching=False)
    assert emit(spec, claims="level").source == render(spec, claims="level")
    block = VariantSpec.block(8, 4)
    assert emit(block).shared_bytes(5000, 96) == block_smem_bytes(5000, 96, 4)
    assert emit(spec).shared_bytes(5000) == 0
    for ms in (MSSpec(8, 4, "queue", "csr"), MSSpec(8, 64, "smem", "csr"), MSSpec(8, 64)):
        assert emit(ms).shared_bytes(3000, 12) == shared_bytes(ms, 3000, 12)
        assert emit(ms).tables == ("CTL", "SLOT")
    assert family_of(DenseSpec()).name == "dense" and emit(DenseSpec()).kernels
    with pytest.raises(ArgumentError, match="no kernel family"):
        emit("not a spec")
