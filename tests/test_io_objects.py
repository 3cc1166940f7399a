"""In-memory inputs of load_graph: NumPy edge arrays, DLPack, CuPy-like, pandas DataFrames."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from blest.errors import GraphFormatError, GraphLimitError
from blest.graph.core import MAX_VERTICES, Graph
from blest.graph.io import load_graph


def same_graph(a: Graph, b: Graph) -> None:
    assert (a.n, a.directed) == (b.n, b.directed)
    for name in ("out_ptr", "out_idx", "in_ptr", "in_idx"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name


def random_arcs(rng: np.random.Generator, n: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    src[0] = n - 1  # the largest id occurs, so n = max id + 1
    return src, dst


# ====================================================================== NumPy arrays
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint16, np.uint64, np.float64])
@pytest.mark.parametrize("directed", [None, False])
def test_edge_index_matches_from_arcs(
    rng: np.random.Generator, dtype: type, directed: bool | None
) -> None:
    n, m = int(rng.integers(3, 300)), int(rng.integers(3, 2000))
    src, dst = random_arcs(rng, n, m)
    ref = Graph.from_arcs(src, dst, n, directed=directed is None)
    edge_index = np.stack([src, dst]).astype(dtype)
    g = load_graph(edge_index, directed=directed)
    same_graph(g, ref)
    assert g.report.entries == m and g.report.symmetrized == (directed is False)
    same_graph(load_graph(np.ascontiguousarray(edge_index.T), directed=directed), ref)
    same_graph(load_graph(np.asfortranarray(edge_index), directed=directed), ref)


def test_shape_rule_for_two_by_two_and_empty() -> None:
    a = np.array([[0, 1], [2, 3]])
    g = load_graph(a)  # (2, 2) is an edge_index: arcs 0 → 2 and 1 → 3
    same_graph(g, Graph.from_arcs([0, 1], [2, 3], 4, directed=True))
    for empty in (np.zeros((2, 0), np.int64), np.zeros((0, 2), np.int32)):
        e = load_graph(empty)
        assert e.n == 0 and e.nnz == 0 and e.directed


def test_array_relabel(rng: np.random.Generator) -> None:
    ids = np.sort(rng.choice(10**15, 50, replace=False))
    pick = rng.integers(0, 50, (2, 300))
    g = load_graph(ids[pick], relabel=True, directed=False)
    used = np.unique(pick)
    assert g.labels.tolist() == ids[used].tolist()
    index = {int(v): i for i, v in enumerate(used)}
    remap = np.vectorize(index.__getitem__)(pick)
    same_graph(g, Graph.from_arcs(remap[0], remap[1], used.size, directed=False))


@pytest.mark.parametrize(
    "array,words",
    [
        (np.array([[0, 1, -2], [1, 2, 0]]), "negative vertex id -2"),
        (np.array([[0.0, 1.5], [1.0, 2.0]]), "1.5"),
        (np.array([[0.0, np.nan], [1.0, 2.0]]), "nan"),
        (np.array([[0.0, np.inf], [1.0, 2.0]]), "inf"),
        (np.array([[True, False], [False, True]]), "dtype bool"),
        (np.array([["0", "1"], ["1", "2"]]), "dtype <U1"),
        (np.array([[0, 1], [1, 2]], dtype=object), "dtype object"),
        (np.array([[1 + 0j, 2], [0, 1]]), "dtype complex"),
        (np.zeros((3, 4), np.int64), "shape (3, 4)"),
        (np.zeros(6, np.int64), "shape (6,)"),
        (np.zeros((2, 3, 1), np.int64), "shape (2, 3, 1)"),
    ],
)
def test_bad_arrays(array: np.ndarray, words: str) -> None:
    with pytest.raises(GraphFormatError, match=None) as info:
        load_graph(array)
    assert words in str(info.value)


def test_array_vertex_limit_before_allocation() -> None:
    with pytest.raises(GraphLimitError, match=str(MAX_VERTICES)):
        load_graph(np.array([[0, 1], [1, MAX_VERTICES]]))
    with pytest.raises(GraphLimitError, match="int64"):
        load_graph(np.array([[0, 2**64 - 1]], dtype=np.uint64).reshape(2, 1), relabel=True)
    g = load_graph(np.array([[0, 1], [1, MAX_VERTICES]]), relabel=True)
    assert g.n == 3 and g.labels.tolist() == [0, 1, MAX_VERTICES]


# ====================================================================== DLPack and CuPy-like
class DLPackOnly:
    """Exposes only the DLPack protocol of a NumPy array (like a CPU tensor of a framework)."""

    def __init__(self, a: np.ndarray):
        self._a = a

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


class OnDevice(DLPackOnly):
    """A DLPack array on a CUDA device: it refuses to export to the host."""

    def __dlpack__(self, **kwargs):
        raise BufferError("the array lives on CUDA device 0")

    def __dlpack_device__(self):
        return (2, 0)


class CuPyLike:
    """Duck-typed CuPy array: ``__cuda_array_interface__`` and ``get()`` to the host."""

    def __init__(self, a: np.ndarray):
        self._a = a
        self.gets = 0

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"shape": self._a.shape, "typestr": self._a.dtype.str, "version": 3}

    def get(self) -> np.ndarray:
        self.gets += 1
        return self._a.copy()


def test_dlpack_and_cupy_like_inputs(rng: np.random.Generator) -> None:
    src, dst = random_arcs(rng, 50, 400)
    ref = Graph.from_arcs(src, dst, 50, directed=True)
    same_graph(load_graph(DLPackOnly(np.stack([src, dst]))), ref)
    cp = CuPyLike(np.stack([src, dst], axis=1))
    same_graph(load_graph(cp), ref)
    assert cp.gets == 1
    with pytest.raises(GraphFormatError, match="host"):
        load_graph(OnDevice(np.stack([src, dst])))


def test_unsupported_types_name_what_is_accepted() -> None:
    for bad in (42, [(0, 1)], {"a": 1}, b"x"):
        with pytest.raises(TypeError) as info:
            load_graph(bad)
        for word in ("file path", "scipy.sparse", "networkx", "DataFrame", "(2, E)", "DLPack"):
            assert word in str(info.value)


# ====================================================================== pandas DataFrames
def test_dataframe_columns(rng: np.random.Generator) -> None:
    pd = pytest.importorskip("pandas")
    src, dst = random_arcs(rng, 40, 300)
    ref = Graph.from_arcs(src, dst, 40, directed=True)
    w = rng.random(300)
    named = pd.DataFrame({"weight": w, "target": dst, "source": src})
    same_graph(load_graph(named), ref)
    plain = pd.DataFrame({"a": src, "b": dst, "c": w})
    same_graph(load_graph(plain), ref)
    same_graph(load_graph(plain, directed=False), Graph.from_arcs(src, dst, 40, directed=False))
    nullable = pd.DataFrame({"source": pd.array(src, "Int64"), "target": pd.array(dst, "Int64")})
    same_graph(load_graph(nullable), ref)


def test_bad_dataframes() -> None:
    pd = pytest.importorskip("pandas")
    with pytest.raises(GraphFormatError, match="missing"):
        load_graph(pd.DataFrame({"source": pd.array([0, None], "Int64"), "target": [1, 2]}))
    with pytest.raises(GraphFormatError, match="two columns"):
        load_graph(pd.DataFrame({"only": [0, 1]}))
    named = load_graph(pd.DataFrame({"u": ["b", "a"], "v": ["c", "b"]}))  # names: relabelled
    assert named.labels.tolist() == ["a", "b", "c"] and named.out_idx.tolist() == [1, 2]
    with pytest.raises(GraphFormatError, match="negative"):
        load_graph(pd.DataFrame({"u": [0, -1], "v": [1, 2]}))


# ====================================================================== lazy imports, layering
def test_optional_libraries_are_not_imported() -> None:
    code = (
        "import sys, numpy as np, scipy.sparse as sp, blest\n"
        "blest.load_graph(np.array([[0, 1], [1, 2]]))\n"
        "blest.load_graph(sp.eye(3, format='csr'))\n"
        "bad = [m for m in ('pandas', 'pyarrow', 'cupy', 'networkx', 'torch') "
        "if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_graph_package_layering() -> None:
    """The loading code imports only blest.graph.* and the base modules (errors, defaults, the
    input types), and optional libraries lazily."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "blest" / "graph"
    optional = {"pandas", "pyarrow", "cupy", "networkx", "torch"}
    for path in [root / "core.py", *(root / "io").glob("*.py")]:
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                if name.startswith("blest"):
                    base = name in ("blest.errors", "blest.defaults", "blest.inputs")
                    assert base or name.startswith("blest.graph"), (path, name)
        for node in tree.body:  # module level: no optional library
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                top = {a.name.split(".")[0] for a in getattr(node, "names", [])}
                top.add((getattr(node, "module", None) or "").split(".")[0])
                assert not top & optional, (path, top & optional)
