"""GPU correctness of served calls (``Engine.serving``): every persistent variant's serving
kernel, and the one-block launch's, against SciPy on the graph zoo, with every kind of
``out``, poisoned; the server's life (idle ends and restarts, calls it does not serve in
between, other engine work, close, the caller's stream order). Skipped cleanly without a GPU."""

from __future__ import annotations

import time

import numpy as np
import pytest
from gpu_util import requires_gpu, seeded_zoo, sources

from blest import VariantSpec, variants
from blest.codegen.contract import CTL_WORDS, SERVE
from blest.errors import ArgumentError, EngineError
from blest.graph.ordering import rcm
from blest.reference import bfs_levels

pytestmark = [pytest.mark.gpu, requires_gpu]

POISON = np.int32(0x5A5A5A5A)
ANSWER = CTL_WORDS + SERVE["answer"]
PERSISTENT = [s for s in variants() if s.launch == "persistent"]
#: The one-block launch's server (serve_block.cu.j2), at two preparations' sigma.
BLOCK = [VariantSpec.block(8), VariantSpec.block(32)]
OUTS = ("device", None, "pinned", "cupy", "view", "pageable")


@pytest.fixture(scope="module")
def zoo():
    return seeded_zoo()


def _engine(graph, spec, **kw):
    from blest.runtime.engine import Engine

    return Engine(graph, spec, **kw)


def _call(eng, src: int, how: str) -> np.ndarray:
    """One served call with ``out`` of kind ``how`` (poisoned where it is the caller's)."""
    import cupy as cp
    import cupyx

    n = eng.n
    if how == "pinned":
        out = cupyx.empty_pinned(n, dtype=np.int32)
        out[:] = POISON
        assert eng.bfs(src, out=out) is out
        return out.copy()
    if how == "pageable":
        out = np.full(n, POISON, dtype=np.int32)
        assert eng.bfs(src, out=out) is out
        return out
    if how == "cupy":
        out = cp.full(n, POISON, dtype=cp.int32)
        assert eng.bfs(src, out=out) is out
        return out.get()
    got = eng.bfs(src, out=how)
    return got.get() if isinstance(got, cp.ndarray) else got


@pytest.mark.parametrize("spec", PERSISTENT + BLOCK, ids=lambda s: s.name)
def test_served_levels_match_scipy(zoo, spec):
    rng, graphs = zoo
    for name, graph in graphs.items():
        perm = rcm(graph) if name in ("power_law", "road_deep") else None  # the user-id pass
        eta = float(rng.choice([0.5, 2.0, 1e9]))
        small = int(rng.choice([0, 16, 10**6]))
        with _engine(graph, spec, eta=eta, small_queue=small, permutation=perm) as eng:
            with eng.serving():
                for i, src in enumerate(sources(rng, graph)):
                    how = OUTS[i % len(OUTS)]
                    want = bfs_levels(graph, int(src))
                    got = _call(eng, int(src), how)
                    ctx = f"{spec.name} {name} src={src} out={how}"
                    np.testing.assert_array_equal(got, want, err_msg=ctx)
                    stats = eng.stats
                    assert stats.visited == int((want >= 0).sum()) and stats.depth == want.max()
                    assert np.isnan(stats.traversal_ms), ctx
                assert eng._served.stream is not None  # served, not launched
            assert eng._served.stream is None


SERVED = [
    VariantSpec(sigma=32, update="eager", queue="resident", switching=False),
    VariantSpec(sigma=8, update="lazy", queue="vss", switching=True),
]


