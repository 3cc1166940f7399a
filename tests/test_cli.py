"""The ``blest`` and ``blest-tune`` command lines without a GPU: every command, the no-GPU
path end to end on the bundled graph, and user errors (exit 2, one line, no partial files)."""

from __future__ import annotations

import json
import re
import shutil

import numpy as np
import pytest
from random_graphs import make_directed

import blest
from blest.cli import main, tune_main
from blest.codegen import toolchain
from blest.codegen.compile import compile_source
from blest.datasets import example_path, write_mtx
from blest.reference import bfs_levels
from blest.tuning import tuner as tuner_mod

needs_nvrtc = pytest.mark.skipif(
    not toolchain.include_dirs(), reason="needs NVRTC and the CUDA headers (nvidia-* wheels)"
)


@pytest.fixture(scope="module")
def kernel_cache(tmp_path_factory):
    """A private kernel cache shared by this module's tests (never the user's ~/.cache)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BLEST_CACHE_DIR", str(tmp_path_factory.mktemp("blest-cache")))
        yield


@pytest.fixture
def no_compile(monkeypatch):
    monkeypatch.setattr(tuner_mod, "_compile_check", lambda *a: ([], 0.0))


@pytest.fixture
def small(tmp_path, rng, no_compile):
    """A tuned small directed graph: (directory, graph, config path)."""
    g = make_directed(rng, 300)
    write_mtx(g, tmp_path / "small.mtx")
    cfg = tmp_path / "small.blest.json"
    assert tune_main([str(tmp_path / "small.mtx"), "-o", str(cfg), "--quiet"]) == 0
    return tmp_path, g, cfg


def _listing(d):
    return sorted((p.relative_to(d), p.stat().st_size, p.stat().st_mtime_ns) for p in d.rglob("*"))


def _fails(capsys, run, argv, d, match: str = "", *, warned: bool = False) -> str:
    """``run(argv)`` exits 2 with one line on stderr, no traceback, and ``d`` is unchanged."""
    before = _listing(d)
    try:
        code = run(argv)
    except SystemExit as exc:  # argparse errors
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2, (argv, err)
    lines = [line for line in err.splitlines() if line.strip()]
    if warned:  # the run had started (and said so) when the error came
        lines = [line for line in lines if ": warning: " not in line]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert ": error: " in lines[0] and match in lines[0], lines[0]
    assert _listing(d) == before, argv
    return lines[0]


# ---------------------------------------------------------------------- the main job, no GPU
def test_bundled_graph_end_to_end(tmp_path, kernel_cache, capsys):
    """Without a GPU blest-tune compiles nothing (no kernel can run here) and says so."""
    graph_file = tmp_path / "luxembourg_osm.mtx.gz"
    shutil.copy(example_path(), graph_file)
    cfg = tmp_path / "x.blest.json"
    assert tune_main([str(graph_file), "-o", str(cfg), "--sigma", "8"]) == 0
    out = capsys.readouterr()
    data = json.loads(cfg.read_text())
    artifact = data["artifact"]["path"]
    assert re.fullmatch(r"x\.blest\.[0-9a-f]{12}\.npz", artifact) and artifact in out.out
    assert data["artifact"]["sha256"].startswith(artifact.split(".")[2])
    notes = [line for line in out.err.splitlines() if "note:" in line]
    assert len(notes) == 1 and "no kernel compiled" in notes[0]
    assert data["tuned"] is False and data["gpu"] is None and data["timing"]["compiled"] == []
    assert data["preparation"]["sigma"] == 8 and data["graph"]["n"] == 114_599
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [graph_file.name, cfg.name, artifact]
    )
    with pytest.warns(RuntimeWarning, match="emulator"):
        eng = blest.load_tuned(cfg)
    graph = blest.load_graph(graph_file)
    src = int(np.flatnonzero(graph.out_degree > 0)[12345])
    assert np.array_equal(eng.bfs(src), bfs_levels(graph, src))
    # blest bfs CONFIG SRC --out, info
    levels_file = tmp_path / "levels.npy"
    assert main(["bfs", str(cfg), str(src), "--out", str(levels_file)]) == 0
    assert np.array_equal(np.load(levels_file), bfs_levels(graph, src))
    capsys.readouterr()
    assert main(["info", str(cfg)]) == 0
    info = capsys.readouterr().out
    assert "114,599 vertices" in info and data["variant_name"] in info and "U_div" in info


@needs_nvrtc
def test_source_and_ptx_of_a_config(small, kernel_cache, capsys):
    _, _, cfg = small
    data = json.loads(cfg.read_text())
    capsys.readouterr()
    assert main(["source", str(cfg)]) == 0
    source = capsys.readouterr().out
    assert data["variant_name"] in source
    assert compile_source(source, arch="sm_90", cache=False)[:4] == b"\x7fELF"
    assert main(["ptx", str(cfg)]) == 0
    assert ".target sm_90" in capsys.readouterr().out


@needs_nvrtc
def test_compile_check_compiles_the_candidates(tmp_path, rng, kernel_cache, capsys):
    g = make_directed(rng, 100)
    write_mtx(g, tmp_path / "g.mtx")
    cfg = tmp_path / "g.blest.json"
    argv = [str(tmp_path / "g.mtx"), "-o", str(cfg), "--sigma", "16", "--ordering", "rcm"]
    assert tune_main([*argv, "--compile-check", "-q"]) == 0
    data = json.loads(cfg.read_text())
    assert data["variant"]["sigma"] == 16 and len(data["timing"]["compiled"]) >= 10
    assert data["timing"]["compile_arch"] == "sm_90"


# ---------------------------------------------------------------------- commands
def test_help_has_examples(capsys):
    for run, argv in ((main, ["--help"]), (tune_main, ["--help"])):
        with pytest.raises(SystemExit) as exc:
            run(argv)
        assert exc.value.code == 0
        assert "examples:" in capsys.readouterr().out


def test_tune_default_output_names(tmp_path, rng, monkeypatch, no_compile, capsys):
    g = make_directed(rng, 200)
    write_mtx(g, tmp_path / "road.mtx")
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.chdir(out)
    assert tune_main([str(tmp_path / "road.mtx")]) == 0
    first = sorted(p.name for p in out.iterdir())
    assert len(first) == 2 and first[1] == "road.blest.json"
    assert re.fullmatch(r"road\.blest\.[0-9a-f]{12}\.npz", first[0])
    text = capsys.readouterr()
    assert "variant" in text.out and text.err.count("\n") == 1  # the one-line note
    assert tune_main([str(tmp_path / "road.mtx"), "-q", "--undirected"]) == 0  # overwrite
    assert capsys.readouterr() == ("", "")
    data = json.loads((out / "road.blest.json").read_text())
    assert data["graph"]["directed"] is False
    # the new pair replaced the old one: the old artifact is gone
    assert sorted(p.name for p in out.iterdir()) == [data["artifact"]["path"], "road.blest.json"]
    assert data["artifact"]["path"] != first[0]


def test_bfs_info_source_with_small_config(small, capsys):
    d, g, cfg = small
    capsys.readouterr()
    for src in (0, 7, g.n - 1):
        out = d / f"l{src}.npy"
        assert main(["bfs", str(cfg), str(src), "--out", str(out)]) == 0
        assert np.array_equal(np.load(out), bfs_levels(g, src))
    assert main(["bfs", str(d / "small.mtx"), "3"]) == 0  # a graph file still works
    assert "reached" in capsys.readouterr().out
    out = d / "beta.npy"  # the return rule: the emulator without a GPU, the kernel with one
    assert (
        main(["bfs", str(d / "small.mtx"), "3", "--eta", "1e9", "--beta", "4", "--out", str(out)])
        == 0
    )
    assert np.array_equal(np.load(out), bfs_levels(g, 3))
    assert main(["info", str(cfg)]) == 0
    assert "tuned      no" in capsys.readouterr().out
    assert main(["info", str(d / "small.mtx"), "--sigmas", "8"]) == 0
    assert main(["source", "--sigma", "16", "--update", "eager"]) == 0
    assert "s16_eager" in capsys.readouterr().out
    assert main(["source", "--launch", "block"]) == 0  # eager without switching by default
    assert "blest generated kernel: s8_block" in capsys.readouterr().out
    assert main(["source", "--update", "eager", "--queue", "resident", "--registers", "128"]) == 0
    text = capsys.readouterr().out
    assert "s8_eager_resident_r128_pers" in text and "__launch_bounds__(512, 1) blest_bfs(" in text
    assert main(["variants"]) == 0
    names = capsys.readouterr().out.split()
    assert "s32_block" in names and "s32_eager_resident_r128_pers" in names


def test_bfs_with_the_edge_ratio_guard(small, capsys, monkeypatch):
    """``--alpha`` (a graph file) reaches the engine beside ``--eta`` and ``--beta``; the levels
    stay SciPy's (the emulator without a GPU, the kernel with one)."""
    import blest.runtime.factory as factory

    d, g, _ = small
    made, real = [], factory.make_engine
    monkeypatch.setattr(factory, "make_engine", lambda *a, **k: made.append(k) or real(*a, **k))
    argv = ["bfs", str(d / "small.mtx"), "3", "--eta", "1e9", "--out", str(d / "a.npy")]
    for extra in (["--alpha", "14"], ["--alpha", "0.5", "--beta", "4"], ["--alpha", "inf"], []):
        assert main(argv + extra) == 0
        np.testing.assert_array_equal(np.load(d / "a.npy"), bfs_levels(g, 3))
    assert [(k["eta"], k["beta"], k["alpha"]) for k in made] == [
        (1e9, 0.0, 14.0), (1e9, 4.0, 0.5), (1e9, 0.0, float("inf")), (1e9, 0.0, 0.0)
    ]  # fmt: skip
    capsys.readouterr()


