"""Publishing a tuned config and its artifact as one unit, in-process: interrupted writes,
concurrent writers (threads), the lock, content-addressed names, stale temporaries, and output
paths refused before any work (run as root too: no permission bits are relied upon)."""

from __future__ import annotations

import json
import os
import threading
import time
import warnings
from pathlib import Path

import faults
import numpy as np
import pytest
from random_graphs import make_directed, make_grid

import blest
from blest.errors import ArgumentError
from blest.reference import bfs_levels
from blest.tuning import storage as files
from blest.tuning import tuner as tuner_mod
from blest.tuning.config import TunedConfig
from blest.tuning.tuner import tune, write_tuned


def _outcome(graph, name="g"):
    return tune(graph, source=f"/data/{name}.mtx", use_gpu=False, orderings=["rcm"])


def _check_pair(config: Path, graph) -> None:
    """The config loads (artifact verified) and answers BFS like SciPy on ``graph``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        eng = blest.load_tuned(config)
    assert eng.graph.content_hash() == graph.content_hash()
    for src in (0, graph.n // 2, graph.n - 1):
        assert np.array_equal(eng.bfs(src), bfs_levels(graph, src))


def _temps(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir() if p.name.endswith(".tmp"))


# ---------------------------------------------------------------------- item 1
def test_ctrl_c_between_artifact_and_config_keeps_the_old_pair(tmp_path, rng, monkeypatch):
    old, new = make_directed(rng, 200), make_grid(rng, 150)
    config = tmp_path / "g.blest.json"
    write_tuned(_outcome(old), config)
    before = sorted(p.name for p in tmp_path.iterdir())

    def interrupted(self, path, **kw):  # Ctrl-C after the new artifact is on disk
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(TunedConfig, "write", interrupted)
        with pytest.raises(KeyboardInterrupt):
            write_tuned(_outcome(new), config)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing new, nothing lost
    _check_pair(config, old)
    cfg = write_tuned(_outcome(new), config)  # and the next run replaces the pair
    _check_pair(config, new)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([config.name, cfg.artifact])


def test_artifact_is_named_by_its_hash_and_rewrites_are_stable(tmp_path, rng):
    g = make_grid(rng, 120)
    config = tmp_path / "g.blest.json"
    first = write_tuned(_outcome(g), config)
    assert first.artifact == f"g.blest.{first.artifact_sha256[:12]}.npz"
    assert files.sha256_file(tmp_path / first.artifact) == first.artifact_sha256
    again = write_tuned(_outcome(g), config)  # same graph and choice: the same bytes
    assert again.artifact == first.artifact
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([config.name, first.artifact])
    _check_pair(config, g)


def test_configs_naming_the_old_fixed_artifact_name_still_load(tmp_path, rng):
    g = make_directed(rng, 150)
    config = tmp_path / "g.blest.json"
    cfg = write_tuned(_outcome(g), config)
    os.replace(tmp_path / cfg.artifact, tmp_path / "g.blest.npz")  # as older versions wrote
    data = json.loads(config.read_text())
    data["artifact"]["path"] = "g.blest.npz"
    config.write_text(json.dumps(data))
    _check_pair(config, g)
    cfg = write_tuned(_outcome(g), config)  # a re-tune removes the old fixed-name artifact
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([config.name, cfg.artifact])


# ---------------------------------------------------------------------- item 2
def test_concurrent_writers_of_one_config_take_turns(tmp_path, rng, monkeypatch):
    """Writer A stalls between its artifact and its config until B has finished (or 1.5 s
    passed). Without a lock B's pair lands in between and A's config then names the wrong
    artifact content; with it B waits (and says so) and the last pair is complete."""
    ga, gb = make_directed(rng, 180), make_grid(rng, 160)
    config = tmp_path / "g.blest.json"
    oa, ob = _outcome(ga, "a"), _outcome(gb, "b")
    b_done, a_stalled = threading.Event(), threading.Event()
    real_write = TunedConfig.write
    waited = []

    def stalling_write(self, path, **kw):
        if self is oa.config:
            a_stalled.set()
            b_done.wait(1.5)
        return real_write(self, path, **kw)

    monkeypatch.setattr(TunedConfig, "write", stalling_write)
    ta = threading.Thread(target=write_tuned, args=(oa, config))
    ta.start()
    assert a_stalled.wait(30)
    write_tuned(ob, config, on_wait=lambda: waited.append(time.monotonic()))
    b_done.set()
    ta.join(30)
    assert waited, "B did not wait for A"
    _check_pair(config, gb)  # B wrote last, and completely
    assert not (tmp_path / "g.blest.json.lock").exists()
    assert len(list(tmp_path.glob("*.npz"))) == 1


def test_lock_waits_for_the_holder_and_survives_removal(tmp_path):
    target = tmp_path / "x.blest.json"
    order = []

    def second():
        with files.exclusive_lock(target, on_wait=lambda: order.append("waiting")):
            order.append("second")

    with files.exclusive_lock(target):
        t = threading.Thread(target=second)
        t.start()
        time.sleep(0.3)
        order.append("first done")
    t.join(10)
    assert order == ["waiting", "first done", "second"]
    assert not Path(f"{target}.lock").exists()


# ---------------------------------------------------------------------- item 4
def _age(*paths: Path, hours: float = 2.0) -> None:
    then = time.time() - hours * 3600
    for p in paths:
        os.utime(p, (then, then))


def test_stale_temporaries_are_swept_fresh_ones_kept(tmp_path, rng):
    """Only temporaries of killed writers go: blest's by name and by their first bytes."""
    config = tmp_path / "g.blest.json"
    artifact = tmp_path / write_tuned(_outcome(make_grid(rng, 80)), tmp_path / "a.json").artifact
    config_text = (tmp_path / "a.json").read_bytes()
    stale = {
        ".g.blest.json.blest-abc123de.tmp": config_text[:40],  # killed mid-write
        ".g.blest.npz.blest-def456gh.tmp": artifact.read_bytes()[:3000],
        ".g.blest.npz.blest-00000000.tmp": b"",  # killed before its first bytes went out
    }
    kept = {
        ".g.blest.npz.blest-0fresh00.tmp": artifact.read_bytes()[:3000],  # may be writing now
        ".h.blest.npz.blest-xyz12345.tmp": artifact.read_bytes()[:3000],  # another output's
        ".g.blest.json.mine.tmp": b"a user's notes",  # the old pattern: a user's name
        ".g.blest.json.blest-users000.tmp": b'{"a user": "file"}',  # our name, not our bytes
        ".g.blest.npz.blest-zipzip00.tmp": _user_npz(),
    }
    for name, data in {**stale, **kept}.items():
        (tmp_path / name).write_bytes(data)
    _age(*(tmp_path / n for n in [*stale, *kept] if "fresh" not in n))
    write_tuned(_outcome(make_grid(rng, 100)), config)
    assert not any((tmp_path / n).exists() for n in stale)
    for name, data in kept.items():
        assert (tmp_path / name).read_bytes() == data, name


