"""The tuner without a GPU: config + artifact round trip and refusals, the emulated engine,
the search logic (driven by fake engines and a fake clock), source splitting, the space."""

from __future__ import annotations

import json
import time
import types
import warnings
from dataclasses import replace

import numpy as np
import pytest
from random_graphs import make_directed, make_grid, make_power_law

import blest
import blest.tuning.search as search_mod
from blest.codegen.spec import VariantSpec
from blest.defaults import SIGMAS
from blest.errors import ConfigError, GPUUnavailableError
from blest.graph.core import Graph
from blest.graph.ordering import compute_ordering
from blest.graph.prepared import Prepared
from blest.reference import bfs_levels
from blest.runtime.cpu import CPUEngine
from blest.runtime.emulated import EmulatedEngine
from blest.tuning import tuner as tuner_mod
from blest.tuning.config import CONFIG_VERSION, GPUInfo, TunedConfig, default_outputs
from blest.tuning.loader import load_prepared
from blest.tuning.prepare import (
    OrderingUnavailable,
    prepare,
    prepare_with_fallback,
    upload_all,
)
from blest.tuning.search import NOISE, Search, relative
from blest.tuning.space import (
    ALPHA_ETA,
    ALPHA_GRID,
    BEAMER_ALPHA,
    BETA_GRID,
    BLOCK_GEOMETRIES,
    ETA_GRID,
    GEOMETRIES,
    HOPPER_SMEM_LIMIT,
    REFINE_GEOMETRIES,
    RESIDENT_MAX_N,
    SMALL_QUEUES,
    Candidate,
    alpha_variants,
    beta_variants,
    block_fits,
    coarse_candidates,
    eta_variants,
    geometry_variants,
    paper_candidate,
    per_level_variant,
    persistent_specs,
    register_variants,
    small_queue_variants,
)
from blest.tuning.storage import atomic_write
from blest.tuning.tuner import split_sources, summarize_held_out, tune, write_tuned


@pytest.fixture(autouse=True)
def no_compile(monkeypatch):
    """The NVRTC check of the candidates is exercised in test_cli; skip it here."""
    monkeypatch.setattr(tuner_mod, "_compile_check", lambda *a: ([], 0.0))


def _tuned(tmp_path, graph: Graph, name: str = "g", **kw) -> tuple[TunedConfig, object]:
    out = tune(graph, source=f"/data/{name}.mtx", use_gpu=False, **kw)
    cfg = write_tuned(out, tmp_path / f"{name}.blest.json")
    return cfg, out


def _artifact(d, name: str = "g"):
    """The artifact the config ``d/<name>.blest.json`` names."""
    return d / json.loads((d / f"{name}.blest.json").read_text())["artifact"]["path"]


def _load(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return blest.load_tuned(path, **kw)


# ---------------------------------------------------------------------- files and config
def test_default_outputs(tmp_path):
    assert default_outputs("/x/road.mtx.gz", None) == (
        default_outputs("road.mtx", None)[0],
        default_outputs("road.mtx", None)[1],
    )
    cfg, art = default_outputs("/x/road.mtx.gz", None)
    assert (str(cfg), str(art)) == ("road.blest.json", "road.blest.npz")
    cfg, art = default_outputs("g.mtx", str(tmp_path / "out.blest.json"))
    assert cfg == tmp_path / "out.blest.json" and art == tmp_path / "out.blest.npz"
    assert default_outputs("g.mtx", "o/x.json")[1].name == "x.blest.npz"


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "f.bin"

    def boom(f):
        f.write(b"partial")
        raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError):
        atomic_write(target, boom)
    assert list(tmp_path.iterdir()) == []
    atomic_write(target, lambda f: f.write(b"ok"))
    assert target.read_bytes() == b"ok" and len(list(tmp_path.iterdir())) == 1


def test_config_round_trip(tmp_path, rng):
    g = make_grid(rng, 400)
    cfg, _ = _tuned(tmp_path, g, orderings=["rcm"])
    again = TunedConfig.read(tmp_path / "g.blest.json")
    assert again.to_dict() == cfg.to_dict()
    assert again == cfg
    data = json.loads((tmp_path / "g.blest.json").read_text())
    assert data["version"] == CONFIG_VERSION and data["tuned"] is False
    assert data["graph"]["hash"] == g.content_hash()
    assert (data["graph"]["n"], data["graph"]["arcs"]) == (g.n, g.nnz)
    assert data["preparation"]["ordering"] == "rcm" and data["preparation"]["sigma"] == 8
    sha = data["artifact"]["sha256"]
    assert data["artifact"]["path"] == f"g.blest.{sha[:12]}.npz" and len(sha) == 64
    assert VariantSpec.from_dict(data["variant"]) == cfg.spec
    assert data["gpu"] is None and isinstance(data["timing"], dict)
    assert any("paper's rules" in n for n in data["notes"])


def test_paper_rules_without_gpu(tmp_path, rng):
    g = make_grid(rng, 300)
    cfg, _ = _tuned(tmp_path, g)  # U_div is tiny on a small graph: eager, no switching
    assert cfg.spec == VariantSpec(sigma=8, update="eager", switching=False)
    assert cfg.preparation.u_div_sigma8 < 25_000
    cfg16, _ = _tuned(tmp_path, g, name="h", sigmas=(16,))
    assert cfg16.spec.sigma == 16 and any("sigma=16" in n for n in cfg16.notes)


def test_fallback_ordering_is_noted(tmp_path, rng):
    g = make_power_law(rng, 300)
    cfg, _ = _tuned(tmp_path, g, orderings=["no-such-order"])
    assert cfg.preparation.ordering == "rcm"
    assert any("no-such-order" in n and "used rcm" in n for n in cfg.notes)


# ---------------------------------------------------------------------- refusals
@pytest.fixture
def tuned_dir(tmp_path, rng):
    g = make_directed(rng, 300)
    _tuned(tmp_path, g, orderings=["rcm"])
    return tmp_path, g


def test_config_beta_is_optional_and_checked(tuned_dir):
    """``beta`` (the return rule) reaches the engine; a config without it (older versions)
    loads with the rule off; a bad value is refused by name."""
    d, g = tuned_dir
    p = d / "g.blest.json"
    data = json.loads(p.read_text())
    assert data["beta"] == 0.0
    data["beta"] = 100.0
    p.write_text(json.dumps(data))
    with _load(p) as eng:
        assert eng.beta == 100.0
        np.testing.assert_array_equal(eng.bfs(3), bfs_levels(g, 3))
    del data["beta"]
    p.write_text(json.dumps(data))
    with _load(p) as eng:
        assert eng.beta == 0.0
    for bad in (-1.0, True, "100", None, [1]):
        data["beta"] = bad
        p.write_text(json.dumps(data))
        with pytest.raises(ConfigError, match="config.beta must be"):
            _load(p)


def test_config_alpha_reaches_the_engine(tuned_dir):
    """``alpha`` (the edge-ratio guard) reaches the engine, levels unchanged; a config without
    it (older versions) loads with the guard off; a bad value is refused by name."""
    d, g = tuned_dir
    p = d / "g.blest.json"
    data = json.loads(p.read_text())
    assert data["alpha"] == 0.0
    data["alpha"] = BEAMER_ALPHA
    p.write_text(json.dumps(data))
    with _load(p) as eng:
        assert eng.alpha == BEAMER_ALPHA
        np.testing.assert_array_equal(eng.bfs(3), bfs_levels(g, 3))
    with _load(p, emulate=True) as eng:  # the kernel's rule, emulated
        assert eng.alpha == BEAMER_ALPHA
        np.testing.assert_array_equal(eng.bfs(3), bfs_levels(g, 3))
    del data["alpha"]
    p.write_text(json.dumps(data))
    with _load(p) as eng:
        assert eng.alpha == 0.0
    data["alpha"] = -14
    p.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match="config.alpha must be a finite number >= 0"):
        _load(p)


