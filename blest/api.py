"""One-call BFS and validation: any graph blest can load, one source or several seeds, levels
and parents, on the GPU when there is one.

Where it runs (``device=``) follows blest's one policy (:func:`blest.make_engine`): ``None``
takes the GPU when one is usable and otherwise the CPU; ``"cpu"`` runs SciPy's compiled
``breadth_first_order`` (one seed: from it; several seeds: from a virtual super-source joined
to every seed, one SciPy BFS too); ``"emulator"`` runs the NumPy emulator of the GPU kernels;
``"gpu"`` or an index insists on a GPU (the default kernel variant, natural vertex order; for
tuned variants and orderings build an engine with :func:`blest.make_engine` or
:func:`blest.load_tuned`).

Repeated calls. Loading a graph (sorting its arcs) and preparing it for a device (the SciPy
matrix; on a GPU the BVSS, the upload and the compiled kernel) cost more than one BFS, so:

* a NetworkX graph's loaded :class:`~blest.graph.Graph` is kept in its ``__networkx_cache__``,
  which NetworkX clears whenever the graph is changed through its methods (as for its own
  backend conversions); a :class:`~blest.graph.Graph` needs no loading; other inputs (paths,
  SciPy matrices, arrays) are loaded at every call — load them once with
  :func:`blest.load_graph` and pass the Graph to avoid it;
* the prepared runner of the **last** graph used is kept (one graph, one device), keyed by the
  Graph object through a weak reference. Calling with another graph or device, or
  :func:`clear_cache`, releases it — GPU memory included — so that at most one graph's device
  buffers outlive a call. The engine holds its graph, so it stays until replaced or cleared.

Vertex ids. Sources and parents are the input's own ids: on a graph with labels (a NetworkX
graph whose nodes are not ``0 .. n-1``, a DataFrame of string ids, a file read with
``relabel=True``) the labels, so ``bfs(G, "Valjean")`` works; elsewhere the vertex numbers.
Levels have one entry per vertex in vertex order, the order of :func:`vertex_ids` (for a
NetworkX graph, ``list(G)`` unless its nodes are ``0 .. n-1``; for a relabelled file, its ids in
increasing order): ``dict(zip(blest.vertex_ids(G), levels))`` keys them by id.

Calls are serialized by one lock (they share the cached runner).
"""

from __future__ import annotations

import os
import sys
import threading
import weakref
from dataclasses import dataclass
from typing import Any, Literal, overload

import numpy as np

from blest.errors import ArgumentError, ValidationError, VertexError
from blest.graph.core import Graph
from blest.graph.io import load_graph
from blest.graph.labels import ids_to_vertices, parents_as_ids, seeds_of, user_ids
from blest.inputs import ArrayLike, BFSResult, Device, GraphInput, Levels, Seeds
from blest.reference.paths import bfs_paths
from blest.reference.validate import validate_bfs
from blest.runtime.factory import make_engine, resolve_device

__all__ = ["bfs", "clear_cache", "validate", "vertex_ids"]

#: Key of blest's loaded graphs in a NetworkX graph's ``__networkx_cache__``.
NX_CACHE_KEY = "blest.api"

_LOCK = threading.RLock()


@overload
def bfs(
    graph: GraphInput,
    source: Seeds,
    *,
    parents: Literal[False] = False,
    directed: bool | None = None,
    device: Device = None,
    depth_limit: int | None = None,
    paths: Literal[False] = False,
) -> Levels: ...


@overload
def bfs(
    graph: GraphInput,
    source: Seeds,
    *,
    parents: bool = False,
    directed: bool | None = None,
    device: Device = None,
    depth_limit: int | None = None,
    paths: bool = False,
) -> BFSResult: ...