def _user_npz() -> bytes:
    import io

    buf = io.BytesIO()
    np.savez(buf, format=np.array("mine"), x=np.arange(5))
    return buf.getvalue()


def test_orphaned_artifacts_of_killed_writers_are_swept(tmp_path, rng):
    """An orphan goes when it is a blest artifact named by its own content hash and no config
    names it; a user's archive under such a name, a copy under another hash, or an artifact
    another config names stay byte-identical."""
    config = tmp_path / "g.blest.json"
    real = tmp_path / write_tuned(_outcome(make_directed(rng, 90)), tmp_path / "x.json").artifact
    data = real.read_bytes()
    (tmp_path / "x.json").unlink()
    orphan = tmp_path / real.name.replace("x.blest.", "g.blest.")  # a writer killed before
    os.replace(real, orphan)  # its config: the name holds its own hash
    copied = tmp_path / "g.blest.0123456789ab.npz"  # a blest artifact under a foreign hash
    users = tmp_path / "g.blest.ba9876543210.npz"  # a user's archive under a blest-like name
    named = tmp_path / "g.blest.cafecafecafe.npz"  # named by another config
    copied.write_bytes(data)
    users.write_bytes(_user_npz())
    named.write_bytes(data)
    (tmp_path / "other.json").write_text(json.dumps({"artifact": {"path": named.name}}))
    _age(orphan, copied, users, named)
    kept = {p: p.read_bytes() for p in (copied, users, named)}
    write_tuned(_outcome(make_grid(rng, 100)), config)
    assert not orphan.exists()
    assert {p: p.read_bytes() for p in kept} == kept


