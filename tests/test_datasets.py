"""Generators, the Matrix Market writer and the bundled example (CPU, small sizes only)."""

from __future__ import annotations

import gzip
import io

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components, shortest_path

from blest.datasets import (
    delaunay,
    example_path,
    grid2d,
    kronecker,
    load_example,
    random_geometric,
    road_like,
    uniform,
    write_mtx,
)
from blest.graph.core import Graph

EXAMPLE_N = 114_599
EXAMPLE_ARCS = 239_332


def _same(g: Graph, h: Graph) -> bool:
    return (
        g.n == h.n
        and g.directed == h.directed
        and np.array_equal(g.out_ptr, h.out_ptr)
        and np.array_equal(g.out_idx, h.out_idx)
    )


def _assert_clean(g: Graph) -> None:
    """CSR invariants: pointers consistent, sorted rows, no loops, no duplicates."""
    assert g.out_ptr.shape == (g.n + 1,) and g.out_ptr[0] == 0 and g.out_ptr[-1] == g.nnz
    assert g.out_idx.dtype == np.int32
    rows = np.repeat(np.arange(g.n), np.diff(g.out_ptr))
    keys = rows.astype(np.int64) * g.n + g.out_idx
    assert np.all(np.diff(keys) > 0)
    assert not np.any(rows == g.out_idx)
    if not g.directed:
        assert (g.out_csr != g.out_csr.T).nnz == 0


GENERATORS = {
    "kronecker": lambda seed: kronecker(10, 8, seed=seed),
    "uniform": lambda seed: uniform(10, 8, seed=seed),
    "delaunay": lambda seed: delaunay(500, seed=seed),
    "random_geometric": lambda seed: random_geometric(800, avg_degree=8, seed=seed),
    "road_like": lambda seed: road_like(3000, seed=seed),
}


# ---------------------------------------------------------------------- determinism


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_same_seed_same_graph(name):
    make = GENERATORS[name]
    g, h = make(5), make(5)
    _assert_clean(g)
    assert _same(g, h)


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_different_seed_different_graph(name):
    make = GENERATORS[name]
    assert not _same(make(5), make(6))


def test_default_seed_is_the_benchmark_seed():
    assert _same(kronecker(8), kronecker(8, seed=27491095))


# ---------------------------------------------------------------------- kronecker


