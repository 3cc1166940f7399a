"""``blest-tune --workload closeness`` and the config's ``multi_source`` section, on the CPU."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from random_graphs import make_power_law

import blest
import blest.centrality as bc
from blest.cli import tune_main
from blest.codegen.densespec import DenseSpec
from blest.codegen.msspec import MSSpec
from blest.datasets import write_mtx
from blest.errors import ConfigError
from blest.runtime.many import DenseChoice
from blest.tuning.config import TunedConfig


@pytest.fixture
def tuned(tmp_path, rng):
    g = make_power_law(rng, 300)
    write_mtx(g, tmp_path / "g.mtx")
    cfg = tmp_path / "g.blest.json"
    assert (
        tune_main([str(tmp_path / "g.mtx"), "-o", str(cfg), "--workload", "closeness", "-q"]) == 0
    )
    return g, cfg


def test_closeness_workload_without_a_gpu(tuned):
    g, cfg = tuned
    data = json.loads(cfg.read_text())
    assert data["tuned"] is False and data["multi_source"] is None
    assert any("multi-source variant is chosen" in n for n in data["notes"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(bc.closeness(str(cfg)), bc.closeness(g))


def test_multi_source_section_round_trip_and_checks(tuned):
    _, path = tuned
    cfg = TunedConfig.read(path)
    cfg.multi_source = {"spec": MSSpec(8, 128, "block", "shuffle").to_dict(), "eta": 4.0,
                        "block_size": 1024}  # fmt: skip
    cfg.write(path)
    again = TunedConfig.read(path)
    assert again.multi_source == cfg.multi_source
    data = json.loads(path.read_text())
    for bad in ({"spec": {"kappa": 48}, "eta": 1.0, "block_size": 256},
                {"spec": MSSpec().to_dict(), "eta": -1.0, "block_size": 256},
                {"spec": MSSpec().to_dict(), "eta": 1.0, "block_size": 100}):  # fmt: skip
        data["multi_source"] = bad
        path.write_text(json.dumps(data))
        with pytest.raises(ConfigError, match="multi_source"):
            TunedConfig.read(path)


def test_load_tuned_applies_the_multi_source_choice(tuned, monkeypatch):
    _, path = tuned
    cfg = TunedConfig.read(path)
    choice = MSSpec(8, 64, "grid", "mma")
    cfg.multi_source = {"spec": choice.to_dict(), "eta": 2.0, "block_size": 512}
    cfg.write(path)
    seen = {}

    class FakeMany:
        def configure(self, spec, *, eta, block_size, dense):
            seen.update(spec=spec, eta=eta, block_size=block_size, dense=dense)

    class FakeEngine:
        device_name = "NVIDIA H200"

        def __init__(self, prepared, spec, **kw):
            self.many = FakeMany()

    monkeypatch.setattr("blest.runtime.engine.Engine", FakeEngine)
    monkeypatch.setattr(
        "blest.codegen.toolchain.require_gpu", lambda d=None: (0, "sm_90", "NVIDIA H200")
    )

    def load() -> dict:
        seen.clear()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            blest.load_tuned(path, device="gpu")
        return dict(seen)

    # a config from before the dense form leaves the every-vertex choice to the engine
    assert load() == {"spec": choice, "eta": 2.0, "block_size": 512, "dense": "auto"}
    cfg.multi_source["dense"] = None  # timed, and the batched kernel won
    cfg.write(path)
    assert load()["dense"] is None
    cfg.multi_source["dense"] = {"spec": DenseSpec(4, 16).to_dict(), "block_size": 256}
    cfg.write(path)
    assert load()["dense"] == DenseChoice(DenseSpec(4, 16), 256)


def test_dense_choice_is_checked(tuned):
    _, path = tuned
    data = json.loads(path.read_text())
    base = {"spec": MSSpec().to_dict(), "eta": 1.0, "block_size": 256}
    for bad in ({"spec": {"vec": 3}, "block_size": 256}, {"spec": DenseSpec().to_dict()},
                {"spec": DenseSpec().to_dict(), "block_size": 48}, [1, 2]):  # fmt: skip
        data["multi_source"] = {**base, "dense": bad}
        path.write_text(json.dumps(data))
        with pytest.raises(ConfigError, match="multi_source"):
            TunedConfig.read(path)


def test_candidate_order_follows_depth_and_sample():
    from blest.tuning.ms_search import ms_candidates

    def first(depth, sample):
        c = ms_candidates((8, 32), depth, workload=sample, sms=132)[0].spec
        return c.form, c.expand

    assert first(5, 8192) == ("grid", "shuffle")  # shallow: BVSS expansions on the grid
    assert first(900, 256) == ("grid", "csr")  # deep, few batches: the grid keeps SMs busy
    assert first(900, 65536) == ("block", "csr")  # deep, many batches: one per block
    small = ms_candidates((8, 32), 10, workload=2000, sms=132, n=2000)
    assert small[0].spec.form == "smem"  # a small graph's batch fits in shared memory
    assert {c.spec.kappa for c in small if c.spec.form == "smem"} == {32, 64, 128, 256}
    big = ms_candidates((8, 32), 10, workload=10**6, sms=132, n=10**6)
    assert all(c.spec.form != "smem" for c in big)
    every = ms_candidates((8, 32), 900, workload=256, sms=132)
    assert len(set(every)) == len(every)
    assert {c.spec.sigma for c in every if c.spec.expand == "csr"} == {8}  # no BVSS read
    assert {(c.spec.form, c.spec.expand) for c in every} == {
        (f, e) for f in ("grid", "block") for e in ("mma", "shuffle", "csr")
    }
