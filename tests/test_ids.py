"""The id promise (docs/conventions.md): sources are the input's own ids and results name its
own ids, for every API call and command, on a file read with ``--relabel`` (also through a
config tuned with ``blest-tune --relabel``) and on a NetworkX graph of named nodes. Each
result is checked against NetworkX run on the file's own ids or the graph's own nodes, on
fresh random graphs whose ids are sparse and out of order."""

from __future__ import annotations

import numpy as np
import pytest

import blest
from blest.cli import main, tune_main

nx = pytest.importorskip("networkx")

pytestmark = pytest.mark.filterwarnings("ignore:no GPU:RuntimeWarning")

UNREACHED = -1


# ---------------------------------------------------------------------- fixtures
def random_edges(rng, directed: bool) -> tuple[list[tuple[int, int]], object]:
    """Edges between sparse ids (no self loops), and the NetworkX graph of them."""
    k = int(rng.integers(25, 60))
    ids = rng.choice(1_000_000, size=k, replace=False)  # the file's own ids, unsorted
    m = int(1.6 * k)
    pairs = [
        (int(a), int(b))
        for a, b in zip(rng.choice(ids, m), rng.choice(ids, m), strict=True)
        if a != b
    ]
    G = nx.DiGraph() if directed else nx.Graph()
    G.add_edges_from(pairs)
    return pairs, G


@pytest.fixture(params=[True, False], ids=["directed", "undirected"])
def edge_file(request, tmp_path, rng):
    """(path, NetworkX graph on the file's ids, the graph flags of the commands)."""
    pairs, G = random_edges(rng, request.param)
    path = tmp_path / "edges.txt"
    path.write_text("".join(f"{a} {b}\n" for a, b in pairs))
    flags = ["--relabel"] + ([] if request.param else ["--undirected"])
    return path, G, flags


def some(rng, G, k: int = 4) -> list:
    nodes = list(G)
    return [nodes[i] for i in rng.choice(len(nodes), size=k, replace=False)]


def levels_from(G, seeds) -> dict:
    """NetworkX's levels from several seeds: the least distance from any."""
    best: dict = {}
    for s in seeds:
        for v, d in nx.single_source_shortest_path_length(G, s).items():
            best[v] = min(d, best.get(v, d))
    return best


def keyed(ids, values) -> dict:
    return dict(zip(np.asarray(ids).tolist(), np.asarray(values).tolist(), strict=True))


def check_parents(G, seeds, levels: dict, parents: dict) -> None:
    """Each reached non-seed vertex's parent is an id one level up with an arc to it."""
    for v, p in parents.items():
        if levels[v] <= 0:
            assert p in (None, UNREACHED), (v, p)
            continue
        assert G.has_edge(p, v) and levels[p] == levels[v] - 1, (v, p)


def check_api(target, G, ids, rng) -> None:
    """Every API call on ``target`` (a graph, a config) against NetworkX on ``G``."""
    assert list(np.asarray(blest.vertex_ids(target)).tolist()) == list(ids)
    nodes = set(G)
    s = some(rng, G, 1)[0]
    want = levels_from(G, [s])
    got = keyed(ids, blest.bfs(target, s, device="cpu"))
    assert got == {v: want.get(v, UNREACHED) for v in ids}
    seeds = some(rng, G, 3)
    for device in ("cpu", "emulator"):
        levels, parents = blest.bfs(target, seeds, parents=True, device=device)
        want = levels_from(G, seeds)
        lv = keyed(ids, levels)
        assert lv == {v: want.get(v, UNREACHED) for v in ids}
        par = keyed(ids, parents)
        assert {p for p in par.values() if p not in (None, UNREACHED)} <= nodes
        check_parents(G, seeds, lv, par)
        blest.validate(target, seeds, levels, parents)
    chosen = some(rng, G, 5)
    rows = blest.bfs_many(target, chosen)
    for s, row in zip(chosen, rows, strict=True):
        want = levels_from(G, [s])
        assert keyed(ids, row) == {v: want.get(v, UNREACHED) for v in ids}
    closeness = nx.closeness_centrality(G)
    assert keyed(ids, blest.closeness(target)) == {v: closeness[v] for v in ids}
    assert blest.closeness(target, chosen).tolist() == [closeness[v] for v in chosen]
    harmonic = nx.harmonic_centrality(G)
    np.testing.assert_allclose(
        blest.harmonic(target, chosen), [harmonic[v] for v in chosen], rtol=1e-13
    )
    sums = blest.centrality.source_sums(target, chosen)
    back = G.reverse() if G.is_directed() else G  # distances *to* each source
    reach = [nx.single_source_shortest_path_length(back, v) for v in chosen]
    assert sums.reach.tolist() == [len(r) for r in reach]
    assert sums.dist.tolist() == [sum(r.values()) for r in reach]


