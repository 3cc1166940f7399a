"""The tuned config's switching constants without an engine: alpha (the edge-ratio guard) beside
beta, written, read back, absent from older configs, refused when bad; and how the summary
shows them."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest
from random_graphs import make_grid

from blest.codegen.spec import VariantSpec
from blest.errors import ConfigError
from blest.tuning import tuner as tuner_mod
from blest.tuning.config import TunedConfig
from blest.tuning.summary import summary_lines
from blest.tuning.tuner import tune, write_tuned


@pytest.fixture
def config(tmp_path, rng, monkeypatch):
    """A written config (the paper's rules, no GPU) and its JSON object."""
    monkeypatch.setattr(tuner_mod, "_compile_check", lambda *a: ([], 0.0))
    out = tune(make_grid(rng, 200), source="/data/g.mtx", use_gpu=False, orderings=["rcm"])
    cfg = write_tuned(out, tmp_path / "g.blest.json")
    return cfg, json.loads((tmp_path / "g.blest.json").read_text())


def test_alpha_round_trip(config, tmp_path):
    """alpha is written as "alpha" and read back; 0 (the default, off) too."""
    cfg, data = config
    assert cfg.alpha == 0.0 and data["alpha"] == 0.0
    assert TunedConfig.read(tmp_path / "g.blest.json").alpha == 0.0
    guarded = replace(
        cfg, spec=VariantSpec(sigma=cfg.spec.sigma), eta=200.0, beta=100.0, alpha=14.0
    )
    guarded.write(tmp_path / "a.blest.json")
    again = TunedConfig.read(tmp_path / "a.blest.json")
    assert (again.eta, again.beta, again.alpha) == (200.0, 100.0, 14.0)
    assert again.to_dict() == guarded.to_dict() and again == guarded
    assert json.loads((tmp_path / "a.blest.json").read_text())["alpha"] == 14.0
    data["alpha"] = 4  # an integer is a number
    assert TunedConfig.from_dict(data).alpha == 4.0


def test_config_without_alpha_loads_with_the_guard_off(config):
    """Configs written before the guard (and before the return rule) lack the keys: both off."""
    _, data = config
    del data["alpha"]
    assert TunedConfig.from_dict(data).alpha == 0.0
    del data["beta"]
    old = TunedConfig.from_dict(data)
    assert (old.alpha, old.beta) == (0.0, 0.0)


@pytest.mark.parametrize("bad", [-1.0, -1e-9, math.nan, math.inf, "14", True, None, [14]])
def test_bad_alpha_is_refused_by_name(config, tmp_path, bad):
    _, data = config
    data["alpha"] = bad
    with pytest.raises(ConfigError, match=r"config\.alpha must be a finite number >= 0, got "):
        TunedConfig.from_dict(data)
    if not isinstance(bad, float) or math.isfinite(bad):  # strict JSON has no NaN or inf
        p = tmp_path / "bad.blest.json"
        p.write_text(json.dumps(data))
        with pytest.raises(ConfigError, match=r"bad\.blest\.json: config\.alpha must be"):
            TunedConfig.read(p)


def test_alpha_on_a_per_level_variant_is_refused(config):
    """The per-level launch has no grid barrier to count the guard's sums at: a config that
    pairs the two is refused when read, not at the first call."""
    _, data = config
    data["alpha"] = 14.0
    data["variant"] = VariantSpec(sigma=8, launch="per_level").to_dict()
    with pytest.raises(ConfigError, match="alpha > 0 needs a persistent variant"):
        TunedConfig.from_dict(data)
    data["alpha"] = 0.0
    assert TunedConfig.from_dict(data).spec.launch == "per_level"


def _variant_line(cfg: TunedConfig) -> str:
    return next(x for x in summary_lines(cfg) if x.startswith("variant"))


def test_summary_shows_the_guard(config):
    """``blest info CONFIG`` names alpha (like beta) for a switching variant where it is on."""
    cfg, _ = config
    switching = replace(cfg, spec=VariantSpec(sigma=cfg.spec.sigma), eta=200.0)
    line = _variant_line(switching)
    assert "eta=200" in line and "alpha" not in line and "beta" not in line
    line = _variant_line(replace(switching, beta=100.0, alpha=14.0))
    assert "eta=200  beta=100  alpha=14  [" in line
    plain = replace(cfg, spec=VariantSpec(sigma=8, update="eager", switching=False), alpha=14.0)
    assert "alpha" not in _variant_line(plain)
