"""Property-based fuzzing of every file loader.

Random bytes, random gzip streams (several members, some expanding a thousandfold, cut short or
damaged), and valid files of every format (SciPy's ``save_npz`` included) damaged by truncation,
byte flips, insertions, deletions and line shuffles, must either load as a valid cleaned Graph
or raise GraphFormatError / GraphLimitError: never another exception, never a hang. The
prepared-artifact and tuned-config readers get the same, and may only raise ConfigError. The
tests run under a memory cap: an address-space limit (``RLIMIT_AS``) 2 GiB above what the
process has mapped, which the loaders' memory guard sees. Set BLEST_FUZZ_EXAMPLES to run more
examples per test than the default 150.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import signal
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from blest.errors import ConfigError, GraphFormatError, GraphLimitError
from blest.graph.core import Graph
from blest.graph.io import ENV_MAX_BYTES, fastcsv, load_graph, save_graph

OUTCOMES = {"loaded": 0, "refused": 0}
SETTINGS = settings(
    max_examples=int(os.environ.get("BLEST_FUZZ_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
NAMES = ["g.mtx", "g.mtx.gz", "g.txt", "g.csv", "g.graph", "g.npz", "g.el.gz", "noext"]
FORMATS = [None, None, None, "mtx", "edgelist", "metis", "npz", "wel"]


# ====================================================================== seed files
def _mtx(symmetric: bool, field: str) -> bytes:
    rows = [
        "%%MatrixMarket matrix coordinate " + field + (" symmetric" if symmetric else " general")
    ]
    rows += ["% comment", "6 6 7"]
    value = {"pattern": "", "real": " 1.5", "integer": " 3"}[field]
    rows += [f"{u} {v}{value}" for u, v in [(2, 1), (3, 1), (3, 2), (4, 4), (5, 3), (6, 5), (6, 1)]]
    return ("\n".join(rows) + "\n").encode()


def _metis(fmt: str) -> bytes:
    adj = {1: [2, 3], 2: [1, 3], 3: [1, 2, 4], 4: [3], 5: []}
    lines = ["% METIS", f"5 4 {fmt}" + (" 2" if fmt == "11" else "")]
    for v in range(1, 6):
        lead = ["7", "8"] if fmt == "11" else []
        nbrs = [f"{u} 9" if fmt == "11" else str(u) for u in adj[v]]
        lines.append(" ".join(lead + nbrs))
    return ("\n".join(lines) + "\n").encode()


def _npz(compress: bool) -> bytes:
    g = Graph.from_arcs([0, 1, 2, 3, 3], [1, 2, 0, 0, 3], 5, directed=True)
    with tempfile.TemporaryDirectory() as d:
        return save_graph(g, Path(d) / "g.npz", compress=compress).read_bytes()


def _scipy_npz(kind: str) -> bytes:
    m = sp.coo_array(([1.0, 0.0, 2.0, 3.0], ([0, 1, 2, 3], [1, 2, 0, 3])), shape=(4, 4))
    with tempfile.TemporaryDirectory() as d:
        sp.save_npz(Path(d) / "m.npz", m.asformat(kind), compressed=kind != "coo")
        return (Path(d) / "m.npz").read_bytes()


SEEDS = {
    "mtx": _mtx(False, "pattern"),
    "mtx-sym": _mtx(True, "real"),
    "mtx-int": _mtx(False, "integer"),
    "edges": b"# edges\n0 1\n1 2\n2 0\n2 2\n3 1 0.5\n",
    "csv": b"source,target,weight\n0,1,1\n1,2,2\n2,0,3\n4,0,1\n",
    "metis": _metis("0"),
    "metis-11": _metis("11"),
    "npz": _npz(False),
    "npz-deflate": _npz(True),
    "scipy-csr": _scipy_npz("csr"),
    "scipy-coo": _scipy_npz("coo"),
}


# ====================================================================== checks
def check_graph(g: Graph) -> None:
    """Structural invariants every loaded graph satisfies."""
    n = g.n
    assert n >= 0
    for ptr, idx in ((g.out_ptr, g.out_idx), (g.in_ptr, g.in_idx)):
        assert ptr.dtype == np.int64 and idx.dtype == np.int32
        assert ptr.shape == (n + 1,) and ptr[0] == 0 and ptr[-1] == idx.size
        assert np.all(np.diff(ptr) >= 0)
        assert idx.size == 0 or (idx.min() >= 0 and idx.max() < n)
        rows = np.repeat(np.arange(n), np.diff(ptr))
        assert not np.any(rows == idx), "self loop kept"
        same_row = rows[1:] == rows[:-1]
        assert np.all(idx[1:][same_row] > idx[:-1][same_row]), "unsorted row or duplicate"
    out, inn = _arc_set(g.out_ptr, g.out_idx), _arc_set(g.in_ptr, g.in_idx)
    assert inn == {(v, u) for u, v in out}
    if not g.directed:
        assert out == inn


def _arc_set(ptr: np.ndarray, idx: np.ndarray) -> set[tuple[int, int]]:
    rows = np.repeat(np.arange(ptr.size - 1), np.diff(ptr))
    return set(zip(rows.tolist(), idx.tolist(), strict=True))


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Fail (TimeoutError) instead of hanging."""

    def expire(signum, frame):  # noqa: ARG001
        raise TimeoutError(f"loading took more than {seconds} s")

    old = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _mapped() -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


