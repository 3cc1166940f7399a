"""Hardening of graph loading: damaged compressed files, non-regular files, the memory guard."""

from __future__ import annotations

import gzip
import io
import os
import socket
import subprocess
import sys
import threading
import time
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest

from blest.errors import GraphFormatError, GraphLimitError
from blest.graph.core import Graph, build_nbytes
from blest.graph.io import ENV_MAX_BYTES, load_graph, save_graph
from blest.graph.io.limits import human_bytes

MM = "%%MatrixMarket matrix coordinate pattern general\n"


def mtx_text(rng: np.random.Generator, n: int, m: int) -> bytes:
    u, v = rng.integers(1, n + 1, m), rng.integers(1, n + 1, m)
    body = "".join(f"{a} {b}\n" for a, b in zip(u, v, strict=True))
    return (MM + f"{n} {n} {m}\n" + body).encode()


def expect_named(path: Path, exc_type=GraphFormatError, **kwargs) -> BaseException:
    with pytest.raises(exc_type) as info:
        load_graph(path, **kwargs)
    assert str(path) in str(info.value)
    if isinstance(info.value, GraphFormatError):
        assert info.value.path == str(path)
    return info.value


# ====================================================================== damaged gzip / zip
def test_truncated_mtx_gz(tmp_path: Path, rng: np.random.Generator) -> None:
    packed = gzip.compress(mtx_text(rng, 500, 4000))
    assert len(packed) > 6000
    p = tmp_path / "cut.mtx.gz"
    p.write_bytes(packed[:5000])
    err = expect_named(p)
    assert "truncated" in str(err)


def test_gzip_with_bad_crc(tmp_path: Path, rng: np.random.Generator) -> None:
    packed = bytearray(gzip.compress(mtx_text(rng, 50, 300)))
    packed[-8] ^= 0xFF  # the CRC-32 of the trailer
    for name in ("crc.mtx.gz", "crc.txt.gz", "crc.graph.gz"):
        p = tmp_path / name
        p.write_bytes(bytes(packed))
        err = expect_named(p)
        assert "CRC" in str(err) or "corrupt" in str(err)


def test_truncated_edge_list_and_metis_gz(tmp_path: Path, rng: np.random.Generator) -> None:
    rows = "".join(f"{a} {b}\n" for a, b in rng.integers(0, 1000, (5000, 2)))
    p = tmp_path / "cut.txt.gz"
    p.write_bytes(gzip.compress(rows.encode())[:4000])
    expect_named(p)
    q = tmp_path / "cut.graph.gz"
    q.write_bytes(gzip.compress(b"3 2\n2\n1 3\n2\n" * 2000)[:300])
    expect_named(q)


