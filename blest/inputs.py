# ruff: noqa: UP007  (the aliases are evaluated at run time, where "Graph" | str is an error)
"""The types of what users hand to blest and get back, for the public API's annotations.

Aliases only: nothing here runs, and the optional packages they name (NetworkX, pandas, CuPy)
are imported for type checkers alone.
"""

from __future__ import annotations

import os
import random
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

if TYPE_CHECKING:
    import cupy
    import networkx
    import pandas
    import scipy.sparse

    from blest.graph.core import Graph

__all__ = [
    "ArrayLike",
    "BFSResult",
    "CheckpointPath",
    "Device",
    "GraphInput",
    "Levels",
    "LevelsOut",
    "OutSpec",
    "Seed",
    "Seeds",
    "Sources",
    "VertexId",
]

#: A vertex as the user names it: its number, or its label where the input has labels.
VertexId = Union[int, np.integer, str, Hashable]
#: One source, or several seeds (all at level 0).
Seeds = Union[VertexId, Sequence[VertexId], NDArray[np.integer]]
#: The sources of a many-source call (a sequence; one source is a sequence of one).
Sources = Union[Sequence[VertexId], NDArray[np.integer], range]
#: Anything :func:`blest.load_graph` reads: a path (a tuned config's ``.blest.json`` too, where
#: a call takes one), a Graph, a SciPy sparse matrix, a NetworkX graph, a pandas DataFrame, a
#: (2, E) array of arcs, or CuPy / DLPack arrays.
GraphInput = Union[
    "Graph",
    str,
    "os.PathLike[str]",
    "scipy.sparse.spmatrix",
    "scipy.sparse.sparray",
    "networkx.Graph",
    "pandas.DataFrame",
    "cupy.ndarray",
    NDArray[np.integer],
]
#: Where a call runs: None (the GPU when one is usable, else the CPU), a GPU index, "gpu",
#: "cpu" or "emulator".
Device = Union[int, str, None]
#: Levels of every vertex, -1 for unreached ones.
Levels = NDArray[np.int32]
#: Levels on the host or, for ``out="device"`` or a CuPy ``out``, on the GPU.
LevelsOut = Union[NDArray[np.int32], "cupy.ndarray"]
#: What ``out=`` of an engine's ``bfs`` takes: None, "device", "view" or an int32 array.
OutSpec = Union[None, str, NDArray[np.int32], "cupy.ndarray"]
#: What ``bfs`` returns: levels, or with ``parents`` / ``paths`` a tuple, levels first.
BFSResult = Union[LevelsOut, tuple[LevelsOut, LevelsOut], tuple[LevelsOut, ...]]
#: A random seed: an integer, a NumPy generator or a ``random.Random``, or None for a fresh one.
Seed = Union[int, np.random.Generator, random.Random, None]
#: A checkpoint directory of a long centrality run.
CheckpointPath = Union[str, "os.PathLike[str]"]
