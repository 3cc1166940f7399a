"""Seeded synthetic graph generators (vectorized NumPy / SciPy), each returning a :class:`Graph`.

Every generator draws from ``numpy.random.default_rng(seed)``, so the same arguments give the
same graph (arc for arc) on every machine with the same NumPy. The default seed is the project's
benchmark seed (:data:`blest.defaults.SOURCE_SEED`). Arcs go through
:meth:`Graph.from_arcs`, which drops self loops and duplicate arcs and counts them in
``graph.report``; sizes quoted below are after that cleaning.
"""

from __future__ import annotations

import math

import numpy as np

from blest.defaults import SOURCE_SEED
from blest.errors import ArgumentError
from blest.graph.core import MAX_VERTICES, Graph

__all__ = ["DEFAULT_SEED", "delaunay", "grid2d", "kronecker", "random_geometric", "uniform"]

#: The seed of the project's benchmark graphs and source draws.
DEFAULT_SEED = SOURCE_SEED

# Edges generated per block: bounds the temporaries and keeps the random stream (and so the
# graph) independent of the machine. Changing it changes every generated graph.
_BLOCK = 1 << 22


def _check_scale(scale: int) -> int:
    scale = int(scale)
    if scale < 0 or (1 << scale) > MAX_VERTICES:
        raise ArgumentError(f"scale must be in [0, 30], got {scale}")
    return scale


def _check_edge_factor(edge_factor: int) -> int:
    edge_factor = int(edge_factor)
    if edge_factor < 0:
        raise ArgumentError(f"edge_factor must be >= 0, got {edge_factor}")
    return edge_factor


def kronecker(
    scale: int,
    edge_factor: int = 16,
    a: float = 0.57,
    b: float = 0.19,
    c: float = 0.19,
    seed: int = DEFAULT_SEED,
    directed: bool = False,
    permute: bool = True,
) -> Graph:
    """Graph500 / GAP Kronecker (R-MAT) graph on ``2**scale`` vertices.

    Model: ``edge_factor * 2**scale`` edges; each edge picks one quadrant of the adjacency
    matrix per bit level with probabilities ``a, b, c, d = 1 - a - b - c`` (one uniform draw per
    level, as GAP's ``MakeKronEdgeList``: ``r < a`` → (0,0), ``r < a+b`` → (0,1), ``r < a+b+c``
    → (1,0), else (1,1)). Vertex ids are then randomly permuted (``permute=True``), so the hub is
    not vertex 0. Undirected by default (GAP's ``-g``): both arcs of each edge are stored, so the
    mean degree is about ``2 * edge_factor`` before duplicates are dropped. Vectorized over all
    edges of a block for each bit level.

    Sources: Graph500 benchmark specification (Kronecker generator, A=0.57, B=C=0.19);
    S. Beamer, K. Asanović, D. Patterson, "The GAP Benchmark Suite", arXiv:1508.03619 (2015).

    Size: kron-21 with edge factor 16 has 2,097,152 vertices (about 852K of them isolated) and
    63.5M arcs after cleaning; it takes about 10 s and 2 GB peak on a 2-core machine, more than
    half of it in :meth:`Graph.from_arcs` (cache the result).
    """
    scale = _check_scale(scale)
    edge_factor = _check_edge_factor(edge_factor)
    if min(a, b, c) < 0 or a + b + c > 1:
        raise ArgumentError(f"need a, b, c >= 0 and a + b + c <= 1, got {a}, {b}, {c}")
    n = 1 << scale
    m = n * edge_factor
    rng = np.random.default_rng(seed)
    # One 32-bit uniform draw r per edge and level (raw PCG64 output, fastest to make); the
    # quadrant q = [r >= a] + [r >= a+b] + [r >= a+b+c] is 0..3: src bit q >> 1, dst bit q & 1.
    t_a, t_ab, t_abc = (np.uint32(min(int(t * 2**32), 2**32 - 1)) for t in (a, a + b, a + b + c))
    src = np.empty(m, dtype=np.int32)
    dst = np.empty(m, dtype=np.int32)
    q = np.empty(min(m, _BLOCK), dtype=np.uint8)
    for lo in range(0, m, _BLOCK):
        k = min(lo + _BLOCK, m) - lo
        s, d, qk = src[lo : lo + k], dst[lo : lo + k], q[:k]
        s[:] = 0
        d[:] = 0
        for _ in range(scale):
            r = rng.bit_generator.random_raw((k + 1) // 2).view(np.uint32)[:k]
            np.greater_equal(r, t_a, out=qk.view(bool))
            qk += (r >= t_ab).view(np.uint8)
            qk += (r >= t_abc).view(np.uint8)
            s <<= 1
            s |= qk >> 1
            d <<= 1
            d |= qk & 1
    if permute:
        perm = rng.permutation(n).astype(np.int32)
        src = perm[src]
        dst = perm[dst]
    return Graph.from_arcs(src, dst, n, directed=directed, source=f"kronecker(scale={scale})")


def uniform(
    scale: int,
    edge_factor: int = 16,
    seed: int = DEFAULT_SEED,
    directed: bool = False,
) -> Graph:
    """GAP ``urand``: Erdős–Rényi-like graph on ``2**scale`` vertices.

    Model: ``edge_factor * 2**scale`` edges whose two endpoints are drawn independently and
    uniformly from all vertices; undirected by default (both arcs stored), so urand-20 with edge
    factor 16 has about 33.55M arcs after cleaning.

    Source: S. Beamer, K. Asanović, D. Patterson, "The GAP Benchmark Suite",
    arXiv:1508.03619 (2015), generator ``urand``.
    """
    scale = _check_scale(scale)
    edge_factor = _check_edge_factor(edge_factor)
    n = 1 << scale
    m = n * edge_factor
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n, size=m, dtype=np.int32)
    dst = rng.integers(0, n, size=m, dtype=np.int32)
    return Graph.from_arcs(src, dst, n, directed=directed, source=f"uniform(scale={scale})")


