"""Publishing a tuning outcome: the prepared artifact and the config that names it, as one
unit (see :func:`write_tuned`)."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from blest.tuning.artifact import write_artifact
from blest.tuning.config import TunedConfig, artifact_base, is_own_artifact, named_artifact
from blest.tuning.files import (
    STALE_SECONDS,
    exclusive_lock,
    failpoint,
    publish_by_hash,
    sweep_stale_temps,
)

if TYPE_CHECKING:
    from blest.tuning.tuner import TuneOutcome

__all__ = ["write_tuned"]


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
    is called when another holds it). Afterwards the previous config's artifact is removed when
    the new config does not name it, and so are this config's artifacts (and temporary files)
    that a killed writer left more than an hour ago.
    """
    config_path = Path(config_path)
    base = Path(artifact_path) if artifact_path is not None else artifact_base(config_path)
    cfg = outcome.config
    with exclusive_lock(config_path, on_wait):
        sweep_stale_temps(config_path.parent, [config_path.name, base.name])
        previous = named_artifact(config_path)
        artifact, digest = publish_by_hash(
            base, lambda f: write_artifact(f, outcome.prepared), point="artifact-written"
        )
        before = cfg.artifact, cfg.artifact_sha256
        try:
            failpoint("after-artifact")
            cfg.artifact, cfg.artifact_sha256 = _relative(artifact, config_path), digest
            cfg.write(config_path, point="config-written")
        except BaseException:
            cfg.artifact, cfg.artifact_sha256 = before
            if previous is None or os.path.abspath(previous) != os.path.abspath(artifact):
                with contextlib.suppress(OSError):
                    artifact.unlink()
            raise
        failpoint("after-config")
        _remove_unnamed(config_path, base, artifact, previous)
    return cfg


def _relative(artifact: Path, config: Path) -> str:
    try:
        return os.path.relpath(artifact.resolve(), config.resolve().parent)
    except ValueError:  # another drive (Windows)
        return str(artifact.resolve())


def _remove_unnamed(config: Path, base: Path, artifact: Path, previous: Path | None) -> None:
    """Best effort: the previous artifact, and stale orphans of killed writers."""
    keep = os.path.abspath(artifact)
    gone = [previous] if previous is not None and is_own_artifact(config, previous) else []
    now = time.time()
    for p in base.parent.glob(f"{base.stem}.*{base.suffix}"):
        with contextlib.suppress(OSError):
            if is_own_artifact(config, p) and now - p.stat().st_mtime > STALE_SECONDS:
                if not _mentioned(p.name, base.parent):
                    gone.append(p)
    for p in gone:
        if os.path.abspath(p) != keep:
            with contextlib.suppress(OSError):
                p.unlink()


def _mentioned(name: str, directory: Path) -> bool:
    """Whether a config (``*.json`` under 16 MiB) in ``directory`` mentions the file ``name``."""
    for cfg in directory.glob("*.json"):
        with contextlib.suppress(OSError):
            if cfg.stat().st_size < 1 << 24 and name in cfg.read_text(errors="replace"):
                return True
    return False
