"""Single-source BFS across scales: wall time and peak memory of every stage, GTEPS, validation.

    python3 benchmarks/scale.py --scales 21 22 23 24 --out scale.jsonl
    python3 benchmarks/scale.py --scales 26 --families kron --max-seconds 540 --out kron26.jsonl
    python3 benchmarks/scale.py --scales 24 --families delaunay road --out deep.jsonl

For each graph ``FAMILY-S`` (``kron`` and ``urand`` with edge factor 16, ``delaunay`` on 2^S
points, ``road``: the road-network stand-in :func:`blest.datasets.road_like` on 2^S vertices;
generated with the benchmark seed and cached as ``graphs.py`` does), the stages, each measured
for wall time, peak host RSS and peak GPU memory:

- ``load``: generate (or read from the cache);
- ``ordering``: the ordering the original C++ used (JaccardWithWindows on kron and urand, RCM on
  delaunay and road; ``--ordering`` sets one for all), on the GPU where it has a kernel;
- ``permute``: the graph relabelled by it (once, shared by every sigma);
- ``bvss``: the BVSS on the GPU for each sigma the variants need; ``hops``: B's BVSS for the
  ``hop`` variants;
- ``tune`` (with ``--tune``): :func:`blest.tuning.tune` on the graph, its pick recorded;
- per variant and eta, at 1024 threads x one block per SM: ``engine`` (build and compile),
  ``time`` (the protocol's sources: traversal mean, whole ``bfs(src, out="device")`` mean,
  depth, GTEPS), ``validate`` (every timed source: levels and parents of the same engine, by
  :func:`blest.reference.validate.validate_batch`, the checks of ``blest.validate``).

GTEPS count as Graph500 does: the undirected edges of the traversed component (arcs with a
reached tail, halved on an undirected graph; no self loop or duplicate is stored) over the
traversal time. Peak host memory is the kernel's high-water mark (VmHWM, reset before each
stage through /proc/self/clear_refs; where that fails, RSS sampled every 20 ms); peak GPU
memory is the device's used memory (``cudaMemGetInfo``, all processes) sampled every 20 ms,
beside the CuPy pool's bytes at the stage's end.

``--out`` is a JSON-lines file, one record a line, written as each stage ends (a run killed at
its time limit keeps what it finished). ``--max-seconds`` stops cleanly before a stage that
would start past the budget, with a ``skipped`` record.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
from graphs import DEFAULT_CACHE, anchor_graph, cache_path
from run import _by_name, ordering_for

from blest.codegen.toolchain import require_gpu
from blest.defaults import DEFAULT_ETA, DEFAULT_SIGMA, JACCARD_WINDOW
from blest.graph.bvss import build_bvss
from blest.graph.ordering import identity, permute_graph
from blest.graph.prepared import Prepared
from blest.reference.validate import validate_batch
from blest.runtime.device_ordering import device_ordering
from blest.runtime.engine_protocol import Geometry
from blest.runtime.factory import make_engine
from blest.tuning.timing import bench_engine, edges_reached, timing_sources

#: The tuner's picks on kron-21/22 and urand-20/22 (2026-11-25, benchmarks/NOTES.md).
DEFAULT_VARIANTS = (
    "s8_lazy_vss_switch_pers,s4_lazy_vss_switch_pers,s8_lazy_csr_switch_pers,"
    "s16_lazy_csr_switch_pers"
)
#: Deep graphs (delaunay, road): the eager tensor-core queue that won delaunay-20, and a
#: CUDA-core one.
DEEP_VARIANTS = "s32_eager_vss_pers,s16_eager_vss_pers,s8_lazy_csr_switch_pers"
GIB = float(1 << 30)


# ---------------------------------------------------------------------- measuring a stage
def _status_kib(key: str) -> int | None:
    """A ``/proc/self/status`` field in KiB (VmRSS, VmHWM), None where there is none."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_host_peak() -> bool:
    """Reset the kernel's VmHWM to the current RSS (Linux >= 4.0); False where refused."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _gpu_used() -> tuple[int, int] | None:
    """(device bytes in use by every process, CuPy pool bytes held), None without a GPU."""
    try:
        import cupy as cp

        free, total = cp.cuda.runtime.memGetInfo()
        return int(total - free), int(cp.get_default_memory_pool().total_bytes())
    except Exception:  # no CuPy or no device: host figures only
        return None


class Stage:
    """Wall time, peak host RSS and peak GPU memory of the block it wraps; ``period_s=None``
    samples nothing (a timed stage: no thread beside the calls), so the GPU peak is the larger
    of the start and the end."""

    def __init__(self, period_s: float | None = 0.02) -> None:
        self.period_s = period_s
        self.record: dict[str, Any] = {}

    def __enter__(self) -> Stage:
        self._exact = _reset_host_peak()
        self._rss_max = _status_kib("VmRSS") or 0
        start = _gpu_used()
        self._gpu_max = start[0] if start else None
        self._gpu_start = start
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        if self.period_s is not None:
            self._thread.start()
        self._t0 = time.perf_counter()
        return self

    def _sample(self) -> None:
        assert self.period_s is not None
        while not self._stop.wait(self.period_s):
            self._rss_max = max(self._rss_max, _status_kib("VmRSS") or 0)
            if self._gpu_max is not None:
                used = _gpu_used()
                if used:
                    self._gpu_max = max(self._gpu_max, used[0])

    def __exit__(self, *exc: object) -> None:
        seconds = time.perf_counter() - self._t0
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        rss = _status_kib("VmRSS") or 0
        hwm = _status_kib("VmHWM") if self._exact else None
        peak = max(hwm or 0, self._rss_max, rss)
        end = _gpu_used()
        self.record = {
            "seconds": round(seconds, 4),
            "host_rss_gib": round(rss * 1024 / GIB, 3),
            "host_peak_gib": round(peak * 1024 / GIB, 3),
            "host_peak_exact": hwm is not None,
        }
        if end is not None and self._gpu_max is not None:
            self.record.update(
                gpu_used_gib=round(end[0] / GIB, 3),
                gpu_peak_gib=round(max(self._gpu_max, end[0]) / GIB, 3),
                gpu_pool_gib=round(end[1] / GIB, 3),
            )


class Run:
    """The JSON-lines output and the time budget of one call."""

    def __init__(self, out: str | None, max_seconds: float | None) -> None:
        self.t0 = time.perf_counter()
        self.max_seconds = max_seconds
        self.path = Path(out) if out else None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text("")
        self.over = False

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def emit(self, record: dict[str, Any]) -> None:
        record = {"elapsed_s": round(self.elapsed(), 2), **record}
        if self.path is not None:
            with open(self.path, "a") as f:
                f.write(json.dumps(record) + "\n")

    def may_start(self, graph: str, stage: str) -> bool:
        """False (and a ``skipped`` record, once) when the budget is spent."""
        if self.max_seconds is not None and self.elapsed() > self.max_seconds:
            if not self.over:
                self.emit(
                    {
                        "graph": graph,
                        "stage": stage,
                        "kind": "skipped",
                        "reason": f"--max-seconds {self.max_seconds:g} spent",
                    }
                )
                print(f"{graph}: budget spent before {stage}; the rest is skipped", flush=True)
            self.over = True
            return False
        return True

    def stage(self, graph: str, stage: str, sample: bool = True, **extra: Any) -> _StageContext:
        return _StageContext(self, graph, stage, extra, sample)


class _StageContext:
    """``with run.stage(graph, name) as info:`` measures the block, then writes its record
    (with whatever the block put in ``info``)."""

    def __init__(
        self, run: Run, graph: str, name: str, extra: dict[str, Any], sample: bool
    ) -> None:
        self.run, self.graph, self.name, self.info = run, graph, name, dict(extra)
        self.meter = Stage(0.02 if sample else None)

    def __enter__(self) -> dict[str, Any]:
        self.meter.__enter__()
        return self.info

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.meter.__exit__(exc_type, exc, tb)
        record = {"graph": self.graph, "stage": self.name, "kind": "stage"}
        record.update(self.meter.record, **self.info)
        if exc is not None:
            record["error"] = f"{type(exc).__name__}: {exc}"
        self.run.emit(record)
        mem = self.meter.record
        gpu = f", GPU peak {mem['gpu_peak_gib']:.2f} GiB" if "gpu_peak_gib" in mem else ""
        print(
            f"  {self.name:<9} {mem['seconds']:8.2f} s, host peak {mem['host_peak_gib']:.2f} GiB"
            f"{gpu} {json.dumps(self.info) if self.info else ''}",
            flush=True,
        )


# ---------------------------------------------------------------------- the stages
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


def validate_engine(eng: Any, graph: Any, sources: np.ndarray, parents: bool, batch: int) -> dict:
    """Validate the engine's result from every source: the plain call's levels, and with
    ``parents`` the levels and parents of a call that asks for them (the same levels, checked);
    ``batch`` results a scan. Returns the counts and the mean edges traversed."""
    checked, edges, error = 0, [], None
    for lo in range(0, len(sources), batch):
        chunk = [int(s) for s in sources[lo : lo + batch]]
        levels, trees = [], []
        for src in chunk:
            plain = eng.bfs(src)
            if parents:
                lv, par = eng.bfs(src, parents=True)
                if not np.array_equal(lv, plain):
                    error = f"source {src}: the levels with parents differ from the plain call's"
                    return {"validated": checked, "ok": False, "error": error}
                trees.append(np.asarray(par))
            levels.append(np.asarray(plain))
            edges.append(edges_reached(graph, plain))
        try:
            validate_batch(graph, chunk, levels, trees if parents else None)
        except Exception as exc:  # a ValidationError names the check; anything else too
            return {"validated": checked, "ok": False, "error": f"{type(exc).__name__}: {exc}"}
        checked += len(chunk)
    return {
        "validated": checked,
        "ok": True,
        "parents": parents,
        "edges_mean": float(np.mean(edges)) if edges else 0.0,
    }


def run_graph(name: str, args: argparse.Namespace, run: Run) -> list[dict]:
    import cupy as cp

    if not run.may_start(name, "load"):
        return []
    cached = args.cache_dir is not None and cache_path(name, args.cache_dir).exists()
    print(f"{name}:", flush=True)
    with run.stage(name, "load", cached=cached) as info:
        graph = anchor_graph(name, args.cache_dir)
        info.update(n=graph.n, arcs=graph.nnz, isolated=graph.isolated)
    base = {"graph": name, "n": graph.n, "arcs": graph.nnz}
    order = args.ordering or ordering_for(name)
    if not run.may_start(name, "ordering"):
        return []
    with run.stage(name, "ordering", ordering=order) as info:
        perm = identity(graph.n)
        if order != "natural":
            perm = device_ordering(graph, order, sigma=DEFAULT_SIGMA, window=JACCARD_WINDOW)
        info["computed"] = perm.name
    if not run.may_start(name, "permute"):
        return []
    with run.stage(name, "permute"):
        internal = graph if perm.is_identity else permute_graph(graph, perm)
    sources = timing_sources(graph, args.sources)
    family = name.split("-")[0]
    names = args.variants or (DEEP_VARIANTS if family in ("delaunay", "road") else DEFAULT_VARIANTS)
    specs = [_by_name(v) for v in names.split(",")]
    rows: list[dict] = []
    if args.tune and run.may_start(name, "tune"):
        from blest.tuning import tune

        with run.stage(name, "tune", budget_s=args.tune_budget) as info:
            outcome = tune(graph, budget_s=args.tune_budget)
            cfg = outcome.config.to_dict()
            info.update({k: cfg.get(k) for k in ("variant_name", "eta", "report")})
            info["ordering"] = (cfg.get("preparation") or {}).get("ordering")
            del outcome
        cp.get_default_memory_pool().free_all_blocks()
    for sigma in sorted({s.sigma for s in specs}):
        if not run.may_start(name, f"bvss s{sigma}"):
            return rows
        with run.stage(name, "bvss", sigma=sigma) as info:
            bvss = build_bvss(internal, sigma, xp=cp)
            cp.cuda.Device().synchronize()
            prepared = Prepared.from_graph(graph, sigma, perm, internal=internal, bvss=bvss)
            info.update(static_bytes(prepared))
        prep = {"sigma": sigma, **static_bytes(prepared)}
        for spec in (s for s in specs if s.sigma == sigma):
            if spec.hops > 1 and spec.hops not in prepared.hop_cache:
                if not run.may_start(name, "hops"):
                    return rows
                with run.stage(name, "hops", sigma=sigma, hops=spec.hops):
                    prepared.hops_bvss(spec.hops)
                    cp.cuda.Device().synchronize()
            for eta in args.eta:
                tag = {"variant": spec.name, "eta": eta}
                if not run.may_start(name, f"engine {spec.name}"):
                    return rows
                with run.stage(name, "engine", **tag):
                    eng = make_engine(
                        prepared, spec, eta=eta, geometry=Geometry(1024, 1, None, 0), device="gpu"
                    )
                try:
                    with run.stage(name, "time", sample=False, **tag) as info:
                        row = bench_engine(eng, graph, sources, name).to_dict()
                        info.update(traversal_ms=row["traversal_ms"], gteps=row["gteps"])
                    row.update(base, **prep, gpu=require_gpu()[2], eta=eta, kind="timing")
                    row["bvss_bytes_per_arc"] = prep["bvss_bytes"] / max(graph.nnz, 1)
                    row["in_csr_bytes_per_arc"] = prep["in_csr_bytes"] / max(graph.nnz, 1)
                    if args.validate != "none" and run.may_start(name, f"validate {spec.name}"):
                        with run.stage(name, "validate", **tag) as info:
                            info.update(
                                validate_engine(
                                    eng, graph, sources, args.validate == "parents", args.batch
                                )
                            )
                        row["validated"] = info["validated"] if info["ok"] else info["error"]
                finally:
                    eng.close()
                rows.append(row)
                run.emit(row)
                print(
                    f"  {spec.name:<30} eta {eta:<5g} traversal {row['traversal_ms']:.3f} ms"
                    f" (median {row['traversal_ms_median']:.3f}) whole {row['whole_call_ms']:.3f}"
                    f" GTEPS {row['gteps']:.1f} depth {row['depth_mean']:.1f}"
                    f" validated {row.get('validated', '-')}",
                    flush=True,
                )
        mine = [r for r in rows if r["sigma"] == sigma]
        if args.levels and mine and run.may_start(name, "levels"):
            best = min(mine, key=lambda r: r["traversal_ms"])
            line = timeline(prepared, best["variant"], best["eta"], int(sources[0]))
            run.emit({"graph": name, "kind": "levels", "sigma": sigma, **line})
            steps = ", ".join(
                f"{t * 1e3:.0f}{'b' if i in line['bottom_up_levels'] else ''}/{w}"
                for i, (t, w) in enumerate(zip(line["level_ms"], line["widths"], strict=False))
            )
            print(f"  levels of {best['variant']} (us, b = bottom-up / width): {steps}")
        del prepared, bvss
        cp.get_default_memory_pool().free_all_blocks()
    return rows


def _free_gpu() -> None:
    try:
        import cupy as cp

        cp.get_default_memory_pool().free_all_blocks()
    except Exception:  # no CuPy: nothing to free
        pass


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scales", type=int, nargs="+", default=[21, 22, 23, 24])
    ap.add_argument(
        "--families",
        nargs="+",
        default=["kron", "urand"],
        choices=["kron", "urand", "delaunay", "road"],
    )
    ap.add_argument("--variants", default=None, help="NAME[,NAME...]; default by family")
    ap.add_argument("--eta", type=float, nargs="+", default=[DEFAULT_ETA])
    ap.add_argument(
        "--ordering",
        default=None,
        choices=["jaccard", "rcm", "natural"],
        help="default: the C++'s (jaccard on kron/urand, rcm on delaunay/road)",
    )
    ap.add_argument("--sources", type=int, default=64)
    ap.add_argument("--validate", default="parents", choices=["parents", "levels", "none"])
    ap.add_argument("--batch", type=int, default=16, help="results validated per arc scan")
    ap.add_argument("--levels", action="store_true", help="per-level timeline of each best")
    ap.add_argument("--tune", action="store_true", help="also time blest.tuning.tune")
    ap.add_argument("--tune-budget", type=float, default=20.0)
    ap.add_argument("--max-seconds", type=float, default=None, help="skip stages past this")
    ap.add_argument("--cache-dir", default=DEFAULT_CACHE, help=f"graph cache ({DEFAULT_CACHE})")
    ap.add_argument("--out", default=None, help="JSON-lines file, written as stages end")
    args = ap.parse_args(argv)
    run = Run(args.out, args.max_seconds)
    for scale in args.scales:
        for family in args.families:
            name = f"{family}-{scale}"
            try:
                run_graph(name, args, run)
            except Exception as exc:  # out of memory, say: recorded, and on to the next graph
                run.emit({"graph": name, "kind": "error", "error": f"{type(exc).__name__}: {exc}"})
                print(f"{name}: {type(exc).__name__}: {exc}", flush=True)
                _free_gpu()
    print(f"done in {run.elapsed():.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
