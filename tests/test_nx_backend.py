"""The NetworkX backend (blest.nx) against NetworkX itself on random graphs: directed and
undirected, string labels, isolated nodes, several components, multigraphs; results, order,
errors, the conversion cache. Dispatch through ``backend="blest"`` runs only when the entry
point is installed (the functions are also called directly, which needs no installation)."""

from __future__ import annotations

import inspect
import warnings
from functools import partial

import pytest
from random_graphs import GRAPH_CLASSES, arcs_of

nx = pytest.importorskip("networkx")

import blest.nx as bnx  # noqa: E402
from blest.nx.graph import CACHE_KEY, BlestGraph, as_blest, convert_from_nx  # noqa: E402
from blest.nx.info import FUNCTIONS, get_info  # noqa: E402
from blest.nx.interface import BackendInterface, can_run, should_run  # noqa: E402

KINDS = ("undirected", "directed", "strings", "disconnected", "multigraph", "loops")


def random_nx(rng, kind: str):
    """A NetworkX graph of ``kind`` with nodes and edges inserted in random order."""
    cls = {"directed": "directed", "disconnected": "disconnected"}.get(kind, "power_law")
    g = GRAPH_CLASSES[cls](rng, int(rng.integers(30, 160)))
    src, dst = arcs_of(g)
    if not g.directed:
        keep = src < dst
        src, dst = src[keep], dst[keep]
    directed = g.directed or (kind == "directed")
    base = {
        (False, False): nx.Graph,
        (True, False): nx.DiGraph,
        (False, True): nx.MultiGraph,
        (True, True): nx.MultiDiGraph,
    }[directed, kind == "multigraph"]
    G = base()
    extra = int(rng.integers(1, 4))  # isolated nodes
    names = [f"v{i}" for i in rng.permutation(g.n + extra)] if kind == "strings" else None
    label = (lambda i: names[i]) if names else (lambda i: int(i) * 3 + 1)
    G.add_nodes_from(label(i) for i in rng.permutation(g.n + extra))
    order = rng.permutation(src.size)
    G.add_edges_from((label(src[i]), label(dst[i])) for i in order)
    if kind == "multigraph":
        G.add_edges_from((label(src[i]), label(dst[i])) for i in order[: src.size // 4])
    if kind == "loops":
        G.add_edges_from((v, v) for v in list(G)[::7])
    return G


def sources(rng, G, k: int = 3) -> list:
    nodes = list(G)
    return [nodes[i] for i in rng.choice(len(nodes), k, replace=False)]


def same_tree(a, b) -> None:
    assert list(a.nodes) == list(b.nodes) and list(a.edges) == list(b.edges)


@pytest.mark.parametrize("kind", KINDS)
def test_traversals_match_networkx(kind, rng):
    for _ in range(3):
        G = random_nx(rng, kind)
        for s in sources(rng, G):
            assert bnx.single_source_shortest_path_length(
                G, s
            ) == nx.single_source_shortest_path_length(G, s)
            for limit in (None, 0, 1, 2, 2.5, -1, float("inf"), float("-inf"), float("nan")):
                assert bnx.single_source_shortest_path_length(
                    G, s, cutoff=limit
                ) == nx.single_source_shortest_path_length(G, s, cutoff=limit), limit
                assert list(bnx.bfs_edges(G, s, depth_limit=limit)) == list(
                    nx.bfs_edges(G, s, depth_limit=limit)
                ), limit
            assert list(bnx.bfs_edges(G, s)) == list(nx.bfs_edges(G, s))
            assert list(bnx.bfs_edges(G, s, reverse=True)) == list(nx.bfs_edges(G, s, reverse=True))
            assert list(bnx.bfs_predecessors(G, s)) == list(nx.bfs_predecessors(G, s))
            assert list(bnx.bfs_successors(G, s, 2)) == list(nx.bfs_successors(G, s, 2))
            same_tree(bnx.bfs_tree(G, s), nx.bfs_tree(G, s))
            same_tree(bnx.bfs_tree(G, s, True, 3), nx.bfs_tree(G, s, True, 3))
            assert list(bnx.bfs_layers(G, s)) == list(nx.bfs_layers(G, s))
            for d in (0, 1, 2, 5, -1, 1.5, 2.0, True, float("nan"), float("inf"), "2", None):
                assert bnx.descendants_at_distance(G, s, d) == nx.descendants_at_distance(G, s, d)
            for order in (sorted, partial(sorted, reverse=True), _odd_first):
                for reverse in (False, True):
                    assert list(bnx.bfs_edges(G, s, reverse, 3, order)) == list(
                        nx.bfs_edges(G, s, reverse, 3, order)
                    )
                assert list(bnx.bfs_successors(G, s, sort_neighbors=order)) == list(
                    nx.bfs_successors(G, s, sort_neighbors=order)
                )
        seeds = sources(rng, G, 4)
        assert list(bnx.bfs_layers(G, seeds)) == list(nx.bfs_layers(G, seeds))


def _odd_first(nodes):
    """A neighbour order that is not sorted: odd hashes first, then by repr."""
    return sorted(nodes, key=lambda v: (hash(v) % 2 == 0, repr(v)))


@pytest.mark.parametrize("kind", ("undirected", "directed", "strings", "multigraph"))
def test_harmonic_is_networkx_bit_for_bit(kind, rng):
    """Every score equals NetworkX's to the last bit (and an unreached node's 0 stays the int
    0), with and without nbunch and sources, both ways round (|nbunch| < |sources| makes
    NetworkX sum along a BFS order instead)."""
    for _ in range(2):
        G = random_nx(rng, kind)
        nodes = list(G)
        picks = [None, sources(rng, G, 3), sources(rng, G, 9), nodes[::2]]
        for nbunch in picks:
            for chosen in picks:
                ours = bnx.harmonic_centrality(G, nbunch, sources=chosen)
                theirs = nx.harmonic_centrality(G, nbunch, sources=chosen)
                assert list(ours) == list(theirs)
                for v, x in theirs.items():
                    assert type(ours[v]) is type(x) and ours[v] == x, (v, ours[v], x)
    G = nx.les_miserables_graph()
    ours, theirs = bnx.harmonic_centrality(G), nx.harmonic_centrality(G)
    assert all(ours[v].hex() == theirs[v].hex() for v in G)
    assert bnx.harmonic_centrality(G, "Valjean") == nx.harmonic_centrality(G, "Valjean")
    assert bnx.harmonic_centrality(G, ["nobody"]) == {}
    with pytest.raises(nx.NetworkXError):
        bnx.harmonic_centrality(G, 12345)


def test_unweighted_only():
    """distance= names an edge weight in the centralities: refused (NetworkX then runs its
    own code) when an edge carries it, and the same as no weight when none does."""
    G = nx.les_miserables_graph()  # its edges carry "weight"
    with pytest.raises(NotImplementedError):
        bnx.closeness_centrality(G, distance="weight")
    with pytest.raises(NotImplementedError):
        bnx.harmonic_centrality(G, distance="weight")
    assert isinstance(can_run("closeness_centrality", (G,), {"distance": "weight"}), str)
    assert isinstance(can_run("harmonic_centrality", (G, None, "weight"), {}), str)
    H = nx.path_graph(6)
    assert can_run("closeness_centrality", (H,), {"distance": "weight"}) is True
    assert bnx.closeness_centrality(H, distance="weight") == nx.closeness_centrality(
        H, distance="weight"
    )
    assert bnx.harmonic_centrality(H, distance="w") == nx.harmonic_centrality(H, distance="w")
    assert can_run("descendants_at_distance", (H, 0, 2), {}) is True
    assert can_run("descendants_at_distance", (H, 0), {"distance": 2}) is True


def test_dict_lists_nodes_by_distance(rng):
    G = random_nx(rng, "strings")
    s = sources(rng, G, 1)[0]
    got = bnx.single_source_shortest_path_length(G, s)
    assert list(got.values()) == sorted(got.values()) and next(iter(got)) == s


def test_device_keyword(rng):
    G = random_nx(rng, "directed")
    s = sources(rng, G, 1)[0]
    want = list(nx.bfs_edges(G, s))
    for device in ("cpu", "emulator"):
        assert list(bnx.bfs_edges(G, s, device=device)) == want


def test_errors_like_networkx():
    G = nx.path_graph(4)
    with pytest.raises(nx.NodeNotFound):
        bnx.single_source_shortest_path_length(G, "missing")
    edges = bnx.bfs_edges(G, 99)  # a generator: raises once advanced, as NetworkX's does
    with pytest.raises(nx.NetworkXError):
        next(edges)
    with pytest.raises(nx.NetworkXError):
        next(bnx.bfs_predecessors(G, 99))
    with pytest.raises(nx.NetworkXError):
        bnx.bfs_tree(G, 99)
    with pytest.raises(nx.NetworkXError):
        list(bnx.bfs_layers(G, [0, 99]))
    with pytest.raises(nx.NetworkXError):
        bnx.descendants_at_distance(G, 99, 1)
    assert list(bnx.bfs_layers(G, [])) == list(nx.bfs_layers(G, []))
    assert list(bnx.bfs_successors(nx.empty_graph(3), 1)) == [(1, [])]


def test_conversion_is_cached_where_networkx_caches():
    G = nx.cycle_graph(5, create_using=nx.DiGraph)
    bg = as_blest(G)
    assert isinstance(bg, BlestGraph) and as_blest(G) is bg and as_blest(bg) is bg
    assert G.__networkx_cache__["backends"]["blest"][CACHE_KEY] is bg
    assert list(bnx.bfs_edges(G, 0)) == [(0, 1), (1, 2), (2, 3), (3, 4)]
    G.add_edge(0, 3)  # NetworkX clears the cache
    assert as_blest(G) is not bg
    assert list(bnx.bfs_edges(G, 0)) == list(nx.bfs_edges(G, 0))
    nx.config.cache_converted_graphs = False
    try:
        assert as_blest(G) is not as_blest(G)
    finally:
        nx.config.cache_converted_graphs = True
    with pytest.raises(TypeError):
        as_blest([(0, 1)])


def test_converted_graph_answers_like_networkx(rng):
    G = random_nx(rng, "strings")
    bg = convert_from_nx(G)
    assert convert_from_nx(bg) is bg
    assert bg.is_directed() == G.is_directed() and not bg.is_multigraph()
    assert len(bg) == bg.number_of_nodes() == len(G)
    assert list(G)[0] in bg and "nope" not in bg and [1] not in bg
    back = bnx.convert_to_nx(bg)
    assert type(back) is nx.Graph and list(back.nodes) == list(G.nodes)
    assert nx.utils.graphs_equal(back, nx.Graph(G))
    assert bnx.convert_to_nx(5) == 5
    s = sources(rng, G, 1)[0]
    assert list(bnx.bfs_edges(bg, s)) == list(nx.bfs_edges(G, s))
    multi = random_nx(rng, "multigraph")
    assert as_blest(multi).is_multigraph()


def test_backend_info_and_interface():
    info = get_info()
    for key in ("backend_name", "project", "package", "url", "short_summary", "functions"):
        assert info[key]
    assert info["backend_name"] == "blest" and info["package"] == "blest-bfs"
    assert set(info["functions"]) == set(FUNCTIONS)
    for name in FUNCTIONS:
        ours = inspect.signature(getattr(BackendInterface, name))
        theirs = inspect.signature(getattr(nx, name).orig_func)
        assert list(theirs.parameters) == [p for p in ours.parameters if p != "device"], name
        assert getattr(bnx, name) is getattr(BackendInterface, name)
    for hook in ("convert_from_nx", "convert_to_nx", "can_run", "should_run"):
        assert callable(getattr(BackendInterface, hook))


def test_can_run_and_should_run():
    G = nx.path_graph(10)
    assert can_run("bfs_edges", (G, 0), {}) is True
    assert can_run("bfs_edges", (G, 0, False, None, sorted), {}) is True
    assert can_run("bfs_tree", (G, 0), {"sort_neighbors": sorted}) is True
    assert isinstance(can_run("pagerank", (G,), {}), str)
    assert isinstance(should_run("bfs_edges", (G, 0), {}), str)  # tiny and not converted
    as_blest(G)
    assert should_run("bfs_edges", (G, 0), {}) is True
    assert should_run("bfs_layers", (), {"G": as_blest(G), "sources": 0}) is True


def test_dispatch_through_networkx(rng):
    if "blest" not in nx.utils.backends.backends:
        pytest.skip("the blest entry point is not installed (pip install -e . to test dispatch)")
    G = random_nx(rng, "strings")
    s = sources(rng, G, 1)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NetworkX notes that it reuses its cached conversion
        assert nx.single_source_shortest_path_length(
            G, s, backend="blest"
        ) == nx.single_source_shortest_path_length(G, s)
        assert nx.single_source_shortest_path_length(
            G, s, cutoff=2, backend="blest"
        ) == nx.single_source_shortest_path_length(G, s, cutoff=2)
        assert list(nx.bfs_predecessors(G, s, backend="blest")) == list(nx.bfs_predecessors(G, s))
        assert list(nx.bfs_edges(G, s, backend="blest", device="cpu")) == list(nx.bfs_edges(G, s))
        same_tree(nx.bfs_tree(G, s, backend="blest"), nx.bfs_tree(G, s))
        assert list(nx.bfs_layers(G, [s], backend="blest")) == list(nx.bfs_layers(G, [s]))
        assert list(nx.bfs_edges(G, s, sort_neighbors=sorted, backend="blest")) == list(
            nx.bfs_edges(G, s, sort_neighbors=sorted)
        )
        assert nx.descendants_at_distance(G, s, 2, backend="blest") == (
            nx.descendants_at_distance(G, s, 2)
        )
        assert nx.harmonic_centrality(G, backend="blest") == nx.harmonic_centrality(G)
    assert isinstance(G.__networkx_cache__["backends"]["blest"][CACHE_KEY], BlestGraph)
    assert nx.utils.backends.backend_info["blest"]["package"] == "blest-bfs"
    with pytest.raises(NotImplementedError):  # an edge weight: blest declines, no fallback
        nx.closeness_centrality(nx.les_miserables_graph(), distance="weight", backend="blest")
