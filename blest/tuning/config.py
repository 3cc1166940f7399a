"""TunedConfig: the versioned JSON ``blest-tune`` writes and :func:`blest.load_tuned` reads.

Sections, each a typed record: the cleaned graph (:class:`GraphInfo`: content hash, n, arcs,
directedness, source path), the preparation (:class:`PreparationInfo`: ordering, W, sigma and
its statistics and times), the prepared artifact (path relative to the config's directory, and
its SHA-256), the chosen variant, its switching constants (eta, beta, alpha; configs of older
versions lack beta and alpha and load with them off) and launch geometry, the GPU it was tuned
on (:class:`GPUInfo`, or null), ``tuned`` (false when the paper's rules chose without timing),
notes, and the timing table and held-out report (free-form measurement tables). Reading
validates every field and names the one that is wrong; writing does not change the object.

Reading takes only a regular file of bounded size whose JSON nests a bounded depth
(:mod:`.config_text`); anything else is a :class:`~blest.errors.ConfigError`.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import math
import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from blest._version import __version__
from blest.codegen.spec import VariantSpec
from blest.defaults import DEFAULT_ALPHA, DEFAULT_BETA
from blest.errors import ConfigError
from blest.runtime.engine_protocol import Geometry
from blest.tuning.config_text import MAX_DEPTH, Fields, config_text, json_depth
from blest.tuning.storage import atomic_write

__all__ = [
    "CONFIG_FORMAT",
    "CONFIG_VERSION",
    "GPUInfo",
    "GraphInfo",
    "PreparationInfo",
    "TunedConfig",
    "artifact_base",
    "default_outputs",
    "is_own_artifact",
    "json_ready",
    "named_artifact",
    "retune_hint",
]

CONFIG_FORMAT = "blest-tuned-config"
CONFIG_VERSION = 2
_GRAPH_SUFFIXES = (".gz", ".mtx", ".mm", ".txt", ".csv", ".tsv", ".el", ".edges", ".edgelist")


def default_outputs(graph_path: str | os.PathLike[str], output: str | None) -> tuple[Path, Path]:
    """(config, artifact base) paths: ``-o X.blest.json`` gives the base ``X.blest.npz`` beside
    it; without ``-o``, ``<graph stem>.blest.json`` in the current directory. The artifact is
    written as ``X.blest.<first 12 hex digits of its SHA-256>.npz`` (see
    :func:`blest.tuning.tuner.write_tuned`)."""
    if output:
        config = Path(output)
    else:
        name = Path(graph_path).name
        while (suffix := Path(name).suffix.lower()) in _GRAPH_SUFFIXES + (".npz", ".snap"):
            name = name[: -len(suffix)]
        config = Path(f"{name or 'graph'}.blest.json")
    return config, artifact_base(config)


def artifact_base(config: str | os.PathLike[str]) -> Path:
    """``X.blest.npz`` beside the config ``X.blest.json`` (or ``X.json``)."""
    config = Path(config)
    stem = config.name
    for suffix in (".json", ".blest"):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
    return config.with_name(f"{stem}.blest.npz")


def is_own_artifact(config: str | os.PathLike[str], path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is named as the config's artifacts are (``X.blest.<hex12>.npz``, or the
    fixed ``X.blest.npz`` of older versions) in the config's directory."""
    base, path = artifact_base(config), Path(path)
    if os.path.abspath(path.parent) != os.path.abspath(base.parent):
        return False
    pattern = re.escape(base.stem) + r"(\.[0-9a-f]{12})?\.npz"
    return re.fullmatch(pattern, path.name) is not None


def named_artifact(config: str | os.PathLike[str]) -> Path | None:
    """The artifact the config file at ``config`` names, read leniently (None if it names
    none or is not a readable config)."""
    config = Path(config)
    try:
        data = json.loads(config_text(config))
        name = data["artifact"]["path"]
    except (ConfigError, OSError, ValueError, TypeError, KeyError, RecursionError):
        return None
    if not isinstance(name, str) or not name:
        return None
    p = Path(name)
    return p if p.is_absolute() else config.parent / p


