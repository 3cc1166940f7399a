"""What the engines share: the prepared graph, the variant, source checks, the generated code,
closing and the context manager. Subclasses implement the traversal."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from blest.codegen.spec import VariantSpec
from blest.defaults import DEFAULT_ALPHA, DEFAULT_ARCH, DEFAULT_BETA
from blest.errors import ArgumentError, EngineError
from blest.graph.prepared import Prepared
from blest.reference.centrality import SourceSums, as_sources
from blest.reference.scipy_bfs import check_seeds, check_source, is_single_seed
from blest.runtime.multi import (
    Progress,
    centrality_sources,
    check_out,
    finish_closeness,
    finish_harmonic,
)
from blest.runtime.protocol import BFSStats

__all__ = ["EngineBase"]


def check_idle_ms(idle_ms: float) -> None:
    """Refuse an idle limit for :meth:`EngineBase.serving` outside (0, 60000] ms."""
    if not (isinstance(idle_ms, (int, float)) and 0 < idle_ms <= 60_000):
        raise ArgumentError(f"idle_ms must be in (0, 60000], got {idle_ms!r}")


class EngineBase:
    """Common state of every engine: ``prepared``, ``spec``, ``eta``, ``beta``, ``alpha``,
    ``n``, ``graph``."""

    device_name = "CPU"
    arch = DEFAULT_ARCH

    def __init__(
        self,
        prepared: Prepared,
        spec: VariantSpec | None,
        eta: float,
        beta: float = DEFAULT_BETA,
        alpha: float = DEFAULT_ALPHA,
    ) -> None:
        if not isinstance(prepared, Prepared):
            raise ArgumentError(
                f"an engine is built from a blest.graph.Prepared, got {type(prepared).__name__}"
            )
        self.spec = spec if spec is not None else VariantSpec(sigma=prepared.sigma)
        if self.spec.sigma != prepared.sigma:
            raise ArgumentError(
                f"the variant has sigma={self.spec.sigma} but the graph was prepared at "
                f"sigma={prepared.sigma}"
            )
        eta, beta, alpha = float(eta), float(beta), float(alpha)
        if not eta >= 0:  # also refuses NaN
            raise ArgumentError(f"eta must be >= 0 (inf allowed), got {eta}")
        if not beta >= 0:
            raise ArgumentError(f"beta must be >= 0 (0: off, inf allowed), got {beta}")
        if not alpha >= 0:
            raise ArgumentError(f"alpha must be >= 0 (0: off, inf allowed), got {alpha}")
        if alpha and self.spec.launch == "per_level":  # as its kernels: no barrier to count at
            raise ArgumentError(f"alpha > 0 needs a persistent variant, not {self.spec.name}")
        self.prepared = prepared
        self.graph = prepared.graph
        self.n = prepared.n
        self.permutation = prepared.permutation
        self.eta = eta
        self.beta = beta
        self.alpha = alpha
        self._new_of_old = np.asarray(prepared.permutation.new_of_old)
        self._lock = threading.RLock()  # engine methods may call bfs
        self._closed = False
        self.last_stats: BFSStats | None = None

    # ------------------------------------------------------------------ served calls
    @contextlib.contextmanager
    def serving(self, idle_ms: float = 20.0) -> Iterator[Any]:
        """Serve plain calls from a kernel that stays on the GPU while the block runs (the
        persistent GPU variants: :meth:`blest.runtime.engine.Engine.serving`); the other
        engines, CPU paths included, run their calls as usual inside it. Yields the engine."""
        check_idle_ms(idle_ms)
        self._check_open()
        yield self

    # ------------------------------------------------------------------ generated code
    @property
    def source(self) -> str:
        """The generated CUDA C++ of this engine's variant."""
        from blest.codegen.render import render

        return render(self.spec)

    @property
    def ptx(self) -> str:
        """PTX of the variant for this engine's GPU architecture (NVRTC; no GPU needed)."""
        from blest.codegen.compile import compile_source

        arch = self.arch.replace("sm_", "compute_")
        return compile_source(self.source, arch=arch, target="ptx").decode()

    # ------------------------------------------------------------------ checks
    def _check_open(self) -> None:
        if self._closed:
            raise EngineError(f"this {type(self).__name__} is closed")

    def _sources(self, src: Any) -> tuple[int, int]:
        """(user id, internal id) of a source vertex."""
        user = check_source(src, self.n)
        return user, int(self._new_of_old[user])

    def _seeds(self, src: Any) -> tuple[np.ndarray, np.ndarray]:
        """(user seeds as given, int64; internal seeds sorted without repeats, int32) of one
        source vertex or a sequence of seeds."""
        if is_single_seed(src):
            user, internal = self._sources(src)
            return np.array([user], dtype=np.int64), np.array([internal], dtype=np.int32)
        user = check_seeds(src, self.n)
        return user, np.unique(self._new_of_old[user]).astype(np.int32)

    @staticmethod
    def _depth_limit(depth_limit: int | None) -> int:
        if depth_limit is None:
            return -1
        limit = int(depth_limit)
        if limit < 0:
            raise ArgumentError(f"depth_limit must be >= 0, got {depth_limit}")
        return limit

    def _check_host_out(self, out: Any) -> None:
        if not isinstance(out, np.ndarray) or out.dtype != np.int32 or out.shape != (self.n,):
            raise ArgumentError(f"out must be an int32 array of shape ({self.n},)")
        if not out.flags.writeable:
            raise ArgumentError("out is read-only")

    def _stats(self, user: np.ndarray, levels: np.ndarray, seeds: int, ms: float) -> BFSStats:
        """Statistics of a CPU call from its levels (user ids)."""
        depth = int(levels.max())
        return BFSStats(
            source=int(user[0]),
            depth=depth,
            visited=int(np.count_nonzero(levels >= 0)),
            levels_run=depth + 1,
            traversal_ms=ms,
            seeds=seeds,
        )

    def _host_result(self, levels: np.ndarray, parents: np.ndarray | None, out: Any) -> Any:
        """A CPU engine's answer: ``out`` (filled) or ``levels``, with ``parents`` if asked."""
        if out is not None:
            np.copyto(out, levels)
            levels = out
        return levels if parents is None else (levels, parents)

    @property
    def stats(self) -> BFSStats:
        """Statistics of the last ``bfs`` call."""
        if self.last_stats is None:
            raise EngineError("no bfs call yet")
        return self.last_stats

    # ------------------------------------------------------------------ many sources
    def bfs_many(self, sources: Any, *, out: Any = None, progress: Progress | None = None) -> Any:
        """Levels from every source: an int32 array of shape ``(len(sources), n)``, row i the
        levels from ``sources[i]`` (user ids; repeats allowed), -1 for unreachable vertices.

        ``out`` may be an int32 array of that shape (a ``numpy.memmap`` for results larger than
        memory); without it, a result that would not fit in memory is refused with its size.
        ``progress(done, total)`` is called as batches of sources finish.
        """
        self._check_open()
        users = as_sources(sources, self.n)
        if users.size == 0:
            raise ArgumentError("bfs_many needs at least one source")
        result = check_out(out, users.size, self.n)
        return self._bfs_many(users, result, progress)

    def source_sums(self, sources: Any = None, *, progress: Progress | None = None) -> SourceSums:
        """Per vertex of ``sources`` (default: every vertex): the exact sum of distances *to*
        it, the number of vertices that reach it (itself included) and the harmonic sum, from
        BFSs over in-arcs (the arcs themselves on an undirected graph)."""
        self._check_open()
        return self._source_sums(centrality_sources(sources, self.n), progress)

    def closeness(
        self, sources: Any = None, *, wf_improved: bool = True, progress: Progress | None = None
    ) -> np.ndarray:
        """Closeness centrality of ``sources`` (default: every vertex, in id order), float64,
        exactly as NetworkX's ``closeness_centrality`` defines it (see docs/design.md)."""
        sums = self.source_sums(sources, progress=progress)
        return finish_closeness(sums, self.n, wf_improved)

    def harmonic(self, sources: Any = None, *, progress: Progress | None = None) -> np.ndarray:
        """Harmonic centrality of ``sources`` (default: every vertex): the sum over the other
        vertices v of 1 / d(v, u), float64, from the same traversals as :meth:`closeness`."""
        return finish_harmonic(self.source_sums(sources, progress=progress))

    # ------------------------------------------------------------------ shortest paths
    def bfs_paths(
        self, src: Any, *, out: Any = None, depth_limit: int | None = None, parents: bool = False
    ) -> tuple[np.ndarray, ...]:
        """``(levels, counts)`` or, with ``parents``, ``(levels, parents, counts)``: levels as
        :meth:`bfs` gives them and the number of shortest paths from the seeds to every vertex
        (int64; float64 past int64, with a RuntimeWarning: :mod:`blest.reference.paths`). Runs
        on the CPU (``bfs(src, paths=True)`` of the CPU engines comes here)."""
        from blest.reference.paths import bfs_paths

        self._check_open()
        if out is not None:
            self._check_host_out(out)
        user, _ = self._seeds(src)
        limit = self._depth_limit(depth_limit)
        result = bfs_paths(
            self.graph, user, depth_limit=None if limit < 0 else limit, parents=parents
        )
        if out is not None:
            np.copyto(out, result[0])
            result = (out, *result[1:])
        return result

    def betweenness(
        self,
        *,
        k: int | None = None,
        seed: Any = None,
        sources: Any = None,
        normalized: bool = True,
        endpoints: bool = False,
        edges: bool = False,
        progress: Progress | None = None,
    ) -> Any:
        """Betweenness centrality as NetworkX defines it (float64 per vertex, user ids), or
        with ``edges=True`` ``(edges, scores)`` of every edge; exact, or from ``k`` sampled
        sources (``seed``) or the given ``sources``. See :mod:`blest.reference.betweenness`;
        an engine with a ``betweenness_runner(edges=, endpoints=)`` runs its batches there."""
        from blest.reference.betweenness import brandes

        self._check_open()
        return brandes(
            self.graph,
            k=k,
            seed=seed,
            sources=sources,
            normalized=normalized,
            endpoints=endpoints,
            edges=edges,
            make_runner=getattr(self, "betweenness_runner", None),
            progress=progress,
        )

    def _bfs_many(self, users: np.ndarray, out: np.ndarray, progress: Progress | None) -> Any:
        raise NotImplementedError

    def _source_sums(self, users: np.ndarray, progress: Progress | None) -> SourceSums:
        raise NotImplementedError

    # ------------------------------------------------------------------ lifetime
    def close(self) -> None:
        """Release what the engine holds; further calls raise :class:`EngineError`."""
        with self._lock:
            self._closed = True
            self._release()

    def _release(self) -> None:
        """Free resources (subclasses); called once, under the lock."""

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = " closed" if self._closed else ""
        name = type(self).__name__
        return f"<blest.{name} {self.spec.name} n={self.n} on {self.device_name}{state}>"
