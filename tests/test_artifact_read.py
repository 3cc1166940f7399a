"""The prepared artifact is read in one pass: the file once into private memory, hashed there,
its stored members views into those bytes (``ArtifactFile``, ``NpzBuffer``). The members come
back bit-identical and aligned; the bytes parsed are the bytes hashed; a flipped byte anywhere,
a file that shrinks while read or exceeds the memory limit, a damaged stored member and a
member read twice are refused."""

from __future__ import annotations

import io
import json
import mmap
import struct
import warnings
import zipfile

import numpy as np
import pytest
from random_graphs import make_directed, make_power_law

import blest
from blest.errors import ConfigError
from blest.graph.io.zipnpy import MemberError, NpzBuffer
from blest.graph.prepared import Prepared
from blest.reference import bfs_levels
from blest.tuning.artifact import load_artifact, save_artifact
from blest.tuning.artifact_file import ArtifactFile
from blest.tuning.config import TunedConfig
from blest.tuning.loader import load_prepared
from blest.tuning.storage import sha256_file
from blest.tuning.tuner import tune, write_tuned


def _pair(tmp_path, graph):
    config = tmp_path / "g.blest.json"
    cfg = write_tuned(tune(graph, source="g.txt", use_gpu=False, orderings=["rcm"]), config)
    return config, tmp_path / cfg.artifact


def _data_span(path, member: str) -> tuple[int, int]:
    """Where the stored bytes of ``member`` (its .npy header, then its array) lie in the file."""
    raw = path.read_bytes()
    with zipfile.ZipFile(path) as z:
        info = z.getinfo(member)
    name_len, extra_len = struct.unpack_from("<HH", raw, info.header_offset + 26)
    begin = info.header_offset + 30 + name_len + extra_len
    return begin, begin + info.compress_size


