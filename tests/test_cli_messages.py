"""What the command line says about files it did not make: control characters of file names and
notes are escaped wherever they are printed, the re-tune hint is a command that is safe to
copy, a full disk is named with the path, a closed standard input and ``out="view"`` on a CPU
engine are told as what they are."""

from __future__ import annotations

import errno
import json
import os
import shlex
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from random_graphs import make_directed
from test_cli_subprocess import cli_env

import blest
from blest.cli import main, tune_main
from blest.cli.common import Parser, printable, run
from blest.datasets import write_mtx
from blest.errors import ArgumentError, GPUUnavailableError
from blest.tuning.config import TunedConfig

HOSTILE = "g\x1b]2;owned\x07\x1b[2J\r\u202e\nfake"  # a title, a clear, a bidi flip, a line


@pytest.fixture
def graph(tmp_path, rng):
    g = make_directed(rng, 90)
    write_mtx(g, tmp_path / "g.mtx")
    return tmp_path, g


def _clean(text: str) -> None:
    bad = [c for c in text if c not in "\n" and (ord(c) < 32 or 0x7F <= ord(c) < 0xA0)]
    assert not bad and "\u202e" not in text, repr(text)


def test_printable_escapes_what_a_terminal_would_obey():
    assert printable("plain ünïcödé name.mtx") == "plain ünïcödé name.mtx"
    assert printable(HOSTILE) == "g\\x1b]2;owned\\x07\\x1b[2J\\r\\u202e\\nfake"
    assert printable(os.fsdecode(b"g\xff\x85.mtx")) == "g\\xff\\x85.mtx"
    assert printable("\x9b31m") == "\\x9b31m"  # C1 CSI


def test_a_hostile_file_name_is_escaped_in_output_and_errors(graph, capsys):
    d, g = graph
    hostile = d / f"{HOSTILE}.mtx"
    os.link(d / "g.mtx", hostile)
    assert main(["info", str(hostile)]) == 0
    out, err = capsys.readouterr()
    _clean(out + err)
    assert printable(str(hostile)) in out
    assert main(["info", str(d / f"missing{HOSTILE}.mtx")]) == 2
    out, err = capsys.readouterr()
    _clean(err)
    assert err.count("\n") == 1 and err.startswith("blest: error: ")
    config = d / f"{HOSTILE}.blest.json"
    assert tune_main([str(hostile), "-o", str(config), "--ordering", "rcm"]) == 0
    out, err = capsys.readouterr()
    _clean(out + err)
    assert f"wrote      {printable(config)}" in out
    assert main(["bfs", str(config), "1", "--out", str(d / f"{HOSTILE}.npy")]) == 0
    out, err = capsys.readouterr()
    _clean(out + err)
    assert np.array_equal(np.load(d / f"{HOSTILE}.npy"), blest.reference.bfs_levels(g, 1))


def test_notes_of_a_config_are_escaped(graph, capsys):
    d, _ = graph
    config = d / "g.blest.json"
    assert tune_main([str(d / "g.mtx"), "-o", str(config), "-q", "--ordering", "rcm"]) == 0
    data = json.loads(config.read_text())
    data["notes"].append(f"edited {HOSTILE}")
    config.write_text(json.dumps(data))
    assert main(["info", str(config)]) == 0
    out, err = capsys.readouterr()
    _clean(out + err)
    assert f"note       edited {printable(HOSTILE)}" in out


def test_warnings_are_escaped(capsys):
    def warn(_args):
        warnings.warn(f"about {HOSTILE}", RuntimeWarning, stacklevel=1)

    p = Parser(prog="blest")
    p.set_defaults(func=warn)
    assert run(p, []) == 0
    err = capsys.readouterr().err
    _clean(err)
    assert err == f"blest: warning: about {printable(HOSTILE)}\n"


