"""JaccardWithWindows on the GPU: one thread block per window.

The kernel is rendered from ``templates/jaccard.cu.j2``
(:func:`blest.codegen.render.render_jaccard`), compiled by NVRTC and launched here; it gives the
same permutation as the CPU implementations in :mod:`blest.graph.jaccard` (the algorithm is
described there).
"""

from __future__ import annotations

import numpy as np

from blest.defaults import DEFAULT_SIGMA, JACCARD_WINDOW
from blest.graph.core import Graph
from blest.graph.jaccard import check_parameters, degree_order

__all__ = ["KERNEL_NAME", "GPU_BLOCK", "jaccard_gpu"]

KERNEL_NAME = "blest_jaccard_windows"
GPU_BLOCK = 512


def jaccard_gpu(
    graph: Graph,
    sigma: int = DEFAULT_SIGMA,
    window: int = JACCARD_WINDOW,
    *,
    device: int | None = None,
    block: int = GPU_BLOCK,
) -> np.ndarray:
    """``old_of_new`` on the GPU: one thread block per window (needs CuPy and an sm_80+ GPU)."""
    sigma, window = check_parameters(graph, sigma, window)
    n = graph.n
    if n == 0:
        return np.zeros(0, dtype=np.int32)
    from blest.codegen.compile import compile_source
    from blest.codegen.render import render_jaccard
    from blest.codegen.toolchain import require_gpu
    from blest.runtime.device_program import launch, load_module

    device_id, arch, _ = require_gpu(device)
    source = render_jaccard(sigma, block, KERNEL_NAME)
    binary = compile_source(source, arch=arch, name="blest_jaccard.cu")
    kernel = load_module(binary, device_id).get_function(KERNEL_NAME)

    import cupy

    with cupy.cuda.Device(device_id):
        out_ptr = cupy.asarray(graph.out_ptr, dtype=cupy.int64)
        out_idx = cupy.asarray(graph.out_idx, dtype=cupy.int32)
        if graph.in_idx is graph.out_idx and graph.in_ptr is graph.out_ptr:
            in_ptr, in_idx = out_ptr, out_idx  # undirected: shared arrays, one upload
        else:
            in_ptr = cupy.asarray(graph.in_ptr, dtype=cupy.int64)
            in_idx = cupy.asarray(graph.in_idx, dtype=cupy.int32)
        by_degree = cupy.asarray(degree_order(graph, window))
        inter = cupy.zeros(n, dtype=cupy.int32)
        placed = cupy.zeros(n, dtype=cupy.uint8)
        queue = cupy.zeros(n, dtype=cupy.int32)
        old_of_new = cupy.full(n, -1, dtype=cupy.int32)
        n_windows = -(-n // window)
        args = (out_ptr, out_idx, in_ptr, in_idx, by_degree, inter, placed, queue, old_of_new)
        launch(kernel, n_windows, block, (*args, np.int32(n), np.int32(window)))
        return cupy.asnumpy(old_of_new)
