"""Graphs to try blest on: seeded generators, a bundled real road network, a Matrix Market writer.

Generators (all seeded, vectorized, returning :class:`blest.Graph`): :func:`kronecker` (Graph500 /
GAP kron), :func:`uniform` (GAP urand), :func:`delaunay`, :func:`random_geometric`, :func:`grid2d`,
:func:`road_like` (a road-network stand-in: a perturbed grid). The bundled example is the
OpenStreetMap road network of Luxembourg from the SuiteSparse Matrix Collection (DIMACS10): 114,599
vertices, 239,332 arcs, hundreds of BFS levels (see ``data/README.md`` for the citation and
license).
"""

from __future__ import annotations

from pathlib import Path

from blest.datasets.generators import (
    DEFAULT_SEED,
    delaunay,
    grid2d,
    kronecker,
    random_geometric,
    road_like,
    uniform,
)
from blest.datasets.writers import write_mtx
from blest.graph.core import Graph

__all__ = [
    "DEFAULT_SEED",
    "delaunay",
    "example_path",
    "grid2d",
    "kronecker",
    "load_example",
    "random_geometric",
    "road_like",
    "uniform",
    "write_mtx",
]

_EXAMPLE = "luxembourg_osm.mtx.gz"


def example_path() -> Path:
    """Path of the bundled example graph, ``luxembourg_osm.mtx.gz`` (Matrix Market, gzip)."""
    return Path(__file__).resolve().parent / "data" / _EXAMPLE


def load_example() -> Graph:
    """The bundled example as a :class:`Graph`: undirected, n = 114,599, 239,332 arcs."""
    from blest.graph.io import load_graph

    return load_graph(example_path())
