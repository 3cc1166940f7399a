"""Per-level times of one batch of the smem form (a probe build: block 0's thread 0 reads the
global timer at the start of the batch, before and after each level's expansion and after its
scan, into a scratch buffer).

    python3 benchmarks/probe_levels.py wiki_chameleon ms_s8_k32_smem_csr --block 1024 --eta 2
"""

from __future__ import annotations

import argparse

import numpy as np
from bench_msbfs import Prepare
from profile_ms import parse_spec

import blest.runtime.msbfs as msbfs

MARKS = 512


STAMP = "if (threadIdx.x == 0 && b == run.batch_first) ((u64*)st.queue)[{i}] = global_timer_ns();\n"
POINTS = (  # (line of the smem kernel, index of the mark put before it)
    ("        smem_accumulate(run, first, size, s_cnt, 0);", "0"),
    (
        "            const double unvisited = (double)g.n * size - (double)visited_pairs;",
        "1 + 3 * L",
    ),
    ("            if (threadIdx.x == 0) {\n                s_words = 0u;", "2 + 3 * L"),
    ("            if (f_words == 0u) break;", "3 + 3 * L"),
)


def patched(render):
    def render_probe(spec):
        src = render(spec)
        for line, index in POINTS:
            indent = line[: len(line) - len(line.lstrip())]
            src = src.replace(line, indent + STAMP.format(i=index) + line)
        assert src.count("global_timer_ns();") >= len(POINTS), "probe points not found"
        return src

    return render_probe


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("graph")
    ap.add_argument("variant")
    ap.add_argument("--block", type=int, default=1024)
    ap.add_argument("--eta", type=float, default=0.0)
    ap.add_argument("--batch", type=int, default=0)
    args = ap.parse_args()
    spec = parse_spec(args.variant)
    msbfs.render_ms = patched(msbfs.render_ms)
    p = Prepare(args.graph)
    cp = p.cp
    prep = p(spec.sigma)
    runner = msbfs.MSRunner(prep, spec, eta=args.eta, block_size=args.block)
    scratch = cp.zeros(2 * MARKS, dtype=cp.int32)
    runner._state["queue"] = scratch
    sources = cp.arange(prep.n, dtype=cp.int32)
    b = args.batch
    for _ in range(3):
        scratch.fill(0)
        runner._prepared_launch = None
        runner.run(sources, batches=(b, b + 1))
    t = scratch.view(cp.uint64).get().astype(np.int64)
    marks = t[: np.flatnonzero(t)[-1] + 1] if t.any() else t[:1]
    base = marks[0]
    print(f"{args.graph} {spec.name} b{args.block} eta={args.eta:g} batch {b}: "
          f"seed {((marks[1] - base) / 1e3):.1f} us")  # fmt: skip
    for L in range((len(marks) - 1) // 3):
        s, e, f = marks[1 + 3 * L], marks[2 + 3 * L], marks[3 + 3 * L]
        nxt = marks[4 + 3 * L] if 4 + 3 * L < len(marks) else f
        print(f"  level {L}: expand {(e - s) / 1e3:7.2f} us, scan {(f - e) / 1e3:7.2f} us, "
              f"to next {(nxt - f) / 1e3:6.2f} us")  # fmt: skip


if __name__ == "__main__":
    main()
