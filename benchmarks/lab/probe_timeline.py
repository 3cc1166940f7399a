"""Per-level timelines of single-source variants side by side, and their traversal times
interleaved source by source (each source runs every variant before the next source).

    python3 benchmarks/lab/probe_timeline.py twitch_FR s32_eager_vss_pers,s32_eager_resident_pers \
        --geometry 512:1 --sources 64 --show 2

For each variant: the mean traversal (ms) over ``--sources`` protocol sources, and for the first
``--show`` sources the time of each level (us, block 0's clock at the top of each level, from
``record_levels=True``) beside the level's width. The timeline engines are separate from the
timed ones, so the level clock's stores do not touch the means.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/

from run import Bench, _by_name  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("graphs", help="comma-separated anchor graphs")
    ap.add_argument("variants", help="comma-separated variant names")
    ap.add_argument("--geometry", default="512:1", help="BLOCK:BLOCKS_PER_SM")
    ap.add_argument("--sources", type=int, default=64)
    ap.add_argument("--ordering", default=None, help="natural, rcm or jaccard (default: the C++'s)")
    ap.add_argument("--show", type=int, default=2, help="sources whose timelines are printed")
    args = ap.parse_args()
    block, per_sm = (int(x) for x in args.geometry.split(":"))
    specs = [_by_name(v) for v in args.variants.split(",")]
    for name in args.graphs.split(","):
        b = Bench.load(name, args.sources, args.ordering)
        engines = [b.engine(s, 10.0, (block, per_sm, 0)) for s in specs]
        try:
            for eng in engines:
                eng.bfs(int(b.sources[0]))  # warm-up: compile, capture
            times = np.zeros((len(specs), len(b.sources)))
            for j, src in enumerate(b.sources):
                for i, eng in enumerate(engines):
                    eng.bfs(int(src))
                    times[i, j] = eng.stats.traversal_ms
        finally:
            for eng in engines:
                eng.close()
        print(f"{name} {block}x{per_sm}, mean / median traversal ms over {len(b.sources)} sources:")
        for spec, row in zip(specs, times, strict=True):
            print(f"  {spec.name:28s} {row.mean():.4f} / {np.median(row):.4f}")
        for src in b.sources[: args.show]:
            print(f"  source {int(src)}: level us (width)")
            for spec in specs:
                with b.engine(spec, 10.0, (block, per_sm, 0), record_levels=True) as eng:
                    eng.bfs(int(src))
                    levels = eng.bfs(int(src))
                    level_ms, _ = eng.probes.level_times_ms()
                width = np.bincount(levels[levels >= 0])
                cells = " ".join(
                    f"{1e3 * t:.1f}({w})" for t, w in zip(level_ms, width, strict=False)
                )
                print(f"    {spec.name:28s} {1e3 * sum(level_ms):6.1f} = {cells}")


if __name__ == "__main__":
    main()
