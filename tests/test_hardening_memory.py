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


# ---------------------------------------------------------------------- kappa by free memory
def _narrowing_case(rng):
    from blest.codegen.msspec import MSSpec

    prep = Prepared.from_graph(make_grid(rng, 3000), 8)
    wide = MSSpec(8, 512, "grid", "mma", "vertex")
    return prep, wide


def test_kappa_512_grid_slot_is_256_bytes_a_vertex_and_more(rng):
    from blest.runtime.ms_runner import slot_bytes

    prep, wide = _narrowing_case(rng)
    b = prep.bvss
    got = slot_bytes(wide, prep.n, b.n_slice_sets, b.n_vss)
    # visited, next and two frontiers of 512 bits a vertex, plus the lists: on 67M vertices
    # (kron-26) one slot is over 17 GB
    assert 256 * prep.n <= got <= 256 * 8 * b.n_slice_sets + 64 * prep.n + 4096


def test_fitting_spec_takes_the_widest_kappa_that_fits(rng):
    from blest.codegen.msspec import MSSpec
    from blest.runtime.many import fitting_spec
    from blest.runtime.ms_runner import runner_bytes

    prep, wide = _narrowing_case(rng)
    need = {k: runner_bytes(prep, MSSpec(8, k, "grid", "mma", "vertex")) for k in (64, 128, 256)}
    need[512] = runner_bytes(prep, wide)
    need[32] = runner_bytes(prep, MSSpec(8, 32, "grid", "mma", "chunk"))
    assert need[32] < need[64] < need[128] < need[256] < need[512]
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert fitting_spec(wide, prep, need[512]) is wide  # it fits: no warning
    with pytest.warns(RuntimeWarning) as info:
        got = fitting_spec(wide, prep, need[128] + 1, device_id=2)
    assert got == MSSpec(8, 128, "grid", "mma", "vertex")
    msg = str(info[0].message)
    assert "ms_s8_k512_grid_vx" in msg and "kappa 128" in msg and "device 2" in msg
    assert "the scores are the same" in msg
    with pytest.warns(RuntimeWarning, match="kappa 32"):
        assert fitting_spec(wide, prep, need[32]) == MSSpec(8, 32, "grid", "mma", "chunk")
    # nothing fits: the spec itself, whose runner's memory check says what is missing
    assert fitting_spec(wide, prep, need[32] - 1) is wide
    # the queue form narrows among its own kappas; the smem form needs no slots
    queue = MSSpec(8, 32, "queue", "csr")
    with pytest.warns(RuntimeWarning, match="kappa 16"):
        got = fitting_spec(queue, prep, runner_bytes(prep, MSSpec(8, 16, "queue", "csr")))
    assert got.kappa == 16 and got.form == "queue"
    smem = MSSpec(8, 32, "smem", "csr")
    assert fitting_spec(smem, prep, 0) is smem


def test_the_runner_of_an_engine_is_narrowed_by_free_memory(monkeypatch, rng):
    from blest.codegen.msspec import MSSpec
    from blest.runtime import many
    from blest.runtime.ms_runner import runner_bytes

    prep, wide = _narrowing_case(rng)
    free = runner_bytes(prep, MSSpec(8, 256, "grid", "mma", "vertex"))
    _fake_cupy(monkeypatch, device_free=free, pool=FakePool(0, 0, 0))

    class Device:
        def __init__(self, device_id):
            self.id = device_id

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return None

    sys.modules["cupy"].cuda.Device = Device
    built = []

    class Runner:
        def __init__(self, prepared, spec, **kwargs):
            built.append(spec)
            self.spec = spec

        def close(self):
            pass

    monkeypatch.setattr(many, "MSRunner", Runner)
    choice = many.MultiSourceChoice(wide, 1.0, 256)
    work = many.ManySources(prep, 0, choice, depth_probe=lambda: 5)
    with pytest.warns(RuntimeWarning, match="kappa 256"):
        runner = work.runner()
    assert runner.spec.kappa == 256 and built == [runner.spec]
    assert work.kappa == 512  # the partition still deals batches of the chosen width
