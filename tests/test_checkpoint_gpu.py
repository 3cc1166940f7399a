"""Checkpointed closeness on the GPU: a run stopped after its first blocks resumes to the bits
of a run never stopped, on one GPU, from a CPU run's blocks, with local workers (``gpus=2``;
on a one-GPU machine both share it) and, where mpi4py and a launcher exist, ``mpirun -n 2``;
betweenness the same way, from the CPU's blocks and the GPU's."""

from __future__ import annotations

import os
import textwrap

import numpy as np
import pytest
from gpu_util import requires_gpu, seeded_zoo
from mpi_launch import mpi_run, needs_mpi

import blest
from blest import checkpoint as ck

pytestmark = [pytest.mark.gpu, requires_gpu]
NAMES = ("directed", "road_deep", "disconnected", "power_law")


@pytest.fixture(scope="module")
def zoo():
    return seeded_zoo()


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch):
    monkeypatch.setenv(ck.BLOCK_ENV, "1")  # one batch of the engine's width per block


def _stop_after_first_block(graph, path, sources, device):
    """Run until one more block is published, then Ctrl-C (from the progress callback)."""
    before = len(_blocks(path)) if path.exists() else 0

    def progress(done, total):
        if path.exists() and len(_blocks(path)) > before:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        blest.closeness(graph, sources, device=device, checkpoint=path, progress=progress)
    assert len(_blocks(path)) == before + 1


def _blocks(path):
    return [p for p in os.listdir(path) if ck.BLOCK_NAME.fullmatch(p)]


def _sources(rng, graph):
    """Several batches of any width up to 1,024 (repeats allowed)."""
    return rng.choice(graph.n, size=int(rng.integers(3200, 4000)))


@pytest.mark.parametrize("name", NAMES)
def test_one_gpu_resumes_to_the_same_bits(zoo, tmp_path, name):
    rng, graphs = zoo
    graph = graphs[name]
    sources = _sources(rng, graph)
    path = tmp_path / "ck"
    for _ in range(2):  # stopped twice, after one more block each time
        _stop_after_first_block(graph, path, sources, 0)
    got = blest.closeness(graph, sources, device=0, checkpoint=path)
    assert got.tobytes() == blest.closeness(graph, sources, device=0).tobytes(), name
    harmonic = blest.harmonic(graph, sources, device=0, checkpoint=path)
    assert harmonic.tobytes() == blest.harmonic(graph, sources, device=0).tobytes(), name


def test_every_vertex_resumes(zoo, tmp_path):
    rng, graphs = zoo
    graph = graphs["power_law"]
    path = tmp_path / "ck"
    _stop_after_first_block(graph, path, None, 0)
    got = blest.closeness(graph, device=0, checkpoint=path)
    assert got.tobytes() == blest.closeness(graph, device=0).tobytes()


def test_a_cpu_run_resumes_on_the_gpu(zoo, tmp_path):
    rng, graphs = zoo
    graph = graphs["disconnected"]
    sources = _sources(rng, graph)
    _stop_after_first_block(graph, tmp_path / "ck", sources, "cpu")
    got = blest.harmonic(graph, sources, device=0, checkpoint=tmp_path / "ck")
    assert got.tobytes() == blest.harmonic(graph, sources, device=0).tobytes()


def test_local_workers_resume(zoo, tmp_path):
    rng, graphs = zoo
    for name in ("directed", "power_law"):
        graph = graphs[name]
        sources = _sources(rng, graph)
        path = tmp_path / name
        _stop_after_first_block(graph, path, sources, 0)
        got = blest.closeness(graph, sources, gpus=2, checkpoint=path)
        assert got.tobytes() == blest.closeness(graph, sources, device=0).tobytes(), name


@pytest.mark.parametrize("name", ["directed", "road_deep", "power_law"])
def test_betweenness_resumes_to_the_same_bits(zoo, tmp_path, name):
    """Stopped after its first block on the CPU, then again on the GPU, finished with two
    local workers: the bits of one GPU never stopped (the GPU runner's nodes are the CPU's)."""
    _, graphs = zoo
    graph = graphs[name]
    path = tmp_path / "ck"
    for device in ("cpu", 0):
        before = len(_blocks(path)) if path.exists() else 0

        def progress(done, total, before=before):
            if path.exists() and len(_blocks(path)) > before:
                raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            blest.betweenness(graph, device=device, checkpoint=path, progress=progress)
    got = blest.betweenness(graph, gpus=2, checkpoint=path)
    assert got.tobytes() == blest.betweenness(graph, device=0).tobytes(), name


MPI_SCRIPT = """
import sys
import numpy as np
import blest

data = np.load(sys.argv[1])
graph = blest.Graph.from_arcs(data["src"], data["dst"], int(data["n"]), directed=True)
scores = blest.closeness(graph, data["sources"], checkpoint=sys.argv[3])
np.save(sys.argv[2], scores)
"""


@needs_mpi
def test_mpirun_ranks_resume(zoo, tmp_path):
    rng, graphs = zoo
    graph = graphs["directed"]
    src = np.repeat(np.arange(graph.n), np.diff(graph.out_ptr))
    graph = blest.Graph.from_arcs(src, graph.out_idx, graph.n, directed=True)
    sources = _sources(rng, graph)
    path = tmp_path / "ck"
    _stop_after_first_block(graph, path, sources, 0)
    data = tmp_path / "graph.npz"
    np.savez(data, src=src, dst=graph.out_idx, n=graph.n, sources=sources)
    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent(MPI_SCRIPT))
    mpi_run(script, data, tmp_path / "s", path)
    one = blest.closeness(graph, sources, device=0)
    assert np.load(tmp_path / "s.npy").tobytes() == one.tobytes()
