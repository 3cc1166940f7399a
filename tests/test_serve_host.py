"""The host's side of served calls, without a GPU: the wait for an answer (a server that ended
idle is started again, a failed one voids the engine, a Ctrl-C lets the call finish first and
is raised after it), and ``serving()`` on engines without a serving kernel (the CPU paths run
their calls as usual; bad idle limits are refused). ``tests/test_serve_gpu.py`` runs the kernels."""

from __future__ import annotations

import numpy as np
import pytest

from blest.codegen.contract import CTL, CTL_WORDS, SERVE, SERVE_WORDS
from blest.errors import ArgumentError, EngineError
from blest.graph.prepared import Prepared
from blest.reference import bfs_levels
from blest.runtime.arguments import call_rules
from blest.runtime.factory import make_engine
from blest.runtime.served import ServedCalls

ANSWER = CTL_WORDS + SERVE["answer"]


class FakeStream:
    """A server's stream: still running for ``runs`` looks, then done."""

    def __init__(self, runs: int) -> None:
        self.runs = runs

    @property
    def done(self) -> bool:
        self.runs -= 1
        return self.runs < 0


class FakeTraversal:
    """The traversal's side of a server over host arrays: ``device_ctl`` is what the device's
    control block holds."""

    def __init__(self, device_ctl: np.ndarray) -> None:
        self.host_block = np.zeros(CTL_WORDS + SERVE_WORDS, dtype=np.uint32)
        self.host_ctl = self.host_block[:CTL_WORDS]
        self.device_ctl = device_ctl
        self.program = self
        self.voided = False

    def read_ctl(self) -> np.ndarray:
        self.host_ctl[:] = self.device_ctl
        return self.host_ctl

    def check_ctl(self, user: int, seeds: int, timed: bool, ctl_copy=None) -> None:
        if self.host_ctl[CTL["error"]]:
            self.voided = True
            raise EngineError("void")


class FakeServer(ServedCalls):
    """ServedCalls over host arrays: ``answer_at_start`` answers the pending call when the
    server is started again."""

    def __init__(self, runs: int, device_ctl: np.ndarray, answer_at_start: int | None) -> None:
        super().__init__(FakeTraversal(device_ctl))  # type: ignore[arg-type]
        self.u32 = memoryview(self.tr.host_block)  # as begin() sets it
        self.stream = FakeStream(runs)
        self.rules = call_rules(14.0, 24.0, 0.5, 3, False)  # as start() set them with the stream
        self.answer_at_start = answer_at_start
        self.starts = 0
        self.started_with: list = []

    def start(self, rules) -> None:
        self.starts += 1
        self.started_with.append(rules)
        self.stream = FakeStream(1)
        if self.answer_at_start is not None:
            self.tr.host_block[ANSWER] = self.answer_at_start


def test_an_answer_ends_the_wait():
    fake = FakeServer(runs=10, device_ctl=np.zeros(CTL_WORDS, np.uint32), answer_at_start=None)
    fake.tr.host_block[ANSWER] = 7
    fake.wait(7)
    assert fake.starts == 0


def test_a_server_that_ended_idle_is_started_again():
    fake = FakeServer(runs=2, device_ctl=np.zeros(CTL_WORDS, np.uint32), answer_at_start=3)
    fake.tr.host_block[ANSWER] = 2  # the previous call's answer
    fake.wait(3)
    assert fake.starts == 1 and fake.tr.host_block[ANSWER] == 3
    assert fake.started_with == [call_rules(14.0, 24.0, 0.5, 3, False)]  # the ended server's


def test_a_failed_server_voids_the_engine():
    ctl = np.zeros(CTL_WORDS, np.uint32)
    ctl[CTL["error"]] = 1
    fake = FakeServer(runs=0, device_ctl=ctl, answer_at_start=None)
    with pytest.raises(EngineError):
        fake.wait(5)
    assert fake.tr.voided and fake.starts == 0 and fake.stream is None


def test_ctrl_c_waits_for_the_answer_then_raises():
    fake = FakeServer(runs=10, device_ctl=np.zeros(CTL_WORDS, np.uint32), answer_at_start=None)
    spin, calls = fake.spin, []

    def interrupted(seq: int) -> None:
        calls.append(seq)
        if len(calls) == 1:
            raise KeyboardInterrupt
        fake.tr.host_block[ANSWER] = seq  # the answer arrives while the host still waits
        spin(seq)

    fake.spin = interrupted  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        fake.wait(9)
    assert calls == [9, 9] and fake.tr.host_block[ANSWER] == 9


@pytest.mark.parametrize("device", ["cpu", "emulator"])
def test_serving_without_a_serving_kernel_runs_calls_as_usual(rng, device):
    from blest.datasets.classes import make_power_law

    graph = make_power_law(rng, 300)
    src = int(np.flatnonzero(graph.out_degree > 0)[0])
    with make_engine(Prepared.from_graph(graph, 8), device=device) as eng:
        with eng.serving(idle_ms=5) as served:
            assert served is eng
            np.testing.assert_array_equal(eng.bfs(src), bfs_levels(graph, src))
        for bad in (0, -1.0, float("nan"), 1e9, "20"):
            with pytest.raises(ArgumentError, match="idle_ms"):
                with eng.serving(idle_ms=bad):
                    pass
    with pytest.raises(EngineError):
        with eng.serving():
            pass


def test_a_resident_server_ends_before_its_barrier_counts_could_overflow():
    """The resident queue counts a launch's grid-barrier arrivals in 32 bits: the host ends
    the server (the next call starts it with zeroed counts) while the next call's worst case,
    n + 4 barriers of every block, still fits."""
    from blest.runtime.served import resident_counts_full

    n, blocks = 6549, 132
    worst = (n + 4) * blocks
    assert not resident_counts_full(0, n, blocks)
    assert not resident_counts_full(2**32 - worst - 1, n, blocks)
    assert resident_counts_full(2**32 - worst, n, blocks)
    assert resident_counts_full(2**32, n, blocks)


def test_the_next_array_is_left_out_when_memory_is_short():
    """The next out="device" call's array is allocated after this call's post: out of device
    memory, there is none (the next call allocates its own, before posting, and raises there);
    anything else raised there goes up (the call waits for its answer first:
    tests/test_serve_gpu.py)."""
    import contextlib
    from types import SimpleNamespace

    class OutOfMemory(MemoryError):
        pass

    raised: list[BaseException] = []

    def empty(n, dtype):
        raise raised[0]

    memory = SimpleNamespace(OutOfMemoryError=OutOfMemory)
    cuda = SimpleNamespace(Device=lambda _: contextlib.nullcontext(), memory=memory)
    fake = FakeServer(0, np.zeros(CTL_WORDS, dtype=np.uint32), None)
    fake.tr.cp = SimpleNamespace(cuda=cuda, empty=empty, int32=np.int32)
    fake.tr.device_id, fake.tr.n = 0, 5
    raised.append(OutOfMemory())
    assert fake.new_spare() is None
    raised[0] = KeyboardInterrupt()
    with pytest.raises(KeyboardInterrupt):
        fake.new_spare()
