"""What the blest backend tells NetworkX about itself (the ``networkx.backend_info`` entry point).

NetworkX calls :func:`get_info` while it is being imported, so this module imports nothing but
the standard library (``import blest`` itself is cheap: its names load on first use).
"""

from __future__ import annotations

__all__ = ["DOCS_URL", "FUNCTIONS", "get_info"]

#: Placeholder for the documentation site.
DOCS_URL = "https://blest.invalid/docs"

_DEVICE = (
    "None (default: the GPU when one is usable, else SciPy on the CPU), 'cpu', 'emulator', "
    "'gpu' or a GPU index."
)

#: The NetworkX functions the backend implements, each with a note for NetworkX's docs.
FUNCTIONS: dict[str, str] = {
    "closeness_centrality": (
        "Equal to NetworkX's (exact integer sums of distances from blest's multi-source BFS, "
        "kappa BFSs per kernel batch); unweighted only (distance is not supported)."
    ),
    "harmonic_centrality": (
        "Equal to NetworkX's, bit for bit: distances from blest's multi-source BFS, the "
        "reciprocals added in NetworkX's order; unweighted only (distance is not supported)."
    ),
    "betweenness_centrality": (
        "Brandes' algorithm on blest's BFS, NetworkX's scaling; with k, the same sampled "
        "sources as NetworkX for the same seed; unweighted only (weight is not supported)."
    ),
    "edge_betweenness_centrality": (
        "From the same traversals as betweenness_centrality; unweighted, not for multigraphs."
    ),
    "single_source_shortest_path_length": (
        "Levels from blest's BFS; the dict lists nodes by distance (within one distance the "
        "order may differ from NetworkX's)."
    ),
    "bfs_edges": "NetworkX's edges, in NetworkX's order (sort_neighbors included).",
    "bfs_tree": "The same tree as NetworkX (sort_neighbors included).",
    "bfs_predecessors": "NetworkX's pairs, in NetworkX's order (sort_neighbors included).",
    "bfs_successors": "NetworkX's pairs, in NetworkX's order (sort_neighbors included).",
    "bfs_layers": "NetworkX's layers, each in NetworkX's order.",
    "descendants_at_distance": "The nodes at that distance, from blest's BFS levels.",
}


def get_info() -> dict:
    """The backend's description for NetworkX (``nx.utils.backends.backend_info["blest"]``)."""
    return {
        "backend_name": "blest",
        "project": "blest",
        "package": "blest-bfs",
        "url": DOCS_URL,
        "short_summary": "Breadth-first search on tensor cores (NVIDIA GPUs); SciPy on CPUs.",
        "description": (
            "Runs NetworkX's breadth-first searches with blest: a GPU when one is usable, "
            "otherwise SciPy's compiled BFS. Graphs are converted once (the conversion is "
            "cached on the NetworkX graph) and results carry the graph's own node labels."
        ),
        "functions": {
            name: {
                "additional_docs": note,
                "additional_parameters": {"device : None, str or int, optional": _DEVICE},
            }
            for name, note in FUNCTIONS.items()
        },
        "default_config": {},
    }
