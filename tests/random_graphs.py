"""The graph classes the tests draw from (they live in :mod:`blest.datasets.classes`)."""

from blest.datasets.classes import (  # noqa: F401  (re-exported for the tests)
    GRAPH_CLASSES,
    arcs_of,
    graph_zoo,
    make_directed,
    make_disconnected,
    make_grid,
    make_hubs,
    make_power_law,
    make_uniform,
    path_like,
    pick_source,
    zoo_sources,
)
