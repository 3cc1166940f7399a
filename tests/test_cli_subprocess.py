"""The command-line tools as users run them, in subprocesses: Ctrl-C at start-up and while
compiling, a closed standard output, standard input. Also the helpers the fault-injection tests
share (stderr on a pseudo-terminal when a test needs the progress line, shown on terminals
only)."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def cli_env(tmp: Path, **extra: str) -> dict[str, str]:
    """The environment of a subprocess: this checkout first on the path, a private kernel
    cache, no failpoint unless given."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["BLEST_CACHE_DIR"] = str(tmp / "kernel-cache")
    env.pop("BLEST_FAILPOINT", None)
    env.update(extra)
    return env


def tune_cmd(graph: Path, config: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "blest.cli.tune", str(graph), "-o", str(config), *extra]


class TTYRun:
    """A subprocess whose stderr is a pseudo-terminal; :meth:`wait_for` reads it."""

    def __init__(self, cmd: list[str], env: dict[str, str], cwd: Path | None = None) -> None:
        master, slave = pty.openpty()
        self.proc = subprocess.Popen(
            cmd, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=slave,
        )  # fmt: skip
        os.close(slave)
        self.master = master
        self.err = b""

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], max(0.0, timeout))
        if not ready:
            return True
        try:
            chunk = os.read(self.master, 65536)
        except OSError:  # EIO: the child closed the terminal
            return False
        self.err += chunk
        return bool(chunk)

    def wait_for(self, needle: bytes, timeout: float = 60.0) -> None:
        end = time.monotonic() + timeout
        while needle not in self.err:
            if time.monotonic() > end or not self._read(end - time.monotonic()):
                raise AssertionError(f"{needle!r} not seen on stderr: {self.err[-800:]!r}")

    def finish(self, timeout: float = 60.0) -> int:
        """Wait for the exit, reading the rest of stderr; the exit status."""
        self._read_until(time.monotonic() + timeout)
        hung = self.proc.poll() is None
        if hung:  # with PYTHONFAULTHANDLER=1 in its environment, SIGABRT prints every stack
            self.proc.send_signal(signal.SIGABRT)
            self._read_until(time.monotonic() + 5)
            self.proc.kill()
        while select.select([self.master], [], [], 0.1)[0] and self._read(0.0):
            pass
        os.close(self.master)
        code = self.proc.wait(5)
        assert not hung, f"no exit within {timeout} s; its stacks: {self.err[-6000:].decode()}"
        return code

    def _read_until(self, end: float) -> None:
        while self.proc.poll() is None and time.monotonic() < end:
            self._read(0.05)


def children(pid: int) -> list[int]:
    """Direct child processes of ``pid`` (Linux /proc)."""
    kids = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            kids += [int(x) for x in (task / "children").read_text().split()]
        except OSError:
            pass
    return kids


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its parent does not count)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


# ---------------------------------------------------------------------- the tests
def _graph(tmp: Path, n: int = 300, seed: int = 5) -> Path:
    import numpy as np

    from blest.datasets import write_mtx
    from blest.datasets.classes import make_directed

    path = tmp / "g.mtx"
    write_mtx(make_directed(np.random.default_rng(seed), n), path)
    return path


