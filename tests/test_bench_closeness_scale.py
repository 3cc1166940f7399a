"""The closeness stand-in benchmark's pure parts: the sample of whole batches, the
com-LiveJournal extrapolation, and a whole run on the CPU (SciPy's BFS) with its records."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
bench = pytest.importorskip("bench_closeness_scale")


def test_sample_batches_takes_whole_batches_in_order():
    ordered = np.arange(100, 1124)
    got = bench.sample_batches(ordered, 64, 5, seed=3)
    assert got.size == 5 * 64 and np.all(np.diff(got) > 0)
    starts = got[::64] - 100
    assert np.all(starts % 64 == 0)
    np.testing.assert_array_equal(got, bench.sample_batches(ordered, 64, 5, seed=3))
    assert bench.sample_batches(ordered, 64, 16) is ordered  # every batch: all of it


def test_lj_extrapolation_scales_the_cost_per_bfs_by_arcs():
    got = bench.lj_extrapolation(1e-4, bench.LJ_ARCS // 2, 0.5)
    assert got["lj_gpu_s"] == pytest.approx(2e-4 * bench.LJ_VERTICES)
    assert got["lj_gpu_s_reduced"] == pytest.approx(got["lj_gpu_s"] / 2)
    assert got["lj_vs_paper"] == pytest.approx(590 / got["lj_gpu_s"])


def test_a_cpu_run_writes_every_stage(tmp_path, monkeypatch):
    out = tmp_path / "out.jsonl"
    argv = ["--graphs", "kron-10", "urand-11", "--budget", "1", "--full-max-scale", "10",
            "--sample-batches", "2", "--cache", str(tmp_path / "cache"),
            "--workdir", str(tmp_path / "work"), "--out", str(out)]  # fmt: skip
    monkeypatch.setattr(bench, "SEED", 7)
    with pytest.warns(RuntimeWarning):  # no GPU: SciPy runs
        assert bench.main(argv) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    stages = [(r["graph"], r["stage"]) for r in records]
    for g in ("kron-10", "urand-11"):
        for stage in ("load", "save", "tune", "plan", "closeness", "summary"):
            assert (g, stage) in stages
    summary = {r["graph"]: r for r in records if r["stage"] == "summary"}
    assert summary["kron-10"]["extrapolated"] is False
    assert summary["kron-10"]["bfs_run"] + summary["kron-10"]["bfs_saved"] == 1024
    assert summary["urand-11"]["extrapolated"] is True
    closeness = [r for r in records if r["stage"] == "closeness" and r["graph"] == "kron-10"]
    assert closeness[0]["checked"] is True
