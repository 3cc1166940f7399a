"""Publishing a tuning outcome: the prepared artifact and the config that names it, as one
unit (see :func:`write_tuned`), and sweeping what killed writers left behind: only files that
are blest's by their name and by their content (:func:`sweep`)."""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from blest.tuning.artifact import ARTIFACT_FORMAT, write_artifact
from blest.tuning.config import (
    CONFIG_FORMAT,
    TunedConfig,
    artifact_base,
    is_own_artifact,
    named_artifact,
)
from blest.tuning.storage import (
    STALE_SECONDS,
    exclusive_lock,
    failpoint,
    own_file_head,
    publish_by_hash,
    sha256_file,
    sweep_stale_temps,
)

if TYPE_CHECKING:
    from blest.tuning.tuner import TuneOutcome

__all__ = ["is_artifact_head", "is_config_head", "sweep", "write_tuned"]

#: How every config :meth:`TunedConfig.json_text` writes begins.
CONFIG_HEAD = ("{\n  " + json.dumps("format") + ": " + json.dumps(CONFIG_FORMAT)).encode()
#: The artifact's first member: a zip local header naming it, then its stored ``.npy``.
_ZIP_LOCAL = b"PK\x03\x04"
_FORMAT_MEMBER = b"format.npy"


def is_config_head(head: bytes) -> bool:
    """Whether ``head`` (a file's first bytes) begins a config as blest writes it."""
    return head.startswith(CONFIG_HEAD)


def is_artifact_head(head: bytes) -> bool:
    """Whether ``head`` (a file's first bytes) begins a prepared artifact: a zip whose first
    member is ``format.npy`` holding ``"blest-prepared"`` (stored, as blest writes it)."""
    if len(head) < 30 or not head.startswith(_ZIP_LOCAL):
        return False
    name_len = int.from_bytes(head[26:28], "little")
    extra_len = int.from_bytes(head[28:30], "little")
    if head[30 : 30 + name_len] != _FORMAT_MEMBER:
        return False
    data = head[30 + name_len + extra_len : 30 + name_len + extra_len + 512]
    return data.startswith(b"\x93NUMPY") and ARTIFACT_FORMAT.encode("utf-32-le") in data


def _is_blest_temp(head: bytes) -> bool:
    return is_config_head(head) or is_artifact_head(head)


def sweep(config: Path, base: Path) -> list[Path]:
    """Remove the temporary files of this config and artifact base that killed writers left
    more than an hour ago (:func:`~blest.tuning.storage.sweep_stale_temps`)."""
    return sweep_stale_temps(config.parent, [config.name, base.name], _is_blest_temp)


def write_tuned(
    outcome: TuneOutcome,
    config_path: str | os.PathLike[str],
    artifact_path: str | os.PathLike[str] | None = None,
    *,
    on_wait: Callable[[], None] | None = None,
) -> TunedConfig:
    """Publish the artifact, then the config that names it: one unit.

    The artifact goes beside the config under a name holding its content hash,
    ``X.blest.<first 12 hex digits of its SHA-256>.npz`` (``artifact_path`` may give another
    base than ``X.blest.npz``); then the config is replaced atomically. Whoever reads the
    config, and whatever kills the process, finds the previous pair or the new one, complete.
    Writers of one config take turns (an exclusive lock on ``X.blest.json.lock``; ``on_wait()``
    is called when another holds it). Once the config is out, stop signals are held until the
    previous config's artifact is removed (when the new config does not name it), with this
    config's artifacts and temporary files that a killed writer left more than an hour ago.
    Only blest's own files go: an artifact by its format member and its content hash, a
    temporary file by its name and its first bytes.
    """
    config_path = Path(config_path)
    base = Path(artifact_path) if artifact_path is not None else artifact_base(config_path)
    cfg = outcome.config
    with exclusive_lock(config_path, on_wait):
        sweep(config_path, base)
        previous = named_artifact(config_path)
        hops = cfg.spec.hops  # B's BVSS goes in the artifact: loading then builds nothing
        if hops > 1:
            cfg.preparation.hop_arcs = int(outcome.prepared.hops_bvss(hops).nnz)
        artifact, digest = publish_by_hash(
            base, lambda f: write_artifact(f, outcome.prepared, hops), point="artifact-written"
        )
        before = cfg.artifact, cfg.artifact_sha256
        published = []

        def finish() -> None:  # the config is out: nothing below may be cut short
            published.append(True)
            failpoint("after-config")
            _remove_unnamed(config_path, base, artifact, previous)

        try:
            failpoint("after-artifact")
            cfg.artifact, cfg.artifact_sha256 = _relative(artifact, config_path), digest
            cfg.write(config_path, point="config-written", then=finish, final=True)
        except BaseException:
            if published:
                raise
            cfg.artifact, cfg.artifact_sha256 = before
            if previous is None or os.path.abspath(previous) != os.path.abspath(artifact):
                with contextlib.suppress(OSError):
                    artifact.unlink()
            raise
    return cfg


def _relative(artifact: Path, config: Path) -> str:
    try:
        return os.path.relpath(artifact.resolve(), config.resolve().parent)
    except ValueError:  # another drive (Windows)
        return str(artifact.resolve())


def _remove_unnamed(config: Path, base: Path, artifact: Path, previous: Path | None) -> None:
    """Best effort: the previous artifact, and stale orphans of killed writers."""
    keep = os.path.abspath(artifact)
    gone = []
    if previous is not None and is_own_artifact(config, previous):
        head = own_file_head(previous)
        if head is not None and is_artifact_head(head):
            gone.append(previous)
    now = time.time()
    for p in base.parent.glob(f"{base.stem}.*{base.suffix}"):
        with contextlib.suppress(OSError):
            if _stale_orphan(config, p, now):
                gone.append(p)
    for p in gone:
        if os.path.abspath(p) != keep:
            with contextlib.suppress(OSError):
                p.unlink()


def _stale_orphan(config: Path, p: Path, now: float) -> bool:
    """Whether ``p`` is an artifact a killed writer of ``config`` left over an hour ago: named
    as those are, blest's by its first member, named by its own content hash, and named by no
    config in the directory."""
    if not is_own_artifact(config, p) or now - p.lstat().st_mtime <= STALE_SECONDS:
        return False
    head = own_file_head(p)
    if head is None or not is_artifact_head(head):
        return False
    if _mentioned(p.name, p.parent):
        return False
    return sha256_file(p)[:12] == p.stem[-12:]  # the 12 hex digits before ".npz"


def _mentioned(name: str, directory: Path) -> bool:
    """Whether a config (``*.json`` under 16 MiB) in ``directory`` mentions the file ``name``."""
    for cfg in directory.glob("*.json"):
        with contextlib.suppress(OSError):
            if cfg.stat().st_size < 1 << 24 and name in cfg.read_text(errors="replace"):
                return True
    return False
