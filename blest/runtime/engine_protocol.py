"""The engine contract: what every engine offers, whatever runs it (GPU kernels, the kernel
emulator, or SciPy on the CPU), and the records they share.

An engine is built once from a :class:`~blest.graph.prepared.Prepared` graph and a kernel variant
(see :func:`blest.runtime.make_engine`) and then answers many calls. Vertex ids in and out are
always the user's ids; levels are int32 with -1 for unreachable vertices.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from blest.codegen.spec import VariantSpec
from blest.defaults import DEFAULT_BLOCK_SIZE
from blest.errors import ArgumentError

if TYPE_CHECKING:
    from blest.graph.core import Graph

__all__ = ["BFSEngine", "BFSStats", "Geometry"]


@dataclass(frozen=True)
class BFSStats:
    """What one ``bfs`` call did."""

    source: int  # the source (with several seeds: the first one given)
    depth: int  # largest level assigned (0 when only the seeds are reached)
    visited: int  # vertices reached, the seeds included
    levels_run: int  # levels expanded
    traversal_ms: float  # GPU: CUDA events around the traversal after init; CPU: wall time
    bottom_up_levels: tuple[int, ...] = field(default=())
    seeds: int = 1  # distinct seeds (all at level 0)


@dataclass(frozen=True)
class Geometry:
    """Launch geometry of a GPU engine (runtime choices, not reasons to compile a new module).

    ``block_size``: threads per block; ``blocks_per_sm``: blocks per multiprocessor (None: what
    the occupancy API allows); ``grid_blocks``: cap on the blocks of every launch;
    ``small_queue``: persistent single-source variants run levels whose queue holds at most this
    many VSSs in one block (None or 0: never).
    """

    block_size: int = DEFAULT_BLOCK_SIZE
    blocks_per_sm: int | None = None
    grid_blocks: int | None = None
    small_queue: int | None = None

    def __post_init__(self) -> None:
        if self.block_size % 32 or not 32 <= self.block_size <= 1024:
            raise ArgumentError(
                f"block_size must be a multiple of 32 in [32, 1024], got {self.block_size}"
            )
        for name in ("blocks_per_sm", "grid_blocks"):
            value = getattr(self, name)
            if value is not None and int(value) < 1:
                raise ArgumentError(f"{name} must be >= 1, got {value}")
        if self.small_queue is not None and int(self.small_queue) < 0:
            raise ArgumentError(f"small_queue must be >= 0, got {self.small_queue}")


@runtime_checkable
class BFSEngine(Protocol):
    """What every engine offers.

    ``bfs(src, out=None, depth_limit=None, parents=False)`` returns the levels from ``src`` (one
    vertex, or a sequence of seeds all at level 0), or ``(levels, parents)``; ``source`` and
    ``ptx`` are the generated CUDA and its PTX for the engine's variant; ``stats`` describes the
    last call; ``with serving():`` keeps a serving kernel on the GPU between plain calls where
    the variant has one (a no-op elsewhere); ``close()`` frees what the engine holds (also on
    leaving a ``with`` block). ``graph`` is the graph it was built from, in vertex numbers
    ``0 .. n-1`` (``graph.labels``, where set, maps them to the input's ids).
    """

    n: int
    graph: Graph
    spec: VariantSpec
    eta: float
    device_name: str

    def bfs(
        self, src: Any, *, out: Any = None, depth_limit: int | None = None, parents: bool = False
    ) -> Any: ...

    @property
    def source(self) -> str: ...

    @property
    def ptx(self) -> str: ...

    @property
    def stats(self) -> BFSStats: ...

    def serving(self, idle_ms: float = ...) -> AbstractContextManager[Any]: ...

    def close(self) -> None: ...

    def __enter__(self) -> Any: ...

    def __exit__(self, *exc: object) -> None: ...
