"""TunedConfig: the versioned JSON ``blest-tune`` writes and :func:`blest.load_tuned` reads.

Fields (DESIGN.md, "Tuned config"): format version; the cleaned graph's content hash, n, arcs,
directedness and source path (informational); the preparation (ordering, W, sigma and its
statistics and times); the prepared artifact's path (relative to the config's directory) and
SHA-256; the chosen VariantSpec, eta and launch geometry; the GPU it was tuned on (or null);
``tuned`` (false when the paper's rules chose without timing); notes; the full timing table and
the held-out report.
"""

from __future__ import annotations

import datetime
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from blest.codegen.spec import VariantSpec
from blest.errors import ConfigError
from blest.tuning.files import atomic_write

__all__ = ["CONFIG_FORMAT", "CONFIG_VERSION", "TunedConfig", "default_outputs", "retune_hint"]

CONFIG_FORMAT = "blest-tuned-config"
CONFIG_VERSION = 1
_GRAPH_SUFFIXES = (".gz", ".mtx", ".mm", ".txt", ".csv", ".tsv", ".el", ".edges", ".edgelist")


def default_outputs(graph_path: str | os.PathLike[str], output: str | None) -> tuple[Path, Path]:
    """(config, artifact) paths: ``-o X.blest.json`` gives ``X.blest.npz`` beside it; without
    ``-o``, ``<graph stem>.blest.json`` in the current directory."""
    if output:
        config = Path(output)
    else:
        name = Path(graph_path).name
        while (suffix := Path(name).suffix.lower()) in _GRAPH_SUFFIXES + (".npz", ".snap"):
            name = name[: -len(suffix)]
        config = Path(f"{name or 'graph'}.blest.json")
    stem = config.name
    for suffix in (".json", ".blest"):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
    return config, config.with_name(f"{stem}.blest.npz")


def retune_hint(source: str | None, config: str | os.PathLike[str] | None = None) -> str:
    """The one-line advice every refusal ends with."""
    target = f" -o {config}" if config else ""
    return f"re-run blest-tune {source or 'GRAPH'}{target}"


def _plain(x: Any) -> Any:
    """JSON-ready: NumPy scalars to Python, non-finite floats to None, tuples to lists."""
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if hasattr(x, "item") and not isinstance(x, (str, bytes)):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


@dataclass
class TunedConfig:
    """A tuned (or paper-rule) choice for one graph. ``path`` is where it was read from."""

    graph: dict[str, Any]  # hash, n, arcs, directed, isolated, source
    preparation: dict[str, Any]  # ordering, W, sigma, u_div, compression_ratio, seconds
    artifact: str  # path of the .npz, relative to the config's directory when possible
    artifact_sha256: str
    spec: VariantSpec
    eta: float
    block_size: int = 256
    blocks_per_sm: int | None = None
    small_queue: int | None = None
    gpu: dict[str, Any] | None = None  # {"name", "compute_capability"}
    tuned: bool = False
    notes: list[str] = field(default_factory=list)
    timing: dict[str, Any] = field(default_factory=dict)
    report: dict[str, Any] | None = None
    blest_version: str = ""
    created: str = ""
    path: Path | None = field(default=None, compare=False)

    # ------------------------------------------------------------------ paths
    @property
    def artifact_path(self) -> Path:
        """The artifact's location, resolved against the config's directory."""
        p = Path(self.artifact)
        if not p.is_absolute() and self.path is not None:
            p = self.path.parent / p
        return p

    @property
    def hint(self) -> str:
        return retune_hint(self.graph.get("source"), self.path)

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict[str, Any]:
        from blest import __version__

        if not self.blest_version:
            self.blest_version = __version__
        if not self.created:
            now = datetime.datetime.now(datetime.timezone.utc)
            self.created = now.isoformat(timespec="seconds")
        return {
            "format": CONFIG_FORMAT,
            "version": CONFIG_VERSION,
            "blest_version": self.blest_version,
            "created": self.created,
            "tuned": self.tuned,
            "graph": self.graph,
            "preparation": self.preparation,
            "artifact": {"path": self.artifact, "sha256": self.artifact_sha256},
            "variant": self.spec.to_dict(),
            "variant_name": self.spec.name,
            "eta": self.eta,
            "launch_geometry": {
                "block_size": self.block_size,
                "blocks_per_sm": self.blocks_per_sm,
                "small_queue": self.small_queue,
            },
            "gpu": self.gpu,
            "notes": list(self.notes),
            "timing": self.timing,
            "report": self.report,
        }

    @classmethod
    def from_dict(cls, data: Any, *, path: Path | None = None) -> TunedConfig:
        where = str(path) if path is not None else "tuned config"
        if not isinstance(data, dict) or data.get("format") != CONFIG_FORMAT:
            raise ConfigError(f"{where} is not a blest tuned config")
        source = (data.get("graph") or {}).get("source") if isinstance(data, dict) else None
        hint = retune_hint(source, path)
        version = data.get("version")
        if version != CONFIG_VERSION:
            raise ConfigError(
                f"{where} has format version {version!r}, this blest reads version "
                f"{CONFIG_VERSION}: {hint}"
            )
        try:
            geom = data["launch_geometry"]
            art = data["artifact"]
            cfg = cls(
                graph=dict(data["graph"]),
                preparation=dict(data["preparation"]),
                artifact=str(art["path"]),
                artifact_sha256=str(art["sha256"]),
                spec=VariantSpec.from_dict(data["variant"]),
                eta=float(data["eta"]),
                block_size=int(geom["block_size"]),
                blocks_per_sm=None if geom["blocks_per_sm"] is None else int(geom["blocks_per_sm"]),
                small_queue=None if geom["small_queue"] is None else int(geom["small_queue"]),
                gpu=data.get("gpu"),
                tuned=bool(data["tuned"]),
                notes=[str(x) for x in data.get("notes", [])],
                timing=dict(data.get("timing") or {}),
                report=data.get("report"),
                blest_version=str(data.get("blest_version", "")),
                created=str(data.get("created", "")),
                path=path,
            )
            for key in ("hash", "n", "arcs", "directed"):
                cfg.graph[key]  # noqa: B018 - presence check
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(
                f"{where} is malformed ({type(exc).__name__}: {exc}): {hint}"
            ) from None
        return cfg

    def write(self, path: str | os.PathLike[str]) -> Path:
        """Write atomically (temporary file + os.replace); returns the path."""
        text = json.dumps(_plain(self.to_dict()), indent=2, allow_nan=False)
        out = atomic_write(path, lambda f: f.write((text + "\n").encode()))
        self.path = Path(path)
        return out

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> TunedConfig:
        """Read and validate a config; :class:`ConfigError` on anything wrong."""
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ConfigError(f"no such tuned config: {p}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read tuned config {p}: {exc}") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"{p} is not valid JSON (line {exc.lineno}): not a tuned config"
            ) from None
        return cls.from_dict(data, path=p)
