"""The prepared artifact: compact for isolated vertices and sparse ids, still readable in its
version-1 layout, and refused (ConfigError naming the problem) when it was edited consistently
with its checksum or is not an artifact at all."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from random_graphs import make_directed, make_power_law

import blest
from blest.errors import ConfigError
from blest.graph.core import Graph
from blest.reference import bfs_levels
from blest.tuning.artifact import load_artifact
from blest.tuning.storage import sha256_file
from blest.tuning.tuner import tune, write_tuned


def _load(config):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return blest.load_tuned(config)


def _pair(tmp_path, graph, orderings=("rcm",)):
    config = tmp_path / "g.blest.json"
    out = tune(graph, source="/data/g.mtx", use_gpu=False, orderings=list(orderings))
    cfg = write_tuned(out, config)
    return config, tmp_path / cfg.artifact


def _members(path) -> dict[str, np.ndarray]:
    with np.load(path) as a:
        return {k: a[k] for k in a.files}


def _rewrite(config, artifact, arrays) -> None:
    """Replace the artifact's arrays and update the config's checksum to match."""
    with open(artifact, "wb") as f:
        np.savez(f, **arrays)
    data = json.loads(config.read_text())
    data["artifact"]["sha256"] = sha256_file(artifact)
    config.write_text(json.dumps(data))


# ---------------------------------------------------------------------- item 5
def test_isolated_vertices_and_sparse_ids_cost_next_to_nothing(tmp_path, rng):
    n = 2_000_000  # an edge list whose ids reach 2M but which has 300 arcs
    ids = rng.choice(n, 120, replace=False)
    src, dst = rng.choice(ids, 300), rng.choice(ids, 300)
    g = Graph.from_arcs(src, dst, n, directed=True)
    config, artifact = _pair(tmp_path, g, orderings=("natural",))
    size = artifact.stat().st_size
    # Version 1 stored three int64 row pointers and two int32 permutations: about 56 MB here.
    assert size < 1_000_000, size
    eng = _load(config)
    s = int(src[0])
    assert np.array_equal(eng.bfs(s), bfs_levels(g, s))


def _save_v1(path, prep) -> None:
    """The version-1 layout (row pointers and permutations as they are, nothing deflated)."""
    g, b, p = prep.graph, prep.bvss, prep.permutation
    arrays = {
        "format": np.array("blest-prepared"),
        "version": np.array(1, dtype=np.int64),
        "graph_hash": np.array(g.content_hash()),
        "n": np.array(g.n, dtype=np.int64),
        "directed": np.array(g.directed),
        "ordering": np.array(prep.ordering),
        "graph_out_ptr": g.out_ptr,
        "graph_out_idx": g.out_idx,
        "new_of_old": p.new_of_old,
        "old_of_new": p.old_of_new,
        "in_ptr": np.asarray(prep.in_ptr, dtype=np.int64),
        "in_idx": np.asarray(prep.in_idx, dtype=np.int32),
        "sigma": np.array(b.sigma, dtype=np.int64),
        "nnz": np.array(b.nnz, dtype=np.int64),
        "real_slices": np.array(b.real_slices, dtype=np.int64),
        "row_ids": b.row_ids,
        "masks": b.masks,
        "real_ptrs": b.real_ptrs,
        "virtual_to_real": b.virtual_to_real,
    }
    if g.directed:
        arrays.update(graph_in_ptr=g.in_ptr, graph_in_idx=g.in_idx)
    np.savez(path, **arrays)


def test_version_1_artifacts_still_load(tmp_path, rng):
    g = make_directed(rng, 180)
    config, artifact = _pair(tmp_path, g)
    prep = load_artifact(artifact)
    _save_v1(tmp_path / "g.blest.npz", prep)
    data = json.loads(config.read_text())
    data["artifact"] = {"path": "g.blest.npz", "sha256": sha256_file(tmp_path / "g.blest.npz")}
    config.write_text(json.dumps(data))
    eng = _load(config)
    for s in (0, 90, 179):
        assert np.array_equal(eng.bfs(s), bfs_levels(g, s))


# ---------------------------------------------------------------------- item 9
def _swap_two(perm_new_of_old, in_deg):
    """A different but valid permutation: two vertices of different in-degree swapped."""
    order = np.argsort(in_deg, kind="stable")
    a, b = int(order[0]), int(order[-1])
    new_of_old = perm_new_of_old.copy()
    new_of_old[[a, b]] = new_of_old[[b, a]]
    old_of_new = np.empty_like(new_of_old)
    old_of_new[new_of_old] = np.arange(new_of_old.size, dtype=np.int32)
    return new_of_old, old_of_new


def _delta(a):
    return np.diff(a.astype(np.int32), prepend=np.int32(0))


def _edits(m: dict[str, np.ndarray], rng) -> dict[str, tuple[dict, str]]:
    """name → (members to replace, the expected message)."""
    new_of_old = np.cumsum(m["new_of_old_delta"], dtype=np.int32)
    in_deg_user = np.diff(np.cumsum(np.r_[0, m["graph_in_deg"]]))
    swapped = _swap_two(new_of_old, in_deg_user)
    idx = m["in_idx"].copy()
    idx[idx.size // 2] = (idx[idx.size // 2] + 1) % int(m["n"])
    moved = m["in_deg"].copy()
    i, j = int(np.flatnonzero(moved > 0)[0]), int(np.flatnonzero(moved == moved.min())[-1])
    moved[i] -= 1
    moved[j] += 1
    rows = m["row_ids"].copy()
    rows[3] = int(m["n"])
    masks = m["masks"].copy()
    k = int(np.flatnonzero(masks)[0])
    masks[k] ^= np.uint32(1 << int(np.flatnonzero([masks[k] >> b & 1 == 0 for b in range(32)])[0]))
    out_idx = m["graph_out_idx"].copy()
    out_idx[0] = (out_idx[0] + 1) % int(m["n"])
    zeros = np.zeros_like(m["old_of_new_delta"])
    counts = m["real_counts"].copy()  # one VSS handed from one slice set to another
    a, b = np.flatnonzero(counts > 0)[[0, -1]]
    counts[a] += 1
    counts[b] -= 1
    return {
        "zeroed permutation": (
            {"old_of_new_delta": zeros, "new_of_old_delta": zeros},
            "not a permutation",
        ),
        "half a permutation": ({"new_of_old_delta": zeros}, "not a permutation"),
        "another permutation": (
            {"new_of_old_delta": _delta(swapped[0]), "old_of_new_delta": _delta(swapped[1])},
            "reordered in-adjacency",
        ),
        "one arc's tail changed": ({"in_idx": idx}, "arc heads"),
        "one arc moved to another row": ({"in_deg": moved}, "degrees"),
        "a row id out of range": ({"row_ids": rows}, "row_ids holds ids outside"),
        "one mask bit added": ({"masks": masks}, "BVSS masks"),
        "graph arc retargeted": ({"graph_out_idx": out_idx}, "graph_"),
        "a VSS handed to another set": ({"real_counts": counts}, "virtual_to_real"),
        "ids past n": ({"n": np.array(int(m["n"]) - 1, dtype=np.int64)}, "inconsistent"),
    }


def test_consistently_edited_artifacts_are_refused(tmp_path, rng):
    g = make_directed(rng, 300)
    config, artifact = _pair(tmp_path, g)
    original = _members(artifact)
    _load(config).close()  # the untouched pair loads
    for name, (change, match) in _edits(original, rng).items():
        _rewrite(config, artifact, {**original, **change})
        with pytest.raises(ConfigError, match=match) as info:
            _load(config)
            pytest.fail(f"{name}: not refused")
        assert "re-run blest-tune" in str(info.value), name
    _rewrite(config, artifact, original)
    assert np.array_equal(_load(config).bfs(7), bfs_levels(g, 7))


def test_bvss_rows_are_checked(tmp_path, rng):
    """A mask bit moved to another slot of its lane word: the slice set keeps its count, the
    rows do not."""
    g = make_power_law(rng, 400)
    config, artifact = _pair(tmp_path, g)
    m = _members(artifact)
    masks, sigma = m["masks"].copy(), int(m["sigma"])
    theta = 32 // sigma
    rows = m["row_ids"].reshape(-1, theta)
    for w in np.flatnonzero(masks):
        fields = [(int(masks[w]) >> (k * sigma)) & ((1 << sigma) - 1) for k in range(theta)]
        full = [k for k in range(theta) if fields[k]]
        empty = [k for k in range(theta) if fields[k] != (1 << sigma) - 1]
        pairs = [(a, b) for a in full for b in empty if a != b and rows[w, a] != rows[w, b]]
        if pairs:
            a, b = pairs[0]
            bit_a = (fields[a] & -fields[a]).bit_length() - 1
            bit_b = next(i for i in range(sigma) if not fields[b] >> i & 1)
            masks[w] ^= np.uint32((1 << (a * sigma + bit_a)) | (1 << (b * sigma + bit_b)))
            break
    else:
        pytest.skip("no lane word with two slots of different rows")
    _rewrite(config, artifact, {**m, "masks": masks})
    with pytest.raises(ConfigError, match="BVSS"):
        _load(config)


# ---------------------------------------------------------------------- item 8
def test_foreign_files_as_artifact_get_a_clear_error(tmp_path, rng):
    g = make_directed(rng, 100)
    config, artifact = _pair(tmp_path, g)
    artifact.write_bytes(rng.bytes(4096))
    _rewrite_sha(config, artifact)
    with pytest.raises(ConfigError, match="not a .npz archive") as info:
        _load(config)
    assert "allow_pickle" not in str(info.value)
    np.savez(artifact, format=np.array([{"a": 1}], dtype=object))  # a pickled member
    _rewrite_sha(config, artifact)
    with pytest.raises(ConfigError, match="damaged") as info:
        _load(config)
    assert "allow_pickle" not in str(info.value) and "pickle" not in str(info.value)


def _rewrite_sha(config, artifact):
    data = json.loads(config.read_text())
    data["artifact"]["sha256"] = sha256_file(artifact)
    config.write_text(json.dumps(data))


def test_config_with_a_wrong_type_names_the_field(tmp_path, rng):
    config, _ = _pair(tmp_path, make_directed(rng, 50))
    data = json.loads(config.read_text())
    data["graph"]["n"] = "abc"
    config.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=r"graph\.n must be an integer >= 1, got 'abc'"):
        _load(config)
