"""What the CPU engines share (:class:`~blest.runtime.cpu.CPUEngine`, SciPy's BFS, and
:class:`~blest.runtime.emulated.EmulatedEngine`, the kernel emulator): the prepared graph, the
variant a GPU would run, the checks of a call, the generated code, many-source calls through
:meth:`HostEngine._bfs_many` and :meth:`HostEngine._source_sums`, closing and the context
manager. Subclasses implement the traversal."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from blest.codegen.spec import VariantSpec
from blest.defaults import DEFAULT_ALPHA, DEFAULT_ARCH, DEFAULT_BETA, DEFAULT_SIGMA
from blest.errors import ArgumentError, EngineError, GPUUnavailableError
from blest.graph.core import Graph
from blest.graph.ordering import Permutation, identity
from blest.graph.prepared import Prepared
from blest.reference.centrality import SourceSums, closeness_from_sums, harmonic_from_sums
from blest.runtime import arguments
from blest.runtime.arguments import Progress, RuleSetting, call_rules, check_idle_ms
from blest.runtime.engine_protocol import BFSStats

__all__ = ["HostEngine"]


class _Unprepared:
    """A graph in its own ids that no engine has prepared: what SciPy's BFS runs on. It
    answers what an engine reads of a preparation (``graph``, ``n``, ``sigma``, the identity
    ``permutation``) and prepares itself only if asked for more."""

    def __init__(self, graph: Graph, sigma: int) -> None:
        self.graph, self.n, self.sigma = graph, graph.n, sigma
        self.permutation: Permutation = identity(graph.n)

    def prepare(self) -> Prepared:
        return Prepared.from_graph(self.graph, self.sigma)


class HostEngine:
    """Common state of the CPU engines: ``prepared``, ``spec``, ``eta``, ``beta``, ``alpha``,
    ``n``, ``graph``."""

    device_name = "CPU"
    arch = DEFAULT_ARCH

    def __init__(
        self,
        prepared: Prepared | Graph,
        spec: VariantSpec | None,
        eta: float,
        beta: float = DEFAULT_BETA,
        alpha: float = DEFAULT_ALPHA,
    ) -> None:
        prep: Prepared | _Unprepared | Graph = prepared
        if isinstance(prep, Graph):  # SciPy's BFS needs no preparation; the emulator does
            prep = _Unprepared(prep, spec.sigma if spec is not None else DEFAULT_SIGMA)
        if not isinstance(prep, (Prepared, _Unprepared)):
            raise ArgumentError(
                "an engine is built from a blest.Graph or a blest.graph.Prepared, got "
                f"{type(prep).__name__}"
            )
        self.spec = spec if spec is not None else VariantSpec(sigma=prep.sigma)
        if self.spec.sigma != prep.sigma:
            raise ArgumentError(
                f"the variant has sigma={self.spec.sigma} but the graph was prepared at "
                f"sigma={prep.sigma}"
            )
        if alpha and self.spec.launch == "per_level":  # as its kernels: no barrier to count at
            raise ArgumentError(f"alpha > 0 needs a persistent variant, not {self.spec.name}")
        self._rules = call_rules(eta, beta, alpha, 0, True)
        self._prep = prep
        self.graph = prep.graph
        self.n = prep.n
        self.permutation = prep.permutation
        self._new_of_old = np.asarray(prep.permutation.new_of_old)
        self._lock = threading.RLock()  # engine methods may call bfs
        self._closed = False
        self.last_stats: BFSStats | None = None

    @property
    def prepared(self) -> Prepared:
        """The prepared graph (an engine built from a Graph prepares it when asked)."""
        if isinstance(self._prep, _Unprepared):
            self._prep = self._prep.prepare()
        return self._prep

    # ------------------------------------------------------------------ settings
    #: The rules of the next calls (a CPU engine keeps them for the kernel it stands for).
    eta = RuleSetting[float]()
    beta = RuleSetting[float]()
    alpha = RuleSetting[float]()

    # ------------------------------------------------------------------ served calls
    @contextlib.contextmanager
    def serving(self, idle_ms: float = 20.0) -> Iterator[Any]:
        """No serving kernel on the CPU: calls run as usual inside the block. Yields the
        engine."""
        check_idle_ms(idle_ms)
        self._check_open()
        yield self

    # ------------------------------------------------------------------ generated code
    @property
    def source(self) -> str:
        """The generated CUDA C++ of this engine's variant (the kernel a GPU would run)."""
        from blest.codegen.render import render

        return render(self.spec)

    @property
    def ptx(self) -> str:
        """PTX of the variant (NVRTC; no GPU needed)."""
        from blest.codegen.compile import compile_source

        arch = self.arch.replace("sm_", "compute_")
        return compile_source(self.source, arch=arch, target="ptx").decode()

    # ------------------------------------------------------------------ checks
    def _check_open(self) -> None:
        if self._closed:
            raise EngineError(f"this {type(self).__name__} is closed")

    def _seeds(self, src: Any) -> tuple[np.ndarray, np.ndarray]:
        """(user seeds as given, int64; internal seeds sorted without repeats, int32)."""
        return arguments.seeds(src, self.n, self._new_of_old)

    def _check_out(self, out: Any) -> None:
        if isinstance(out, str):
            if out == "device":
                raise GPUUnavailableError("out='device' (a CuPy array) needs a GPU engine")
            raise ArgumentError(
                f"out={out!r}: this engine runs on the CPU and returns NumPy arrays (pass None "
                "or an int32 NumPy array to fill)"
            )
        if out is not None:
            arguments.check_host_out(out, self.n)

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
        """Levels from every source: an int32 array of shape ``(len(sources), n)`` (see
        :meth:`blest.runtime.engine.Engine.bfs_many`)."""
        self._check_open()
        users = arguments.bfs_many_sources(sources, self.n)
        result = arguments.many_out(out, users.size, self.n)
        return self._bfs_many(users, result, progress)

    def source_sums(
        self, sources: Any = None, *, progress: Progress | None = None, pendant: bool = False
    ) -> SourceSums:
        """Per vertex of ``sources`` (default: every vertex): the exact sum of distances *to*
        it, the number of vertices that reach it (itself included) and the harmonic sum, from
        BFSs over in-arcs (the arcs themselves on an undirected graph); with ``pendant``, also
        the pendant harmonic sum (:mod:`blest.reference.centrality`)."""
        self._check_open()
        users = arguments.centrality_sources(sources, self.n)
        return self._source_sums(users, progress, pendant)

    def closeness(
        self, sources: Any = None, *, wf_improved: bool = True, progress: Progress | None = None
    ) -> np.ndarray:
        """Closeness centrality of ``sources`` (default: every vertex, in id order), float64,
        exactly as NetworkX's ``closeness_centrality`` defines it (see docs/design.md)."""
        sums = self.source_sums(sources, progress=progress)
        return closeness_from_sums(sums, self.n, wf_improved=wf_improved)

    def harmonic(self, sources: Any = None, *, progress: Progress | None = None) -> np.ndarray:
        """Harmonic centrality of ``sources`` (default: every vertex): the sum over the other
        vertices v of 1 / d(v, u), float64, from the same traversals as :meth:`closeness`."""
        return harmonic_from_sums(self.source_sums(sources, progress=progress))

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
        self._check_out(out)
        user, _ = self._seeds(src)
        limit = arguments.depth_limit(depth_limit)
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

    def _source_sums(
        self, users: np.ndarray, progress: Progress | None, pendant: bool
    ) -> SourceSums:
        raise NotImplementedError

    # ------------------------------------------------------------------ lifetime
    def close(self) -> None:
        """Release what the engine holds (its graph too); further calls raise
        :class:`EngineError`."""
        with self._lock:
            self._closed = True
            self._prep = self.graph = None  # type: ignore[assignment]
            self._release()

    def _release(self) -> None:
        """Drop what a subclass holds besides the graph (called once, by :meth:`close`)."""

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = " closed" if self._closed else ""
        name = type(self).__name__
        return f"<blest.{name} {self.spec.name} n={self.n} on {self.device_name}{state}>"
