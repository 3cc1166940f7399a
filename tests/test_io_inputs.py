"""Inputs users bring: SciPy's ``save_npz`` files load as the matrix in memory does; the file
name picks the reader (the content never silently overrides it); headerless ``.mtx`` files
get a hint, say what was assumed, and load without a phantom vertex with ``one_based``."""

from __future__ import annotations

import gzip
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import blest
from blest.cli import main
from blest.errors import ArgumentError, GraphFormatError, GraphLimitError
from blest.graph.io import load_graph
from blest.reference import bfs_levels

MM = "%%MatrixMarket matrix coordinate pattern general\n"


def _random_matrix(rng: np.random.Generator, n: int, symmetric: bool) -> sp.csr_array:
    m = sp.random_array((n, n), density=min(1.0, 4 / n), format="coo", rng=rng)
    m.data[: m.nnz // 5] = 0.0  # explicit zeros are still entries
    if symmetric:
        m = sp.coo_array((np.r_[m.data, m.data], (np.r_[m.row, m.col], np.r_[m.col, m.row])))
        m.resize((n, n))
    return m


# ====================================================================== item 13
@pytest.mark.parametrize("kind", ["csr", "csc", "coo", "bsr", "dia"])
@pytest.mark.parametrize("symmetric", [False, True])
def test_scipy_save_npz_loads_as_the_matrix_in_memory(tmp_path, rng, kind, symmetric):
    n = int(rng.integers(20, 80)) * 2
    base = _random_matrix(rng, n, symmetric)
    matrix = {
        "csr": base.tocsr,
        "csc": base.tocsc,
        "coo": lambda: base,
        "bsr": lambda: base.tobsr(blocksize=(2, 2)),
        "dia": lambda: sp.dia_array(sp.eye_array(n, k=3) + sp.eye_array(n, k=-2)),
    }[kind]()
    if symmetric and kind == "dia":
        matrix = sp.dia_array(sp.eye_array(n, k=3) + sp.eye_array(n, k=-3))
    for as_matrix in (False, True):
        m = sp.csr_matrix(matrix).asformat(kind) if as_matrix else matrix
        for compressed in (True, False):
            p = tmp_path / f"m{int(as_matrix)}{int(compressed)}.npz"
            sp.save_npz(p, m, compressed=compressed)
            want = load_graph(m)
            got = load_graph(p)
            assert got.content_hash() == want.content_hash()
            assert got.directed == want.directed and got.report.source == str(p)
            assert got.report.format == f"scipy-{kind}"
            assert got.report.self_loops == want.report.self_loops
            if kind == "dia" or symmetric:
                assert got.directed == (not symmetric)
    for directed in (True, False):
        assert (
            load_graph(p, directed=directed).content_hash()
            == load_graph(matrix, directed=directed).content_hash()
        )
    r = load_graph(p, relabel=True)
    assert r.content_hash() == load_graph(matrix, relabel=True).content_hash()
    gz = tmp_path / "m.npz.gz"
    gz.write_bytes(gzip.compress(p.read_bytes()))
    assert load_graph(gz).content_hash() == load_graph(matrix).content_hash()
    src = int(rng.integers(0, n))
    assert np.array_equal(bfs_levels(load_graph(p), src), bfs_levels(load_graph(matrix), src))


def test_scipy_npz_explicit_zeros_and_duplicates_are_entries(tmp_path):
    m = sp.coo_array(([0.0, 1.0, 2.0, 5.0], ([0, 1, 1, 2], [1, 2, 2, 2])), shape=(3, 3))
    p = tmp_path / "z.npz"
    sp.save_npz(p, m)
    g = load_graph(p)
    assert g.directed and g.out_idx.tolist() == [1, 2]  # 0→1 (a zero) and 1→2
    assert (g.report.duplicates, g.report.self_loops) == (1, 1)


def _save_members(path: Path, **arrays) -> Path:
    np.savez(path, **arrays)
    return path


def test_malformed_scipy_npz_files_are_refused_by_name(tmp_path):
    ok = {
        "format": np.array(b"csr"),
        "shape": np.array([3, 3]),
        "indptr": np.array([0, 1, 2, 2]),
        "indices": np.array([1, 2]),
        "data": np.array([1.0, 1.0]),
    }
    assert load_graph(_save_members(tmp_path / "ok.npz", **ok)).nnz == 2
    bad = {
        "index past n": ({"indices": np.array([1, 3])}, "indices outside 0..2"),
        "negative index": ({"indices": np.array([-1, 2])}, "indices outside"),
        "falling indptr": ({"indptr": np.array([0, 2, 1, 2])}, "indptr must rise"),
        "short indptr": ({"indptr": np.array([0, 2])}, "indptr must hold 4"),
        "float indices": ({"indices": np.array([1.0, 2.0])}, "integer"),
        "bad shape": ({"shape": np.array([3])}, "shape must be two"),
    }
    for name, (change, words) in bad.items():
        p = _save_members(tmp_path / f"{name.replace(' ', '_')}.npz", **{**ok, **change})
        with pytest.raises(GraphFormatError, match=words) as info:
            load_graph(p)
        assert info.value.path == str(p), name
    p = _save_members(tmp_path / "wide.npz", **{**ok, "shape": np.array([3, 4])})
    with pytest.raises(GraphFormatError, match="3 x 4 sparse matrix is not an adjacency"):
        load_graph(p)
    p = _save_members(tmp_path / "huge.npz", **{**ok, "shape": np.array([2**40, 2**40])})
    with pytest.raises(GraphLimitError):
        load_graph(p)
    coo = {"format": np.array(b"coo"), "shape": np.array([4, 4]), "data": np.ones(2)}
    p = _save_members(tmp_path / "coo.npz", **coo, row=np.array([0, 1]), col=np.array([1]))
    with pytest.raises(GraphFormatError, match="differ in length"):
        load_graph(p)


# ====================================================================== item 8
def test_a_metis_file_with_a_bad_fmt_field_is_not_read_as_an_edge_list(tmp_path):
    p = tmp_path / "bad.graph"
    p.write_text("3 2 2\n2\n1 3\n2\n")  # fmt 2 is not METIS: it once loaded as an edge list
    with pytest.raises(GraphFormatError, match="unsupported fmt") as info:
        load_graph(p)
    assert info.value.line == 1


def test_an_edge_list_that_reads_as_metis_stays_an_edge_list(tmp_path):
    text = "2 1 1\n2 5\n1 5\n"  # also METIS: 2 vertices, 1 edge of weight 5
    p = tmp_path / "e.txt"
    p.write_text(text)
    with pytest.warns(UserWarning, match="also a valid METIS file"):
        g = load_graph(p)
    assert g.report.format == "edgelist" and g.directed
    assert sorted(zip(*np.nonzero(g.out_csr.toarray()), strict=True)) == [(1, 5), (2, 1), (2, 5)]
    assert load_graph(p, format="metis").report.format == "metis"
    q = tmp_path / "e.dat"  # an unknown name: the content decides
    q.write_text(text)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load_graph(q).report.format == "metis"


# ====================================================================== item 15
def test_a_headerless_mtx_gets_a_hint_that_says_what_would_be_assumed(tmp_path, capsys):
    p = tmp_path / "roads.mtx"
    p.write_text("1 2\n2 3\n3 4\n")
    with pytest.raises(GraphFormatError) as info:
        load_graph(p)
    text = str(info.value)
    assert "not a Matrix Market file" in text and "format='edgelist' (--format edgelist)" in text
    assert "directed unless directed=False (--undirected)" in text
    assert "one_based=True (--one-based)" in text
    assert main(["bfs", str(p), "1"]) == 2
    assert "--format edgelist" in capsys.readouterr().err


def test_forcing_edgelist_on_an_mtx_name_warns_of_direction_and_a_phantom_vertex(tmp_path):
    p = tmp_path / "roads.mtx"
    p.write_text("1 2\n2 3\n3 4\n")
    with pytest.warns(UserWarning) as record:
        g = load_graph(p, format="edgelist")
    (message,) = [str(w.message) for w in record]
    assert "as a directed graph" in message and "id 0 never occurs" in message
    assert g.n == 5 and g.isolated == 1  # the phantom vertex 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        h = load_graph(p, format="edgelist", one_based=True, directed=False)
    assert h.n == 4 and h.isolated == 0 and not h.directed


def test_one_based_edge_lists_match_matrix_market(tmp_path, rng):
    n, m = 60, 200
    u, v = rng.integers(1, n + 1, m), rng.integers(1, n + 1, m)
    u[0], v[0] = 1, n  # both ends of the range occur
    body = "".join(f"{a} {b}\n" for a, b in zip(u, v, strict=True))
    plain = tmp_path / "e.txt"
    plain.write_text("# one-based\n" + body)
    mtx = tmp_path / "m.mtx"
    mtx.write_text(MM + f"{n} {n} {m}\n" + body)
    for directed in (None, False):
        a = load_graph(plain, one_based=True, directed=directed)
        b = load_graph(mtx, directed=directed)
        assert a.content_hash() == b.content_hash()
        assert np.array_equal(blest.closeness(a), blest.closeness(b))
    phantom = load_graph(plain)  # without one_based: vertex 0 shifts every score
    assert phantom.n == n + 1
    assert not np.allclose(blest.closeness(phantom)[1:], blest.closeness(load_graph(mtx)))
    zero = tmp_path / "z.txt"
    zero.write_text("1 2\n# c\n2 0\n")
    with pytest.raises(GraphFormatError, match="vertex id 0") as info:
        load_graph(zero, one_based=True)
    assert info.value.line == 3
    with pytest.raises(ArgumentError, match="edge-list files only"):
        load_graph(np.array([[1, 2], [2, 3]]), one_based=True)
    with pytest.raises(ArgumentError, match="edge lists"):
        load_graph(mtx, one_based=True)
    with pytest.raises(ArgumentError):
        load_graph(plain, one_based=True, format="metis")


def test_one_based_on_the_command_line(tmp_path, capsys):
    p = tmp_path / "e.txt"
    p.write_text("1 2\n2 3\n")
    out = tmp_path / "levels.txt"
    assert main(["bfs", str(p), "0", "--one-based", "--out", str(out)]) == 0
    assert out.read_text().split() == ["0", "1", "2"]
    assert main(["bfs", str(p), "0", "--out", str(out)]) == 0  # without: vertex 0 is isolated
    assert out.read_text().split() == ["0", "-1", "-1", "-1"]
    capsys.readouterr()
