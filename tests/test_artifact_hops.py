"""The prepared artifact of a variant that runs several levels a phase holds B's BVSS (version 3),
so that ``load_tuned`` builds nothing: B's arrays come back as they were written, the engine
reads them (the emulator here, against SciPy), and a damaged near mask or an oversized B is
refused. Artifacts without B (single-level variants, version 2) load as before."""

from __future__ import annotations

import dataclasses
import zipfile

import numpy as np
import pytest

import blest
from blest.codegen.spec import VariantSpec
from blest.datasets.generators import delaunay
from blest.errors import ConfigError
from blest.reference import bfs_levels
from blest.tuning.artifact import ARTIFACT_VERSION, load_artifact, save_artifact
from blest.tuning.artifact_checks import max_artifact_bytes
from blest.tuning.config import TunedConfig
from blest.tuning.loader import load_prepared
from blest.tuning.publish import write_tuned
from blest.tuning.tuner import tune

HOPS = VariantSpec(sigma=16, update="eager", queue="vss", switching=False, hops=3)


@pytest.fixture
def mesh(rng):
    return delaunay(512, seed=int(rng.integers(1 << 30)))  # 512 points


def _tuned_with_hops(tmp_path, graph, spec=HOPS):
    """A config whose variant is ``spec``, written as blest-tune writes one."""
    outcome = tune(graph, use_gpu=False, sigmas=(spec.sigma,), orderings=["rcm"])
    outcome.config.spec = spec
    path = tmp_path / "g.blest.json"
    write_tuned(outcome, path)
    return path, outcome.prepared


def test_the_artifact_holds_b_and_loading_builds_nothing(tmp_path, mesh, monkeypatch, rng):
    path, prepared = _tuned_with_hops(tmp_path, mesh)
    written = prepared.hops_bvss(3)
    cfg = TunedConfig.read(path)
    assert cfg.preparation.hop_arcs == written.nnz > mesh.nnz
    with zipfile.ZipFile(cfg.artifact_path) as z:
        assert {"hops.npy", "hop_near_masks.npy"} <= set(z.namelist())

    import blest.graph.hops as hops_module

    def no_build(*args, **kwargs):
        raise AssertionError("B was built again at load")

    monkeypatch.setattr(hops_module, "hops_bvss", no_build)
    loaded = load_prepared(cfg)
    got = loaded.hops_bvss(3)
    for name in ("row_ids", "masks", "real_ptrs", "virtual_to_real", "near_masks"):
        np.testing.assert_array_equal(getattr(got, name), getattr(written, name), err_msg=name)
    assert (got.nnz, got.real_slices) == (written.nnz, written.real_slices)
    with blest.load_tuned(path, device="emulator") as eng:
        assert eng.spec.hops == 3
        for src in rng.choice(mesh.n, 4, replace=False):
            np.testing.assert_array_equal(eng.bfs(int(src)), bfs_levels(mesh, int(src)))


def test_a_near_mask_outside_its_mask_is_refused(tmp_path, mesh):
    _, prepared = _tuned_with_hops(tmp_path, mesh)
    b = prepared.hops_bvss(3)
    near = np.array(b.near_masks)
    spot = int(np.flatnonzero(b.masks != 0xFFFFFFFF)[0])
    near[0, spot] |= ~np.asarray(b.masks)[spot]  # bits the outer mask does not hold
    prepared.hop_cache[3] = dataclasses.replace(b, near_masks=near)
    save_artifact(tmp_path / "bad.npz", prepared, hops=3)
    with pytest.raises(ConfigError, match="near mask"):
        load_artifact(tmp_path / "bad.npz")


def test_artifacts_without_b_load_as_before(tmp_path, mesh):
    path, prepared = _tuned_with_hops(tmp_path, mesh, VariantSpec(sigma=16))
    cfg = TunedConfig.read(path)
    assert cfg.preparation.hop_arcs is None
    loaded = load_prepared(cfg)
    assert loaded.hop_cache == {}
    with zipfile.ZipFile(cfg.artifact_path) as z:
        version = int(np.load(z.open("version.npy")))
        assert version == ARTIFACT_VERSION and "hops.npy" not in z.namelist()


def test_the_size_bound_counts_b():
    plain = max_artifact_bytes(1000, 6000, 16)
    assert max_artifact_bytes(1000, 6000, 16, hops=3, hop_arcs=36000) > plain
    assert max_artifact_bytes(1000, 6000, 16, hops=1, hop_arcs=36000) == plain
