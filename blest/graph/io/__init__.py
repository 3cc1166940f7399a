"""Graph loading and saving: Matrix Market, edge lists, METIS, prepared ``.npz``, and objects.

Everything becomes a cleaned :class:`~blest.graph.core.Graph`. Conventions:

- Vertex ids are 0-based. Matrix Market and METIS number vertices from 1, so their index ``i``
  is vertex ``i - 1``; edge lists (SNAP, CSV, GAP ``.el`` / ``.wel``) and arrays are 0-based
  already and kept as written (``n = max id + 1``) unless ``relabel=True``; ``one_based=True``
  reads an edge list numbered from 1.
- Directedness, unless ``directed=`` says otherwise: Matrix Market ``general`` is directed,
  ``symmetric`` / ``skew-symmetric`` / ``hermitian`` undirected; edge lists and arrays are
  directed; METIS is undirected; a SciPy matrix is directed unless its pattern is symmetric;
  a NetworkX graph follows ``G.is_directed()``.
- Self loops and duplicate arcs are dropped and counted in ``graph.report``.

Bad input raises :class:`~blest.errors.GraphFormatError` (with ``path`` and, where there is one,
the 1-based ``line``) or :class:`~blest.errors.GraphLimitError` (too many vertices, too much
memory, absurdly sparse ids). A missing file raises :class:`GraphFileNotFoundError`, which is
both a ``GraphFormatError`` and a ``FileNotFoundError``.

Modules: :mod:`.api` (``load_graph``), :mod:`.detect` (which reader a file needs: its name,
unless its content declares a format), :mod:`.files` (opening, gzip, refusing non-regular
files, streaming text with a cap), :mod:`.limits` (memory guard) and :mod:`.memory` (what the
process may still allocate), :mod:`.build` (relabelling and cleaning), one module per format
(:mod:`.mtx`, :mod:`.edgelist` with the optional :mod:`.fastcsv`, :mod:`.metis`, :mod:`.npz`
with :mod:`.sparse_npz` for SciPy's ``save_npz`` files and :mod:`.zipnpy` for checked archive
members), and :mod:`.objects` / :mod:`.arrays` for in-memory inputs. Only the names below are
public.
"""

from __future__ import annotations

from blest.graph.io.detect import ALIASES, FORMATS
from blest.graph.io.files import GraphFileNotFoundError
from blest.graph.io.limits import ENV_MAX_BYTES
from blest.graph.io.load import load_graph
from blest.graph.io.npz import NPZ_FORMAT, NPZ_VERSION, save_graph

__all__ = [
    "ALIASES",
    "ENV_MAX_BYTES",
    "FORMATS",
    "NPZ_FORMAT",
    "NPZ_VERSION",
    "GraphFileNotFoundError",
    "load_graph",
    "save_graph",
]
