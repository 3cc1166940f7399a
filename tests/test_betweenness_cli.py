"""``blest betweenness`` end to end on the CPU: the scores equal the one-call API bit for bit
in every format, sampling, edges, worker processes; user errors are one line and write
nothing; progress lines off a terminal; Ctrl-C (a subprocess) leaves no output and keeps an
older file byte-identical."""

from __future__ import annotations

import signal
import sys
import time

import numpy as np
import pytest
from random_graphs import make_directed
from test_cli_subprocess import TTYRun, cli_env

import blest
import blest.cli.betweenness as cli_bc
from blest.cli import main
from blest.datasets import grid2d, write_mtx


@pytest.fixture
def graph_file(tmp_path, rng):
    g = make_directed(rng, 200)
    path = tmp_path / "g.mtx"
    write_mtx(g, path)
    return blest.load_graph(path), path


def test_scores_in_every_format(graph_file, tmp_path, capsys):
    g, path = graph_file
    want = blest.betweenness(g)
    out = tmp_path / "b.npy"
    out.write_bytes(b"poison: replaced whole")
    assert main(["betweenness", str(path), "-o", str(out)]) == 0
    assert np.load(out).tobytes() == want.tobytes()
    assert main(["betweenness", str(path), "-o", str(tmp_path / "b.txt")]) == 0
    assert np.loadtxt(tmp_path / "b.txt").tobytes() == want.tobytes()  # repr round-trips
    args = ["-k", "40", "--seed", "9", "--no-normalized", "--endpoints"]
    assert main(["betweenness", str(path), "-o", str(tmp_path / "b.csv"), *args]) == 0
    rows = np.loadtxt(tmp_path / "b.csv", delimiter=",", skiprows=1)
    np.testing.assert_array_equal(rows[:, 0], np.arange(g.n))
    sampled = blest.betweenness(g, k=40, seed=9, normalized=False, endpoints=True)
    assert rows[:, 1].tobytes() == sampled.tobytes()
    assert "betweenness of 200 vertices" in capsys.readouterr().out


def test_edges_and_two_workers(graph_file, tmp_path):
    g, path = graph_file
    out = tmp_path / "e.csv"
    assert main(["betweenness", str(path), "-o", str(out), "--edges", "--gpus", "2"]) == 0
    edges, scores = blest.edge_betweenness(g)
    lines = out.read_text().splitlines()
    assert lines[0] == "u,v,betweenness" and len(lines) == edges.shape[0] + 1
    got = np.array([line.split(",") for line in lines[1:]], dtype=float)
    np.testing.assert_array_equal(got[:, :2], edges)
    assert got[:, 2].tobytes() == scores.tobytes()


@pytest.mark.parametrize(
    "extra,match",
    [
        (["-o", "{d}/b.xyz"], "unknown extension"),
        (["-o", "{d}/missing/b.npy"], "missing"),
        (["-o", "{d}/b.npy", "--seed", "3"], "--seed only applies"),
        (["-o", "{d}/b.npy", "-k", "0"], "expected a whole number"),
        (["-o", "{d}/b.npy", "-k", "100000"], "k must be in"),
        (["-o", "{d}/e.npy", "--edges"], "--edges writes"),
        (["-o", "{d}/e.csv", "--edges", "--endpoints"], "--endpoints does not apply"),
        (["-o", "{d}/b.npy", "--gpus", "0"], "--gpus"),
    ],
)
def test_errors_are_one_line_and_write_nothing(graph_file, tmp_path, capsys, extra, match):
    _, path = graph_file
    before = sorted(p.name for p in tmp_path.iterdir())
    try:
        code = main(["betweenness", str(path), *[x.format(d=tmp_path) for x in extra]])
    except SystemExit as stop:  # argparse's own checks exit
        code = stop.code
    err = capsys.readouterr().err
    assert code == 2 and match in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_no_output_over_its_input(tmp_path, capsys):
    path = tmp_path / "g.txt"
    path.write_text("0 1\n1 2\n2 0\n")
    before = path.read_bytes()
    assert main(["betweenness", str(path), "-o", str(path)]) == 2
    assert "g.txt" in capsys.readouterr().err
    assert path.read_bytes() == before


