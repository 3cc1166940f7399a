"""Checkpoints of long centrality runs: a directory that keeps the result of every finished
block of sources, so that the same call after a Ctrl-C, a kill or a failure computes only what
is missing and ends with the same bits as a run never stopped.

* :mod:`blest.checkpoint.store`: the directory, its manifest and its block files, and what
  makes a file trusted;
* :mod:`blest.checkpoint.sums`: closeness and harmonic centrality (per-source sums);
* :mod:`blest.checkpoint.nodes`: betweenness (nodes of the fixed reduction tree).
"""

from blest.checkpoint.store import (
    BLOCK_ENV,
    BLOCK_NAME,
    BLOCK_SOURCES,
    MANIFEST,
    Store,
    agree,
)
from blest.checkpoint.sums import SOURCE_BYTES, Checkpoint, Finished, block_sources, run

__all__ = [
    "BLOCK_ENV",
    "BLOCK_NAME",
    "BLOCK_SOURCES",
    "MANIFEST",
    "SOURCE_BYTES",
    "Checkpoint",
    "Finished",
    "Store",
    "agree",
    "block_sources",
    "run",
]
