"""Where a served call's time goes: host phases (host clock) and GPU phases (timer stamps that
this probe patches into the serving kernel), medians over back-to-back calls, in us.

    python3 benchmarks/probe_served_phases.py twitch_FR s32_eager_resident_r128_pers \
        --geometry 512:1 --ordering natural

Host phases: from the call's start to the wait for the answer (the checks, the post, and the
next out="device" array's allocation, which overlaps the GPU), the wait, Python after the
answer, and the stream synchronize that the tuner's protocol adds. GPU phases, stamped by thread
0 of block 0 into the top of ``level_clock`` (the engine records levels): the request seen and
seeded to the call's barrier met, the levels, the levels done to block 0's arrival at the
answer's barrier, and that arrival to the barrier's end. The engine records levels, so its
kernels are not the timed ones: read the split, not the sums.
"""

from __future__ import annotations

import time

import numpy as np
from probe_served import engine_arguments
from run import Bench, _by_name

import blest.runtime.engine_serve as ENGINE_SERVE

_STAMP = (
    "if (st.level_clock && blockIdx.x == 0 && threadIdx.x == 0) "
    "st.level_clock[2 * (g.n + 2) - {k}] = global_timer_ns();"
)
#: (text of the serving kernel, the same with stamps): stamps 1 to 5 at the ends of the phases.
PATCHES = [
    (
        "        MEET();\n        const u32 seq = __ldcg(st.ctl + CTL_CALL);",
        "        "
        + _STAMP.format(k=1)
        + "\n        MEET();\n        "
        + _STAMP.format(k=2)
        + "\n        const u32 seq = __ldcg(st.ctl + CTL_CALL);",
    ),  # fmt: skip
    (
        "        call = load_call_slot(st);\n        __syncthreads();",
        "        " + _STAMP.format(k=3) + "\n        call = load_call_slot(st);\n"
        "        __syncthreads();",
    ),  # fmt: skip
    (
        "        MEET_AND_ANSWER(serve_seq);",
        "        "
        + _STAMP.format(k=4)
        + "\n        MEET_AND_ANSWER(serve_seq);\n        "
        + _STAMP.format(k=5),
    ),  # fmt: skip
]
HOST = ["to the wait", "the wait", "Python after", "stream sync"]
GPU = ["seen to met", "levels", "levels to arrival", "arrival to end"]


def stamped(render):
    def render_stamped(spec, serving: bool = False, claims=None):
        text = render(spec, serving=serving, claims=claims)
        for old, new in PATCHES if serving else ():
            if old not in text:
                raise SystemExit(f"{old!r} is not in the serving kernel of {spec.name}")
            text = text.replace(old, new)
        return text

    return render_stamped


def main() -> None:
    ap = engine_arguments(__doc__)
    ap.add_argument("--calls", type=int, default=256)
    args = ap.parse_args()
    import cupy as cp

    from blest.tuning.protocol import warm_up

    ENGINE_SERVE.render = stamped(ENGINE_SERVE.render)
    geometry = tuple(int(x) for x in args.geometry.split(":"))
    bench = Bench.load(args.graph, 64, ordering=args.ordering)
    sources = [int(s) for s in bench.sources]
    spec = _by_name(args.variant)
    with bench.engine(spec, args.eta, geometry, record_levels=True) as eng:
        warm_up(eng, sources[0])
        traversal = []
        for src in sources:
            eng.bfs(src, out="view")
            traversal.append(eng.stats.traversal_ms * 1e3)
        eng.timing = False
        top = eng._state["level_clock"][2 * (eng.n + 2) - 5 :]
        marks: dict[str, float] = {}
        wait = eng._serve_wait

        def timed_wait(seq: int) -> None:
            marks["post"] = time.perf_counter()
            wait(seq)
            marks["seen"] = time.perf_counter()

        eng._serve_wait = timed_wait
        stream, side = cp.cuda.get_current_stream(), cp.cuda.Stream(non_blocking=True)
        rows = []
        with eng.serving():
            eng.bfs(sources[0], out="device")
            for i in range(args.calls):
                stream.synchronize()
                t0 = time.perf_counter()
                eng.bfs(sources[i % len(sources)], out="device")
                t1 = time.perf_counter()
                stream.synchronize()
                t2 = time.perf_counter()
                time.sleep(0.0002)  # the stamps after the answer land
                k5, k4, k3, k2, k1 = (int(x) for x in top.get(stream=side))
                host = [marks["post"] - t0, marks["seen"] - marks["post"], t1 - marks["seen"]]
                rows.append([1e6 * x for x in [*host, t2 - t1]] + [1e-3 * (k2 - k1),
                            1e-3 * (k3 - k2), 1e-3 * (k4 - k3), 1e-3 * (k5 - k4)])  # fmt: skip
    median = np.median(np.array(rows), axis=0)
    whole = float(np.median([sum(r[:4]) for r in rows]))
    parts = "; ".join(f"{name} {v:.2f}" for name, v in zip(HOST + GPU, median, strict=True))
    print(f"{args.graph} {args.variant} {args.geometry}: traversal (events) "
          f"{np.mean(traversal):.1f}; whole {whole:.1f}; {parts}")  # fmt: skip


if __name__ == "__main__":
    main()
