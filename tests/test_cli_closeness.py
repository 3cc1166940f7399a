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


# ---------------------------------------------------------------------- --checkpoint
@pytest.mark.parametrize(
    "where,match",
    [
        ("{d}/c.npy", "is the --out file"),
        ("{d}/g.mtx", "is the input graph"),
        ("{d}/missing/ck", "does not exist"),
        ("{d}/notes.txt", "not a directory"),
    ],
)
def test_a_checkpoint_that_cannot_be_is_refused_before_any_work(
    graph_file, tmp_path, capsys, where, match
):
    _, path = graph_file
    (tmp_path / "notes.txt").write_text("mine")
    before = sorted(p.name for p in tmp_path.iterdir())
    args = ["-o", str(tmp_path / "c.npy"), "--checkpoint", where.format(d=tmp_path)]
    assert main(["closeness", str(path), *args]) == 2
    err = capsys.readouterr().err
    assert match in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_the_command_resumes_a_stopped_run(graph_file, tmp_path, monkeypatch, capsys):
    from blest import checkpoint as ck

    g, path = graph_file
    monkeypatch.setenv(ck.BLOCK_ENV, "1")  # one batch per block
    check = tmp_path / "ck"
    # blocks of another run over this graph: the command finds them and finishes the work

    def progress(done, total):
        if done > 0:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        bc.harmonic(g, checkpoint=check, progress=progress)
    real = bc.harmonic

    def ctrl_c(*_args, **_kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(bc, "harmonic", ctrl_c)
    out = tmp_path / "h.npy"
    args = ["closeness", str(path), "--harmonic", "-o", str(out), "--checkpoint", str(check)]
    assert main(args) == 130
    err = capsys.readouterr().err
    assert f"kept in {check}; the same command resumes" in err and not out.exists()
    monkeypatch.setattr(bc, "harmonic", real)
    assert main(args) == 0
    assert np.load(out).tobytes() == bc.harmonic(g).tobytes()
    written = sorted(check.iterdir())
    assert main(["closeness", str(path), "-o", str(out), "--checkpoint", str(check)]) == 0
    assert np.load(out).tobytes() == bc.closeness(g).tobytes()
    assert sorted(check.iterdir()) == written  # from the blocks alone


def test_the_rate_counts_new_work_only(monkeypatch):
    from blest.cli import scores

    lines: list[str] = []
    clock = iter([0.0, 100.0, 110.0, 120.0])
    monkeypatch.setattr(scores.time, "monotonic", lambda: next(clock))
    eta = scores.Eta(lines.append, False, "blest closeness", 1e9)
    eta(900, 1000)  # resumed: 900 sources from the checkpoint, no time spent now
    eta(950, 1000)  # 50 more in 10 s: 5 per second, 10 s left
    assert lines == ["900 / 1,000 sources (90%)", "950 / 1,000 sources (95%), 10.0 s left"]
