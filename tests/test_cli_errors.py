"""Every command with bad input: exit status 2, exactly one ``error:`` line on stderr, no
traceback, nothing written, and no work started before the arguments were checked."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from random_graphs import make_directed

from blest.cli import commands as commands_mod
from blest.cli import main, tune_main
from blest.cli import tune as tune_mod
from blest.datasets import write_mtx
from blest.tuning import tuner as tuner_mod


def _listing(d: Path):
    return sorted((p.relative_to(d), p.stat().st_size, p.stat().st_mtime_ns) for p in d.rglob("*"))


def _fails(capsys, run, argv, d: Path, match: str = "") -> str:
    before = _listing(d)
    try:
        code = run(argv)
    except SystemExit as exc:  # argparse
        code = exc.code
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, (argv, code, err)
    assert len(lines) == 1 and "Traceback" not in err, (argv, err)
    assert ": error: " in lines[0] and match in lines[0], (argv, lines[0])
    assert out == "", (argv, out)
    assert _listing(d) == before, argv
    return lines[0]


@pytest.fixture
def no_work(monkeypatch):
    """Loading a graph or tuning fails the test: errors must come before any work."""

    def boom(*a, **k):
        raise AssertionError("work started before the arguments were checked")

    for mod in (commands_mod, tune_mod):
        monkeypatch.setattr(mod, "load", boom)
    monkeypatch.setattr(tuner_mod, "tune", boom)


@pytest.fixture
def files(tmp_path, rng):
    d = tmp_path
    write_mtx(make_directed(rng, 60), d / "g.mtx")
    (d / "garbage.mtx").write_text("%%MatrixMarket matrix coordinate pattern general\n3 3 2\n1 x\n")
    (d / "sym.mtx").write_text("%%MatrixMarket matrix coordinate pattern symmetric\n3 3 1\n2 1\n")
    (d / "afile").write_text("not a directory")
    (d / "adir").mkdir()
    (d / "broken.blest.json").write_text("{nope")
    return d


def test_blest_tune_bad_input(files, capsys, no_work):
    d = files
    gm = str(d / "g.mtx")
    cases = [
        ([gm, "--budget", "nan"], "finite number of seconds"),
        ([gm, "--budget", "inf"], "finite number of seconds"),
        ([gm, "--budget", "-1"], "--budget"),
        ([gm, "--budget", "soon"], "--budget"),
        ([gm, "--sources", "0"], "--sources"),
        ([gm, "--sources", "1.5"], "--sources"),
        ([gm, "--sigma", "5"], "invalid choice"),
        ([gm, "--ordering", "bogus"], "unknown ordering bogus"),
        ([gm, "--format", "xml"], "invalid choice"),
        ([gm, "-o", str(d / "nodir" / "x.blest.json")], f"{d / 'nodir'} does not exist"),
        ([gm, "-o", str(d / "afile" / "x.blest.json")], "is not a directory"),
        ([gm, "-o", str(d / "adir")], "must end in .json"),
        ([gm, "-o", str(d / "x.txt")], "must end in .json"),
        ([gm, "--directed", "--undirected"], "not allowed with"),
        ([gm, "--frobnicate"], "unrecognized arguments"),
        (["-"], "needs -o CONFIG"),
        ([], "required"),
    ]
    for argv, match in cases:
        _fails(capsys, tune_main, argv, d, match)
    (d / "dir.blest.json").mkdir()
    _fails(capsys, tune_main, [gm, "-o", str(d / "dir.blest.json")], d, "is a directory")


def test_blest_tune_bad_graphs(files, capsys, monkeypatch):
    d = files
    monkeypatch.setattr(tuner_mod, "_compile_check", lambda *a: ([], 0.0))
    cases = [
        ([str(d / "absent.mtx")], "No such graph file"),
        ([str(d / "garbage.mtx")], "garbage.mtx"),
        ([str(d / "sym.mtx"), "--directed"], "sym.mtx"),
        ([str(d / "adir")], "is a directory"),
    ]
    for argv, match in cases:
        _fails(capsys, tune_main, argv, d, match)


def test_unwritable_output_fails_before_work_naming_the_path(files, capsys, no_work, monkeypatch):
    d = files
    locked = d / "locked"
    locked.mkdir()
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, m: False if Path(p) == locked else real(p, m))
    target = locked / "x.blest.json"
    line = _fails(capsys, tune_main, [str(d / "g.mtx"), "-o", str(target)], d, str(target))
    assert "permission denied" in line and ".tmp" not in line
    out = locked / "l.npy"
    line = _fails(capsys, main, ["bfs", str(d / "g.mtx"), "0", "--out", str(out)], d, str(out))
    assert "permission denied" in line


def test_blest_bad_input(files, capsys, no_work):
    d = files
    g = str(d / "g.mtx")
    cases = [
        (["demo", "--sources", "-1"], "--sources"),
        (["demo", "--sources", "1e9"], "--sources"),
        (["demo", "--sources", "0"], "--sources"),
        (["demo", "--budget", "nan"], "finite number of seconds"),
        (["demo", "--budget", "inf"], "finite number of seconds"),
        (["info", g, "--sigmas", "5"], "invalid choice"),
        (["info", g, "--sigmas"], "expected at least one"),
        (["info", g, "--format", "xml"], "invalid choice"),
        (["info", str(d / "broken.blest.json"), "--relabel"], "--relabel cannot be combined"),
        (["bfs", g, "x"], "invalid int value"),
        (["bfs", g, "0", "--out", str(d / "adir")], "is a directory"),
        (["bfs", g, "0", "--out", str(d / "nodir" / "l.npy")], "does not exist"),
        (["bfs", g, "0", "--out", str(d / "afile" / "l.npy")], "is not a directory"),
        (["bfs", g, "0", "--out", str(d / "l.parquet")], "unknown extension .parquet"),
        (["bfs", g, "0", "--out", str(d / "levels")], "unknown extension (none)"),
        (["bfs", g, "0", "--out", "-", "--json"], "--json and --out -"),
        (["bfs", g, "0", "--eta"], "expected one argument"),
        (["bfs", g, "0", "--alpha", "-1"], "argument --alpha: alpha must be >= 0"),
        (["bfs", g, "0", "--alpha", "nan"], "alpha must be >= 0 (0: off, inf allowed), got nan"),
        (["bfs", g, "0", "--alpha", "big"], "alpha must be a number, got 'big'"),
        (["bfs", g, "0", "--beta", "-1"], "argument --beta: beta must be >= 0"),
        (["bench", g, "-n", "0"], "-n"),
        (["bench", g, "--plot", str(d / "p.gif")], "use .png, .pdf, .svg"),
        (["bench", g, "--plot", str(d / "nodir" / "p.png")], "does not exist"),
        (["source", str(d / "broken.blest.json")], "not valid JSON"),
        (["source", g], "not a tuned config"),
        (["source", "--registers", "128"], "registers=128 needs update='eager'"),
        (["source", "--registers", "96"], "invalid choice"),
        (["ptx", "--arch", "sm_1"], "arch must look like"),
        (["variants", "extra"], "unrecognized arguments"),
        (["nonsense"], "invalid choice"),
        ([], "required"),
    ]
    for argv, match in cases:
        _fails(capsys, main, argv, d, match)


def test_blest_bad_graphs_and_configs(files, capsys):
    d = files
    g = str(d / "g.mtx")
    cases = [
        (["demo", "--sources", "1000000000"], "possible sources"),
        (["info", str(d / "absent.mtx")], "No such graph file"),
        (["info", str(d / "garbage.mtx")], "garbage.mtx"),
        (["info", str(d / "absent.blest.json")], "no such tuned config"),
        (["bfs", g, "60"], "out of range"),
        (["bfs", g, "-1"], "out of range"),
        (["bfs", g, "0", "--alpha", "14", "--launch", "per_level"], "needs a persistent variant"),
        (["bfs", str(d / "broken.blest.json"), "0"], "not valid JSON"),
        (["bench", str(d / "absent.blest.json")], "no such tuned config"),
        (["bench", str(d / "garbage.mtx")], "garbage.mtx"),
    ]
    lone = d / "lone.txt"  # vertex 5 occurs; 3 does not (after --relabel)
    lone.write_text("5 7\n7 9\n")
    cases.append((["bfs", str(lone), "3", "--relabel"], "vertex 3 does not occur"))
    huge = d / "huge.txt"  # an id past what blest represents: the message names the flag
    huge.write_text("0 1\n1 4000000000\n")
    cases.append((["bfs", str(huge), "0"], "huge.txt:2: vertex id 4000000000 needs"))
    for argv, match in cases:
        _fails(capsys, main, argv, d, match)
    assert "(pass --relabel " in _fails(capsys, main, ["bfs", str(huge), "0"], d)
    assert "relabel=True" not in _fails(capsys, main, ["closeness", str(huge)], d)


def test_plot_without_matplotlib_names_the_extra(files, capsys, no_work, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib → ImportError
    argv = ["bench", str(files / "g.mtx"), "--plot", str(files / "p.png")]
    _fails(capsys, main, argv, files, 'pip install "blest-bfs[plot]"')


def test_config_flags_that_do_not_apply(files, capsys, rng, monkeypatch):
    d = files
    monkeypatch.setattr(tuner_mod, "_compile_check", lambda *a: ([], 0.0))
    cfg = d / "g.blest.json"
    assert tune_main([str(d / "g.mtx"), "-o", str(cfg), "-q", "--ordering", "rcm"]) == 0
    capsys.readouterr()
    data = json.loads(cfg.read_text())
    data["graph"]["n"] = "abc"
    (d / "bad-n.blest.json").write_text(json.dumps(data))
    cases = [
        (["bfs", str(cfg), "0", "--undirected"], "--undirected cannot be combined"),
        (["bfs", str(cfg), "0", "--format", "mtx"], "--format cannot be combined"),
        (["bench", str(cfg), "--relabel"], "--relabel cannot be combined"),
        (["info", str(d / "bad-n.blest.json")], "graph.n must be an integer"),
        (["bfs", str(d / "bad-n.blest.json"), "0"], "graph.n must be an integer"),
    ]
    for argv, match in cases:
        _fails(capsys, main, argv, d, match)
