"""blest.validate: accepts SciPy's and blest's BFS results on every graph class, and rejects a
deliberately broken result at the check that names the breakage (one test per check)."""

from __future__ import annotations

import numpy as np
import pytest
from random_graphs import GRAPH_CLASSES, arcs_of, pick_source
from scipy.sparse.csgraph import breadth_first_order

import blest
from blest import Graph, ValidationError
from blest.reference import CHECKS, bfs_levels, frontier_bfs
from blest.reference import validate as validate_module

CLASSES = tuple(GRAPH_CLASSES)


@pytest.fixture(autouse=True, params=["one piece", "pieces of 5 arcs"])
def pieces(request, monkeypatch):
    """Every test twice: the in-adjacency scanned in one piece, and in many over threads."""
    if request.param != "one piece":
        monkeypatch.setattr(validate_module, "PIECE_ARCS", 5)


def with_isolated(graph: Graph, extra: int = 1) -> Graph:
    """``graph`` plus ``extra`` isolated vertices at the end."""
    s, d = arcs_of(graph)
    return Graph.from_arcs(s, d, graph.n + extra, directed=graph.directed)


def bfs_tree(graph: Graph, seeds) -> tuple[np.ndarray, np.ndarray]:
    levels, parents = frontier_bfs(graph, seeds)
    return levels, parents


def fails(check: str, graph, seeds, levels, parents=None) -> ValidationError:
    with pytest.raises(ValidationError) as info:
        blest.validate(graph, seeds, levels, parents)
    assert info.value.check == check, str(info.value)
    assert f"'{check}'" in str(info.value)
    return info.value


# ---------------------------------------------------------------------- accepting
@pytest.mark.parametrize("cls", CLASSES)
def test_accepts_scipy_predecessors(cls, rng):
    for _ in range(6):
        g = with_isolated(GRAPH_CLASSES[cls](rng, int(rng.integers(20, 200))))
        for src in (pick_source(rng, g), g.n - 1):  # the last vertex is isolated
            order, pred = breadth_first_order(
                g.out_csr, src, directed=g.directed, return_predecessors=True
            )
            assert (pred[src] == -9999) and pred.dtype == np.int32
            levels = bfs_levels(g, src)
            blest.validate(g, src, levels, pred)
            blest.validate(g, src, levels)


@pytest.mark.parametrize("cls", CLASSES)
def test_accepts_blest_results(cls, rng):
    for _ in range(4):
        g = with_isolated(GRAPH_CLASSES[cls](rng, int(rng.integers(20, 200))))
        seeds = [pick_source(rng, g) for _ in range(int(rng.integers(1, 5)))] + [g.n - 1]
        for device in ("cpu", "emulator"):
            levels, parents = blest.bfs(g, seeds, parents=True, device=device)
            blest.validate(g, seeds, levels, parents)
            blest.validate(g, seeds, levels)
        blest.validate(g, seeds, *bfs_tree(g, seeds))


def test_directed_rule_allows_arcs_from_unreached_vertices():
    # 0 -> 1 -> 2 and 3 -> 1: from 1, vertex 3 is unreached though it has an arc into the tree.
    g = Graph.from_arcs([0, 1, 3], [1, 2, 1], 4, directed=True)
    levels = np.array([-1, 0, 1, -1], dtype=np.int32)
    blest.validate(g, 1, levels, np.array([-1, -1, 1, -1], dtype=np.int32))
    fails("arc span", g, 0, np.array([0, 1, -1, -1], dtype=np.int32))


def test_checks_are_named_in_order():
    assert CHECKS == (
        "format",
        "seeds",
        "cycles",
        "tree levels",
        "arc span",
        "spanning",
        "tree arcs",
    )
    assert issubclass(ValidationError, blest.BlestError) and issubclass(ValidationError, ValueError)


# ---------------------------------------------------------------------- rejecting
def connected_case(rng) -> tuple[Graph, int, np.ndarray, np.ndarray]:
    """An undirected graph with a vertex of level >= 3 reached from ``src``."""
    while True:
        g = with_isolated(GRAPH_CLASSES["grid"](rng, int(rng.integers(60, 200))))
        src = pick_source(rng, g)
        levels, parents = bfs_tree(g, src)
        if levels.max() >= 3:
            return g, src, levels, parents


