"""NetworkX graphs converted for blest, and back.

:class:`BlestGraph` holds a NetworkX graph's structure twice: as a :class:`blest.Graph` (sorted
CSR, what blest's BFS runs on) and as NetworkX's own adjacency order (``succ``: the order in which
``G[u]`` lists the neighbours of u), which fixes the order and the parents of NetworkX's BFS.
Vertex i is the i-th node of ``G``; ``nodes`` maps back to the labels (any hashable). Node,
edge and graph attributes are not kept (the BFS functions read none).

:func:`as_blest` converts at most once per NetworkX graph: the result is stored where NetworkX's
dispatcher stores its conversions (``G.__networkx_cache__["backends"]["blest"]``, under the key
of an attribute-free conversion), so both share it and both lose it when NetworkX clears the
cache after a change to the graph.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from blest.graph.core import Graph

__all__ = ["BlestGraph", "as_blest", "convert_from_nx", "convert_to_nx"]

#: NetworkX's cache key of a conversion without edge or node attributes.
CACHE_KEY = (False, False)


class BlestGraph:
    """A NetworkX graph's structure, ready for blest (see the module docstring)."""

    __networkx_backend__ = "blest"

    def __init__(self, nx_graph: Any) -> None:
        nodes = list(nx_graph)
        self.nodes = nodes
        self.index = {v: i for i, v in enumerate(nodes)}
        self.directed = bool(nx_graph.is_directed())
        self.multigraph = bool(nx_graph.is_multigraph())
        self.graph_attrs = dict(getattr(nx_graph, "graph", {}))
        self.succ = _adjacency(_adj(nx_graph, "_adj", "adj"), nodes, self.index)
        self._origin = weakref.ref(nx_graph)
        self._pred: tuple[np.ndarray, np.ndarray] | None = None if self.directed else self.succ
        self._reversed: Graph | None = None
        self.graph = _blest_graph(self.succ, len(nodes), self.directed)
        self.__networkx_cache__: dict = {}

    # NetworkX-style questions
    def is_directed(self) -> bool:
        return self.directed

    def is_multigraph(self) -> bool:
        return self.multigraph

    def number_of_nodes(self) -> int:
        return len(self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    def __contains__(self, node: Any) -> bool:
        try:
            return node in self.index
        except TypeError:
            return False

    def nbunch_iter(self, nbunch: Any = None) -> list:
        """NetworkX's ``G.nbunch_iter``, as a list: every node (None), one node, or the nodes
        of an iterable that are in the graph, in its order; ``NetworkXError`` as NetworkX's."""
        import networkx as nx

        if nbunch is None:
            return list(self.nodes)
        if nbunch in self:
            return [nbunch]
        try:
            items = iter(nbunch)
        except TypeError:
            raise nx.NetworkXError(f"Node {nbunch} is not in the graph.") from None
        out = []
        for v in items:
            try:
                if v in self.index:
                    out.append(v)
            except TypeError:
                message = f"Node {v} in sequence nbunch is not a valid node."
                raise nx.NetworkXError(message) from None
        return out

    @property
    def pred(self) -> tuple[np.ndarray, np.ndarray]:
        """In-neighbours in NetworkX's order (``G.pred``), read from the NetworkX graph at the
        first use; when that graph is gone, in ascending vertex order."""
        if self._pred is None:
            origin = self._origin()
            if origin is not None and hasattr(origin, "pred"):
                self._pred = _adjacency(_adj(origin, "_pred", "pred"), self.nodes, self.index)
            else:
                self._pred = (self.graph.in_ptr, self.graph.in_idx)
        return self._pred

    @property
    def reversed_graph(self) -> Graph:
        """The blest graph with every arc reversed (BFS over in-arcs)."""
        if not self.directed:
            return self.graph
        if self._reversed is None:
            g = self.graph
            self._reversed = Graph.from_csr(
                g.in_ptr, g.in_idx, g.n, directed=True, in_ptr=g.out_ptr, in_idx=g.out_idx
            )
        return self._reversed

    def __repr__(self) -> str:
        kind = "directed" if self.directed else "undirected"
        return f"<blest.nx.BlestGraph {kind} nodes={len(self.nodes)} arcs={self.graph.nnz}>"


def _adj(nx_graph: Any, private: str, public: str) -> Any:
    return getattr(nx_graph, private, None) or getattr(nx_graph, public)


def _adjacency(adj: Any, nodes: list, index: dict) -> tuple[np.ndarray, np.ndarray]:
    """(ptr, idx) of ``adj`` (node → neighbours) in its own order, self loops included."""
    n = len(nodes)
    degree = np.fromiter((len(adj[u]) for u in nodes), dtype=np.int64, count=n)
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(degree, out=ptr[1:])
    idx = np.fromiter((index[v] for u in nodes for v in adj[u]), dtype=np.int32, count=int(ptr[-1]))
    return ptr, idx


def _blest_graph(succ: tuple[np.ndarray, np.ndarray], n: int, directed: bool) -> Graph:
    ptr, idx = succ
    tails = np.repeat(np.arange(n, dtype=np.int32), np.diff(ptr))
    g = Graph.from_arcs(tails, idx, n, directed=True, source="networkx", format="networkx")
    if directed:
        return g
    # Undirected: NetworkX lists every edge at both ends, so the arcs are already symmetric.
    return Graph.from_csr(g.out_ptr, g.out_idx, n, directed=False, report=g.report)


def convert_from_nx(graph: Any, **kwargs: Any) -> BlestGraph:
    """NetworkX's conversion hook: a :class:`BlestGraph` (attributes are not converted; NetworkX
    caches the result itself)."""
    if isinstance(graph, BlestGraph):
        return graph
    return BlestGraph(graph)


def convert_to_nx(obj: Any, *, name: str | None = None) -> Any:
    """NetworkX's conversion hook back: a :class:`BlestGraph` becomes a NetworkX ``Graph`` or
    ``DiGraph`` (its structure; a multigraph's parallel edges were merged); anything else is
    returned as it is."""
    if not isinstance(obj, BlestGraph):
        return obj
    import networkx as nx

    out = nx.DiGraph() if obj.directed else nx.Graph()
    out.graph.update(obj.graph_attrs)
    out.add_nodes_from(obj.nodes)
    ptr, idx = obj.succ
    tails = np.repeat(np.arange(len(obj.nodes)), np.diff(ptr)).tolist()
    nodes = obj.nodes
    out.add_edges_from((nodes[u], nodes[v]) for u, v in zip(tails, idx.tolist(), strict=True))
    return out


def as_blest(graph: Any) -> BlestGraph:
    """``graph`` as a :class:`BlestGraph`, converted once and cached as NetworkX would."""
    if isinstance(graph, BlestGraph):
        return graph
    if not (hasattr(graph, "is_directed") and hasattr(graph, "adj")):
        raise TypeError(f"expected a NetworkX graph, got {type(graph).__name__}")
    cache = _cache_of(graph)
    found = cache.get(CACHE_KEY) if cache is not None else None
    if isinstance(found, BlestGraph):
        return found
    converted = BlestGraph(graph)
    if cache is not None:
        cache[CACHE_KEY] = converted
    return converted


def _cache_of(graph: Any) -> dict | None:
    """NetworkX's cache of blest conversions on ``graph``, or None when caching is off."""
    import networkx as nx

    if not nx.config.cache_converted_graphs:
        return None
    cache = getattr(graph, "__networkx_cache__", None)
    if not isinstance(cache, dict):
        return None
    return cache.setdefault("backends", {}).setdefault("blest", {})
