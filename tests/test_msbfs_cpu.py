"""The bit-parallel CPU multi-source BFS (blest.reference.msbfs_cpu) and the CPU engine's
worker processes (blest.runtime.cpu_workers).

Sums must equal the SciPy reference (one BFS per source) bit for bit, levels must equal its
levels, on fresh random graphs of every class, through the bit-parallel search (forced here:
the cost model would send some groups to SciPy) and through the worker processes.
"""

from __future__ import annotations

import multiprocessing as mp
import os

import networkx as nx
import numpy as np
import pytest
from random_graphs import (
    arcs_of,
    make_directed,
    make_disconnected,
    make_grid,
    make_hubs,
    make_power_law,
    make_uniform,
    path_like,
)

import blest
from blest import Graph
from blest.errors import ArgumentError, VertexError
from blest.reference import centrality as C
from blest.reference import msbfs_cpu as M
from blest.reference import msbfs_numba
from blest.runtime import cpu_workers as W
from blest.runtime.distributed import WorkerError


def star_with_isolated(n: int) -> Graph:
    leaves = np.arange(1, n - 2)
    return Graph.from_arcs(np.zeros_like(leaves), leaves, n, directed=False)


def directed_path(n: int) -> Graph:
    ids = np.arange(n - 1)
    return Graph.from_arcs(ids, ids + 1, n, directed=True)


def no_arcs(n: int, directed: bool) -> Graph:
    empty = np.zeros(0, np.int64)
    return Graph.from_arcs(empty, empty, n, directed=directed)


CASES = {
    "power_law": lambda rng: make_power_law(rng, 300),
    "uniform": lambda rng: make_uniform(rng, 260),
    "grid": lambda rng: make_grid(rng, 400),
    "directed": lambda rng: make_directed(rng, 300),
    "disconnected": lambda rng: make_disconnected(rng, 280),
    "hubs": lambda rng: make_hubs(rng, 200),
    "deep": lambda rng: path_like(rng, 600),
    "directed_path": lambda rng: directed_path(int(rng.integers(130, 200))),
    "star_isolated": lambda rng: star_with_isolated(int(rng.integers(70, 140))),
    "no_arcs": lambda rng: no_arcs(int(rng.integers(1, 90)), bool(rng.integers(2))),
    "one_vertex": lambda rng: no_arcs(1, False),
}


@pytest.fixture
def forced(monkeypatch):
    """Every group through the bit-parallel search (the cost model may pick SciPy)."""
    monkeypatch.setattr(W, "bit_parallel_pays", lambda *a, **k: True)


def assert_identical(a: C.SourceSums, b: C.SourceSums) -> None:
    np.testing.assert_array_equal(a.dist, b.dist)
    np.testing.assert_array_equal(a.reach, b.reach)
    assert a.harmonic.dtype == b.harmonic.dtype == np.float64
    assert np.array_equal(a.harmonic.view(np.int64), b.harmonic.view(np.int64)), "harmonic bits"