def test_rejects_format(rng):
    g, src, levels, parents = connected_case(rng)
    fails("format", g, src, levels.astype(np.int64))
    fails("format", g, src, levels[:-1])
    bad = levels.copy()
    bad[int(np.argmax(levels))] = -2
    fails("format", g, src, bad)
    bad = parents.copy()
    bad[int(np.argmax(levels))] = g.n
    fails("format", g, src, levels, bad)
    fails("format", g, src, levels, parents.astype(np.float64))


def test_rejects_seeds(rng):
    g, src, levels, parents = connected_case(rng)
    bad = levels.copy()
    bad[src] = 1
    fails("seeds", g, src, bad)
    other = int(np.flatnonzero(levels == 1)[0])
    fails("seeds", g, [src, other], levels)  # a seed at level 1
    bad = levels.copy()
    bad[other] = 0
    fails("seeds", g, src, bad)  # level 0 but not a seed
    bad = parents.copy()
    bad[src] = other
    fails("seeds", g, src, levels, bad)  # a seed with a parent
    with pytest.raises(blest.VertexError):
        blest.validate(g, g.n, levels)


def test_rejects_cycles(rng):
    g, src, levels, parents = connected_case(rng)
    u, v = (int(x) for x in rng.choice(np.flatnonzero(levels > 0), 2, replace=False))
    bad = parents.copy()
    bad[u], bad[v] = v, u
    err = fails("cycles", g, src, levels, bad)
    assert str(u) in str(err) or str(v) in str(err)
    bad = parents.copy()
    bad[u] = u
    fails("cycles", g, src, levels, bad)


def test_rejects_tree_levels(rng):
    g, src, levels, parents = connected_case(rng)
    v = int(rng.choice(np.flatnonzero(levels >= 2)))
    bad = parents.copy()
    bad[v] = parents[parents[v]]  # the grandparent: two levels up, no cycle
    fails("tree levels", g, src, levels, bad)
    bad = parents.copy()
    bad[g.n - 1] = src  # an unreached (isolated) vertex hung below the source
    fails("tree levels", g, src, levels, bad)


def test_rejects_arc_span(rng):
    g, src, levels, parents = connected_case(rng)
    v = int(rng.choice(np.flatnonzero(levels > 0)))
    bad = levels.copy()
    bad[v] += 1  # its parent's arc now skips a level
    fails("arc span", g, src, bad)
    leaves = np.setdiff1d(np.flatnonzero(levels > 0), parents[parents >= 0])
    leaf = int(rng.choice(leaves))
    bad_levels, bad_parents = levels.copy(), parents.copy()
    bad_levels[leaf] = bad_parents[leaf] = -1  # a reachable leaf left out: the tree is fine
    fails("arc span", g, src, bad_levels, bad_parents)


def test_rejects_spanning(rng):
    g, src, levels, parents = connected_case(rng)
    isolated = g.n - 1
    bad = levels.copy()
    bad[isolated] = 2  # no arcs at all: (c) holds, but nothing reaches it
    err = fails("spanning", g, src, bad)
    assert str(isolated) in str(err)
    fails("spanning", g, src, bad, parents)  # reached, yet not in the tree


def test_rejects_tree_arcs(rng):
    g, src, levels, parents = connected_case(rng)
    for v in rng.permutation(np.flatnonzero(levels >= 2)):
        ins = g.in_idx[g.in_ptr[v] : g.in_ptr[v + 1]]
        others = np.setdiff1d(np.flatnonzero(levels == levels[v] - 1), ins)
        if others.size:
            bad = parents.copy()
            bad[v] = int(rng.choice(others))  # one level up, but not a neighbour
            err = fails("tree arcs", g, src, levels, bad)
            assert f"-> {v}" in str(err)
            return
    pytest.fail("no vertex with a non-adjacent vertex one level up")


