"""Inputs a user brings on a shared machine: an output named as one of the command's inputs
leaves the input byte-identical; ``--sources`` refuses devices and FIFOs; a malformed
``BLEST_MAX_GRAPH_BYTES`` and a deeply nested config are one-line errors; the memory guard
reads the cgroup limits; FIFOs and devices as configs do not block."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from random_graphs import make_directed

from blest.cli import main, tune_main
from blest.errors import ArgumentError, BlestError
from blest.graph.io import ENV_MAX_BYTES, load_graph
from blest.graph.io import memory as memory_mod
from blest.graph.io.limits import memory_limit

ROOT = str(Path(__file__).resolve().parents[1])


def _one_error(capsys, argv, run=main, match: str = "") -> str:
    code = run(argv)
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, (argv, code, err)
    assert len(lines) == 1 and "Traceback" not in err, err
    assert match in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def pair(tmp_path, rng):
    """A graph file, its tuned config and artifact (tuned on the CPU), and a sources file."""
    g = make_directed(rng, 40)
    graph = tmp_path / "g.txt"
    tails = np.repeat(np.arange(g.n), np.diff(g.out_ptr))
    graph.write_text("".join(f"{u} {v}\n" for u, v in zip(tails, g.out_idx, strict=True)))
    config = tmp_path / "g.blest.json"
    assert tune_main([str(graph), "-o", str(config), "--quiet"]) == 0
    artifact = tmp_path / json.loads(config.read_text())["artifact"]["path"]
    sources = tmp_path / "ids.txt"
    sources.write_text("0 1 2\n")
    return {"graph": graph, "config": config, "artifact": artifact, "sources": sources}


# ====================================================================== item 1
def test_no_output_over_its_own_input(tmp_path, pair, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    files = {p: p.read_bytes() for p in pair.values()}
    (tmp_path / "link.txt").symlink_to(pair["graph"])
    os.link(pair["sources"], tmp_path / "hard.txt")
    np.save(tmp_path / "ids.npy", np.array([0, 1, 2]))
    files[tmp_path / "ids.npy"] = (tmp_path / "ids.npy").read_bytes()
    cases = [
        (["bfs", "g.txt", "0", "--out", "g.txt"], "is the input graph"),
        (["bfs", "g.txt", "0", "--out", "./sub/../g.txt"], "is the input graph"),
        (["bfs", str(pair["graph"]), "0", "--out", "link.txt"], "is the input graph"),
        (["closeness", "g.txt", "-o", "g.txt"], "is the input graph"),
        (["closeness", "link.txt", "-o", str(pair["graph"])], "is the input graph"),
        (["closeness", "g.txt", "-o", "ids.txt", "--sources", "ids.txt"], "sources file"),
        (["closeness", "g.txt", "-o", "hard.txt", "--sources", "ids.txt"], "sources file"),
        (["closeness", "g.blest.json", "-o", "ids.npy", "--sources", "ids.npy"], "sources"),
        (["closeness", "g.blest.json", "-o", "g.blest.json"], ""),  # not a score format
        (["bfs", "g.blest.json", "0", "--out", pair["artifact"].name], ""),  # nor a level one
    ]
    (tmp_path / "sub").mkdir()
    for argv, match in cases:
        _one_error(capsys, argv, match=match)
        for path, data in files.items():
            assert path.read_bytes() == data, (argv, path)
    # A graph named as the config's artifacts are would be removed by the next tune.
    victim = tmp_path / "x.blest.0123456789ab.npz"
    victim.write_bytes(b"user data")
    _one_error(capsys, [victim.name, "-o", "x.blest.json"], run=tune_main, match="artifacts")
    assert victim.read_bytes() == b"user data"
    # Other outputs still work.
    assert main(["bfs", "g.txt", "0", "--out", "levels.txt"]) == 0
    assert main(["closeness", "g.blest.json", "-o", "c.txt", "--sources", "ids.txt"]) == 0
    assert len((tmp_path / "c.txt").read_text().split()) == 3


# ====================================================================== item 6
def test_sources_must_be_a_regular_file(tmp_path, pair, capsys):
    g = str(pair["graph"])
    out = str(tmp_path / "c.txt")
    for device in ("/dev/zero", "/dev/null"):
        if os.path.exists(device):
            _one_error(capsys, ["closeness", g, "-o", out, "--sources", device], match=device)
    fifo = tmp_path / "ids.fifo"
    os.mkfifo(fifo)
    done = []
    t = threading.Thread(
        target=lambda: done.append(main(["closeness", g, "-o", out, "--sources", str(fifo)])),
        daemon=True,
    )
    t.start()
    t.join(10)
    if t.is_alive():  # unblock the reader, then fail
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("--sources FIFO blocked")
    assert done == [2] and "FIFO" in capsys.readouterr().err
    assert not (tmp_path / "c.txt").exists()


def test_sources_larger_than_the_memory_limit_are_refused(tmp_path, pair, capsys, monkeypatch):
    ids = tmp_path / "many.txt"
    ids.write_text("0\n" * 100_000)  # 200 kB: too much for a 1 MB limit
    monkeypatch.setenv(ENV_MAX_BYTES, "1M")
    argv = ["closeness", str(pair["graph"]), "-o", str(tmp_path / "c.txt"), "--sources", str(ids)]
    _one_error(capsys, argv, match=ENV_MAX_BYTES)


# ====================================================================== item 7
@pytest.mark.parametrize("value", ["lots", "-5", "0", "8 G G", "nan"])
def test_a_malformed_limit_variable_is_a_clean_error(tmp_path, capsys, monkeypatch, value):
    p = tmp_path / "g.txt"
    p.write_text("0 1\n1 2\n")
    monkeypatch.setenv(ENV_MAX_BYTES, value)
    with pytest.raises(ArgumentError, match=ENV_MAX_BYTES):
        load_graph(p)
    with pytest.raises(BlestError, match=ENV_MAX_BYTES):
        load_graph(np.array([[0, 1], [1, 2]]))
    _one_error(capsys, ["bfs", str(p), "0"], match=ENV_MAX_BYTES)
    _one_error(capsys, ["info", str(p)], match=ENV_MAX_BYTES)


@pytest.mark.parametrize("bad", [0, -1, math.nan, "8G", True])
def test_a_bad_max_bytes_is_an_argument_error(tmp_path, bad):
    p = tmp_path / "g.txt"
    p.write_text("0 1\n")
    with pytest.raises(ArgumentError, match="max_bytes"):
        load_graph(p, max_bytes=bad)


def test_deeply_nested_configs_are_config_errors(tmp_path, capsys):
    for depth in (40, 100_000):  # past the depth a config can have, and past Python's stack
        p = tmp_path / f"deep{depth}.blest.json"
        p.write_text("[" * depth + "]" * depth)
        for argv in (["info", str(p)], ["bfs", str(p), "0"], ["source", str(p)]):
            _one_error(capsys, argv, match="nests its JSON more than")
    obj = tmp_path / "obj.blest.json"
    obj.write_text('{"a": ' * 5000 + "1" + "}" * 5000)
    _one_error(capsys, ["info", str(obj)], match="nests")


def test_configs_that_are_not_regular_files_do_not_block(tmp_path):
    fifo = tmp_path / "c.blest.json"
    os.mkfifo(fifo)
    run = subprocess.run(
        [sys.executable, "-m", "blest.cli", "info", str(fifo)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": ROOT},
    )
    assert run.returncode == 2 and "not a regular file" in run.stderr
    assert "Traceback" not in run.stderr


def _cgroup_tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "cgroup"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_cgroup_v2_limits_of_the_group_and_its_parents(tmp_path):
    root = _cgroup_tree(
        tmp_path,
        {
            "user.slice/memory.max": "max\n",
            "user.slice/memory.current": "100\n",
            "user.slice/job/memory.max": str(3 << 30) + "\n",
            "user.slice/job/memory.current": str(2 << 30) + "\n",
            "user.slice/job/memory.stat": f"anon 5\ninactive_file {256 << 20}\nactive_file 9\n",
            "memory.max": str(8 << 30),  # the root's limit (in a namespace): looser
            "memory.current": str(1 << 30),
        },
    )
    proc = tmp_path / "cgroup.txt"
    proc.write_text("0::/user.slice/job\n")
    found = memory_mod.cgroup_headroom(proc, root)
    assert min(h.nbytes for h in found) == (1 << 30) + (256 << 20)
    assert any("job/memory.max" in h.origin for h in found)
    proc.write_text("0::/elsewhere\n")  # not visible here: the mount's own files count
    assert [h.nbytes for h in memory_mod.cgroup_headroom(proc, root)] == [7 << 30]


def test_cgroup_v1_limit(tmp_path):
    root = _cgroup_tree(
        tmp_path,
        {
            "memory/docker/abc/memory.limit_in_bytes": str(2 << 30),
            "memory/docker/abc/memory.usage_in_bytes": str(1 << 30),
            "memory/docker/abc/memory.stat": f"total_inactive_file {128 << 20}\n",
            "memory/memory.limit_in_bytes": "9223372036854771712",  # no limit
            "memory/memory.usage_in_bytes": "5",
        },
    )
    proc = tmp_path / "cgroup.txt"
    proc.write_text("12:cpu:/\n4:memory:/docker/abc\n0::/\n")
    found = memory_mod.cgroup_headroom(proc, root)
    assert [h.nbytes for h in found] == [(1 << 30) + (128 << 20)]


def test_the_guard_takes_the_smallest_headroom(monkeypatch):
    from blest.graph.io.memory import Headroom

    monkeypatch.delenv(ENV_MAX_BYTES, raising=False)
    monkeypatch.setattr(memory_mod, "_mem_available", lambda: Headroom(50 << 30, "available"))
    monkeypatch.setattr(memory_mod, "rlimit_headroom", lambda: [Headroom(3 << 30, "ulimit -v")])
    monkeypatch.setattr(memory_mod, "cgroup_headroom", lambda: [Headroom(2 << 30, "cgroup")])
    limit = memory_limit()
    assert (limit.nbytes, limit.origin) == (2 << 30, "cgroup")
    from blest.runtime.arguments import host_memory_limit

    assert host_memory_limit() == 2 << 30


def test_rlimit_headroom_in_a_child():
    code = (
        "import resource\n"
        "from blest.graph.io.memory import _proc_status_kib, available_memory\n"
        "hard = resource.getrlimit(resource.RLIMIT_AS)[1]\n"
        "resource.setrlimit(resource.RLIMIT_AS, (_proc_status_kib('VmSize') + (300 << 20), hard))\n"
        "room = available_memory()\n"
        "print(room.nbytes, room.origin)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": ROOT},
    )
    assert run.returncode == 0, run.stderr
    nbytes, origin = run.stdout.split(" ", 1)
    assert 0 < int(nbytes) <= 300 << 20 and "RLIMIT_AS" in origin and "ulimit -v" in origin
