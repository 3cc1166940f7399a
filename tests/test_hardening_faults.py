"""Fault injection on ``blest-tune`` in real subprocesses: killed (SIGKILL), interrupted
(SIGINT) or terminated (SIGTERM) at the named points of the write and at random moments, and
run twice at once on one output. Afterwards the config either still names the old, intact
artifact (BFS gives the old graph's levels) or names the new one, complete; a signal other
than SIGKILL leaves no temporary file behind, and one that comes after the new config is out
changes nothing (status 0, no orphaned artifact). The faults are injected by ``faults.py``
(tests only): blest reads no fault-injection variable."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
from random_graphs import make_directed, make_uniform
from test_cli_subprocess import TTYRun, cli_env, tune_cmd

import blest
from blest.datasets import write_mtx
from blest.reference import bfs_levels
from blest.tuning.tuner import tune, write_tuned

FLAGS = ("--ordering", "rcm", "--sigma", "8")
FAULTS = Path(__file__).resolve().parent / "faults.py"


def faulty_tune(spec: str, graph: Path, config: Path, *extra: str) -> list[str]:
    """blest-tune with the fault ``spec`` (``POINT:ACTION``, see faults.py) injected."""
    return [sys.executable, str(FAULTS), spec, str(graph), "-o", str(config), *extra]


@pytest.fixture
def setup(tmp_path, rng):
    """out/g.blest.json tuned on graph A; graphs/b.mtx holds graph B."""
    a, b = make_directed(rng, 150), make_uniform(rng, 260)
    (tmp_path / "out").mkdir()
    (tmp_path / "graphs").mkdir()
    write_mtx(b, tmp_path / "graphs" / "b.mtx")
    config = tmp_path / "out" / "g.blest.json"
    write_tuned(tune(a, use_gpu=False, orderings=["rcm"], sigmas=(8,)), config)
    return tmp_path, config, {a.content_hash(): ("old", a), b.content_hash(): ("new", b)}


def _state(config: Path, graphs: dict) -> str:
    """ "old" or "new": which complete pair the config names (else the test fails)."""
    data = json.loads(config.read_text())
    which, graph = graphs[data["graph"]["hash"]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        eng = blest.load_tuned(config)
    for src in (0, graph.n // 3, graph.n - 1):
        assert np.array_equal(eng.bfs(src), bfs_levels(graph, src)), (which, src)
    return which


def _leftovers(out: Path, config: Path) -> list[str]:
    named = json.loads(config.read_text())["artifact"]["path"]
    return sorted(p.name for p in out.iterdir() if p.name not in (config.name, named))


POINTS = [
    ("artifact-written", "kill", "old"),
    ("after-artifact", "kill", "old"),
    ("config-written", "kill", "old"),
    ("after-config", "kill", "new"),
    ("artifact-written", "int", "old"),
    ("config-written", "int", "old"),
    ("artifact-written", "term", "old"),
    ("after-artifact", "term", "old"),
    ("after-config", "int", "new"),  # the config is out: the run finishes, status 0
    ("after-config", "term", "new"),
]
# Interrupted: status 130, or killed by SIGINT once cleaned up (CPython does so when the
# KeyboardInterrupt passed through code it ran for a C extension); shells report both as 130.
INTERRUPTED = (130, -signal.SIGINT)
EXIT = {"kill": (-signal.SIGKILL,), "int": INTERRUPTED, "term": (143,)}


@pytest.mark.parametrize("point,action,expected", POINTS, ids=lambda x: str(x))
def test_a_signal_at_each_point_of_the_write(setup, point, action, expected):
    tmp, config, graphs = setup
    cmd = faulty_tune(f"{point}:{action}", tmp / "graphs" / "b.mtx", config, *FLAGS, "-q")
    r = subprocess.run(cmd, env=cli_env(tmp), capture_output=True, timeout=120)
    published = point == "after-config" and action != "kill"
    assert r.returncode in ((0,) if published else EXIT[action]), r.stderr  # it fired
    assert _state(config, graphs) == expected
    if published:
        assert r.stderr == b""
    elif action != "kill":
        assert b"Traceback" not in r.stderr and r.stderr.count(b"\n") == 1, r.stderr
    if action != "kill":
        assert _leftovers(tmp / "out", config) == []  # no temporary, no orphaned artifact


def test_the_failpoint_variable_of_old_does_nothing(setup):
    """A fault-injection variable in the environment cannot make blest-tune kill itself:
    only a test's own process installs faults."""
    tmp, config, graphs = setup
    env = cli_env(tmp, BLEST_FAILPOINT="artifact-written:kill")
    cmd = tune_cmd(tmp / "graphs" / "b.mtx", config, *FLAGS, "-q")
    r = subprocess.run(cmd, env=env, capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert _state(config, graphs) == "new"
    package = Path(__file__).resolve().parents[1] / "blest"
    readers = [p for p in package.rglob("*.py") if "BLEST_FAILPOINT" in p.read_text()]
    assert readers == []


def test_ignored_stop_signals_stay_ignored(setup):
    """Started with SIGINT and SIGHUP ignored (nohup, a script's background job), blest-tune
    keeps them ignored: a SIGINT in the middle of the write does not stop it."""
    tmp, config, graphs = setup

    def ignore() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

    for spec in ("artifact-written:int", "config-written:int"):
        cmd = faulty_tune(spec, tmp / "graphs" / "b.mtx", config, *FLAGS, "-q")
        r = subprocess.run(
            cmd, env=cli_env(tmp), capture_output=True, timeout=120, preexec_fn=ignore
        )
        assert r.returncode == 0 and r.stderr == b"", (spec, r.stderr)
        assert _state(config, graphs) == "new"
        assert _leftovers(tmp / "out", config) == []


def test_ctrl_c_inside_the_jit_compile_is_one_line(setup):
    """A SIGINT delivered while LLVM runs one of its callbacks during the Numba compile of
    the Jaccard ordering: one line, status 130, no "Exception ignored" report, nothing
    published."""
    pytest.importorskip("numba")
    tmp, config, graphs = setup
    before = config.read_bytes()
    env = cli_env(tmp, BLEST_TEST_SIGINT_IN_JIT="1")  # a fresh cache: Numba compiles
    cmd = faulty_tune("", tmp / "graphs" / "b.mtx", config, "--ordering", "jaccard", "-q")
    r = subprocess.run(cmd, env=env, capture_output=True, timeout=300)
    assert r.returncode in INTERRUPTED, r.stderr
    assert r.stderr == b"blest-tune: interrupted\n"
    assert config.read_bytes() == before and _state(config, graphs) == "old"
    assert _leftovers(tmp / "out", config) == []


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT, signal.SIGKILL, signal.SIGINT])
def test_a_signal_at_a_random_moment(setup, rng, sig):
    """The signal comes at a random time after start-up (past the imports: the progress line
    has appeared), within the run's usual length."""
    tmp, config, graphs = setup
    cmd = tune_cmd(tmp / "graphs" / "b.mtx", config, *FLAGS)
    run = TTYRun(cmd, cli_env(tmp))
    run.wait_for(b"loading")
    time.sleep(float(rng.uniform(0.0, 0.4)))
    run.proc.send_signal(sig)
    code = run.finish()
    assert code in ((0, -sig) if sig == signal.SIGKILL else (0, *INTERRUPTED)), run.err
    _state(config, graphs)
    if sig != signal.SIGKILL:
        assert b"Traceback" not in run.err
        assert _leftovers(tmp / "out", config) == []


