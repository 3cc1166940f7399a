"""The single-source persistent kernels run on the CPU (tests/cuda_cpu.py): the init kernel,
then the traversal, as the engine launches them, in one block of 128 threads (the grid barrier
then meets one block), with the binary MMA emulated from its fragment layout. Levels against
SciPy on directed, undirected, disconnected, deep and power-law graphs, for variants covering
every axis of the persistent drivers (sigma, eager and lazy, dirty sets, queue policy,
switching with eta 0, 2 and always bottom-up, small-queue levels in block 0). The gpu-marked
tests run every variant on the device."""

from __future__ import annotations

import os

import numpy as np
import pytest
from cuda_cpu import build, have_compiler, run, small_zoo

from blest.codegen.contract import CTL, CTL_WORDS, frontier_buffers, queue_buffers
from blest.codegen.render import graph_params, kernel_names, render, state_params
from blest.codegen.spec import VariantSpec, variants
from blest.graph.prepared import Prepared
from blest.reference import bfs_levels

pytestmark = pytest.mark.skipif(not have_compiler(), reason="needs g++")

THREADS = 128
#: BLEST_CPU_KERNELS=all runs every persistent variant (40, a few minutes) instead of these.
SPECS = [
    VariantSpec(sigma=8, update="lazy", dirty_sets=False, queue="vss", switching=True),
    VariantSpec(sigma=4, update="lazy", dirty_sets=True, queue="sweep", switching=True),
    VariantSpec(sigma=16, update="lazy", dirty_sets=True, queue="vss", switching=False),
    VariantSpec(sigma=32, update="eager", queue="vss", switching=False),
    VariantSpec(sigma=8, update="eager", queue="sweep", switching=False),
]
if os.environ.get("BLEST_CPU_KERNELS") == "all":
    SPECS = list(variants(launch="persistent"))


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    cache = tmp_path_factory.mktemp("k")
    out = {}
    for spec in SPECS:
        params = [(p.ctype, p.name) for p in graph_params(spec) + state_params(spec)]
        names = kernel_names(spec)
        launches = [
            (names["init"], [("const int*", "seeds"), ("int", "n_seeds"), ("int", "src")]),
            (names["bfs"], [("int", "depth_limit"), ("double", "eta"),
                            ("unsigned int", "small_queue")]),
        ]  # fmt: skip
        out[spec] = build(render(spec), launches, params, [], cache)
    return out


def traverse(exe, spec: VariantSpec, prep: Prepared, src: int, eta: float, small: int):
    b, n = prep.bvss, prep.n
    words = (n + 31) // 32
    arrays = {
        "row_ids": np.asarray(b.row_ids, dtype=np.int32),
        "masks": np.asarray(b.masks, dtype=np.uint32),
        "real_ptrs": np.asarray(b.real_ptrs, dtype=np.int32),
        "virtual_to_real": np.asarray(b.virtual_to_real, dtype=np.int32),
        "visited": np.full(words, 0xDEADBEEF, dtype=np.uint32),  # poisoned: init must clear
        "frontier": np.full(frontier_buffers(spec) * words, 0xDEADBEEF, dtype=np.uint32),
        "ctl": np.full(CTL_WORDS, 77, dtype=np.uint32),
        "bottom_up_levels": np.full(words, 0xDEADBEEF, dtype=np.uint32),
        "levels": np.full(n, 0x5A5A5A5A, dtype=np.int32),
    }
    scalars = {"n": n, "n_words": words, "n_vss": b.n_vss, "n_sets": b.n_slice_sets,
               "n_seeds": 1, "src": src, "depth_limit": -1, "eta": float(eta),
               "small_queue": small}  # fmt: skip
    if spec.switching:
        arrays["in_ptr"] = np.asarray(prep.in_ptr, dtype=np.int64)
        arrays["in_idx"] = np.asarray(prep.in_idx, dtype=np.int32)
    if spec.update == "lazy":
        arrays["v_next"] = np.full(words, 0xDEADBEEF, dtype=np.uint32)
    if spec.dirty_sets:
        dirty = (words + 31) // 32
        arrays["dirty"] = np.full(2 * dirty, 0xDEADBEEF, dtype=np.uint32)
        scalars["dirty_words"] = dirty
    if spec.queue == "vss":
        arrays["queue"] = np.zeros(2 * queue_buffers(spec) * max(b.n_vss, 1), dtype=np.int32)
    out = run(exe, arrays, scalars, THREADS, 0)
    return out["levels"], out["ctl"]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_levels_match_scipy(programs, rng, spec):
    for name, graph in small_zoo(rng, 360).items():
        prep = Prepared.from_graph(graph, spec.sigma)
        for eta, small in ((2.0, 0), (1e9, 0), (0.0, 16)):
            src = int(rng.choice(np.flatnonzero(graph.out_degree > 0)))
            levels, ctl = traverse(programs[spec], spec, prep, src, eta, small)
            want = bfs_levels(graph, src)
            np.testing.assert_array_equal(levels, want, err_msg=f"{name} eta={eta} sq={small}")
            assert ctl[CTL["error"]] == 0
            assert ctl[CTL["visited"]] == np.count_nonzero(want >= 0)
            assert np.int32(ctl[CTL["depth"]]) == want.max()
