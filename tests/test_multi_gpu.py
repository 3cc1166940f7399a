"""Closeness over several GPU processes is bit-identical to one GPU: local workers
(``gpus=2``; on a one-GPU machine both share it) and, where mpi4py and a launcher exist, real
``mpirun -n 2`` ranks. Fresh random graphs, directed and undirected, several batches per rank."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from gpu_util import requires_gpu
from mpi_launch import mpi_run, needs_mpi

from blest.datasets.classes import graph_zoo

pytestmark = [pytest.mark.gpu, requires_gpu]


@pytest.fixture(scope="module")
def graphs():
    seed = int(np.random.SeedSequence().entropy) % 2**32
    print(f"graph zoo seed {seed}")
    rng = np.random.default_rng(seed)
    zoo = graph_zoo(rng)
    return rng, [zoo[name] for name in ("directed", "road_deep", "disconnected", "power_law")]


def test_local_workers_match_one_gpu(graphs):
    import blest

    rng, picks = graphs
    for graph in picks:
        k = min(graph.n, int(rng.integers(300, 700)))  # several kappa-batches per worker
        sources = rng.choice(graph.n, size=k, replace=False)
        one = blest.closeness(graph, sources, device=0)
        two = blest.closeness(graph, sources, gpus=2)
        np.testing.assert_array_equal(one, two)
        np.testing.assert_array_equal(
            blest.harmonic(graph, sources, device=0), blest.harmonic(graph, sources, gpus=2)
        )


MPI_SCRIPT = """
import sys
import numpy as np
import blest

data = np.load(sys.argv[1])
graph = blest.Graph.from_arcs(data["src"], data["dst"], int(data["n"]), directed=True)
scores = blest.closeness(graph, data["sources"])
np.save(sys.argv[2], scores)
"""


@needs_mpi
def test_mpirun_ranks_on_gpus_match_one_gpu(graphs, tmp_path):
    import blest

    rng, picks = graphs
    graph = picks[0]  # the directed one
    src = np.repeat(np.arange(graph.n), np.diff(graph.out_ptr))
    sources = rng.choice(graph.n, size=min(graph.n, 500), replace=False)
    data = tmp_path / "graph.npz"
    np.savez(data, src=src, dst=graph.out_idx, n=graph.n, sources=sources)
    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent(MPI_SCRIPT))
    mpi_run(script, data, tmp_path / "s")
    one = blest.closeness(
        blest.Graph.from_arcs(src, graph.out_idx, graph.n, directed=True), sources, device=0
    )
    np.testing.assert_array_equal(np.load(tmp_path / "s.npy"), one)
