"""How :class:`blest.runtime.launch.PreparedLaunch` packs kernel arguments (CPU only: the
launch itself is exercised by every GPU test of the single-source engine)."""

from __future__ import annotations

import ctypes
from types import SimpleNamespace

import numpy as np
import pytest

from blest.runtime.launch import _slot


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
