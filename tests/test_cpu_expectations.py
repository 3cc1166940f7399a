"""What a user without a GPU sees: plain progress lines of ``blest closeness`` when stderr is
not a terminal, and the GPU benchmark driver ending at once with one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from random_graphs import make_grid

import blest.centrality as bc
from blest.cli import closeness as cli_closeness
from blest.cli import main
from blest.codegen.toolchain import have_gpu
from blest.datasets import write_mtx
from blest.graph.reductions import plan_sources

REPO = Path(__file__).resolve().parents[1]


def test_plain_progress_lines_off_a_terminal(tmp_path, rng, capsys, monkeypatch):
    graph = make_grid(rng, 700)
    path = tmp_path / "g.mtx"
    write_mtx(graph, path)
    monkeypatch.setattr(cli_closeness, "PLAIN_EVERY", 0.0)  # a line at every report
    out = tmp_path / "c.npy"
    assert main(["closeness", str(path), "-o", str(out)]) == 0
    lines = [x for x in capsys.readouterr().err.splitlines() if "sources/s" in x]
    assert len(lines) >= 2
    assert all(x.startswith("blest closeness: ") and " left" in x for x in lines)
    assert "\r" not in "".join(lines) and "\x1b" not in "".join(lines)  # no terminal codes
    bfss = plan_sources(graph, np.arange(graph.n)).bfs.size  # progress counts the BFSs run
    assert lines[-1].startswith(f"blest closeness: {bfss:,} / {bfss:,} sources (100%)")
    np.testing.assert_array_equal(np.load(out), bc.closeness(graph))


def test_no_progress_lines_in_a_short_run(tmp_path, rng, capsys):
    graph = make_grid(rng, 300)
    path = tmp_path / "g.mtx"
    write_mtx(graph, path)
    assert main(["closeness", str(path), "-o", str(tmp_path / "c.npy")]) == 0
    assert "sources/s" not in capsys.readouterr().err


@pytest.mark.skipif(have_gpu(), reason="the driver runs on a GPU here")
def test_benchmark_driver_without_a_gpu_ends_at_once(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = tmp_path / "bench"
    run = subprocess.run(
        [sys.executable, "benchmarks/run.py", "--quick", "--out", str(out)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1 and "needs an NVIDIA GPU" in run.stderr
    assert "Traceback" not in run.stderr and not out.exists()