def test_kronecker_size_and_heavy_tail():
    g = kronecker(12, 16, seed=1)
    n = 1 << 12
    assert g.n == n and not g.directed
    # 2·ef·n arcs before cleaning; the skew makes duplicates (a quarter at this small scale,
    # about 5% at scale 21).
    assert 0.65 * 2 * 16 * n < g.nnz <= 2 * 16 * n
    deg = g.out_degree
    assert deg.max() > 20 * deg.mean()  # hubs
    assert g.isolated > 0.1 * n  # Kronecker leaves many vertices unreached
    # Top 1% of vertices hold well over 5% of the arcs (DESIGN's scale-free-like test).
    top = np.sort(deg)[::-1][: n // 100].sum()
    assert top > 0.05 * g.nnz


def _kronecker_one_stream(scale, edge_factor, seed, block):
    """kronecker's arcs drawn block after block from one stream (the definition its threads
    must reproduce)."""
    n, m = 1 << scale, (1 << scale) * edge_factor
    rng = np.random.default_rng(seed)
    t = [np.uint32(int(x * 2**32)) for x in (0.57, 0.57 + 0.19, 0.57 + 0.19 + 0.19)]
    src, dst = np.zeros(m, np.int64), np.zeros(m, np.int64)
    for lo in range(0, m, block):
        k = min(lo + block, m) - lo
        for _ in range(scale):
            r = rng.bit_generator.random_raw((k + 1) // 2).view(np.uint32)[:k]
            q = (r >= t[0]).astype(np.int64) + (r >= t[1]) + (r >= t[2])
            src[lo : lo + k] = 2 * src[lo : lo + k] + (q >> 1)
            dst[lo : lo + k] = 2 * dst[lo : lo + k] + (q & 1)
    perm = rng.permutation(n)
    return perm[src], perm[dst]


@pytest.mark.parametrize("block,edge_factor", [(1000, 7), (4096, 4), (1 << 22, 3)])
def test_kronecker_blocks_in_threads_follow_one_stream(monkeypatch, block, edge_factor):
    import blest.datasets.generators as gen

    monkeypatch.setattr(gen, "_BLOCK", block)
    src, dst = _kronecker_one_stream(10, edge_factor, 9, block)
    want = Graph.from_arcs(src, dst, 1 << 10, directed=True)
    assert _same(kronecker(10, edge_factor, seed=9, directed=True), want)


def test_kronecker_ids_are_permuted():
    # Unpermuted, the quadrant (0, 0) is the most likely at every level: vertex 0 is the hub.
    raw = kronecker(12, 16, seed=3, permute=False)
    assert int(np.argmax(raw.out_degree)) == 0
    g = kronecker(12, 16, seed=3)
    assert int(np.argmax(g.out_degree)) != 0
    assert g.out_degree[0] < 0.5 * g.out_degree.max()
    # Permuting relabels the same graph: degree multiset unchanged.
    assert np.array_equal(np.sort(raw.out_degree), np.sort(g.out_degree))


def test_kronecker_directed():
    g = kronecker(10, 8, seed=2, directed=True)
    assert g.directed
    assert g.nnz <= 8 * 1024
    assert not np.array_equal(g.out_degree, g.in_degree)


def test_kronecker_bad_parameters():
    with pytest.raises(ValueError):
        kronecker(31)
    with pytest.raises(ValueError):
        kronecker(5, a=0.6, b=0.3, c=0.3)


# ---------------------------------------------------------------------- uniform


def test_uniform_size_and_degrees():
    g = uniform(12, 16, seed=4)
    n = 1 << 12
    assert g.n == n and not g.directed
    # Duplicates are rare: about m^2 / n^2 pairs collide.
    assert 0.99 * 2 * 16 * n < g.nnz <= 2 * 16 * n
    deg = g.out_degree
    assert abs(deg.mean() - 32) < 0.5
    assert deg.max() < 3 * deg.mean()  # Poisson, no hubs
    d = uniform(10, 4, seed=4, directed=True)
    assert d.directed and 0.99 * 4 * 1024 < d.nnz <= 4 * 1024


# ---------------------------------------------------------------------- geometric


def test_delaunay_planar_and_connected():
    n = 2000
    g = delaunay(n, seed=7)
    assert g.n == n and not g.directed
    assert g.nnz <= 2 * (3 * n - 6)
    assert g.nnz > 2 * (3 * n - 6) - 2 * 200  # hull is short: nearly maximal planar
    assert connected_components(g.out_csr, directed=False)[0] == 1
    assert g.out_degree.min() >= 2
    assert _same(delaunay(scale=6, seed=7), delaunay(64, seed=7))
    with pytest.raises(ValueError):
        delaunay(100, scale=7)


@pytest.mark.parametrize("n,strips", [(3000, 3), (20_000, 7), (50, 4)])
def test_delaunay_strips_give_the_one_call_triangulation(n, strips):
    assert _same(delaunay(n, seed=3, strips=strips), delaunay(n, seed=3, strips=1))


def test_delaunay_strips_fall_back_to_one_call(monkeypatch):
    import blest.datasets.generators as gen

    one_call = gen._triangles
    calls = []

    def lossy(points):  # every strip loses a triangle: the count check must catch it
        calls.append(points.shape[0])
        tri = one_call(points)
        return tri if points.shape[0] == 4000 else tri[1:]

    monkeypatch.setattr(gen, "_triangles", lossy)
    assert _same(delaunay(4000, seed=3, strips=2), delaunay(4000, seed=3, strips=1))
    assert len(calls) == 3 * (2 + 2) + 2  # three rounds of 2 strips and 2 bands, then one call
    with pytest.raises(ValueError):
        delaunay(100, strips=0)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 10, 999, 40_000])
def test_road_like_size_connected_and_road_degrees(n):
    g = road_like(n, seed=11)
    _assert_clean(g)
    assert g.n == n and not g.directed
    assert g.report.self_loops == 0 and g.report.duplicates == 0
    if n > 1:
        assert connected_components(g.out_csr, directed=False)[0] == 1
        assert g.out_degree.min() >= 1 and g.out_degree.max() <= 8
    if n >= 10_000:
        share = np.bincount(g.out_degree, minlength=9) / n
        assert 2.35 <= g.nnz / n <= 2.65  # road_usa 2.41, roadNet-CA 2.8
        assert share[2] > 0.5 and share[1] < 0.05 and share[5:].sum() < 0.02
        depth = shortest_path(g.out_csr, unweighted=True, indices=0).max()
        assert depth > np.sqrt(n / 2)  # at least a side of the grid of intersections


def test_road_like_ids_are_local():
    g = road_like(40_000, seed=2)
    rows = np.repeat(np.arange(g.n), np.diff(g.out_ptr))
    span = np.abs(rows - g.out_idx)
    assert np.median(span) < 10 and span.max() < 2 * np.sqrt(g.n)


def test_random_geometric_radius_and_degree():
    n = 1500
    g = random_geometric(n, avg_degree=10, seed=8)
    assert not g.directed and g.n == n
    assert 8 < g.out_degree.mean() < 10.5  # boundary vertices have fewer neighbours
    # The radius form: every arc joins two points within the radius.
    r = 0.03
    h = random_geometric(n, r, seed=8)
    pts = np.random.default_rng(8).random((n, 2))
    rows = np.repeat(np.arange(n), np.diff(h.out_ptr))
    dist = np.linalg.norm(pts[rows] - pts[h.out_idx], axis=1)
    assert dist.max() <= r
    # ... and every close pair is an arc (brute force).
    d2 = ((pts[:, None, :] - pts[None, :, :]) ** 2).sum(-1)
    assert (np.count_nonzero(d2 <= r * r) - n) == h.nnz
    with pytest.raises(ValueError):
        random_geometric(10)


