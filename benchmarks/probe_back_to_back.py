"""Levels inside the kernel: a traversal launched alone against traversals launched back to back.

    python3 benchmarks/probe_back_to_back.py luxembourg_osm s8_block --geometry 512:1 --ordering rcm

The question (benchmarks/NOTES.md, session 28): a served call's levels run 2-6% faster inside
the kernel than a launched call's (the level clock, ``record_levels``). Is that the serving
kernel's code, or the GPU's state between calls? Here the timed kernel is launched two ways,
from the same engine, for each protocol source:
- alone: one call, waited for (the engine's plain call, as the protocol times it);
- back to back: ``--burst`` traversals of the same source enqueued with no wait between them
  (the engine's own submission steps), waited for once; the level clock is the last one's.
If the back-to-back levels match the served ones, the GPU's idle gaps between calls cost the
launched levels their speed; if they match the launched ones, the serving kernel's code does.
Prints the mean span of the level clock (first level's start to the last one's) in us.
"""

from __future__ import annotations

import numpy as np
from probe_served import engine_arguments
from run import Bench, _by_name


def level_span_us(eng) -> float:
    return 1e3 * float(np.sum(eng.level_times_ms()[0]))


def main() -> None:
    ap = engine_arguments(__doc__)
    ap.add_argument("--sources", type=int, default=32)
    ap.add_argument("--burst", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    from blest.tuning.protocol import warm_up

    geometry = tuple(int(x) for x in args.geometry.split(":"))
    bench = Bench.load(args.graph, args.sources, ordering=args.ordering)
    sources = [int(s) for s in bench.sources]
    spec = _by_name(args.variant)
    with bench.engine(spec, args.eta, geometry, record_levels=True) as eng:
        eng.timing = False
        warm_up(eng, sources[0])
        internal = np.asarray(eng._internal_ids)
        for _ in range(args.rounds):
            alone, burst = [], []
            for src in sources:
                eng.bfs(src, out="device")
                alone.append(level_span_us(eng))
                for _ in range(args.burst):  # the same steps as a launched call, no waits
                    eng._submit_init(int(internal[src]))
                    eng._submit_traversal(-1)
                eng._wait(src)
                burst.append(level_span_us(eng))
            print(
                f"{args.graph} {args.variant} {args.geometry}: levels inside the kernel, "
                f"alone {np.mean(alone):.1f} us, back to back ({args.burst}) "
                f"{np.mean(burst):.1f} us",
                flush=True,
            )


if __name__ == "__main__":
    main()
