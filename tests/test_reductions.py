"""The exact reductions of closeness and harmonic centrality (blest.graph.reductions) on the CPU
path: reduced sums and scores bit-identical to one BFS per vertex and equal to NetworkX, on
fresh graphs full of leaves, stars, open and closed twins, isolated vertices and two-vertex
components, directed ones too; subsets of sources with repeats and leaves whose hub is not
scored; hash collisions that must not merge non-twins; the pendant harmonic sum against an
actually attached leaf; the sums container, the reduction over ranks and the CLI's line."""

from __future__ import annotations

import numpy as np
import pytest
from random_graphs import arcs_of, make_directed, make_power_law

import blest.centrality as bc
from blest.cli import main
from blest.datasets import write_mtx
from blest.graph import reductions as R
from blest.graph.core import Graph
from blest.graph.reductions import ALONE, COPY, LEAF, SourcePlan, plan_sources, twin_classes
from blest.reference.centrality import SourceSums, source_sums, sums_from_counts
from blest.runtime import cpu_workers
from blest.runtime.distributed import SerialComm, partition, reduce_sums, run_local_workers

nx = pytest.importorskip("networkx")


def reducible(rng: np.random.Generator, n: int, directed: bool = False) -> Graph:
    """About n vertices: a power-law core with stars of leaves, open twins (copies of a core
    vertex's neighbours), closed twins (a core vertex's neighbours and the vertex), leaves of
    leaves' hubs two deep, isolated vertices and two-vertex components; ids shuffled."""
    core = make_power_law(rng, n // 2)
    src, dst = (list(a) for a in arcs_of(core))
    nxt = core.n
    ptr, idx = core.out_ptr, core.out_idx

    def add(u: int, v: int) -> None:
        src.append(u)
        dst.append(v)

    for _ in range(n // 6):  # leaves, many on a few hubs
        add(nxt, int(rng.integers(0, 8)) if rng.random() < 0.5 else int(rng.integers(core.n)))
        nxt += 1
    for _ in range(n // 12):  # twins of a core vertex, open and closed
        v = int(rng.integers(core.n))
        for w in idx[ptr[v] : ptr[v + 1]].tolist():
            add(nxt, w)
        if rng.random() < 0.5:
            add(nxt, v)
        nxt += 1
    for _ in range(n // 20):  # a path of two hanging off the core: a leaf whose hub has two arcs
        add(nxt, int(rng.integers(core.n)))
        add(nxt + 1, nxt)
        nxt += 2
    for _ in range(n // 30):  # two-vertex components
        add(nxt, nxt + 1)
        nxt += 2
    total = nxt + n // 15  # the rest isolated
    perm = rng.permutation(total)
    s, d = perm[np.asarray(src)], perm[np.asarray(dst)]
    if directed:
        flip = rng.random(s.size) < 0.5
        s, d = np.where(flip, d, s), np.where(flip, s, d)
    return Graph.from_arcs(s, d, total, directed=directed)


def _nx(g: Graph):
    G = nx.DiGraph() if g.directed else nx.Graph()
    G.add_nodes_from(range(g.n))
    G.add_edges_from(zip(*(a.tolist() for a in arcs_of(g)), strict=True))
    return G


def _reduced(graph: Graph, users) -> SourceSums:
    plan = plan_sources(graph, users)
    sums = source_sums(graph, plan.bfs, reverse=graph.directed, pendant=plan.pendant)
    return plan.expand(sums)


def test_every_reduction_applies_and_gives_bit_identical_sums(rng):
    for _ in range(4):
        g = reducible(rng, int(rng.integers(200, 500)))
        users = np.arange(g.n)
        plan = plan_sources(g, users)
        assert plan.alone and plan.leaves and plan.twins and plan.pendant
        assert plan.saved == g.n - plan.bfs.size > plan.alone + plan.leaves // 2
        assert np.all(np.diff(plan.bfs) > 0)
        want = source_sums(g, users, reverse=False)
        assert _reduced(g, users).identical(want)


def test_subsets_with_repeats_and_unscored_hubs(rng):
    g = reducible(rng, 400)
    deg = g.out_degree
    leaves = np.flatnonzero(deg == 1)
    hubs = g.out_idx[g.out_ptr[leaves]]
    lone = leaves[deg[hubs] > 1][:5]  # leaves scored without their hubs
    for _ in range(6):
        users = rng.integers(0, g.n, int(rng.integers(1, 120)))
        users = np.concatenate([users, users[:3], lone])
        rng.shuffle(users)
        plan = plan_sources(g, users)
        assert plan.scored == np.unique(users).size
        assert _reduced(g, users).identical(source_sums(g, users, reverse=False))
    plan = plan_sources(g, lone)
    assert plan.leaves == lone.size and set(plan.bfs.tolist()) <= set(hubs.tolist())
    assert plan_sources(g, []).bfs.size == 0


def test_directed_graphs_skip_all_but_vertices_without_in_arcs(rng):
    for g in (reducible(rng, 300, directed=True), make_directed(rng, 300)):
        plan = plan_sources(g, np.arange(g.n))
        assert not plan.leaves and not plan.twins
        assert plan.alone == np.count_nonzero(g.in_degree == 0)
        assert _reduced(g, np.arange(g.n)).identical(source_sums(g, np.arange(g.n), reverse=True))


def test_plan_of_a_small_graph():
    # 0 hub of leaves 2, 3; 1 (degree 2) hub of leaf 4; 6, 7 open twins; 10, 11 isolated;
    # 5 leaf of 9; 12-13 a two-vertex component (closed twins); 14, 15, 16 a triangle.
    src = [0, 0, 0, 1, 5, 6, 6, 7, 7, 12, 14, 14, 15]
    dst = [1, 2, 3, 4, 9, 8, 9, 8, 9, 13, 15, 16, 16]
    g = Graph.from_arcs(np.array(src), np.array(dst), 17, directed=False)
    plan = plan_sources(g, np.arange(17))
    np.testing.assert_array_equal(plan.bfs, [0, 1, 6, 8, 9, 12, 14])
    kinds = {v: int(k) for v, k in enumerate(plan.how)}
    assert [v for v in kinds if kinds[v] == LEAF] == [2, 3, 4, 5]
    assert [v for v in kinds if kinds[v] == ALONE] == [10, 11]
    assert plan.bfs[plan.origin[7]] == 6 and plan.bfs[plan.origin[13]] == 12
    assert plan.bfs[plan.origin[16]] == 14 and plan.bfs[plan.origin[5]] == 9
    assert (plan.scored, plan.saved, plan.alone, plan.leaves, plan.twins) == (17, 10, 2, 4, 4)
    assert plan.summary() == (
        "7 BFSs for 17 vertices, 10 saved by exact reductions (2 isolated, 4 leaves, 4 twins)"
    )
    same = SourcePlan.identity([3, 3, 1])
    assert same.bfs.tolist() == [3, 3, 1] and not same.saved and not same.pendant
    assert np.all(same.how == COPY)


def test_twins_above_the_degree_cap_keep_their_bfss(rng, monkeypatch):
    """K(3, 9): the 9 vertices of degree 3 are twins, the 3 of degree 9 too; with the cap
    below 9 only the first class is merged, and the sums stay bit-identical either way."""
    src = np.repeat(np.arange(3), 9)
    dst = np.tile(np.arange(3, 12), 3)
    g = Graph.from_arcs(src, dst, 12, directed=False)
    want = source_sums(g, np.arange(12), reverse=False)
    for cap, bfs in ((64, [0, 3]), (8, [0, 1, 2, 3]), (2, list(range(12)))):
        monkeypatch.setattr(R, "TWIN_MAX_DEGREE", cap)
        plan = plan_sources(g, np.arange(12))
        assert plan.bfs.tolist() == bfs, cap
        got = plan.expand(source_sums(g, plan.bfs, reverse=False, pendant=plan.pendant))
        assert got.identical(want), cap


def test_leaves_need_their_hubs_pendant_sums(rng):
    g = reducible(rng, 200)
    plan = plan_sources(g, np.arange(g.n))
    with pytest.raises(ValueError, match="pendant"):
        plan.expand(source_sums(g, plan.bfs, reverse=False))
    with pytest.raises(ValueError, match="sums for a plan"):
        plan.expand(SourceSums.zeros(1, pendant=True))


def test_hash_collisions_never_merge_non_twins(rng, monkeypatch):
    g = reducible(rng, 300)
    want = source_sums(g, np.arange(g.n), reverse=False)
    honest = plan_sources(g, np.arange(g.n))
    monkeypatch.setattr(R, "_mix", lambda x: np.zeros(np.shape(x), dtype=np.uint64))
    plan = plan_sources(g, np.arange(g.n))  # every vertex hashes alike: one class per pass
    assert _reduced(g, np.arange(g.n)).identical(want)
    assert plan.twins <= honest.twins
    # two vertices of equal degree, not twins, one hash: each its own class
    path = Graph.from_arcs(np.array([0, 1, 2]), np.array([1, 2, 3]), 4, directed=False)
    np.testing.assert_array_equal(twin_classes(path, [1, 2]), [1, 2])
    square = Graph.from_arcs(np.array([0, 1, 2, 3]), np.array([1, 2, 3, 0]), 4, directed=False)
    np.testing.assert_array_equal(twin_classes(square, [0, 1, 2, 3]), [0, 1, 0, 1])


def test_twin_classes_are_exact(rng):
    g = reducible(rng, 300)
    rows = np.flatnonzero(g.out_degree > 0)
    rep = twin_classes(g, rows)
    nbrs = [set(g.out_idx[g.out_ptr[v] : g.out_ptr[v + 1]].tolist()) for v in range(g.n)]
    for v, r in zip(rows.tolist(), rep.tolist(), strict=True):
        assert r <= v
        if r != v:
            assert nbrs[v] == nbrs[r] or nbrs[v] | {v} == nbrs[r] | {r}
    classes = {}
    for v in rows.tolist():  # every true twin pair is found (no collision at 64 bits here)
        classes.setdefault(frozenset(nbrs[v]), []).append(v)
    for members in classes.values():
        assert len({int(rep[np.searchsorted(rows, v)]) for v in members}) == 1


def test_pendant_sum_is_the_harmonic_sum_of_an_attached_leaf(rng):
    for _ in range(5):
        core = make_power_law(rng, int(rng.integers(30, 200)))
        src, dst = arcs_of(core)
        hubs = rng.choice(core.n, 8, replace=False)
        leaves = core.n + np.arange(hubs.size)
        g = Graph.from_arcs(
            np.concatenate([src, leaves]), np.concatenate([dst, hubs]), leaves[-1] + 1,
            directed=False,
        )  # fmt: skip
        got = source_sums(g, hubs, reverse=False, pendant=True)
        leaf = source_sums(g, leaves, reverse=False)
        assert got.pendant is not None
        assert got.pendant.tobytes() == leaf.harmonic.tobytes()
        counts = np.array([[1, 3, 0, 0], [1, 1, 2, 5], [1, 0, 0, 0]])
        np.testing.assert_array_equal(
            sums_from_counts(counts, pendant=True).pendant,
            [1.0 + 2 / 2, 1.0 + 0 / 2 + 2 / 3 + 5 / 4, 1.0],
        )


@pytest.mark.parametrize("jit", [False, True])
def test_cpu_engine_pendant_sums_equal_the_reference(rng, jit):
    if jit:
        pytest.importorskip("numba")
    g = reducible(rng, 300)
    users = rng.integers(0, g.n, 200)
    got = cpu_workers.source_sums(g, users, reverse=False, workers=1, jit=jit, pendant=True)
    assert got.identical(source_sums(g, users, reverse=False, pendant=True))
    empty = cpu_workers.source_sums(g, users[:0], reverse=False, pendant=True)
    assert empty.pendant is not None and len(empty) == 0


def test_sums_container_keeps_pendant_sums():
    a = SourceSums([1, 2], [3, 4], [0.5, 1.5], [1.0, 2.0])
    b = SourceSums([5], [6], [2.5], [3.0])
    both = SourceSums.concat([a, b])
    assert both.pendant is not None and both.pendant.tolist() == [1.0, 2.0, 3.0]
    assert SourceSums.concat([a, SourceSums([5], [6], [2.5])]).pendant is None
    assert a.take([1]).pendant.tolist() == [2.0]
    assert a.scatter([0, 2], 3).pendant.tolist() == [1.0, 0.0, 2.0]
    assert not a.identical(SourceSums([1, 2], [3, 4], [0.5, 1.5]))
    assert a.identical(SourceSums([1, 2], [3, 4], [0.5, 1.5], [1.0, 2.0]))
    with pytest.raises(ValueError, match="pendant"):
        SourceSums([1, 2], [3, 4], [0.5, 1.5], [1.0])


def test_reduction_over_ranks_carries_pendant_sums(rng):
    g = reducible(rng, 200)
    plan = plan_sources(g, np.arange(g.n))
    whole = source_sums(g, plan.bfs, reverse=False, pendant=True)
    positions = partition(plan.bfs.size, 8, 0, 1)
    got = reduce_sums(SerialComm(), plan.bfs.size, positions, whole.take(positions))
    assert got.identical(whole)
    got = run_local_workers(_rank_sums, 3, g, plan.bfs)
    assert got.identical(whole)


def _rank_sums(rank, size, comm, g, bfs):
    positions = partition(bfs.size, 8, rank, size)
    local = source_sums(g, bfs[positions], reverse=False, pendant=True)
    return reduce_sums(comm, bfs.size, positions, local)


@pytest.mark.parametrize("directed", [False, True])
def test_closeness_and_harmonic_equal_the_unreduced_run_and_networkx(rng, directed):
    g = reducible(rng, int(rng.integers(200, 400)), directed=directed)
    G = _nx(g)
    lines: list[str] = []
    c = bc.closeness(g, report=lines.append)
    assert c.tobytes() == bc.closeness(g, reduce=False).tobytes()
    want = nx.closeness_centrality(G)
    np.testing.assert_allclose(c, [want[v] for v in range(g.n)], rtol=1e-12)
    h = bc.harmonic(g)
    assert h.tobytes() == bc.harmonic(g, reduce=False).tobytes()
    want = nx.harmonic_centrality(G)
    np.testing.assert_allclose(h, [want[v] for v in range(g.n)], rtol=1e-12)
    assert len(lines) == 1 and "saved by exact reductions" in lines[0]
    some = np.concatenate([rng.integers(0, g.n, 40), [3, 3]])
    assert bc.source_sums(g, some).identical(bc.source_sums(g, some, reduce=False))
    unreduced: list[str] = []
    bc.closeness(g, some, reduce=False, report=unreduced.append)
    assert not unreduced


def test_worker_processes_and_other_engines_reduce_alike(rng):
    g = reducible(rng, 300)
    one = bc.closeness(g)
    assert bc.closeness(g, gpus=2).tobytes() == one.tobytes()
    lines: list[str] = []
    some = rng.integers(0, g.n, 50)
    got = bc.harmonic(g, some, gpus=3, report=lines.append)
    assert got.tobytes() == bc.harmonic(g, some, reduce=False).tobytes()
    assert len(lines) == 1
    emulated = bc.source_sums(g, some[:12], device="emulator")
    assert emulated.identical(bc.source_sums(g, some[:12], reduce=False))


def test_cli_says_how_many_bfss_were_saved(rng, tmp_path, capsys):
    g = reducible(rng, 250)
    path = tmp_path / "g.mtx"
    write_mtx(g, path)
    assert main(["closeness", str(path), "-o", str(tmp_path / "c.npy")]) == 0
    out = capsys.readouterr().out
    plan = plan_sources(g, np.arange(g.n))
    assert f"{plan.saved:,} saved by exact reductions" in out
    assert main(["closeness", str(path), "-o", str(tmp_path / "u.npy"), "--no-reduce"]) == 0
    assert "saved" not in capsys.readouterr().out
    assert np.load(tmp_path / "c.npy").tobytes() == np.load(tmp_path / "u.npy").tobytes()
    assert main(["closeness", str(path), "-o", "-", "--harmonic"]) == 0
    got = capsys.readouterr()
    assert "saved by exact reductions" in got.err and "saved" not in got.out