# ---------------------------------------------------------------------- a file, --relabel
def test_api_on_a_relabelled_file(edge_file, rng):
    path, G, flags = edge_file
    g = blest.load_graph(path, relabel=True, directed="--undirected" not in flags)
    check_api(g, G, sorted(G), rng)


def test_commands_on_a_relabelled_file_and_its_config(edge_file, tmp_path, rng, capsys):
    path, G, flags = edge_file
    ids = sorted(G)
    config = tmp_path / "edges.blest.json"
    assert tune_main([str(path), *flags, "-o", str(config), "--quiet"]) == 0
    assert blest.load_tuned(config, device="cpu").graph.labels.tolist() == ids
    check_api(str(config), G, ids, rng)
    closeness = nx.closeness_centrality(G)
    harmonic = nx.harmonic_centrality(G)
    s, chosen = some(rng, G, 1)[0], some(rng, G, 4)
    want = levels_from(G, [s])
    (tmp_path / "ids.txt").write_text(" ".join(map(str, chosen)))
    for target in ([str(path), *flags], [str(config)]):
        out = tmp_path / "levels.csv"
        assert main(["bfs", *target, str(s), "--out", str(out)]) == 0
        rows = np.loadtxt(out, delimiter=",", skiprows=1, dtype=np.int64, ndmin=2)
        assert keyed(rows[:, 0], rows[:, 1]) == {v: want.get(v, UNREACHED) for v in ids}
        assert main(["bfs", *target, str(s), "--out", str(tmp_path / "levels.npy")]) == 0
        got = np.load(tmp_path / "levels.npy").tolist()  # vertex order: the ids, increasing
        assert got == [want.get(v, UNREACHED) for v in ids]
        assert main(["closeness", *target, "-o", str(tmp_path / "c.csv")]) == 0
        rows = np.loadtxt(tmp_path / "c.csv", delimiter=",", skiprows=1, ndmin=2)
        assert rows[:, 0].astype(np.int64).tolist() == ids
        assert rows[:, 1].tolist() == [closeness[v] for v in ids]
        sources = ["--sources", str(tmp_path / "ids.txt"), "--harmonic"]
        assert main(["closeness", *target, "-o", str(tmp_path / "h.csv"), *sources]) == 0
        rows = np.loadtxt(tmp_path / "h.csv", delimiter=",", skiprows=1, ndmin=2)
        assert rows[:, 0].astype(np.int64).tolist() == chosen
        np.testing.assert_allclose(rows[:, 1], [harmonic[v] for v in chosen], rtol=1e-13)
        missing = max(ids) + 1
        assert main(["bfs", *target, str(missing)]) == 2  # not an id of the file
    capsys.readouterr()
    assert main(["closeness", str(config), "--relabel", "-o", str(tmp_path / "x.csv")]) == 2
    assert "cannot be combined" in capsys.readouterr().err
    assert not (tmp_path / "x.csv").exists()