def test_bfs_writes_levels_atomically(small, capsys, monkeypatch):
    d, _, cfg = small

    def broken_save(f, arr):
        f.write(b"\x93NUMPY partial")
        raise OSError("No space left on device")

    monkeypatch.setattr(np, "save", broken_save)
    _fails(
        capsys,
        main,
        ["bfs", str(cfg), "1", "--out", str(d / "l.npy")],
        d,
        "No space left",
        warned=True,
    )


# ---------------------------------------------------------------------- user errors
def test_tune_user_errors(tmp_path, rng, capsys, no_compile):
    d = tmp_path
    g = make_directed(rng, 100)
    write_mtx(g, d / "g.mtx")
    (d / "garbage.mtx").write_text("%%MatrixMarket matrix coordinate pattern general\n3 3 2\n1 x\n")
    (d / "sym.mtx").write_text("%%MatrixMarket matrix coordinate pattern symmetric\n3 3 1\n2 1\n")
    gm = str(d / "g.mtx")
    cases = [
        ([str(d / "absent.mtx")], "No such graph file"),
        ([str(d / "garbage.mtx")], "garbage.mtx"),
        ([str(d / "sym.mtx"), "--directed"], ""),
        ([gm, "--budget", "-1"], "--budget"),
        ([gm, "--sources", "0"], "--sources"),
        ([gm, "--sigma", "5"], "invalid choice"),
        ([gm, "--ordering", "bogus"], "unknown ordering bogus"),
        ([gm, "-o", str(d / "nodir" / "x.blest.json")], "does not exist"),
        ([gm, "-o", str(d / "x.txt")], "must end in .json"),
        ([gm, "--directed", "--undirected"], "not allowed with"),
        ([gm, "--frobnicate"], "unrecognized arguments"),
        ([], "required"),
    ]
    for argv, match in cases:
        _fails(capsys, tune_main, argv, d, match)


