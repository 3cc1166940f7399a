"""The GPU batch runner's host side run on the CPU: BCRunner over a stand-in for CuPy (NumPy
arrays) whose launches run the kernels' own CUDA source through tests/cuda_cpu.py. Its buffers,
views, launches in steps, the combination, the width, the fallback of a flagged batch to the
CPU (one warning), a void launch and the argument checks; betweenness through it equals the
CPU runner's bit for bit."""

from __future__ import annotations

import types
import warnings

import numpy as np
import pytest
from cuda_cpu import build, have_compiler, run
from test_bc_kernels_cpu import EXTRA_SHIM
from test_paths import diamonds

from blest.codegen.bc_render import bc_params, render_bc
from blest.codegen.bcspec import BC_COMBINE_KERNEL, BC_KERNEL, BCSpec
from blest.codegen.contract import CTL
from blest.datasets.classes import make_directed, make_power_law, path_like
from blest.errors import ArgumentError, EngineError
from blest.reference.betweenness import CPURunner, brandes
from blest.runtime import bc_runner

pytestmark = pytest.mark.skipif(not have_compiler(), reason="needs g++")

SPECS = [BCSpec(8, "block"), BCSpec(16, "grid"), BCSpec(2, "queue")]
ENTRY = {"bc": BC_KERNEL, "combine": BC_COMBINE_KERNEL}


class DeviceArray(np.ndarray):
    """A NumPy array with CuPy's ``set``, ``get`` and ``fill``."""

    def set(self, host):
        assert host.dtype == self.dtype and host.shape == self.shape
        np.copyto(self, host)

    def get(self, out=None):
        if out is None:
            return np.array(self)
        np.copyto(out, self)
        return out


def poison(n: int, dtype) -> np.ndarray:
    """What cupy.empty may hand out: here every byte 0xA5."""
    return np.full(n * np.dtype(dtype).itemsize, 0xA5, np.uint8).view(dtype)


def fake_cupy(sms: int = 1, free: int = 1 << 30) -> types.SimpleNamespace:
    def wrap(a):
        return np.asarray(a).view(DeviceArray)

    class Device:
        attributes = {"MultiProcessorCount": sms}

        def __init__(self, device_id=0):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return None

    cuda = types.SimpleNamespace(
        Device=Device,
        runtime=types.SimpleNamespace(memGetInfo=lambda: (free, 2 * free)),
        alloc_pinned_memory=lambda nbytes: bytearray(nbytes),
    )
    return types.SimpleNamespace(
        cuda=cuda,
        asarray=lambda a, dtype=None: wrap(np.array(a, dtype=dtype)),
        zeros=lambda n, dtype: wrap(np.zeros(n, dtype)),
        empty=lambda n, dtype: wrap(poison(n, dtype)),
        full=lambda n, v, dtype: wrap(np.full(n, v, dtype)),
        **{t: getattr(np, t) for t in ("int32", "int64", "uint32", "uint64", "float64")},
        nan=np.nan,
    )


class ShimProgram:
    """DeviceProgram's interface; a launch runs the role's kernel on the CPU over the bound
    arrays and writes the results back into them (views included)."""

    exes: dict = {}

    def __init__(self, program, device_id, arch, values=None):
        self.program, self.shapes, self.values, self.launches = program, {}, {}, []
        self.kernels = dict(program.kernels)
        self.fail = False

    def occupancy(self, role, block_size, shared_bytes=0):
        return 2

    def bind(self, values):
        assert set(values) == {p.name for p in self.program.params}
        self.values = dict(values)

    def rebind(self, **values):
        assert set(values) <= set(self.values)
        self.values.update(values)

    def launch(self, role, extra=()):
        shape = self.shapes[role]
        arrays, scalars = {}, {}
        for p in self.program.params:
            value = self.values[p.name]
            if "*" in p.ctype:
                arrays[p.name] = np.asarray(value).view(np.ndarray)
            else:
                scalars[p.name] = value.item()
        exe = self.exes[(self.program.name, role)]
        out = run(exe, arrays, scalars, shape.block, shape.shared_bytes, blocks=shape.grid)
        for name, result in out.items():
            np.copyto(self.values[name], result)
        if self.fail:
            self.values["ctl"][CTL["error"]] = 1
        self.launches.append((role, scalars["batch_first"], scalars["batch_last"]))

    def close(self):
        self.values = {}


@pytest.fixture(scope="module")
def exes(tmp_path_factory):
    cache = tmp_path_factory.mktemp("bcrun")
    params = [(p.ctype, p.name) for p in bc_params()]
    out = {}
    for spec in SPECS:
        source = EXTRA_SHIM + render_bc(spec)
        for role, entry in ENTRY.items():
            out[(spec.name, role)] = build(source, entry, params, [], cache)
    return out


