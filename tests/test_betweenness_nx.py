"""The NetworkX backend's betweenness: equal to NetworkX (values to 1e-9, keys and their
order) on random graphs of every kind, the same sampled sources for the same seed in every
form NetworkX takes, NetworkX's errors, what it declines; and NetworkX's own betweenness tests
run through the backend with fallback off."""

from __future__ import annotations

import random
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest
from test_cli_subprocess import cli_env
from test_nx_backend import KINDS, random_nx

nx = pytest.importorskip("networkx")

import blest.nx as bnx  # noqa: E402
from blest.nx.interface import can_run  # noqa: E402


def dispatches() -> bool:
    return "blest" in nx.utils.backends.backends


def same_dict(got: dict, want: dict) -> None:
    assert list(got) == list(want)  # the same keys, in NetworkX's order
    a = np.array(list(got.values()))
    b = np.array(list(want.values()))
    np.testing.assert_allclose(a, b, rtol=1e-9, atol=0, equal_nan=True)


def seeds_of(rng):
    """The same seed twice, in each form NetworkX's py_random_state takes."""
    s = int(rng.integers(2**31))
    return [
        (s, s),
        (random.Random(s), random.Random(s)),
        (np.random.RandomState(s), np.random.RandomState(s)),
    ]


@pytest.mark.parametrize("kind", KINDS)
def test_equal_to_networkx(kind, rng):
    G = random_nx(rng, kind)
    for flags in ({}, {"normalized": False, "endpoints": True}, {"endpoints": True}):
        same_dict(bnx.betweenness_centrality(G, **flags), nx.betweenness_centrality(G, **flags))
    k = int(rng.integers(1, len(G)))
    for ours, theirs in seeds_of(rng):
        same_dict(
            bnx.betweenness_centrality(G, k=k, seed=ours),
            nx.betweenness_centrality(G, k=k, seed=theirs),
        )
    if kind == "multigraph":
        assert isinstance(can_run("edge_betweenness_centrality", (G,), {}), str)
        with pytest.raises(NotImplementedError):
            bnx.edge_betweenness_centrality(G)
        return
    same_dict(bnx.edge_betweenness_centrality(G), nx.edge_betweenness_centrality(G))
    s = int(rng.integers(2**31))
    same_dict(
        bnx.edge_betweenness_centrality(G, k=k, seed=s, normalized=False),
        nx.edge_betweenness_centrality(G, k=k, seed=s, normalized=False),
    )


def test_dispatch_with_a_seed(rng):
    if not dispatches():
        pytest.skip("the blest entry point is not installed (pip install -e . to test dispatch)")
    G = random_nx(rng, "strings")
    k = int(rng.integers(2, len(G)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NetworkX notes that it reuses its cached conversion
        for ours, theirs in seeds_of(rng):
            same_dict(
                nx.betweenness_centrality(G, k=k, seed=ours, backend="blest"),
                nx.betweenness_centrality(G, k=k, seed=theirs),
            )
        same_dict(
            nx.edge_betweenness_centrality(G, backend="blest"), nx.edge_betweenness_centrality(G)
        )


def test_errors_and_what_is_declined():
    G = nx.cycle_graph(4)
    with pytest.raises(ValueError, match="larger"):
        bnx.betweenness_centrality(G, k=5)
    with pytest.raises(ValueError, match="negative"):
        bnx.betweenness_centrality(G, k=-1)
    with pytest.raises(ZeroDivisionError):
        bnx.betweenness_centrality(G, k=0)
    assert bnx.betweenness_centrality(nx.Graph()) == {}
    assert isinstance(can_run("betweenness_centrality", (G,), {"weight": "w"}), str)
    assert can_run("betweenness_centrality", (G,), {"k": 2}) is True
    with pytest.raises(NotImplementedError):
        bnx.betweenness_centrality(G, weight="weight")


PLUGIN = """
import json, os
import blest.nx.interface as interface

CALLS = []

def _counted(name):
    inner = getattr(interface.BackendInterface, name)
    def call(*args, **kwargs):
        CALLS.append(name)
        return inner(*args, **kwargs)
    setattr(interface.BackendInterface, name, staticmethod(call))

for _name in ("betweenness_centrality", "edge_betweenness_centrality"):
    _counted(_name)

def pytest_sessionfinish(session):
    with open(os.environ["BLEST_CALLS_FILE"], "w") as f:
        json.dump(CALLS, f)
"""


def test_networkx_own_tests_through_the_backend(tmp_path):
    if not dispatches():
        pytest.skip("the blest entry point is not installed (pip install -e . to test dispatch)")
    (tmp_path / "count_blest_calls.py").write_text(PLUGIN)
    calls = tmp_path / "calls.json"
    env = cli_env(tmp_path, NETWORKX_TEST_BACKEND="blest", BLEST_CALLS_FILE=str(calls))
    env.pop("NETWORKX_FALLBACK_TO_NX", None)  # off: declined calls xfail, never run NetworkX
    env["PYTHONPATH"] += f":{tmp_path}"
    module = "networkx.algorithms.centrality.tests.test_betweenness_centrality"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p"]
    cmd += ["count_blest_calls", "--pyargs", module]
    r = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    tail = r.stdout[-1500:]
    assert r.returncode == 0 and " passed" in tail, tail
    assert not re.search(r"\d+ (failed|error)", tail), tail
    import json

    names = json.loads(calls.read_text())
    assert names.count("betweenness_centrality") >= 30, tail  # the unweighted tests ran here
    assert names.count("edge_betweenness_centrality") >= 7, tail
