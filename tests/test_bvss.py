"""BVSS layout invariants and statistics against a slow, independent pure-Python builder."""

from __future__ import annotations

import statistics

import numpy as np
import pytest
from random_graphs import GRAPH_CLASSES, arcs_of, make_hubs

from blest import Graph, build_bvss

SIGMAS = (4, 8, 16, 32)
CLASSES = tuple(GRAPH_CLASSES)


def slow_bvss(graph: Graph, sigma: int) -> dict:
    """The BVSS arrays and statistics from DESIGN.md's definitions, one Python loop at a time."""
    n, theta = graph.n, 32 // sigma
    tau = 32 * theta
    ptr, idx = graph.out_ptr.tolist(), graph.out_idx.tolist()
    n_sets = -(-n // sigma)
    slices: list[dict[int, int]] = [{} for _ in range(n_sets)]  # set -> row -> mask
    for u in range(n):
        for v in idx[ptr[u] : ptr[u + 1]]:
            row_masks = slices[u // sigma]
            row_masks[v] = row_masks.get(v, 0) | (1 << (u % sigma))
    row_ids: list[int] = []
    masks: list[int] = []
    real_ptrs = [0]
    v2r: list[int] = []
    spreads: list[float] = []
    for s in range(n_sets):
        ordered = sorted(slices[s].items())
        for start in range(0, len(ordered), tau):
            chunk = ordered[start : start + tau]
            rows = [chunk[min(p, len(chunk) - 1)][0] for p in range(tau)]
            ms = [chunk[p][1] if p < len(chunk) else 0 for p in range(tau)]
            row_ids += rows
            masks += [sum(ms[lane * theta + k] << (k * sigma) for k in range(theta))
                      for lane in range(32)]  # fmt: skip
            v2r.append(s)
            cols = []
            for k in range(theta):
                live = [rows[lane * theta + k] for lane in range(32) if ms[lane * theta + k]]
                if live:
                    cols.append(statistics.pstdev(live))
            if cols:
                spreads.append(sum(cols) / len(cols))
        real_ptrs.append(len(v2r))
    nv = len(v2r)
    real = sum(len(d) for d in slices)
    return dict(
        row_ids=row_ids,
        masks=masks,
        real_ptrs=real_ptrs,
        virtual_to_real=v2r,
        n_slice_sets=n_sets,
        n_vss=nv,
        real_slices=real,
        padded_slices=nv * tau - real,
        compression_ratio=graph.nnz / (real * sigma) if real else 0.0,
        u_div=sum(spreads) / len(spreads) if spreads else 0.0,
        gpu_bytes=4 * (nv * tau + nv * 32 + n_sets + 1 + nv),
    )


def check_invariants(graph: Graph, b) -> None:
    """The layout rules of DESIGN.md checked on the built arrays themselves."""
    sigma, theta, tau, nv = b.sigma, b.theta, b.tau, b.n_vss
    assert b.row_ids.dtype == np.int32 and b.row_ids.shape == (nv * tau,)
    assert b.masks.dtype == np.uint32 and b.masks.shape == (nv * 32,)
    assert b.real_ptrs.shape == (b.n_slice_sets + 1,) and b.virtual_to_real.shape == (nv,)
    ptrs = b.real_ptrs.tolist()
    assert ptrs[0] == 0 and ptrs[-1] == nv and all(np.diff(b.real_ptrs) >= 0)
    v2r = b.virtual_to_real.tolist()
    assert v2r == [s for s in range(b.n_slice_sets) for _ in range(ptrs[s], ptrs[s + 1])]
    rows = b.row_ids.reshape(nv, tau).tolist()
    words = b.masks.reshape(nv, 32).tolist()
    full = (1 << sigma) - 1
    decoded = []  # one (source, destination) per mask bit
    for s in range(b.n_slice_sets):
        set_rows = []
        for v in range(ptrs[s], ptrs[s + 1]):
            ms = [(words[v][p // theta] >> ((p % theta) * sigma)) & full for p in range(tau)]
            n_real = sum(1 for m in ms if m)
            assert n_real > 0, "a VSS without slices"
            assert all(ms[:n_real]) and not any(ms[n_real:]), "padding must trail, masks zero"
            if v < ptrs[s + 1] - 1:
                assert n_real == tau, "only the last VSS of a set is padded"
            assert rows[v][n_real:] == [rows[v][n_real - 1]] * (tau - n_real), "padding rowIds"
            set_rows += rows[v][:n_real]
            for p in range(n_real):
                decoded += [(s * sigma + k, rows[v][p]) for k in range(sigma) if ms[p] >> k & 1]
        assert set_rows == sorted(set(set_rows)), "slices in strictly ascending row id"
    src, dst = arcs_of(graph)
    assert len(decoded) == graph.nnz == b.nnz, "each arc is exactly one mask bit"
    assert sorted(decoded) == sorted(zip(src.tolist(), dst.tolist(), strict=True))


def check_against_slow(graph: Graph, sigma: int) -> None:
    b = build_bvss(graph, sigma)
    check_invariants(graph, b)
    want = slow_bvss(graph, sigma)
    assert b.row_ids.tolist() == want["row_ids"]
    assert b.masks.tolist() == want["masks"]
    assert b.real_ptrs.tolist() == want["real_ptrs"]
    assert b.virtual_to_real.tolist() == want["virtual_to_real"]
    st = b.stats()
    assert st.sigma == sigma
    for key in ("n_slice_sets", "n_vss", "real_slices", "padded_slices", "gpu_bytes"):
        assert getattr(st, key) == want[key], key
    assert st.compression_ratio == pytest.approx(want["compression_ratio"], rel=1e-12)
    assert st.u_div == pytest.approx(want["u_div"], rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("sigma", SIGMAS)
@pytest.mark.parametrize("cls", CLASSES)
def test_bvss_matches_slow_builder(cls, sigma, rng):
    for _ in range(12):
        check_against_slow(GRAPH_CLASSES[cls](rng, int(rng.integers(1, 301))), sigma)


@pytest.mark.parametrize("sigma", SIGMAS)
def test_bvss_edge_cases(sigma, rng):
    graphs = [Graph.from_arcs([], [], n, directed=d) for n in (0, 1, 5, 32, 33) for d in (0, 1)]
    for n in (2, 3, sigma - 1, 31, 33, 63, 65, 100):  # n < sigma, n not a multiple of 32
        n = max(n, 2)
        m = int(rng.integers(1, 4 * n))
        graphs.append(Graph.from_arcs(rng.integers(0, n, m), rng.integers(0, n, m), n,
                                      directed=bool(rng.random() < 0.5)))  # fmt: skip
    graphs.append(make_hubs(rng, 600))  # slice sets of several VSSs
    for g in graphs:
        check_against_slow(g, sigma)
    empty = build_bvss(Graph.from_arcs([], [], 5, directed=False), sigma)
    assert empty.n_vss == 0 and empty.stats().compression_ratio == 0.0
    assert empty.real_ptrs.tolist() == [0] * (-(-5 // sigma) + 1)
    assert (np.diff(build_bvss(graphs[-1], sigma).real_ptrs) > 1).any()


def test_bvss_complete_bipartite_block():
    """Hand-checked: sigma sources all pointing at the same rows give full masks."""
    sigma = 8
    src = np.repeat(np.arange(8), 300)
    dst = np.tile(np.arange(8, 308), 8)
    b = build_bvss(Graph.from_arcs(src, dst, 308, directed=True), sigma)
    st = b.stats()
    assert (st.n_vss, st.real_slices, st.padded_slices) == (3, 300, 3 * 128 - 300)
    assert st.compression_ratio == 1.0
    assert b.real_ptrs.tolist()[:2] == [0, 3]
    assert b.row_ids.tolist()[256:] == list(range(264, 308)) + [307] * 84
    words = b.masks.reshape(3, 32)
    assert (words[:2] == 0xFFFFFFFF).all()
    assert words[2].tolist() == [0xFFFFFFFF] * 11 + [0] * 21  # 44 = 11 lanes x 4 slots


def test_bvss_rejects_bad_sigma():
    with pytest.raises(ValueError, match="sigma"):
        build_bvss(Graph.from_arcs([0], [1], 2, directed=True), 12)


@pytest.mark.parametrize("pieces", ("one", "many"))
@pytest.mark.parametrize("sigma", (4, 8, 16, 32))
def test_generic_build_path_equals_numpy_path(rng, sigma, pieces, monkeypatch):
    """The CuPy build path, run with NumPy as its array module, equals the NumPy path, whether
    the latter builds in one piece or in parallel ranges of slice sets."""
    import blest.graph.bvss as bvss_module
    from blest.graph.bvss import _build_numpy, _build_xp

    if pieces == "many":
        monkeypatch.setattr(bvss_module, "_PARALLEL_MIN_ARCS", 0)

    for make in [*GRAPH_CLASSES.values(), make_hubs]:
        g = make(rng, int(rng.integers(1, 400)))
        a, b = _build_numpy(g, sigma), _build_xp(g, sigma, np)
        for name in ("row_ids", "masks", "real_ptrs", "virtual_to_real"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
        assert a.real_slices == b.real_slices and a.nnz == b.nnz