def bfs(
    graph: GraphInput,
    source: Seeds,
    *,
    parents: bool = False,
    directed: bool | None = None,
    device: Device = None,
    depth_limit: int | None = None,
    paths: bool = False,
) -> BFSResult:
    """Breadth-first search of ``graph`` from ``source``.

    Parameters
    ----------
    graph : path, SciPy sparse matrix, NetworkX graph, Graph, ...
        Anything :func:`blest.load_graph` accepts, or a tuned config (``*.json``: its
        prepared graph, labels included, read at every call).
    source : vertex id or sequence of ids
        One source vertex, or several seeds (all at level 0; repeats allowed; at least one),
        in the input's own ids (see the module docstring): ``bfs(G, "Valjean")`` on a
        NetworkX graph of named nodes.
    parents : bool
        Also return a BFS parent of every vertex.
    directed : bool, optional
        Passed to :func:`blest.load_graph` (default: the input's own directedness).
    device : None, "cpu", "emulator", "gpu" or int
        Where to run (see the module docstring).
    depth_limit : int, optional
        Stop after level ``depth_limit`` (vertices further away report -1).
    paths : bool
        Also return the number of shortest paths from the seeds to every vertex (each seed
        counts 1): int64, or float64 with a RuntimeWarning when a count passes int64
        (:mod:`blest.reference.paths`). On a GPU the pull kernel counts them
        (``Engine.bfs_paths``); past int64 the CPU does.

    Returns
    -------
    levels : ndarray of int32
        Level of every vertex in vertex order (:func:`vertex_ids`), -1 for unreached ones.
    (levels, parents) : tuple of ndarray
        With ``parents=True``: ``parents[i]`` is the id of a vertex one level above vertex i
        with an arc to it (any valid BFS parent; which one may differ between devices). For a
        graph without labels: int32, -1 for the seeds and unreached vertices; with integer
        labels that are all >= 0 (relabelled files): int64 labels, -1 for none; with other
        labels: an object array of labels, None for none.
    (levels, counts) or (levels, parents, counts)
        With ``paths=True``: the number of shortest paths from the seeds to every vertex
        come last (0 for unreached vertices; int64, or float64 past int64 with a warning).

    Examples
    --------
    >>> import blest
    >>> g = blest.datasets.grid2d(3, 3)
    >>> blest.bfs(g, 0, device="cpu").reshape(3, 3)
    array([[0, 1, 2],
           [1, 2, 3],
           [2, 3, 4]], dtype=int32)
    >>> blest.bfs(g, [0, 8], device="cpu").reshape(3, 3)
    array([[0, 1, 2],
           [1, 2, 1],
           [2, 1, 0]], dtype=int32)
    >>> levels, counts = blest.bfs(g, 0, paths=True, device="cpu")
    >>> counts.reshape(3, 3)
    array([[1, 1, 1],
           [1, 2, 3],
           [1, 3, 6]])
    """
    if depth_limit is not None:
        depth_limit = _check_depth_limit(depth_limit)
    with _LOCK:
        g = _loaded(graph, directed)
        seeds = seeds_of(g, source)
        where = resolve_device(device)
        runner, keep = _runner(g, where)
        try:
            src = int(seeds[0]) if seeds.size == 1 else seeds
            if paths:
                if hasattr(runner, "bfs_paths"):  # every engine (a GPU one: its pull kernel)
                    result = runner.bfs_paths(src, depth_limit=depth_limit, parents=bool(parents))
                else:
                    result = bfs_paths(g, seeds, depth_limit=depth_limit, parents=bool(parents))
                if parents:  # the input's ids, as without paths
                    return result[0], parents_as_ids(g, result[1]), result[2]
                return result
            if not parents:
                return runner.bfs(src, depth_limit=depth_limit)
            levels, par = runner.bfs(src, depth_limit=depth_limit, parents=True)
        finally:
            if not keep:
                _close(runner)
        return levels, parents_as_ids(g, par)


def validate(
    graph: GraphInput,
    source: Seeds,
    levels: ArrayLike,
    parents: ArrayLike | None = None,
    *,
    directed: bool | None = None,
) -> None:
    """Check a BFS result (the Graph500 checks); raise :class:`blest.ValidationError` naming the
    first failed check, return None when every check passes.

    ``graph``, ``source`` and ``directed`` as in :func:`bfs`; ``levels`` int32 of length n (-1
    unreached); ``parents`` (optional) of length n, as :func:`bfs` returns them (the input's
    ids), a negative entry (or None, where ids are not integers) meaning "no parent" (so
    SciPy's predecessor arrays, with -9999, are accepted). Checks: the parent tree has no cycle
    (a), tree edges join levels one apart (b), every arc u -> v with u reached leads to a
    reached v with ``level[v] <= level[u] + 1`` (c), the reached vertices are exactly those
    reachable from the seeds, i.e. the tree's vertices (d), every tree edge is an arc of the
    graph, parent -> child (e); also that the seeds, and only they, have level 0. Without
    ``parents``, only (c), (d) and the seeds. See :mod:`blest.reference.validate`.
    """
    with _LOCK:
        g = _loaded(graph, directed)
    seeds = seeds_of(g, source)
    if parents is not None and g.labels is not None:
        if np.ndim(parents) != 1 or np.shape(parents)[0] != g.n:
            raise ValidationError("format", f"parents must have one entry per vertex ({g.n})")
        try:
            parents = ids_to_vertices(g, parents)
        except (ArgumentError, VertexError) as exc:
            raise ValidationError("format", f"a parent is not a vertex: {exc}") from None
    validate_bfs(g, seeds, levels, parents)