def test_tampered_artifact_is_refused(tuned_dir):
    d, _ = tuned_dir
    art = _artifact(d)
    data = bytearray(art.read_bytes())
    data[len(data) // 2] ^= 0xFF
    art.write_bytes(bytes(data))
    with pytest.raises(ConfigError, match="re-run blest-tune /data/g.mtx"):
        _load(d / "g.blest.json")


def test_graph_hash_mismatch_is_refused(tuned_dir):
    d, _ = tuned_dir
    p = d / "g.blest.json"
    data = json.loads(p.read_text())
    data["graph"]["hash"] = "0" * 64
    p.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match="another graph.*re-run blest-tune"):
        _load(p)


def test_artifact_of_another_graph_is_refused(tuned_dir, rng):
    d, _ = tuned_dir
    other = d / "other"
    other.mkdir()
    _tuned(other, make_grid(rng, 200))
    cfg_path = d / "g.blest.json"
    data = json.loads(cfg_path.read_text())
    other_art = json.loads((other / "g.blest.json").read_text())["artifact"]
    data["artifact"] = {"path": f"other/{other_art['path']}", "sha256": other_art["sha256"]}
    cfg_path.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match="another graph"):
        _load(cfg_path)


@pytest.mark.parametrize("version", [0, 1, "2", None, 3])
def test_unknown_version_is_refused(tuned_dir, version):
    d, _ = tuned_dir
    p = d / "g.blest.json"
    data = json.loads(p.read_text())
    data["version"] = version
    p.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match="version.*re-run blest-tune"):
        _load(p)


