"""blest-tune on a GPU, then load_tuned(config).bfs(src) against SciPy on graphs of several
classes (a few thousand vertices each, small budgets)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from gpu_util import path_like, requires_gpu
from random_graphs import (
    make_directed,
    make_disconnected,
    make_grid,
    make_hubs,
    make_power_law,
    make_uniform,
)

import blest
from blest.cli import main, tune_main
from blest.datasets import write_mtx
from blest.reference import bfs_levels
from blest.runtime.emulated import EmulatedEngine

pytestmark = [pytest.mark.gpu, requires_gpu]

MAKERS = {
    "power_law": lambda rng: make_power_law(rng, 3000),
    "uniform": lambda rng: make_uniform(rng, 3001),
    "grid": lambda rng: make_grid(rng, 3000),
    "road_deep": lambda rng: path_like(rng, 2000),
    "directed": lambda rng: make_directed(rng, 2500),
    "disconnected": lambda rng: make_disconnected(rng, 2000),
    "hubs": lambda rng: make_hubs(rng, 3000),
}


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_tune_then_load_matches_scipy(kind, tmp_path, rng, capsys):
    g = MAKERS[kind](rng)
    write_mtx(g, tmp_path / f"{kind}.mtx")
    cfg = tmp_path / f"{kind}.blest.json"
    sigmas = ["4", "8", "16", "32"] if kind == "power_law" else ["8", "16"]
    argv = [str(tmp_path / f"{kind}.mtx"), "-o", str(cfg), "--budget", "4", "--sigma", *sigmas]
    assert tune_main(argv) == 0, capsys.readouterr().err
    print(capsys.readouterr().out)  # the summary, for the log
    data = json.loads(cfg.read_text())
    assert data["tuned"] is True and data["gpu"]["name"]
    assert data["timing"]["candidates"] and len(data["timing"]["tuning_sources"]) == 8
    report = data["report"]
    assert report["pick_ms"] is not None and report["paper_ms"] is not None
    tuning = set(data["timing"]["tuning_sources"])
    eng = blest.load_tuned(cfg)
    assert not isinstance(eng, EmulatedEngine)
    assert eng.spec.to_dict() == data["variant"]
    active = np.flatnonzero(g.out_degree > 0)
    sources = [int(s) for s in rng.choice(active, 4, replace=False)] + [int(rng.integers(g.n))]
    for s in sources:
        assert np.array_equal(eng.bfs(s), bfs_levels(g, s)), (kind, s, eng.spec.name)
    if len(active) > 72:
        assert not tuning & set(report["held_out_sources"])
    eng.close()


def test_cli_bfs_with_tuned_config(tmp_path, rng, capsys):
    g = make_directed(rng, 1500)
    write_mtx(g, tmp_path / "g.mtx")
    cfg = tmp_path / "g.blest.json"
    assert tune_main([str(tmp_path / "g.mtx"), "-o", str(cfg), "--budget", "2", "-q"]) == 0
    out = tmp_path / "levels.npy"
    assert main(["bfs", str(cfg), "5", "--out", str(out)]) == 0
    assert "GPU" in capsys.readouterr().out
    assert np.array_equal(np.load(out), bfs_levels(g, 5))
    emu = blest.load_tuned(cfg, emulate=True)
    assert isinstance(emu, EmulatedEngine)
    assert np.array_equal(emu.bfs(5), bfs_levels(g, 5))


def test_closeness_workload_tunes_and_loads(tmp_path, rng):
    """blest-tune --workload closeness picks a multi-source variant by timing; the loaded
    engine runs it, and its scores equal the CPU's bit for bit."""
    from blest.centrality import closeness
    from blest.codegen.msspec import MSSpec

    g = make_power_law(rng, 2000)
    write_mtx(g, tmp_path / "g.mtx")
    cfg = tmp_path / "g.blest.json"
    argv = [str(tmp_path / "g.mtx"), "-o", str(cfg), "--workload", "closeness", "--budget", "4"]
    assert tune_main([*argv, "-q"]) == 0
    data = json.loads(cfg.read_text())
    assert data["tuned"] is True and data["multi_source"] is not None
    assert data["timing"]["workload"] == "closeness" and data["timing"]["ms_candidates"]
    eng = blest.load_tuned(cfg)
    assert eng.many.runner().spec == MSSpec.from_dict(data["multi_source"]["spec"])
    got = eng.closeness()
    eng.close()
    want = closeness(g, device="cpu")
    assert got.tobytes() == want.tobytes()


def test_engines_share_a_preparations_device_arrays(rng):
    """The tuner's engines read one device copy of each ordering's in-CSR and BVSS (uploaded
    once, before the search) and still answer as SciPy does, also after others closed."""
    import cupy

    from blest.codegen.spec import variants
    from blest.tuning.gpu import EngineFactory
    from blest.tuning.prepare import prepare, upload_all
    from blest.tuning.space import Candidate

    g = make_directed(rng, 2000)
    preps = {"rcm": prepare(g, "rcm", 8)}
    notes: list[str] = []
    upload_all(preps, (8, 16), cupy, notes, lambda msg: None)
    assert not notes
    shared = preps["rcm"].prepared(8, xp=cupy)
    factory = EngineFactory(preps)
    names = ("s8_lazy_vss_switch_pers", "s16_lazy_csr_switch_pers", "s8_eager_vss_pers")
    specs = [s for s in variants(launch="persistent") if s.name in names]
    assert len(specs) == len(names)
    active = np.flatnonzero(g.out_degree > 0)
    sources = [int(s) for s in rng.choice(active, 3, replace=False)]
    for spec in specs * 2:  # each engine made after the previous one closed
        with factory(Candidate("rcm", spec, 10.0 if spec.switching else None)) as eng:
            if spec.switching:
                assert eng._tr.values["in_ptr"].data.ptr == shared.in_ptr.data.ptr
                assert eng._tr.values["in_idx"].data.ptr == shared.in_idx.data.ptr
            for s in sources:
                poisoned = cupy.full(g.n, 12345, dtype=cupy.int32)
                assert np.array_equal(eng.bfs(s, out=poisoned).get(), bfs_levels(g, s))
    factory.release()
    assert preps["rcm"]._device_in_csr is None
