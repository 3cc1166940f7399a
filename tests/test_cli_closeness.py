"""``blest closeness`` on the CPU: scores equal the one-call API and NetworkX's definition,
every output format, sources from a file, errors before any work, worker processes."""

from __future__ import annotations

import numpy as np
import pytest
from random_graphs import make_directed

import blest.centrality as bc
from blest.cli import main
from blest.datasets import write_mtx


@pytest.fixture
def graph_file(tmp_path, rng):
    g = make_directed(rng, 250)
    path = tmp_path / "g.mtx"
    write_mtx(g, path)
    return g, path


def test_scores_in_every_format(graph_file, tmp_path, capsys):
    g, path = graph_file
    want = bc.closeness(g)
    assert main(["closeness", str(path), "-o", str(tmp_path / "c.npy")]) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "c.npy"), want)
    assert main(["closeness", str(path), "-o", str(tmp_path / "c.txt")]) == 0
    np.testing.assert_array_equal(np.loadtxt(tmp_path / "c.txt"), want)  # repr round-trips
    ids = tmp_path / "ids.txt"
    ids.write_text("5 3\n7")
    out = tmp_path / "h.csv"
    assert main(["closeness", str(path), "-o", str(out), "--harmonic", "--sources", str(ids)]) == 0
    rows = np.loadtxt(out, delimiter=",", skiprows=1)
    np.testing.assert_array_equal(rows[:, 0], [5, 3, 7])
    np.testing.assert_array_equal(rows[:, 1], bc.harmonic(g, [5, 3, 7]))
    assert out.read_text().startswith("vertex,harmonic\n")
    capsys.readouterr()


def test_unscaled_closeness_and_two_workers(graph_file, tmp_path):
    g, path = graph_file
    out = tmp_path / "c.npy"
    args = ["closeness", str(path), "-o", str(out), "--no-wf-improved", "--gpus", "2"]
    assert main(args) == 0
    assert np.load(out).tobytes() == bc.closeness(g, wf_improved=False).tobytes()


@pytest.mark.parametrize(
    "extra,match",
    [
        (["-o", "{d}/c.xyz"], "unknown extension"),
        (["-o", "{d}/missing/c.npy"], "missing"),
        (["-o", "{d}/c.npy", "--gpus", "0"], "--gpus"),
        (["-o", "{d}/c.npy", "--sources", "{d}/nope.txt"], "nope.txt"),
    ],
)
def test_errors_are_one_line_and_write_nothing(graph_file, tmp_path, capsys, extra, match):
    _, path = graph_file
    before = sorted(p.name for p in tmp_path.iterdir())
    code = main(["closeness", str(path), *[x.format(d=tmp_path) for x in extra]])
    err = capsys.readouterr().err
    assert code == 2 and match in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == before
