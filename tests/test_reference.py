"""CPU references: SciPy BFS levels, the binary-MMA emulation and packing, the BFS emulator.

Every check compares against an independent computation written here (pure-Python BFS, the MMA
definition with Python ints, per-slot popcounts, per-level states derived from SciPy levels).
"""

from __future__ import annotations

import itertools
import time
from collections import deque
from pathlib import Path

import numpy as np
import pytest
from random_graphs import GRAPH_CLASSES, arcs_of, make_hubs, pick_source

from blest import Graph, VariantSpec, build_bvss
from blest.reference import (
    a_fragment,
    b_fragment,
    bfs_levels,
    check_source,
    emulate_bfs,
    emulate_spec,
    mma_m8n8k128_and_popc,
    n_rounds,
    slot_popcounts,
)

SIGMAS = (4, 8, 16, 32)
CLASSES = tuple(GRAPH_CLASSES)

# Every emulator variant: eager x queue, lazy x dirty x queue x (no switching or an eta).
ETAS = (None, 0.5, 2.0, 10.0, 1e9)  # None: switching off; 1e9: bottom-up whenever |Q| > 0
ALL_VARIANTS: list[dict] = [dict(update="eager", queue=q) for q in ("vss", "sweep", "resident")] + [
    dict(update="lazy", dirty_sets=d, queue=q, switching=e is not None, eta=e or 10.0)
    for d, q, e in itertools.product((False, True), ("vss", "sweep"), ETAS)
]


def variant_id(v: dict) -> str:
    parts = [v["update"], v["queue"]]
    if v.get("dirty_sets"):
        parts.append("dirty")
    if v.get("switching"):
        parts.append(f"eta{v['eta']:g}")
    return "-".join(parts)


# ---------------------------------------------------------------------- independent helpers
def python_bfs(graph: Graph, src: int) -> list[int]:
    """Textbook queue BFS over out-arcs, Python lists only."""
    ptr, idx = graph.out_ptr.tolist(), graph.out_idx.tolist()
    levels = [-1] * graph.n
    levels[src] = 0
    todo = deque([src])
    while todo:
        u = todo.popleft()
        for v in idx[ptr[u] : ptr[u + 1]]:
            if levels[v] < 0:
                levels[v] = levels[u] + 1
                todo.append(v)
    return levels


