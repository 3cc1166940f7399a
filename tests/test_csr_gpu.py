"""GPU correctness of expand="csr" on graphs with hubs (vertices of more than HUB_DEGREE
out-arcs, whose arcs every warp shares): levels against SciPy into poisoned outputs, from hub
and non-hub sources and from several seeds, at every switching setting, and the same levels as
the tensor-core variant of the same axes (whose per-level states tests/test_gpu_engine.py checks
against the emulator for every variant, these included)."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_util import requires_gpu

from blest import VariantSpec
from blest.codegen.contract import HUB_DEGREE
from blest.graph.core import Graph
from blest.graph.ordering import rcm
from blest.graph.prepared import Prepared
from blest.reference import bfs_levels

pytestmark = [pytest.mark.gpu, requires_gpu]

POISON = np.int32(0x5A5A5A5A)


def hub_graph(rng: np.random.Generator, n: int, hubs: int, directed: bool) -> Graph:
    """Sparse random arcs plus ``hubs`` vertices of HUB_DEGREE + 1 to 40 * HUB_DEGREE out-arcs
    (so a chunk of hub arcs may span two hubs, and one hub spans many chunks)."""
    src = [rng.integers(0, n, 4 * n)]
    dst = [rng.integers(0, n, 4 * n)]
    for hub in rng.choice(n, hubs, replace=False):
        degree = int(rng.integers(HUB_DEGREE + 1, min(40 * HUB_DEGREE, n - 1)))
        src.append(np.full(degree, hub))
        dst.append(rng.choice(n, degree, replace=False))
    s, d = np.concatenate(src), np.concatenate(dst)
    keep = s != d
    return Graph.from_arcs(s[keep], d[keep], n, directed=directed)


@pytest.mark.parametrize("switching", [True, False], ids=["switch", "topdown"])
@pytest.mark.parametrize("directed", [False, True], ids=["undirected", "directed"])
@pytest.mark.parametrize("sigma", [4, 32])
def test_csr_levels_with_hubs(switching, directed, sigma):
    from blest.runtime.engine import Engine

    rng = np.random.default_rng([sigma, directed, switching, 13])
    graph = hub_graph(rng, 30_000, 60, directed)
    degree = np.diff(graph.out_ptr)
    hubs = np.flatnonzero(degree > HUB_DEGREE)
    others = np.flatnonzero((degree > 0) & (degree <= HUB_DEGREE))
    prep = Prepared.from_graph(graph, sigma, rcm(graph) if directed else None)
    spec = VariantSpec.csr(sigma, switching)
    twin = VariantSpec(sigma=sigma, update="lazy", queue="sweep", switching=switching)
    for eta, small in ((0.5, 0), (10.0, 64), (1e9, 0), (0.0, 10**6)):
        with (
            Engine(prep, spec, eta=eta, small_queue=small) as eng,
            Engine(prep, twin, eta=eta, small_queue=small) as ref,
        ):
            for src in (*rng.choice(hubs, 2), *rng.choice(others, 2)):
                want = bfs_levels(graph, int(src))
                out = np.full(graph.n, POISON, dtype=np.int32)
                got = eng.bfs(int(src), out=out)
                ctx = f"{spec.name} eta={eta} sq={small} src={src}"
                np.testing.assert_array_equal(got, want, err_msg=ctx)
                assert eng.stats.visited == int((want >= 0).sum()), ctx
                np.testing.assert_array_equal(ref.bfs(int(src)), want, err_msg=ctx)
                assert eng.stats.bottom_up_levels == ref.stats.bottom_up_levels, ctx
            seeds = np.concatenate([rng.choice(hubs, 3), rng.choice(others, 5)])
            want = bfs_levels(graph, seeds)
            np.testing.assert_array_equal(eng.bfs(seeds), want, err_msg=f"{spec.name} seeds")


def test_csr_on_a_star_and_a_path():
    """One hub of every other vertex (its arcs over the whole grid at level 0), and a path (one
    vertex a level, no hubs)."""
    from blest.runtime.engine import Engine

    n = 50_000
    leaves = np.arange(1, n)
    star = Graph.from_arcs(np.zeros(n - 1, dtype=np.int64), leaves, n, directed=False)
    ids = np.random.default_rng(5).permutation(n)
    path = Graph.from_arcs(ids[:-1], ids[1:], n, directed=True)
    for graph in (star, path):
        with Engine(graph, VariantSpec.csr(8)) as eng:
            for src in (0, int(ids[0]), int(ids[n // 2])):
                want = bfs_levels(graph, src)
                np.testing.assert_array_equal(eng.bfs(src), want)
