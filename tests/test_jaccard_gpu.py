"""JaccardWithWindows on the GPU: the kernel's permutation equals the CPU paths' exactly."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_util import requires_gpu
from random_graphs import GRAPH_CLASSES, make_hubs, make_power_law

from blest import Graph
from blest.datasets.generators import kronecker
from blest.graph import jaccard as jw
from blest.runtime.device_ordering import device_ordering
from blest.runtime.jaccard_gpu import jaccard_gpu

pytestmark = [pytest.mark.gpu, requires_gpu]


def _cpu(graph: Graph, sigma: int, window: int) -> np.ndarray:
    if jw.have_numba():
        return jw.jaccard_cpu(graph, sigma, window)
    return jw.jaccard_reference(graph, sigma, window)


@pytest.mark.parametrize("sigma", [4, 8, 16, 32])
def test_gpu_equals_cpu_on_random_graphs(rng, sigma):
    for cls, make in sorted(GRAPH_CLASSES.items()):
        n = int(rng.integers(2, 40)) * sigma + int(rng.integers(1, sigma))  # n % sigma != 0
        g = make(rng, n)
        for window in (sigma, sigma * int(rng.integers(2, 9)), 1 << 16):
            gpu = jaccard_gpu(g, sigma, window)
            assert np.array_equal(gpu, _cpu(g, sigma, window)), (cls, n, sigma, window)


def test_gpu_equals_reference_on_small_graphs(rng):
    for _ in range(10):
        g = make_power_law(rng, int(rng.integers(10, 200)))
        sigma = int(rng.choice([4, 8, 16, 32]))
        window = sigma * int(rng.integers(1, 6))
        assert np.array_equal(jaccard_gpu(g, sigma, window), jw.jaccard_reference(g, sigma, window))


@pytest.mark.parametrize("block", [32, 256, 1024])
def test_gpu_block_size_does_not_change_the_result(rng, block):
    g = make_hubs(rng, 700)  # long in-lists: many warps update inter concurrently
    assert np.array_equal(jaccard_gpu(g, 8, 256, block=block), _cpu(g, 8, 256))


@pytest.mark.skipif(not jw.have_numba(), reason="numba (the jit extra) missing")
def test_gpu_equals_cpu_on_kron(rng):
    g = kronecker(14, 16, seed=int(rng.integers(2**31)))
    for sigma, window in ((8, 4096), (8, 1 << 16), (32, 2048)):
        assert np.array_equal(jaccard_gpu(g, sigma, window), jw.jaccard_cpu(g, sigma, window))


def test_device_ordering_uses_the_gpu(rng):
    g = make_power_law(rng, 500)
    perm = device_ordering(g, "jaccard", sigma=8, window=128)  # device=None: GPU when usable
    assert perm.name == "jaccard" and perm.notes == ()
    assert np.array_equal(perm.old_of_new, _cpu(g, 8, 128))
    assert np.array_equal(
        device_ordering(g, "jaccard", window=128, device=0).old_of_new, perm.old_of_new
    )