def unpack(words: np.ndarray, n: int) -> np.ndarray:
    """Bits of a uint32 bitmap as bools (length n), asserting the padding bits are zero."""
    assert words.dtype == np.uint32 and words.shape == (-(-n // 32),)
    bits = np.unpackbits(words.astype("<u4").view(np.uint8), bitorder="little").astype(bool)
    assert not bits[n:].any(), "padding bits set"
    return bits[:n]


def expected_queue(frontier: np.ndarray, sigma: int, real_ptrs: np.ndarray) -> np.ndarray:
    sets = sorted({int(v) // sigma for v in np.flatnonzero(frontier)})
    ptr = real_ptrs.tolist()
    return np.array([v for s in sets for v in range(ptr[s], ptr[s + 1])], dtype=np.int64)


def check_states(res, graph: Graph, bvss, ref: np.ndarray, variant: dict, depth_limit=None):
    """Each recorded state against SciPy's levels; directions against the switching rule."""
    n, sigma = graph.n, bvss.sigma
    depth = int(ref.max())
    last = depth + 1 if depth_limit is None or depth_limit > depth else depth_limit
    assert len(res.states) == last + 1
    running = np.zeros_like(res.states[0].frontier)
    switching = variant.get("update") == "lazy" and variant.get("switching", False)
    eta = variant.get("eta", 10.0)
    for lvl, st in enumerate(res.states):
        assert st.level == lvl
        frontier, visited = unpack(st.frontier, n), unpack(st.visited, n)
        np.testing.assert_array_equal(frontier, ref == lvl, err_msg=f"F_{lvl}")
        np.testing.assert_array_equal(visited, (ref >= 0) & (ref <= lvl), err_msg=f"V_{lvl}")
        running |= st.frontier
        np.testing.assert_array_equal(running, st.visited, err_msg="visited != OR of frontiers")
        assert st.queue.dtype == np.int64
        np.testing.assert_array_equal(st.queue, expected_queue(frontier, sigma, bvss.real_ptrs))
        assert st.unvisited == n - int(visited.sum())
        if lvl == last:
            expected = None
        elif switching and st.unvisited < eta * st.queue.size:
            expected = "bottom_up"
        else:
            expected = "top_down"
        assert st.direction == expected, f"level {lvl}"


def assert_same_states(a, b) -> None:
    assert len(a.states) == len(b.states)
    for x, y in zip(a.states, b.states, strict=True):
        np.testing.assert_array_equal(x.frontier, y.frontier)
        np.testing.assert_array_equal(x.visited, y.visited)
        np.testing.assert_array_equal(x.queue, y.queue)
        assert x.unvisited == y.unvisited


def run_and_check(graph: Graph, bvss, src: int, variants: list[dict], ref=None, depth_limit=None):
    """Run every variant; each must match SciPy and the independent states, and each other."""
    ref = bfs_levels(graph, src) if ref is None else ref
    capped = ref if depth_limit is None else np.where(ref <= depth_limit, ref, -1)
    first = None
    for v in variants:
        res = emulate_bfs(bvss, graph, src, depth_limit=depth_limit, **v)
        where = f"{variant_id(v)} sigma={bvss.sigma} src={src} n={graph.n}"
        assert res.levels.dtype == np.int32
        np.testing.assert_array_equal(res.levels, capped, err_msg=where)
        assert res.depth == int(capped.max())
        check_states(res, graph, bvss, ref, v, depth_limit)
        if first is None:
            first = res
        else:
            assert_same_states(first, res)
    return first


# ---------------------------------------------------------------------- SciPy reference
@pytest.mark.parametrize("cls", CLASSES)
def test_scipy_levels_match_python_bfs(cls, rng):
    for _ in range(20):
        g = GRAPH_CLASSES[cls](rng, int(rng.integers(1, 200)))
        for src in {pick_source(rng, g) for _ in range(3)}:
            assert bfs_levels(g, src).tolist() == python_bfs(g, src)


def test_scipy_levels_directed_follow_out_arcs():
    g = Graph.from_arcs([0, 1, 3], [1, 2, 2], 4, directed=True)
    assert bfs_levels(g, 0).tolist() == [0, 1, 2, -1]
    assert bfs_levels(g, 2).tolist() == [-1, -1, 0, -1]
    assert bfs_levels(g, 3).tolist() == [-1, -1, 1, 0]


def test_scipy_levels_large_grid_and_path():
    """1M-vertex grid (levels = Manhattan distance, ~2000 levels) and a 300K-level path."""
    k = 1000
    ids = np.arange(k * k)
    r, c = np.divmod(ids, k)
    src = np.concatenate([ids[c < k - 1], ids[r < k - 1]])
    dst = np.concatenate([ids[c < k - 1] + 1, ids[r < k - 1] + k])
    g = Graph.from_arcs(src, dst, k * k, directed=False)
    t0 = time.perf_counter()
    levels = bfs_levels(g, 0)
    assert time.perf_counter() - t0 < 20.0
    np.testing.assert_array_equal(levels, r + c)
    levels = bfs_levels(g, k * k - 1)
    np.testing.assert_array_equal(levels, (k - 1 - r) + (k - 1 - c))
    n = 300_000
    path = Graph.from_arcs(np.arange(n - 1), np.arange(1, n), n, directed=True)
    levels = bfs_levels(path, 7)
    np.testing.assert_array_equal(levels[7:], np.arange(n - 7))
    assert (levels[:7] == -1).all()


def test_source_validation():
    g = Graph.from_arcs([0], [1], 3, directed=True)
    assert bfs_levels(g, np.int64(2)).tolist() == [-1, -1, 0]
    assert check_source(np.uint8(1), 3) == 1
    for bad in (-1, 3, 10**12):
        with pytest.raises(IndexError, match="out of range"):
            bfs_levels(g, bad)
    for bad in (1.0, "1", None, True):
        with pytest.raises(ValueError, match="integer"):
            bfs_levels(g, bad)
    empty = Graph.from_arcs([], [], 0, directed=True)
    with pytest.raises(IndexError, match="no vertices"):
        bfs_levels(empty, 0)
    b = build_bvss(g, 8)
    with pytest.raises(IndexError):
        emulate_bfs(b, g, 3)


# ---------------------------------------------------------------------- MMA emulation
def mma_definition(a: list[int], b: list[int], c: list[list[int]] | None = None):
    """D[i][j] = C[i][j] + sum_w popc(A[4i+w] & B[4j+w]); lane t gets row t//4, cols 2(t%4)+h."""
    d = [[sum(bin(a[4 * i + w] & b[4 * j + w]).count("1") for w in range(4)) for j in range(8)]
         for i in range(8)]  # fmt: skip
    out = [[d[t // 4][2 * (t % 4)], d[t // 4][2 * (t % 4) + 1]] for t in range(32)]
    if c is not None:
        out = [[out[t][h] + c[t][h] for h in range(2)] for t in range(32)]
    return out


def random_words(rng, shape) -> np.ndarray:
    """Random uint32 words with varied densities (sparse, dense, uniform)."""
    w = rng.integers(0, 2**32, size=shape, dtype=np.uint64).astype(np.uint32)
    density = rng.choice(3, size=shape)
    w = np.where(density == 0, w & rng.integers(0, 2**32, size=shape, dtype=np.uint32), w)
    return np.where(density == 1, w | rng.integers(0, 2**32, size=shape, dtype=np.uint32), w)


def test_mma_matches_definition(rng):
    a, b = random_words(rng, (3, 4, 32)), random_words(rng, (3, 4, 32))
    c = rng.integers(-1000, 1000, size=(3, 4, 32, 2), dtype=np.int32)
    got = mma_m8n8k128_and_popc(a, b)
    got_c = mma_m8n8k128_and_popc(a, b, c)
    assert got.shape == (3, 4, 32, 2) and got.dtype == np.int32
    for i, j in np.ndindex(3, 4):
        aa, bb = a[i, j].tolist(), b[i, j].tolist()
        assert got[i, j].tolist() == mma_definition(aa, bb)
        assert got_c[i, j].tolist() == mma_definition(aa, bb, c[i, j].tolist())


def test_mma_extremes_and_broadcast(rng):
    ones = np.full(32, 0xFFFFFFFF, dtype=np.uint32)
    assert (mma_m8n8k128_and_popc(ones, ones) == 128).all()
    assert (mma_m8n8k128_and_popc(ones, np.zeros(32, np.uint32)) == 0).all()
    a = random_words(rng, (5, 32))
    b = random_words(rng, 32)
    got = mma_m8n8k128_and_popc(a, b)  # one B for a batch of A
    for i in range(5):
        assert got[i].tolist() == mma_definition(a[i].tolist(), b.tolist())
    # a single set bit in lane t of A and lane u of B shows up only at D[t//4][u//4]
    for t, u in ((0, 0), (5, 13), (31, 30), (17, 2)):
        aa, bb = np.zeros(32, np.uint32), np.zeros(32, np.uint32)
        aa[t] = bb[u] = 1 << 7
        d = mma_m8n8k128_and_popc(aa, bb)
        expected = np.zeros((8, 8), np.int32)
        expected[t // 4, u // 4] = int(t % 4 == u % 4)
        assert d.reshape(8, 8).tolist() == expected.tolist()
    with pytest.raises(ValueError, match="32 lanes"):
        mma_m8n8k128_and_popc(np.zeros(16, np.uint32), np.zeros(16, np.uint32))
    with pytest.raises(ValueError, match="32-bit"):
        mma_m8n8k128_and_popc(np.full(32, -1), ones)


@pytest.mark.parametrize("sigma", SIGMAS)
def test_fragments(sigma, rng):
    full = (1 << sigma) - 1
    assert n_rounds(sigma) == {4: 4, 8: 2, 16: 1, 32: 1}[sigma]
    m = random_words(rng, (6, 32))
    for r in range(n_rounds(sigma)):
        a = a_fragment(m, sigma, r)
        width = min(32, 2 * sigma)
        expected = [
            [(w >> (2 * sigma * r)) & ((1 << width) - 1) for w in row] for row in m.tolist()
        ]
        assert a.tolist() == expected
    with pytest.raises(ValueError):
        a_fragment(m, sigma, n_rounds(sigma))
    alpha = rng.integers(0, full, size=6, endpoint=True, dtype=np.uint64).astype(np.uint32)
    b = b_fragment(alpha, sigma)
    assert b.shape == (6, 32) and b.dtype == np.uint32
    for row, al in zip(b.tolist(), alpha.tolist(), strict=True):
        for lane, word in enumerate(row):
            if lane in (0, 9, 18, 27):
                assert word == al
            elif lane in (4, 13, 22, 31) and sigma < 32:
                assert word == (al << sigma) & 0xFFFFFFFF
            else:
                assert word == 0
        # as a matrix: column 2c holds alpha in k-word c, column 2c+1 alpha << sigma
        for col, kw in itertools.product(range(8), range(4)):
            want = 0 if kw != col // 2 else (al if col % 2 == 0 else (al << sigma) * (sigma < 32))
            assert row[4 * col + kw] == want
    if sigma < 32:
        with pytest.raises(ValueError, match="bit value"):
            b_fragment(np.uint32(full + 1), sigma)
    with pytest.raises(ValueError, match="sigma"):
        b_fragment(alpha, 6)


@pytest.mark.parametrize("sigma", SIGMAS)
def test_slot_popcounts_bruteforce(sigma, rng):
    theta, full = 32 // sigma, (1 << sigma) - 1
    masks = random_words(rng, (40, 32))
    alpha = rng.integers(0, full, size=40, endpoint=True, dtype=np.uint64).astype(np.uint32)
    alpha[:3] = (0, full, 1)
    got = slot_popcounts(masks, alpha, sigma)
    assert got.shape == (40, 32, theta) and got.dtype == np.int32
    for v in range(40):
        al = int(alpha[v])
        expected = [
            [bin((w >> (k * sigma)) & full & al).count("1") for k in range(theta)]
            for w in masks[v].tolist()
        ]
        assert got[v].tolist() == expected, f"vss {v}"
    # and every MMA output not used by the packing is zero (sigma = 32: c1 of each lane)
    if sigma == 32:
        d = mma_m8n8k128_and_popc(a_fragment(masks, 32, 0), b_fragment(alpha, 32))
        assert (d[..., 1] == 0).all()


# ---------------------------------------------------------------------- emulator
@pytest.mark.parametrize("sigma", SIGMAS)
@pytest.mark.parametrize("cls", CLASSES)
def test_emulator_matches_scipy(cls, sigma, rng):
    """20 graphs of 30-300 vertices per class and sigma; each with eager and lazy plus four
    more variants in rotation, so that every variant runs on every class and sigma."""
    for i in range(20):
        g = GRAPH_CLASSES[cls](rng, int(rng.integers(30, 301)))
        src = pick_source(rng, g)
        rotation = [ALL_VARIANTS[(4 * i + j) % len(ALL_VARIANTS)] for j in range(4)]
        run_and_check(g, build_bvss(g, sigma), src, [ALL_VARIANTS[0], ALL_VARIANTS[2], *rotation])


@pytest.mark.parametrize("sigma", SIGMAS)
def test_emulator_all_variants_and_depth_limit(sigma, rng):
    """Every variant on the same graphs and sources (multi-VSS slice sets included), and
    depth limits."""
    for cls in (*CLASSES, "hubs"):
        make = make_hubs if cls == "hubs" else GRAPH_CLASSES[cls]
        g = make(rng, int(rng.integers(200, 601)))
        b = build_bvss(g, sigma)
        src = pick_source(rng, g)
        res = run_and_check(g, b, src, ALL_VARIANTS)
        for limit in {0, 1, max(res.depth - 1, 0), res.depth, res.depth + 3}:
            run_and_check(g, b, src, [ALL_VARIANTS[0], ALL_VARIANTS[7]], depth_limit=limit)
    b = build_bvss(make_hubs(rng, 600), sigma)
    assert (np.diff(b.real_ptrs) > 1).any(), "hubs should split a slice set into several VSSs"


@pytest.mark.parametrize("sigma", SIGMAS)
def test_emulator_edge_cases(sigma, rng):
    cases = []
    for n in (1, 2, 3, 31, 32, 33, 100):  # zero edges (no VSS at all), single vertex
        cases.append((Graph.from_arcs([], [], n, directed=bool(n % 2)), n - 1))
    for n in (2, 3, sigma - 1, sigma + 1, 33, 65, 97):  # n < sigma, n not a multiple of 32
        n = max(n, 2)
        m = 3 * n
        g = Graph.from_arcs(rng.integers(0, n, m), rng.integers(0, n, m), n, directed=n % 2 == 1)
        cases.append((g, int(rng.integers(n))))
    g = GRAPH_CLASSES["uniform"](rng, 120)  # isolated source: only level 0
    s, d = arcs_of(g)
    keep = (s != 5) & (d != 5)
    cases.append((Graph.from_arcs(s[keep], d[keep], 120, directed=False), 5))
    g = Graph.from_arcs([0, 1], [1, 2], 40, directed=True)  # source with only in-arcs
    cases.append((g, 2))
    for g, src in cases:
        b = build_bvss(g, sigma)
        res = run_and_check(g, b, src, ALL_VARIANTS)
        if g.out_degree[src] == 0:
            assert res.depth == 0 and len(res.states) == 2
            assert res.states[1].direction is None and res.states[1].queue.size == 0


def test_emulate_spec_and_options(rng):
    g = GRAPH_CLASSES["directed"](rng, 150)
    src = pick_source(rng, g)
    ref = bfs_levels(g, src)
    for spec in (VariantSpec(), VariantSpec(sigma=4, update="eager", switching=False),
                 VariantSpec(sigma=32, dirty_sets=True, queue="sweep")):  # fmt: skip
        b = build_bvss(g, spec.sigma)
        res = emulate_spec(b, g, src, spec, eta=1e9)
        np.testing.assert_array_equal(res.levels, ref)
        v = dict(update=spec.update, switching=spec.switching, eta=1e9)
        check_states(res, g, b, ref, v)
        if spec.switching and res.depth > 0:
            assert "bottom_up" in res.directions
    b = build_bvss(g, 8)
    with pytest.raises(ValueError, match="sigma"):
        emulate_spec(b, g, src, VariantSpec(sigma=16))
    with pytest.raises(ValueError, match="lazy"):
        emulate_bfs(b, g, src, update="eager", switching=True)
    with pytest.raises(ValueError):
        emulate_bfs(b, g, src, queue="bogus")
    with pytest.raises(ValueError, match="resident.*eager"):
        emulate_bfs(b, g, src, update="lazy", queue="resident")
    res = emulate_bfs(b, g.in_csr, src, switching=True, eta=1e9, record=False)
    assert res.states is None
    np.testing.assert_array_equal(res.levels, ref)
    res = emulate_bfs(b, (g.in_ptr, g.in_idx), src, switching=True, eta=1e9)
    np.testing.assert_array_equal(res.levels, ref)
    other = GRAPH_CLASSES["uniform"](rng, 151)
    with pytest.raises(ValueError, match="vertices"):
        emulate_bfs(b, other, src)


# ---------------------------------------------------------------------- shared data sets
def _shared_data() -> Path | None:
    for p in (Path(__file__).resolve().parents[1].parent / "shared" / "data",
              Path("/work/shared/data")):  # fmt: skip
        if p.is_dir():
            return p
    return None


DATA = _shared_data()


def _load(name: str) -> Graph:
    if DATA is None or not (DATA / name).exists():
        pytest.skip(f"shared data set {name} not available")
    path = DATA / name
    if name.endswith(".mtx"):
        import scipy.io

        m = scipy.io.mmread(path).tocoo()
        return Graph.from_arcs(m.row, m.col, m.shape[0], directed=False)
    arcs = np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.int64)
    return Graph.from_arcs(arcs[:, 0], arcs[:, 1], int(arcs.max()) + 1, directed=False)


def test_shared_luxembourg_road(rng):
    """~1000 levels: eager and lazy (dirty sets, sweep, switching at eta = 10) agree with SciPy
    and with each other level by level."""
    g = _load("luxembourg_osm.mtx")
    b = build_bvss(g, 8)
    active = np.flatnonzero(g.out_degree > 0)
    s1, s2 = (int(s) for s in rng.choice(active, 2, replace=False))
    lazy_switch = dict(update="lazy", dirty_sets=True, queue="sweep", switching=True, eta=10.0)
    res = run_and_check(g, b, s1, [dict(update="eager", queue="vss"), lazy_switch])
    assert res.depth > 300
    run_and_check(g, b, s2, [dict(update="lazy", queue="vss", switching=True, eta=10.0)])


def test_shared_facebook_social(rng):
    g = _load("musae_facebook.csv")
    active = np.flatnonzero(g.out_degree > 0)
    for sigma, src in zip((8, 4, 32), rng.choice(active, 3, replace=False), strict=True):
        variants = [dict(update="eager", queue="vss"),
                    dict(update="lazy", queue="vss", switching=True, eta=10.0),
                    dict(update="lazy", dirty_sets=True, queue="sweep")]  # fmt: skip
        run_and_check(g, build_bvss(g, sigma), int(src), variants)
