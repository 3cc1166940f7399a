"""Host-side pieces of the multi-source runner that need no GPU: the out-adjacency the csr
expansion reads (built by the same array calls NumPy and CuPy share), the smem form's shared
memory size, and how launches grow."""

from __future__ import annotations

import numpy as np
import pytest
from random_graphs import make_directed, make_power_law

from blest.codegen.msspec import smem_bytes
from blest.graph.ordering import permute_graph, rcm
from blest.graph.prepared import Prepared
from blest.runtime.device import out_csr
from blest.runtime.ms_runner import _next_step


@pytest.mark.parametrize("make", [make_directed, make_power_law])
def test_out_csr_is_the_reordered_out_adjacency(rng, make):
    graph = make(rng, int(rng.integers(50, 400)))
    perm = rcm(graph)
    prep = Prepared.from_graph(graph, 8, perm)
    ptr, idx = out_csr(np, prep, np.asarray(prep.in_ptr), np.asarray(prep.in_idx))
    want = permute_graph(graph, perm)
    np.testing.assert_array_equal(ptr, want.out_ptr)
    for u in range(graph.n):  # heads per tail as sets: the order within a row may differ
        got = np.sort(idx[ptr[u] : ptr[u + 1]])
        heads = want.out_idx[want.out_ptr[u] : want.out_ptr[u + 1]]
        np.testing.assert_array_equal(got, np.sort(heads))


def test_smem_bytes_counts_three_bitmaps_and_the_counts():
    assert smem_bytes(32, 1000) == 4 * (3 * 1000 + 32)
    assert smem_bytes(256, 1000) == 4 * (3 * 8 * 1000 + 256)


@pytest.mark.parametrize("form", ["block", "smem"])
def test_launches_of_per_block_forms_cover_whole_waves(form):
    for done, seconds in [(132, 0.01), (264, 0.3), (132, 5.0)]:
        step = _next_step(132, done, seconds, 132, form)
        assert step >= 132 and step % 132 == 0
    assert _next_step(1, 1, 0.001, 1, "grid") > 1  # the grid form grows one batch at a time


def test_queue_form_shared_memory_and_capacity():
    from blest.codegen.msspec import MSSpec, queue_capacity, queue_smem_bytes, shared_bytes

    # kappa bits per vertex in whole words, kappa counts, rounded to 8 bytes, then two queues
    assert queue_smem_bytes(1, 100) == 4 * (4 + 1 + 1)
    assert queue_smem_bytes(8, 100, smem_queue=10) == 4 * (25 + 8 + 1) + 160
    assert queue_smem_bytes(32, 3) == 4 * (3 + 32 + 1)
    assert shared_bytes(MSSpec(8, 4, "queue", "csr"), 1000, 7) == queue_smem_bytes(4, 1000, 7)
    assert shared_bytes(MSSpec(8, 32, "block", "csr"), 1000) == 0
    assert queue_capacity(4, 1000) == 4004  # a (vertex, BFS) pair per entry, or a source


def test_queue_form_shared_queue_fits_the_block_and_the_level():
    from blest.codegen.msspec import queue_capacity, queue_smem_bytes
    from blest.runtime.ms_runner import SMEM_QUEUE_MAX, _smem_queue_entries

    block, sm = 223 * 1024, 228 * 1024
    for kappa, n, threads in [(1, 114_599, 256), (2, 114_599, 128), (1, 1_048_576, 1024),
                              (32, 5_000, 1024), (1, 10, 256)]:  # fmt: skip
        got = _smem_queue_entries(kappa, n, threads, block, sm, None)
        assert 0 <= got <= min(SMEM_QUEUE_MAX, queue_capacity(kappa, n))
        assert queue_smem_bytes(kappa, n, got) <= block
    assert _smem_queue_entries(1, 10, 256, block, sm, None) == queue_capacity(1, 10)
    assert _smem_queue_entries(1, 114_599, 256, block, sm, 0) == 0  # asked: none
    asked = _smem_queue_entries(1, 114_599, 256, block, sm, 10**9)  # asked: capped
    assert queue_smem_bytes(1, 114_599, asked) <= block < queue_smem_bytes(1, 114_599, asked + 1)
