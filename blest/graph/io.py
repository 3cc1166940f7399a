"""Graph loading (placeholder until the loader lands)."""

from __future__ import annotations

from blest.graph.core import Graph


def load_graph(source, *, directed=None) -> Graph:  # pragma: no cover - replaced by the loader
    raise NotImplementedError
