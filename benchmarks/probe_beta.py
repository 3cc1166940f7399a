"""The return rule (beta) and the edge-ratio guard (alpha) against the paper's rule alone: mean
traversal ms over the timing protocol's sources for each (eta, beta, alpha) setting of each lazy
switching variant, on one engine per variant, settings interleaved source by source (so drift
hits them alike), with the median, the slowest source and the mean count of bottom-up levels.

    python3 benchmarks/probe_beta.py kron-22,urand-22 s8_lazy_vss_switch_pers 10 0,24,100,400
    python3 benchmarks/probe_beta.py kron-22 s8_lazy_vss_switch_pers 20,200 400 --alphas 0,14

1024 threads x 1 block per SM, small_queue 0; beta 0 and alpha 0 are the rules off.
"""

from __future__ import annotations

import argparse

import numpy as np
from run import Bench, _by_name

GEOMETRY = (1024, 1, 0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("graphs", help="comma-separated anchor graphs")
    ap.add_argument("variants", help="comma-separated lazy switching variants")
    ap.add_argument("etas", help="comma-separated eta values")
    ap.add_argument("betas", help="comma-separated beta values (0: off)")
    ap.add_argument("--alphas", default="0", help="comma-separated alpha values (0: off)")
    ap.add_argument("--sources", type=int, default=64)
    args = ap.parse_args()
    etas = [float(x) for x in args.etas.split(",")]
    betas = [float(x) for x in args.betas.split(",")]
    alphas = [float(x) for x in args.alphas.split(",")]
    settings = [(e, b, a) for e in etas for b in betas for a in alphas]
    for name in args.graphs.split(","):
        bench = Bench.load(name, args.sources)
        for variant in args.variants.split(","):
            spec = _by_name(variant)
            ms = {s: [] for s in settings}
            bu = {s: [] for s in settings}
            with bench.engine(spec, etas[0], GEOMETRY) as eng:
                for setting in settings:  # warm-up (and capture) of every setting
                    eng.eta, eng.beta, eng.alpha = setting
                    eng.bfs(int(bench.sources[0]), out="view")
                for src in bench.sources:
                    for setting in settings:
                        eng.eta, eng.beta, eng.alpha = setting
                        eng.bfs(int(src), out="view")
                        ms[setting].append(eng.stats.traversal_ms)
                        bu[setting].append(len(eng.stats.bottom_up_levels))
            for eta, beta, alpha in settings:
                t = np.asarray(ms[eta, beta, alpha])
                worst = int(np.argmax(t))
                print(
                    f"  {name} {variant} eta {eta:g} beta {beta:g} alpha {alpha:g}: mean "
                    f"{t.mean():.4f} ms, median {np.median(t):.4f}, max {t[worst]:.3f} (src "
                    f"{int(bench.sources[worst])}), bottom-up levels "
                    f"{np.mean(bu[eta, beta, alpha]):.2f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