@contextmanager
def memory_cap(headroom: int = 2 << 30) -> Iterator[None]:
    """An address-space limit ``headroom`` bytes above what is mapped now (as ``ulimit -v``
    sets one), lifted afterwards; the memory guard then sees at most that much."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    mapped = _mapped()
    old = resource.getrlimit(resource.RLIMIT_AS)
    if mapped is None:
        yield
        return
    soft = mapped + headroom
    if old[1] != resource.RLIM_INFINITY:
        soft = min(soft, old[1])
    resource.setrlimit(resource.RLIMIT_AS, (soft, old[1]))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, old)


@pytest.fixture(autouse=True)
def _guard_sees_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_MAX_BYTES, raising=False)


def try_load(path: Path, content: bytes, **kwargs) -> None:
    if path.name.endswith(".gz") and content[:2] != b"\x1f\x8b":
        content = gzip.compress(content, mtime=0)
    path.write_bytes(content)
    with time_limit(10), memory_cap(), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a name the content contradicts
        try:
            g = load_graph(path, **kwargs)
        except (GraphFormatError, GraphLimitError):
            OUTCOMES["refused"] += 1
            return
    OUTCOMES["loaded"] += 1
    check_graph(g)


# ====================================================================== strategies
@st.composite
def mutated(draw, seed_names=tuple(SEEDS)) -> bytes:
    data = bytearray(SEEDS[draw(st.sampled_from(seed_names))])
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["truncate", "flip", "insert", "delete", "shuffle", "dup"]))
        if not data:
            break
        i = draw(st.integers(0, len(data) - 1))
        if op == "truncate":
            del data[i:]
        elif op == "flip":
            data[i] ^= draw(st.integers(1, 255))
        elif op == "insert":
            data[i:i] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete":
            del data[i : i + draw(st.integers(1, 8))]
        else:
            lines = bytes(data).split(b"\n")
            if op == "shuffle":
                lines = draw(st.permutations(lines))
            else:
                j = draw(st.integers(0, len(lines) - 1))
                lines.insert(j, lines[j])
            data = bytearray(b"\n".join(lines))
    return bytes(data)


OPTIONS = st.fixed_dictionaries(
    {
        "directed": st.sampled_from([None, True, False]),
        "relabel": st.booleans(),
        "format": st.sampled_from(FORMATS),
    }
)


# ====================================================================== tests
@pytest.mark.parametrize("name", sorted(SEEDS))
def test_seeds_load(tmp_path: Path, name: str) -> None:
    suffix = {
        "mtx": ".mtx",
        "edges": ".txt",
        "csv": ".csv",
        "metis": ".graph",
        "npz": ".npz",
        "scipy": ".npz",
    }
    path = tmp_path / ("g" + suffix[name.split("-")[0]])
    path.write_bytes(SEEDS[name])
    check_graph(load_graph(path))


@SETTINGS
@given(content=st.binary(max_size=400), name=st.sampled_from(NAMES), options=OPTIONS)
def test_random_bytes(tmp_path: Path, content: bytes, name: str, options: dict) -> None:
    try_load(tmp_path / name, content, **options)


@SETTINGS
@given(content=mutated(), name=st.sampled_from(NAMES), options=OPTIONS)
def test_mutated_files(tmp_path: Path, content: bytes, name: str, options: dict) -> None:
    try_load(tmp_path / name, content, **options)


@SETTINGS
@given(content=mutated(("npz", "npz-deflate")), gz=st.booleans())
def test_mutated_archives(tmp_path: Path, content: bytes, gz: bool) -> None:
    try_load(tmp_path / ("g.npz.gz" if gz else "g.npz"), content)


@SETTINGS
@given(content=mutated(("mtx", "mtx-sym", "mtx-int")), gz=st.booleans())
def test_mutated_matrix_market(tmp_path: Path, content: bytes, gz: bool) -> None:
    try_load(tmp_path / ("g.mtx.gz" if gz else "g.mtx"), content)


@SETTINGS
@given(content=mutated(("metis", "metis-11")), name=st.sampled_from(["g.graph", "g.txt", "x"]))
def test_mutated_metis(tmp_path: Path, content: bytes, name: str) -> None:
    try_load(tmp_path / name, content)


@SETTINGS
@given(cut=st.integers(2, 400), at=st.integers(0, 400), xor=st.integers(0, 255))
def test_damaged_gzip_layer(tmp_path: Path, cut: int, at: int, xor: int) -> None:
    """A valid file gzip-compressed, then cut short and one byte changed."""
    packed = bytearray(gzip.compress(SEEDS["mtx"], mtime=0))
    packed[at % len(packed)] ^= xor
    try_load(tmp_path / "g.mtx.gz", bytes(packed[:cut]))


ENGINES = [e for e in ("pyarrow", "pandas") if importlib.util.find_spec(e) is not None]


@pytest.mark.skipif(not ENGINES, reason="neither pyarrow nor pandas is installed")
@SETTINGS
@given(content=mutated(("edges", "csv")), relabel=st.booleans(), data=st.data())
def test_fast_path_agrees_on_mutated_edge_lists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: bytes, relabel: bool, data
) -> None:
    """With pyarrow / pandas, the same graph or the same error text as the line parser."""
    path = tmp_path / "g.txt"
    path.write_bytes(content)
    monkeypatch.setattr(fastcsv, "MIN_BYTES", 0)
    results = []
    for engines in ([data.draw(st.sampled_from(ENGINES))], []):
        monkeypatch.setattr(fastcsv, "ENGINES", engines)
        try:
            g = load_graph(path, relabel=relabel)
            results.append((g.content_hash(), g.report, None if g.labels is None else g.labels))
        except (GraphFormatError, GraphLimitError) as exc:
            results.append(f"{type(exc).__name__}: {exc}")
    fast, slow = results
    if isinstance(slow, str) or isinstance(fast, str):
        assert fast == slow
    else:
        assert fast[:2] == slow[:2] and np.array_equal(fast[2], slow[2])


# ====================================================================== random gzip streams
@st.composite
def gzip_streams(draw) -> bytes:
    """Several gzip members of random or damaged bytes, maybe one that expands a thousandfold,
    the whole maybe cut short or with a byte changed."""
    parts = draw(st.lists(st.one_of(st.binary(max_size=300), mutated()), min_size=1, max_size=3))
    members = [gzip.compress(p, compresslevel=draw(st.integers(0, 9)), mtime=0) for p in parts]
    if draw(st.booleans()):
        unit = draw(st.sampled_from([b"\n", b"\0", b" ", b"%\n", b"# c\n", b"0 1\n", b"1"]))
        members.insert(draw(st.integers(0, len(members))), gzip.compress(unit * (1 << 20)))
    data = bytearray(b"".join(members))
    if draw(st.booleans()):
        data[draw(st.integers(0, len(data) - 1))] ^= draw(st.integers(1, 255))
    if draw(st.booleans()):
        del data[draw(st.integers(1, len(data))) :]
    return bytes(data)


GZ_NAMES = ["g.txt.gz", "g.mtx.gz", "g.graph.gz", "g.npz.gz", "g.csv.gz", "noext.gz", "g.gz"]


@SETTINGS
@given(content=gzip_streams(), name=st.sampled_from(GZ_NAMES), options=OPTIONS)
def test_random_gzip_streams(tmp_path: Path, content: bytes, name: str, options: dict) -> None:
    try_load(tmp_path / name, content, **options)


@SETTINGS
@given(content=mutated(("scipy-csr", "scipy-coo")), gz=st.booleans(), options=OPTIONS)
def test_mutated_scipy_archives(tmp_path: Path, content: bytes, gz: bool, options: dict) -> None:
    options = {**options, "format": None}
    try_load(tmp_path / ("m.npz.gz" if gz else "m.npz"), content, **options)


# ====================================================================== artifacts and configs
def _tuned_pair() -> tuple[bytes, bytes]:
    """A tuned config (on the CPU) and its artifact, as bytes."""
    from blest.tuning.tuner import tune, write_tuned

    g = Graph.from_arcs([0, 1, 2, 3, 4, 5], [1, 2, 3, 4, 5, 0], 6, directed=True)
    with tempfile.TemporaryDirectory() as d:
        cfg = write_tuned(
            tune(g, source="g.txt", use_gpu=False, orderings=["rcm"]), Path(d) / "g.blest.json"
        )
        return (Path(d) / "g.blest.json").read_bytes(), (Path(d) / cfg.artifact).read_bytes()


PAIR: list[tuple[bytes, bytes]] = []


def _pair() -> tuple[bytes, bytes]:
    if not PAIR:
        PAIR.append(_tuned_pair())
    return PAIR[0]


@st.composite
def damaged(draw, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, max(0, len(out) - 1)))
        op = draw(st.sampled_from(["flip", "cut", "insert"]))
        if op == "flip" and out:
            out[i] ^= draw(st.integers(1, 255))
        elif op == "cut":
            del out[i:]
        else:
            out[i:i] = draw(st.binary(min_size=1, max_size=16))
    return bytes(out)


@SETTINGS
@given(data=st.data(), random=st.booleans())
def test_artifact_reader_gives_config_errors_only(tmp_path: Path, data, random: bool) -> None:
    from blest.tuning.artifact import load_artifact

    _, artifact = _pair()
    content = data.draw(st.binary(max_size=400) if random else damaged(artifact))
    p = tmp_path / "a.npz"
    p.write_bytes(content)
    with time_limit(10), memory_cap():
        try:
            prep = load_artifact(p)
        except ConfigError:
            return
    check_graph(prep.graph)


@SETTINGS
@given(data=st.data(), random=st.booleans())
def test_config_reader_gives_config_errors_only(tmp_path: Path, data, random: bool) -> None:
    from blest.tuning.config import TunedConfig
    from blest.tuning.loader import load_prepared

    config, artifact = _pair()
    content = data.draw(st.binary(max_size=400) if random else damaged(config))
    name = json.loads(config)["artifact"]["path"]
    (tmp_path / name).write_bytes(artifact)
    p = tmp_path / "g.blest.json"
    p.write_bytes(content)
    with time_limit(10), memory_cap():
        try:
            load_prepared(TunedConfig.read(p))
        except ConfigError:
            pass
