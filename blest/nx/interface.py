"""The object NetworkX loads through the ``networkx.backends`` entry point.

NetworkX calls ``BackendInterface.<function>(...)`` for every function listed in
:data:`blest.nx.info.FUNCTIONS`, after ``can_run`` (the arguments are supported) and, when it
picks a backend by itself (``nx.config.backend_priority``), ``should_run`` (running here pays
off); ``convert_from_nx`` / ``convert_to_nx`` move graphs in and out (NetworkX caches the
converted graph on ``G.__networkx_cache__``).
"""

from __future__ import annotations

import inspect
from typing import Any

from blest.nx import algorithms, betweenness, centrality
from blest.nx.centrality import no_edge_has
from blest.nx.graph import BlestGraph, convert_from_nx, convert_to_nx
from blest.nx.info import FUNCTIONS

__all__ = ["BackendInterface", "can_run", "should_run"]

#: The functions whose ``distance`` argument names an edge weight (elsewhere, as in
#: ``descendants_at_distance``, it is a number of hops, which blest supports).
WEIGHTED = frozenset({"closeness_centrality", "harmonic_centrality"})

#: Graphs smaller than this many edges run faster in NetworkX itself than through a first
#: conversion (converting reads every edge in Python once: on a 300 x 300 grid about twice as
#: long as one NetworkX BFS, so blest pays off from the second or third call on a graph).
SHOULD_RUN_MIN_EDGES = 50_000


def _bound(name: str, args: tuple, kwargs: dict) -> dict[str, Any]:
    try:
        module = next((m for m in (centrality, betweenness) if hasattr(m, name)), algorithms)
        sig = inspect.signature(getattr(module, name))
        return dict(sig.bind_partial(*args, **kwargs).arguments)
    except (AttributeError, TypeError):
        return {}


def can_run(name: str, args: tuple, kwargs: dict) -> bool | str:
    """Whether blest implements ``name`` for these arguments (a string says why not)."""
    if name not in FUNCTIONS:
        return f"blest does not implement {name}"
    bound = _bound(name, args, kwargs)
    weight = bound.get("distance")
    if name in WEIGHTED and weight is not None and not no_edge_has(bound.get("G"), weight):
        return "blest computes unweighted distances only (distance, a weight, is not supported)"
    if bound.get("weight") is not None:
        return "blest computes unweighted betweenness only (weight is not supported)"
    graph = bound.get("G")
    if name == "edge_betweenness_centrality" and getattr(graph, "is_multigraph", bool)():
        return "blest's edge betweenness does not take multigraphs"
    return True


def should_run(name: str, args: tuple, kwargs: dict) -> bool | str:
    """Whether running ``name`` in blest should pay off: the graph is already converted (or a
    :class:`BlestGraph`), or large enough that a first conversion is worth it."""
    graph = _bound(name, args, kwargs).get("G")
    if graph is None or isinstance(graph, BlestGraph):
        return True
    cache = getattr(graph, "__networkx_cache__", None) or {}
    if cache.get("backends", {}).get("blest"):
        return True
    edges = graph.number_of_edges()
    if edges < SHOULD_RUN_MIN_EDGES:
        return f"{edges} edges: NetworkX is faster than a first conversion to blest"
    return True


class BackendInterface:
    """NetworkX's view of blest: the implemented functions and the conversion hooks."""

    convert_from_nx = staticmethod(convert_from_nx)
    convert_to_nx = staticmethod(convert_to_nx)
    can_run = staticmethod(can_run)
    should_run = staticmethod(should_run)
    closeness_centrality = staticmethod(centrality.closeness_centrality)
    harmonic_centrality = staticmethod(centrality.harmonic_centrality)
    betweenness_centrality = staticmethod(betweenness.betweenness_centrality)
    edge_betweenness_centrality = staticmethod(betweenness.edge_betweenness_centrality)
    single_source_shortest_path_length = staticmethod(algorithms.single_source_shortest_path_length)
    bfs_edges = staticmethod(algorithms.bfs_edges)
    bfs_tree = staticmethod(algorithms.bfs_tree)
    bfs_predecessors = staticmethod(algorithms.bfs_predecessors)
    bfs_successors = staticmethod(algorithms.bfs_successors)
    bfs_layers = staticmethod(algorithms.bfs_layers)
    descendants_at_distance = staticmethod(algorithms.descendants_at_distance)
