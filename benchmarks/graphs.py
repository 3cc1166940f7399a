"""Anchor-graph catalogue of the benchmarks.

``anchor_graph(name)`` returns the :class:`blest.Graph` of an anchor graph: the generated ones
(``kron-21``, ``urand-20``, ``delaunay-20`` and their ``--quick`` variants ``kron-16``,
``urand-16``, ``delaunay-16``; any ``kron-S`` / ``urand-S`` / ``delaunay-S`` works, and
``road-S``, the road-network stand-in :func:`blest.datasets.road_like` on 2^S vertices) are made
with the benchmark seed and cached as ``.npz`` under ``cache_dir`` so that repeated runs
reuse them; the real ones (``luxembourg_osm``, ``musae_facebook``) are read from ``shared/data``
next to or above the repository.

CLI: ``python3 benchmarks/graphs.py NAME...`` prints n, arcs, isolated vertices and the seconds
to generate (or load) each graph.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]

from blest.datasets import DEFAULT_SEED, delaunay, kronecker, road_like, uniform  # noqa: E402
from blest.graph.core import Graph  # noqa: E402

__all__ = [
    "ANCHORS",
    "QUICK",
    "AnchorInfo",
    "anchor_graph",
    "cache_path",
    "check_levels",
    "shared_data_dir",
]

DEFAULT_CACHE = "/tmp/blest-graphs"
EDGE_FACTOR = 16
# Bump when a generator's output changes, so stale caches are not reused.
CACHE_VERSION = 1


@dataclass(frozen=True)
class AnchorInfo:
    """The original C++ Blest's sizes of an anchor graph, for comparison."""

    description: str
    n: int
    arcs: int
    levels: int | None = None


ANCHORS: dict[str, AnchorInfo] = {
    "kron-21": AnchorInfo("Graph500 Kronecker, scale 21, edge factor 16", 2_097_152, 63_500_000),
    "urand-20": AnchorInfo("GAP urand, scale 20, edge factor 16", 1_048_576, 33_600_000),
    "delaunay-20": AnchorInfo("Delaunay of 2^20 uniform points", 1_048_576, 6_290_000, 400),
    "luxembourg_osm": AnchorInfo("OpenStreetMap road network (DIMACS10)", 114_599, 239_332, 1000),
    "musae_facebook": AnchorInfo("Facebook page-page network (MUSAE)", 22_470, 342_000, 11),
}
#: Small stand-ins for ``--quick`` benchmark runs, by anchor name.
QUICK: dict[str, str] = {
    "kron-21": "kron-16",
    "urand-20": "urand-16",
    "delaunay-20": "delaunay-16",
    "luxembourg_osm": "luxembourg_osm",
    "musae_facebook": "musae_facebook",
}

_GENERATED = re.compile(r"^(kron|urand|delaunay|road)-(\d+)$")


#: The real graphs read from the shared data folder (CSV edge lists unless .mtx).
REAL = ("luxembourg_osm", "musae_facebook", "twitch_ENGB", "twitch_FR", "wiki_chameleon")


def shared_data_dir() -> Path:
    """The real graphs' folder: ``$BLEST_SHARED_DATA``, ``<repo>/.data`` (a copy carried to a
    GPU machine), ``<repo>/shared/data`` or ``../shared/data``."""
    env = os.environ.get("BLEST_SHARED_DATA")
    candidates = [Path(env)] if env else []
    candidates += [REPO / ".data", REPO / "shared" / "data", REPO.parent / "shared" / "data"]
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(
        f"no shared/data directory in {REPO} or {REPO.parent} (needed for the real graphs)"
    )


def _generate(kind: str, scale: int, seed: int) -> Graph:
    if kind == "kron":
        return kronecker(scale, EDGE_FACTOR, seed=seed)
    if kind == "urand":
        return uniform(scale, EDGE_FACTOR, seed=seed)
    if kind == "road":
        return road_like(1 << scale, seed=seed)
    return delaunay(scale=scale, seed=seed)


def _save(graph: Graph, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.stem, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(
                f,
                out_ptr=graph.out_ptr,
                out_idx=graph.out_idx,
                n=np.int64(graph.n),
                directed=np.bool_(graph.directed),
            )
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)  # atomic: a concurrent reader never sees half a file
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _load(path: Path) -> Graph:
    with np.load(path) as z:
        return Graph.from_csr(z["out_ptr"], z["out_idx"], int(z["n"]), directed=bool(z["directed"]))


