"""The Brandes kernel family without a GPU: its specs, rendering, and NVRTC compilation of every
variant; the compiled code does every float operation of the sums as an IEEE double operation
rounded to nearest, never fused (the CPU runner's bits depend on it)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from blest.codegen.bc_render import bc_params, bc_program, render_bc
from blest.codegen.bcspec import (
    BC_COMBINE_KERNEL,
    BC_KERNEL,
    BC_QUEUE_HEAD_WORDS,
    BC_SHARED_BYTES,
    BCSpec,
    bc_variants,
    queue_shared_bytes,
    slot_bytes,
    wide_vertices,
)
from blest.codegen.family import emit, family_of
from blest.errors import ArgumentError


def test_variant_space_names_and_round_trip():
    specs = list(bc_variants())
    assert len(specs) == 10 and len({s.name for s in specs}) == 10
    assert {s.name for s in specs} >= {"bc_k32_block", "bc_k8_grid", "bc_k1_queue", "bc_k8_queue"}
    for spec in specs:
        assert BCSpec.from_dict(spec.to_dict()) == spec
        assert spec.groups * spec.kappa == 32
        assert family_of(spec).name == "betweenness" and emit(spec) is bc_program(spec)
    assert BCSpec() == BCSpec(32, "block")


@pytest.mark.parametrize(
    "bad",
    [{"kappa": 64}, {"kappa": 4}, {"kappa": True}, {"form": "smem"}, {"kappa": 32.0},
     {"kappa": 16, "form": "queue"}, {"kappa": 2, "form": "grid"}],
)  # fmt: skip
def test_invalid_specs_are_refused(bad):
    with pytest.raises(ArgumentError):
        BCSpec(**bad)
    with pytest.raises(ArgumentError):
        BCSpec.from_dict(bad)


def test_json_errors():
    with pytest.raises(ArgumentError, match="format"):
        BCSpec.from_dict({"format": 2})
    with pytest.raises(ArgumentError, match="unknown"):
        BCSpec.from_dict({"kappa": 8, "sigma": 8})


def test_slot_bytes_count_every_buffer():
    # 20 bytes per pair (level, sigma, delta) and 8 per queue entry; visited, next and the
    # level offsets (queue, wide list) per vertex; kappa wide entries per wide vertex; the
    # counters.
    base = 28 * 8000 + 8 * 1000 + 16 * 1002 + 8 * 48
    assert slot_bytes(BCSpec(8), 1000) == base + 8
    assert slot_bytes(BCSpec(8), 1000, wide=5) == base + 8 * 40
    assert slot_bytes(BCSpec(32), 1000) > slot_bytes(BCSpec(16), 1000)
    # the queue form: pairs (level, sigma, delta; the queue), visited words, level offsets
    assert slot_bytes(BCSpec(2, "queue"), 1000) == 28 * 2000 + 4 * 1000 + 16 * 1002 + 8 * 48
    assert queue_shared_bytes(2, 1000, False) == 4 * BC_QUEUE_HEAD_WORDS
    assert queue_shared_bytes(2, 1000, True) == 4 * BC_QUEUE_HEAD_WORDS + 4 * 63
    indeg, outdeg = np.array([0, 5, 9, 2]), np.array([9, 1, 0, 2])
    assert wide_vertices(indeg, outdeg, 5) == 3 and wide_vertices(indeg, outdeg, 0) == 4


def test_rendering_is_deterministic_and_specific():
    for spec in bc_variants():
        src = render_bc(spec)
        assert src == render_bc(spec) and f"#define KAPPA {spec.kappa}" in src
        assert ("grid_barrier(" in src) == (spec.form == "grid")
        assert ("atomicAdd(st.ctl + CTL_NEXT_BATCH" in src) == (spec.form != "grid")
        for entry in (BC_KERNEL, BC_COMBINE_KERNEL):
            assert f"void __launch_bounds__(1024) {entry}(" in src
        for p in bc_params():
            assert f" {p.name}" in src
        program = bc_program(spec)
        if spec.form == "queue":  # the head, and kappa visited bits per vertex
            assert program.shared_bytes(10**6) == queue_shared_bytes(spec.kappa, 10**6, True)
        else:
            assert program.shared_bytes(10**6) == BC_SHARED_BYTES
        assert set(program.kernels) == {"bc", "combine"}


def test_every_variant_compiles_without_fused_or_approximate_arithmetic():
    from blest.codegen import toolchain
    from blest.codegen.compile import compile_many

    try:
        toolchain.nvrtc()
    except Exception as exc:  # pragma: no cover - NVRTC wheel missing
        pytest.skip(f"NVRTC unavailable ({exc})")
    specs = list(bc_variants())
    for spec, ptx in zip(specs, compile_many(specs, arch="sm_90", target="ptx"), strict=True):
        text = ptx.decode()
        assert BC_KERNEL in text and BC_COMBINE_KERNEL in text, spec.name
        doubles = set(re.findall(r"\b((?:fma|add|sub|mul|div|rcp)\.[\w.]*f64)", text))
        assert doubles == {"add.rn.f64", "mul.rn.f64", "div.rn.f64"}, (spec.name, doubles)
    cubins = compile_many(specs[:2], arch="sm_80", target="cubin")
    assert all(c.startswith(b"\x7fELF") for c in cubins)
