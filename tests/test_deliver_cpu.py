"""The deliver pass (deliver.cu.j2) on the CPU (tests/cuda_cpu.py): the levels to the caller's
destination in the user's ids (user id ``old_of_new[i]`` gets internal vertex i's level; the
pass gathers by ``new_of_old``), and the control block to ``ctl_out``. On graphs in their own
ids, vertices outside ``visited`` get -1 whatever the engine's buffer holds for them, also when
the destination is that buffer itself (a fused call's levels). Sizes that take several batched
rounds of the grid stride and end in a partial one; permuted and identity orderings; every
destination word poisoned first. The gpu-marked tests cover the pass inside the engine."""

from __future__ import annotations

import numpy as np
import pytest
from cuda_cpu import build, have_compiler, run

from blest.codegen.contract import CTL_WORDS
from blest.codegen.render import graph_params, kernel_names, render, state_params
from blest.codegen.spec import VariantSpec

pytestmark = pytest.mark.skipif(not have_compiler(), reason="needs g++")

THREADS = 64
SPECS = [
    VariantSpec(sigma=32, update="eager", queue="vss", switching=False),
    VariantSpec.csr(8, switching=True),
    VariantSpec.block(8),
]


def _probe(spec: VariantSpec) -> str:
    """The rendered module plus a kernel that calls its deliver kernel with a destination slot
    holding ``user_out``'s address, or with ``in_place``, the engine's ``levels`` (host
    addresses stand for device ones on the CPU)."""
    params = graph_params(spec) + state_params(spec)
    decl = ", ".join(f"{p.ctype} {p.name}" for p in params)
    args = ", ".join(p.name for p in params)
    deliver = kernel_names(spec)["deliver"]
    return render(spec) + (
        f'\nextern "C" __global__ void deliver_probe({decl}, int* user_out, u32* ctl_out, '
        "int in_place) {\n"
        "    const unsigned long long slot = (unsigned long long)(in_place ? levels : user_out);\n"
        f"    {deliver}({args}, &slot, ctl_out);\n}}\n"
    )


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    cache = tmp_path_factory.mktemp("deliver")
    out = {}
    for spec in SPECS:
        params = [(p.ctype, p.name) for p in graph_params(spec) + state_params(spec)]
        extra = [("int*", "user_out"), ("u32*", "ctl_out"), ("int", "in_place")]
        out[spec] = build(_probe(spec), "deliver_probe", params, extra, cache)
    return out


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
@pytest.mark.parametrize("n", [1, 37, 512, 2500], ids=lambda n: f"n{n}")
@pytest.mark.parametrize("permuted", [False, True], ids=["identity", "permuted"])
def test_deliver_writes_user_ids(programs, rng, spec, n, permuted):
    levels = rng.integers(-1, 50, n).astype(np.int32)
    old_of_new = rng.permutation(n).astype(np.int32) if permuted else None
    ctl = rng.integers(0, 2**32, CTL_WORDS, dtype=np.uint64).astype(np.uint32)
    arrays = {
        "ctl": ctl,
        "user_out": np.full(n, 0x5A5A5A5A, dtype=np.int32),
        "ctl_out": np.full(CTL_WORDS, 99, dtype=np.uint32),
    }
    if spec.launch == "block":
        # The block kernel wrote the user's ids already (user_levels when reordered).
        arrays["levels"] = np.full(n, -9, dtype=np.int32) if permuted else levels
        arrays["user_levels"] = levels if permuted else None
        want = levels
    else:
        arrays["levels"] = levels
        arrays["old_of_new"] = old_of_new
        arrays["new_of_old"] = (
            None if old_of_new is None else np.argsort(old_of_new).astype(np.int32)
        )
        want = levels.copy()
        if permuted:
            want[old_of_new] = levels
        else:  # visited decides: what the buffer holds for the others is never read
            arrays["visited"] = _bits(levels >= 0)
            arrays["levels"] = np.where(levels >= 0, levels, rng.integers(-9, 99, n)).astype(
                np.int32
            )
    scalars = {p.name: 0 for p in graph_params(spec) + state_params(spec) if "*" not in p.ctype}
    scalars.update(n=n, n_words=(n + 31) // 32, in_place=0)
    out = run(programs[spec], arrays, scalars, THREADS, 0)
    np.testing.assert_array_equal(out["user_out"], want)
    np.testing.assert_array_equal(out["ctl_out"], ctl)


@pytest.mark.parametrize("spec", [s for s in SPECS if s.launch != "block"], ids=lambda s: s.name)
@pytest.mark.parametrize("n", [1, 37, 2500], ids=lambda n: f"n{n}")
@pytest.mark.parametrize("top", [2, 50], ids=["half", "few"])
def test_deliver_in_place_writes_only_the_unvisited(programs, rng, spec, n, top):
    """A fused call's levels were written straight into the destination: the pass writes -1
    outside visited and leaves every visited vertex's word as it found it (a share 1 / (top + 1)
    of the vertices unvisited, so that some words are whole and some are not)."""
    levels = rng.integers(-1, top, n).astype(np.int32)
    seen = levels >= 0
    held = np.where(seen, levels, rng.integers(-9, 99, n)).astype(np.int32)
    ctl = rng.integers(0, 2**32, CTL_WORDS, dtype=np.uint64).astype(np.uint32)
    arrays = {
        "ctl": ctl,
        "levels": held,
        "visited": _bits(seen),
        "user_out": np.full(n, 0x5A5A5A5A, dtype=np.int32),
        "ctl_out": np.full(CTL_WORDS, 99, dtype=np.uint32),
    }
    scalars = {p.name: 0 for p in graph_params(spec) + state_params(spec) if "*" not in p.ctype}
    scalars.update(n=n, n_words=(n + 31) // 32, in_place=1)
    out = run(programs[spec], arrays, scalars, THREADS, 0)
    np.testing.assert_array_equal(out["levels"], levels)
    np.testing.assert_array_equal(out["user_out"], np.full(n, 0x5A5A5A5A, dtype=np.int32))
    np.testing.assert_array_equal(out["ctl_out"], ctl)


def _bits(mask: np.ndarray) -> np.ndarray:
    """A boolean vector as the kernels' bitmap: bit i % 32 of u32 word i // 32."""
    words = (mask.size + 31) // 32
    packed = np.zeros(4 * words, dtype=np.uint8)
    bits = np.packbits(mask, bitorder="little")
    packed[: bits.size] = bits
    return packed.view(np.uint32)
