"""Caches on shared machines: a compiled kernel or a Numba index that someone else could have
written is never loaded. Each test plants the file an attacker would (a cubin, a pickled
index that creates a file when loaded), in a world-writable or foreign-owned directory or
under another key's name, and checks that it is not loaded and that the work still runs right.
Foreign owners are made with os.chown (those cases run as root only)."""

from __future__ import annotations

import ast
import hashlib
import os
import pickle
import shutil
import stat
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from blest.codegen import cache
from blest.codegen import compile as bc

REPO = Path(__file__).resolve().parents[1]
GENUINE = b"\x7fELF genuine cubin"
PLANTED = b"\x7fELF planted cubin"
OTHER_UID = 54321
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="os.chown to another user needs root")


@pytest.fixture
def nvrtc(monkeypatch):
    """compile_source without NVRTC: every compile yields GENUINE and is counted."""
    calls = []
    monkeypatch.setattr(bc, "_nvrtc_compile", lambda *a: calls.append(a) or GENUINE)
    monkeypatch.setattr(bc, "_check_arch", lambda *a: None)
    monkeypatch.setattr(bc.toolchain, "toolchain_fingerprint", lambda *a: "test toolchain")
    cache.reset_stats()
    return calls


def _use(monkeypatch, root: Path) -> Path:
    monkeypatch.setenv("BLEST_CACHE_DIR", str(root))
    cache.reset_stats()
    return root / "kernels"


def _entry_for(key: str, payload: bytes) -> bytes:
    """An entry as blest writes it, for ``key`` (what an attacker who read the code makes)."""
    bind = hashlib.sha256(f"{key}.cubin".encode()).digest()
    head = cache._HEADER.pack(cache._MAGIC, bind, hashlib.sha256(payload).digest(), len(payload))
    return head + payload


def _key(source: str) -> str:
    opts = bc.nvrtc_options("sm_90", "cubin", (), lineinfo=False)
    return bc._key(source, opts, "cubin", "blest.cu")


def _compile(source: str = "kernel A") -> bytes:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = bc.compile_source(source, arch="sm_90")
    _compile.warnings = [str(w.message) for w in seen]
    return out


def test_a_fresh_cache_is_private_and_hits(tmp_path, monkeypatch, nvrtc):
    kernels = _use(monkeypatch, tmp_path / "deep" / "cache")
    assert _compile() == GENUINE and _compile() == GENUINE
    assert len(nvrtc) == 1 and cache.stats()["hits"] == 1
    for d in (tmp_path / "deep", tmp_path / "deep" / "cache", kernels):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700, d
    (entry,) = kernels.iterdir()
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600


def test_an_entry_renamed_to_another_key_is_not_loaded(tmp_path, monkeypatch, nvrtc):
    kernels = _use(monkeypatch, tmp_path / "c")
    kernels.mkdir(parents=True, mode=0o700)
    other = kernels / f"{_key('kernel B')}.cubin"
    other.write_bytes(_entry_for(_key("kernel B"), PLANTED))  # valid, but for kernel B
    os.chmod(other, 0o600)
    os.replace(other, kernels / f"{_key('kernel A')}.cubin")  # ... under kernel A's name
    assert _compile("kernel A") == GENUINE and len(nvrtc) == 1
    assert cache.stats()["misses"] == 1


@pytest.mark.parametrize("mode", [0o777, 0o775, 0o757])
def test_a_directory_others_can_write_is_not_used(tmp_path, monkeypatch, nvrtc, mode):
    kernels = _use(monkeypatch, tmp_path / "shared")
    kernels.mkdir(parents=True)
    planted = kernels / f"{_key('kernel A')}.cubin"
    planted.write_bytes(_entry_for(_key("kernel A"), PLANTED))
    os.chmod(planted, 0o600)
    os.chmod(tmp_path / "shared", mode)
    before = sorted(p.name for p in kernels.iterdir())
    assert _compile() == GENUINE and len(nvrtc) == 1
    assert ["others can write to it" in w for w in _compile.warnings] == [True]
    assert _compile() == GENUINE and len(nvrtc) == 2 and _compile.warnings == []  # once
    assert sorted(p.name for p in kernels.iterdir()) == before  # nothing stored either
    assert planted.read_bytes() == _entry_for(_key("kernel A"), PLANTED)


