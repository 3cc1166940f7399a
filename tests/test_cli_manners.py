"""The command line's manners: JSON output, standard input and output, level formats by
extension, --format / --relabel / --directed everywhere, every default in the help, progress
on terminals only, no compiling on a machine that cannot run kernels, ``blest bench``, plots and
the packaging metadata."""

from __future__ import annotations

import argparse
import io
import json
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from gpu_util import requires_gpu
from random_graphs import make_directed, make_grid

import blest
from blest.cli import build_parser, build_tune_parser, main, tune_main
from blest.cli.common import Progress
from blest.datasets import write_mtx
from blest.errors import ArgumentError, ConfigError
from blest.reference import bfs_levels
from blest.tuning import tuner as tuner_mod
from blest.tuning.timing import Spread, bench_statistics

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def no_compile(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("compiled although nothing can run the kernels here")

    monkeypatch.setattr("blest.codegen.compile.compile_many", refuse)


@pytest.fixture
def graph(tmp_path, rng):
    g = make_directed(rng, 120)
    write_mtx(g, tmp_path / "g.mtx")
    return tmp_path, g


@pytest.fixture
def tuned(graph, capsys):
    d, g = graph
    cfg = d / "g.blest.json"
    assert tune_main([str(d / "g.mtx"), "-o", str(cfg), "-q", "--ordering", "rcm"]) == 0
    capsys.readouterr()
    return d, g, cfg


def _json(capsys):
    return json.loads(capsys.readouterr().out)


# ---------------------------------------------------------------------- --json
def test_info_and_bfs_speak_json(tuned, capsys):
    d, g, cfg = tuned
    assert main(["info", str(d / "g.mtx"), "--json", "--sigmas", "8", "16"]) == 0
    info = _json(capsys)
    assert info["graph"]["n"] == g.n and info["graph"]["arcs"] == g.nnz
    assert [b["sigma"] for b in info["bvss"]] == [8, 16] and info["graph"]["directed"] is True
    assert main(["info", str(cfg), "--json"]) == 0
    info = _json(capsys)
    assert info["graph"]["hash"] == g.content_hash()
    assert Path(info["artifact_file"]).is_file()
    for target in (str(cfg), str(d / "g.mtx")):
        assert main(["bfs", target, "5", "--json"]) == 0
        out = _json(capsys)
        want = bfs_levels(g, 5)
        assert out["source"] == 5 and out["vertices"] == g.n
        assert out["reached"] == int((want >= 0).sum()) and out["depth"] == int(want.max())
        assert out["engine"].startswith("no GPU") and out["out"] is None


# ---------------------------------------------------------------------- levels output
def test_levels_go_where_the_extension_says(tuned, capsys):
    d, g, cfg = tuned
    want = bfs_levels(g, 3)
    for name in ("l.npy", "l.txt", "l.csv"):
        assert main(["bfs", str(cfg), "3", "--out", str(d / name)]) == 0
    assert np.array_equal(np.load(d / "l.npy"), want) and np.load(d / "l.npy").dtype == np.int32
    assert np.array_equal(np.loadtxt(d / "l.txt", dtype=np.int64), want)
    lines = (d / "l.csv").read_text().splitlines()
    assert lines[0] == "vertex,level" and len(lines) == g.n + 1
    assert np.array_equal(np.loadtxt(d / "l.csv", delimiter=",", skiprows=1)[:, 1], want)
    capsys.readouterr()
    assert main(["bfs", str(cfg), "3", "--out", "-"]) == 0
    out, err = capsys.readouterr()
    assert np.array_equal(np.array(out.split(), dtype=np.int64), want)
    assert "source 3" in err  # the summary moves to stderr


def test_relabelled_ids_are_the_users(tmp_path, capsys):
    (tmp_path / "e.csv").write_text("src,dst\n10,30\n30,1000\n1000,10\n77,10\n")
    argv = ["bfs", str(tmp_path / "e.csv"), "30", "--relabel", "--out", str(tmp_path / "l.csv")]
    assert main(argv) == 0
    rows = (tmp_path / "l.csv").read_text().splitlines()
    assert rows == ["vertex,level", "10,2", "30,0", "77,-1", "1000,1"]
    assert "source 30: 3 of 4 reached" in capsys.readouterr().out


# ---------------------------------------------------------------------- reading graphs
def _stdin(monkeypatch, data: bytes) -> None:
    stream = io.TextIOWrapper(io.BytesIO(data))
    monkeypatch.setattr(stream, "isatty", lambda: False)
    monkeypatch.setattr(sys, "stdin", stream)


def test_graph_from_standard_input_in_process(graph, capsys, monkeypatch):
    d, g = graph
    _stdin(monkeypatch, (d / "g.mtx").read_bytes())
    assert main(["info", "-", "--json", "--sigmas", "8"]) == 0
    info = _json(capsys)
    assert info["graph"]["source"] == "-" and info["graph"]["arcs"] == g.nnz
    _stdin(monkeypatch, b"0 1\n1 2\n")
    cfg = d / "stdin.blest.json"
    assert tune_main(["-", "--format", "edgelist", "-o", str(cfg), "-q", "--undirected"]) == 0
    data = json.loads(cfg.read_text())
    assert data["graph"]["source"] == "-" and data["graph"]["directed"] is False
    assert "re-run blest-tune - -o" in blest.tuning.TunedConfig.read(cfg).hint
    assert not list(Path(d).glob("*stdin*tmp*"))


def test_format_forces_a_reader(tmp_path, capsys):
    (tmp_path / "edges.mtx").write_text("0 1\n1 2\n")  # an edge list with a misleading name
    assert main(["info", str(tmp_path / "edges.mtx")]) == 2  # not Matrix Market
    capsys.readouterr()
    assert main(["info", str(tmp_path / "edges.mtx"), "--format", "edgelist", "--json"]) == 0
    assert _json(capsys)["graph"]["arcs"] == 2
    assert main(["info", str(tmp_path / "edges.mtx"), "--format", "edgelist", "--undirected",
                 "--json", "--sigmas", "4"]) == 0  # fmt: skip
    assert _json(capsys)["graph"]["arcs"] == 4


def _options(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _options(sub)
        elif action.option_strings and action.help is not argparse.SUPPRESS:
            yield parser.prog, action


def test_help_says_every_default():
    quiet = (argparse._HelpAction, argparse._VersionAction, argparse._StoreTrueAction)
    missing = []
    for prog, action in [*_options(build_parser()), *_options(build_tune_parser())]:
        if isinstance(action, quiet) or action.required or action.dest in ("directed", "debug"):
            continue
        if "default" not in (action.help or "").lower():
            missing.append(f"{prog} {action.option_strings[0]}")
    assert not missing, missing
    subs = build_parser()._subparsers._group_actions[0].choices
    for parser in (build_tune_parser(), subs["info"], subs["bfs"], subs["bench"]):
        text = " ".join(parser.format_help().split())
        assert "edge lists are directed unless --undirected" in text, parser.prog
        assert "Matrix Market 'general' are directed" in text, parser.prog


# ---------------------------------------------------------------------- progress
class _TTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_only_on_a_terminal_with_a_budget_countdown(monkeypatch):
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    Progress("blest-tune")("hello")
    assert sys.stderr.getvalue() == ""
    tty = _TTY()
    monkeypatch.setattr(sys, "stderr", tty)
    clock = iter([100.0, 100.0, 112.5])
    monkeypatch.setattr("blest.cli.common.time.monotonic", lambda: next(clock))
    p = Progress("blest-tune", budget=60)
    p("ordering: rcm")
    p("timing coarse 1: x")
    p("timing coarse 2: y")
    shown = [s for s in tty.getvalue().split("\r\x1b[K") if s]
    assert shown == [
        "blest-tune: ordering: rcm",
        "blest-tune:   60 s left | timing coarse 1: x",
        "blest-tune:   48 s left | timing coarse 2: y",
    ]
    p.clear()
    assert tty.getvalue().endswith("\r\x1b[K")


def test_compile_progress_bar(monkeypatch):
    def fake_compile_many(sources, *, arch, progress):
        for i in range(len(sources) + 1):
            progress(i, len(sources))
        return [b""] * len(sources)

    monkeypatch.setattr("blest.codegen.compile.compile_many", fake_compile_many)
    seen = []
    specs = [blest.VariantSpec(sigma=s) for s in (4, 8, 16, 32)]
    compiled, _ = tuner_mod._compile_check(specs, "sm_90", [], seen.append)
    assert len(compiled) == 4
    assert seen[0] == "compiling 4 variants for sm_90"
    assert (
        seen[-1].endswith("[####################] 4/4") and "[##########          ] 2/4" in seen[3]
    )


def test_compile_check_compiles_what_the_engines_will(monkeypatch):
    """The tuner's compile warms the cache with the sources its engines compile: an eager
    kernel once for each claims form its orderings need, a lazy one once."""
    from blest.codegen.render import render

    compiled = []
    monkeypatch.setattr(
        "blest.codegen.compile.compile_many",
        lambda sources, *, arch, progress: compiled.extend(sources) or [b""] * len(sources),
    )
    eager = blest.VariantSpec(sigma=32, update="eager", queue="vss", switching=False)
    lazy = blest.VariantSpec(sigma=8, update="lazy")
    names, _ = tuner_mod._compile_check([eager, lazy], "sm_90", [], print, (False, True))
    assert names == [eager.name, lazy.name]
    assert sorted(compiled) == sorted(
        [render(eager, claims="visited"), render(eager, claims="level"), render(lazy)]
    )
    compiled.clear()
    tuner_mod._compile_check([eager, lazy], "sm_90", [], print, (True,))
    assert sorted(compiled) == sorted([render(eager, claims="level"), render(lazy)])


def test_tune_compiles_only_when_asked(graph, capsys, monkeypatch):
    d, _ = graph
    assert tune_main([str(d / "g.mtx"), "-o", str(d / "a.json"), "-q", "--ordering", "rcm"]) == 0
    calls = []
    monkeypatch.setattr(tuner_mod, "_compile_check", lambda *a: calls.append(a) or (["v"], 0.1))
    argv = [str(d / "g.mtx"), "-o", str(d / "b.json"), "-q", "--ordering", "rcm"]
    assert tune_main([*argv, "--compile-check"]) == 0
    assert len(calls) == 1 and json.loads((d / "b.json").read_text())["timing"]["compiled"]


# ---------------------------------------------------------------------- blest bench
def test_bench_statistics_by_hand():
    s = bench_statistics([1.0, 2.0, 3.0, 4.0, 10.0], [2, 3, 4, 5, 11], [100, 200, 300, 400, 0.5])
    assert s.sources == 5
    assert s.traversal_ms == Spread(mean=4.0, min=1.0, q1=2.0, median=3.0, q3=4.0, max=10.0)
    assert s.whole_call_ms.median == 4.0
    # TEPS per source: 1e5 each but the last, 50; harmonic mean = 5 / (4e-5 + 2e-2)
    assert s.teps_harmonic_mean == pytest.approx(5 / (4 / 1e5 + 1 / 50))
    assert bench_statistics([1.0], [1.0], [0]).teps_harmonic_mean == 0.0
    with pytest.raises(ArgumentError):
        bench_statistics([1.0, 2.0], [1.0], [1, 2])
    with pytest.raises(ArgumentError):
        bench_statistics([], [], [])


def test_bench_on_the_cpu(tuned, capsys):
    d, g, cfg = tuned
    for target in (str(cfg), str(d / "g.mtx")):
        assert main(["bench", target, "-n", "6", "--verify", "--json"]) == 0
        r = _json(capsys)
        assert r["engine"] == "no GPU: SciPy's BFS on the CPU"
        assert (r["beta"], r["alpha"]) == (0.0, 0.0)  # the switching constants, recorded
        assert r["statistics"]["sources"] == 6 and r["verified"] == {"differ": []}
        per = r["per_source"]
        for src, edges in zip(per["sources"], per["edges"], strict=True):
            assert edges == float(g.out_degree[bfs_levels(g, src) >= 0].sum())
        assert r["timeline"] is None
    assert main(["bench", str(cfg), "-n", "3"]) == 0
    text = capsys.readouterr().out
    assert "traversal ms" in text and "Q1" in text and "harmonic mean" in text


def test_bench_reports_wrong_levels(tuned, capsys, monkeypatch):
    d, _, cfg = tuned
    real = blest.reference.bfs_levels

    def off_by_one(graph, src):
        return real(graph, src) + 1

    monkeypatch.setattr("blest.reference.bfs_levels", off_by_one)
    assert main(["bench", str(cfg), "-n", "2", "--verify"]) == 1
    assert "differ from SciPy" in capsys.readouterr().err


def test_bench_plot(tuned, capsys):
    pytest.importorskip("matplotlib")
    d, _, cfg = tuned
    assert main(["bench", str(cfg), "-n", "4", "--plot", str(d / "p.png")]) == 0
    assert (d / "p.png").read_bytes()[:4] == b"\x89PNG"
    from blest.tuning.plots import plot_bench, plot_levels

    result = {
        "target": "g",
        "engine": "GPU test",
        "variant": "v",
        "per_source": {"sources": [1, 2], "traversal_ms": [1.0, 2.0], "whole_call_ms": [2, 3]},
        "timeline": {"source": 1, "level_ms": [0.1, 0.2, 0.05], "bottom_up_levels": [1]},
    }
    assert plot_bench(result, d / "t.svg").read_text().startswith("<?xml")
    row = {"kind": "levels", "graph": "g", "source": 1, "variant": "v"}
    row.update(level_ms=[0.1, 0.2], bottom_up_levels=[])
    assert plot_levels([row, row], d / "l.png").exists()
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import plot as bench_plot
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    assert bench_plot.plot_levels is plot_levels


@pytest.mark.gpu
@requires_gpu
def test_bench_on_a_gpu_has_a_timeline(tmp_path, rng, capsys):
    g = make_grid(rng, 4000)
    write_mtx(g, tmp_path / "g.mtx")
    assert main(["bench", str(tmp_path / "g.mtx"), "-n", "8", "--verify", "--json"]) == 0
    r = _json(capsys)
    assert r["engine"].startswith("GPU ") and r["verified"] == {"differ": []}
    t = r["timeline"]
    assert t["source"] == r["per_source"]["sources"][0] and len(t["level_ms"]) >= 1
    s = r["statistics"]
    assert 0 < s["traversal_ms"]["min"] <= s["traversal_ms"]["median"] <= s["whole_call_ms"]["max"]


# ---------------------------------------------------------------------- small things
def test_debug_flag_also_after_the_command(tmp_path):
    with pytest.raises(ConfigError):
        main(["bfs", str(tmp_path / "absent.blest.json"), "0", "--debug"])


def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0 and capsys.readouterr().out.strip() == f"blest {blest.__version__}"


def test_packaging_metadata():
    tomllib = pytest.importorskip("tomllib")
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())
    project = meta["project"]
    assert "License :: OSI Approved :: BSD License" in project["classifiers"]
    assert "Typing :: Typed" in project["classifiers"]
    assert project["urls"]["Homepage"] == "https://github.com/blest-bfs/blest"
    assert project["urls"]["Repository"] == "https://github.com/blest-bfs/blest"
    assert project["scripts"] == {"blest": "blest.cli:main", "blest-tune": "blest.cli:tune_main"}
    assert {"cuda13", "cuda12", "plot", "jit", "test"} <= set(project["optional-dependencies"])
    assert "py.typed" in meta["tool"]["setuptools"]["package-data"]["blest"]
    assert (REPO / "blest" / "py.typed").exists()
    assert project["dynamic"] == ["version"]
    license_text = (REPO / "LICENSE").read_text()
    assert "BSD 3-Clause" in license_text
    assert "Copyright (c) 2026, the blest developers" in license_text


def test_a_swallowed_ctrl_c_still_stops_before_anything_is_published(tuned, capsys, monkeypatch):
    """A Ctrl-C whose KeyboardInterrupt is lost on the way (Numba drops the exceptions raised
    in its ctypes callbacks, so during a JIT compile) still stops the command: blest-tune
    publishes neither artifact nor config, the old pair stays whole, and the status is 130."""
    import os
    import signal

    d, g, cfg = tuned
    before = {p.name: p.read_bytes() for p in d.iterdir()}
    real_tune = tuner_mod.tune

    def swallowing_tune(*args, **kwargs):
        try:
            os.kill(os.getpid(), signal.SIGINT)
        except KeyboardInterrupt:
            pass  # what a ctypes callback does with it
        return real_tune(*args, **kwargs)

    monkeypatch.setattr(tuner_mod, "tune", swallowing_tune)
    argv = [str(d / "g.mtx"), "-o", str(cfg), "-q", "--ordering", "natural"]
    assert tune_main(argv) == 130
    assert "blest-tune: interrupted" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in d.iterdir()} == before
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # no GPU: SciPy answers
        eng = blest.load_tuned(cfg)
    with eng:
        assert eng.prepared.permutation.name == "rcm"
        np.testing.assert_array_equal(eng.bfs(5), bfs_levels(g, 5))
    monkeypatch.setattr(tuner_mod, "tune", real_tune)  # the next run is not stopped by the last
    assert tune_main(argv) == 0
