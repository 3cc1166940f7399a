"""The multi-source kernels run on the CPU (tests/cuda_cpu.py), one block of 64 threads, with
warp collectives and the binary MMA emulated: every form (grid, block, smem, queue) and expansion
(mma, shuffle, csr) at kappa 32 and 64 (the queue form at 1 to 32, its queues wholly in shared
memory, wholly in global memory, or spilling), buffers laid out as the runner lays them out for
one slot. Levels against SciPy and the sums bit for bit against the CPU reference, on directed,
undirected, disconnected and deep graphs, with repeated sources, eta never, sometimes and
always bottom-up; the pendant harmonic sums bit for bit too, where asked for (else a null
pointer). The gpu-marked tests run every variant on the device."""

from __future__ import annotations

import os

import numpy as np
import pytest
from cuda_cpu import build, have_compiler, run, small_zoo

from blest.codegen.contract import CTL, CTL_WORDS, SLOT_WORDS
from blest.codegen.ms_render import MS_KERNEL, ms_params, render_ms
from blest.codegen.msspec import MSSpec, ms_variants, queue_capacity, shared_bytes
from blest.graph.prepared import Prepared
from blest.reference import bfs_levels
from blest.reference.centrality import source_sums
from blest.runtime.device import out_csr

pytestmark = pytest.mark.skipif(not have_compiler(), reason="needs g++")

THREADS = 64
#: BLEST_CPU_KERNELS=all runs every variant at sigma 8 (28, several minutes) instead of these.
SPECS = [
    MSSpec(8, 32, "grid", "mma"),
    MSSpec(16, 64, "block", "shuffle"),
    MSSpec(4, 64, "block", "mma"),
    MSSpec(8, 32, "block", "csr"),
    MSSpec(32, 64, "grid", "csr"),
    MSSpec(8, 64, "smem", "csr"),
    MSSpec(32, 32, "block", "mma"),
    MSSpec(8, 1, "queue", "csr"),
    MSSpec(8, 4, "queue", "csr"),
    MSSpec(8, 32, "queue", "csr"),
    MSSpec(8, 128, "grid", "shuffle", "vertex"),  # 128-bit pulls
    MSSpec(16, 64, "block", "mma", "vertex"),
    MSSpec(8, 128, "block", "csr", "vertex"),
]
if os.environ.get("BLEST_CPU_KERNELS") == "all":
    SPECS = list(ms_variants(sigma=8))


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    cache = tmp_path_factory.mktemp("k")
    params = [(p.ctype, p.name) for p in ms_params()]
    return {spec: build(render_ms(spec), MS_KERNEL, params, [], cache) for spec in SPECS}


def run_batches(
    exe, spec: MSSpec, prep: Prepared, sources, eta: float, smem_queue: int = 0, pendant=True
):
    """Every batch of ``sources`` in one launch of one block (one slot); levels and sums (the
    pendant sums when ``pendant``, else a null ``pend``)."""
    b, n, k = prep.bvss, prep.n, len(sources)
    rho = b.n_slice_sets
    nvi, dirty = spec.sigma * rho, (rho + 31) // 32
    words = spec.chunks * nvi
    in_ptr = np.asarray(prep.in_ptr, dtype=np.int64)
    in_idx = np.asarray(prep.in_idx, dtype=np.int32)
    arrays = {
        "row_ids": np.asarray(b.row_ids, dtype=np.int32),
        "masks": np.asarray(b.masks, dtype=np.uint32),
        "real_ptrs": np.asarray(b.real_ptrs, dtype=np.int32),
        "in_ptr": in_ptr,
        "in_idx": in_idx,
        "ctl": np.zeros(CTL_WORDS, dtype=np.uint32),
        "sources": np.asarray(sources, dtype=np.int32),
        "levels_out": np.full((k, n), -1, dtype=np.int32),
        "dist": np.zeros(k, dtype=np.uint64),
        "reach": np.zeros(k, dtype=np.uint64),
        "harm": np.zeros(k, dtype=np.float64),
        "pend": np.zeros(k, dtype=np.float64) if pendant else None,
    }
    if spec.expand == "csr":
        arrays["out_ptr"], arrays["out_idx"] = out_csr(np, prep, in_ptr, in_idx)
    smem = shared_bytes(spec, n, smem_queue)
    if spec.form in ("smem", "queue"):
        for name in ("visited", "frontier", "next", "touched", "queued", "cnt"):
            arrays[name] = np.zeros(1, dtype=np.uint32)
        arrays.update(lists=np.zeros(1, np.int32), queue=np.zeros(2, np.int32),
                      slot_ctl=np.zeros(1, np.uint64))  # fmt: skip
        if spec.form == "queue":  # the global queues, poisoned
            cap = queue_capacity(spec.kappa, n)
            arrays["queue"] = np.full(2 * 2 * cap, 0x5A5A5A5A, np.int32)
    else:  # poisoned where the kernel must clear before use
        arrays.update(
            visited=np.full(words, 0xDEADBEEF, np.uint32),
            frontier=np.full(2 * words, 0xDEADBEEF, np.uint32),
            next=np.zeros(words, np.uint32),  # the runner's buffers start zeroed
            touched=np.zeros(nvi // 32 + 1, np.uint32),
            queued=np.zeros(2 * dirty, np.uint32),
            lists=np.zeros(5 * max(n, 1), np.int32),
            queue=np.zeros(2 * 2 * max(b.n_vss, 1), np.int32),
            slot_ctl=np.zeros(SLOT_WORDS, np.uint64),
            cnt=np.zeros(2 * spec.kappa, np.uint32),
        )
    scalars = {"n": n, "rho": rho, "n_vss": b.n_vss, "dirty_words": dirty, "n_sources": k,
               "batch_first": 0, "batch_last": -(-k // spec.kappa), "out_first": 0,
               "eta": float(eta), "smem_queue": smem_queue}  # fmt: skip
    return run(exe, arrays, scalars, THREADS, smem)


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_levels_and_sums(programs, rng, spec):
    for name, graph in small_zoo(rng, 300).items():
        prep = Prepared.from_graph(graph, spec.sigma)
        for eta in (0.0, 2.0, 1e9):
            sources = rng.integers(0, graph.n, int(rng.integers(2, spec.kappa + 9)))
            sources[1] = sources[0]  # a repeat
            smem_queue = int(rng.choice([0, 3, 10_000])) if spec.form == "queue" else 0
            pendant = eta != 2.0
            out = run_batches(programs[spec], spec, prep, sources, eta, smem_queue, pendant)
            assert out["ctl"][CTL["error"]] == 0
            for i, s in enumerate(sources):
                want = bfs_levels(graph, int(s))
                np.testing.assert_array_equal(out["levels_out"][i], want, err_msg=f"{name} {eta}")
            sums = source_sums(graph, sources, reverse=False, pendant=True)
            assert out["dist"].astype(np.int64).tobytes() == sums.dist.tobytes()
            assert out["reach"].astype(np.int64).tobytes() == sums.reach.tobytes()
            assert out["harm"].tobytes() == sums.harmonic.tobytes()
            assert sums.pendant is not None
            assert ("pend" in out) == pendant
            if pendant:
                assert out["pend"].tobytes() == sums.pendant.tobytes(), (name, eta)
