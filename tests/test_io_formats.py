"""METIS files, GAP edge lists, content sniffing and forced formats (blest/graph/io/)."""

from __future__ import annotations

import gzip
import warnings
from pathlib import Path

import numpy as np
import pytest

from blest.errors import GraphFormatError, GraphLimitError
from blest.graph.core import MAX_VERTICES, Graph
from blest.graph.io import load_graph, save_graph

MM = "%%MatrixMarket matrix coordinate {field} {symmetry}\n"


# ====================================================================== helpers
def random_edges(rng: np.random.Generator, n: int, m: int) -> set[tuple[int, int]]:
    """A random simple undirected edge set {(u, v): u < v} on 0..n-1."""
    edges = set()
    for _ in range(m):
        u, v = (int(x) for x in rng.integers(0, n, 2))
        if u != v:
            edges.add((min(u, v), max(u, v)))
    return edges


def undirected_reference(edges: set[tuple[int, int]], n: int) -> Graph:
    src = np.array([u for u, _ in edges], dtype=np.int64)
    dst = np.array([v for _, v in edges], dtype=np.int64)
    return Graph.from_arcs(src, dst, n, directed=False)


def metis_text(
    edges: set[tuple[int, int]],
    n: int,
    fmt: str = "",
    ncon: int | None = None,
    rng: np.random.Generator | None = None,
    comments: bool = False,
) -> str:
    """A METIS file written from scratch: 1-based neighbours, sizes / weights per ``fmt``."""
    rng = rng or np.random.default_rng(0)
    flags = fmt.zfill(3) if fmt else "000"
    sizes, weights, eweights = (c == "1" for c in flags)
    nw = (ncon or 1) if weights else 0
    adj: list[list[int]] = [[] for _ in range(n)]
    for u, v in edges:
        adj[u].append(v)
        adj[v].append(u)
    header = f"{n} {len(edges)}" + (f" {fmt}" if fmt else "") + (f" {ncon}" if ncon else "")
    lines = ["% written by the test"] if comments else []
    lines.append(header)
    for u in range(n):
        nums = [str(rng.integers(1, 9))] if sizes else []
        nums += [str(rng.integers(0, 9)) for _ in range(nw)]
        for v in rng.permutation(adj[u]):
            nums.append(str(v + 1))
            if eweights:
                nums.append(str(rng.integers(1, 99)))
        lines.append(" ".join(nums))
        if comments and u % 7 == 3:
            lines.append("% a comment between vertex lines")
    return "\n".join(lines) + "\n"


