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
