"""A served call against the timed traversal, in alternating rounds on one engine.

    python3 benchmarks/probe_served.py twitch_FR s32_eager_resident_r128_pers \
        --geometry 512:1 --ordering natural --rounds 3

Each round times the traversal of every protocol source (CUDA events, ``stats.traversal_ms``),
then the whole ``bfs(src, out="device")`` of every source inside ``engine.serving()`` (host
clock, each call synchronized on the current stream: the tuner's protocol's own loop,
``_served_whole_calls``). Prints one line, ``traversal/served`` means in us per round. To
compare two trees, run it from each in turn (old, new, old, new) in one device call: the
rounds of one process share a machine state that a second process may not (benchmarks/NOTES.md,
session 25).

``--levels`` builds the engine with ``record_levels=True`` and adds, per round, the time from
the first level's start to the last one's inside the kernel (the level clock), for the timed
calls and for served calls (read after each served call, which ends the server: those calls
are not the ones timed), to tell time inside the traversal from time around it; ``--out``
names those calls' ``out``.
"""

from __future__ import annotations

import argparse

import numpy as np
from run import Bench, _by_name


def engine_arguments(description: str) -> argparse.ArgumentParser:
    """The arguments of both served-call probes: a graph, a persistent variant and its setting."""
    ap = argparse.ArgumentParser(description=description,
                                 formatter_class=argparse.RawTextHelpFormatter)  # fmt: skip
    ap.add_argument("graph")
    ap.add_argument("variant", help="a variant with a serving kernel")
    ap.add_argument("--geometry", default="512:1", help="BLOCK:BLOCKS_PER_SM")
    ap.add_argument("--eta", type=float, default=10.0)
    ap.add_argument("--ordering", default=None, help="natural, jaccard, rcm (default: run.py's)")
    return ap


def main() -> None:
    ap = engine_arguments(__doc__)
    ap.add_argument("--sources", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--levels", action="store_true", help="also the in-kernel level time")
    ap.add_argument("--out", default="device", help="--levels: the calls' out (device, view)")
    args = ap.parse_args()
    from blest.tuning.protocol import _served_whole_calls, warm_up

    geometry = tuple(int(x) for x in args.geometry.split(":"))
    bench = Bench.load(args.graph, args.sources, ordering=args.ordering)
    sources = [int(s) for s in bench.sources]
    rounds = []
    spec = _by_name(args.variant)
    with bench.engine(spec, args.eta, geometry, record_levels=args.levels) as eng:
        warm_up(eng, sources[0])
        for _ in range(args.rounds):
            eng.timing = True
            traversal = []
            for src in sources:
                eng.bfs(src, out="view")
                traversal.append(eng.stats.traversal_ms * 1e3)
            eng.timing = False
            served = _served_whole_calls(eng, sources)  # the tuner's protocol, in ms
            line = f"{np.mean(traversal):.1f}/{1e3 * np.mean(served):.1f}"
            if args.levels:
                inside = []
                for serve in (False, True):
                    sums = []
                    for src in sources:
                        if serve:
                            with eng.serving():
                                eng.bfs(src, out=args.out)
                        else:
                            eng.bfs(src, out=args.out)
                        sums.append(1e3 * float(np.sum(eng.level_times_ms()[0])))
                    inside.append(np.mean(sums))
                line += f" (levels inside: launched {inside[0]:.1f}, served {inside[1]:.1f})"
            rounds.append(line)
    print(f"{args.graph} {args.variant} {args.geometry} traversal/served us:", " ".join(rounds))


if __name__ == "__main__":
    main()
