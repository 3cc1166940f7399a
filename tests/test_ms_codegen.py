"""The multi-source variant space without a GPU: specs, rendering, and NVRTC compilation of
every variant (the same sources the GPU runner loads)."""

from __future__ import annotations

import pytest

from blest.codegen.ms_render import MS_KERNEL, ms_params, render_ms
from blest.codegen.msspec import MSSpec, ms_variants
from blest.errors import ArgumentError


def test_variant_space_is_complete_and_named_uniquely():
    specs = list(ms_variants())
    # sigma x (chunk-major kappa 32..256 x (grid and block with any expansion, smem with csr
    # only) + vertex-major kappa 64..512 x grid and block with any expansion + queue kappa)
    assert len(specs) == 4 * (4 * (2 * 3 + 1) + 4 * 2 * 3 + 6)
    assert {s.kappa for s in ms_variants(layout="vertex")} == {64, 128, 256, 512}
    assert {s.form for s in ms_variants(layout="vertex")} == {"grid", "block"}
    with pytest.raises(ArgumentError, match="layout"):
        MSSpec(8, 32, "grid", "mma", "vertex")
    with pytest.raises(ArgumentError, match="layout"):
        MSSpec(8, 64, "smem", "csr", "vertex")
    with pytest.raises(ArgumentError, match="512"):
        MSSpec(8, 512, "grid", "mma")
    assert len({s.name for s in specs}) == len(specs)
    assert {s.form for s in ms_variants(form="block")} == {"block"}
    with pytest.raises(ArgumentError):
        list(ms_variants(bogus=1))
    assert {s.expand for s in ms_variants(form="smem")} == {"csr"}
    with pytest.raises(ArgumentError, match="csr"):
        MSSpec(8, 32, "smem", "mma")
    assert {s.kappa for s in ms_variants(form="queue")} == {1, 2, 4, 8, 16, 32}
    assert {s.expand for s in ms_variants(form="queue")} == {"csr"}
    with pytest.raises(ArgumentError, match="kappa"):
        MSSpec(8, 64, "queue", "csr")
    with pytest.raises(ArgumentError, match="kappa"):
        MSSpec(8, 4, "block", "csr")


@pytest.mark.parametrize(
    "bad", [{"sigma": 5}, {"kappa": 48}, {"form": "cluster"}, {"expand": "x"}, {"kappa": True}]
)
def test_invalid_specs_are_refused(bad):
    with pytest.raises(ArgumentError):
        MSSpec(**bad)


def test_json_round_trip():
    for spec in ms_variants():
        assert MSSpec.from_dict(spec.to_dict()) == spec
    with pytest.raises(ArgumentError):
        MSSpec.from_dict({"format": 2})
    with pytest.raises(ArgumentError):
        MSSpec.from_dict({"sigma": 8, "color": "red"})


def test_rendering_is_deterministic_and_specific():
    for spec in ms_variants():
        src = render_ms(spec)
        assert src == render_ms(spec) and MS_KERNEL in src
        assert f"#define KAPPA {spec.kappa}" in src and f"#define SIGMA {spec.sigma}" in src
        assert ("grid_barrier(" in src) == (spec.form == "grid")
        assert ("slot_hits(mask, alpha" in src) == (spec.expand == "mma")
        assert ("g.out_idx" in src) == (spec.expand == "csr")
        assert ("push_sets(g, bt.queue" in src) == (spec.expand != "csr")
        assert ("queue_expand(g, vis" in src) == (spec.form == "queue")
        for p in ms_params():  # every kernel parameter is declared, in order
            assert f" {p.name}" in src


def test_every_variant_compiles_to_ptx_and_cubin():
    from blest.codegen import toolchain
    from blest.codegen.compile import compile_many

    try:
        toolchain.nvrtc()
    except Exception as exc:  # pragma: no cover - NVRTC wheel missing
        pytest.skip(f"NVRTC unavailable ({exc})")
    specs = list(ms_variants())
    ptx = compile_many(specs, arch="sm_90", target="ptx")
    assert all(MS_KERNEL.encode() in p for p in ptx)
    cubins = compile_many([s for s in specs if s.sigma == 8], arch="sm_80", target="cubin")
    assert all(c.startswith(b"\x7fELF") for c in cubins)
