"""Graphs: loading, cleaning, BVSS construction (reordering and classification come later)."""

from blest.graph.bvss import BVSS, SIGMAS, BVSSStats, build_bvss, u_div
from blest.graph.core import MAX_VERTICES, CleaningReport, Graph
from blest.graph.io import load_graph

__all__ = [
    "BVSS",
    "BVSSStats",
    "CleaningReport",
    "Graph",
    "MAX_VERTICES",
    "SIGMAS",
    "build_bvss",
    "load_graph",
    "u_div",
]
