"""Many BFSs in one call (blest.centrality) and the NetworkX backend's closeness and harmonic
centrality, on the CPU path: equal to NetworkX, bit-identical across worker processes."""

from __future__ import annotations

import numpy as np
import pytest
from random_graphs import make_directed, make_disconnected, make_power_law

import blest.centrality as bc
from blest.nx import centrality as nxc

nx = pytest.importorskip("networkx")


def _nx(g):
    G = nx.DiGraph() if g.directed else nx.Graph()
    G.add_nodes_from(range(g.n))
    src = np.repeat(np.arange(g.n), np.diff(g.out_ptr))
    G.add_edges_from(zip(src.tolist(), g.out_idx.tolist(), strict=True))
    return G


@pytest.mark.parametrize("make", [make_directed, make_power_law, make_disconnected])
def test_one_call_closeness_and_harmonic_equal_networkx(rng, make):
    g = make(rng, int(rng.integers(150, 400)))
    G = _nx(g)
    want = nx.closeness_centrality(G)
    np.testing.assert_allclose(bc.closeness(g), [want[v] for v in range(g.n)], rtol=1e-12)
    want = nx.harmonic_centrality(G)
    np.testing.assert_allclose(bc.harmonic(g), [want[v] for v in range(g.n)], rtol=1e-12)
    some = rng.choice(g.n, 9)
    np.testing.assert_array_equal(bc.closeness(g, some, wf_improved=False)[:3],
                                  bc.closeness(g, some[:3], wf_improved=False))  # fmt: skip
    levels = bc.bfs_many(g, some[:4])
    assert levels.shape == (4, g.n)


def test_worker_processes_give_bit_identical_scores(rng):
    g = make_directed(rng, 300)
    one = bc.closeness(g)
    two = bc.closeness(g, gpus=2)
    assert one.tobytes() == two.tobytes()
    assert bc.source_sums(g, gpus=3).identical(bc.source_sums(g))


def test_bad_gpus_argument(rng):
    g = make_power_law(rng, 50)
    for bad in (0, -1, "some", True, 1.5):
        with pytest.raises(ValueError):
            bc.closeness(g, gpus=bad)


def test_networkx_backend_functions(rng):
    g = make_directed(rng, 200)
    G = nx.relabel_nodes(_nx(g), {i: f"v{i}" for i in range(g.n)})
    got = nxc.closeness_centrality(G)
    want = nx.closeness_centrality(G)
    assert got.keys() == want.keys()
    np.testing.assert_allclose([got[k] for k in want], list(want.values()), rtol=1e-12)
    assert nxc.closeness_centrality(G, "v7") == pytest.approx(want["v7"], rel=1e-12)
    h = nxc.harmonic_centrality(G, nbunch=["v1", "v5"])
    assert h == nx.harmonic_centrality(G, nbunch=["v1", "v5"])  # NetworkX's sums, bit for bit
    with pytest.raises(nx.NodeNotFound):
        nxc.closeness_centrality(G, "nope")
    from blest.nx.interface import can_run

    assert can_run("closeness_centrality", (G,), {"distance": "w"}) is True  # no edge has w
    G.add_edge("v1", "v2", w=3.0)
    assert can_run("closeness_centrality", (G,), {"distance": "w"}) is not True
    assert can_run("harmonic_centrality", (G,), {"sources": ["v1"]}) is True
    assert can_run("closeness_centrality", (G,), {}) is True
