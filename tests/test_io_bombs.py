"""Hostile inputs that used to hang or exhaust memory end within seconds, under an address-space
limit (``ulimit -v``), with one clean error: gzip streams of NULs or of blank lines, archive
members that are never used, an artifact of 20 GB, and a graph too large for the limit.

Each case runs in a child process whose ``RLIMIT_AS`` leaves it a fixed headroom above what
it has mapped after its imports (as ``ulimit -v`` would), under a wall-clock timeout.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import subprocess
import sys
import time
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from blest.graph.core import Graph
from blest.graph.io import save_graph

MiB = 1 << 20
ROOT = str(Path(__file__).resolve().parents[1])

pytestmark = pytest.mark.skipif(
    not os.path.exists("/proc/self/status") or not hasattr(os, "fork"),
    reason="needs Linux's /proc and resource limits",
)

CHILD = r"""
import json, resource, sys, time
import numpy, scipy.sparse, scipy.io, scipy.linalg  # imported before the limit: OpenBLAS's
import blest, blest.cli, blest.cli.commands, blest.tuning, blest.runtime.factory  # start-up
from blest.errors import BlestError                 # may not cope with a tight one

def mapped():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024

headroom, code = int(sys.argv[1]), sys.argv[2]
hard = resource.getrlimit(resource.RLIMIT_AS)[1]
resource.setrlimit(resource.RLIMIT_AS, (mapped() + headroom, hard))
start = time.perf_counter()
out = {}
try:
    exec(code)
except BlestError as exc:
    out.update(error=type(exc).__name__, message=str(exc))