def test_the_warning_names_the_directory_and_the_reason(tmp_path, monkeypatch, nvrtc):
    _use(monkeypatch, tmp_path / "shared")
    (tmp_path / "shared").mkdir(mode=0o700)
    os.chmod(tmp_path / "shared", 0o777)
    with pytest.warns(RuntimeWarning, match="others can write to it") as seen:
        bc.compile_source("kernel A", arch="sm_90")
    assert str(tmp_path / "shared") in str(seen[0].message)


def test_a_cache_below_a_world_writable_directory_is_not_used(tmp_path, monkeypatch, nvrtc):
    (tmp_path / "open").mkdir()
    os.chmod(tmp_path / "open", 0o777)  # not sticky: anyone may rename what is inside
    kernels = _use(monkeypatch, tmp_path / "open" / "mine")
    assert _compile() == GENUINE and _compile() == GENUINE and len(nvrtc) == 2
    assert not kernels.exists() or list(kernels.iterdir()) == []
    os.chmod(tmp_path / "open", 0o1777)  # sticky, as /tmp: fine
    cache.reset_stats()
    assert _compile() == GENUINE and _compile() == GENUINE and len(nvrtc) == 3


def test_a_group_writable_entry_in_an_open_directory_is_not_loaded(tmp_path, monkeypatch, nvrtc):
    kernels = _use(monkeypatch, tmp_path / "c")
    kernels.mkdir(parents=True)
    os.chmod(tmp_path / "c", 0o755)
    os.chmod(kernels, 0o755)  # others may enter (not write)
    planted = kernels / f"{_key('kernel A')}.cubin"
    planted.write_bytes(_entry_for(_key("kernel A"), PLANTED))
    os.chmod(planted, 0o664)  # ... and the group may rewrite this entry
    assert _compile() == GENUINE and len(nvrtc) == 1
    assert any("others can write to it" in w for w in _compile.warnings)
    assert _compile() == GENUINE and len(nvrtc) == 1  # the store replaced it with our own


def test_a_symbolic_link_entry_is_not_followed(tmp_path, monkeypatch, nvrtc):
    kernels = _use(monkeypatch, tmp_path / "c")
    kernels.mkdir(parents=True, mode=0o700)
    target = tmp_path / "elsewhere.cubin"
    target.write_bytes(_entry_for(_key("kernel A"), PLANTED))
    (kernels / f"{_key('kernel A')}.cubin").symlink_to(target)
    assert _compile() == GENUINE and len(nvrtc) == 1
    assert target.read_bytes() == _entry_for(_key("kernel A"), PLANTED)


@as_root
def test_a_foreign_entry_is_not_loaded(tmp_path, monkeypatch, nvrtc):
    kernels = _use(monkeypatch, tmp_path / "c")
    kernels.mkdir(parents=True, mode=0o700)
    planted = kernels / f"{_key('kernel A')}.cubin"
    planted.write_bytes(_entry_for(_key("kernel A"), PLANTED))
    os.chmod(planted, 0o600)
    os.chown(planted, OTHER_UID, OTHER_UID)
    assert _compile() == GENUINE and len(nvrtc) == 1
    assert any("belongs to another user" in w for w in _compile.warnings)


@as_root
@pytest.mark.parametrize("which", ["root", "kernels"])
def test_a_foreign_directory_is_not_used(tmp_path, monkeypatch, nvrtc, which):
    kernels = _use(monkeypatch, tmp_path / "c")
    kernels.mkdir(parents=True, mode=0o700)
    planted = kernels / f"{_key('kernel A')}.cubin"
    planted.write_bytes(_entry_for(_key("kernel A"), PLANTED))
    os.chmod(planted, 0o600)
    os.chown(tmp_path / "c" if which == "root" else kernels, OTHER_UID, OTHER_UID)
    assert _compile() == GENUINE and len(nvrtc) == 1
    assert ["belongs to another user" in w for w in _compile.warnings] == [True]
    assert _compile() == GENUINE and len(nvrtc) == 2 and _compile.warnings == []  # once
    assert sorted(p.name for p in kernels.iterdir()) == [planted.name]


