"""Per-level cost of each direction on the lazy switching variants: every level top-down (eta =
0), every level bottom-up (eta = 1e12) and the given eta, per source, with each level's width,
the out-arcs of its frontier (m_f) and the in-arcs of the vertices still unvisited (m_u); the
"oracle" is the sum of the per-level minimum of the two directions.

    python3 benchmarks/probe_directions.py urand-20,kron-21 s8_lazy_vss_switch_pers 2
    python3 benchmarks/probe_directions.py kron-22 s8_lazy_vss_switch_pers --source-ids 3429991

Each level's time is from ``record_levels=True`` (block 0's clock at the top of each level);
the stage split (expansion / finalization) is the given eta's. 1024 threads x 1 block per SM,
small_queue 0.
"""

from __future__ import annotations

import argparse

import numpy as np
from run import Bench, _by_name

GEOMETRY = (1024, 1, 0)


def per_source(
    b: Bench, spec, eta: float, count: int, beta: float = 0.0, alpha: float = 0.0
) -> list[tuple]:
    """(levels, level ms, bottom-up levels, traversal ms, stage ms) of the first sources."""
    out = []
    with b.engine(spec, eta, GEOMETRY, record_levels=True) as eng:
        eng.beta, eng.alpha = beta, alpha
        eng.bfs(int(b.sources[0]))  # warm-up
        for s in b.sources[:count]:
            levels = eng.bfs(int(s))
            times, bottom_up = eng.level_times_ms()
            out.append((levels, times, bottom_up, eng.stats.traversal_ms, eng.stage_times_ms()))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("graphs", help="comma-separated anchor graphs")
    ap.add_argument("variants", help="comma-separated lazy switching variants")
    ap.add_argument("sources", type=int, nargs="?", default=2)
    ap.add_argument("--eta", type=float, default=10.0)
    ap.add_argument("--beta", type=float, default=0.0, help="the return rule beside eta")
    ap.add_argument("--alpha", type=float, default=0.0, help="the edge-ratio guard beside eta")
    ap.add_argument("--ordering", default=None, help="natural, rcm or jaccard (default: the C++'s)")
    ap.add_argument(
        "--source-ids", default="", help="comma-separated graph ids, not the protocol sources"
    )
    args = ap.parse_args()
    for name in args.graphs.split(","):
        b = Bench.load(name, 8, args.ordering)
        if args.source_ids:
            b.sources = np.array([int(s) for s in args.source_ids.split(",")], dtype=np.int64)
            args.sources = len(b.sources)
        g = b.graph
        out_deg, in_deg = np.diff(g.out_ptr), np.diff(g.in_ptr)
        for variant in args.variants.split(","):
            spec = _by_name(variant)
            runs = {eta: per_source(b, spec, eta, args.sources) for eta in (0.0, 1e12)}
            runs[args.eta] = per_source(b, spec, args.eta, args.sources, args.beta, args.alpha)
            for k in range(args.sources):
                levels = runs[0.0][k][0]
                reached = levels >= 0
                depth = int(levels.max()) + 1
                width = np.bincount(levels[reached], minlength=depth)
                m_f = np.bincount(levels[reached], weights=out_deg[reached], minlength=depth)
                seen_in = np.cumsum(np.bincount(levels[reached], weights=in_deg[reached]))
                m_u = in_deg.sum() - np.r_[0, seen_in[:-1]]
                td, bu, tuned = runs[0.0][k][1], runs[1e12][k][1], runs[args.eta][k]
                print(
                    f"{name} {variant} src {int(b.sources[k])}: traversal top-down "
                    f"{runs[0.0][k][3] * 1e3:.1f} us, bottom-up {runs[1e12][k][3] * 1e3:.1f}, "
                    f"eta {args.eta:g} beta {args.beta:g} alpha {args.alpha:g} "
                    f"{tuned[3] * 1e3:.1f} (bottom-up levels {tuned[2]})"
                )
                oracle = 0.0
                for i in range(min(len(td), len(bu), depth)):
                    oracle += min(td[i], bu[i])
                    t = tuned[1][i] * 1e3 if i < len(tuned[1]) else float("nan")
                    s1, s2 = tuned[4][i] * 1e3 if i < len(tuned[4]) else (np.nan, np.nan)
                    print(
                        f"   L{i:2d} width {width[i]:8d} m_f {m_f[i]:11.0f} m_u {m_u[i]:11.0f}"
                        f"  td {td[i] * 1e3:7.1f} bu {bu[i] * 1e3:7.1f} eta {t:7.1f}"
                        f" (stages {s1:6.1f} / {s2:6.1f})"
                    )
                print(f"   oracle {oracle * 1e3:.1f} us, eta {tuned[1].sum() * 1e3:.1f} us")


if __name__ == "__main__":
    main()
