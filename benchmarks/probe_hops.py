"""Two BFS levels between two grid barriers, exactly: the eager vss queue over B = A + A^2.

    python3 benchmarks/probe_hops.py delaunay-20 [--check 2] [--rounds 2]

The idea (session 32). Let F_L be the vertices at level L. A vertex at level L + 1 has an
in-neighbour in F_L; one at level L + 2 is two arcs from F_L, and every vertex two arcs from F_L
is at level L + 2 at most. So one phase can expand F_L over the slices of B = A + A^2 (rows:
vertices one or two arcs from the set's columns) and offer each reached row r the level L + 1
when one of its arcs from F_L is in A (the slice's "near" mask) and L + 2 otherwise, with an
``atomicMin`` on r's level: whatever order the offers land in, r ends at the smaller, which is
its BFS level. The vertices lowered to L + 2 form the next phase's frontier; one lowered to L + 2
and then to L + 1 leaves a stale frontier bit, whose expansion next phase offers only levels
above those its neighbours already have (no-ops). Half the grid barriers, for B's larger VSSs.

This probe patches the rendered ``s32_eager_vss_pers`` (sigma 32: one slice a lane) and hands
the engine B's BVSS with its mask words laid out as the product's (``blest.graph.hops``,
``mask_words``: the B mask, then the near masks, 32 words each a VSS); ``--hops 3`` three
levels a phase. (The product's ``hops`` variants, session 32, grew from this probe.) The
driver's level L is the phase; offers are KL + 1 .. KL + K. The depth and visited
counters it reports are not kept exact; the levels are (``--check``).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from graphs import check_levels
from probe_patches import ORIGINAL, RENDER
from run import Bench, _by_name, time_variants

import blest.runtime.engine as ENGINE
import blest.runtime.engine_serve as ENGINE_SERVE
from blest.graph.bvss import BVSS
from blest.graph.core import Graph
from blest.graph.hops import hops_bvss
from blest.graph.ordering import permute_graph
from blest.graph.prepared import Prepared
from blest.runtime.device import mask_words

_REACH_OLD = """    if (by_level) {
        if (atomicCAS(st.levels + r, -1, lv.L + 1) != -1) return;
    } else {"""
_REACH_NEW = """    if (by_level) {
        const u32 offer = (u32)(2 * lv.L + (near ? 1 : 2));
        const u32 old = atomicMin(reinterpret_cast<u32*>(st.levels + r), offer);
        if (old <= offer) return;
        if (near) {
            if (old == offer + 1u) lv.fresh -= 1u;  // it had been counted in F_{L+2}
            return;
        }
    } else {"""
PATCH = [
    (
        "Level& lv, int r, bool check_visited) {",
        "Level& lv, int r, bool check_visited, bool near) {",
    ),
    (
        "if (check_visited && (by_level ? __ldcg(st.levels + r) >= 0 :",
        "if (check_visited && (by_level ? (u32)__ldcg(st.levels + r) <= "
        "(u32)(2 * lv.L + (near ? 1 : 2)) :",
    ),
    (_REACH_OLD, _REACH_NEW),
    ("    u32 mask;       // this lane's mask word", "    u32 mask;\n    u32 near;"),
    (
        "    w.mask = __ldg(g.masks + (long long)v * 32 + lane);",
        "    w.mask = __ldg(g.masks + (long long)v * 64 + lane);\n"
        "    w.near = __ldg(g.masks + (long long)v * 64 + 32 + lane);",
    ),
    (
        "reach_row<by_level>(g, st, lv, w.rows.r[k], check_visited);",
        "reach_row<by_level>(g, st, lv, w.rows.r[k], check_visited, (w.near & alpha) != 0u);",
    ),
]


# Three levels a phase (--hops 3): B = A + A^2 + A^3 and two near masks a slice (its arcs of A,
# then of A + A^2): a row is offered 3L + d, d the fewest arcs from F_{3L} (1, 2 or 3).
_REACH3 = """    if (by_level) {
        const u32 offer = (u32)(3 * lv.L + d);
        const u32 old = atomicMin(reinterpret_cast<u32*>(st.levels + r), offer);
        if (old <= offer) return;
        if (d != 3) {
            if (old == (u32)(3 * lv.L + 3)) lv.fresh -= 1u;  // it had been counted in F_{3L+3}
            return;
        }
    } else {"""
PATCH3 = [
    (
        "Level& lv, int r, bool check_visited) {",
        "Level& lv, int r, bool check_visited, int d) {",
    ),
    (
        "if (check_visited && (by_level ? __ldcg(st.levels + r) >= 0 :",
        "if (check_visited && (by_level ? (u32)__ldcg(st.levels + r) <= (u32)(3 * lv.L + d) :",
    ),
    (_REACH_OLD, _REACH3),
    (
        "    u32 mask;       // this lane's mask word",
        "    u32 mask;\n    u32 near;\n    u32 near2;",
    ),
    (
        "    w.mask = __ldg(g.masks + (long long)v * 32 + lane);",
        "    w.mask = __ldg(g.masks + (long long)v * 96 + lane);\n"
        "    w.near = __ldg(g.masks + (long long)v * 96 + 32 + lane);\n"
        "    w.near2 = __ldg(g.masks + (long long)v * 96 + 64 + lane);",
    ),
    (
        "reach_row<by_level>(g, st, lv, w.rows.r[k], check_visited);",
        "reach_row<by_level>(g, st, lv, w.rows.r[k], check_visited, "
        "(w.near & alpha) ? 1 : (w.near2 & alpha) ? 2 : 3);",
    ),
]
HOPS = 2


def patched_render(spec, serving: bool = False, claims=None):
    text = ORIGINAL(spec, serving=serving, claims=claims)
    for old, new in PATCH if HOPS == 2 else PATCH3:
        if old not in text:
            if serving:
                continue
            raise SystemExit(f"hop{HOPS} patch: {old!r} is not in the source of {spec.name}")
        text = text.replace(old, new)
    return text


def install(render) -> None:
    RENDER.render = ENGINE.render = ENGINE_SERVE.render = render


def prepare_b(graph: Graph, a_prep: Prepared) -> Prepared:
    """The Prepared of B = A + ... + A^HOPS (``a_prep``'s ordering otherwise) whose masks are
    the product's mask words (each VSS's mask, then its near masks: 32 * HOPS words a VSS) and
    whose kernels are patched here, not rendered with ``hops``."""
    t = time.perf_counter()
    perm = a_prep.permutation
    internal = graph if perm.is_identity else permute_graph(graph, perm)
    b = hops_bvss(internal.in_ptr, internal.in_idx, internal.n, 32, HOPS)
    words = mask_words(np, b)
    both = BVSS(32, b.n, b.nnz, b.row_ids, words, b.real_ptrs, b.virtual_to_real, b.real_slices)
    print(
        f"  B = A + .. + A^{HOPS}: {b.nnz} arcs ({b.nnz / max(internal.nnz, 1):.2f} x A), "
        f"{b.n_vss} VSSs (A: {a_prep.bvss.n_vss}), {time.perf_counter() - t:.1f} s on the CPU",
        flush=True,
    )
    return Prepared(graph, a_prep.ordering, perm, a_prep.in_ptr, a_prep.in_idx, both)


def cpu_check(seed: int) -> None:
    """The patched kernel on the CPU runner (tests/cuda_cpu.py) against SciPy: the small zoo
    in RCM order (the eager kernels claim by level there), grid and small-queue levels."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import test_ss_kernels_cpu as cpu
    from cuda_cpu import build, small_zoo

    from blest.codegen.spec import VariantSpec
    from blest.graph.ordering import rcm
    from blest.reference import bfs_levels

    spec = VariantSpec(sigma=32, update="eager", queue="vss", switching=False)
    params, init, bfs = cpu.kernel_signatures(spec)
    cache = Path("/tmp/blest-patch-cpu")
    cache.mkdir(exist_ok=True)
    exe = build(patched_render(spec, claims="level"), [init, bfs], params, [], cache)
    rng = np.random.default_rng(seed)
    for n in (360, 3000):
        for name, graph in small_zoo(rng, n).items():
            a_prep = Prepared.from_graph(graph, 32, rcm(graph))
            prep = prepare_b(graph, a_prep)
            order = np.asarray(prep.permutation.new_of_old)
            for small in (0, 16):
                for src in rng.choice(np.flatnonzero(graph.out_degree > 0), 3):
                    levels, _ = cpu.traverse(exe, spec, prep, int(order[src]), 0.0, small)
                    want = bfs_levels(graph, int(src))
                    if not np.array_equal(levels[order], want):
                        raise SystemExit(f"hop{HOPS} {name} n={n} src={src} small={small}: differs")
            print(f"ok: hop{HOPS} n={n} {name}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("graphs")
    ap.add_argument("--variant", default="s32_eager_vss_pers")
    ap.add_argument("--geometry", default="1024:1:0")
    ap.add_argument("--ordering", default=None)
    ap.add_argument("--check", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--cpu", type=int, default=None, help="SEED: check on the CPU runner only")
    ap.add_argument("--hops", type=int, default=2, choices=(2, 3), help="levels a phase")
    args = ap.parse_args()
    global HOPS
    HOPS = args.hops
    if args.cpu is not None:
        cpu_check(args.cpu)
        return
    spec = _by_name(args.variant)
    geometry = tuple(int(x) for x in args.geometry.split(":"))
    for name in args.graphs.split(","):
        bench = Bench.load(name, 64, args.ordering)
        a_prep = bench.prepared(32)
        b_prep = prepare_b(bench.graph, a_prep)
        for _ in range(args.rounds):
            hop = f"hop{HOPS}"
            for label, prep, render in (("A", a_prep, ORIGINAL), (hop, b_prep, patched_render)):
                install(render)
                bench._prepared[32] = prep
                print(f"-- {label}", flush=True)
                time_variants(bench, [spec], 10.0, [geometry])
                if args.check:
                    with bench.engine(spec, 10.0, geometry) as eng:
                        for src in bench.sources[: args.check]:
                            check_levels(bench.graph, int(src), eng.bfs(int(src)), label)
                    print(f"   levels of {args.check} sources equal SciPy's", flush=True)
        install(ORIGINAL)
        bench._prepared[32] = a_prep


if __name__ == "__main__":
    main()
