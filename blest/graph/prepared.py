"""A graph prepared for the kernels: the user's graph, its ordering, the reordered in-adjacency
and the BVSS of the reordered graph at one slice width sigma.

This is the one seam between preparing a graph and running it: an engine (GPU or CPU) is built
from a :class:`Prepared` and never re-sorts or re-orders it. A prepared artifact on disk holds
exactly these arrays.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from blest.defaults import DEFAULT_SIGMA
from blest.errors import ArgumentError
from blest.graph.bvss import BVSS, build_bvss, to_host
from blest.graph.core import Graph
from blest.graph.ordering import Permutation, identity, permute_graph

__all__ = ["Prepared"]


@dataclass(frozen=True, eq=False)
class Prepared:
    """A graph ready for an engine.

    Attributes
    ----------
    graph : Graph
        The graph in the user's ids.
    ordering : str
        Name of the vertex ordering (``natural``, ``rcm``, ``jaccard`` or ``custom``).
    permutation : Permutation
        ``new_of_old`` / ``old_of_new`` between the user's ids and the internal ids.
    in_ptr, in_idx : array
        In-adjacency (CSR of the transposed adjacency) of the reordered graph: the bottom-up
        step reads it.
    bvss : BVSS
        BVSS of the reordered graph (NumPy arrays, or CuPy arrays when built on a GPU).
    """

    graph: Graph
    ordering: str
    permutation: Permutation
    in_ptr: Any
    in_idx: Any
    bvss: BVSS
    #: B's BVSS by hops (:meth:`hops_bvss`); preparations of one graph may share it.
    hop_cache: dict = field(default_factory=dict, repr=False)

    @property
    def n(self) -> int:
        return self.graph.n

    @property
    def sigma(self) -> int:
        return self.bvss.sigma

    @classmethod
    def from_graph(
        cls,
        graph: Graph,
        sigma: int = DEFAULT_SIGMA,
        permutation: Permutation | None = None,
        *,
        internal: Graph | None = None,
        bvss: BVSS | None = None,
        xp: Any = None,
    ) -> Prepared:
        """Prepare ``graph`` at slice width ``sigma`` under ``permutation`` (default: none).

        ``internal`` (the graph already relabelled by ``permutation``) and ``bvss`` (already
        built from it at ``sigma``) save the work when the caller has them; ``xp=cupy`` builds
        the BVSS on the GPU.
        """
        perm = permutation if permutation is not None else identity(graph.n)
        if internal is None:
            internal = graph if perm.is_identity else permute_graph(graph, perm)
        elif internal.n != graph.n or internal.nnz != graph.nnz:
            raise ArgumentError("internal must be the graph relabelled by the permutation")
        if bvss is None:
            bvss = build_bvss(internal, sigma, xp=xp)
        elif bvss.sigma != sigma or bvss.n != graph.n or bvss.nnz != graph.nnz:
            raise ArgumentError("the given bvss does not match this graph and sigma")
        return cls(graph, perm.name, perm, internal.in_ptr, internal.in_idx, bvss)

    def hops_bvss(self, hops: int) -> BVSS:
        """The BVSS of B = A + ... + A^hops at this sigma, with its near masks, for the
        ``hops`` > 1 variants (:mod:`blest.graph.hops`): built on first use (B on the CPU, the
        BVSS where this preparation's is), then kept."""
        from blest.graph.hops import hops_bvss

        cache = self.hop_cache
        if hops not in cache:
            host = isinstance(self.bvss.row_ids, np.ndarray)
            xp = None if host else _module_of(self.bvss.row_ids)
            cache[hops] = hops_bvss(self.in_ptr, self.in_idx, self.n, self.sigma, hops, xp=xp)
        return cache[hops]

    def host(self) -> Prepared:
        """The same preparation with NumPy arrays only (B's BVSS of every ``hops`` built so
        far included)."""
        b = self.bvss.to_numpy()
        ptr, idx = np.asarray(to_host(self.in_ptr)), np.asarray(to_host(self.in_idx))
        hops = {k: v.to_numpy() for k, v in self.hop_cache.items()}
        return Prepared(self.graph, self.ordering, self.permutation, ptr, idx, b, hops)

    def reversed(self, xp: Any = None) -> Prepared:
        """The preparation of the graph with every arc reversed, under the same permutation
        (what BFS over in-arcs runs on; ``xp=cupy`` builds its BVSS on the GPU). An undirected
        graph is its own reverse."""
        g = self.graph
        if not g.directed:
            return self
        rev = Graph.from_csr(
            g.in_ptr,
            g.in_idx,
            g.n,
            directed=True,
            in_ptr=g.out_ptr,
            in_idx=g.out_idx,
            report=g.report,
        )
        return Prepared.from_graph(rev, self.sigma, self.permutation, xp=xp)


def _module_of(a: Any) -> Any:
    """The array module of ``a`` (CuPy for a CuPy array)."""
    import importlib

    return importlib.import_module(type(a).__module__.split(".")[0])