def test_blest_user_errors(small, capsys):
    d, g, cfg = small
    (d / "broken.blest.json").write_text("{nope")
    data = json.loads(cfg.read_text())
    data["version"] = 99
    (d / "future.blest.json").write_text(json.dumps(data))
    out = str(d / "l.npy")
    cases = [
        (["bfs", str(cfg), str(g.n), "--out", out], "out of range"),
        (["bfs", str(cfg), "-1", "--out", out], "out of range"),
        (["bfs", str(cfg), "x"], "invalid int value"),
        (["bfs", str(cfg), "1", "--sigma", "8"], "--sigma cannot be combined"),
        (["bfs", str(cfg), "1", "--eta", "5"], "--eta cannot be combined"),
        (["bfs", str(cfg), "1", "--beta", "5"], "--beta cannot be combined"),
        (["bfs", str(d / "small.mtx"), "1", "--beta", "-1"], "beta must be >= 0"),
        (["bfs", str(cfg), "1", "--alpha", "14"], "--alpha cannot be combined"),
        (["bfs", str(d / "small.mtx"), "1", "--alpha", "-1"], "alpha must be >= 0"),
        (["bfs", str(d / "broken.blest.json"), "1", "--out", out], "not valid JSON"),
        (["bfs", str(d / "future.blest.json"), "1"], "re-run blest-tune"),
        (["bfs", str(d / "absent.blest.json"), "1"], "no such tuned config"),
        (["bfs", str(cfg), "1", "--out", str(d / "nodir" / "l.npy")], "does not exist"),
        (["bfs", str(d / "absent.mtx"), "1"], "No such graph file"),
        (["source", str(d / "broken.blest.json")], "not valid JSON"),
        (["source", str(d / "small.mtx")], "not a tuned config"),
        (["source", str(cfg), "--update", "eager"], "--update cannot be combined"),
        (["ptx", str(cfg), "--sigma", "4"], "--sigma cannot be combined"),
        (["info", str(d / "future.blest.json")], "version 99"),
        (["info", str(d / "absent.mtx")], "No such graph file"),
        (["source", "--update", "eager", "--switching"], "switching"),
        (["source", "--launch", "block", "--update", "lazy"], "reads no BVSS"),
        (["nonsense"], "invalid choice"),
    ]
    for argv, match in cases:
        _fails(capsys, main, argv, d, match)
    artifact = d / json.loads(cfg.read_text())["artifact"]["path"]
    artifact.write_bytes(b"PK\x03\x04 truncated")
    _fails(capsys, main, ["bfs", str(cfg), "1", "--out", out], d, "re-run blest-tune")
