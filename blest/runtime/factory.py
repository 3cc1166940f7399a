"""One constructor for every engine, and the one policy of where a call runs: a graph, a
variant, and a device (the GPU when one is usable, else SciPy on the CPU)."""

from __future__ import annotations

from blest.codegen.spec import VariantSpec
from blest.defaults import DEFAULT_ALPHA, DEFAULT_BETA, DEFAULT_ETA, DEFAULT_SIGMA
from blest.errors import ArgumentError
from blest.graph.core import Graph
from blest.graph.prepared import Prepared
from blest.runtime.engine_protocol import BFSEngine, Geometry

__all__ = ["DEVICES", "make_engine", "resolve_device"]

#: What ``device=`` accepts besides a GPU index.
DEVICES = ("gpu", "cpu", "emulator")


def resolve_device(device: int | str | None) -> int | str:
    """``None`` → a GPU index when a usable GPU exists, else ``"cpu"``; ``"gpu"`` → the
    current GPU (or :class:`~blest.errors.GPUUnavailableError`); other values are checked."""
    if device is None:
        from blest.codegen.toolchain import have_gpu

        device = "gpu" if have_gpu() else "cpu"
    if device == "gpu":
        from blest.codegen.toolchain import require_gpu

        return require_gpu(None)[0]
    if isinstance(device, bool) or not isinstance(device, (int, str)):
        raise ArgumentError(f"device must be None, a GPU index or one of {DEVICES}, got {device!r}")
    if isinstance(device, str) and device not in DEVICES:
        raise ArgumentError(f"device must be None, a GPU index or one of {DEVICES}, got {device!r}")
    if isinstance(device, int) and device < 0:
        raise ArgumentError(f"a GPU index must be >= 0, got {device}")
    return device


def make_engine(
    graph: Prepared | Graph,
    spec: VariantSpec | None = None,
    *,
    eta: float = DEFAULT_ETA,
    beta: float = DEFAULT_BETA,
    alpha: float = DEFAULT_ALPHA,
    geometry: Geometry | None = None,
    device: int | str | None = None,
    record_levels: bool = False,
) -> BFSEngine:
    """An engine for ``graph`` running ``spec``: blest's one policy of where a call runs, which
    the one-call API, the command line, the tuner and ``load_tuned`` all follow.

    ``device``: ``None`` runs on the GPU when one is usable and else with SciPy's compiled BFS
    on the CPU; ``"gpu"`` or an index insists on a GPU; ``"cpu"`` is SciPy's BFS
    (:class:`~blest.runtime.cpu.CPUEngine`, which needs no preparation); ``"emulator"`` is the
    exact NumPy emulator of the kernel (:class:`~blest.runtime.emulated.EmulatedEngine`).
    ``graph``: a :class:`Prepared` graph, used as it is (nothing is re-ordered or re-sorted),
    or a :class:`Graph` in the user's ids, prepared where the engine needs it (on the GPU, the
    BVSS is built there) at ``spec.sigma`` in its own order. ``spec`` defaults to the paper's
    variant at the preparation's sigma.
    """
    sigma = graph.sigma if isinstance(graph, Prepared) else DEFAULT_SIGMA
    spec = spec if spec is not None else VariantSpec(sigma=sigma)
    where = resolve_device(device)
    if where == "cpu":
        from blest.runtime.cpu import CPUEngine

        return CPUEngine(graph, spec, eta=eta, beta=beta, alpha=alpha)
    if where == "emulator":
        from blest.runtime.emulated import EmulatedEngine

        return EmulatedEngine(graph, spec, eta=eta, beta=beta, alpha=alpha)
    from blest.runtime.engine import Engine

    g = geometry or Geometry()
    return Engine(
        graph,
        spec,
        eta=eta,
        beta=beta,
        alpha=alpha,
        device=int(where),
        block_size=g.block_size,
        blocks_per_sm=g.blocks_per_sm,
        grid_blocks=g.grid_blocks,
        small_queue=g.small_queue,
        record_levels=record_levels,
    )