def _flip(path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x01
    path.write_bytes(bytes(data))


def _memory_of(a: np.ndarray) -> object:
    """What finally holds ``a``'s bytes (following views)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    base = a.base
    return base.obj if isinstance(base, memoryview) else base


def test_members_come_back_bit_identical_as_aligned_views(tmp_path, rng):
    g = make_directed(rng, 400)
    written = Prepared.from_graph(g, 8)
    path = save_artifact(tmp_path / "a.npz", written)
    misaligned = [m for m in ("in_idx", "row_ids", "masks") if _data_span(path, f"{m}.npy")[0] % 4]
    loaded = load_artifact(path)
    pairs = {
        "graph out_ptr": (loaded.graph.out_ptr, g.out_ptr),
        "graph out_idx": (loaded.graph.out_idx, g.out_idx),
        "graph in_ptr": (loaded.graph.in_ptr, g.in_ptr),
        "graph in_idx": (loaded.graph.in_idx, g.in_idx),
        "new_of_old": (loaded.permutation.new_of_old, written.permutation.new_of_old),
        "old_of_new": (loaded.permutation.old_of_new, written.permutation.old_of_new),
        "in_ptr": (loaded.in_ptr, written.in_ptr),
        "in_idx": (loaded.in_idx, written.in_idx),
    }
    for name in ("row_ids", "masks", "real_ptrs", "virtual_to_real"):
        pairs[name] = (getattr(loaded.bvss, name), getattr(written.bvss, name))
    for name, (got, want) in pairs.items():
        assert got.tobytes() == np.asarray(want, dtype=got.dtype).tobytes(), name
        assert got.flags.aligned, name
    stored = [loaded.graph.out_idx, loaded.graph.in_idx, loaded.in_idx]
    stored += [loaded.bvss.row_ids, loaded.bvss.masks]
    held = {id(_memory_of(a)) for a in stored}
    assert len(held) == 1 and isinstance(_memory_of(stored[0]), mmap.mmap)  # no copies
    assert misaligned, "the writer aligned every member: the move below was not exercised"


def _archive(arrays: dict[str, np.ndarray]) -> memoryview:
    """A zip of stored .npy members (names of varied lengths shift their data), in writable
    memory."""
    f = io.BytesIO()
    with zipfile.ZipFile(f, "w") as z:
        for name, a in arrays.items():
            with z.open(f"{name}.npy", "w") as member:
                np.lib.format.write_array(member, a)
    return memoryview(bytearray(f.getvalue()))


def test_npz_buffer_moves_misaligned_members_and_shares_their_memory():
    arrays = {
        "a": np.arange(7, dtype=np.int32),
        "bb": np.arange(5, dtype=np.int64) << 40,
        "ccc": np.linspace(0, 1, 6),
        "dddd": np.arange(9, dtype=np.uint32) * 3,
        "eeeee": np.array(["x", "yz", "abc"]),
        "f": np.asfortranarray(np.arange(12, dtype=np.int16).reshape(3, 4)),
        "gg": np.array(7, dtype=np.int64),
        "hhh": np.zeros(0, dtype=np.int64),
    }
    data = _archive(arrays)
    whole = np.frombuffer(data, dtype=np.uint8)
    with NpzBuffer(data) as members:
        for name, want in arrays.items():
            got = members.read(name)
            assert got.dtype == want.dtype and got.shape == want.shape, name
            np.testing.assert_array_equal(got, want, err_msg=name)
            assert got.flags.aligned and got.flags.writeable, name
            assert got.size == 0 or np.shares_memory(got, whole), name
        with pytest.raises(MemberError, match="overlaps"):  # its bytes are already an array
            members.read("bb")


def test_npz_buffer_checks_crc_unless_verified():
    data = _archive({"a": np.arange(100, dtype=np.int32)})
    data[-200] ^= 0x01  # inside the member's array (the central directory is ~100 bytes)
    with NpzBuffer(data) as members, pytest.raises(MemberError, match="CRC-32"):
        members.read("a")
    with NpzBuffer(data, verified=True) as members:  # the caller's checksum stands in
        assert int(np.count_nonzero(members.read("a") != np.arange(100))) == 1


def test_npz_buffer_refuses_a_directory_that_points_before_the_archive():
    """An end record that overstates where the central directory starts makes zipfile place
    the members before the file's start (a negative offset); a copy of the member planted in
    the archive's comment, where a negative index would wrap to, must not be read."""
    raw = bytes(_archive({"a": np.arange(7, dtype=np.int32)}))
    with zipfile.ZipFile(io.BytesIO(raw)) as z:
        info = z.getinfo("a.npy")
    name_len, extra_len = struct.unpack_from("<HH", raw, 26)
    member = raw[: 30 + name_len + extra_len + info.compress_size]  # local header and data
    end = bytearray(raw[-22:])  # the end record, no comment
    offset_cd, _ = struct.unpack_from("<IH", end, 16)
    struct.pack_into("<IH", end, 16, offset_cd + len(member), len(member))
    data = memoryview(bytearray(raw[:-22] + bytes(end) + member))
    with NpzBuffer(data) as members, pytest.raises(MemberError, match="no local header"):
        members.read("a")


def test_one_flipped_byte_anywhere_is_refused_by_the_hash(tmp_path, rng):
    config, artifact = _pair(tmp_path, make_power_law(rng, 300))
    original = artifact.read_bytes()
    begin, end = _data_span(artifact, "in_idx.npy")
    deflated = _data_span(artifact, "in_deg.npy")
    for at in (10, (begin + end) // 2, sum(deflated) // 2, len(original) - 30):
        _flip(artifact, at)
        with pytest.raises(ConfigError, match="SHA-256 differs"):
            load_prepared(TunedConfig.read(config))
        artifact.write_bytes(original)
    assert load_prepared(TunedConfig.read(config)).n == 300


def test_the_bytes_parsed_are_the_bytes_hashed(tmp_path, rng, monkeypatch):
    """An artifact replaced right after it was read (and hashed) does not reach the parse."""
    g = make_directed(rng, 200)
    config, artifact = _pair(tmp_path, g)
    other = save_artifact(tmp_path / "other.npz", Prepared.from_graph(make_directed(rng, 200), 8))
    read = ArtifactFile.read

    def read_then_replace(self, **kwargs):
        raw = read(self, **kwargs)
        artifact.write_bytes(other.read_bytes())
        return raw

    monkeypatch.setattr(ArtifactFile, "read", read_then_replace)
    prep = load_prepared(TunedConfig.read(config))
    assert prep.graph.content_hash() == g.content_hash()


def test_a_damaged_stored_member_is_refused_by_its_crc_or_by_the_checks(tmp_path, rng):
    """Without a hash, the CRC-32 refuses it; with the config's SHA-256 rewritten to match, the
    CRC-32 is not read and the structure checks refuse it."""
    config, artifact = _pair(tmp_path, make_directed(rng, 300))
    begin, end = _data_span(artifact, "in_idx.npy")
    _flip(artifact, end - 3)  # an id of the last arc, one off
    with pytest.raises(ConfigError, match="damaged"):
        load_artifact(artifact)
    data = json.loads(config.read_text())
    data["artifact"]["sha256"] = sha256_file(artifact)
    config.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match="inconsistent") as info:
        load_prepared(TunedConfig.read(config))
    assert "re-run blest-tune" in str(info.value)


def test_a_file_that_shrinks_while_read_is_refused(tmp_path, rng):
    _, artifact = _pair(tmp_path, make_directed(rng, 100))
    with ArtifactFile(artifact) as f:
        with open(artifact, "r+b") as w:
            w.truncate(f.size // 2)
        with pytest.raises(ConfigError, match="shrank while it was read"):
            f.read(digest=True)


def test_directories_missing_and_empty_files_are_refused(tmp_path):
    with pytest.raises(ConfigError, match="not a regular file"):
        ArtifactFile(tmp_path)
    with pytest.raises(ConfigError, match="is missing"):
        load_artifact(tmp_path / "absent.npz")
    (tmp_path / "empty.npz").write_bytes(b"")
    with pytest.raises(ConfigError, match="not a .npz archive"):
        load_artifact(tmp_path / "empty.npz")


def test_an_artifact_beyond_the_memory_limit_is_refused(tmp_path, rng, monkeypatch):
    config, artifact = _pair(tmp_path, make_directed(rng, 300))
    size = artifact.stat().st_size
    monkeypatch.setenv("BLEST_MAX_GRAPH_BYTES", str(size - 1))
    with pytest.raises(ConfigError, match="more than the memory limit leaves") as info:
        load_prepared(TunedConfig.read(config))
    assert "re-run blest-tune" in str(info.value)
    monkeypatch.setenv("BLEST_MAX_GRAPH_BYTES", str(size + 100))  # no room for the inflated
    with pytest.raises(ConfigError, match="damaged"):
        load_artifact(artifact)
    monkeypatch.delenv("BLEST_MAX_GRAPH_BYTES")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        eng = blest.load_tuned(config, device="cpu")
    assert np.array_equal(eng.bfs(5), bfs_levels(eng.graph, 5))
