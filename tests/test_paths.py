"""Shortest-path counts (blest.reference.paths, blest.bfs(paths=True), eng.bfs(paths=True))
against a plain Python BFS with unbounded integers, on fresh random graphs of every class;
counts past int32 and int64 on chains of diamonds; the float64 summation order."""

from __future__ import annotations

import warnings
from collections import deque

import numpy as np
import pytest
from random_graphs import GRAPH_CLASSES, make_hubs, path_like

import blest
from blest.graph.core import Graph
from blest.graph.prepared import Prepared
from blest.reference.paths import OVERFLOW_MESSAGE, bfs_paths, segment_sums
from blest.reference.scipy_bfs import bfs_levels


def python_paths(graph: Graph, seeds, depth_limit=None) -> tuple[list[int], list[int]]:
    """Levels and exact path counts (Python ints) by a queue BFS over the out-arcs."""
    ptr, idx = graph.out_ptr.tolist(), graph.out_idx.tolist()
    level = [-1] * graph.n
    count = [0] * graph.n
    queue = deque()
    for s in dict.fromkeys(int(x) for x in np.atleast_1d(seeds)):
        level[s], count[s] = 0, 1
        queue.append(s)
    while queue:
        v = queue.popleft()
        if depth_limit is not None and level[v] >= depth_limit:
            continue
        for w in idx[ptr[v] : ptr[v + 1]]:
            if level[w] < 0:
                level[w] = level[v] + 1
                queue.append(w)
            if level[w] == level[v] + 1:
                count[w] += count[v]
    return level, count


def diamonds(widths: list[int]) -> tuple[Graph, int]:
    """A chain of diamonds: hub, ``w`` middle vertices, next hub, ... (undirected). The last
    hub has ``prod(widths)`` shortest paths from vertex 0; returns (graph, last hub)."""
    src, dst, hub, n = [], [], 0, 1
    for w in widths:
        middle = list(range(n, n + w))
        nxt = n + w
        for m in middle:
            src += [hub, m]
            dst += [m, nxt]
        hub, n = nxt, nxt + 1
    return Graph.from_arcs(np.array(src), np.array(dst), n, directed=False), hub


def random_graph(rng, cls: str) -> Graph:
    n = int(rng.integers(2, 300))
    if cls == "hubs":
        return make_hubs(rng, n)
    if cls == "path_like":
        return path_like(rng, max(n, 30))
    return GRAPH_CLASSES[cls](rng, n)


CLASSES = [*GRAPH_CLASSES, "hubs", "path_like"]


@pytest.mark.parametrize("cls", CLASSES)
def test_counts_equal_a_python_bfs(cls, rng):
    for _ in range(3):
        g = random_graph(rng, cls)
        seeds = rng.choice(g.n, int(rng.integers(1, 4)), replace=True)
        limit = None if rng.random() < 0.6 else int(rng.integers(0, 6))
        want_levels, want_counts = python_paths(g, seeds, limit)
        levels, parents, counts = bfs_paths(g, seeds, depth_limit=limit, parents=True)
        assert counts.dtype == np.int64 and levels.dtype == np.int32
        assert levels.tolist() == want_levels
        assert counts.tolist() == want_counts
        if limit is None:  # SciPy agrees on the levels
            np.testing.assert_array_equal(levels, bfs_levels(g, seeds))
        # every parent is an in-neighbour one level up, the seeds and the unreached have none
        reached = np.flatnonzero(levels > 0)
        assert np.all(parents[levels <= 0] == -1)
        assert np.all(levels[parents[reached]] == levels[reached] - 1)
        tails = np.repeat(np.arange(g.n), np.diff(g.out_ptr))
        arcs = set(zip(tails.tolist(), g.out_idx.tolist(), strict=True))
        assert all((int(parents[v]), int(v)) in arcs for v in reached)


def test_counts_past_int32_stay_exact():
    g, last = diamonds([2] * 40 + [3] * 5)
    levels, counts = bfs_paths(g, 0)
    assert counts.dtype == np.int64 and int(counts[last]) == 2**40 * 3**5
    assert int(counts[last]) > 2**31
    assert python_paths(g, 0)[1] == counts.tolist()


def test_counts_just_below_int64_stay_int64():
    g, last = diamonds([2] * 62 + [1])  # 2**62 paths: checked exactly, still fits
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, counts = bfs_paths(g, 0)
    assert counts.dtype == np.int64 and int(counts[last]) == 2**62


@pytest.mark.parametrize("widths", [[2] * 63, [3] * 41 + [2] * 3, [5] * 60])
def test_counts_past_int64_turn_float64_with_a_warning(widths):
    g, last = diamonds(widths)
    with pytest.warns(RuntimeWarning, match=OVERFLOW_MESSAGE):
        levels, counts = bfs_paths(g, 0)
    exact = python_paths(g, 0)[1]
    assert counts.dtype == np.float64 and exact[last] >= 2**63
    want = np.array([float(c) for c in exact])
    np.testing.assert_allclose(counts, want, rtol=1e-13)
    assert counts[last] == pytest.approx(float(np.prod([float(w) for w in widths])), rel=1e-13)


def test_segment_sums_add_left_to_right(rng):
    lens = rng.choice([0, 1, 2, 3, 7, 8, 9, 100, 129, 1000], size=60)
    ptr = np.concatenate([[0], np.cumsum(lens)])
    terms = rng.lognormal(0.0, 8.0, size=int(ptr[-1]))  # wide range: the order shows
    got = segment_sums(terms, ptr)
    for s in range(lens.size):
        acc = 0.0
        for t in terms[ptr[s] : ptr[s + 1]].tolist():
            acc += t
        assert got[s] == acc, s  # bit for bit
    pairwise = np.add.reduceat(terms, ptr[:-1][lens > 0])
    assert not np.array_equal(pairwise, got[lens > 0])  # the order matters on these terms


def test_one_call_and_engines(rng):
    g = GRAPH_CLASSES["directed"](rng, 200)
    src = int(np.argmax(g.out_degree))
    before = [a.tobytes() for a in (g.out_ptr, g.out_idx, g.in_ptr, g.in_idx)]
    want_levels, want_counts = python_paths(g, src)
    levels, counts = blest.bfs(g, src, paths=True, device="cpu")
    assert levels.tolist() == want_levels and counts.tolist() == want_counts
    lv, par, cnt = blest.bfs(g, [src, 3], paths=True, parents=True, device="emulator")
    assert cnt.tolist() == python_paths(g, [src, 3])[1]
    blest.validate(g, [src, 3], lv, par)
    for device in ("cpu", "emulator"):
        with blest.make_engine(Prepared.from_graph(g), device=device) as eng:
            out = np.full(g.n, 12345, dtype=np.int32)  # poisoned: every entry is rewritten
            got_levels, got_counts = eng.bfs(src, out=out, paths=True)
            assert got_levels is out and out.tolist() == want_levels
            assert got_counts.tolist() == want_counts
            _, _, c2 = eng.bfs(src, paths=True, parents=True, depth_limit=2)
            assert c2.tolist() == python_paths(g, src, 2)[1]
            with pytest.raises(blest.VertexError):
                eng.bfs(g.n, paths=True)
    assert [a.tobytes() for a in (g.out_ptr, g.out_idx, g.in_ptr, g.in_idx)] == before