def _points(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).random((n, 2))


def delaunay(
    n_points: int | None = None,
    *,
    scale: int | None = None,
    seed: int = DEFAULT_SEED,
) -> Graph:
    """Delaunay triangulation of uniform random points in the unit square (undirected).

    Give either ``n_points`` or ``scale`` (``n_points = 2**scale``). Vertex i is point i (the
    points are drawn i.i.d., so ids carry no spatial order); the edges are the sides of the
    triangles of :class:`scipy.spatial.Delaunay` (Qhull). A planar graph: arcs ≤ 2·(3n − 6),
    about 6n for large n; 2**20 points give about 6.29M arcs and BFS depths of about 400 levels.

    Source: the DIMACS10 ``delaunay_n*`` family (Holtgrewe, Sanders, Schulz; 10th DIMACS
    Implementation Challenge), rebuilt with Qhull (C. B. Barber, D. P. Dobkin, H. Huhdanpaa,
    ACM TOMS 22(4), 1996).

    Slow at large sizes: Qhull is single-threaded; 2**18 points take about 2.3 s, 2**20 points
    about 11 s and 0.8 GB peak on a 2-core machine (cache the result).
    """
    if (n_points is None) == (scale is None):
        raise ArgumentError("give exactly one of n_points and scale")
    if scale is not None:
        n = 1 << _check_scale(scale)
    else:
        assert n_points is not None  # exactly one of the two is given
        n = int(n_points)
    if not 3 <= n <= MAX_VERTICES:
        raise ArgumentError(f"delaunay needs at least 3 points, got {n}")
    from scipy.spatial import Delaunay

    tri = Delaunay(_points(n, seed)).simplices.astype(np.int32, copy=False)
    # Each triangle gives three edges; shared sides appear twice and are dropped as duplicates.
    src = tri.ravel()
    dst = tri[:, [1, 2, 0]].ravel()
    del tri
    return Graph.from_arcs(src, dst, n, directed=False, source=f"delaunay(n={n})")


def random_geometric(
    n: int,
    radius: float | None = None,
    *,
    avg_degree: float | None = None,
    seed: int = DEFAULT_SEED,
) -> Graph:
    """Random geometric graph: uniform points in the unit square, an edge between every pair
    at Euclidean distance ≤ ``radius`` (undirected, no wrap-around).

    Give either ``radius`` or ``avg_degree``; the latter sets ``radius = sqrt(avg_degree /
    (π (n − 1)))``, the radius whose expected degree away from the boundary is ``avg_degree``
    (vertices near the edges of the square get fewer neighbours, so the realized mean is a
    little lower). Pairs come from :meth:`scipy.spatial.cKDTree.query_pairs`.

    Source: M. Penrose, "Random Geometric Graphs", Oxford University Press (2003).
    """
    if (radius is None) == (avg_degree is None):
        raise ArgumentError("give exactly one of radius and avg_degree")
    n = int(n)
    if not 0 <= n <= MAX_VERTICES:
        raise ArgumentError(f"n must be in [0, {MAX_VERTICES}], got {n}")
    if radius is None:
        assert avg_degree is not None  # exactly one of the two is given
        if avg_degree < 0:
            raise ArgumentError(f"avg_degree must be >= 0, got {avg_degree}")
        radius = math.sqrt(avg_degree / (math.pi * max(n - 1, 1)))
    if radius < 0:
        raise ArgumentError(f"radius must be >= 0, got {radius}")
    from scipy.spatial import cKDTree

    pairs = cKDTree(_points(n, seed)).query_pairs(float(radius), output_type="ndarray")
    pairs = pairs.astype(np.int32, copy=False)
    return Graph.from_arcs(
        pairs[:, 0], pairs[:, 1], n, directed=False, source=f"random_geometric(n={n})"
    )


def grid2d(rows: int, cols: int) -> Graph:
    """2-D grid graph with 4-neighbour connectivity (undirected, deterministic).

    Vertex ``r * cols + c`` is the cell in row r, column c (row-major); it is joined to its
    right and lower neighbours, so there are exactly ``2 * (2*rows*cols - rows - cols)`` arcs.
    The diameter is ``rows + cols - 2``: a high-diameter, low-degree test case like a road
    network.
    """
    rows, cols = int(rows), int(cols)
    if rows < 0 or cols < 0:
        raise ArgumentError(f"rows and cols must be >= 0, got {rows}, {cols}")
    n = rows * cols
    if n > MAX_VERTICES:
        raise ArgumentError(f"a {rows}x{cols} grid has {n} vertices, more than {MAX_VERTICES}")
    ids = np.arange(n, dtype=np.int32).reshape(rows, cols)
    right_src = ids[:, :-1].ravel()
    down_src = ids[:-1, :].ravel()
    src = np.concatenate([right_src, down_src])
    dst = np.concatenate([right_src + 1, down_src + cols])
    return Graph.from_arcs(src, dst, n, directed=False, source=f"grid2d({rows}x{cols})")
