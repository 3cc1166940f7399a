"""The pull family without a GPU: its specs and names, the JSON round trip, the default form,
the memory formula, and rendering and NVRTC compilation of every variant (the sources the GPU
runner loads), registered in the family table beside the others."""

from __future__ import annotations

import json

import pytest

from blest.codegen.contract import CTL_FIELDS, CTL_WORDS
from blest.codegen.family import emit, family_of
from blest.codegen.pull_render import pull_extras, pull_params, pull_program, render_pull
from blest.codegen.pullspec import (
    PULL_CTL_WORDS,
    PULL_EARLY,
    PULL_KERNEL,
    PULL_OVERFLOW,
    PullSpec,
    default_pull_form,
    pull_bytes,
    pull_variants,
)
from blest.errors import ArgumentError


def test_variants_names_and_round_trip():
    specs = list(pull_variants())
    assert [s.name for s in specs] == [
        "pull_scalar_pers",
        "pull_scalar_async_pers",
        "pull_scalar_counts_pers",
        "pull_vector_pers",
        "pull_vector_async_pers",
        "pull_vector_counts_pers",
        "pull_hybrid_pers",
        "pull_hybrid_async_pers",
        "pull_hybrid_counts_pers",
    ]
    for s in specs:
        assert PullSpec.from_dict(json.loads(s.to_json())) == s
        assert family_of(s).name == "pull" and emit(s) is pull_program(s)
    bad_ones = ({"form": "matrix"}, {"counts": 1}, {"form": None}, {"format": 7}, {"kappa": 2})
    bad_ones += ({"asynchronous": 1, "counts": False}, {"asynchronous": True, "counts": True})
    for bad in bad_ones:
        with pytest.raises(ArgumentError):
            PullSpec.from_dict(bad)
    old = {k: v for k, v in json.loads(PullSpec("vector", False).to_json()).items()}
    old.pop("asynchronous")  # a spec written before the axis: synchronous
    assert PullSpec.from_dict(old) == PullSpec("vector", False)


def test_the_overflow_word_lies_past_the_common_control_block():
    assert PULL_OVERFLOW >= CTL_WORDS and PULL_CTL_WORDS > PULL_EARLY > PULL_OVERFLOW
    assert all(f.offset + f.words <= CTL_WORDS for f in CTL_FIELDS)


def test_default_form_and_memory():
    assert default_pull_form(1000, 8000) == "scalar"  # 8 in-arcs a vertex
    assert default_pull_form(1000, 8001) == "vector"
    assert default_pull_form(0, 0) == "scalar"
    plain, counts = PullSpec("scalar", False), PullSpec("scalar", True)
    n, arcs = 10_000, 50_000
    for permuted, sigmas in ((False, 1), (True, 2)):
        extra = pull_bytes(counts, n, arcs, permuted=permuted)
        extra -= pull_bytes(plain, n, arcs, permuted=permuted)
        assert extra == 8 * n * sigmas
    early = PullSpec("scalar", False, asynchronous=True)
    assert pull_bytes(early, n, arcs, permuted=False) - pull_bytes(
        plain, n, arcs, permuted=False
    ) == (4 * ((n + 31) // 32))  # a third frontier bitmap
    shared = pull_bytes(plain, n, arcs, permuted=False, in_csr=False)
    assert pull_bytes(plain, n, arcs, permuted=False) - shared == 8 * (n + 1) + 4 * arcs


@pytest.mark.parametrize("spec", list(pull_variants()), ids=lambda s: s.name)
def test_every_variant_renders_and_compiles(spec):
    pytest.importorskip("cupy")
    from blest.codegen.compile import compile_ptx

    source = render_pull(spec)
    assert source == render_pull(spec) and spec.name in source
    assert f"form = {spec.form}" in source
    assert ("p.sigma[v] = " in source) == spec.counts
    assert ("break;  // one is enough" in source) == (not spec.counts)
    together = spec.form != "scalar"  # the warp pulls a vertex together
    assert ("pull_together(" in source) == together
    assert ("__shfl_down_sync(FULL_WARP, sum" in source) == (together and spec.counts)
    assert ("in_fresh(" in source) == spec.asynchronous
    assert ("HYBRID_DEGREE" in source) == (spec.form == "hybrid")
    for p in (*pull_params(spec), *pull_extras()):
        assert f" {p.name}" in source
    assert ("sigma" in {p.name for p in pull_params(spec)}) == spec.counts
    assert PULL_KERNEL.encode() in compile_ptx(spec, arch="sm_90")
