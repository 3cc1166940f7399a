"""Single-source BFS across scales: kron and urand from scale 21 up, by the timing protocol.

    python3 benchmarks/scale.py --scales 21 22 23 24 --out scale.json
    python3 benchmarks/scale.py --scales 23 --families kron --variants s8_lazy_vss_switch_pers

For each generated graph (``kron-S``, ``urand-S``, edge factor 16, cached under /tmp as
``graphs.py`` does): the ordering the original C++ used (JaccardWithWindows, or ``--ordering``),
BVSS on the GPU for each sigma the variants need, then every variant at 1024 threads x one block
per SM, every ``--eta``, timed on the protocol's 64 sources (traversal mean, whole
``bfs(src, out="device")`` mean, depth, GTEPS). Beside each row: the static bytes a traversal
can read per arc (BVSS of that sigma, and the in-CSR the bottom-up steps read), so the per-scale
table shows how far the graph outgrows the L2. Prints one line per row; ``--out`` writes JSON.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from graphs import anchor_graph
from run import _by_name

from blest.codegen.toolchain import require_gpu
from blest.defaults import DEFAULT_ETA, DEFAULT_SIGMA, JACCARD_WINDOW
from blest.graph.prepared import Prepared
from blest.runtime.device_ordering import device_ordering
from blest.runtime.engine_protocol import Geometry
from blest.runtime.factory import make_engine
from blest.tuning.timing import bench_engine, timing_sources

#: The tuner's picks on kron-21/22 and urand-20/22 (2026-11-25, benchmarks/NOTES.md).
DEFAULT_VARIANTS = (
    "s8_lazy_vss_switch_pers,s4_lazy_vss_switch_pers,s8_lazy_csr_switch_pers,"
    "s16_lazy_csr_switch_pers"
)


def static_bytes(prepared: Prepared) -> dict[str, int]:
    """Bytes of the arrays a traversal reads: the BVSS (tensor-core top-down), the out-CSR
    (CUDA-core top-down) and the in-CSR (bottom-up)."""
    out = prepared.graph.out_csr
    return {
        "bvss_bytes": int(prepared.bvss.gpu_bytes),
        "out_csr_bytes": int(out.indptr.nbytes + out.indices.nbytes),
        "in_csr_bytes": int(prepared.in_ptr.nbytes + prepared.in_idx.nbytes),
    }


def timeline(prepared: Prepared, spec_name: str, eta: float, src: int) -> dict:
    """Per-level ms and direction of one traversal (``record_levels``) of the given variant."""
    spec = _by_name(spec_name)
    geometry = Geometry(1024, 1, None, 0)
    with make_engine(
        prepared, spec, eta=eta, geometry=geometry, device="gpu", record_levels=True
    ) as eng:
        eng.bfs(src)
        levels = eng.bfs(src)
        times, bottom_up = eng.probes.level_times_ms()
        stages = eng.probes.stage_times_ms()
    widths = np.bincount(levels[levels >= 0]) if (levels >= 0).any() else np.zeros(0)
    return {
        "variant": spec_name,
        "source": src,
        "level_ms": [float(t) for t in times],
        "bottom_up_levels": [int(b) for b in bottom_up],
        "stage_ms": None if stages is None else stages.tolist(),
        "widths": [int(w) for w in widths],
    }


def run_graph(name: str, args: argparse.Namespace) -> list[dict]:
    import cupy as cp

    t0 = time.perf_counter()
    graph = anchor_graph(name)
    base = {"graph": name, "n": graph.n, "arcs": graph.nnz, "isolated": graph.isolated}
    base["load_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    perm = None
    if args.ordering != "natural":
        perm = device_ordering(graph, args.ordering, sigma=DEFAULT_SIGMA, window=JACCARD_WINDOW)
    base["ordering"] = args.ordering
    base["ordering_s"] = time.perf_counter() - t0
    print(f"{name}: n={graph.n:,} arcs={graph.nnz:,} {base}", flush=True)
    sources = timing_sources(graph, args.sources)
    specs = [_by_name(v) for v in args.variants.split(",")]
    rows: list[dict] = []
    for sigma in sorted({s.sigma for s in specs}):
        t0 = time.perf_counter()
        prepared = Prepared.from_graph(graph, sigma, perm, xp=cp)
        cp.cuda.Device().synchronize()
        prep = {"sigma": sigma, "prepare_s": time.perf_counter() - t0, **static_bytes(prepared)}
        for spec in (s for s in specs if s.sigma == sigma):
            for eta in args.eta:
                with make_engine(
                    prepared, spec, eta=eta, geometry=Geometry(1024, 1, None, 0), device="gpu"
                ) as eng:
                    row = bench_engine(eng, graph, sources, name).to_dict()
                row.update(base, **prep, gpu=require_gpu()[2], eta=eta)
                row["bvss_bytes_per_arc"] = prep["bvss_bytes"] / graph.nnz
                row["in_csr_bytes_per_arc"] = prep["in_csr_bytes"] / graph.nnz
                rows.append(row)
                print(
                    f"  {spec.name:<30} eta {eta:<5g} traversal {row['traversal_ms']:.3f} ms"
                    f" (median {row['traversal_ms_median']:.3f}) whole {row['whole_call_ms']:.3f}"
                    f" GTEPS {row['gteps']:.1f} depth {row['depth_mean']:.1f}"
                    f" BVSS {row['bvss_bytes_per_arc']:.2f} B/arc",
                    flush=True,
                )
        if args.levels:
            mine = [r for r in rows if r["sigma"] == sigma]
            best = min(mine, key=lambda r: r["traversal_ms"])
            line = timeline(prepared, best["variant"], best["eta"], int(sources[0]))
            best["timeline"] = line
            steps = ", ".join(
                f"{t * 1e3:.0f}{'b' if i in line['bottom_up_levels'] else ''}/{w}"
                for i, (t, w) in enumerate(zip(line["level_ms"], line["widths"], strict=False))
            )
            print(f"  levels of {best['variant']} (us, b = bottom-up / width): {steps}")
        del prepared
        cp.get_default_memory_pool().free_all_blocks()
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scales", type=int, nargs="+", default=[21, 22, 23, 24])
    ap.add_argument("--families", nargs="+", default=["kron", "urand"])
    ap.add_argument("--variants", default=DEFAULT_VARIANTS)
    ap.add_argument("--eta", type=float, nargs="+", default=[DEFAULT_ETA])
    ap.add_argument("--ordering", default="jaccard", choices=["jaccard", "rcm", "natural"])
    ap.add_argument("--sources", type=int, default=64)
    ap.add_argument("--levels", action="store_true", help="per-level timeline of each best")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    rows: list[dict] = []
    for scale in args.scales:
        for family in args.families:
            rows += run_graph(f"{family}-{scale}", args)
            if args.out:  # after every graph, so a call cut short keeps what it measured
                Path(args.out).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