def test_ctrl_c_while_compiling_exits_at_once(tmp_path):
    """blest-tune --compile-check with an empty kernel cache, SIGINT once it compiles: exit
    130 (or death by SIGINT after the clean-up: the shell reports 130 too) within ~1 s
    (queued compiles cancelled, running ones killed), no temporary files, no compiler process
    left."""
    import pytest

    from blest.codegen import toolchain

    if not toolchain.include_dirs():
        pytest.skip("needs NVRTC and the CUDA headers")
    out = tmp_path / "out"
    out.mkdir()
    config = out / "g.blest.json"
    cmd = tune_cmd(_graph(tmp_path), config, "--compile-check", "--ordering", "rcm")
    run = TTYRun(cmd, cli_env(tmp_path, PYTHONFAULTHANDLER="1"))
    run.wait_for(b"compiling", timeout=60)
    deadline = time.monotonic() + 10
    while not children(run.proc.pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    workers = children(run.proc.pid)
    assert workers, "no compiler processes started"
    time.sleep(0.2)
    t0 = time.monotonic()
    run.proc.send_signal(2)
    code = run.finish(timeout=10)
    elapsed = time.monotonic() - t0
    assert code in (130, -2) and elapsed < 1.5, (code, elapsed, run.err[-500:])
    assert b"Traceback" not in run.err and b"interrupted" in run.err
    assert not any(alive(pid) for pid in workers)
    assert list(out.iterdir()) == []
    assert not [p for p in (tmp_path / "kernel-cache").rglob("*") if ".tmp" in p.name]


def test_ctrl_c_at_start_up_prints_no_traceback(tmp_path):
    """The SIGINT of a user who changed their mind while the command line was starting."""
    code = (
        "import os, signal, sys, time\n"
        "sys.argv = ['blest', 'variants']\n"
        "import blest.cli\n"
        "os.kill(os.getpid(), signal.SIGINT)\n"
        "time.sleep(5)\n"
        "print('not interrupted')\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code], env=cli_env(tmp_path), capture_output=True, timeout=60
    )
    assert r.returncode == 130, r
    assert b"Traceback" not in r.stderr and b"interrupted" in r.stderr and r.stdout == b""


def test_closed_standard_output_ends_quietly(tmp_path):
    """``blest variants | head -1``: the reader went away; exit 141, nothing on stderr."""
    p = subprocess.Popen(
        [sys.executable, "-m", "blest.cli", "variants"],
        env=cli_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    p.stdout.close()  # before the child writes anything
    err = p.stderr.read()
    assert p.wait(60) == 141, err
    assert err == b""


def test_graph_from_standard_input(tmp_path):
    """A gzipped edge list piped in: read as undirected, levels as text on standard output."""
    import gzip

    import numpy as np

    from blest.graph.io import load_graph
    from blest.reference import bfs_levels

    edges = "# a path and a triangle\n0 1\n1 2\n2 3\n5 6\n6 7\n7 5\n"
    r = subprocess.run(
        [sys.executable, "-m", "blest.cli", "bfs", "-", "1", "--undirected", "--out", "-"],
        input=gzip.compress(edges.encode()),
        env=cli_env(tmp_path),
        capture_output=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    levels = np.array([int(x) for x in r.stdout.split()])
    (tmp_path / "e.txt").write_text(edges)
    want = bfs_levels(load_graph(tmp_path / "e.txt", directed=False), 1)
    assert np.array_equal(levels, want) and list(levels[:5]) == [1, 0, 1, 2, -1]
    assert b"source 1: 4 of 8 reached" in r.stderr


def test_ctrl_c_does_not_wait_for_lingering_threads(tmp_path):
    """A command interrupted while a thread that the interpreter would join at exit still runs
    (here one that never ends; in blest-tune, a compile pool's helper) exits at once."""
    code = (
        "import argparse, os, signal, sys, threading, time\n"
        "sys.argv = ['blest', 'x']\n"
        "import blest.cli\n"
        "from blest.cli.common import run\n"
        "threading.Thread(target=threading.Event().wait).start()\n"
        "def command(args):\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    time.sleep(30)\n"
        "parser = argparse.ArgumentParser(prog='blest')\n"
        "parser.set_defaults(func=command)\n"
        "sys.exit(run(parser, []))\n"
    )
    t0 = time.monotonic()
    r = subprocess.run(
        [sys.executable, "-c", code], env=cli_env(tmp_path), capture_output=True, timeout=60
    )
    assert r.returncode == 130 and time.monotonic() - t0 < 20, r
    assert b"interrupted" in r.stderr and b"Traceback" not in r.stderr
