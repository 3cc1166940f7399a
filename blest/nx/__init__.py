"""A NetworkX backend: ``nx.bfs_edges(G, s, backend="blest")`` and friends run on blest.

Installed with blest (entry points ``networkx.backends`` → :class:`BackendInterface`,
``networkx.backend_info`` → :func:`get_info`). The functions can also be called directly,
``blest.nx.bfs_edges(G, s)``, with a NetworkX graph or a converted :class:`BlestGraph`; results
carry the graph's own node labels. Implemented: see :data:`blest.nx.info.FUNCTIONS`.

Only :func:`get_info` loads at import (NetworkX calls it while importing itself); the rest loads
on first use.
"""

from __future__ import annotations

from typing import Any

from blest.nx.info import FUNCTIONS, get_info

__all__ = [
    "BackendInterface",
    "BlestGraph",
    "FUNCTIONS",
    "as_blest",
    "convert_from_nx",
    "convert_to_nx",
    "get_info",
    *FUNCTIONS,
]

_LAZY = {
    "BackendInterface": "blest.nx.interface",
    "BlestGraph": "blest.nx.graph",
    "as_blest": "blest.nx.graph",
    "convert_from_nx": "blest.nx.graph",
    "convert_to_nx": "blest.nx.graph",
    **dict.fromkeys(FUNCTIONS, "blest.nx.algorithms"),
    "closeness_centrality": "blest.nx.centrality",
    "harmonic_centrality": "blest.nx.centrality",
    "betweenness_centrality": "blest.nx.betweenness",
    "edge_betweenness_centrality": "blest.nx.betweenness",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'blest.nx' has no attribute {name!r}")