def same_graph(a: Graph, b: Graph) -> None:
    assert (a.n, a.directed) == (b.n, b.directed)
    for name in ("out_ptr", "out_idx", "in_ptr", "in_idx"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name


def expect_line(path: Path, line: int | None, words: str, **kwargs) -> GraphFormatError:
    with pytest.raises(GraphFormatError) as info:
        load_graph(path, **kwargs)
    err = info.value
    assert err.path == str(path) and err.line == line, str(err)
    assert words in str(err)
    return err


# ====================================================================== METIS: good files
@pytest.mark.parametrize(
    "fmt,ncon", [("", None), ("0", None), ("1", None), ("10", None), ("11", None), ("100", None),
                 ("101", None), ("110", None), ("111", None), ("011", None), ("10", 3),
                 ("111", 2)]
)  # fmt: skip
def test_metis_formats_match_reference(
    tmp_path: Path, rng: np.random.Generator, fmt: str, ncon: int | None
) -> None:
    n = int(rng.integers(1, 40))
    edges = random_edges(rng, n, int(rng.integers(0, 3 * n)))
    p = tmp_path / "g.graph"
    p.write_text(metis_text(edges, n, fmt, ncon, rng, comments=bool(rng.integers(0, 2))))
    g = load_graph(p)
    same_graph(g, undirected_reference(edges, n))
    assert g.report.format == "metis" and g.report.entries == 2 * len(edges)
    assert (g.report.self_loops, g.report.duplicates) == (0, 0)


def test_metis_the_old_misread_example(tmp_path: Path) -> None:
    # 6 vertices, 8 edges; read as an edge list this was 9 vertices and 7 directed arcs.
    text = "% a comment\n6 8\n2 3\n1 3 4\n1 2 5\n2 5 6\n3 4 6\n4 5\n"
    edges = {(0, 1), (0, 2), (1, 2), (1, 3), (2, 4), (3, 4), (3, 5), (4, 5)}
    for name in ("six.graph", "six"):  # by its name, or (no known name) by its content
        (tmp_path / name).write_text(text)
        g = load_graph(tmp_path / name)
        same_graph(g, undirected_reference(edges, 6))
        assert not g.directed and g.nnz == 16
    # Named .txt, it is the edge list its name says, with a warning that it is METIS too.
    (tmp_path / "six.txt").write_text(text)
    with pytest.warns(UserWarning, match=r"also a valid METIS file.*format='metis'"):
        g = load_graph(tmp_path / "six.txt")
    assert g.report.format == "edgelist" and g.directed and (g.n, g.nnz) == (9, 7)
    same_graph(load_graph(tmp_path / "six.txt", format="metis"), undirected_reference(edges, 6))


def test_metis_isolated_vertices_crlf_gzip_and_options(tmp_path: Path) -> None:
    text = "4 2\r\n2 3\r\n1\r\n1\r\n\r\n"  # vertex 4 has a blank line: no neighbours
    p = tmp_path / "iso.metis.gz"
    p.write_bytes(gzip.compress(text.encode()))
    g = load_graph(p)
    same_graph(g, undirected_reference({(0, 1), (0, 2)}, 4))
    assert g.isolated == 1
    d = load_graph(p, directed=True)
    assert d.directed and d.nnz == 4
    assert sorted(zip(*np.nonzero(d.out_csr.toarray()), strict=True)) == sorted(
        zip(*np.nonzero(g.out_csr.toarray()), strict=True)
    )
    r = load_graph(p, relabel=True)
    assert r.n == 3 and r.labels.tolist() == [0, 1, 2] and not r.directed


def test_metis_self_loops_and_repeats_are_counted(tmp_path: Path) -> None:
    p = tmp_path / "loops.graph"
    # vertices 1 and 3 list themselves, 1 lists 2 twice and 2 lists 1 twice: 8 entries.
    p.write_text("3 4\n1 2 2\n1 1 3\n2 3\n")
    g = load_graph(p)
    same_graph(g, undirected_reference({(0, 1), (1, 2)}, 3))
    assert (g.report.self_loops, g.report.duplicates) == (2, 2)


def test_metis_large_file_fast_and_line_parsers_agree(
    tmp_path: Path, rng: np.random.Generator
) -> None:
    n = 3000
    edges = random_edges(rng, n, 20000)
    plain = metis_text(edges, n, "11", None, rng)
    (tmp_path / "a.graph").write_text(plain)
    (tmp_path / "b.graph").write_text(plain.replace("\n", "\n% c\n", 5))  # comments: slow path
    a, b = load_graph(tmp_path / "a.graph"), load_graph(tmp_path / "b.graph")
    same_graph(a, undirected_reference(edges, n))
    same_graph(b, a)


# ====================================================================== METIS: bad files
@pytest.mark.parametrize(
    "text,line,words",
    [
        ("3 2\n2 3\n1 3\n1 2\n", 1, "declares 2 edges, so 4"),
        ("3 2\n2 3\n1\n2\n", 2, "vertex 1 lists 3 but vertex 3 (line 4) does not list 1"),
        ("3 2\n2 3\n1\n4\n", 4, "out of range 1..3"),
        ("3 2\n2 3\n0\n1\n", 3, "out of range 1..3"),
        ("3 2\n2 3\n1\n", 1, "declares 3 vertices but the file has 2"),
        ("2 1\n2\n1\n2\n", 4, "more vertex lines"),
        ("3 2 2\n2 3\n1\n1\n", 1, "unsupported fmt"),
        ("3 2 1000\n2 3\n1\n1\n", 1, "unsupported fmt"),
        ("3 2 0 2\n2 3\n1\n1\n", 1, "ncon"),
        ("3 2 1\n2 5 3 5\n1 5\n1\n", 4, "vertex 3: a vertex line holds (neighbour, edge"),
        ("3 1 10\n5 2\n5 1\n\n", 4, "vertex 3: a vertex line holds 1 vertex weight(s)"),
        ("% c\n3 2\n2 x\n1\n1\n", 3, "'x' is not a non-negative integer"),
        ("% c\n3 2\n2 3\n1\n-1\n", 5, "'-1' is not a non-negative integer"),
        ("3\n2 3\n1\n1\n", 1, "header must be"),
        ("4 4\n1 3\n0 2\n1 3\n0 2\n", 3, "out of range 1..4"),  # 0-based by mistake
    ],
)
def test_metis_bad_files(tmp_path: Path, text: str, line: int, words: str) -> None:
    p = tmp_path / "bad.graph"
    p.write_text(text)
    expect_line(p, line, words)


def test_metis_vertex_limit(tmp_path: Path) -> None:
    p = tmp_path / "huge.graph"
    p.write_text(f"{MAX_VERTICES + 1} 1\n2\n1\n")
    with pytest.raises(GraphLimitError, match=str(MAX_VERTICES)):
        load_graph(p)


# ====================================================================== GAP .el / .wel
@pytest.mark.parametrize("suffix", [".el", ".wel", ".el.gz", ".wel.gz"])
@pytest.mark.parametrize("directed", [None, False])
def test_gap_edge_lists(
    tmp_path: Path, rng: np.random.Generator, suffix: str, directed: bool | None
) -> None:
    n, m = int(rng.integers(2, 200)), int(rng.integers(1, 600))
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    src[0], dst[0] = n - 1, 0  # n = max id + 1 for the reference
    weights = rng.integers(1, 255, m)
    rows = [
        f"{u} {v} {w}" if "wel" in suffix else f"{u} {v}"
        for u, v, w in zip(src, dst, weights, strict=True)
    ]
    raw = ("\n".join(rows) + "\n").encode()
    p = tmp_path / ("g" + suffix)
    p.write_bytes(gzip.compress(raw) if suffix.endswith(".gz") else raw)
    g = load_graph(p, directed=directed)
    ref = Graph.from_arcs(src, dst, n, directed=directed is None)
    same_graph(g, ref)
    assert g.report.entries == m and g.report.format == "edgelist"


# ====================================================================== content sniffing
def test_matrix_market_named_txt_is_read_as_declared_with_a_warning(tmp_path: Path) -> None:
    text = MM.format(field="pattern", symmetry="symmetric") + "4 4 3\n2 1\n3 2\n4 1\n"
    declared = r"named as an edge list but is a Matrix Market file: read as that"
    for name in ("m.txt", "m.csv", "m.el"):
        p = tmp_path / name
        p.write_text(text)
        with pytest.warns(UserWarning, match=declared):
            g = load_graph(p)
        assert not g.directed and g.n == 4 and g.report.format == "mtx"
        assert g.out_idx.tolist() == [1, 3, 0, 2, 1, 0]
    gz = tmp_path / "m.txt.gz"
    gz.write_bytes(gzip.compress(text.encode()))
    with pytest.warns(UserWarning, match=declared):
        assert load_graph(gz).report.format == "mtx"
    hidden = tmp_path / "m.data"  # gzip found by its magic bytes, not its name; no warning
    hidden.write_bytes(gzip.compress(text.encode()))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        h = load_graph(hidden)
        assert h.content_hash() == load_graph(tmp_path / "m.txt", format="mtx").content_hash()


def test_npz_named_txt_is_read_as_declared(tmp_path: Path) -> None:
    g = Graph.from_arcs([0, 2], [1, 0], 3, directed=True)
    p = save_graph(g, tmp_path / "saved.txt")
    with pytest.warns(UserWarning, match="named as an edge list but is a zip / .npz archive"):
        assert load_graph(p).content_hash() == g.content_hash()


def test_metis_versus_edge_list_tie_breaking(tmp_path: Path, rng: np.random.Generator) -> None:
    # A METIS file bigger than the sniffed head, whose first lines all have >= 2 numbers,
    # also reads as an edge list: the name decides.
    n = 9000
    ring = {(i, (i + 1) % n) if i + 1 < n else (0, n - 1) for i in range(n)}
    text = metis_text(ring, n, rng=rng)
    assert len(text) > 1 << 16
    (tmp_path / "ring.graph").write_text(text)
    (tmp_path / "ring.txt").write_text(text)
    same_graph(load_graph(tmp_path / "ring.graph"), undirected_reference(ring, n))
    assert load_graph(tmp_path / "ring.txt").report.format == "edgelist"
    # The name decides: METIS content named .txt, and an edge list named .graph, get their
    # named reader's error, which says what the content reads as.
    (tmp_path / "path.txt").write_text("3 2\n2\n1 3\n2\n")
    err = expect_line(tmp_path / "path.txt", 2, "found one column")
    assert "reads as a METIS graph: pass format='metis' (--format metis)" in str(err)
    same_graph(
        load_graph(tmp_path / "path.txt", format="metis"), undirected_reference({(0, 1), (1, 2)}, 3)
    )
    (tmp_path / "edges.graph").write_text("0 1\n1 2\n")
    err = expect_line(tmp_path / "edges.graph", 2, "more vertex lines than the 0")
    assert "reads as an edge list: pass format='edgelist' (--format edgelist)" in str(err)
    assert load_graph(tmp_path / "edges.graph", format="edgelist").report.format == "edgelist"
    # Without a known name, the content decides.
    (tmp_path / "path").write_text("3 2\n2\n1 3\n2\n")
    same_graph(load_graph(tmp_path / "path"), undirected_reference({(0, 1), (1, 2)}, 3))


def test_broken_metis_named_graph_reports_metis_error(tmp_path: Path) -> None:
    p = tmp_path / "bad.graph"
    p.write_text("% c\n6 7\n2 3\n1 3 4\n1 2 5\n2 5 6\n3 4 6\n4 5\n")  # 8 edges listed
    expect_line(p, 2, "declares 7 edges")


# ====================================================================== forced formats
def test_forced_formats_and_aliases(tmp_path: Path) -> None:
    p = tmp_path / "x.dat"
    p.write_text("1 2\n2 1\n")
    assert load_graph(p, format="edgelist").n == 3
    assert load_graph(p, format="el").n == 3
    assert load_graph(p, format="wel").n == 3
    expect_line(p, 1, "declares 2 edges", format="metis")  # header: 1 vertex, 2 edges
    expect_line(p, 1, "declares 2 edges", format="graph")


def test_forced_wrong_formats_are_clear(tmp_path: Path) -> None:
    mtx = tmp_path / "m.mtx"
    mtx.write_text(MM.format(field="pattern", symmetry="general") + "3 3 1\n1 2\n")
    for forced in ("edgelist", "metis", "npz", "el"):
        err = expect_line(mtx, None, "Matrix Market", format=forced)
        assert repr(forced if forced != "el" else "edgelist") in str(err)
    npz = save_graph(Graph.from_arcs([0], [1], 2, directed=True), tmp_path / "g.npz")
    expect_line(npz, None, "zip", format="mtx")
    el = tmp_path / "e.txt"
    el.write_text("0 1\n1 2\n")
    expect_line(el, 1, "not a Matrix Market file", format="mtx")
    expect_line(el, None, "not a readable .npz", format="npz")
    expect_line(el, 2, "more vertex lines than the 0", format="metis")
    with pytest.raises(ValueError, match="format"):
        load_graph(el, format="graphml")