def retune_hint(source: str | None, config: str | os.PathLike[str] | None = None) -> str:
    """The one-line advice every refusal ends with: a command to copy, its paths quoted."""
    target = f" -o {shlex.quote(os.fspath(config))}" if config else ""
    return f"re-run blest-tune {shlex.quote(source) if source else 'GRAPH'}{target}"


def json_ready(x: Any) -> Any:
    """JSON-ready: NumPy scalars and arrays to Python, non-finite floats to None, tuples to
    lists."""
    if isinstance(x, dict):
        return {str(k): json_ready(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_ready(v) for v in x]
    if hasattr(x, "tolist") and getattr(x, "ndim", 0) > 0:
        return json_ready(x.tolist())
    if hasattr(x, "item") and not isinstance(x, (str, bytes)):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


# ---------------------------------------------------------------------- field parsing
def _write_all(f: IO[bytes], data: bytes) -> None:
    f.write(data)


# ---------------------------------------------------------------------- sections
@dataclass
class GraphInfo:
    """The cleaned graph a config was tuned for."""

    hash: str
    n: int
    arcs: int
    directed: bool
    isolated: int = 0
    source: str | None = None
    self_loops_dropped: int = 0
    duplicates_dropped: int = 0

    @classmethod
    def from_dict(cls, data: Any) -> GraphInfo:
        f = Fields(data, "graph")
        return cls(
            hash=f.str("hash"),
            n=f.int("n", minimum=1),
            arcs=f.int("arcs"),
            directed=f.bool("directed"),
            isolated=f.int("isolated", optional=True) or 0,
            source=f.str("source", optional=True),
            self_loops_dropped=f.int("self_loops_dropped", optional=True) or 0,
            duplicates_dropped=f.int("duplicates_dropped", optional=True) or 0,
        )


@dataclass
class PreparationInfo:
    """How the graph was prepared: ordering and the BVSS statistics at the chosen sigma."""

    ordering: str
    sigma: int
    W: int | None = None
    default_ordering: str | None = None
    u_div_sigma8: float = 0.0
    u_div: float = 0.0
    compression_ratio: float = 0.0
    n_vss: int = 0
    real_slices: int = 0
    bvss_bytes: int = 0
    seconds: dict[str, Any] = field(default_factory=dict)
    load_seconds: float | None = None
    #: Arcs of B = A + ... + A^hops, whose BVSS the artifact holds when the variant runs
    #: several levels a phase (None otherwise).
    hop_arcs: int | None = None

    @classmethod
    def from_dict(cls, data: Any) -> PreparationInfo:
        f = Fields(data, "preparation")
        return cls(
            ordering=f.str("ordering"),
            sigma=f.int("sigma", minimum=1),
            W=f.int("W", minimum=1, optional=True),
            default_ordering=f.str("default_ordering", optional=True),
            u_div_sigma8=f.float("u_div_sigma8", optional=True) or 0.0,
            u_div=f.float("u_div", optional=True) or 0.0,
            compression_ratio=f.float("compression_ratio", optional=True) or 0.0,
            n_vss=f.int("n_vss", optional=True) or 0,
            real_slices=f.int("real_slices", optional=True) or 0,
            bvss_bytes=f.int("bvss_bytes", optional=True) or 0,
            seconds=f.dict("seconds"),
            load_seconds=f.float("load_seconds", optional=True),
            hop_arcs=f.int("hop_arcs", minimum=0, optional=True),
        )


@dataclass
class GPUInfo:
    """The GPU a config was tuned on."""

    name: str
    compute_capability: str
    arch: str = ""

    @classmethod
    def from_dict(cls, data: Any) -> GPUInfo | None:
        if data is None:
            return None
        f = Fields(data, "gpu")
        return cls(f.str("name"), f.str("compute_capability"), f.str("arch", optional=True) or "")


def _geometry(data: Any) -> Geometry:
    f = Fields(data, "launch_geometry")
    try:
        return Geometry(
            block_size=f.int("block_size", minimum=32),
            blocks_per_sm=f.int("blocks_per_sm", minimum=1, optional=True),
            grid_blocks=f.int("grid_blocks", minimum=1, optional=True),
            small_queue=f.int("small_queue", optional=True),
        )
    except ValueError as exc:
        raise ConfigError(f"launch_geometry: {exc}") from None


def _multi_source(data: Any) -> dict[str, Any] | None:
    """The multi-source choice (closeness workload), checked; None when absent."""
    if data is None:
        return None
    from blest.codegen.msspec import MSSpec

    spec, block, f = _spec_and_block(data, "multi_source", MSSpec)
    eta = f.float("eta")
    if eta < 0:
        raise ConfigError(f"multi_source.eta must be >= 0, got {eta}")
    out = {"spec": spec.to_dict(), "eta": eta, "block_size": block}
    if "dense" in data:  # absent: engines decide (configs from before the dense form)
        out["dense"] = _dense_choice(data["dense"])
    return out


def _betweenness(data: Any) -> dict[str, Any] | None:
    """The betweenness choice (betweenness workload), checked; None when absent."""
    if data is None:
        return None
    from blest.codegen.bcspec import BCSpec

    spec, block, f = _spec_and_block(data, "betweenness", BCSpec)
    wide = f.int("wide_degree", optional=True)  # absent: the form's default
    return {"spec": spec.to_dict(), "block_size": block, "wide_degree": wide}


def _dense_choice(data: Any) -> dict[str, Any] | None:
    """The every-vertex choice of a multi_source section: null (the batched kernel) or the
    dense form's {spec, block_size}, checked."""
    if data is None:
        return None
    from blest.codegen.densespec import DenseSpec

    spec, block, _ = _spec_and_block(data, "multi_source.dense", DenseSpec)
    return {"spec": spec.to_dict(), "block_size": block}


def _spec_and_block(data: Any, section: str, spec_cls: Any) -> tuple[Any, int, Fields]:
    """A section's ``spec`` (a ``spec_cls``) and ``block_size``, checked; and its fields."""
    f = Fields(data, section)
    try:
        spec = spec_cls.from_dict(data.get("spec"))
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{section}.spec is invalid ({exc})") from None
    block = f.int("block_size", minimum=32)
    if block % 32 or block > 1024:
        raise ConfigError(f"{section}.block_size must be a multiple of 32 <= 1024, got {block}")
    return spec, block, f


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _switching_constant(value: Any, name: str, what: str, finite: bool = False) -> float:
    """``config.<name>``, a number >= 0 (below infinity if ``finite``), as a float."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0
    if not ok or (finite and value == float("inf")):
        raise ConfigError(f"config.{name} must be {what}, got {value!r}")
    return float(value)


# ---------------------------------------------------------------------- the config
@dataclass
class TunedConfig:
    """A tuned (or paper-rule) choice for one graph. ``path`` is where it was read from."""

    graph: GraphInfo
    preparation: PreparationInfo
    artifact: str  # path of the .npz, relative to the config's directory when possible
    artifact_sha256: str
    spec: VariantSpec
    eta: float
    geometry: Geometry = field(default_factory=Geometry)
    beta: float = DEFAULT_BETA  # the return rule (0: off); older configs lack it
    alpha: float = DEFAULT_ALPHA  # the edge-ratio guard (0: off); older configs lack it
    gpu: GPUInfo | None = None
    tuned: bool = False
    notes: list[str] = field(default_factory=list)
    timing: dict[str, Any] = field(default_factory=dict)
    report: dict[str, Any] | None = None
    multi_source: dict[str, Any] | None = None  # {spec, eta, block_size} (closeness workload)
    betweenness: dict[str, Any] | None = None  # {spec, block_size, wide_degree} (betweenness)
    blest_version: str = __version__
    created: str = field(default_factory=_now)
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
        return retune_hint(self.graph.source, self.path)

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict[str, Any]:
        """The JSON object (the config itself is not changed)."""
        return {
            "format": CONFIG_FORMAT,
            "version": CONFIG_VERSION,
            "blest_version": self.blest_version,
            "created": self.created,
            "tuned": self.tuned,
            "graph": dataclasses.asdict(self.graph),
            "preparation": dataclasses.asdict(self.preparation),
            "artifact": {"path": self.artifact, "sha256": self.artifact_sha256},
            "variant": self.spec.to_dict(),
            "variant_name": self.spec.name,
            "eta": self.eta,
            "beta": self.beta,
            "alpha": self.alpha,
            "launch_geometry": dataclasses.asdict(self.geometry),
            "gpu": None if self.gpu is None else dataclasses.asdict(self.gpu),
            "notes": list(self.notes),
            "timing": self.timing,
            "report": self.report,
            "multi_source": self.multi_source,
            "betweenness": self.betweenness,
        }

    @classmethod
    def from_dict(cls, data: Any, *, path: Path | None = None) -> TunedConfig:
        where = str(path) if path is not None else "tuned config"
        if not isinstance(data, dict) or data.get("format") != CONFIG_FORMAT:
            raise ConfigError(f"{where} is not a blest tuned config")
        graph = data.get("graph")
        source = graph.get("source") if isinstance(graph, dict) else None
        hint = retune_hint(source if isinstance(source, str) else None, path)
        version = data.get("version")
        if version != CONFIG_VERSION:
            raise ConfigError(
                f"{where} has format version {version!r}, this blest reads version "
                f"{CONFIG_VERSION}: {hint}"
            )
        try:
            return cls._parse(data, path)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}: {hint}") from None

    @classmethod
    def _parse(cls, data: dict[str, Any], path: Path | None) -> TunedConfig:
        top = Fields(data, "config")
        art = Fields(data.get("artifact"), "artifact")
        try:
            # (a missing variant is None: its TypeError is refused below)
            spec = VariantSpec.from_dict(data.get("variant"))  # type: ignore[arg-type]
        except (TypeError, ValueError, AttributeError) as exc:
            raise ConfigError(f"variant is invalid ({exc})") from None
        eta = _switching_constant(data.get("eta"), "eta", "a number >= 0")
        beta = _switching_constant(
            data.get("beta", DEFAULT_BETA), "beta", "a finite number >= 0", finite=True
        )
        alpha = _switching_constant(
            data.get("alpha", DEFAULT_ALPHA), "alpha", "a finite number >= 0", finite=True
        )
        if alpha and spec.launch == "per_level":
            raise ConfigError(f"alpha > 0 needs a persistent variant, not {spec.name}")
        notes = data.get("notes") or []
        if not isinstance(notes, list):
            raise ConfigError("config.notes must be a list")
        report = data.get("report")
        return cls(
            graph=GraphInfo.from_dict(data.get("graph")),
            preparation=PreparationInfo.from_dict(data.get("preparation")),
            artifact=art.str("path"),
            artifact_sha256=art.str("sha256"),
            spec=spec,
            eta=eta,
            beta=beta,
            alpha=alpha,
            geometry=_geometry(data.get("launch_geometry")),
            gpu=GPUInfo.from_dict(data.get("gpu")),
            tuned=top.bool("tuned"),
            notes=[str(x) for x in notes],
            timing=top.dict("timing"),
            report=report if isinstance(report, dict) else None,
            multi_source=_multi_source(data.get("multi_source")),
            betweenness=_betweenness(data.get("betweenness")),
            blest_version=top.str("blest_version", optional=True) or "",
            created=top.str("created", optional=True) or "",
            path=path,
        )

    def json_text(self) -> str:
        """The config as the JSON text :meth:`write` writes."""
        return json.dumps(json_ready(self.to_dict()), indent=2, allow_nan=False) + "\n"

    def write(
        self, path: str | os.PathLike[str], *, point: str | None = None, **publish: Any
    ) -> Path:
        """Write atomically (temporary file + os.replace); returns the path. ``point`` names
        a test failpoint (:func:`blest.tuning.storage.failpoint`) before the replace; ``publish``
        goes to :func:`~blest.tuning.storage.atomic_write` (``then``, ``final``)."""
        text = self.json_text().encode()
        out = atomic_write(path, lambda f: _write_all(f, text), point=point, **publish)
        self.path = Path(path)
        return out

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> TunedConfig:
        """Read and validate a config; :class:`ConfigError` on anything wrong."""
        p = Path(path)
        text = config_text(p)
        try:
            data = json.loads(text)
            too_deep = json_depth(data) > MAX_DEPTH
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"{p} is not valid JSON (line {exc.lineno}): not a tuned config"
            ) from None
        except RecursionError:  # nested beyond the interpreter's recursion limit
            data, too_deep = None, True
        if too_deep:
            raise ConfigError(
                f"{p} nests its JSON more than {MAX_DEPTH} levels deep: not a tuned config"
            )
        return cls.from_dict(data, path=p)