def scrambled_sources(rng: np.random.Generator, n: int) -> np.ndarray:
    """Every vertex once, some twice, in a random order."""
    extra = rng.integers(0, n, max(1, n // 10))
    return rng.permutation(np.concatenate([np.arange(n), extra]))


# ---------------------------------------------------------------------- sums and levels
needs_numba = pytest.mark.skipif(not msbfs_numba.have_numba(), reason="needs numba")
JIT = [False, pytest.param(True, marks=needs_numba, id="jit")]


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("jit", JIT)
def test_sums_bit_identical_to_reference(name, reverse, jit, rng, forced):
    graph = CASES[name](rng)
    users = scrambled_sources(rng, graph.n)
    kept = users.copy()
    got = W.source_sums(graph, users, reverse=reverse, workers=1, jit=jit)
    assert_identical(got, C.source_sums(graph, users, reverse=reverse))
    np.testing.assert_array_equal(users, kept)  # the input is left alone


@pytest.mark.parametrize("name", list(CASES))
def test_levels_equal_reference(name, rng, forced):
    graph = CASES[name](rng)
    users = rng.integers(0, graph.n, int(rng.integers(1, 150)))
    out = np.full((users.size, graph.n), 12345, dtype=np.int32)  # poisoned
    reverse = bool(rng.integers(2))
    assert W.bfs_many(graph, users, out, reverse=reverse, workers=1) is out
    np.testing.assert_array_equal(out, C.bfs_many_levels(graph, users, reverse=reverse))


@pytest.mark.parametrize("name", ["grid", "directed", "disconnected"])
@pytest.mark.parametrize("jit", JIT)
def test_worker_processes_give_the_same_results(name, jit, rng, forced):
    graph = CASES[name](rng)
    users = scrambled_sources(rng, graph.n)
    seen: list[tuple[int, int]] = []
    got = W.source_sums(
        graph,
        users,
        reverse=graph.directed,
        workers=2,
        progress=lambda *p: seen.append(p),
        jit=jit,
    )
    assert_identical(got, C.source_sums(graph, users, reverse=graph.directed))
    assert seen[-1] == (users.size, users.size)
    assert all(a[0] < b[0] for a, b in zip(seen, seen[1:], strict=False))
    out = np.full((200, graph.n), -7, dtype=np.int32)
    W.bfs_many(graph, users[:200], out, workers=2)
    np.testing.assert_array_equal(out, C.bfs_many_levels(graph, users[:200]))
    assert not mp.active_children()


def long_grid(width: int, length: int) -> Graph:
    ids = np.arange(width * length).reshape(length, width)
    src = np.concatenate([ids[:, :-1].ravel(), ids[:-1].ravel()])
    dst = np.concatenate([ids[:, 1:].ravel(), ids[1:].ravel()])
    return Graph.from_arcs(src, dst, width * length, directed=False)


def test_cost_model_path_equals_reference(rng):
    """Unforced: sources scattered along a deep graph go to SciPy, balls to the bit-parallel
    search; either way the same bits."""
    graph = long_grid(20, 1000)
    trav = M.Traversal.of(graph, reverse=False)
    ball = next(M.plan_groups(trav, np.arange(graph.n)))
    scattered = np.linspace(0, graph.n - 1, 64).astype(np.int64)
    frame = M.Frame.around(trav, int(ball[0]))
    assert M.bit_parallel_pays(trav, frame, ball, levels=False)
    frame = M.Frame.around(trav, int(scattered[0]))
    assert not M.bit_parallel_pays(trav, frame, scattered, levels=False)
    users = np.concatenate([ball, scattered])
    got = W.source_sums(graph, users, reverse=False, workers=1)
    assert_identical(got, C.source_sums(graph, users, reverse=False))


# ---------------------------------------------------------------------- the engine
@pytest.mark.parametrize("make", [make_grid, make_directed, make_disconnected])
def test_engine_centrality_equals_networkx(make, rng):
    graph = make(rng, 240)
    g = nx.DiGraph() if graph.directed else nx.Graph()
    g.add_nodes_from(range(graph.n))
    src, dst = arcs_of(graph)
    g.add_edges_from(zip(src.tolist(), dst.tolist(), strict=True))
    ref = nx.closeness_centrality(g)
    got = blest.closeness(graph, device="cpu")
    np.testing.assert_array_equal(got, [ref[v] for v in range(graph.n)])  # same bits
    ref = nx.harmonic_centrality(g)
    got = blest.harmonic(graph, device="cpu")
    np.testing.assert_allclose(got, [ref[v] for v in range(graph.n)], rtol=1e-12, atol=0)


def test_engine_bfs_many_and_bad_sources(rng):
    graph = make_grid(rng, 300)
    with blest.make_engine(blest.Prepared.from_graph(graph), device="cpu") as eng:
        users = rng.integers(0, graph.n, 70)
        np.testing.assert_array_equal(eng.bfs_many(users), C.bfs_many_levels(graph, users))
        with pytest.raises(VertexError):
            eng.source_sums([0, graph.n])


@needs_numba
@pytest.mark.parametrize("name", ["grid", "directed", "disconnected", "hubs", "no_arcs"])
def test_compiled_frame_equals_numpy_frame(name, rng):
    graph = CASES[name](rng)
    trav = M.Traversal.of(graph, reverse=bool(rng.integers(2)))
    for centre in rng.integers(0, graph.n, 12).tolist():
        want = M.Frame.around(trav, centre)
        got = msbfs_numba.frame_around(trav, centre)
        for field in ("order", "pos", "level", "level_start", "preds", "extra", "extra_ptr"):
            np.testing.assert_array_equal(getattr(got, field), getattr(want, field), field)
        np.testing.assert_array_equal(got.extra_idx, want.extra_idx)
        assert (got.low is None) == (want.low is None)
        if want.low is not None:
            np.testing.assert_array_equal(got.low, want.low)


# ---------------------------------------------------------------------- planning and counting
@pytest.mark.parametrize("name", ["grid", "directed", "disconnected", "no_arcs"])
def test_plan_groups_cover_sources_once(name, rng):
    graph = CASES[name](rng)
    trav = M.Traversal.of(graph, reverse=bool(rng.integers(2)))
    sources = np.unique(rng.integers(0, graph.n, graph.n))
    groups = list(M.plan_groups(trav, sources))
    assert all(1 <= g.size <= M.GROUP for g in groups)
    np.testing.assert_array_equal(np.sort(np.concatenate(groups)), sources)
    for group in groups:  # every member is reachable from the centre (element 0)
        frame = M.Frame.around(trav, int(group[0]))
        assert (frame.pos[group] < frame.k).all()


def test_vertical_counts_equal_bit_by_bit_count(rng):
    rows = rng.integers(1, 700, 9)
    words = rng.integers(0, 2**63, int(rows.sum()), dtype=np.int64).astype(np.uint64)
    words[::3] |= np.uint64(1) << np.uint64(63)
    got = M.vertical_counts(words, rows)
    bits = (words[:, None] >> np.arange(64, dtype=np.uint64)) & np.uint64(1)
    starts = np.cumsum(rows) - rows
    np.testing.assert_array_equal(got, np.add.reduceat(bits.astype(np.int64), starts, axis=0))


# ---------------------------------------------------------------------- workers
def test_worker_count_from_the_environment(monkeypatch):
    monkeypatch.setenv(W.WORKERS_ENV, "3")
    assert W.cpu_workers() == 3
    for bad in ("0", "-2", "two", "1.5"):
        monkeypatch.setenv(W.WORKERS_ENV, bad)
        with pytest.raises(ArgumentError, match=W.WORKERS_ENV):
            W.cpu_workers()
    monkeypatch.delenv(W.WORKERS_ENV)
    assert W.cpu_workers() >= 1


def test_jit_choice_from_the_environment(monkeypatch):
    monkeypatch.setenv(W.JIT_ENV, "0")
    assert not W.use_jit(10**6, 10**6)
    monkeypatch.setenv(W.JIT_ENV, "yes")
    with pytest.raises(ArgumentError, match=W.JIT_ENV):
        W.use_jit(1, 1)
    monkeypatch.delenv(W.JIT_ENV)
    assert not W.use_jit(2, 300)  # too little work to repay the compile
    assert W.use_jit(10**4, 10**5) == msbfs_numba.have_numba()


def test_a_dying_worker_is_reported(rng, monkeypatch):
    graph = make_grid(rng, 300)
    parent = os.getpid()

    def die(*args, **kwargs):
        if os.getpid() != parent:
            os._exit(3)
        return True

    monkeypatch.setattr(W, "bit_parallel_pays", die)
    with pytest.raises(WorkerError, match="exited with code 3"):
        W.source_sums(graph, np.arange(graph.n), reverse=False, workers=2)
    assert not mp.active_children()


def test_a_worker_error_keeps_its_type(rng, monkeypatch):
    graph = make_grid(rng, 300)

    def refuse(*args, **kwargs):
        raise ArgumentError("planted")

    monkeypatch.setattr(W, "bit_parallel_pays", refuse)
    with pytest.raises(ArgumentError, match="planted"):
        W.source_sums(graph, np.arange(graph.n), reverse=False, workers=2)
    assert not mp.active_children()


def test_interrupt_stops_the_workers(rng, forced):
    graph = make_grid(rng, 600)

    def interrupt(done, total):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        W.source_sums(graph, np.arange(graph.n), reverse=False, workers=2, progress=interrupt)
    assert not mp.active_children()


FORK_SIGINT_SCRIPT = """
import os, signal, sys
import numpy as np
from blest.datasets.generators import grid2d
from blest.runtime import cpu_workers as W

fired = []

def ctrl_c_in_the_fork():  # a Ctrl-C that lands while the fork's own handlers run
    if not fired:
        fired.append(1)
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):  # Python code after the signal: its handler runs here
            pass

os.register_at_fork(after_in_parent=ctrl_c_in_the_fork)
graph = grid2d(30, 30)
try:
    W.source_sums(graph, np.arange(graph.n), reverse=False, workers=2)
except KeyboardInterrupt:
    sys.exit(130)
sys.exit(0)
"""


@pytest.mark.skipif(not hasattr(os, "register_at_fork"), reason="needs os.register_at_fork")
def test_a_ctrl_c_during_the_workers_fork_is_not_lost(tmp_path):
    """A SIGINT arriving while the fork's own handlers run is held and acted on after it: the
    call stops with KeyboardInterrupt, and nothing is printed as an ignored exception."""
    import subprocess
    import sys

    script = tmp_path / "fork_sigint.py"
    script.write_text(FORK_SIGINT_SCRIPT)
    env = {**os.environ, "BLEST_CPU_JIT": "0", "BLEST_CPU_WORKERS": "2"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.getcwd(), env.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode == 130, done.stderr[-2000:]
    assert "Exception ignored" not in done.stderr and "Traceback" not in done.stderr