def test_pieces_cover_every_row_once(rng, monkeypatch):
    g = with_isolated(GRAPH_CLASSES["power_law"](rng, 300), extra=3)
    for size in (1, 5, 64, g.nnz, 10 * g.nnz):
        monkeypatch.setattr(validate_module, "PIECE_ARCS", size)
        cuts = validate_module._pieces(g.in_ptr, g.n)
        assert cuts[0][0] == 0 and cuts[-1][1] == g.n
        assert all(a < b for a, b in cuts)
        assert all(x[1] == y[0] for x, y in zip(cuts, cuts[1:], strict=False))
    ptr = np.array([0, 0, 0, 2, 4, 6, 6])  # rows 0 and 1 without arcs, and the last
    for size in (1, 2, 3, 5):
        monkeypatch.setattr(validate_module, "PIECE_ARCS", size)
        cuts = validate_module._pieces(ptr, 6)
        assert cuts[0][0] == 0 and cuts[-1][1] == 6, (size, cuts)
        assert all(x[1] == y[0] for x, y in zip(cuts, cuts[1:], strict=False))


# ---------------------------------------------------------------------- several results at once
def broken_results(rng) -> tuple[Graph, list, list, list, list[str]]:
    """A graph, sources and results from each, one result broken at each arc check."""
    g, src, levels, parents = connected_case(rng)
    sources, lvs, pars, broken = [], [], [], []
    for s in (src, pick_source(rng, g), g.n - 1):
        lv, par = bfs_tree(g, s)
        sources.append(s), lvs.append(lv), pars.append(par), broken.append("")
    v = int(rng.choice(np.flatnonzero(levels > 0)))
    bad = levels.copy()
    bad[v] += 1
    sources.append(src), lvs.append(bad), pars.append(None), broken.append("arc span")
    bad = levels.copy()
    bad[g.n - 1] = 2
    sources.append(src), lvs.append(bad), pars.append(None), broken.append("spanning")
    for w in rng.permutation(np.flatnonzero(levels >= 2)):
        ins = g.in_idx[g.in_ptr[w] : g.in_ptr[w + 1]]
        others = np.setdiff1d(np.flatnonzero(levels == levels[w] - 1), ins)
        if others.size:
            bad = parents.copy()
            bad[w] = int(others[0])
            sources.append(src), lvs.append(levels), pars.append(bad), broken.append("tree arcs")
            break
    return g, sources, lvs, pars, broken


@pytest.mark.parametrize("jit", [True, False], ids=["numba", "one by one"])
def test_batch_names_the_first_broken_result(rng, monkeypatch, jit):
    if not jit:
        monkeypatch.setattr("blest.graph.jaccard.have_numba", lambda: False)
    for _ in range(3):
        g, sources, lvs, pars, broken = broken_results(rng)
        good = [i for i, b in enumerate(broken) if not b]
        validate_module.validate_batch(g, [sources[i] for i in good], [lvs[i] for i in good])
        validate_module.validate_batch(
            g, [sources[i] for i in good], [lvs[i] for i in good], [pars[i] for i in good]
        )
        for i, check in enumerate(broken):
            if not check:
                continue
            order = [*good[:2], i, good[2]]  # a broken result among good ones
            batch_par = None if pars[i] is None else [pars[j] for j in order]
            with pytest.raises(ValidationError) as got:
                validate_module.validate_batch(
                    g, [sources[j] for j in order], [lvs[j] for j in order], batch_par
                )
            with pytest.raises(ValidationError) as want:
                blest.validate(g, sources[i], lvs[i], pars[i])
            assert got.value.check == want.value.check == check
            assert str(got.value) == str(want.value)


@pytest.mark.parametrize("cls", CLASSES)
def test_batch_accepts_what_validate_accepts(cls, rng):
    g = with_isolated(GRAPH_CLASSES[cls](rng, int(rng.integers(50, 300))))
    sources = [pick_source(rng, g) for _ in range(5)] + [[0, g.n - 1]]
    results = [bfs_tree(g, s) for s in sources]
    validate_module.validate_batch(g, sources, [r[0] for r in results], [r[1] for r in results])
    validate_module.validate_batch(g, sources, [r[0] for r in results])
    validate_module.validate_batch(g, [], [])
    with pytest.raises(blest.ArgumentError):
        validate_module.validate_batch(g, sources[:2], [results[0][0]])