def test_a_config_without_labels_keeps_none(tmp_path, rng):
    """Without --relabel the artifact stores no labels and ids are the vertex numbers."""
    pairs, G = random_edges(rng, True)
    path = tmp_path / "e.txt"
    path.write_text("".join(f"{a % 97} {b % 97}\n" for a, b in pairs if a % 97 != b % 97))
    config = tmp_path / "e.blest.json"
    assert tune_main([str(path), "-o", str(config), "--quiet", "--ordering", "natural"]) == 0
    eng = blest.load_tuned(config, device="cpu")
    assert eng.graph.labels is None
    assert blest.vertex_ids(config).tolist() == list(range(eng.n))


# ---------------------------------------------------------------------- NetworkX, named nodes
@pytest.mark.parametrize("directed", [False, True])
def test_api_on_a_networkx_graph_of_named_nodes(directed, rng):
    _, H = random_edges(rng, directed)
    names = {v: f"n{v}" for v in H}
    G = nx.relabel_nodes(H, names)
    G.add_node("alone")  # isolated: unreached, and still a vertex
    check_api(G, G, list(G), rng)
    L = nx.les_miserables_graph()
    levels = blest.bfs(L, "Valjean", device="cpu")
    want = nx.single_source_shortest_path_length(L, "Valjean")
    assert keyed(blest.vertex_ids(L), levels) == want  # connected: every node reached


def test_validate_refuses_a_parent_that_is_not_an_arc():
    L = nx.les_miserables_graph()
    levels, parents = blest.bfs(L, "Valjean", parents=True, device="cpu")
    ids = list(L)
    blest.validate(L, "Valjean", levels, parents)
    far = [v for v in ids if not L.has_edge("Valjean", v) and v != "Valjean"][0]
    bad = parents.copy()
    bad[ids.index(far)] = "Valjean"  # Valjean is a vertex, but not far's neighbour
    with pytest.raises(blest.ValidationError):
        blest.validate(L, "Valjean", levels, bad)
    bad[ids.index(far)] = "Nobody"
    with pytest.raises(blest.ValidationError, match="Nobody"):
        blest.validate(L, "Valjean", levels, bad)


# ---------------------------------------------------------------------- DataFrames of names
class Column:
    """The part of a pandas Series that blest reads."""

    def __init__(self, name, values):
        self.name, self.values = name, np.asarray(values, dtype=object)

    def isna(self):
        return self

    def any(self):
        return any(v is None for v in self.values)

    def to_numpy(self, dtype=None):
        return self.values if dtype is None else self.values.astype(dtype)


class Frame:
    """The part of a pandas DataFrame that blest reads."""

    def __init__(self, **columns):
        self.data = {k: Column(k, v) for k, v in columns.items()}
        self.columns = list(columns)
        self.iloc = None

    def __getitem__(self, name):
        return self.data[name]

    def to_numpy(self):  # pragma: no cover - not read for a frame with source/target
        raise AssertionError


def frames():
    """The duck-typed frame and, where pandas is installed, a real one."""
    edges = {"source": ["b", "c", "a", "d"], "target": ["a", "a", "e", "b"]}
    out = [Frame(**edges)]
    try:
        import pandas
    except ImportError:
        return out
    return out + [pandas.DataFrame(edges), pandas.DataFrame(edges, dtype="string")]


@pytest.mark.parametrize("frame", frames(), ids=lambda f: type(f).__name__)
def test_dataframe_of_names(frame):
    G = nx.DiGraph(zip(["b", "c", "a", "d"], ["a", "a", "e", "b"], strict=True))
    for relabel in (False, True):
        g = blest.load_graph(frame, relabel=relabel)
        assert g.labels.tolist() == ["a", "b", "c", "d", "e"] and g.directed
    assert keyed(blest.vertex_ids(frame), blest.bfs(frame, "d", device="cpu")) == {
        "a": 2,
        "b": 1,
        "c": UNREACHED,
        "d": 0,
        "e": 3,
    }
    assert blest.closeness(frame, ["a", "e"]).tolist() == [
        nx.closeness_centrality(G)[v] for v in ("a", "e")
    ]
    with pytest.raises(blest.VertexError):
        blest.bfs(frame, "z", device="cpu")


