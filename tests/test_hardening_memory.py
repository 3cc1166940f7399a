"""GPU memory: engines refuse, before allocating, what the device cannot hold, with both sizes
in the message (a fake CuPy on the CPU; CuPy's pool capped on a GPU)."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest
from gpu_util import requires_gpu
from random_graphs import make_grid

from blest.errors import DeviceMemoryError
from blest.graph.prepared import Prepared
from blest.reference import bfs_levels
from blest.runtime.device import require_memory

MiB = 1 << 20


class FakePool:
    def __init__(self, free: int, used: int, limit: int) -> None:
        self.free, self.used, self.limit = free, used, limit

    def free_bytes(self) -> int:
        return self.free

    def used_bytes(self) -> int:
        return self.used

    def get_limit(self) -> int:
        return self.limit


def _fake_cupy(monkeypatch, *, device_free: int, pool: FakePool) -> None:
    runtime = types.SimpleNamespace(memGetInfo=lambda: (device_free, 80 * 1024 * MiB))
    fake = types.SimpleNamespace(
        cuda=types.SimpleNamespace(runtime=runtime), get_default_memory_pool=lambda: pool
    )
    monkeypatch.setitem(sys.modules, "cupy", fake)


def test_require_memory_with_a_fake_cupy(monkeypatch, rng):
    g = make_grid(rng, 100)
    _fake_cupy(monkeypatch, device_free=100 * MiB, pool=FakePool(28 * MiB, 0, 0))
    require_memory(128 * MiB, 0, g)  # the pool's cached blocks count as free
    with pytest.raises(DeviceMemoryError) as info:
        require_memory(129 * MiB, 3, g)
    msg = str(info.value)
    assert "needs about 129.0 MiB" in msg and "device 3 has 128.0 MiB free" in msg
    assert f"{g.n:,} vertices and {g.nnz:,} arcs" in msg
    # a capped pool: what is left under the cap is all there is
    _fake_cupy(monkeypatch, device_free=100 * MiB, pool=FakePool(0, 30 * MiB, 40 * MiB))
    require_memory(10 * MiB, 0)
    with pytest.raises(DeviceMemoryError, match="has 10.0 MiB free"):
        require_memory(10 * MiB + 1, 0)
    _fake_cupy(monkeypatch, device_free=100 * MiB, pool=FakePool(0, 50 * MiB, 40 * MiB))
    with pytest.raises(DeviceMemoryError, match="has 0 B free"):
        require_memory(1, 0)


@pytest.mark.gpu
@requires_gpu
def test_a_capped_pool_gives_a_clear_error_and_is_restored(rng):
    import cupy

    from blest.runtime.factory import make_engine

    g = make_grid(rng, 50_000)
    prep = Prepared.from_graph(g, 8)
    pool = cupy.get_default_memory_pool()
    before = pool.get_limit()
    try:
        pool.set_limit(size=pool.used_bytes() + 64 * 1024)
        with pytest.raises(DeviceMemoryError) as info:
            make_engine(prep, device=0)
        msg = str(info.value)
        assert "needs about" in msg and "free" in msg and f"{g.n:,} vertices" in msg
    finally:
        pool.set_limit(size=before)
    assert pool.get_limit() == before
    with make_engine(prep, device=0) as eng:  # with the limit back, it runs
        assert np.array_equal(eng.bfs(17), bfs_levels(g, 17))