def _read_mtx(path: Path) -> Graph:
    import scipy.io

    a = scipy.io.mmread(path).tocoo()
    return Graph.from_arcs(a.row, a.col, a.shape[0], directed=False, source=str(path))


def _read_csv_edges(path: Path) -> Graph:
    e = np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.int64, ndmin=2)
    return Graph.from_arcs(e[:, 0], e[:, 1], int(e.max()) + 1, directed=False, source=str(path))


def _real(name: str) -> Graph:
    if name == "luxembourg_osm":
        try:
            return _read_mtx(shared_data_dir() / "luxembourg_osm.mtx")
        except FileNotFoundError:
            from blest.datasets import example_path  # the same graph, bundled

            return _read_mtx(example_path())
    return _read_csv_edges(shared_data_dir() / f"{name}.csv")


def cache_path(name: str, cache_dir: str | os.PathLike, seed: int = DEFAULT_SEED) -> Path:
    """Where :func:`anchor_graph` caches the generated graph ``name``."""
    ef = f"-ef{EDGE_FACTOR}" if name.startswith(("kron", "urand")) else ""
    return Path(cache_dir) / f"{name}{ef}-s{seed}-v{CACHE_VERSION}.npz"


def anchor_graph(
    name: str,
    cache_dir: str | os.PathLike | None = DEFAULT_CACHE,
    *,
    seed: int = DEFAULT_SEED,
) -> Graph:
    """The anchor graph ``name`` (see :data:`ANCHORS` and :data:`QUICK`).

    Generated graphs are cached in ``cache_dir`` as ``NAME-ef16-sSEED-vN.npz`` (``None``
    disables the cache); the real graphs are read from ``shared/data`` each time.
    """
    m = _GENERATED.match(name)
    if m is None:
        if name in REAL:
            return _real(name)
        known = sorted(set(ANCHORS) | set(QUICK.values()))
        raise ValueError(f"unknown graph {name!r}; known: {', '.join(known)} (or kind-SCALE)")
    kind, scale = m.group(1), int(m.group(2))
    if cache_dir is None:
        return _generate(kind, scale, seed)
    path = cache_path(name, cache_dir, seed)
    if path.exists():
        try:
            return _load(path)
        except (OSError, ValueError, KeyError):
            path.unlink(missing_ok=True)  # corrupt cache entry: regenerate
    graph = _generate(kind, scale, seed)
    _save(graph, path)
    return graph


def check_levels(graph: Graph, src: int, got: np.ndarray, what: str) -> None:
    """Stop with the first difference if ``got`` is not SciPy's BFS levels of ``graph`` from
    ``src`` (-1 where unreached): the probes' check of their own kernels."""
    from scipy.sparse.csgraph import shortest_path

    d = shortest_path(graph.out_csr, unweighted=True, indices=int(src))
    want = np.where(np.isinf(d), -1, d).astype(np.int64)
    if not np.array_equal(got, want):
        bad = np.flatnonzero(got != want)
        raise SystemExit(
            f"{what} src {src}: {bad.size} levels differ, e.g. vertex {bad[0]}: "
            f"{got[bad[0]]} against {want[bad[0]]}"
        )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("names", nargs="+", metavar="NAME", help="e.g. kron-21 urand-16 luxembourg_osm")
    p.add_argument("--cache-dir", default=DEFAULT_CACHE, help=f"default {DEFAULT_CACHE}")
    p.add_argument("--no-cache", action="store_true", help="generate anew, do not read or write")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED)
    args = p.parse_args(argv)
    cache = None if args.no_cache else args.cache_dir
    print(f"{'graph':<16} {'n':>11} {'arcs':>12} {'isolated':>10} {'seconds':>8}  note")
    for name in args.names:
        generated = _GENERATED.match(name) is not None
        cached = generated and cache is not None and cache_path(name, cache, args.seed).exists()
        t = time.perf_counter()
        g = anchor_graph(name, cache, seed=args.seed)
        dt = time.perf_counter() - t
        note = "loaded from cache" if cached else ("generated" if generated else "read")
        print(f"{name:<16} {g.n:>11,} {g.nnz:>12,} {g.isolated:>10,} {dt:>8.2f}  {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