@pytest.fixture
def shim(exes, monkeypatch):
    ShimProgram.exes = exes
    monkeypatch.setattr(bc_runner, "cupy_module", lambda: fake_cupy())
    monkeypatch.setattr(bc_runner, "DeviceProgram", ShimProgram)
    monkeypatch.setattr(bc_runner, "require_memory", lambda *a, **k: None)
    monkeypatch.setattr(bc_runner, "COMBINE_BLOCK", 64)
    monkeypatch.setattr(bc_runner, "LAUNCH_SECONDS", 1e-9)  # every launch as short as it gets
    monkeypatch.setattr(
        "blest.codegen.toolchain.require_gpu", lambda d=None: (0, "sm_90", "CPU stand-in")
    )


def make(graph, spec, **kw):
    return bc_runner.BCRunner(graph, spec, block_size=64, **kw)


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_betweenness_through_the_runner_equals_the_cpu(shim, rng, spec):
    graphs = {"directed": make_directed(rng, 70), "deep": path_like(rng, 50),
              "power_law": make_power_law(rng, 60)}  # fmt: skip
    for name, graph in graphs.items():
        kw = {"vis_smem": False if name == "deep" else None} if spec.form == "queue" else {}
        runner = make(graph, spec, wide_degree=int(rng.choice([6, 2048])), **kw)
        if spec.form == "queue":  # global memory when told (the deep graph), else they fit
            where = "global" if name == "deep" else "shared"
            assert f"visited bits in {where} memory" in runner.memory_summary()
        slots = 1 if spec.form == "grid" else 2
        assert runner.width == 4 * slots * spec.kappa and runner.slots == slots
        assert "slot" in runner.memory_summary()
        for endpoints in (False, True):
            k = None if endpoints else int(rng.integers(10, 30))
            seed = int(rng.integers(2**31)) if k else None

            def bound(*, edges, endpoints, runner=runner):
                assert not edges
                return types.SimpleNamespace(
                    width=runner.width,
                    length=runner.length,
                    run_batch=lambda s: runner.run_batch(s, endpoints=endpoints),
                )

            got = brandes(graph, k=k, seed=seed, endpoints=endpoints, make_runner=bound)
            want = brandes(graph, k=k, seed=seed, endpoints=endpoints)
            assert got.tobytes() == want.tobytes(), (name, endpoints)
        launches = runner._program.launches
        assert {role for role, *_ in launches} == {"bc", "combine"}
        bc = [(a, b) for role, a, b in launches if role == "bc"]
        assert any(b - a < runner.width // spec.kappa for a, b in bc)  # several launches a call
        runner.close()


def test_a_flagged_batch_runs_on_the_cpu_with_one_warning(shim):
    graph, last = diamonds([16] * 128)
    runner = make(graph, BCSpec(8, "block"))
    sources = np.concatenate([np.arange(8), last // 2 + np.arange(8)])
    with pytest.warns(RuntimeWarning, match="2\\^512") as caught:
        got = runner.run_batch(sources)
    assert len(caught) == 1
    assert got.tobytes() == CPURunner(graph).run_batch(sources).tobytes()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once per runner
        again = runner.run_batch(sources[:8], endpoints=True)
    assert again.tobytes() == CPURunner(graph, endpoints=True).run_batch(sources[:8]).tobytes()


def test_a_void_launch_and_the_argument_checks(shim, rng):
    graph = make_directed(rng, 50)
    runner = make(graph, BCSpec(16, "grid"))
    for bad in ([0, 1, 2], list(range(128)), [[0, 1]], [0, 50], [-1, 3]):
        with pytest.raises(ArgumentError):
            runner.run_batch(np.array(bad))
    runner._program.fail = True
    with pytest.raises(EngineError, match="timed out"):
        runner.run_batch(np.array([3, 4]))
    runner._program.fail = False
    with pytest.raises(EngineError, match="failed before"):
        runner.run_batch(np.array([3, 4]))


def test_the_search_times_candidates_and_refines_the_leaders_wide_degree(shim, rng, monkeypatch):
    """The tuner's search over the stand-in: candidates in order, each on the same sample,
    then the leader at other wide degrees; errors recorded, not raised."""
    from blest.tuning import bc_search

    graph = make_power_law(rng, 40)
    order = [bc_search.BCCandidate(spec, 64, 256) for spec in SPECS]
    monkeypatch.setattr(bc_search, "bc_candidates", lambda n, arcs, depth, max_degree: order)
    monkeypatch.setattr(bc_search, "WIDE_GRID", (4, 256, 2048))
    best, table = bc_search.search_betweenness(graph, 5, budget_s=60.0, sample=16)
    assert [r.candidate for r in table][:3] == order
    assert all(r.error is None and r.sources >= 1 for r in table), table
    assert table[0].sources == np.unique(bc_search.sample_sources(graph.n, 16)).size
    lead = min(table[:3], key=lambda r: r.seconds_per_source).candidate
    refined = [] if lead.spec.form == "queue" else [4, 2048]  # the queue form has no wide
    assert [r.candidate for r in table[3:]] == [  # the leader at the wide degrees not timed
        bc_search.BCCandidate(lead.spec, 64, w) for w in refined
    ]
    assert best.seconds_per_source == min(r.seconds_per_source for r in table)
    assert all("slot" in r.memory for r in table)
    row = best.to_dict()
    assert row["spec"] == best.candidate.spec.to_dict() and row["us_per_source"] > 0
