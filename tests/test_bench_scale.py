"""benchmarks/scale.py's machinery on the CPU: stage records, the JSON-lines output and its
time budget, and the validation of every timed source (a fake engine stands in for the GPU's)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from blest.datasets import grid2d
from blest.reference import frontier_bfs

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
scale = pytest.importorskip("scale")


class FakeEngine:
    """Levels (and parents) of the reference BFS; ``break_at`` spoils one source's levels."""

    def __init__(self, graph, break_at=None, parents_differ=False):
        self.graph, self.break_at, self.parents_differ = graph, break_at, parents_differ

    def bfs(self, src, parents=False):
        levels, tree = frontier_bfs(self.graph, src)
        if src == self.break_at:
            levels = levels.copy()
            levels[int(np.argmax(levels))] += 1
        if parents:
            return (levels + 1 if self.parents_differ else levels), tree
        return levels


def test_stage_records_time_and_memory():
    with scale.Stage(period_s=0.001) as stage:
        block = np.ones(1 << 24, dtype=np.uint8)  # 16 MiB touched
        block.sum()
    rec = stage.record
    assert rec["seconds"] > 0 and rec["host_peak_gib"] >= rec["host_rss_gib"] * 0.5
    assert rec["host_peak_gib"] > 0.015
    assert "gpu_peak_gib" not in rec or rec["gpu_peak_gib"] >= 0
    with scale.Stage(period_s=None) as quiet:  # a timed stage: no sampling thread
        pass
    assert quiet.record["seconds"] >= 0 and not quiet._thread.is_alive()


def test_run_writes_lines_as_it_goes_and_stops_at_the_budget(tmp_path):
    out = tmp_path / "r.jsonl"
    run = scale.Run(str(out), max_seconds=3600)
    with run.stage("g", "load", cached=False) as info:
        info["n"] = 5
    assert run.may_start("g", "ordering")
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert lines[0]["stage"] == "load" and lines[0]["n"] == 5 and lines[0]["kind"] == "stage"
    run.max_seconds = 0.0
    assert not run.may_start("g", "bvss") and not run.may_start("g", "engine")
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [x["kind"] for x in lines] == ["stage", "skipped"]  # one skipped record
    with pytest.raises(RuntimeError), run.stage("g", "boom"):
        raise RuntimeError("out of memory")
    assert json.loads(out.read_text().splitlines()[-1])["error"] == "RuntimeError: out of memory"


@pytest.mark.parametrize("parents", [True, False])
def test_validate_engine_checks_every_source(parents):
    g = grid2d(20, 30)
    sources = np.array([0, 17, 599, 300, 42])
    got = scale.validate_engine(FakeEngine(g), g, sources, parents, batch=2)
    assert got["ok"] and got["validated"] == 5 and got["edges_mean"] == g.nnz / 2
    bad = scale.validate_engine(FakeEngine(g, break_at=599), g, sources, parents, batch=2)
    assert not bad["ok"] and bad["validated"] == 2 and "ValidationError" in bad["error"]
    if parents:
        odd = scale.validate_engine(FakeEngine(g, parents_differ=True), g, sources, True, 2)
        assert not odd["ok"] and "differ" in odd["error"]