def vertex_ids(graph: GraphInput, *, directed: bool | None = None) -> np.ndarray:
    """The input's id of every vertex, in the order of every per-vertex result (levels, rows
    of :func:`blest.bfs_many`, scores): the graph's labels (``list(G)`` for a NetworkX graph
    of named nodes, the ids that occur in increasing order for a file read with
    ``relabel=True``), else ``0 .. n-1``. ``graph`` as in :func:`bfs`, or a tuned config
    (``*.json``).

    >>> import blest, networkx as nx
    >>> G = nx.path_graph(["a", "b", "c"])
    >>> dict(zip(blest.vertex_ids(G), blest.bfs(G, "c", device="cpu").tolist()))
    {'a': 2, 'b': 1, 'c': 0}
    """
    with _LOCK:
        return user_ids(_loaded(graph, directed))


def clear_cache() -> None:
    """Release the cached runner (and its GPU memory) of the last graph :func:`bfs` ran on."""
    global _last
    with _LOCK:
        entry, _last = _last, None
    if entry is not None:
        _close(entry.runner)


def _check_depth_limit(depth_limit: Any) -> int:
    if isinstance(depth_limit, (bool, np.bool_)) or not isinstance(depth_limit, (int, np.integer)):
        raise ArgumentError(f"depth_limit must be an integer >= 0, got {depth_limit!r}")
    if depth_limit < 0:
        raise ArgumentError(f"depth_limit must be >= 0, got {depth_limit}")
    return int(depth_limit)


# ---------------------------------------------------------------------- loading
def _loaded(graph: Any, directed: bool | None) -> Graph:
    """The graph loaded, from a NetworkX graph's cache when it is there."""
    if isinstance(graph, (str, os.PathLike)) and os.fspath(graph).lower().endswith(".json"):
        from blest.centrality import graph_of

        return graph_of(graph, directed=directed)  # a tuned config's graph
    if isinstance(graph, Graph):
        return load_graph(graph, directed=directed)
    cache = _nx_cache(graph)
    if cache is None:
        return load_graph(graph, directed=directed)
    mine = cache.get(NX_CACHE_KEY)
    if not isinstance(mine, dict):
        mine = cache[NX_CACHE_KEY] = {}
    if directed not in mine:
        mine[directed] = load_graph(graph, directed=directed)
    return mine[directed]


def _nx_cache(graph: Any) -> dict | None:
    """A NetworkX graph's ``__networkx_cache__`` when caching is on, else None."""
    nx = sys.modules.get("networkx")
    if nx is None or not isinstance(graph, nx.Graph):
        return None
    config = getattr(nx, "config", None)
    if config is not None and not getattr(config, "cache_converted_graphs", True):
        return None
    cache = getattr(graph, "__networkx_cache__", None)
    return cache if isinstance(cache, dict) else None


# ---------------------------------------------------------------------- runners
@dataclass(eq=False)
class _Entry:
    """The cached runner: for the Graph behind ``ref``, on ``device``."""

    ref: weakref.ref
    device: int | str
    runner: Any


_last: _Entry | None = None


def _runner(g: Graph, where: int | str) -> tuple[Any, bool]:
    """(runner, kept in the cache) for ``g`` on ``where`` (a resolved device)."""
    global _last
    entry = _last
    if entry is not None and entry.ref() is g and entry.device == where:
        return entry.runner, True
    runner = _make_runner(g, where)
    try:
        ref = weakref.ref(g, _forget)
    except TypeError:  # pragma: no cover - every Graph takes weak references
        return runner, False
    _last = _Entry(ref, where, runner)
    if entry is not None:
        _close(entry.runner)
    return runner, True


def _make_runner(g: Graph, where: int | str) -> Any:
    """The engine of ``g`` on ``where``, by blest's one policy (``runtime.factory``)."""
    if g.n == 0 and where not in ("cpu", "emulator"):
        raise ArgumentError("the graph has no vertices")
    return make_engine(g, device=where)


def _forget(ref: weakref.ref) -> None:
    """Weak-reference callback: the cached runner's graph is gone."""
    global _last
    entry = _last
    if entry is not None and entry.ref is ref:
        _last = None
        _close(entry.runner)


def _close(runner: Any) -> None:
    close = getattr(runner, "close", None)
    if close is not None:
        close()