out["seconds"] = time.perf_counter() - start
print(json.dumps(out))
"""


def run_capped(code: str, headroom: int = 512 * MiB, timeout: float = 120, env=None) -> dict:
    """Run ``code`` in a child with ``headroom`` bytes of address space left; its outcome:
    ``{"result": ...}`` (what it put in ``out``) or ``{"error": class, "message": ...}``, and
    the seconds it took. A traceback or a timeout fails the test."""
    environ = {k: v for k, v in os.environ.items() if k != "BLEST_MAX_GRAPH_BYTES"}
    environ.update(PYTHONPATH=ROOT, OPENBLAS_NUM_THREADS="1", **(env or {}))
    run = subprocess.run(
        [sys.executable, "-c", CHILD, str(headroom), code],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=environ,
    )
    assert run.returncode == 0, f"child failed ({run.returncode}):\n{run.stderr[-3000:]}"
    return json.loads(run.stdout.strip().splitlines()[-1])


def gzip_of(block: bytes, copies: int, tail: bytes = b"") -> bytes:
    """``copies`` gzip members of ``block`` (one compressed once), then ``tail`` gzipped:
    a small file that expands to ``copies * len(block)`` bytes."""
    member = gzip.compress(block, compresslevel=9, mtime=0)
    return member * copies + (gzip.compress(tail, mtime=0) if tail else b"")


# ====================================================================== item 2: gzip bombs
def test_a_gzip_of_nuls_is_refused_at_once_by_every_reader(tmp_path: Path) -> None:
    bomb = gzip_of(b"\0" * (16 * MiB), 384)  # 6 MB on disk, 6 GiB of NUL bytes
    assert len(bomb) < 7 * MiB
    names = ["g.txt.gz", "g.el.gz", "g.graph.gz", "g.mtx.gz", "g.npz.gz", "noname.gz"]
    for name in names:
        (tmp_path / name).write_bytes(bomb)
    code = (
        "from blest.errors import GraphFormatError\n"
        f"for name in {names!r}:\n"
        "    t = time.perf_counter()\n"
        "    try:\n"
        f"        blest.load_graph({str(tmp_path)!r} + '/' + name)\n"
        "        raise SystemExit(name + ' loaded')\n"
        "    except GraphFormatError as exc:\n"
        "        out[name] = [str(exc), time.perf_counter() - t]\n"
    )
    out = run_capped(code, timeout=60)
    for name in names:
        message, seconds = out[name]
        assert seconds < 5, (name, seconds)
        assert name in message
    for name in ("g.txt.gz", "g.el.gz", "g.graph.gz", "noname.gz"):
        assert "NUL byte" in out[name][0]


def test_a_gzip_of_blank_lines_is_skipped_fast_or_refused_at_the_cap(tmp_path: Path) -> None:
    big = tmp_path / "blank.txt.gz"  # 1 MB: 1 GiB of blank lines, then one edge
    big.write_bytes(gzip_of(b"\n" * (16 * MiB), 64, b"0 1\n"))
    small = tmp_path / "blank128.txt.gz"  # 128 MiB of blank lines, then one edge
    small.write_bytes(gzip_of(b"\n" * (16 * MiB), 8, b"0 1\n"))
    assert big.stat().st_size < 1.1 * MiB
    g = Graph.from_arcs([0, 1], [1, 2], 3, directed=True)
    packed = tmp_path / "g.npz.gz"  # a small archive: read without reserving the whole cap
    packed.write_bytes(gzip.compress(save_graph(g, tmp_path / "g.npz").read_bytes()))
    code = (
        f"assert blest.load_graph({str(packed)!r}).content_hash() == {g.content_hash()!r}\n"
        f"g = blest.load_graph({str(small)!r})\n"
        "out['small'] = [g.n, g.nnz, time.perf_counter() - start]\n"
        f"blest.load_graph({str(big)!r})\n"
    )
    out = run_capped(code, headroom=320 * MiB, timeout=120)
    n, arcs, seconds = out["small"]
    assert (n, arcs) == (2, 1) and seconds < 30
    assert out["error"] == "GraphLimitError"  # 1 GiB is beyond what the limit leaves
    assert "decompressed content exceeds" in out["message"]
    assert "RLIMIT_AS" in out["message"] and "BLEST_MAX_GRAPH_BYTES" in out["message"]
    assert out["seconds"] < 60


def test_metis_and_matrix_market_bombs_end_cleanly(tmp_path: Path) -> None:
    cases = {
        "m.graph.gz": gzip_of(b"\n" * (16 * MiB), 64, b"1 2\n"),  # METIS: 1 GiB of lines
        "c.graph.gz": gzip_of(b"% comment\n" * (2 * MiB), 48),  # 1 GiB of comment lines
        "h.mtx.gz": gzip.compress(b"%%MatrixMarket matrix coordinate pattern general\n")
        + gzip_of(b"%\n" * (8 * MiB), 64),  # 1 GiB of comments before the size line
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
    code = (
        f"for name in {sorted(cases)!r}:\n"
        "    t = time.perf_counter()\n"
        "    try:\n"
        f"        blest.load_graph({str(tmp_path)!r} + '/' + name)\n"
        "        out[name] = ['loaded', time.perf_counter() - t]\n"
        "    except BlestError as exc:\n"
        "        out[name] = [type(exc).__name__ + ': ' + str(exc), time.perf_counter() - t]\n"
    )
    out = run_capped(code, headroom=160 * MiB, timeout=180)
    for name in cases:
        outcome, seconds = out[name]
        assert outcome.startswith(("GraphLimitError", "GraphFormatError")), (name, outcome)
        assert seconds < 30, (name, seconds)


# ====================================================================== item 2: archives
def _with_member(path: Path, name: str, declared: int, data: bytes) -> None:
    """Append a member ``name`` that claims to be ``declared`` bytes deflated into ``data``
    (garbage: inflating it fails), patching the method and size fields of its local header and
    its central directory entry (offsets from the zip specification)."""
    with zipfile.ZipFile(path, "a") as z:
        z.writestr(zipfile.ZipInfo(name), data)  # stored, for now
    raw = bytearray(path.read_bytes())
    with zipfile.ZipFile(io.BytesIO(bytes(raw))) as z:
        local = z.getinfo(name).header_offset
    end = raw.rfind(b"PK\x05\x06")
    at = int.from_bytes(raw[end + 16 : end + 20], "little")  # the central directory
    while raw[at : at + 4] == b"PK\x01\x02":
        lengths = [int.from_bytes(raw[at + k : at + k + 2], "little") for k in (28, 30, 32)]
        if raw[at + 46 : at + 46 + lengths[0]] == name.encode():
            break
        at += 46 + sum(lengths)
    else:
        raise AssertionError("member not found in the central directory")
    for header, method_at, size_at in ((local, 8, 22), (at, 10, 24)):
        raw[header + method_at : header + method_at + 2] = (8).to_bytes(2, "little")
        raw[header + size_at : header + size_at + 4] = declared.to_bytes(4, "little")
    path.write_bytes(bytes(raw))


def test_unused_archive_members_are_never_inflated(tmp_path: Path) -> None:
    g = Graph.from_arcs([0, 1, 2], [1, 2, 0], 3, directed=True)
    p = save_graph(g, tmp_path / "g.npz")
    _with_member(p, "junk.npy", 4_000_000_000, b"\xff" * 4_000_000)
    with zipfile.ZipFile(p) as z, pytest.raises(zlib.error):  # inflating it fails
        z.read("junk.npy")
    out = run_capped(f"out['hash'] = blest.load_graph({str(p)!r}).content_hash()")
    assert out["hash"] == g.content_hash() and out["seconds"] < 5
    m = sp.random_array((50, 50), density=0.1, format="csr", rng=np.random.default_rng(1))
    q = tmp_path / "m.npz"
    sp.save_npz(q, m)
    with zipfile.ZipFile(q) as z:  # the values: never read for a csr matrix
        members = {n: z.read(n) for n in z.namelist() if n != "data.npy"}
    with zipfile.ZipFile(q, "w") as z:
        for n, data in members.items():
            z.writestr(n, data)
    _with_member(q, "data.npy", 3_000_000_000, b"\x00" * 3_000_000)
    out = run_capped(f"out['arcs'] = blest.load_graph({str(q)!r}).nnz")
    assert out["arcs"] == m.nnz - int(np.count_nonzero(m.diagonal()))


# ====================================================================== item 7: ulimit -v
def test_a_graph_beyond_ulimit_v_is_refused_by_the_guard_not_a_memory_error(
    tmp_path: Path,
) -> None:
    n = 3_000_000  # a path: needs about 140 MB to build, far beyond 48 MiB of headroom
    ring = sp.csr_array((np.ones(n - 1), np.arange(1, n), np.r_[np.arange(n), n - 1]), shape=(n, n))
    p = tmp_path / "path.npz"
    sp.save_npz(p, ring)
    code = f"out['status'] = blest.cli.main(['bfs', {str(p)!r}, '0'])"
    started = time.perf_counter()
    env = {k: v for k, v in os.environ.items() if k != "BLEST_MAX_GRAPH_BYTES"}
    run = subprocess.run(
        [sys.executable, "-c", CHILD, str(48 * MiB), code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**env, "PYTHONPATH": ROOT, "OPENBLAS_NUM_THREADS": "1"},
    )  # the child's stderr is the command's
    assert run.returncode == 0, run.stderr[-2000:]
    assert json.loads(run.stdout.strip().splitlines()[-1])["status"] == 2
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in run.stderr, run.stderr
    assert "RLIMIT_AS" in lines[0] and "internal error" not in lines[0]
    assert time.perf_counter() - started < 60


# ====================================================================== item 12
def test_a_huge_file_as_artifact_is_refused_before_reading(tmp_path: Path, monkeypatch) -> None:
    from blest.errors import ConfigError
    from blest.tuning import loader
    from blest.tuning.artifact_file import ArtifactFile
    from blest.tuning.tuner import tune, write_tuned

    g = Graph.from_arcs(np.arange(50), (np.arange(50) + 1) % 50, 50, directed=True)
    config = tmp_path / "g.blest.json"
    write_tuned(tune(g, source="g.txt", use_gpu=False, orderings=["rcm"]), config)
    huge = tmp_path / "huge.npz"
    with open(huge, "wb") as f:  # 20 GB, sparse on disk: a zip magic, then a hole
        f.write(b"PK\x03\x04")
        f.truncate(20 * 10**9)
    data = json.loads(config.read_text())
    data["artifact"]["path"] = "huge.npz"
    config.write_text(json.dumps(data))

    def no_reading(self, **kwargs):
        raise AssertionError("the artifact was read before its size was checked")

    start = time.perf_counter()
    with monkeypatch.context() as m:
        m.setattr(ArtifactFile, "read", no_reading)
        with pytest.raises(ConfigError, match="more than the artifact of a graph of 50 vertices"):
            loader.load_tuned(config)
    assert time.perf_counter() - start < 2
    huge.unlink()
    os.mkfifo(huge)  # a FIFO: opening it would block
    with pytest.raises(ConfigError, match="not a regular file"):
        loader.load_tuned(config)
    huge.unlink()
    huge.write_bytes(b"not a zip" * 10)
    with pytest.raises(ConfigError, match="not a .npz archive"):
        loader.load_tuned(config)


@pytest.mark.parametrize("sigma", [4, 8, 16, 32])
def test_the_artifact_size_bound_holds_for_real_artifacts(tmp_path: Path, rng, sigma) -> None:
    """The bound of the check before hashing never refuses a real artifact."""
    from random_graphs import make_directed, make_hubs, make_uniform

    from blest.graph.prepared import Prepared
    from blest.tuning.artifact import save_artifact
    from blest.tuning.artifact_checks import max_artifact_bytes

    graphs = [
        make_directed(rng, 300),
        make_uniform(rng, 2000),
        make_hubs(rng, 500),
        Graph.from_arcs(np.arange(0, 4000, 2), np.arange(1, 4000, 2), 4000, directed=True),
        Graph.from_arcs([], [], 1, directed=False),
    ]
    for g in graphs:
        p = save_artifact(tmp_path / "a.npz", Prepared.from_graph(g, sigma))
        assert p.stat().st_size <= max_artifact_bytes(g.n, g.nnz, sigma), (g, sigma)