# ---------------------------------------------------------------------- Numba
_RUN = """
import numpy as np
from blest.graph import jaccard
from blest.graph.io import load_graph
rng = np.random.default_rng(7)
g = load_graph(rng.integers(0, 300, (2, 1500)), directed=True)
got = jaccard.jaccard_cpu(g, 8, 128)
assert np.array_equal(got, jaccard.jaccard_reference(g, 8, 128)), "wrong order"
k = jaccard._numba_kernels()
print(k.stats.cache_path or "uncached", sum(k.stats.cache_hits.values()), jaccard.__file__)
"""


def _index_names() -> list[str]:
    """The index files Numba looks for, for blest's three Jaccard functions."""
    tree = ast.parse((REPO / "blest" / "graph" / "jaccard_numba.py").read_text())
    tag = f"py{sys.version_info.major}{sys.version_info.minor}{sys.abiflags}"
    names = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            line = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            names.append(f"jaccard_numba.{node.name}-{line}.{tag}.nbi")
    assert len(names) == 3
    return names


class _Plant:
    """Unpickling this creates ``path``: what a planted index could do instead."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def _plant(directory: Path, marker: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name in _index_names():
        (directory / name).write_bytes(pickle.dumps(_Plant(marker)))


@pytest.fixture
def package_copy(tmp_path):
    """blest copied into tmp (its __pycache__ is then Numba's in-tree cache, ours to plant)."""
    shutil.copytree(
        REPO / "blest",
        tmp_path / "pkg" / "blest",
        ignore=shutil.ignore_patterns("__pycache__", "*.gz", "*.mtx"),
    )
    return tmp_path / "pkg"


def _run(
    pkg: Path, tmp: Path, cache_root: Path, numba_env: bool = True
) -> subprocess.CompletedProcess:
    """Order a random graph with the copy ``pkg`` of blest after planting indexes in every
    place Numba might look (in-tree, user-wide, ``$NUMBA_CACHE_DIR`` when ``numba_env``)."""
    from numba.core.caching import _CacheLocator

    graph_dir = pkg / "blest" / "graph"
    sub = _CacheLocator.get_suitable_cache_subpath(str(graph_dir / "jaccard.py"))
    marker = tmp / "PWNED"
    _plant(graph_dir / "__pycache__", marker)  # Numba's in-tree cache
    _plant(tmp / "home" / ".cache" / "numba" / sub, marker)  # Numba's user-wide cache
    _plant(tmp / "numba-env" / sub, marker)  # where NUMBA_CACHE_DIR points
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "XDG_"))}
    env.update(PYTHONPATH=str(pkg), HOME=str(tmp / "home"), BLEST_CACHE_DIR=str(cache_root))
    if numba_env:
        env["NUMBA_CACHE_DIR"] = str(tmp / "numba-env")
    r = subprocess.run(
        [sys.executable, "-c", _RUN],
        env=env,
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert not marker.exists(), "a planted Numba index was loaded"
    *out, module = r.stdout.split()
    assert Path(module) == graph_dir / "jaccard.py"  # the copy ran, beside its planted cache
    r.stdout = " ".join(out)
    return r


def test_numba_caches_only_in_the_checked_directory(tmp_path, package_copy):
    pytest.importorskip("numba")
    root = tmp_path / "cache"
    first = _run(package_copy, tmp_path, root)
    where, hits = first.stdout.split()
    assert Path(where).parent == root / "numba" and hits == "0"
    assert any(p.suffix == ".nbi" for p in Path(where).iterdir())  # it stored its code there
    assert stat.S_IMODE((root / "numba").stat().st_mode) == 0o700
    second = _run(package_copy, tmp_path, root, numba_env=False)
    assert second.stdout.split() == [where, "1"]  # the next process loads it back


def test_numba_ignores_an_open_cache_directory(tmp_path, package_copy):
    """A world-writable cache directory holding planted indexes: not loaded, one warning,
    the order still computed (compiled without a cache)."""
    pytest.importorskip("numba")
    from numba.core.caching import _CacheLocator

    root = tmp_path / "shared"
    sub = _CacheLocator.get_suitable_cache_subpath(
        str(package_copy / "blest" / "graph" / "jaccard.py")
    )
    _plant(root / "numba" / sub, tmp_path / "PWNED")
    os.chmod(root, 0o777)
    r = _run(package_copy, tmp_path, root)
    assert r.stdout.split() == ["uncached", "0"]
    assert r.stderr.count("RuntimeWarning") == 1 and str(root) in r.stderr