def test_an_undecodable_file_name_prints(tmp_path):
    """A file name that is not UTF-8, under a UTF-8 locale: printed with its byte escaped
    (it used to end in a UnicodeEncodeError traceback)."""
    name = os.fsdecode(b"g\xff.txt")
    (tmp_path / name).write_text("0 1\n1 2\n")
    env = cli_env(tmp_path, LC_ALL="C.UTF-8", PYTHONIOENCODING="utf-8")
    r = subprocess.run(
        [sys.executable, "-m", "blest.cli", "info", name],
        cwd=tmp_path, env=env, capture_output=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert b"graph       g\\xff.txt\n" in r.stdout


# ---------------------------------------------------------------------- the re-tune hint
def test_the_retune_hint_is_quoted(graph, capsys):
    d, _ = graph
    config = d / "my configs" / "g.blest.json"
    config.parent.mkdir()
    assert tune_main([str(d / "g.mtx"), "-o", str(config), "-q", "--ordering", "rcm"]) == 0
    data = json.loads(config.read_text())
    source = f"{d}/g.mtx; touch {d}/PWNED $(touch {d}/PWNED2)"
    data["graph"]["source"] = source
    config.write_text(json.dumps(data))
    (config.parent / data["artifact"]["path"]).unlink()  # refused: the hint follows
    assert main(["bfs", str(config), "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "re-run blest-tune " in err
    command = err.rstrip("\n").split("re-run ", 1)[1]
    assert shlex.split(command) == ["blest-tune", source, "-o", str(config)]
    subprocess.run(["sh", "-c", f"true {command}"], timeout=10)  # as a user pasting it would
    assert not (d / "PWNED").exists() and not (d / "PWNED2").exists()
    cfg = TunedConfig.read(config)
    assert shlex.split(cfg.hint.split("re-run ", 1)[1])[1] == source


# ---------------------------------------------------------------------- a full disk
def test_a_full_disk_is_named_with_the_path(graph, capsys, monkeypatch):
    d, _ = graph
    out = d / "levels.npy"
    out.write_bytes(b"the previous levels")

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    assert main(["bfs", str(d / "g.mtx"), "0", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err == f"blest: error: cannot write {out}: the disk is full (no space left on device)\n"
    assert out.read_bytes() == b"the previous levels"
    assert sorted(p.name for p in d.iterdir()) == ["g.mtx", "levels.npy"]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
@pytest.mark.parametrize("extra", [["--out", "-"], []])
def test_a_full_standard_output_is_named(graph, extra):
    d, _ = graph
    with open("/dev/full", "wb") as full:
        r = subprocess.run(
            [sys.executable, "-m", "blest.cli", "bfs", str(d / "g.mtx"), "0", *extra],
            env=cli_env(d), stdout=full, stderr=subprocess.PIPE, timeout=120,
        )  # fmt: skip
    assert r.returncode == 2, r.stderr
    assert r.stderr.decode().endswith("cannot write standard output: the disk is full "
                                      "(no space left on device)\n"), r.stderr  # fmt: skip
    assert r.stderr.count(b"\n") == 1


# ---------------------------------------------------------------------- other messages
def test_a_closed_standard_input_is_not_a_terminal(tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "blest.cli", "info", "-"],
        env=cli_env(tmp_path), capture_output=True, preexec_fn=lambda: os.close(0),
        timeout=120,
    )  # fmt: skip
    assert r.returncode == 2
    assert (
        r.stderr == b"blest: error: the graph is - but standard input is closed: pipe a graph in\n"
    )


@pytest.mark.parametrize("device", ["cpu", "emulator"])
def test_out_view_on_a_cpu_engine_is_not_a_missing_gpu(graph, device):
    d, g = graph
    prepared = blest.Prepared.from_graph(blest.load_graph(d / "g.mtx"), 8)
    with blest.make_engine(prepared, device=device) as eng:
        with pytest.raises(ArgumentError) as info:
            eng.bfs(0, out="view")
        assert "GPU" not in str(info.value) and "out='view'" in str(info.value)
        with pytest.raises(GPUUnavailableError, match="out='device'"):
            eng.bfs(0, out="device")
        with pytest.raises(ArgumentError, match="out='levels'"):
            eng.bfs(0, out="levels")
        assert np.array_equal(eng.bfs(0), blest.reference.bfs_levels(g, 0))


def test_the_progress_line_escapes_what_it_shows(monkeypatch):
    import io

    from blest.cli.common import Progress

    class TTY(io.StringIO):
        def isatty(self) -> bool:
            return True

    tty = TTY()
    monkeypatch.setattr(sys, "stderr", tty)
    Progress("blest-tune")(f"loading {HOSTILE}")
    shown = tty.getvalue()
    assert shown.startswith("\r\x1b[K")  # the line's own redraw, and nothing else
    _clean(shown[len("\r\x1b[K") :])


def test_the_files_doc_names_what_blest_writes():
    """docs/files.md, linked from the conventions, names the temporary files as blest makes
    them and the cache's parts."""
    from blest.tuning import storage as files

    repo = Path(__file__).resolve().parents[1]
    doc = (repo / "docs" / "files.md").read_text()
    assert "docs/files.md" in (repo / "docs" / "conventions.md").read_text()
    assert f".X.blest.json.{files.TEMP_MARK}XXXXXXXX.tmp" in doc
    assert "X.blest.json.lock" in doc and "0600" in doc and "0700" in doc
    for part in ("kernels/", "numba/", "blest-stdin-"):
        assert part in doc