def test_mixed_names_keep_their_first_order():
    g = blest.load_graph(Frame(source=[3, "x", 3], target=["y", 3, "x"]))
    assert g.labels.tolist() == [3, "x", "y"]
    assert keyed(g.labels, blest.bfs(g, "x", device="cpu")) == {3: 1, "x": 0, "y": 2}


# ---------------------------------------------------------------------- the API contract
def bad_calls(g, one):
    return {
        "bfs_many one id": lambda: blest.bfs_many(g, one),
        "closeness string": lambda: blest.closeness(g, sources="0 1 2"),
        "closeness 2-D": lambda: blest.closeness(g, sources=np.zeros((2, 2), dtype=int)),
        "harmonic nested": lambda: blest.harmonic(g, [[0, 1], [1]]),
        "bfs_many 2-D": lambda: blest.bfs_many(g, [[0, 1]]),
        "source_sums one id": lambda: blest.centrality.source_sums(g, one),
        "closeness floats": lambda: blest.closeness(g, sources=[0.5]),
        "closeness a dict": lambda: blest.closeness(g, sources={0: 1}),
        "bfs no seed": lambda: blest.bfs(g, [], device="cpu"),
        "bfs 2-D seeds": lambda: blest.bfs(g, np.zeros((2, 2), dtype=int), device="cpu"),
    }


@pytest.mark.parametrize("labelled", [False, True])
def test_bad_sources_are_blest_errors(labelled):
    g = blest.datasets.grid2d(4, 4)
    one = 3
    if labelled:
        g = nx.relabel_nodes(nx.grid_2d_graph(4, 4), lambda v: f"{v[0]}-{v[1]}")
        one = "0-1"
    for what, call in bad_calls(g, one).items():
        with pytest.raises(blest.BlestError) as caught:
            call()
        assert isinstance(caught.value, ValueError), what
    with pytest.raises(blest.VertexError):
        blest.bfs_many(g, [99] if not labelled else ["9-9"])


def test_unknown_sources_fail_before_the_workers_start():
    """With worker processes the ids are checked in the calling process: a BlestError, not
    a worker's failure."""
    G = nx.relabel_nodes(nx.path_graph(6), lambda v: f"v{v}")
    with pytest.raises(blest.VertexError, match="nobody"):
        blest.closeness(G, ["v1", "nobody"], gpus=2)


@pytest.mark.parametrize("labels", [[30, 10, 20, 40], ["d", "a", "c", "b"]])
def test_the_artifact_keeps_labels_and_refuses_bad_ones(tmp_path, labels):
    import dataclasses

    from blest.graph.prepared import Prepared
    from blest.tuning.artifact import load_artifact, save_artifact

    g = blest.load_graph(np.array([[0, 1, 2], [1, 2, 3]]))
    kept = dataclasses.replace(g, labels=np.array(labels, dtype=object))
    save_artifact(tmp_path / "a.npz", Prepared.from_graph(kept, 8))
    assert load_artifact(tmp_path / "a.npz").graph.labels.tolist() == labels
    twice = dataclasses.replace(g, labels=np.array(labels[:1] * 4, dtype=object))
    save_artifact(tmp_path / "b.npz", Prepared.from_graph(twice, 8))
    with pytest.raises(blest.ConfigError, match="twice"):
        load_artifact(tmp_path / "b.npz")
    pairs = np.empty(4, dtype=object)
    pairs[:] = [(i, i) for i in range(4)]  # NetworkX nodes may be tuples: not storable
    tuples = dataclasses.replace(g, labels=pairs)
    with pytest.raises(blest.ArgumentError, match="cannot be stored"):
        save_artifact(tmp_path / "c.npz", Prepared.from_graph(tuples, 8))
    assert not (tmp_path / "c.npz").exists()
