"""Where a traversal's time outside its levels goes: for each source, CUDA events around the
traversal kernel alone and around the pass to the user's ids alone (launched, not captured), beside
the span of the levels' own clocks (block 0's global timer at the top of the first level and of
the empty level that ends the traversal). Medians over the sources, us.

    python3 benchmarks/probe_outside.py kron-22,urand-22 s8_lazy_vss_switch_pers --eta 20 --beta 400

"kernel - levels" is the kernel's start and end: the cooperative launch reaching its first
level, and the last level's end reaching the kernel's completion.
"""

from __future__ import annotations

import argparse

import numpy as np
from run import Bench, _by_name


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("graphs", help="comma-separated anchor graphs")
    ap.add_argument("variants", help="comma-separated persistent variants")
    ap.add_argument("--eta", type=float, default=10.0)
    ap.add_argument("--beta", type=float, default=0.0)
    ap.add_argument("--sources", type=int, default=32)
    ap.add_argument("--geometry", default="1024:1:0", help="BLOCK:BLOCKS_PER_SM:SMALL_QUEUE")
    args = ap.parse_args()
    geometry = tuple(int(x) for x in args.geometry.split(":"))
    import cupy as cp

    for name in args.graphs.split(","):
        bench = Bench.load(name, args.sources)
        for variant in args.variants.split(","):
            spec = _by_name(variant)
            rows = []
            with bench.engine(spec, args.eta, geometry, record_levels=True) as eng:
                eng.beta = args.beta
                (e0, e2), e1 = eng._events, cp.cuda.Event()  # the engine's own two, for stats
                for i, src in enumerate([bench.sources[0], *bench.sources]):
                    user, internal = eng._seeds(int(src))
                    eng._submit_init(int(internal[0]))
                    e0.record()
                    eng._enqueue_traversal(-1)
                    e1.record()
                    if eng._reorders:
                        eng._enqueue_deliver(eng._own_dst.data.ptr, 0)
                    e2.record()
                    eng._wait(int(user[0]))
                    e2.synchronize()
                    levels_us = float(np.sum(eng.level_times_ms()[0])) * 1e3
                    kernel_us = cp.cuda.get_elapsed_time(e0, e1) * 1e3
                    deliver_us = cp.cuda.get_elapsed_time(e1, e2) * 1e3
                    eng.bfs(int(src), out="view")  # the public call, its own events
                    timed = eng.stats.traversal_ms
                    if i:  # the first run warms up
                        rows.append((levels_us, kernel_us, deliver_us, timed * 1e3))
            r = np.median(np.asarray(rows), axis=0)
            print(
                f"  {name} {variant} ({geometry}): levels {r[0]:.1f}, kernel {r[1]:.1f} "
                f"(kernel - levels {r[1] - r[0]:.1f}), deliver {r[2]:.1f}, "
                f"bfs() traversal {r[3]:.1f} us",
                flush=True,
            )


if __name__ == "__main__":
    main()
