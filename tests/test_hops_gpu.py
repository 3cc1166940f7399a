"""Several levels a phase (``hops`` 2, 3) on the GPU, beyond test_gpu_engine.py's levels of every
variant on the zoo in its own ids: RCM-ordered graphs (directed, deep, power-law,
disconnected), depth limits of both parities, several seeds, parents, and levels
against the phase emulator and SciPy (test_serve_gpu.py serves every persistent variant, these
too). Skipped cleanly without a GPU."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_util import requires_gpu, seeded_zoo, sources

from blest import VariantSpec
from blest.errors import EngineError
from blest.graph.ordering import rcm
from blest.graph.prepared import Prepared
from blest.reference import bfs_levels
from blest.reference.hops_emulator import emulate_hops

pytestmark = [pytest.mark.gpu, requires_gpu]

POISON = np.int32(0x5A5A5A5A)
SPECS = [
    VariantSpec(sigma=s, update="eager", queue="vss", switching=False, hops=k, registers=r)
    for s, r, k in ((32, 64, 2), (16, 64, 2), (8, 64, 2), (4, 64, 2), (32, 128, 2),
                    (32, 64, 3), (16, 64, 3), (8, 64, 3), (16, 128, 3))
]  # fmt: skip


@pytest.fixture(scope="module")
def zoo():
    return seeded_zoo()


def _limited(levels, limit):
    return levels if limit is None else np.where(levels > limit, -1, levels)


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_reordered_levels_limits_seeds_and_parents(zoo, spec):
    from blest.runtime.engine import Engine

    rng, graphs = zoo
    for name in ("power_law", "road_deep", "directed", "disconnected", "hubs"):
        graph = graphs[name]
        prep = Prepared.from_graph(graph, spec.sigma, rcm(graph))
        small = int(rng.choice([0, 16]))
        with Engine(prep, spec, small_queue=small) as eng:
            for i, src in enumerate(sources(rng, graph, 4)):
                eng.timing = i % 2 == 0  # untimed: init, traversal, deliver in one kernel
                limit = [None, 1, 2, 5][i] if i < 4 else None
                want = _limited(bfs_levels(graph, src), limit)
                out = np.full(graph.n, POISON, dtype=np.int32)
                got = eng.bfs(src, out=out, depth_limit=limit)
                ctx = f"{spec.name} {name} src={src} limit={limit} sq={small}"
                np.testing.assert_array_equal(got, want, err_msg=ctx)
                assert eng.stats.visited == int((want >= 0).sum()), ctx
                assert eng.stats.depth == want.max(), ctx
            seeds = sources(rng, graph, 3)
            levels, parents = eng.bfs(seeds, parents=True)
            want = bfs_levels(graph, seeds)
            np.testing.assert_array_equal(levels, want, err_msg=f"{name} seeds")
            child = np.flatnonzero(want > 0)
            p = parents[child]
            assert np.all(want[p] == want[child] - 1), name
            a = graph.out_ptr
            for v, u in zip(child[:50], p[:50], strict=True):  # u -> v is an arc
                assert v in graph.out_idx[a[u] : a[u + 1]], (name, u, v)
            internal = int(np.asarray(prep.permutation.new_of_old)[seeds[0]])
            emulated = emulate_hops(prep.hops_bvss(spec.hops), internal)
            np.testing.assert_array_equal(
                emulated[np.asarray(prep.permutation.new_of_old)], bfs_levels(graph, seeds[0])
            )
            with pytest.raises(EngineError, match=f"hops={spec.hops}"):
                eng.probes.debug_state()