def test_scores_name_the_inputs_own_ids(tmp_path, rng):
    """A graph read with --relabel: the vertex and edge rows carry the file's own ids, as
    ``blest closeness`` does; a config keeps its own graph flags."""
    n = 60
    ids = np.sort(rng.choice(10**9, n, replace=False))
    arcs = rng.integers(0, n, (240, 2))
    path = tmp_path / "sparse.txt"
    path.write_text("".join(f"{ids[u]} {ids[v]}\n" for u, v in arcs))
    g = blest.load_graph(path, relabel=True)
    np.testing.assert_array_equal(g.labels, np.unique(ids[arcs]))
    assert main(["betweenness", str(path), "--relabel", "-o", str(tmp_path / "b.csv")]) == 0
    rows = np.loadtxt(tmp_path / "b.csv", delimiter=",", skiprows=1)
    np.testing.assert_array_equal(rows[:, 0], g.labels)
    assert rows[:, 1].tobytes() == blest.betweenness(g).tobytes()
    out = tmp_path / "e.csv"
    assert main(["betweenness", str(path), "--relabel", "--edges", "-o", str(out)]) == 0
    edges, scores = blest.edge_betweenness(g)
    got = np.loadtxt(out, delimiter=",", skiprows=1)
    np.testing.assert_array_equal(got[:, :2], g.labels[edges])
    assert got[:, 2].tobytes() == scores.tobytes()


def test_graph_flags_on_a_config_are_refused(tmp_path, capsys):
    from blest.cli import tune_main

    path = tmp_path / "g.mtx"
    write_mtx(grid2d(6, 6), path)
    cfg = tmp_path / "g.blest.json"
    assert tune_main([str(path), "-o", str(cfg), "-q", "--ordering", "natural"]) == 0
    capsys.readouterr()
    assert main(["betweenness", str(cfg), "--relabel", "-o", str(tmp_path / "b.npy")]) == 2
    err = capsys.readouterr().err
    assert "--relabel cannot be combined with a tuned config" in err
    assert not (tmp_path / "b.npy").exists()


def test_progress_lines_off_a_terminal(graph_file, tmp_path, capsys, monkeypatch):
    _, path = graph_file
    monkeypatch.setattr(cli_bc, "PLAIN_EVERY", 0.0)
    assert main(["betweenness", str(path), "-o", str(tmp_path / "b.npy")]) == 0
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if x.startswith("blest betweenness: ")]
    assert lines and "/ 200 sources" in lines[-1] and "\x1b" not in err
    monkeypatch.setattr(cli_bc, "PLAIN_EVERY", 3600.0)
    assert main(["betweenness", str(path), "-o", str(tmp_path / "b.npy")]) == 0
    assert "sources" not in capsys.readouterr().err


def test_ctrl_c_leaves_no_output(tmp_path):
    """SIGINT once the first batches are done: exit 130 within seconds, no new file, no
    temporary file, and an older output file byte-identical."""
    graph = tmp_path / "grid.mtx"
    write_mtx(grid2d(70, 70), graph)  # 4,900 sources: far longer than the test waits
    out = tmp_path / "b.npy"
    out.write_bytes(b"an older result")
    cmd = [sys.executable, "-m", "blest.cli", "betweenness", str(graph), "-o", str(out)]
    run = TTYRun(cmd, cli_env(tmp_path))
    run.wait_for(b"sources", timeout=60)
    t0 = time.monotonic()
    run.proc.send_signal(signal.SIGINT)
    code = run.finish(timeout=20)
    assert code in (130, -2) and time.monotonic() - t0 < 10, (code, run.err[-400:])
    assert b"interrupted" in run.err and b"Traceback" not in run.err
    assert out.read_bytes() == b"an older result"
    assert {p.name for p in tmp_path.iterdir()} - {"kernel-cache"} == {"b.npy", "grid.mtx"}
