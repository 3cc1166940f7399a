"""Orderings by name, with JaccardWithWindows on the GPU when one is usable.

:func:`device_ordering` is :func:`blest.graph.ordering.compute_ordering` (natural, RCM, and
JaccardWithWindows on the CPU) plus the choice of the GPU kernel for ``"jaccard"``.
"""

from __future__ import annotations

from blest.defaults import DEFAULT_SIGMA, JACCARD_WINDOW
from blest.errors import ArgumentError
from blest.graph import ordering as _cpu
from blest.graph.core import Graph
from blest.graph.ordering import Permutation

__all__ = ["device_ordering"]


def device_ordering(
    graph: Graph,
    name: str,
    *,
    sigma: int = DEFAULT_SIGMA,
    window: int = JACCARD_WINDOW,
    W: int | None = None,
    device: int | str | None = None,
) -> Permutation:
    """The permutation of ordering ``name`` (one of ``natural``, ``rcm``, ``jaccard``).

    ``sigma`` and ``window`` (alias ``W``, the config's key) parametrize JaccardWithWindows;
    ``device`` picks its implementation: ``None`` the GPU when one is usable, else the CPU;
    ``"cpu"``; or a GPU index. Without a GPU and without Numba, ``"jaccard"`` gives RCM with a
    note in ``Permutation.notes``.
    """
    window = window if W is None else W
    if name != "jaccard":
        return _cpu.compute_ordering(graph, name, sigma=sigma, window=window)
    if device is None:
        from blest.codegen.toolchain import have_gpu

        device = None if have_gpu() else "cpu"
    elif isinstance(device, str) and device != "cpu":
        raise ArgumentError(f"device must be None, 'cpu' or a GPU index, got {device!r}")
    if device == "cpu":
        return _cpu.compute_ordering(graph, name, sigma=sigma, window=window)
    from blest.runtime.jaccard_gpu import jaccard_gpu

    old_of_new = jaccard_gpu(graph, sigma, window, device=device)  # type: ignore[arg-type]
    return Permutation.from_old_of_new(old_of_new, "jaccard")