def test_missing_or_broken_files_are_refused(tuned_dir):
    d, _ = tuned_dir
    (d / "bad.json").write_text("{not json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        _load(d / "bad.json")
    (d / "other.json").write_text('{"format": "something else"}')
    with pytest.raises(ConfigError, match="not a blest tuned config"):
        _load(d / "other.json")
    with pytest.raises(ConfigError, match="no such tuned config"):
        _load(d / "absent.blest.json")
    p = d / "g.blest.json"
    data = json.loads(p.read_text())
    del data["launch_geometry"]
    (d / "partial.json").write_text(json.dumps(data))
    with pytest.raises(ConfigError, match="launch_geometry.*re-run blest-tune"):
        _load(d / "partial.json")
    _artifact(d).unlink()
    with pytest.raises(ConfigError, match="missing.*re-run blest-tune"):
        _load(p)


# ---------------------------------------------------------------------- emulated engine
SPECS_8 = [
    VariantSpec(sigma=8, update="eager", switching=False),
    VariantSpec(sigma=8, update="lazy", switching=True),
    VariantSpec(sigma=8, update="lazy", dirty_sets=True, queue="sweep", switching=True),
]


@pytest.mark.parametrize("ordering", ["natural", "rcm"])
def test_emulated_engine_matches_scipy(tmp_path, rng, ordering):
    g = make_directed(rng, 257)  # asymmetric; n % 8 != 0
    cfg, _ = _tuned(tmp_path, g, orderings=[ordering])
    path = tmp_path / "g.blest.json"
    sources = [int(s) for s in rng.choice(g.n, 6, replace=False)]
    for spec in SPECS_8:
        cfg.spec = spec
        cfg.eta = 2.0
        cfg.write(path)  # the artifact does not depend on the variant at one sigma
        with pytest.warns(RuntimeWarning, match="no GPU: blest runs SciPy"):
            cpu = blest.load_tuned(path)
        emu = blest.load_tuned(path, device="emulator")
        assert isinstance(cpu, CPUEngine) and isinstance(emu, EmulatedEngine)
        for eng in (cpu, emu):
            assert eng.spec == spec
            for s in sources:
                assert np.array_equal(eng.bfs(s), bfs_levels(g, s)), (spec.name, s)
            out = np.full(g.n, 0x5A5A5A5A, dtype=np.int32)
            assert eng.bfs(sources[0], out=out) is out
            assert np.array_equal(out, bfs_levels(g, sources[0]))
            assert eng.stats.source == sources[0]
            assert "blest_bfs" in eng.source


@pytest.mark.parametrize("device", [None, "cpu", "emulator"])
def test_cpu_engines_argument_errors(tuned_dir, device):
    d, g = tuned_dir
    eng = _load(d / "g.blest.json", device=device)
    with pytest.raises(IndexError):
        eng.bfs(g.n)
    with pytest.raises(TypeError):
        eng.bfs(1.5)
    with pytest.raises(GPUUnavailableError):
        eng.bfs(0, out="device")
    with pytest.raises(ValueError):
        eng.bfs(0, out=np.empty(3, dtype=np.int32))
    with pytest.raises(RuntimeError, match="no bfs call"):
        eng.stats  # noqa: B018
    with eng:
        pass
    with pytest.raises(RuntimeError, match="closed"):
        eng.bfs(0)


def test_gpu_path_builds_engine_from_artifact(tuned_dir, monkeypatch):
    """load_tuned on a GPU: the Engine gets the artifact's arrays as they are (BVSS,
    permutation, in-adjacency) and the config's geometry; a config made without a GPU (or on
    another GPU) warns but runs."""
    d, g = tuned_dir
    made = {}

    class FakeEngine:
        def __init__(self, prepared, spec, **kw):
            made.update(prepared=prepared, spec=spec, **kw)
            self.device_name = "NVIDIA H200"

    monkeypatch.setattr("blest.runtime.engine.Engine", FakeEngine)
    monkeypatch.setattr(
        "blest.codegen.toolchain.require_gpu", lambda d=None: (0, "sm_90", "NVIDIA H200")
    )
    with pytest.warns(RuntimeWarning, match="not tuned on a GPU"):
        blest.load_tuned(d / "g.blest.json", emulate=False)
    cfg = TunedConfig.read(d / "g.blest.json")
    prep = load_prepared(cfg)
    got = made["prepared"]
    assert isinstance(got, Prepared) and got.graph.content_hash() == g.content_hash()
    assert made["spec"] == cfg.spec and made["eta"] == cfg.eta and made["device"] == 0
    assert got.sigma == cfg.spec.sigma and np.array_equal(got.bvss.masks, prep.bvss.masks)
    assert np.array_equal(got.permutation.old_of_new, prep.permutation.old_of_new)
    assert np.array_equal(got.in_idx, prep.in_idx)
    assert (made["block_size"], made["blocks_per_sm"], made["small_queue"]) == (256, None, None)
    cfg.tuned, cfg.gpu = True, GPUInfo("NVIDIA H100", "9.0")
    cfg.write(d / "g.blest.json")
    with pytest.warns(RuntimeWarning, match="tuned on NVIDIA H100, this is NVIDIA H200"):
        blest.load_tuned(d / "g.blest.json", emulate=False)
    cfg.gpu.name = "NVIDIA H200"
    cfg.write(d / "g.blest.json")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        blest.load_tuned(d / "g.blest.json", emulate=False)


# ---------------------------------------------------------------------- preparation
def test_orderings_by_name(rng):
    g = make_grid(rng, 200)
    assert compute_ordering(g, "natural").is_identity
    perm = compute_ordering(g, "rcm")
    assert np.array_equal(np.sort(perm.old_of_new), np.arange(g.n))
    with pytest.raises(blest.ArgumentError):
        compute_ordering(g, "bogus")
    with pytest.raises(OrderingUnavailable):
        prepare(g, "bogus", 8)
    jac = prepare(g, "jaccard", 8)  # on a CPU: JaccardWithWindows (Numba) or RCM with a note
    assert jac.ordering in ("jaccard", "rcm") and (jac.ordering == "jaccard") != bool(jac.notes)
    prep = prepare(g, "rcm", 8)
    assert prep.internal.nnz == g.nnz and set(prep.seconds) == {"ordering", "permute"}
    assert prep.bvss(8).sigma == 8 and "bvss_sigma8" in prep.seconds
    prep, notes = prepare_with_fallback(g, "bogus", 8)
    assert prep.ordering == "rcm" and "bogus" in notes[0]


def test_upload_all_builds_every_pair_and_leaves_the_rest_when_memory_runs_out():
    class OutOfMemory(Exception):
        pass

    xp = types.SimpleNamespace(cuda=types.SimpleNamespace(memory=types.SimpleNamespace(
        OutOfMemoryError=OutOfMemory)))  # fmt: skip
    built: list[tuple[str, int]] = []

    class Prep:
        def __init__(self, name: str, fails_at: int | None = None) -> None:
            self.name, self.fails_at = name, fails_at

        def prepared(self, sigma: int, xp: object = None) -> None:
            if sigma == self.fails_at:
                raise OutOfMemory("out of memory allocating 1,073,741,824 bytes\nmore")
            built.append((self.name, sigma))

    notes: list[str] = []
    said: list[str] = []
    upload_all({"rcm": Prep("rcm"), "natural": Prep("natural")}, (4, 8), xp, notes, said.append)
    assert built == [("rcm", 4), ("rcm", 8), ("natural", 4), ("natural", 8)] and not notes
    assert said == ["BVSS rcm sigma=4", "BVSS rcm sigma=8", "BVSS natural sigma=4",
                    "BVSS natural sigma=8"]  # fmt: skip
    built.clear()
    upload_all({"rcm": Prep("rcm", fails_at=8), "natural": Prep("natural")}, (4, 8, 16), xp,
               notes, said.append)  # fmt: skip
    assert built == [("rcm", 4)]  # the search builds the rest on demand
    assert notes == ["BVSS built on demand during the search (out of memory allocating "
                     "1,073,741,824 bytes)"]  # fmt: skip


def test_split_sources(rng):
    g = make_grid(rng, 500)
    tuning, held, note = split_sources(g)
    assert len(tuning) == 8 and len(held) == 64 and note is None
    assert not set(tuning.tolist()) & set(held.tolist())
    assert np.all(g.out_degree[tuning] > 0) and np.all(g.out_degree[held] > 0)
    again = split_sources(g)
    assert np.array_equal(again[0], tuning) and np.array_equal(again[1], held)
    tiny = Graph.from_arcs(np.array([0, 1]), np.array([1, 2]), 3, directed=True)
    tuning, held, note = split_sources(tiny)
    assert set(tuning.tolist()) <= {0, 1} and note is not None


# ---------------------------------------------------------------------- search space
def test_space():
    specs = persistent_specs((8, 16))
    assert all(s.launch == "persistent" and s.sigma in (8, 16) for s in specs)
    # per sigma: 10 on tensor cores, the resident queue, 2 csr, and the 3 eager ones again with
    # 128 registers (compiled by the tuner's check, timed only in refinement); the eager vss one
    # with two and three levels a phase, at both budgets (screened only where B is small)
    assert specs[0].sigma == 8 and len(specs) == 40
    coarse = coarse_candidates(["natural", "rcm"], (8,))  # no n: no resident queue
    assert len(coarse) == len(GEOMETRIES) * 12 * 2 and len(set(coarse)) == len(coarse)
    assert all(c.eta == (10.0 if c.spec.switching else None) for c in coarse)
    sw = next(c for c in coarse if c.spec.switching)
    assert sorted(c.eta for c in eta_variants(sw)) == sorted(e for e in ETA_GRID if e != 10.0)
    eager = next(c for c in coarse if c.spec.update == "eager")
    assert eta_variants(eager) == [] and beta_variants(eager) == []
    assert all(c.beta is None and c.engine_beta == 0.0 for c in coarse)
    betas = beta_variants(sw)
    assert [c.beta for c in betas] == list(BETA_GRID) and all(c.eta == sw.eta for c in betas)
    assert {c.beta for c in beta_variants(betas[1])} == {None, *BETA_GRID} - {BETA_GRID[1]}
    assert betas[0].label.endswith(f"beta={BETA_GRID[0]:g} 256xocc")
    assert Candidate.from_dict(betas[0].to_dict()) == betas[0]
    assert {c.small_queue for c in small_queue_variants(eager)} == set(SMALL_QUEUES)
    assert {c.small_queue for c in small_queue_variants(sw)} == set(SMALL_QUEUES)
    pl = per_level_variant(sw)
    assert pl.spec.launch == "per_level" and per_level_variant(pl) is None
    assert per_level_variant(replace(sw, alpha=14.0)) is None  # the guard needs a grid barrier
    assert alpha_variants(pl) == []
    assert small_queue_variants(pl) == []
    csr = next(c for c in coarse if c.spec.expand == "csr" and c.spec.switching)
    assert per_level_variant(csr) is None and len(eta_variants(csr)) == len(ETA_GRID) - 1
    assert paper_candidate("rcm", 30_000.0, True).spec.update == "lazy"
    assert paper_candidate("rcm", 100.0, True).spec == VariantSpec(update="eager", switching=False)
    assert Candidate.from_dict(sw.to_dict()) == sw
    assert "eta=off" in replace(sw, eta=0.0).label
    shapes = {(c.block_size, c.blocks_per_sm) for c in geometry_variants(sw)}
    assert shapes == set(GEOMETRIES + REFINE_GEOMETRIES) - {(sw.block_size, sw.blocks_per_sm)}
    assert all(replace(g, block_size=sw.block_size, blocks_per_sm=sw.blocks_per_sm) == sw
               for g in geometry_variants(sw))  # fmt: skip
    assert geometry_variants(pl) == [] and geometry_variants(paper_candidate("rcm", 1.0, True))
    # the register budget: eager persistent leaders in one block of at most 512 threads per SM
    assert all(c.spec.registers == 64 for c in coarse)
    assert register_variants(eager) == []  # 256 threads, blocks per SM from the occupancy
    for block in (128, 512):
        one = replace(eager, block_size=block, blocks_per_sm=1)
        [wide] = register_variants(one)
        assert wide.spec == replace(eager.spec, registers=128)
        assert replace(wide, spec=eager.spec) == one and register_variants(wide) == []
        assert Candidate.from_dict(wide.to_dict()) == wide and "_r128_" in wide.label
        assert per_level_variant(wide) is None and len(small_queue_variants(wide)) == 2
        assert {g.block_size for g in geometry_variants(wide)} <= {128, 256, 512}
    for c in (replace(eager, block_size=1024), sw, pl, csr):  # 1,024 threads, or not eager
        assert register_variants(replace(c, blocks_per_sm=1)) == []


def test_space_tries_the_edge_ratio_guard_at_a_large_eta():
    """alpha_variants: Beamer's alpha at the candidate's eta and at the grid's largest, the other
    guards at the largest only; nothing for variants without switching; never the candidate
    itself, nor the guard at eta off (no bottom-up level to guard). Every other knob is kept."""
    coarse = coarse_candidates(["natural", "rcm"], (8,))
    sw = replace(next(c for c in coarse if c.spec.switching), beta=100.0, small_queue=32)
    assert ALPHA_ETA == max(ETA_GRID) == 200.0 and set(ALPHA_GRID) == {4.0, 14.0, 50.0}
    assert BEAMER_ALPHA == 14.0 and all(c.alpha is None and c.engine_alpha == 0.0 for c in coarse)
    got = alpha_variants(sw)
    assert [(c.alpha, c.eta) for c in got] == [(14.0, sw.eta), (14.0, 200.0), (4.0, 200.0),
                                               (50.0, 200.0)]  # fmt: skip
    assert all(replace(c, alpha=None, eta=sw.eta) == sw for c in got)
    assert [c.engine_alpha for c in got] == [14.0, 14.0, 4.0, 50.0]
    at_top = alpha_variants(replace(sw, eta=200.0))
    assert [(c.alpha, c.eta) for c in at_top] == [(14.0, 200.0), (4.0, 200.0), (50.0, 200.0)]
    assert [(c.alpha, c.eta) for c in alpha_variants(got[1])] == [(4.0, 200.0), (50.0, 200.0)]
    assert [(c.alpha, c.eta) for c in alpha_variants(got[0])] == [(14.0, 200.0), (4.0, 200.0),
                                                                  (50.0, 200.0)]  # fmt: skip
    assert [(c.alpha, c.eta) for c in alpha_variants(replace(sw, eta=0.0))] == [
        (14.0, 200.0), (4.0, 200.0), (50.0, 200.0)]  # fmt: skip
    for c in coarse_candidates(["rcm"], (8, 16), n=1000, clusters=True):
        if not c.spec.switching:
            assert alpha_variants(c) == []
    # the label, as the timing table and the summary show it; the round trip of a table row
    assert got[0].label.endswith(f"eta={sw.eta:g} beta=100 alpha=14 256xocc sq=32")
    assert "alpha" not in sw.label
    for c in got:
        assert Candidate.from_dict(c.to_dict()) == c and c.to_dict()["alpha"] == c.alpha
    old = sw.to_dict()
    del old["alpha"]  # a timing table written before the guard
    assert Candidate.from_dict(old) == sw and Candidate.from_dict(old).alpha is None
    assert all(c.engine_key == sw.engine_key for c in got)  # one engine times them all


def test_space_holds_the_resident_queue_on_small_graphs_only():
    """The resident queue joins the coarse pass on graphs of at most RESIDENT_MAX_N vertices,
    in every geometry and ordering, and takes no small-queue threshold and no per-level
    launch (it keeps no |Q|, and its registers live for one launch)."""
    orderings = ["natural", "rcm"]
    small = coarse_candidates(orderings, (8, 32), n=RESIDENT_MAX_N)
    resident = [c for c in small if c.spec.queue == "resident"]
    assert {(c.ordering, c.spec.sigma, c.block_size) for c in resident} == {
        (o, s, b) for o in orderings for s in (8, 32) for b, _ in GEOMETRIES
    }
    assert all(c.spec.update == "eager" and c.eta is None for c in resident)
    assert all(small_queue_variants(c) == [] and per_level_variant(c) is None for c in resident)
    assert all(Candidate.from_dict(c.to_dict()) == c for c in resident)  # as a config holds it
    assert all(len(geometry_variants(c)) == len(GEOMETRIES + REFINE_GEOMETRIES) - 1
               for c in resident)  # fmt: skip
    big = coarse_candidates(orderings, (8, 32), n=RESIDENT_MAX_N + 1)
    assert [c for c in small if c.spec.queue != "resident"] == big
    assert not any(c.spec.queue == "resident" for c in big)


def test_space_holds_the_block_launch_where_its_bitmap_fits():
    """One block-launch candidate per (block size, ordering, sigma) when the graph's visited
    bitmap fits in a block's shared memory (about 1.8M vertices on Hopper), none otherwise."""
    orderings = ["natural", "rcm"]
    plain = coarse_candidates(orderings, (8, 16))
    assert plain == coarse_candidates(orderings, (8, 16), n=None)  # no n: no block launch
    small = coarse_candidates(orderings, (8, 16), n=114_599)
    block = [c for c in small if c.spec.launch == "block"]
    grid = [c for c in small if c.spec.launch != "block" and c.spec.queue != "resident"]
    assert grid == plain
    assert {(c.ordering, c.spec, c.block_size) for c in block} == {
        (o, VariantSpec.block(s), b) for o in orderings for s in (8, 16) for b in BLOCK_GEOMETRIES
    }
    assert len(block) == len(orderings) * 2 * len(BLOCK_GEOMETRIES) == 12
    assert all(c.eta is None and c.blocks_per_sm == 1 for c in block)
    assert set(BLOCK_GEOMETRIES) == {256, 512, 1024}
    assert all(small.index(c) < len(small) // 2 for c in block)  # in the first rounds
    assert block[0].label == "natural/s8_block 256x1"
    assert all(Candidate.from_dict(c.to_dict()) == c for c in block)
    assert block_fits(1_800_000) and not block_fits(1_900_000)
    assert HOPPER_SMEM_LIMIT == 227 * 1024 - 4096
    big = coarse_candidates(orderings, (8, 16), n=1_900_000)
    assert big == plain
    tight = coarse_candidates(orderings, (8,), n=114_599, smem_limit=100_000 // 8)
    assert not [c for c in tight if c.spec.launch == "block"]
    assert not [c for c in coarse_candidates(orderings, (8,), n=0) if c.spec.sigma != 8]
    for c in block:  # refinement leaves the block launch as it is
        assert eta_variants(c) == [] and small_queue_variants(c) == []
        assert beta_variants(c) == [] and per_level_variant(c) is None


def test_space_holds_the_cluster_launch_on_gpus_with_clusters():
    """With ``clusters`` (an sm_90 GPU), one cluster candidate per (ordering, sigma) of each
    cluster shape whose bitmap share fits; none without it, or where it does not fit."""
    from blest.tuning.space import CLUSTER_GEOMETRIES

    orderings = ["natural", "rcm"]
    without = coarse_candidates(orderings, (8, 16), n=114_599)
    with_ = coarse_candidates(orderings, (8, 16), n=114_599, clusters=True)
    extra = [c for c in with_ if c.spec.cluster > 1]
    assert [c for c in with_ if c.spec.cluster == 1] == without
    want = {
        (o, VariantSpec.block(s, cluster), block)
        for o in orderings
        for s in (8, 16)
        for cluster, block in CLUSTER_GEOMETRIES
    }
    assert {(c.ordering, c.spec, c.block_size) for c in extra} == want and len(extra) == len(want)
    assert all(c.eta is None and per_level_variant(c) is None for c in extra)
    assert all(Candidate.from_dict(c.to_dict()) == c for c in extra)
    cluster = CLUSTER_GEOMETRIES[0][0]
    assert block_fits(16 * 1_700_000, cluster=cluster) and not block_fits(1_900_000)
    over = 16 * 1_900_000  # fits no block and no cluster: the persistent kernels only
    assert coarse_candidates(orderings, (8,), n=over, clusters=True) == coarse_candidates(
        orderings, (8,), n=over
    )


# ---------------------------------------------------------------------- search with fakes
class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def _cost(c: Candidate, eta: float, sq: int) -> float:
    """A synthetic traversal time with a unique optimum: rcm, sigma 16, lazy switching,
    eta 20, 1024 threads, small_queue 128, persistent."""
    t = 1.0
    t += 0.0 if c.ordering == "rcm" else 0.3
    t += {16: 0.0, 8: 0.1, 4: 0.4, 32: 0.5}[c.spec.sigma]
    t += 0.0 if (c.spec.update == "lazy" and c.spec.switching) else 0.2
    t += 0.0 if c.spec.switching and eta == 20.0 else 0.05
    t += 0.0 if c.block_size == 1024 else 0.02
    t += 0.0 if sq == 128 else 0.01
    t += 0.0 if c.spec.launch == "persistent" else 0.5
    t += 0.001 * c.spec.dirty_sets + 0.002 * (c.spec.queue == "sweep")
    return t


class FakeEngine:
    """``cost(candidate, eta, small_queue, src)`` ms per traversal, plus ``beta_cost(beta)``
    and ``alpha_cost(alpha, eta, src)`` (default 0); building costs ``build_s`` and a traversal
    ``call_s`` plus its own time on the fake clock."""

    def __init__(self, c: Candidate, clock: FakeClock, fail: bool = False, cost=None,
                 build_s: float = 0.05, call_s: float = 0.001, beta_cost=None,
                 alpha_cost=None) -> None:  # fmt: skip
        self.c, self.clock, self.fail = c, clock, fail
        self.cost = cost or (lambda c, eta, sq, src: _cost(c, eta, sq))
        self.beta_cost = beta_cost or (lambda beta: 0.0)
        self.alpha_cost = alpha_cost or (lambda alpha, eta, src: 0.0)
        self.call_s = call_s
        self.eta, self.small_queue = c.engine_eta, 16 if c.small_queue is None else c.small_queue
        self.beta = c.engine_beta
        self.alpha = c.engine_alpha
        self.closed = False
        self.calls = 0
        clock.t += build_s

    def bfs(self, src, out=None):
        if self.fail:
            raise RuntimeError("a grid barrier timed out")
        self.calls += 1
        ms = self.cost(self.c, self.eta, self.small_queue, src) + self.beta_cost(self.beta)
        ms += self.alpha_cost(self.alpha, self.eta, src)
        self.clock.t += self.call_s + ms / 1e3
        self.stats = types.SimpleNamespace(traversal_ms=ms)

    def close(self):
        self.closed = True


def _search(budget: float, per_level: bool = True, fail=lambda c: False, confirm=(), **fake):
    clock = FakeClock()
    engines = []

    def make(c):
        if c.block_size == 1024 and c.spec.sigma == 32:
            raise GPUUnavailableError("cannot run 1024 threads per block")
        e = FakeEngine(c, clock, fail(c), **fake)
        engines.append(e)
        return e

    s = Search(make, range(8), confirm_sources=confirm, budget_s=budget, clock=clock,
               per_level=per_level)  # fmt: skip
    return s, engines, clock


def test_refinement_tries_the_return_rule():
    """Where the return rule pays (beta 100 saves 4%), the "beta" stage finds it on the
    leaders and the pick carries it; where it does not, the pick keeps it off."""
    coarse = coarse_candidates(["natural", "rcm"])
    s, _, _ = _search(budget=1e6, beta_cost=lambda beta: 0.0 if beta == 100.0 else 0.05)
    s.run(coarse)
    best = s.pick().candidate
    assert best.spec.switching and best.beta == 100.0 and best.eta == 20.0
    assert {t.candidate.beta for t in s.results if t.stage == "beta"} >= {*BETA_GRID}
    s, _, _ = _search(budget=1e6)
    s.run(coarse)
    assert s.pick().candidate.beta is None


def _kron_guard_cost(c, eta, sq, src):
    """kron-22 as the guard meets it: eta 100 and 200 save 10% on every source (the sigma-8
    lazy switching leaders at 0.30 ms, the rest 1.5x slower)."""
    t = 0.30 * (1.0 if c.spec.switching and c.spec.sigma == 8 else 1.5)
    return t * (0.9 if eta >= 100.0 else 1.0)


def _kron_guard_alpha_cost(alpha, eta, src):
    """...but from one source in eight (hubs on level 2) eta 50 and above send a level
    bottom-up, for 3 ms more, unless a guard of alpha <= 30 keeps it top-down; alpha 4 also keeps
    a level top-down that bottom-up wins (0.02 ms)."""
    misfire = eta >= 50.0 and src % 8 == 3 and not 0.0 < alpha <= 30.0
    return 3.0 * misfire + 0.02 * (0.0 < alpha < 10.0)


def test_refinement_tries_the_edge_ratio_guard():
    """The "alpha" stage runs after the "beta" stage on the leaders, at their eta and at eta
    200; where the guard makes the large eta safe (kron-22's hub levels) the pick is eta 200 with
    alpha 14, on the tuning sources and after confirmation; where it does not pay, the pick
    keeps it off."""
    coarse = coarse_candidates(["natural"], (8,))
    for confirm in ((), range(100, 116)):
        s, engines, _ = _search(budget=1e6, cost=_kron_guard_cost, confirm=confirm,
                                alpha_cost=_kron_guard_alpha_cost)  # fmt: skip
        s.run(coarse)
        stages = [t.stage for t in s.results]
        assert "alpha" in stages and stages.index("beta") < stages.index("alpha")
        best = s.pick().candidate
        assert (best.alpha, best.eta) == (BEAMER_ALPHA, 200.0), best.label
        assert all(t.candidate.spec.switching for t in s.results if t.stage == "alpha")
        guarded = {(t.candidate.alpha, t.candidate.eta): t for t in s.results
                   if t.stage == "alpha" and t.candidate.engine_key == best.engine_key}  # fmt: skip
        assert set(guarded) >= {(a, 200.0) for a in ALPHA_GRID}
        # one engine timed them, each with its own guard (configure sets it on the live engine)
        ms = {a: guarded[(a, 200.0)].score_ms for a in ALPHA_GRID}
        assert ms[4.0] > ms[BEAMER_ALPHA] * 1.05 and ms[50.0] > 2 * ms[BEAMER_ALPHA]
        assert all(e.closed for e in engines)
        if confirm:  # confirmation measured the guarded configuration as a candidate of its own
            assert any(t.candidate == best for t in s.confirmed)
    s, _, _ = _search(budget=1e6, alpha_cost=lambda alpha, eta, src: 0.01 * (alpha > 0))
    s.run(coarse_candidates(["natural", "rcm"]))
    assert s.pick().candidate.alpha is None and any(t.stage == "alpha" for t in s.results)


def test_the_search_ranks_by_the_mean_over_the_sources():
    """kron-22's landscape on an H200 (session 20): a larger eta is as fast on most sources and
    much slower on a few (the switching rule misfires on their tails). By the median of the
    sources the two tie and eta 50 came first; by the mean, the protocol's statistic, eta 20
    wins, on the tuning sources and on the confirmation ones."""

    def cost(c, eta, sq, src):
        t = 0.30 * (1.0 if c.spec.switching and c.spec.sigma == 8 else 1.5)
        tail = src % 4 == 1  # a quarter of the sources
        return t * (1.0 + (0.5 if tail and eta > 20.0 else 0.0) + 0.001 * (eta == 20.0))

    s, _, _ = _search(budget=1e6, cost=cost, confirm=range(100, 116))
    s.run(coarse_candidates(["natural"], (8,)))
    best = s.pick()
    assert best.candidate.spec.switching and best.candidate.eta <= 20.0, best.candidate.label
    worse = [t for t in s.results if t.ok and t.candidate.spec == best.candidate.spec
             and (t.candidate.eta or 0) > 20.0]  # fmt: skip
    assert worse and all(t.median_ms <= best.median_ms * 1.01 for t in worse)
    assert all(t.score_ms > best.score_ms for t in worse)


def test_confirmation_weighs_the_leaders_eta_values(monkeypatch):
    """kron-22's landscape as the tuner met it on an H200 (session 20): the eta grid ties on
    the tuning sources, and a larger eta costs 2x on a quarter of the other sources. The
    confirmation runs the leader at other eta values too, and its mean there picks eta <= 20;
    without them (CONFIRM_ETAS = 0) the tie on the tuning sources decides, for eta 50 (the
    other groups, in slower geometries, do not make up for it)."""

    def cost(c, eta, sq, src):
        t = 0.30 * (1.0 if c.spec.switching and c.spec.sigma == 8 else 1.5)
        t *= 1.0 if (c.block_size, c.blocks_per_sm) == (1024, 1) else 1.3
        tail = src >= 100 and src % 4 == 1
        return t * (1.0 + (1.0 if tail and eta > 20.0 else 0.0) - 0.001 * (eta == 50.0))

    picks = {}
    for etas in (0, search_mod.CONFIRM_ETAS):
        monkeypatch.setattr(search_mod, "CONFIRM_ETAS", etas)
        s, _, _ = _search(budget=1e6, cost=cost, confirm=range(100, 116))
        s.run(coarse_candidates(["natural"], (8,)))
        picks[etas] = s.pick().candidate
        confirmed = {t.candidate.eta for t in s.confirmed if t.candidate.spec.switching}
        assert len(confirmed) >= 1 + min(etas, 1)
    assert picks[0].eta == 50.0 and picks[search_mod.CONFIRM_ETAS].eta <= 20.0


def test_search_finds_the_optimum_with_enough_budget():
    s, engines, clock = _search(budget=1e6)
    paper = paper_candidate("natural", 100.0, False)
    s.run(coarse_candidates(["natural", "rcm"]), baseline=paper)
    best = s.pick().candidate
    assert (best.ordering, best.spec.sigma, best.spec.update, best.spec.switching) == (
        "rcm",
        16,
        "lazy",
        True,
    )
    assert (best.eta, best.block_size, best.small_queue) == (20.0, 1024, 128)
    assert best.spec.launch == "persistent"
    stages = [t.stage for t in s.results]
    assert stages[0] == "paper" and {"coarse", "eta", "small_queue", "per_level"} <= set(stages)
    assert all(e.closed for e in engines)
    # successive halving: 2 sources each, then 4 for the better half, 8 for the leaders
    counts = {len(t.times_ms) for t in s.results if t.ok and t.stage == "coarse"}
    assert counts == {2, 4, 8}
    assert len(s.pick().times_ms) == 8 and s.confirmed == []  # no confirmation sources
    failed = [t for t in s.results if not t.ok]
    assert failed and all("1024 threads" in t.error for t in failed)


def test_search_respects_the_budget():
    s, _, clock = _search(budget=2.0)
    s.run(coarse_candidates(["natural", "rcm"]), baseline=paper_candidate("rcm", 1.0, False))
    # one candidate (engine + 3 runs) costs ~0.055 s: stops near the budget
    assert clock.t < 2.0 + 0.2
    coarse = [t for t in s.results if t.stage == "coarse"]
    assert 0 < len(coarse) < len(coarse_candidates(["natural", "rcm"]))
    assert s.results[0].stage == "paper"
    tiny, _, _ = _search(budget=1e-9)
    tiny.run(coarse_candidates(["rcm"]), baseline=paper_candidate("rcm", 1.0, False))
    assert [t.stage for t in tiny.results] == ["paper"]  # the baseline is always timed


def test_screen_covers_every_geometry_and_ordering_on_a_short_budget():
    """The first screening round is interleaved: a budget that ends it early still leaves
    candidates of every (geometry, ordering, sigma) group timed, not only the first geometry."""
    s, _, _ = _search(budget=2.0)
    s.run(coarse_candidates(["natural", "rcm"]))
    coarse = [t.candidate for t in s.results if t.stage == "coarse"]
    assert len(coarse) < len(coarse_candidates(["natural", "rcm"]))
    groups = {(c.block_size, c.ordering, c.spec.sigma) for c in coarse}
    assert len(groups) == 2 * 2 * 4


def _deep_graph_cost(c, eta, sq, src):
    """luxembourg-like: ~4 ms traversals; 1024-thread blocks 25% faster; sigma and variant
    matter less; a per-source spread of +-10%."""
    t = 4.0 * (0.75 if c.block_size == 1024 else 1.0)
    t *= {8: 1.0, 16: 0.97, 32: 0.95, 4: 1.05}[c.spec.sigma]
    t *= 1.0 + 0.02 * (c.spec.update == "lazy") + 0.01 * c.spec.dirty_sets
    t *= 1.0 + 0.01 * (c.spec.switching and eta != 50.0)
    t *= 1.0 + 0.005 * (sq != 128)
    t *= 1.0 + 0.5 * (c.spec.launch != "persistent")
    return t * (0.9 + 0.2 * ((src * 7919) % 17) / 16)


@pytest.mark.parametrize("budget", [10.0, 20.0])
def test_a_short_budget_picks_within_5_percent_of_a_long_one(budget):
    """The demo's budget (20 s) against 60 s, on a landscape where the geometry decides: the
    old geometry-major coarse pass ran out of budget inside the first geometry."""
    picks = {}
    for b in (budget, 60.0):
        # engine 0.1 s, 3 ms of host time per call: at 10 s, the old geometry-major pass
        # never left 256-thread blocks (33% slower than the 60 s pick)
        s, _, clock = _search(budget=b, confirm=range(100, 116), cost=_deep_graph_cost,
                              build_s=0.1, call_s=0.003)  # fmt: skip
        s.run(coarse_candidates(["natural", "rcm"]), baseline=paper_candidate("rcm", 1.0, False))
        pick = s.pick().candidate
        picks[b] = np.mean([_deep_graph_cost(pick, pick.engine_eta, 128 if pick.small_queue
                            == 128 else 16, src) for src in range(200, 264)])  # fmt: skip
        assert clock.t < b * 1.1 and s.confirm_rounds >= 1
    assert picks[budget] <= picks[60.0] * 1.05


def _eager_cost(c, eta, sq, src):
    """delaunay-like: ~2 ms traversals where the eager update is 20% faster than any lazy
    variant (no switching helps); a per-source spread of +-5%."""
    t = 2.0 * (0.8 if c.spec.update == "eager" else 1.0)
    t *= {8: 1.0, 16: 0.98, 32: 0.97, 4: 1.04}[c.spec.sigma]
    t *= 1.0 + 0.5 * (c.spec.launch != "persistent")
    return t * (0.95 + 0.1 * ((src * 7919) % 13) / 12)


def test_each_family_is_screened_early():
    """Within a sigma, the coarse pass tries the eager update second (after the paper's lazy
    variant with switching), not after every lazy variant: at the demo's budget, a landscape
    where eager wins is picked as at 60 s (the lazy-first order never reached eager at 20 s)."""
    specs = persistent_specs((8,))
    assert [(s.hops, s.update) for s in specs][:3] == [(1, "lazy"), (3, "eager"), (2, "eager")]
    one_level = [s for s in specs if s.hops == 1]  # (the others only on graphs of few arcs)
    assert [s.update for s in one_level][:2] == ["lazy", "eager"]
    assert one_level[2].expand == "csr"
    means = {}
    for b in (20.0, 60.0):
        s, _, clock = _search(budget=b, confirm=range(100, 116), cost=_eager_cost,
                              build_s=0.1, call_s=0.003)  # fmt: skip
        s.run(coarse_candidates(["natural", "rcm"], SIGMAS))
        pick = s.pick().candidate
        means[b] = np.mean([_eager_cost(pick, 0, 0, src) for src in range(200, 264)])
        assert pick.spec.update == "eager" and clock.t < b * 1.1
    assert means[20.0] <= means[60.0] * 1.05


def test_budget_left_after_a_pass_goes_to_the_untried_candidates(monkeypatch):
    """When screen, refinement and confirmation end early, a second pass takes the coarse
    candidates the screen never reached, in the rest of the budget: here the fastest variant
    sits in the last family of the order, beyond what the first screen reaches."""
    from blest.tuning import search as search_mod

    def cost(c, eta, sq, src):
        late = c.spec == VariantSpec(sigma=16, update="lazy", switching=False)
        return _eager_cost(c, eta, sq, src) * (0.6 if late else 1.0)

    def run(second_pass_before):
        monkeypatch.setattr(search_mod, "SECOND_PASS_BEFORE", second_pass_before)
        s, _, clock = _search(budget=20.0, confirm=range(100, 116), cost=cost,
                              build_s=0.1, call_s=0.003)  # fmt: skip
        coarse = coarse_candidates(["natural", "rcm"], (8, 16))
        s.run(coarse)
        screened = {t.candidate for t in s.results if t.stage == "coarse"}
        return s, clock, screened, coarse

    default = search_mod.SECOND_PASS_BEFORE
    one, one_clock, one_screened, coarse = run(0.0)  # no second pass
    two, two_clock, two_screened, _ = run(default)
    assert len(one_screened) < len(coarse) and one_clock.t < 0.85 * 20.0
    assert one_screened < two_screened and two_clock.t > one_clock.t
    assert two_clock.t < 20.0 * 1.1
    late = two.pick().candidate
    assert (late.spec.sigma, late.spec.update, late.spec.switching) == (16, "lazy", False)
    assert one.pick().candidate.spec.update == "eager"
    assert two.confirmed and any(t.candidate == late for t in two.confirmed)


def test_confirmation_overrules_tuning_sources_that_favour_a_candidate():
    """A decoy 8% faster on the tuning sources only: without confirmation it is picked; with
    it, the pick is the candidate that is fastest elsewhere."""

    def cost(c, eta, sq, src):
        t = _cost(c, eta, sq)
        decoy = c.ordering == "natural" and c.spec.sigma == 8 and c.block_size == 1024
        return t * (0.7 if decoy and src < 8 else 1.4 if decoy else 1.0)

    plain, _, _ = _search(budget=1e6, cost=cost)
    plain.run(coarse_candidates(["natural", "rcm"]))
    assert plain.pick().candidate.ordering == "natural"  # the decoy wins on tuning sources
    s, _, _ = _search(budget=1e6, cost=cost, confirm=range(8, 24))
    s.run(coarse_candidates(["natural", "rcm"]))
    best = s.pick().candidate
    assert (best.ordering, best.spec.sigma) == ("rcm", 16)
    assert s.confirmed and {t.stage for t in s.confirmed} == {"confirm"}
    assert all(len(t.times_ms) % 16 == 0 for t in s.confirmed)
    assert 1 <= s.confirm_rounds <= 4


def test_search_without_per_level_and_with_failing_runs():
    s, _, _ = _search(budget=1e6, per_level=False, fail=lambda c: c.spec.sigma == 16)
    s.run(coarse_candidates(["rcm"], (8, 16)))
    assert "per_level" not in {t.stage for t in s.results}
    assert all(not t.ok for t in s.results if t.candidate.spec.sigma == 16)
    assert s.pick().candidate.spec.sigma == 8
    assert s.pick(lambda c: c.spec.sigma == 4) is None


def test_search_picks_the_block_launch_where_it_is_fastest():
    """A luxembourg-like landscape where one block of 1024 threads beats every grid-wide
    launch: the search times the block candidates early, confirms one as its own group and
    picks it."""

    def cost(c, eta, sq, src):
        if c.spec.launch == "block":
            t = 1.5 * (0.9 if c.block_size == 1024 else 1.0)
            return t * (1.0 if c.ordering == "rcm" else 1.2)
        return _deep_graph_cost(c, eta, sq, src)

    s, engines, _ = _search(budget=60.0, cost=cost, confirm=range(100, 116))
    s.run(coarse_candidates(["natural", "rcm"], n=114_599))
    best = s.pick().candidate
    assert (best.spec, best.block_size, best.ordering) == (
        VariantSpec.block(best.spec.sigma),
        1024,
        "rcm",
    )
    assert any(t.candidate.spec.launch == "block" for t in s.confirmed)
    assert all(e.closed for e in engines)
    refined = [t.candidate for t in s.results if t.stage in ("eta", "small_queue", "per_level")]
    assert all(c.spec.launch != "block" for c in refined)  # the block launch has no knobs


def test_refinement_finds_a_geometry_the_screen_never_runs():
    """A small-social-graph landscape (benchmarks/NOTES.md, session 14): one block of 512
    threads per SM is 30% faster than either coarse geometry. The refinement tries the leaders
    in every geometry, and their small-queue thresholds then run in the winning one."""

    def cost(c, eta, sq, src):
        t = {(512, 1): 0.036, (256, 1): 0.039, (128, 1): 0.05}.get(
            (c.block_size, c.blocks_per_sm), 0.052
        )
        t *= 1.0 if c.spec.update == "eager" else 1.6
        t *= 1.0 + 0.02 * (c.spec.sigma != 32) + 0.01 * (c.spec.switching and eta != 20.0)
        return t

    s, engines, _ = _search(budget=60.0, cost=cost, confirm=range(100, 116))
    coarse = coarse_candidates(["natural"])
    assert {(c.block_size, c.blocks_per_sm) for c in coarse}.isdisjoint(REFINE_GEOMETRIES)
    s.run(coarse)
    best = s.pick().candidate
    assert (best.block_size, best.blocks_per_sm, best.spec.update) == (512, 1, "eager")
    assert {"geometry"} <= {t.stage for t in s.results}
    assert all(e.closed for e in engines)
    geo = [t.candidate for t in s.results if t.stage == "geometry"]
    assert all(c.spec.launch == "persistent" for c in geo)
    sq = [t.candidate for t in s.results if t.stage == "small_queue"]
    assert any((c.block_size, c.blocks_per_sm) == (512, 1) for c in sq)


def test_refinement_tries_the_families_the_leaders_miss():
    """twitch_FR's landscape (benchmarks/NOTES.md, session 15): in both coarse geometries the
    lazy kernels lead (0.048 ms against the eager ones' 0.061), so the geometry refinement of
    the leaders never ran an eager kernel; one block of 512 threads per SM runs the eager ones
    in 0.036 ms. The best of each family no leader belongs to now gets the geometries too."""

    def cost(c, eta, sq, src):
        geometry = (c.block_size, c.blocks_per_sm)
        if c.spec.update == "eager":
            t = {(512, 1): 0.036, (256, 1): 0.040, (128, 1): 0.050}.get(geometry, 0.061)
        elif c.spec.expand == "csr":
            t = 0.070
        else:
            t = {(512, 1): 0.047, (128, 1): 0.049}.get(geometry, 0.048)
        return t * (1.0 + 0.02 * (c.spec.sigma != 32) + 0.01 * (c.spec.queue != "vss"))

    s, engines, _ = _search(budget=60.0, cost=cost, confirm=range(100, 116))
    s.run(coarse_candidates(["natural"]))
    best = s.pick().candidate
    assert (best.block_size, best.blocks_per_sm, best.spec.update) == (512, 1, "eager")
    assert best.spec.sigma == 32 and best.spec.queue == "vss"
    assert any(t.candidate == best for t in s.confirmed)  # confirmed again after the families
    lazy_leads = [t for t in s.results if t.stage == "coarse" and len(t.times_ms) == 8]
    assert lazy_leads and lazy_leads[0].candidate.spec.update == "lazy"  # leaders stayed lazy
    assert any(
        t.stage == "small_queue"
        and t.candidate == replace(best, small_queue=t.candidate.small_queue)
        for t in s.results
    )
    assert all(e.closed for e in engines)


def test_held_out_summary_and_noise():
    rows = [
        {"label": "pick", "mean_ms": 1.00},
        {"label": "paper", "mean_ms": 1.02},
        {"label": "other", "mean_ms": 0.90},
        {"label": "broken", "mean_ms": None, "error": "x"},
    ]
    r = summarize_held_out(rows, "pick", "paper", 64)
    assert r["oracle"] == "other" and not r["pick_is_oracle"]
    assert r["pick_vs_paper"].endswith("(noise)")
    assert r["pick_vs_oracle"] == "1.111x" and not r["pick_within_noise_of_oracle"]
    assert relative(1.0, 1.0 + NOISE * 2) == f"{1 / 1.06:.3f}x"
    assert relative(float("inf"), 1.0) == "n/a"


# ---------------------------------------------------------------------- GPU orchestration, faked
class EmulatingEngine:
    """Stands in for blest.Engine: the NumPy emulator, with a synthetic traversal time."""

    def __init__(self, prepared, spec, *, eta, beta, alpha, device, block_size, blocks_per_sm,
                 grid_blocks, small_queue, record_levels):  # fmt: skip
        assert prepared.sigma == spec.sigma and device == 0
        self.prepared = prepared
        self.spec, self.eta, self.beta, self.block_size = spec, eta, beta, block_size
        self.alpha = alpha
        self.small_queue = 0 if small_queue is None else small_queue
        self.device_name = "Fake GPU"

    def bfs(self, src, out=None):
        from blest.reference import emulate_spec

        p = self.prepared
        new_of_old = p.permutation.new_of_old
        adjacency = (p.in_ptr, p.in_idx)
        result = emulate_spec(p.bvss, adjacency, int(new_of_old[src]), self.spec, eta=self.eta,
                              beta=self.beta, alpha=self.alpha, record=False)  # fmt: skip
        ms = 1.0 + 0.1 * (self.spec.sigma != 16) + 0.05 * (self.block_size != 1024)
        self.stats = types.SimpleNamespace(traversal_ms=ms + 0.01 * self.spec.dirty_sets)
        return result.levels[new_of_old]

    def close(self):
        pass


def test_gpu_tuning_flow_with_emulating_engines(tmp_path, rng, monkeypatch):
    """The whole GPU path (preparation, paper's choice, search, SciPy check, held-out report,
    config) with the CUDA parts replaced by the emulator; then load_tuned on that config."""
    fake_cupy = types.ModuleType("cupy")
    fake_cupy.__dict__.update({k: getattr(np, k) for k in dir(np) if not k.startswith("__")})
    smem = {"MaxSharedMemoryPerBlockOptin": 227 * 1024}  # the block launch fits: a candidate
    fake_cupy.cuda = types.SimpleNamespace(
        Device=lambda *a: types.SimpleNamespace(synchronize=lambda: None, attributes=smem)
    )
    monkeypatch.setitem(__import__("sys").modules, "cupy", fake_cupy)
    monkeypatch.setattr("blest.codegen.toolchain.require_gpu", lambda d=None: (0, "sm_90", "FG"))
    monkeypatch.setattr("blest.runtime.engine.Engine", EmulatingEngine)
    g = make_directed(rng, 200)
    held_out, searched = tuner_mod._held_out, []

    def slow_report(search, *args):  # the search's time is what the budget bounds
        searched.append(search.elapsed_s)
        report = held_out(search, *args)
        time.sleep(0.2)
        return report

    monkeypatch.setattr(tuner_mod, "_held_out", slow_report)
    out = tune(g, source="/d/g.mtx", use_gpu=True, sigmas=(8, 16), orderings=["natural", "rcm"])
    cfg = write_tuned(out, tmp_path / "g.blest.json")
    assert cfg.tuned and cfg.gpu == GPUInfo("FG", "9.0", "sm_90")
    assert cfg.timing["elapsed_s"] <= searched[0] and cfg.timing["check_and_report_s"] >= 0.2
    assert cfg.spec.sigma == 16 and cfg.geometry.block_size == 1024 and not cfg.spec.dirty_sets
    rows = cfg.timing["candidates"]
    stages = {r["stage"] for r in rows}
    assert rows[0]["stage"] == "paper" and stages >= {"coarse", "eta", "beta", "alpha"}
    assert all(r["alpha"] in (None, *ALPHA_GRID) for r in rows)
    assert (cfg.alpha > 0) == ("alpha=" in cfg.report["pick"])  # the pick's guard, written
    assert {r["ordering"] for r in rows} == {"natural", "rcm"}
    assert {r["variant"] for r in rows} >= {"s8_block", "s16_block"}
    rep = cfg.report
    assert rep["pick"] == next(r["label"] for r in rows if r["mean_ms"] == min(
        x["mean_ms"] for x in rows if x["mean_ms"] is not None))  # fmt: skip
    assert rep["pick_vs_paper"].endswith("x") and rep["oracle_ms"] <= rep["pick_ms"]
    assert not set(cfg.timing["tuning_sources"]) & set(rep["held_out_sources"])
    again = TunedConfig.read(tmp_path / "g.blest.json")
    assert again.report["pick"] == rep["pick"]
    eng = _load(tmp_path / "g.blest.json", emulate=True)
    for s in (0, 17, 199):
        assert np.array_equal(eng.bfs(s), bfs_levels(g, s))


def test_rate_until_stops_a_run_past_its_limit():
    """A run that reports 10 units a step, 20 ms a step: without a limit every unit counts;
    with one, it stops at the first report past the limit, never at the last one."""
    import time

    from blest.tuning.timing import rate_until

    def run(progress, steps=5):
        for step in range(1, steps + 1):
            time.sleep(0.02)
            progress(10 * step, 10 * steps)

    rate, done = rate_until(run)
    assert done == 50 and 0.1 / 50 <= rate < 1.0
    rate, done = rate_until(run, limit_s=0.03)
    assert done == 20 and rate >= 0.04 / 20
    assert rate_until(lambda p: p(7, 7), limit_s=0.0)[1] == 7  # the last report never stops