def test_two_tunes_of_one_output_at_once(setup):
    """Twice, two processes write one config: the result is always a complete pair."""
    tmp, config, graphs = setup
    a_file = tmp / "graphs" / "a.mtx"
    a = next(g for w, g in graphs.values() if w == "old")
    write_mtx(a, a_file)
    for _ in range(2):
        procs = [
            subprocess.Popen(
                tune_cmd(f, config, *FLAGS, "-q"), env=cli_env(tmp), stderr=subprocess.PIPE
            )
            for f in (a_file, tmp / "graphs" / "b.mtx")
        ]
        for p in procs:
            assert p.wait(120) == 0, p.stderr.read()
        _state(config, graphs)
        assert _leftovers(tmp / "out", config) == []


def test_a_second_tune_waits_and_says_so(setup):
    """A holds the lock (it sleeps between its artifact and its config); B, started then,
    waits for it, says so, and writes last."""
    tmp, config, graphs = setup
    a_file = tmp / "graphs" / "a.mtx"
    write_mtx(next(g for w, g in graphs.values() if w == "old"), a_file)
    holder = TTYRun(faulty_tune("after-artifact:sleep=3", a_file, config, *FLAGS), cli_env(tmp))
    holder.wait_for(b"writing")
    time.sleep(0.3)
    waiter = subprocess.run(
        tune_cmd(tmp / "graphs" / "b.mtx", config, *FLAGS),
        env=cli_env(tmp),
        capture_output=True,
        timeout=120,
    )
    assert holder.finish() == 0
    assert waiter.returncode == 0, waiter.stderr
    assert f"waiting for another blest-tune on {config}".encode() in waiter.stderr
    assert _state(config, graphs) == "new"
    assert _leftovers(tmp / "out", config) == []


def test_sigterm_during_a_write_removes_the_temporary(tmp_path):
    """A plain program that writes through atomic_write and is terminated mid-write."""
    code = (
        "import os, signal, sys, time\n"
        "from blest.tuning.storage import atomic_write\n"
        "def write(f):\n"
        "    f.write(b'x' * 100_000)\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    time.sleep(5)\n"
        "atomic_write(sys.argv[1], write)\n"
    )
    out = tmp_path / "out"
    out.mkdir()
    r = subprocess.run(
        [sys.executable, "-c", code, str(out / "big.npz")],
        env=cli_env(tmp_path),
        capture_output=True,
        timeout=60,
    )
    assert r.returncode != 0
    assert list(out.iterdir()) == []