def test_a_users_files_named_like_blests_survive_blest_tune(tmp_path, rng, capsys):
    """The reproduction: a user's two-hour-old g.blest.0123456789ab.npz and a
    .g.blest.json.mine.tmp in the directory of ``blest-tune -o g.blest.json``."""
    from blest.cli import tune_main
    from blest.datasets import write_mtx

    write_mtx(make_directed(rng, 120), tmp_path / "g.mtx")
    mine = {
        tmp_path / "g.blest.0123456789ab.npz": _user_npz(),
        tmp_path / ".g.blest.json.mine.tmp": b"half of my own json",
    }
    for p, data in mine.items():
        p.write_bytes(data)
    _age(*mine)
    config = tmp_path / "g.blest.json"
    for _ in range(2):  # the first run writes a pair, the second replaces it
        argv = [str(tmp_path / "g.mtx"), "-o", str(config), "-q", "--ordering", "rcm"]
        assert tune_main(argv) == 0
    assert {p: p.read_bytes() for p in mine} == mine


def test_a_signal_during_a_write_removes_the_temporary(tmp_path):
    """SIGTERM (as a raised Terminated) and Ctrl-C while the bytes go out: no temporary left."""
    for exc in (files.Terminated(15), KeyboardInterrupt()):

        def write(f, exc=exc):
            f.write(b"x" * 1000)
            raise exc

        with pytest.raises(type(exc)):
            files.atomic_write(tmp_path / "a.npz", write)
        with pytest.raises(type(exc)):
            files.publish_by_hash(tmp_path / "b.npz", write)
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------- item 7
def test_output_paths_are_checked_before_any_work(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("x")
    (tmp_path / "dir").mkdir()
    cases = [
        (tmp_path / "nodir" / "x.json", "does not exist"),
        (tmp_path / "file" / "x.json", "is not a directory"),
        (tmp_path / "dir", "is a directory"),
    ]
    for path, match in cases:
        with pytest.raises(ArgumentError, match=match) as info:
            files.check_output_path(path)
        assert str(path) in str(info.value)
    locked = tmp_path / "ro"
    locked.mkdir()
    real_access = os.access
    monkeypatch.setattr(
        os, "access", lambda p, mode: False if Path(p) == locked else real_access(p, mode)
    )
    with pytest.raises(ArgumentError, match=f"cannot write {locked / 'x.json'}: permission"):
        files.check_output_path(locked / "x.json")


def test_a_failed_write_names_the_users_path_not_the_temporary(tmp_path, monkeypatch):
    def refuse(prefix, suffix, dir):
        raise PermissionError(13, "Permission denied", os.path.join(dir, prefix + "q1w2" + suffix))

    monkeypatch.setattr(files.tempfile, "mkstemp", refuse)
    target = tmp_path / "x.blest.json"
    with pytest.raises(OSError) as info:
        files.atomic_write(target, lambda f: None)
    assert f"cannot write {target}" in str(info.value) and ".tmp" not in str(info.value)


def test_write_tuned_never_leaves_a_half_pair_on_errors(tmp_path, rng, monkeypatch):
    old = make_directed(rng, 150)
    config = tmp_path / "g.blest.json"
    write_tuned(_outcome(old), config)
    before = sorted(p.name for p in tmp_path.iterdir())
    for point in files.FAILPOINTS[:3]:
        monkeypatch.setattr(files, "fault_hook", faults.hook(f"{point}:raise"))
        with pytest.raises(RuntimeError, match=point):
            write_tuned(_outcome(make_grid(rng, 90)), config)
        assert sorted(p.name for p in tmp_path.iterdir()) == before, point
        _check_pair(config, old)


def test_compile_is_skipped_without_a_gpu_unless_asked(rng, monkeypatch):
    calls = []
    monkeypatch.setattr(tuner_mod, "_compile_check", lambda *a: calls.append(a) or (["x"], 1.0))
    g = make_grid(rng, 64)
    out = tune(g, use_gpu=False)
    assert calls == [] and out.config.timing["compiled"] == []
    assert any("no kernel compiled" in n for n in out.config.notes)
    out = tune(g, use_gpu=False, compile_check=True)
    assert len(calls) == 1 and out.config.timing["compiled"] == ["x"]
