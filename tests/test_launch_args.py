"""How :class:`blest.runtime.device_program.PreparedLaunch` packs kernel arguments (CPU only: the
launch itself is exercised by every GPU test of the single-source engine)."""

from __future__ import annotations

import ctypes
from types import SimpleNamespace

import numpy as np
import pytest

from blest.runtime.device_program import _slot


def test_arguments_follow_cupy_rules():
    array = SimpleNamespace(data=SimpleNamespace(ptr=0xDEAD0000))  # what a cupy.ndarray shows
    cases = [
        (array, ctypes.c_uint64, 0xDEAD0000),
        (np.uint64(0), ctypes.c_uint64, 0),  # a null pointer: the same kind as an array
        (np.int32(-7), ctypes.c_int32, -7),
        (np.uint32(2**32 - 1), ctypes.c_uint32, 2**32 - 1),
        (np.float64(0.25), ctypes.c_double, 0.25),
        (np.int64(-(2**40)), ctypes.c_int64, -(2**40)),
        (5, ctypes.c_int64, 5),
        (1.5, ctypes.c_double, 1.5),
    ]
    for arg, kind, value in cases:
        slot = _slot(arg)
        assert type(slot) is kind and slot.value == value, arg


@pytest.mark.parametrize("bad", [True, "3", None, [1]])
def test_unsupported_arguments_are_refused(bad):
    with pytest.raises(TypeError):
        _slot(bad)


class _Stream:
    """What :class:`blest.runtime.call_graph.CapturedCall` uses of a CuPy stream, recording the
    calls; ``end_capture`` fails when the capture was broken, as CUDA does."""

    def __init__(self, log: list, broken: list) -> None:
        self.log, self.broken, self.ptr = log, broken, 0xBEEF

    def __enter__(self):
        self.log.append("enter")
        return self

    def __exit__(self, *exc):
        self.log.append("exit")

    def begin_capture(self):
        self.log.append("begin")

    def end_capture(self):
        self.log.append("end")
        if self.broken:
            raise RuntimeError("capture invalidated")
        return SimpleNamespace(
            upload=lambda stream: self.log.append("upload"),
            launch=lambda stream: self.log.append(("launch", stream)),
        )

    def synchronize(self):
        self.log.append("sync")


def _fake_cupy(log: list, broken: list) -> SimpleNamespace:
    cuda = SimpleNamespace(
        Stream=lambda non_blocking: _Stream(log, broken),
        get_current_stream=lambda: "current",
    )
    return SimpleNamespace(cuda=cuda)


def test_a_capture_is_ended_and_launched_on_the_current_stream():
    from blest.runtime.call_graph import CapturedCall

    log: list = []
    call = CapturedCall(_fake_cupy(log, []), lambda stream: log.append(("work", stream.ptr)))
    assert log == ["enter", "begin", ("work", 0xBEEF), "end", "upload", "sync", "exit"]
    call()
    assert log[-1] == ("launch", "current")


@pytest.mark.parametrize("broken", [False, True])
def test_a_failed_capture_is_ended_and_its_error_raised(broken):
    """A failure while enqueueing ends the capture (the stream stays usable) and raises the
    failure itself, not the error of ending a broken capture."""
    from blest.runtime.call_graph import CapturedCall

    log: list = []

    def fail(stream):
        log.append("work")
        raise ValueError("launch failed")

    with pytest.raises(ValueError, match="launch failed"):
        CapturedCall(_fake_cupy(log, [True] if broken else []), fail)
    assert log == ["enter", "begin", "work", "end", "exit"]


def test_only_contiguous_page_locked_arrays_count_as_pinned():
    """The GPU copies straight into an ``out`` only where CUDA says it is page-locked and it
    is one contiguous run; a refused query (no GPU, an old driver) means "not pinned"."""
    from blest.runtime.device import is_pinned

    class Refused(Exception):
        pass

    asked: list = []

    def attributes(ptr):
        asked.append(ptr)
        if kinds[0] == "refuse":
            raise Refused("no")
        return SimpleNamespace(type={"host": 1, "pageable": 0, "device": 2}[kinds[0]])

    runtime = SimpleNamespace(
        pointerGetAttributes=attributes, memoryTypeHost=1, CUDARuntimeError=Refused
    )
    cp = SimpleNamespace(cuda=SimpleNamespace(runtime=runtime))
    a = np.zeros(8, dtype=np.int32)
    for kind, want in [("host", True), ("pageable", False), ("device", False), ("refuse", False)]:
        kinds = [kind]
        assert is_pinned(cp, a) is want, kind
    assert asked == [a.ctypes.data] * 4
    kinds = ["host"]
    assert not is_pinned(cp, a[::2])  # strided: not one run, and not even asked
    assert len(asked) == 4


def test_levels_are_delivered_as_out_asks():
    """Every kind of ``out`` gets the levels by its own road (a fake CuPy: device arrays are
    NumPy arrays with ``get``), and a fresh result never aliases the staging buffer."""
    from blest.runtime.device import deliver_levels

    class Device(np.ndarray):
        def get(self, out):
            roads.append("get")
            out[...] = self
            return out

    pinned_ptrs: set = set()
    runtime = SimpleNamespace(
        pointerGetAttributes=lambda p: SimpleNamespace(type=1 if p in pinned_ptrs else 0),
        memoryTypeHost=1,
        CUDARuntimeError=RuntimeError,
    )
    cp = SimpleNamespace(ndarray=Device, cuda=SimpleNamespace(runtime=runtime))
    levels = np.arange(6, dtype=np.int32).view(Device)
    host = np.full(6, -7, np.int32)
    roads: list = []
    assert deliver_levels(cp, levels, "view", host) is levels
    copy = deliver_levels(cp, levels, "device", host)
    assert copy is not levels and np.array_equal(copy, levels)
    on_device = np.full(6, -1, np.int32).view(Device)
    assert deliver_levels(cp, levels, on_device, host) is on_device
    assert roads == [] and np.array_equal(on_device, levels)
    fresh = deliver_levels(cp, levels, None, host)
    assert fresh is not host and np.array_equal(fresh, levels) and roads == ["get"]
    pageable = np.full(6, -1, np.int32)
    host[...] = -7
    assert deliver_levels(cp, levels, pageable, host) is pageable
    assert np.array_equal(pageable, levels) and np.array_equal(host, levels)  # through host
    pinned = np.full(6, -1, np.int32)
    pinned_ptrs.add(pinned.ctypes.data)
    host[...] = -7
    assert deliver_levels(cp, levels, pinned, host) is pinned
    assert np.array_equal(pinned, levels) and (host == -7).all()  # straight into it