@pytest.mark.parametrize("compress", [False, True])
def test_truncated_and_corrupt_npz(
    tmp_path: Path, rng: np.random.Generator, compress: bool
) -> None:
    src, dst = rng.integers(0, 300, (2, 3000))
    g = Graph.from_arcs(src, dst, 300, directed=True)
    whole = save_graph(g, tmp_path / "g.npz", compress=compress).read_bytes()
    for cut in (len(whole) // 3, len(whole) // 2, len(whole) - 30):
        p = tmp_path / f"cut{cut}.npz"
        p.write_bytes(whole[:cut])
        expect_named(p)
    with zipfile.ZipFile(tmp_path / "g.npz") as z:
        info = z.getinfo("out_idx.npy")
    data_at = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    flipped = bytearray(whole)
    flipped[data_at + info.compress_size // 2] ^= 0x5A  # array data: a CRC or hash mismatch
    p = tmp_path / "flip.npz"
    p.write_bytes(bytes(flipped))
    expect_named(p)
    gz = tmp_path / "g.npz.gz"
    gz.write_bytes(gzip.compress(whole)[:-10])
    expect_named(gz)


def test_npz_member_declaring_huge_array_is_not_allocated(tmp_path: Path) -> None:
    g = Graph.from_arcs([0, 1], [1, 2], 3, directed=True)
    save_graph(g, tmp_path / "ok.npz")
    with zipfile.ZipFile(tmp_path / "ok.npz") as z:
        members = {name: z.read(name) for name in z.namelist()}
    member = io.BytesIO()  # an int32 array header claiming 2e11 entries, then 8 bytes of data
    np.lib.format.write_array_header_1_0(
        member, {"descr": "<i4", "fortran_order": False, "shape": (200_000_000_000,)}
    )
    members["out_idx.npy"] = member.getvalue() + b"\x01\x00\x00\x00\x02\x00\x00\x00"
    bad = tmp_path / "huge.npz"
    with zipfile.ZipFile(bad, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    tracemalloc.start()
    try:
        err = expect_named(bad)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "more than it holds" in str(err)
    assert peak < 16 << 20


# ====================================================================== non-regular files
def _load_in_thread(path: Path, seconds: float) -> BaseException | None:
    """load_graph(path) in a daemon thread; its exception, or fail when it blocks."""
    result: list[BaseException | None] = []

    def run() -> None:
        try:
            load_graph(path)
            result.append(None)
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            result.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():  # unblock it: a writer lets open() return
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        pytest.fail(f"load_graph({path}) blocked for {seconds} s")
    return result[0]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "graph.mtx"
    os.mkfifo(fifo)
    err = _load_in_thread(fifo, 5.0)
    assert isinstance(err, GraphFormatError) and err.path == str(fifo)
    assert "FIFO" in str(err)


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null", "/dev/urandom"])
def test_character_devices_are_refused(device: str) -> None:
    if not os.path.exists(device):
        pytest.skip(f"{device} does not exist here")
    start = time.perf_counter()
    err = expect_named(Path(device))
    assert "character device" in str(err)
    assert time.perf_counter() - start < 1.0


@pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="no Unix sockets")
def test_socket_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.txt"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        try:
            s.bind(str(path))
        except OSError as exc:  # e.g. a path too long for sun_path
            pytest.skip(f"cannot bind a Unix socket here: {exc}")
        err = expect_named(path)
    assert "socket" in str(err)


def test_symlink_to_regular_file_is_read(tmp_path: Path) -> None:
    target = tmp_path / "g.txt"
    target.write_text("0 1\n1 2\n")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    assert load_graph(link).nnz == 2


# ====================================================================== memory guard
def test_sparse_ids_refused_quickly_with_relabel_hint(tmp_path: Path) -> None:
    p = tmp_path / "sparse.txt"
    p.write_text("0 1\n1 50000000\n")
    start = time.perf_counter()
    err = expect_named(p, GraphLimitError)
    assert time.perf_counter() - start < 1.0
    text = str(err)
    assert "relabel" in text and "isolated" in text
    need = build_nbytes(50_000_001, 2, directed=True)
    assert human_bytes(need) in text and "GiB" in text
    g = load_graph(p, relabel=True)
    assert g.n == 3 and g.labels.tolist() == [0, 1, 50_000_000] and g.nnz == 2


def test_sparse_matrix_market_size_line(tmp_path: Path) -> None:
    p = tmp_path / "wide.mtx"
    p.write_text(MM + "300000000 300000000 2\n1 2\n2 300000000\n")
    start = time.perf_counter()
    err = expect_named(p, GraphLimitError)
    assert time.perf_counter() - start < 1.0
    assert f"{p}:2:" in str(err) and "relabel" in str(err)
    g = load_graph(p, relabel=True)
    assert g.n == 3 and g.labels.tolist() == [0, 1, 299_999_999]


def test_sparse_in_memory_inputs() -> None:
    import scipy.sparse as sp

    with pytest.raises(GraphLimitError, match="relabel"):
        load_graph(np.array([[0, 1], [1, 40_000_000]]))
    with pytest.raises(GraphLimitError, match="relabel"):
        load_graph(sp.coo_array(([1], ([0], [1])), shape=(40_000_000, 40_000_000)))
    assert load_graph(np.array([[0, 1], [1, 40_000_000]]), relabel=True).n == 3


def test_explicit_limit_replaces_the_sparse_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = tmp_path / "sparse.txt"
    p.write_text("0 1\n1 2500000\n")
    with pytest.raises(GraphLimitError, match="relabel"):
        load_graph(p)
    g = load_graph(p, max_bytes=1 << 30)
    assert g.n == 2_500_001 and g.isolated == 2_500_001 - 3
    monkeypatch.setenv(ENV_MAX_BYTES, "inf")
    assert load_graph(p).n == 2_500_001
    monkeypatch.setenv(ENV_MAX_BYTES, "1M")
    err = expect_named(p, GraphLimitError)
    assert "1.0 MiB" in str(err) and ENV_MAX_BYTES in str(err)
    monkeypatch.setenv(ENV_MAX_BYTES, "lots")
    with pytest.raises(ValueError, match=ENV_MAX_BYTES):
        load_graph(p)


def test_byte_limit(tmp_path: Path, rng: np.random.Generator) -> None:
    src, dst = rng.integers(0, 1000, (2, 5000))
    p = tmp_path / "g.txt"
    p.write_text("".join(f"{a} {b}\n" for a, b in zip(src, dst, strict=True)))
    n = int(max(src.max(), dst.max())) + 1
    need = build_nbytes(n, 5000, directed=True)
    assert load_graph(p, max_bytes=need).nnz > 0
    err = expect_named(p, GraphLimitError, max_bytes=need - 1)
    assert human_bytes(need) in str(err)
    with pytest.raises(GraphLimitError):
        load_graph(np.stack([src, dst]), max_bytes=need - 1)
    with pytest.raises(ValueError, match="positive"):
        load_graph(p, max_bytes=0)


@pytest.mark.parametrize("directed", [True, False])
def test_estimate_bounds_what_from_arcs_allocates(rng: np.random.Generator, directed: bool) -> None:
    for n, m in ((1000, 200_000), (300_000, 1000), (100_000, 100_000)):
        src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
        tracemalloc.start()
        Graph.from_arcs(src, dst, n, directed=directed)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        estimate = build_nbytes(n, m, directed=directed)
        assert peak <= estimate <= 2 * peak, (n, m, peak, estimate)


def test_human_bytes() -> None:
    assert human_bytes(512) == "512 bytes"
    assert human_bytes(1536) == "1.5 KiB"
    assert human_bytes(16 * 2**30) == "16.0 GiB"


def test_guard_messages_have_no_line_for_objects() -> None:
    # The limit message of an in-memory input names it instead of a file.
    with pytest.raises(GraphLimitError, match="edge_index"):
        load_graph(np.array([[0, 1], [1, 2]]), max_bytes=10)


# ====================================================================== SciPy reader crashes
CRASHERS = {  # SciPy 1.17's fast_matrix_market dies with SIGSEGV on these bodies
    "trailing space, no final newline": (b"3 1 1.5\n2 1 2 ", None),
    "value with a suffix, no final newline": (b"3 1 1.5\n2 1 2x", None),
    "NUL after a value": (b"3 1 1\x00.5\n2 1 2\n", 3),
    "NUL after the last token": (b"3 1 1.5 \x00\n2 1 2\n", 3),
}


@pytest.mark.parametrize("case", sorted(CRASHERS))
@pytest.mark.parametrize("gz", [False, True])
def test_inputs_that_crash_scipys_reader(tmp_path: Path, case: str, gz: bool) -> None:
    """Each body loads or is refused, in a child process so that a crash fails the test."""
    body, nul_line = CRASHERS[case]
    text = b"%%MatrixMarket matrix coordinate real general\n3 3 2\n" + body
    p = tmp_path / ("g.mtx.gz" if gz else "g.mtx")
    p.write_bytes(gzip.compress(text) if gz else text)
    code = (
        "import sys\nfrom blest import load_graph\nfrom blest.errors import GraphFormatError\n"
        "try:\n    g = load_graph(sys.argv[1])\n    print('arcs', g.nnz)\n"
        "except GraphFormatError as e:\n    print('line', e.line, e)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    run = subprocess.run(
        [sys.executable, "-c", code, str(p)], capture_output=True, text=True, env=env, timeout=60
    )
    assert run.returncode == 0, f"child died with {run.returncode}: {run.stderr[-500:]}"
    if nul_line is None:
        assert run.stdout.split() == ["arcs", "2"]
    else:
        assert run.stdout.startswith(f"line {nul_line} ") and "NUL byte" in run.stdout