# ---------------------------------------------------------------------- grid


@pytest.mark.parametrize("r,c", [(1, 1), (1, 7), (5, 1), (4, 6), (30, 17)])
def test_grid2d_exact(r, c):
    g = grid2d(r, c)
    assert g.n == r * c and not g.directed
    assert g.nnz == 2 * (2 * r * c - r - c)
    _assert_clean(g)
    deg = g.out_degree
    assert deg.max() <= 4
    if r > 1 and c > 1:
        assert np.count_nonzero(deg == 2) == 4  # corners
    # Diameter r + c - 2, realized between opposite corners.
    d = shortest_path(g.out_csr, unweighted=True, indices=[0])[0]
    assert d.max() == r + c - 2 and d[r * c - 1] == r + c - 2


def test_grid2d_neighbours():
    g = grid2d(3, 4)
    # Vertex 5 = (1, 1): up 1, left 4, right 6, down 9.
    assert g.out_idx[g.out_ptr[5] : g.out_ptr[6]].tolist() == [1, 4, 6, 9]


# ---------------------------------------------------------------------- write_mtx


def _read_back(path) -> sp.coo_matrix:
    if str(path).endswith(".gz"):
        with gzip.open(path, "rb") as f:
            return sp.coo_matrix(scipy.io.mmread(io.BytesIO(f.read())))
    return sp.coo_matrix(scipy.io.mmread(path))


@pytest.mark.parametrize("suffix", [".mtx", ".mtx.gz"])
def test_write_mtx_undirected_round_trip(tmp_path, suffix):
    g = kronecker(9, 8, seed=11)  # has isolated vertices: n must survive
    path = write_mtx(g, tmp_path / f"g{suffix}")
    opener = gzip.open if suffix.endswith(".gz") else open
    with opener(path, "rt") as f:
        assert f.readline().split()[-2:] == ["pattern", "symmetric"]
        body = [line for line in f if not line.startswith("%")]
    assert body[0].split() == [str(g.n), str(g.n), str(g.nnz // 2)]  # one triangle ...
    ij = np.array([line.split() for line in body[1:]], dtype=np.int64)
    assert len(ij) == g.nnz // 2 and np.all(ij[:, 0] > ij[:, 1])  # ... the lower one
    a = _read_back(path).tocsr()  # mmread expands the symmetric file
    a.sort_indices()
    assert a.shape == (g.n, g.n)
    assert np.array_equal(a.indptr, g.out_ptr) and np.array_equal(a.indices, g.out_idx)


def test_write_mtx_directed_round_trip(tmp_path):
    g = Graph.from_arcs([0, 0, 3, 9, 123456], [1, 3, 0, 123456, 5], 200_000, directed=True)
    path = write_mtx(g, tmp_path / "d.mtx")
    text = path.read_text().splitlines()
    assert text[0].split()[-1] == "general"
    assert "1 2" in text and "123457 6" in text and "10 123457" in text  # row = source
    a = _read_back(path).tocsr()
    a.sort_indices()
    assert a.shape == (g.n, g.n)
    assert np.array_equal(a.indptr, g.out_ptr) and np.array_equal(a.indices, g.out_idx)


def test_write_mtx_digit_boundaries(tmp_path):
    # Ids whose 1-based form crosses every power of ten up to 10^6.
    ids = np.array([0, 8, 9, 10, 98, 99, 100, 999, 9999, 99_999, 999_999])
    g = Graph.from_arcs(ids[:-1], ids[1:], 1_000_001, directed=True)
    path = write_mtx(g, tmp_path / "b.mtx")
    lines = path.read_text().splitlines()[3:]
    assert lines == [f"{u + 1} {v + 1}" for u, v in zip(ids[:-1], ids[1:], strict=True)]


def test_write_mtx_empty(tmp_path):
    g = Graph.from_arcs([], [], 5, directed=False)
    a = _read_back(write_mtx(g, tmp_path / "e.mtx"))
    assert a.shape == (5, 5) and a.nnz == 0


# ---------------------------------------------------------------------- bundled example


def test_example_file_size():
    path = example_path()
    assert path.is_file() and path.name == "luxembourg_osm.mtx.gz"
    with gzip.open(path, "rb") as f:
        assert f.readline().split()[-2:] == [b"pattern", b"symmetric"]
        f.seek(0)
        a = sp.coo_matrix(scipy.io.mmread(f))
    assert a.shape == (EXAMPLE_N, EXAMPLE_N)
    g = Graph.from_arcs(a.row, a.col, EXAMPLE_N, directed=False)
    assert g.nnz == EXAMPLE_ARCS
    assert g.isolated == 0 and g.report.self_loops == 0


def test_load_example():
    try:
        g = load_example()
    except NotImplementedError:
        pytest.skip("blest.graph.io.load_graph is not implemented yet")
    assert g.n == EXAMPLE_N and g.nnz == EXAMPLE_ARCS and not g.directed