@pytest.mark.parametrize("spec", [*SERVED, BLOCK[0]], ids=lambda s: s.name)
def test_server_life(zoo, spec):
    """Idle ends and restarts, calls the server does not serve (a depth limit, parents,
    several seeds), multi-source work and the caller's kernels between served calls: every
    answer stays SciPy's."""
    import cupy as cp

    rng, graphs = zoo
    graph = graphs["power_law"]
    srcs = [int(s) for s in sources(rng, graph, 6)]
    wants = [bfs_levels(graph, s) for s in srcs]
    with _engine(graph, spec, permutation=rcm(graph)) as eng, eng.serving(idle_ms=1.0):
        for k, (src, want) in enumerate(zip(srcs, wants, strict=True)):
            np.testing.assert_array_equal(_call(eng, src, "device"), want)
            if k == 0:
                time.sleep(0.05)  # the server ends, idle; the next call starts it again
                assert eng._served.stream is not None and eng._served.stream.done
            elif k == 1:
                limited = eng.bfs(src, depth_limit=1)
                np.testing.assert_array_equal(limited, np.where(want <= 1, want, -1))
                assert eng._served.stream is None  # ended for the launched call
            elif k == 2:
                levels, parents = eng.bfs(src, parents=True)
                np.testing.assert_array_equal(levels, want)
                assert parents[src] == -1
            elif k == 3:
                both = eng.bfs_many([src, srcs[0]])
                np.testing.assert_array_equal(both[0], want)
                np.testing.assert_array_equal(both[1], wants[0])
            elif k == 4:
                total = int(cp.asarray(want).sum())  # the caller's kernel while it serves
                assert total == int(want.sum())
            # the caller's queued work on the out array comes first, as for a launched call
            out = cp.empty(graph.n, dtype=cp.int32)
            out.fill(int(POISON))
            np.testing.assert_array_equal(eng.bfs(src, out=out).get(), want)


def test_serving_refusals_and_close(zoo):
    """Variants without a serving kernel (the per-level loop, a block launch on a cluster) run
    their calls as usual inside the block; bad idle limits and nested blocks are refused;
    close() inside the block ends the server first."""
    import cupy as cp

    _, graphs = zoo
    graph = graphs["directed"]
    src = int(np.flatnonzero(graph.out_degree > 0)[0])
    unserved = [VariantSpec(sigma=8, launch="per_level")]
    if cp.cuda.Device().compute_capability >= "90":  # clusters
        unserved.append(VariantSpec.block(8, 2))
    for spec in unserved:
        with _engine(graph, spec) as eng, eng.serving():  # no serving kernel: calls as usual
            np.testing.assert_array_equal(eng.bfs(src), bfs_levels(graph, src))
            assert eng._served.stream is None
    eng = _engine(graph, SERVED[0])
    with pytest.raises(ArgumentError, match="idle_ms"):
        with eng.serving(idle_ms=0):
            pass
    with eng.serving():
        with pytest.raises(ArgumentError, match="serving already"):
            with eng.serving():
                pass
        np.testing.assert_array_equal(eng.bfs(src), bfs_levels(graph, src))
        eng.close()  # ends the server before its buffers go
        assert eng._served.stream is None
        with pytest.raises(EngineError):
            eng.bfs(src)


def test_unpostable_destinations_run_unserved(zoo, monkeypatch):
    """A destination that the request's tagged DST word cannot carry (here: every one) makes
    the call run launched, as outside ``serving()``, with the same levels."""
    from blest.runtime import served

    monkeypatch.setattr(served, "_ADDRESS_LIMIT", 0)
    rng, graphs = zoo
    graph = graphs["power_law"]
    with _engine(graph, SERVED[0], permutation=rcm(graph)) as eng, eng.serving():
        for i, src in enumerate(sources(rng, graph, len(OUTS))):
            how = OUTS[i % len(OUTS)]
            got = _call(eng, int(src), how)
            np.testing.assert_array_equal(got, bfs_levels(graph, int(src)), err_msg=how)
            assert eng._served.stream is None, how


