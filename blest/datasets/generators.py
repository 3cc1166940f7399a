"""Seeded synthetic graph generators (vectorized NumPy / SciPy), each returning a :class:`Graph`.

Every generator draws from ``numpy.random.default_rng(seed)``, so the same arguments give the
same graph (arc for arc) on every machine with the same NumPy. The default seed is the project's
benchmark seed (:data:`blest.defaults.SOURCE_SEED`). Arcs go through
:meth:`Graph.from_arcs`, which drops self loops and duplicate arcs and counts them in
``graph.report``; sizes quoted below are after that cleaning.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from blest.defaults import SOURCE_SEED
from blest.errors import ArgumentError
from blest.graph.core import MAX_VERTICES, Graph

__all__ = [
    "DEFAULT_SEED",
    "delaunay",
    "grid2d",
    "kronecker",
    "random_geometric",
    "road_like",
    "uniform",
]

#: The seed of the project's benchmark graphs and source draws.
DEFAULT_SEED = SOURCE_SEED

# Edges generated per block: bounds the temporaries and keeps the random stream (and so the
# graph) independent of the machine. Changing it changes every generated graph.
_BLOCK = 1 << 22


def _in_threads(work: Callable[[int], None], count: int) -> None:
    """``work(0) .. work(count - 1)`` on every core (NumPy releases the GIL)."""
    import os
    from concurrent.futures import ThreadPoolExecutor

    if count <= 1:
        for j in range(count):
            work(j)
        return
    with ThreadPoolExecutor(min(count, os.cpu_count() or 1)) as pool:
        for _ in pool.map(work, range(count)):
            pass


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
    bits = rng.bit_generator
    assert isinstance(bits, np.random.PCG64)  # default_rng's: it can advance
    # One 32-bit uniform draw r per edge and level (raw PCG64 output, fastest to make); the
    # quadrant q = [r >= a] + [r >= a+b] + [r >= a+b+c] is 0..3: src bit q >> 1, dst bit q & 1.
    # Block j of _BLOCK edges reads its draws from where the one stream has reached after the
    # blocks before it (PCG64.advance), so blocks run in parallel threads and the graph is the
    # stream's, whatever the threads; the permutation is drawn after every block's draws.
    t_a, t_ab, t_abc = (np.uint32(min(int(t * 2**32), 2**32 - 1)) for t in (a, a + b, a + b + c))
    src = np.empty(m, dtype=np.int32)
    dst = np.empty(m, dtype=np.int32)
    start = bits.state
    blocks = range(0, m, _BLOCK)
    draws = [scale * ((min(lo + _BLOCK, m) - lo + 1) // 2) for lo in blocks]
    offsets = np.concatenate([[0], np.cumsum(draws, dtype=np.int64)])
    bits.advance(int(offsets[-1]))
    perm = rng.permutation(n).astype(np.int32) if permute else None

    def block(j: int) -> None:
        lo = blocks[j]
        k = min(lo + _BLOCK, m) - lo
        stream = np.random.PCG64()
        stream.state = start  # type: ignore[assignment]
        stream.advance(int(offsets[j]))
        s, d = src[lo : lo + k], dst[lo : lo + k]
        qk = np.empty(k, dtype=np.uint8)
        s[:] = 0
        d[:] = 0
        for _ in range(scale):
            r = stream.random_raw((k + 1) // 2).view(np.uint32)[:k]
            np.greater_equal(r, t_a, out=qk.view(bool))
            qk += (r >= t_ab).view(np.uint8)
            qk += (r >= t_abc).view(np.uint8)
            s <<= 1
            s |= qk >> 1
            d <<= 1
            d |= qk & 1
        if perm is not None:
            np.take(perm, s, out=s, mode="clip")
            np.take(perm, d, out=d, mode="clip")

    _in_threads(block, len(blocks))
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


#: delaunay: up to this many points, one Qhull call; above, vertical strips of about
#: DELAUNAY_STRIP_POINTS points each, triangulated in parallel (the same triangulation).
DELAUNAY_ONE_CALL = 1 << 21
DELAUNAY_STRIP_POINTS = 1 << 20


def delaunay(
    n_points: int | None = None,
    *,
    scale: int | None = None,
    seed: int = DEFAULT_SEED,
    strips: int | None = None,
) -> Graph:
    """Delaunay triangulation of uniform random points in the unit square (undirected).

    Give either ``n_points`` or ``scale`` (``n_points = 2**scale``). Vertex i is point i (the
    points are drawn i.i.d., so ids carry no spatial order); the edges are the sides of the
    triangles of :class:`scipy.spatial.Delaunay` (Qhull). A planar graph: arcs ≤ 2·(3n − 6),
    about 6n for large n; 2**20 points give about 6.29M arcs and BFS depths of about 400 levels.

    ``strips`` (default: one up to :data:`DELAUNAY_ONE_CALL` points, else one per
    :data:`DELAUNAY_STRIP_POINTS`) cuts the square into vertical strips triangulated in
    parallel threads, each with its neighbours' points within a margin. A strip keeps the
    triangles whose circumcentre lies in it and whose circumcircle, within the square, lies
    inside its points' x-range: their circles hold no other point, so they are triangles of the
    whole point set's Delaunay triangulation, and each is kept once. The count is checked
    against the whole triangulation's, ``2n - 2 - hull vertices``; on a shortfall the margin
    doubles (then one Qhull call). For points in general position (random doubles) this is the
    triangulation of one call.

    Source: the DIMACS10 ``delaunay_n*`` family (Holtgrewe, Sanders, Schulz; 10th DIMACS
    Implementation Challenge), rebuilt with Qhull (C. B. Barber, D. P. Dobkin, H. Huhdanpaa,
    ACM TOMS 22(4), 1996).

    Time: Qhull is single-threaded and slower per point as n grows: one call takes about 9 s
    for 2**20 points, 19 s for 2**21 and 56 s for 2**22 (3.2 GB peak) on a 2-core machine;
    strips of 2**20 points keep the per-point cost of 2**20 and run on every core.
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
    if strips is None:
        strips = 1 if n <= DELAUNAY_ONE_CALL else -(-n // DELAUNAY_STRIP_POINTS)
    if int(strips) < 1:
        raise ArgumentError(f"strips must be >= 1, got {strips}")
    points = _points(n, seed)
    tri = _triangles(points) if strips == 1 else _triangles_in_strips(points, int(strips))
    # Each triangle gives three edges; shared sides appear twice and are dropped as duplicates.
    src = tri.ravel()
    dst = tri[:, [1, 2, 0]].ravel()
    del tri
    return Graph.from_arcs(src, dst, n, directed=False, source=f"delaunay(n={n})")


def _triangles(points: np.ndarray) -> np.ndarray:
    """Qhull's Delaunay triangles of ``points`` (int32 vertex ids, one row each)."""
    from scipy.spatial import Delaunay

    return Delaunay(points).simplices.astype(np.int32, copy=False)


def _triangles_in_strips(points: np.ndarray, strips: int) -> np.ndarray:
    """The Delaunay triangles of ``points`` (in the unit square) from ``strips`` vertical
    strips and two thin bands along the bottom and top sides, in parallel (see
    :func:`delaunay`): each triangle once, vertex ids ascending.

    A triangle belongs to a band when its circle, over 0 <= x <= 1, stays within ``margin`` of
    that side (the long thin triangles of the hull's bottom and top edges), else to the strip
    of its circumcentre. A part keeps its own triangles whose circle, within the square, holds
    only points the part triangulated.
    """
    import os
    from concurrent.futures import ThreadPoolExecutor

    from scipy.spatial import ConvexHull

    n = points.shape[0]
    want = 2 * n - 2 - ConvexHull(points).vertices.size
    x, y = points[:, 0], points[:, 1]
    margin = 12.0 / math.sqrt(n)
    for _ in range(3):

        def part(s: int, margin: float = margin) -> np.ndarray:
            if s < strips:  # a strip, with its neighbours' points within the margin
                lo, hi = max(0.0, s / strips - margin), min(1.0, (s + 1) / strips + margin)
                local = np.flatnonzero((x >= lo) & (x <= hi))
            else:  # the bottom (s == strips) or top band, twice the margin high
                local = np.flatnonzero(y <= 2 * margin if s == strips else y >= 1 - 2 * margin)
            tri = np.sort(local.astype(np.int32)[_triangles(points[local])], axis=1)
            cx, cy, r2 = _circumcircles(points, tri)
            # The circle's extent in y over 0 <= x <= 1, and in x over 0 <= y <= 1.
            gap_x = np.maximum(np.maximum(-cx, cx - 1.0), 0.0)
            half_y = np.sqrt(np.maximum(r2 - gap_x * gap_x, 0.0))
            bottom, top = cy + half_y <= margin, cy - half_y >= 1.0 - margin
            if s == strips:
                return tri[bottom]
            if s == strips + 1:
                return tri[top]
            gap_y = np.maximum(np.maximum(-cy, cy - 1.0), 0.0)
            half_x = np.sqrt(np.maximum(r2 - gap_y * gap_y, 0.0))
            slack = 1e-9
            inside = ((cx - half_x >= lo + slack) | (lo == 0.0)) & (
                (cx + half_x <= hi - slack) | (hi == 1.0)
            )
            owner = np.clip(np.floor(cx * strips), 0, strips - 1)
            return tri[inside & (owner == s) & ~bottom & ~top]

        with ThreadPoolExecutor(min(strips + 2, os.cpu_count() or 1)) as pool:
            parts = list(pool.map(part, range(strips + 2)))
        tri = np.concatenate(parts)
        if tri.shape[0] == want:
            return tri
        margin *= 2
    return _triangles(points)


def _circumcircles(points: np.ndarray, tri: np.ndarray) -> tuple[np.ndarray, ...]:
    """Centre (x, y) and squared radius of each triangle's circumcircle (the same floats
    whichever strip asks: ``tri``'s rows are sorted ids)."""
    a, b, c = (points[tri[:, i]] for i in range(3))
    bx, by = b[:, 0] - a[:, 0], b[:, 1] - a[:, 1]
    qx, qy = c[:, 0] - a[:, 0], c[:, 1] - a[:, 1]
    d = 2.0 * (bx * qy - by * qx)
    b2, q2 = bx * bx + by * by, qx * qx + qy * qy
    ux = (qy * b2 - by * q2) / d
    uy = (bx * q2 - qx * b2) / d
    return a[:, 0] + ux, a[:, 1] + uy, ux * ux + uy * uy


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


#: road_like: chain vertices (degree 2, along streets) per intersection, the chance that a grid
#: street off the spanning tree is kept, and the chance that a grid cell has a diagonal street.
ROAD_CHAIN_RATIO = 1.0
ROAD_EXTRA_STREET = 0.45
ROAD_DIAGONAL = 0.03


def road_like(n: int, *, seed: int = DEFAULT_SEED) -> Graph:
    """A road-network stand-in on exactly ``n`` vertices (undirected, connected): not a real
    road network, a perturbed grid with road-like degree statistics and a huge diameter.

    Model: about ``n / (1 + ROAD_CHAIN_RATIO)`` intersections on a near-square grid (row-major,
    the last row partial). Every intersection but the first is joined to the one above or to
    its left (chosen at random where both exist): a random spanning tree, so the graph is
    connected. Each other grid street is kept with probability ``ROAD_EXTRA_STREET`` and each
    cell gets one of its two diagonals with probability ``ROAD_DIAGONAL``. The remaining
    vertices are spread uniformly at random over the streets as chain vertices (a street with k
    of them is a path of k + 1 edges). Ids keep the layout local: an intersection is followed
    by the chain vertices of the streets to its right, below and on its cell's diagonal.

    Statistics (2**25 vertices): mean degree 2.48, degrees 1-7 (8 at most): 2% of the vertices
    at degree 1, 62% at 2, 23% at 3, 12% at 4, under 1% above; one component; BFS depths of
    one to two grid sides, ``sqrt(n / 2)`` each (1,300-1,700 levels at 10**6 vertices). For
    comparison, DIMACS ``road_usa`` has 23.9M vertices and mean
    degree 2.41, ``roadNet-CA`` 2.8, and the bundled ``luxembourg_osm`` 2.09 (85% of its
    vertices at degree 2). Deterministic per ``seed``; vectorized (2**25 vertices in well
    under a minute).
    """
    n = int(n)
    if not 0 <= n <= MAX_VERTICES:
        raise ArgumentError(f"n must be in [0, {MAX_VERTICES}], got {n}")
    if n == 0:
        return Graph.from_arcs(np.zeros(0, np.int32), np.zeros(0, np.int32), 0, directed=False)
    n_int = n if n <= 2 else max(2, round(n / (1 + ROAD_CHAIN_RATIO)))
    cols = math.isqrt(n_int - 1) + 1  # ceil(sqrt(n_int))
    rng = np.random.default_rng(seed)
    u = np.arange(n_int, dtype=np.int64)
    col = u % cols
    # Street slots of intersection u: 0 right, 1 down, 2 a diagonal of the cell below-right.
    has = np.stack(
        [
            (col + 1 < cols) & (u + 1 < n_int),
            u + cols < n_int,
            (col + 1 < cols) & (u + cols + 1 < n_int),
        ],
        axis=1,
    )
    keep = np.zeros((n_int, 3), dtype=bool)
    # The spanning tree: u joins its upper neighbour (the down street of u - cols) or its left
    # one (the right street of u - 1).
    up_ok, left_ok = u >= cols, col > 0
    go_up = up_ok & (~left_ok | (rng.random(n_int) < 0.5))
    go_up[0] = False
    keep[u[go_up] - cols, 1] = True
    left = ~go_up & left_ok
    keep[u[left] - 1, 0] = True
    extra = rng.random((n_int, 2)) < ROAD_EXTRA_STREET
    keep[:, :2] |= extra & has[:, :2]
    keep[:, 2] = has[:, 2] & (rng.random(n_int) < ROAD_DIAGONAL)
    falling = rng.random(n_int) < 0.5  # the diagonal u -> u + cols + 1, else u + 1 -> u + cols
    del extra, up_ok, left_ok, go_up, left
    owner, slot = np.nonzero(keep)  # streets in order of their owner: row-major over keep
    del keep, has
    a = np.where(slot == 2, np.where(falling[owner], owner, owner + 1), owner)
    b = np.choose(
        slot, [owner + 1, owner + cols, np.where(falling[owner], owner + cols + 1, owner + cols)]
    )
    del falling
    streets = owner.size
    # Chain vertices: n - n_int of them, each on a street drawn uniformly.
    k = np.bincount(rng.integers(0, max(streets, 1), size=n - n_int), minlength=streets)
    before = np.zeros(streets + 1, dtype=np.int64)
    np.cumsum(k, out=before[1:])
    per_owner = np.bincount(owner, weights=k, minlength=n_int).astype(np.int64)
    new_id = u + np.concatenate([[0], np.cumsum(per_owner)[:-1]])
    del per_owner, u
    first_chain = owner + 1 + before[:-1]  # street e's chain: first_chain[e] .. + k[e] - 1
    # Street e is a path of k[e] + 1 edges: its pieces t = 0 .. k[e].
    pieces = streets + int(before[-1])
    e_of = np.repeat(np.arange(streets, dtype=np.int64), k + 1)
    t = np.arange(pieces, dtype=np.int64) - (e_of + before[e_of])
    start = first_chain[e_of]
    src = np.where(t == 0, new_id[a][e_of], start + t - 1).astype(np.int32)
    dst = np.where(t == k[e_of], new_id[b][e_of], start + t).astype(np.int32)
    return Graph.from_arcs(src, dst, n, directed=False, source=f"road_like(n={n})")
