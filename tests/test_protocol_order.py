"""The timing protocol times whole calls back to back: no host work (checking a result, a
host-result call) may fall between two timed GPU calls, because a GPU idle for milliseconds
pays 50-90 us on its next launch (benchmarks/NOTES.md, session 13). CuPy's synchronize is
replaced by a recorder, so this runs without a GPU."""

from __future__ import annotations

import contextlib
import sys
import types

import numpy as np
import pytest
from random_graphs import make_power_law

from blest.reference import bfs_levels
from blest.runtime.engine_protocol import BFSStats
from blest.tuning import timing as protocol


class RecordingEngine:
    """Answers ``bfs`` with SciPy-equal levels and logs every call and synchronize."""

    def __init__(self, graph, log):
        self.graph, self.log = graph, log
        self.timings = []  # (src, out, engine.timing) of every call
        self.spec = types.SimpleNamespace(name="recording")
        self.eta = 10.0
        self.stats = None
        self.timing = True

    def bfs(self, src, out=None):
        self.log.append(("bfs", src, out))
        self.timings.append((src, out, self.timing))
        levels = bfs_levels(self.graph, src)
        depth = int(levels.max())
        visited = int((levels >= 0).sum())
        self.stats = BFSStats(src, depth, visited, depth + 1, 0.1)
        return levels if out is None else ("device", levels)


@pytest.fixture
def fake_cupy(monkeypatch):
    log: list[tuple] = []
    device = types.SimpleNamespace(synchronize=lambda: log.append(("sync",)))
    cuda = types.SimpleNamespace(Device=lambda *a: device)
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(cuda=cuda))
    monkeypatch.setattr(protocol, "warm_up", lambda engine, src, **kw: None)
    return log


def timed_windows(log):
    """The calls between each synchronize and the next: a timed call is alone in its window."""
    windows, current = [], []
    for entry in log:
        if entry == ("sync",):
            windows.append(current)
            current = []
        else:
            current.append(entry)
    return windows


def check_back_to_back(log, sources):
    device_calls = [i for i, e in enumerate(log) if e[0] == "bfs" and e[2] == "device"]
    host_calls = [i for i, e in enumerate(log) if e[0] == "bfs" and e[2] is None]
    assert len(device_calls) >= len(sources)
    # every source's timed device call comes before the first host-result call
    first_host = min(host_calls)
    timed = [log[i][1] for i in device_calls if i < first_host]
    assert timed[: len(sources)] == list(sources)
    for window in timed_windows(log[: first_host + 1]):
        assert len(window) <= 1, window  # nothing but the timed call between synchronizes


def check_untimed_whole_calls(engine, sources):
    """Every source has a device call with events (the traversal) and one without (the whole
    call), and the engine's timing is back as it was."""
    for timing in (True, False):
        calls = [s for s, out, t in engine.timings if out == "device" and t == timing]
        assert set(sources) <= set(calls), timing
    assert engine.timing is True


def test_bench_engine_times_whole_calls_back_to_back(fake_cupy, rng):
    graph = make_power_law(rng, 200)
    sources = protocol.timing_sources(graph, 8)
    engine = RecordingEngine(graph, fake_cupy)
    row = protocol.bench_engine(engine, graph, sources, "g")
    check_back_to_back(fake_cupy, [int(s) for s in sources])
    check_untimed_whole_calls(engine, [int(s) for s in sources])
    assert row.sources == len(sources)
    assert row.gteps > 0


def test_time_sources_times_whole_calls_back_to_back(fake_cupy, rng):
    graph = make_power_law(rng, 200)
    sources = [int(s) for s in protocol.timing_sources(graph, 8)]
    engine = RecordingEngine(graph, fake_cupy)
    samples = protocol.time_sources(engine, graph, sources, gpu=True, verify=True)
    check_back_to_back(fake_cupy, sources)
    check_untimed_whole_calls(engine, sources)
    assert samples.differs == []
    want = [int(bfs_levels(graph, s).max()) for s in sources]
    assert samples.depth == want
    assert len(samples.whole_call_ms) == len(sources)
    assert np.all(np.asarray(samples.edges) > 0)


class ServingEngine(RecordingEngine):
    """A persistent engine whose ``serving()`` logs when it starts and ends."""

    def __init__(self, graph, log):
        super().__init__(graph, log)
        self.spec = types.SimpleNamespace(name="serving", launch="persistent")

    @contextlib.contextmanager
    def serving(self):
        self.log.append(("serve",))
        yield
        self.log.append(("served",))


def test_served_calls_are_timed_after_a_warm_up_in_the_server(monkeypatch, rng):
    """An engine's first ``serving()`` compiles its serving kernel while the GPU idles: the
    timed served calls follow 0.2 s of warm-up calls inside the server (one call alone left the
    first timed calls slow), and nothing in the server synchronizes the whole device (that
    would wait for the server's end)."""
    log: list[tuple] = []
    stream = types.SimpleNamespace(synchronize=lambda: log.append(("stream",)))
    device = types.SimpleNamespace(synchronize=lambda: log.append(("sync",)))
    cuda = types.SimpleNamespace(Device=lambda *a: device, get_current_stream=lambda: stream)
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(cuda=cuda))
    clock = iter(np.arange(0.0, 1e3, 0.03))  # each reading 30 ms after the last
    monkeypatch.setattr(protocol.time, "perf_counter", lambda: float(next(clock)))
    graph = make_power_law(rng, 200)
    sources = [int(s) for s in protocol.timing_sources(graph, 8)]
    walls = protocol._served_whole_calls(ServingEngine(graph, log), sources)
    assert len(walls) == len(sources)
    inside = log[log.index(("serve",)) + 1 : log.index(("served",))]
    assert ("sync",) not in inside
    calls = [e[1] for e in inside if e[0] == "bfs"]
    assert calls[len(calls) - len(sources) :] == sources
    warm = calls[: len(calls) - len(sources)]
    assert len(warm) >= 0.2 / 0.03 - 1 and set(warm) == {sources[0]}
