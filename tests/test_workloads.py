"""The workload registry behind ``blest-tune --workload``: one entry per CLI choice, each
with a family, a search space and a tuner that takes the shared arguments."""

from __future__ import annotations

import numpy as np
import pytest

from blest.codegen.family import FAMILIES
from blest.defaults import WORKLOAD_NAMES
from blest.graph.core import Graph
from blest.tuning import tuner, workloads


def test_registry_names_match_cli_choices():
    assert tuple(workloads.WORKLOADS) == WORKLOAD_NAMES
    for name, w in workloads.WORKLOADS.items():
        assert w.name == name
        assert w.families and all(f is FAMILIES[f.name] for f in w.families)


@pytest.mark.parametrize("name", WORKLOAD_NAMES)
def test_tune_workload_reaches_its_tuner_with_every_argument(monkeypatch, name):
    seen: dict[str, object] = {}

    def fake(graph, **kwargs):
        seen.update(kwargs, graph=graph)
        return "outcome"

    targets = {
        "bfs": (tuner, "tune"),
        "closeness": (workloads, "tune_closeness"),
        "betweenness": (workloads, "tune_betweenness"),
    }
    module, attr = targets[name]
    monkeypatch.setattr(module, attr, fake)
    # the registry holds the functions it was built with; rebuild it over the fakes
    monkeypatch.setattr(workloads, "WORKLOADS", workloads._registry())
    rng = np.random.default_rng()
    g = Graph.from_arcs(rng.integers(0, 50, 200), rng.integers(0, 50, 200), 50, directed=False)
    out = workloads.tune_workload(
        name, g, source="x", budget_s=1.5, sigmas=(8,), orderings=None,
        progress=print, n_sources=7, compile_check=True,
    )  # fmt: skip
    assert out == "outcome"
    assert seen["graph"] is g and seen["budget_s"] == 1.5 and seen["sigmas"] == (8,)
    assert seen["source"] == "x" and seen["orderings"] is None
    if name == "bfs":
        assert seen["n_sources"] == 7 and seen["compile_check"] is True
    else:
        assert "n_sources" not in seen and "compile_check" not in seen


class _FakeEngine:
    """Stands for the GPU engine that measures the depth: a SciPy BFS of the prepared graph."""

    def __init__(self, prepared):
        from blest.runtime.cpu import CPUEngine

        self._cpu = CPUEngine(prepared)

    def bfs(self, s, out=None):
        self._cpu.bfs(s)

    @property
    def stats(self):
        return self._cpu.stats

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._cpu.close()


@pytest.fixture
def fake_gpu(monkeypatch):
    """The GPU branch of the section tuners on the CPU: a GPU is 'present', the prepared
    graphs stay on the host and the depth comes from SciPy."""
    from blest.tuning.section_tuner import Start

    monkeypatch.setattr("blest.runtime.factory.resolve_device", lambda device: 0)
    monkeypatch.setattr("blest.codegen.toolchain.require_gpu", lambda *a: (0, "sm_90", "Fake"))
    monkeypatch.setattr("blest.runtime.engine.Engine", _FakeEngine)
    monkeypatch.setattr(Start, "prepared", lambda self, sigma: self.prep.prepared(sigma))


def test_betweenness_section_from_the_gpu_branch(fake_gpu, monkeypatch, tmp_path):
    from scipy.sparse.csgraph import shortest_path

    from blest.codegen.bcspec import BCSpec
    from blest.tuning import bc_search
    from blest.tuning.config import TunedConfig

    rng = np.random.default_rng()
    n = 300
    g = Graph.from_arcs(rng.integers(0, n, 1500), rng.integers(0, n, 1500), n, directed=False)
    seen = {}
    best = bc_search.BCTimed(bc_search.BCCandidate(BCSpec(16, "grid"), 512, 64), 1e-6, sources=9)
    other = bc_search.BCTimed(bc_search.BCCandidate(BCSpec(32, "block"), 256, 256), None, "boom")

    def fake_search(graph, depth, budget_s, *, progress=None):
        seen.update(graph=graph, depth=depth, budget_s=budget_s)
        return best, [best, other]

    monkeypatch.setattr(bc_search, "search_betweenness", fake_search)
    out = workloads.tune_workload(
        "betweenness", g, source="g.txt", budget_s=2.5, sigmas=(8,), orderings=["natural"],
        progress=lambda m: None, n_sources=1, compile_check=False,
    )  # fmt: skip
    cfg = out.config
    s = int(g.out_degree.argmax())
    dist = shortest_path(g.out_csr, indices=s, unweighted=True)  # from the widest vertex
    depth = int(dist[np.isfinite(dist)].max())
    assert seen == {"graph": g, "depth": depth, "budget_s": 2.5}
    assert cfg.tuned and cfg.gpu.name == "Fake" and cfg.gpu.arch == "sm_90"
    assert cfg.betweenness == best.candidate.to_dict()
    assert cfg.timing["workload"] == "betweenness" and cfg.timing["depth"] == depth
    assert cfg.timing["bc_candidates"] == [best.to_dict(), other.to_dict()]
    assert cfg.spec.sigma == 8 and cfg.preparation.sigma == 8 and out.prepared.sigma == 8
    assert cfg.preparation.ordering == "natural" and cfg.graph.source == "g.txt"
    assert cfg.multi_source is None
    cfg.artifact, cfg.artifact_sha256 = "x.npz", "0" * 64
    cfg.write(tmp_path / "c.blest.json")  # the section passes the config's own checks
    assert TunedConfig.read(tmp_path / "c.blest.json").betweenness == cfg.betweenness


@pytest.mark.parametrize("sigma", [8, 32])
def test_multi_source_section_from_the_gpu_branch(fake_gpu, monkeypatch, sigma):
    from blest.codegen.densespec import DenseSpec
    from blest.codegen.msspec import MSSpec
    from blest.tuning import ms_search, ms_tuner

    rng = np.random.default_rng()
    n = 200
    g = Graph.from_arcs(rng.integers(0, n, 900), rng.integers(0, n, 900), n, directed=True)
    best = ms_search.MSTimed(ms_search.MSCandidate(MSSpec(sigma=sigma, kappa=64)), 2e-6)
    slow = ms_search.MSTimed(ms_search.MSCandidate(MSSpec(sigma=8, kappa=32)), 5e-6)
    dense = ms_search.DenseTimed(DenseSpec(), 256, 1e-3)
    pick = ms_search.EveryVertexPick(best, [best, slow], [dense], None)
    seen = {}

    def fake_search(prepared, sigmas, depth, budget_s, *, progress=None):
        seen.update(sigmas=sigmas, budget_s=budget_s, at=prepared(sigma).sigma)
        return pick

    monkeypatch.setattr(ms_tuner, "search_every_vertex", fake_search)
    out = workloads.tune_workload(
        "closeness", g, source=None, budget_s=3.0, sigmas=(4, 8, 32), orderings=["natural"],
        progress=lambda m: None, n_sources=1, compile_check=False,
    )  # fmt: skip
    cfg = out.config
    assert seen == {"sigmas": [8, 32], "budget_s": 3.0, "at": sigma}
    assert cfg.multi_source == pick.multi_source() and cfg.betweenness is None
    assert cfg.timing["workload"] == "closeness"
    assert cfg.timing["ms_candidates"] == [best.to_dict(), slow.to_dict()]
    assert cfg.timing["dense_candidates"] == [dense.to_dict()]
    assert cfg.spec.sigma == sigma and cfg.preparation.sigma == sigma
    assert out.prepared.sigma == sigma
