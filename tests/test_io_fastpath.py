"""The optional pyarrow / pandas edge-list path: bit-identical graphs, same errors as without.

Tests that need an engine skip when neither pyarrow nor pandas is installed.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from blest.errors import BlestError
from blest.graph.io import fastcsv, load_graph

ENGINES = [e for e in ("pyarrow", "pandas") if importlib.util.find_spec(e) is not None]
needs_engine = pytest.mark.skipif(not ENGINES, reason="neither pyarrow nor pandas is installed")


@pytest.fixture
def any_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let small test bodies take the fast path."""
    monkeypatch.setattr(fastcsv, "MIN_BYTES", 0)


def load_with(monkeypatch: pytest.MonkeyPatch, engines: list[str], path: Path, **kwargs):
    """load_graph with only ``engines`` tried; the graph or the error's text."""
    monkeypatch.setattr(fastcsv, "ENGINES", engines)
    try:
        return load_graph(path, **kwargs)
    except BlestError as exc:
        return f"{type(exc).__name__}: {exc}"


def layout(rng: np.random.Generator, src: np.ndarray, dst: np.ndarray) -> str:
    """A random plain layout of the arcs: separator, extra columns, header, comments, CRLF."""
    sep = ["\t", ",", " "][int(rng.integers(0, 3))]
    extra = int(rng.integers(0, 3))
    cols = [src, dst] + [rng.integers(0, 10**6, src.size) for _ in range(extra)]
    rows = [sep.join(str(c[i]) for c in cols) for i in range(src.size)]
    head = []
    if rng.random() < 0.5:
        head.append("# comment before the data")
    if rng.random() < 0.5:
        head.append(sep.join(["source", "target", "w1", "w2"][: 2 + extra]))
    end = "\r\n" if rng.random() < 0.3 else "\n"
    return end.join(head + rows) + (end if rng.random() < 0.8 else "")


@needs_engine
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("relabel", [False, True])
def test_fast_path_is_bit_identical(
    tmp_path: Path,
    rng: np.random.Generator,
    monkeypatch: pytest.MonkeyPatch,
    any_size: None,
    engine: str,
    relabel: bool,
) -> None:
    calls = []
    reader = fastcsv._READERS[engine]
    monkeypatch.setitem(fastcsv._READERS, engine, lambda *a: calls.append(1) or reader(*a))
    for k in range(6):
        n, m = int(rng.integers(2, 10**6)), int(rng.integers(1, 3000))
        src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
        p = tmp_path / f"g{k}.txt"
        p.write_text(layout(rng, src, dst))
        before = len(calls)
        fast = load_with(monkeypatch, [engine], p, relabel=relabel)
        assert len(calls) > before  # the file took the fast path (a call per piece read)
        slow = load_with(monkeypatch, [], p, relabel=relabel)
        assert not isinstance(fast, str), fast
        assert fast.content_hash() == slow.content_hash() and fast.report == slow.report
        for name in ("out_ptr", "out_idx", "in_ptr", "in_idx"):
            assert np.array_equal(getattr(fast, name), getattr(slow, name))
        if relabel:
            assert np.array_equal(fast.labels, slow.labels)


@needs_engine
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    "text",
    [
        "0 1\n1 2 3\n2 0\n",  # ragged columns
        "0 1\n5\n1 2\n",  # one column
        "0 1\n1  2\n",  # two separators: an empty field
        " 0 1\n1 2\n",  # leading separator
        "0 1\n\n1 2\n",  # blank line (plain, read alike)
        "0 1 \n1 2 \n",  # trailing separator on every line (plain, read alike)
        "0 1\n2 99999999999999999999\n",  # beyond int64
        f"0 1\n2 {2**31 - 2}\n",  # beyond the vertex limit
        "0 1\n2 3",  # no final newline
    ],
)
def test_fast_path_edge_cases_agree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, any_size: None, engine: str, text: str
) -> None:
    p = tmp_path / "odd.txt"
    p.write_text(text)
    for relabel in (False, True):
        fast = load_with(monkeypatch, [engine], p, relabel=relabel)
        slow = load_with(monkeypatch, [], p, relabel=relabel)
        if isinstance(slow, str):
            assert fast == slow  # the same error text: file, line and words
        else:
            assert fast.content_hash() == slow.content_hash() and fast.report == slow.report


@pytest.mark.parametrize(
    "body",
    [
        b"0 1\n# comment\n1 2\n",
        b"0 1\n-1 2\n",
        b"0 1\n+1 2\n",
        b"0 1\n1 2.5\n",
        b"0,1\n1 2\n",  # mixed separators
        b"0 1\r1 2\n",  # a lone carriage return
        b"0 1\nsrc dst\n",
        b'0 1\n"1" 2\n',
    ],
)
def test_unusual_bodies_never_reach_an_engine(body: bytes) -> None:
    assert fastcsv._plain_delimiter(body, 0) is None


def test_plain_bodies_and_their_delimiter() -> None:
    assert fastcsv._plain_delimiter(b"0 1\r\n1 2\r\n", 0) == b" "
    assert fastcsv._plain_delimiter(b"0\t1\n1\t2\n", 0) == b"\t"
    assert fastcsv._plain_delimiter(b"a,b\n0,1\n1,2", 4) == b","


def test_engine_results_are_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, any_size: None
) -> None:
    """Without any real engine: a reader's odd result sends the file to the line parser."""
    p = tmp_path / "g.txt"
    p.write_text("0 1\n1 2\n")
    results = {
        "negative": (np.array([0, -1]), np.array([1, 2])),
        "float": (np.array([0.0, 7.0]), np.array([1.0, 2.0])),
        "empty": (np.array([], np.int64), np.array([], np.int64)),
        "none": None,
    }
    monkeypatch.setattr(fastcsv.importlib.util, "find_spec", lambda name: object())
    for name, result in results.items():
        monkeypatch.setitem(fastcsv._READERS, "fake", lambda *a, r=result: r)
        monkeypatch.setattr(fastcsv, "ENGINES", ["fake"])
        g = load_graph(p)
        assert g.n == 3 and g.out_idx.tolist() == [1, 2], name
    monkeypatch.setitem(fastcsv._READERS, "fake", lambda *a: 1 / 0)
    assert load_graph(p).out_idx.tolist() == [1, 2]  # a failing engine: line parser