@pytest.mark.parametrize("spec", SERVED, ids=lambda s: s.name)
def test_device_levels_skip_the_engines_buffer(zoo, spec):
    """On a graph in its own ids, a call that is one kernel (untimed, or served) and whose
    levels go to device memory has the traversal write them there: the engine's own level
    buffer, poisoned first, stays as it was. Calls whose levels go to host memory, or stay in
    the engine ("view"), then find that buffer holding stale levels and poison, and still
    return SciPy's levels."""
    import cupy as cp

    rng, graphs = zoo
    for name in ("power_law", "disconnected", "directed"):
        graph = graphs[name]
        srcs = [int(s) for s in sources(rng, graph, 4)]
        wants = [bfs_levels(graph, s) for s in srcs]
        with _engine(graph, spec, timing=False) as eng:
            own = eng._tr.values["levels"]
            own.fill(int(POISON))
            np.testing.assert_array_equal(eng.bfs(srcs[0], out="device").get(), wants[0])
            with eng.serving():
                for src, want in zip(srcs[1:], wants[1:], strict=True):
                    np.testing.assert_array_equal(_call(eng, src, "device"), want)
                    np.testing.assert_array_equal(_call(eng, src, "cupy"), want)
            assert eng._served.stream is None
            assert bool(cp.all(own == POISON)), f"{name}: a device call wrote the engine's buffer"
            own[: graph.n // 2] = 7  # stale levels beside the poison
            with eng.serving():
                np.testing.assert_array_equal(_call(eng, srcs[1], "pinned"), wants[1])
                np.testing.assert_array_equal(_call(eng, srcs[2], "view"), wants[2])
            np.testing.assert_array_equal(eng.bfs(srcs[3], out="view").get(), wants[3])
            np.testing.assert_array_equal(eng.bfs(srcs[0]), wants[0])


@pytest.mark.parametrize("spec", SERVED, ids=lambda s: s.name)
def test_served_calls_into_arrays_filled_ahead(zoo, spec):
    """With the fill between calls on (graphs of any size), back-to-back out="device" calls
    on graphs with unreached vertices, with a host call among them, return SciPy's levels: each
    call's array (the engine's spare, often an earlier result's memory) was filled with -1s by
    the server after the previous answer, and the call delivers nothing itself."""
    rng, graphs = zoo
    for name in ("disconnected", "directed", "power_law"):
        graph = graphs[name]
        srcs = [int(s) for s in sources(rng, graph, 12)]
        with _engine(graph, spec, timing=False) as eng:
            eng._served.prefill_min_vertices = 0
            with eng.serving():
                assert eng._served.prefill
                for i, src in enumerate(srcs):
                    how = "pinned" if i == 6 else "device"
                    got = _call(eng, src, how)
                    np.testing.assert_array_equal(got, bfs_levels(graph, src), err_msg=name)


def test_a_failed_spare_leaves_the_call_whole(zoo, monkeypatch):
    """The next out="device" call's array is allocated while the server runs this call. When
    that allocation runs out of memory, this call still returns its own array, complete, and
    the next call allocates its own; a Ctrl-C there is raised only after the server answered,
    so that the GPU never writes to an array that nobody holds."""
    import cupy as cp

    rng, graphs = zoo
    graph = graphs["power_law"]
    srcs = [int(s) for s in sources(rng, graph, 6)]
    real_empty = cp.empty
    fail_with: list[BaseException] = []

    def empty(shape, dtype=float, *args, **kw):
        if fail_with and shape == graph.n:
            raise fail_with.pop()
        return real_empty(shape, dtype, *args, **kw)

    monkeypatch.setattr(cp, "empty", empty)
    try:
        oom = cp.cuda.memory.OutOfMemoryError(4 * graph.n, 0, 0)
    except TypeError:  # (other CuPy releases take other arguments)
        oom = cp.cuda.memory.OutOfMemoryError(4 * graph.n, 0)
    with _engine(graph, SERVED[0], timing=False) as eng:
        eng._served.prefill_min_vertices = 0  # the spare is also named to the server
        with eng.serving():
            assert eng.bfs(srcs[0], out="device") is not None and eng._served.spare is not None
            fail_with.append(oom)
            got = eng.bfs(srcs[1], out="device")  # its spare's allocation fails
            assert not fail_with and eng._served.spare is None
            np.testing.assert_array_equal(got.get(), bfs_levels(graph, srcs[1]))
            np.testing.assert_array_equal(eng.bfs(srcs[2], out="device").get(),
                                          bfs_levels(graph, srcs[2]))  # fmt: skip
            fail_with.append(KeyboardInterrupt())
            with pytest.raises(KeyboardInterrupt):
                eng.bfs(srcs[3], out="device")
            assert eng._tr.host_block[ANSWER] == eng._served.seq  # answered before it went up
            for src in srcs[4:]:
                np.testing.assert_array_equal(eng.bfs(src, out="device").get(),
                                              bfs_levels(graph, src))  # fmt: skip
