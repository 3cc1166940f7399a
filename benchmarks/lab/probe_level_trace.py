"""Per level and block, where a persistent traversal's time goes: the global timer stored by a
``trace_*`` patch of probe_patches.py at stage 1's start (0), at the barrier's arrival (2) and
at its release (3) (slots 1 and 4-7 are for patches that stamp steps inside a level; columns
that read an unstamped slot print -1); one source, levels checked against SciPy.

    python3 benchmarks/lab/probe_level_trace.py delaunay-20 s32_eager_vss_pers rcm trace_vss
    python3 benchmarks/lab/probe_level_trace.py twitch_FR s32_eager_resident_pers natural trace_res

Patches joined by "+" apply together. The timer lives in ``level_clock[n + 2 ...]`` (8 slots
per level and block), so the graph needs n + 2 >= 8 x blocks x levels.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/

import probe_patches as PP  # noqa: E402
from graphs import check_levels  # noqa: E402
from run import Bench, _by_name  # noqa: E402

COLUMNS = (
    "L skew0 span crit_s1 crit_gather crit_expand crit_cnt max_cnt busy arr2rel relskew "
    "rel2next level med_s1 c_F c_rp c_scan c_sync med_F med_gather"
).split()


def level_rows(t0, t1, t2, t3, cnt, t5, t6, t7) -> np.ndarray:
    """One row of COLUMNS per level (ns): the last arriver's steps and the barrier's."""
    rows = []
    for L in range(len(t0) - 1):
        crit = int(np.argmax(t2[L]))

        def step(a, b, L=L, crit=crit):
            return (b[L, crit] - a[L, crit]) if a[L, crit] and b[L, crit] else -1

        rows.append((
            L, t0[L].max() - t0[L].min(), t2[L].max() - t0[L].min(), t2[L, crit] - t0[L, crit],
            step(t0, t1), step(t1, t2), cnt[L, crit], cnt[L].max(), (cnt[L] > 0).sum(),
            t3[L].min() - t2[L].max(), t3[L].max() - t3[L].min(), t0[L + 1].min() - t3[L].min(),
            t0[L + 1].min() - t0[L].min(), np.median(t2[L] - t0[L]),
            step(t0, t6), step(t6, t7), step(t7, t5), step(t5, t1),
            np.median(t6[L] - t0[L]) if t6[L].all() else -1,
            np.median(t1[L] - t0[L]) if t1[L].all() else -1,
        ))  # fmt: skip
    return np.array(rows, dtype=np.float64)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("graph")
    ap.add_argument("variant")
    ap.add_argument("ordering")
    ap.add_argument("patch")
    args = ap.parse_args()
    if "+" in args.patch:
        PP.PATCHES[args.patch] = [p for k in args.patch.split("+") for p in PP.PATCHES[k]]
    PP.install(args.patch)
    b = Bench.load(args.graph, 16, args.ordering)
    with b.engine(_by_name(args.variant), 10.0, (1024, 1, 0), record_levels=True) as eng:
        src = int(b.sources[0])
        check_levels(b.graph, src, eng.bfs(src), args.patch)
        for _ in range(3):
            eng.bfs(src, out="device")
        blocks, n, levels = eng.grid_size, b.graph.n, eng.stats.levels_run
        raw = eng._tr.values["level_clock"].get().astype(np.int64)
        print(f"traversal {eng.stats.traversal_ms:.3f} ms, {levels} levels, {blocks} blocks")
    rec = raw[n + 2 : n + 2 + (levels + 1) * blocks * 8].reshape(levels + 1, blocks, 8)
    t0, t1, t2, t3, cnt, t5, t6, t7 = (rec[:, :, i] for i in range(8))
    if np.median(t2[0] - t0[0]) < 0:  # a fused call: barrier 0 is init's
        t2, t3 = t2[1:], t3[1:]
    a = level_rows(t0, t1, t2, t3, cnt, t5, t6, t7)
    print(" ".join(COLUMNS))
    for r in a[list(range(0, 12)) + list(range(100, 112))]:
        print(" ".join(f"{x:.0f}" for x in r))
    mid = a[20 : len(a) - 20]
    print("medians (levels 20..-20):", " ".join(
        f"{c}={np.median(mid[:, i]):.0f}" for i, c in enumerate(COLUMNS)))  # fmt: skip


if __name__ == "__main__":
    main()
