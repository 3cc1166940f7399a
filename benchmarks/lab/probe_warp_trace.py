"""Per warp, where a wide level of an eager vss traversal goes: probe_patches.py's
``warp_trace`` stamps every warp's first entry at 40 mid levels (the global timer, 32 ns
ticks), and this prints, per level, the last warp to finish against the median one, and over
all levels how long an entry's expansion takes by the rows it claimed. One source, its
levels checked against SciPy.

    python3 benchmarks/lab/probe_warp_trace.py delaunay-20 s32_eager_vss_pers [--patch KEY]

Steps of a warp (ns): ``start`` its stage start after the level's first one, ``vss`` to its
first entry's VSS words and alpha, ``expand`` that entry's MMA and claims, ``rest`` its other
entries, ``gap`` from the level's last warp to the next level's first stage start (block
sum, grid barrier, counters).
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

LO, N = 150, 40  # WARP_TRACE_LO, WARP_TRACE_N of the patch


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("graph")
    ap.add_argument("variant")
    ap.add_argument("--patch", default="", help="more probe_patches.py keys, joined by +")
    args = ap.parse_args()
    key = "+".join(["warp_trace"] + ([args.patch] if args.patch else []))
    PP.PATCHES[key] = [p for k in key.split("+") for p in PP.PATCHES[k]]
    PP.install(key)
    b = Bench.load(args.graph, 16, None)
    with b.engine(_by_name(args.variant), 10.0, (1024, 1, 0), record_levels=True) as eng:
        src = int(b.sources[0])
        check_levels(b.graph, src, eng.bfs(src), key)
        for _ in range(3):
            eng.bfs(src, out="device")
        n, levels, warps = b.graph.n, eng.stats.levels_run, eng.grid_size * 32
        raw = eng._tr.values["level_clock"].get().astype(np.int64)
        print(f"traversal {eng.stats.traversal_ms:.3f} ms, {levels} levels, {warps} warps")
    count = min(N, levels - LO)
    rec = raw[n + 2 : n + 2 + count * warps * 5].reshape(count, warps, 5)
    rows, expand, claims = [], [], []
    for k in range(count - 1):
        t = rec[k]
        busy = (t[:, 4] & 0xFF) > 0
        t0 = t[:, 0].min()
        last = int(np.argmax(t[:, 3]))
        nxt = rec[k + 1][:, 0].min()
        w = t[busy]
        steps = np.stack(
            [w[:, 0] - t0, w[:, 1] - w[:, 0], w[:, 2] - w[:, 1], w[:, 3] - w[:, 2]], axis=1
        )
        s = t[last]
        rows.append(
            (LO + k, busy.sum(), t[:, 3].max() - t0, nxt - t[:, 3].max(), s[0] - t0,
             s[1] - s[0], s[2] - s[1], s[3] - s[2], s[4] & 0xFF, s[4] >> 8,
             *np.median(steps, axis=0), *np.percentile(steps[:, 2], [90, 99]))
        )  # fmt: skip
        expand.append(w[:, 2] - w[:, 1])
        claims.append(w[:, 4] >> 8)
    cols = (
        "L busy span gap | last: start vss expand rest entries claims | median: start vss "
        "expand rest | expand p90 p99"
    )
    print(cols)
    for r in rows:
        print(" ".join(f"{x:.0f}" for x in r))
    a = np.array(rows, dtype=np.float64)
    print("medians over levels:", " ".join(f"{x:.0f}" for x in np.median(a, axis=0)))
    e, c = np.concatenate(expand), np.concatenate(claims)
    for lo, hi in ((0, 1), (1, 2), (2, 3), (3, 5), (5, 33)):
        m = (c >= lo) & (c < hi)
        if m.any():
            p = np.percentile(e[m], [50, 90, 99])
            print(f"claims {lo}-{hi - 1}: {m.sum()} entries, expand p50 {p[0]:.0f} p90 {p[1]:.0f}"
                  f" p99 {p[2]:.0f} ns")  # fmt: skip


if __name__ == "__main__":
    main()
