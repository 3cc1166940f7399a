"""Per-source cost of multi-source batches: chunk-major against vertex-major bitmaps, by kappa.

    python3 benchmarks/lab/probe_ms_layout.py --graphs kron-21 urand-20 --sources 16384 \\
        --specs grid:shuffle:128:chunk grid:shuffle:128:vertex grid:shuffle:512:vertex
    python3 benchmarks/lab/probe_ms_layout.py --graphs kron-21 --specs grid:shuffle:256:vertex \\
        --orders internal hub ring   # the same sources, grouped (probe_ms_grouping.py)

For each graph (its default ordering, sigma 8, prepared on the GPU): per spec, one warm run of
the sums over ``--sources`` seeded sources (runs of consecutive internal ids among the
vertices with arcs, as the tuner samples), then the timed run; microseconds per source. The
sums of the first 64 sources are checked bit for bit against the CPU reference. Beside them:
the best single-source whole call ``bfs(src, out="device")`` of two strong variants over 64
sources, and the ratio.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_msbfs import SS_SPECS, Prepare, whole_call_us  # noqa: E402
from lab.probe_ms_grouping import grouped  # noqa: E402

from blest.codegen.msspec import MSSpec  # noqa: E402
from blest.defaults import DEFAULT_BLOCK_SIZE, DEFAULT_ETA, DEFAULT_SIGMA  # noqa: E402
from blest.reference.centrality import source_sums  # noqa: E402
from blest.runtime.ms_runner import MSRunner  # noqa: E402
from blest.tuning.ms_search import sample_sources  # noqa: E402
from blest.tuning.timing import timing_sources  # noqa: E402


def probe(
    name: str, specs: list[MSSpec], k: int, eta: float, block: int, orders: list[str]
) -> list[dict]:
    cp = __import__("cupy")
    p = Prepare(name)
    prep, g = p(DEFAULT_SIGMA), p.graph
    old_of_new = np.asarray(prep.permutation.old_of_new)
    degree = np.asarray(g.out_degree) + np.asarray(g.in_degree)
    pool = np.flatnonzero(degree[old_of_new] > 0)  # internal ids of non-isolated vertices
    sampled = pool[sample_sources(pool.size, k)].astype(np.int32)
    ss = timing_sources(g, 64)
    single = min(whole_call_us(prep, s, DEFAULT_ETA, ss) for s in SS_SPECS[DEFAULT_SIGMA])
    print(f"{name}: n={g.n:,} arcs={g.nnz:,}; single-source whole call {single:.1f} us", flush=True)
    rows = []
    for how, spec in [(how, spec) for how in orders for spec in specs]:
        new_of_old = np.asarray(prep.permutation.new_of_old)  # grouped in the user's graph
        internal = new_of_old[grouped(g, old_of_new[sampled], how)].astype(np.int32)
        want = source_sums(g, old_of_new[internal[:64]], reverse=g.directed)
        row = {"graph": name, "spec": spec.name, "order": how, "sources": int(internal.size)}
        row["eta"] = eta
        try:
            runner = MSRunner(prep, spec, eta=eta, block_size=block)
            got = runner.source_sums(internal[:64])
            ok = got.identical(want)
            runner.source_sums(internal)  # warm: launch packing
            cp.cuda.Device().synchronize()
            t0 = time.perf_counter()
            runner.source_sums(internal)
            us = (time.perf_counter() - t0) / internal.size * 1e6
            runner.close()
            row.update(us_per_source=us, single_us=single, ratio=single / us, ok=bool(ok))
            print(f"  {spec.name:<28} {how:<9} {us:9.2f} us/source  {single / us:5.2f}x single  "
                  f"{'ok' if ok else 'WRONG'}", flush=True)  # fmt: skip
        except Exception as exc:  # a spec that cannot run here is reported, not fatal
            row["error"] = f"{type(exc).__name__}: {exc}"[:200]
            print(f"  {spec.name:<28} {row['error']}", flush=True)
        rows.append(row)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--graphs", nargs="+", required=True)
    ap.add_argument("--sources", type=int, default=16384)
    ap.add_argument("--specs", nargs="+", required=True, help="FORM:EXPAND:KAPPA:LAYOUT")
    ap.add_argument("--eta", type=float, default=DEFAULT_ETA)
    ap.add_argument("--block", type=int, default=DEFAULT_BLOCK_SIZE)
    ap.add_argument("--orders", nargs="+", default=["internal"],
                    help="source orders within the sample: internal, degree, hub, ring "
                    "(benchmarks/lab/probe_ms_grouping.py)")  # fmt: skip
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    specs = []
    for text in args.specs:
        form, expand, kappa, layout = text.split(":")
        specs.append(MSSpec(DEFAULT_SIGMA, int(kappa), form, expand, layout))
    rows = []
    for name in args.graphs:
        rows += probe(name, specs, args.sources, args.eta, args.block, args.orders)
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
