"""``load_tuned(config)``: an engine for a tuned config, from its prepared artifact alone.

The artifact's arrays are used as they are (no reordering, no BVSS build, no source graph
needed). On a GPU the engine runs the config's variant, eta and geometry; without one it is the
CPU engine (SciPy), or the kernel emulator with ``device="emulator"``.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

from blest.errors import ConfigError
from blest.graph.prepared import Prepared
from blest.runtime.engine_protocol import BFSEngine
from blest.runtime.factory import make_engine, resolve_device
from blest.tuning.artifact import prepared_from_bytes
from blest.tuning.artifact_checks import max_artifact_bytes
from blest.tuning.artifact_file import ArtifactFile
from blest.tuning.config import TunedConfig

__all__ = ["load_tuned", "load_prepared"]


def load_prepared(cfg: TunedConfig) -> Prepared:
    """The config's artifact, verified: its size must fit the config's graph, its SHA-256 and
    its graph hash must match the config. The file is read once; the bytes hashed are the
    bytes parsed."""
    path = cfg.artifact_path
    try:
        with ArtifactFile(path) as f:
            _check_size(cfg, f.size)  # before a byte is read
            raw = f.read(digest=True)
    except ConfigError as exc:
        raise ConfigError(f"{exc}: {cfg.hint}") from None
    if raw.sha256 != cfg.artifact_sha256:
        raise ConfigError(
            f"prepared artifact {path} does not match {cfg.path or 'the config'} "
            f"(its SHA-256 differs): {cfg.hint}"
        )
    try:
        prep = prepared_from_bytes(
            raw, str(path), verified=True, source=cfg.graph.source, graph_hash=cfg.graph.hash
        )
    except ConfigError as exc:
        raise ConfigError(f"{exc}: {cfg.hint}") from None
    if prep.sigma != cfg.spec.sigma or prep.n != cfg.graph.n:
        raise ConfigError(f"prepared artifact {path} does not fit the config's variant: {cfg.hint}")
    return prep


def _check_size(cfg: TunedConfig, size: int) -> None:
    """Refuse an artifact larger than one of the config's graph can be."""
    n, arcs, hop_arcs = cfg.graph.n, cfg.graph.arcs, cfg.preparation.hop_arcs or 0
    most = max_artifact_bytes(n, arcs, cfg.spec.sigma, cfg.spec.hops, hop_arcs)
    if size > most:
        raise ConfigError(
            f"prepared artifact {cfg.artifact_path} has {size:,} bytes, more than the artifact "
            f"of a graph of {n:,} vertices and {arcs:,} arcs can have ({most:,}): it is not "
            "this config's artifact"
        )


def load_tuned(
    path: str | os.PathLike[str],
    *,
    device: int | str | None = None,
    emulate: bool | None = None,
) -> BFSEngine:
    """An engine for the tuned config at ``path``.

    Parameters
    ----------
    path : str or os.PathLike
        A ``.blest.json`` written by ``blest-tune``.
    device : int or str, optional
        ``None`` (default): the GPU when one is usable, else SciPy on the CPU; a GPU index;
        ``"gpu"``; ``"cpu"``; or ``"emulator"`` (the exact NumPy emulator of the kernel).
    emulate : bool, optional
        Shorthand: ``True`` is ``device="emulator"``; ``False`` insists on a GPU.

    Raises
    ------
    ConfigError
        Unreadable config, unknown format version, missing or mismatched artifact (the message
        says how to re-tune).
    """
    if emulate is not None:
        device = "emulator" if emulate else (device if device is not None else "gpu")
    cfg = TunedConfig.read(path)
    prep = load_prepared(cfg)
    where = resolve_device(device)
    if isinstance(where, str):
        if device is None:
            warnings.warn(
                f"no GPU: blest runs SciPy's BFS on the CPU ({cfg.spec.name} is the kernel a GPU "
                "would run; device='emulator' runs its exact emulator)",
                RuntimeWarning,
                stacklevel=2,
            )
        return make_engine(
            prep, cfg.spec, eta=cfg.eta, beta=cfg.beta, alpha=cfg.alpha, device=where
        )
    engine = make_engine(
        prep,
        cfg.spec,
        eta=cfg.eta,
        beta=cfg.beta,
        alpha=cfg.alpha,
        geometry=cfg.geometry,
        device=where,
    )
    many = getattr(engine, "many", None)  # the GPU engine's many-source work
    if cfg.multi_source is not None and many is not None:
        from blest.codegen.msspec import MSSpec

        ms = cfg.multi_source
        many.configure(
            MSSpec.from_dict(ms["spec"]),
            eta=ms["eta"],
            block_size=ms["block_size"],
            dense=_dense_choice(ms),
        )
    runners = getattr(engine, "betweenness_runners", None)  # the GPU engine's betweenness
    if cfg.betweenness is not None and runners is not None:
        from blest.codegen.bcspec import BCSpec

        bc = cfg.betweenness
        runners.configure(BCSpec.from_dict(bc["spec"]), bc["block_size"], bc["wide_degree"])
    _warn_if_foreign(cfg, engine)
    return engine


def _dense_choice(ms: dict[str, Any]) -> Any:
    """A config's every-vertex choice for ``ManySources.configure(dense=...)``."""
    if "dense" not in ms:
        return "auto"
    if ms["dense"] is None:
        return None
    from blest.codegen.densespec import DenseSpec
    from blest.runtime.many import DenseChoice

    return DenseChoice(DenseSpec.from_dict(ms["dense"]["spec"]), ms["dense"]["block_size"])


def _warn_if_foreign(cfg: TunedConfig, engine: Any) -> None:
    if not cfg.tuned:
        warnings.warn(
            f"{cfg.path} was not tuned on a GPU (the paper's rules chose the variant); "
            f"{cfg.hint} on this machine to tune it",
            RuntimeWarning,
            stacklevel=3,
        )
    elif cfg.gpu is not None and cfg.gpu.name != engine.device_name:
        warnings.warn(
            f"{cfg.path} was tuned on {cfg.gpu.name}, this is {engine.device_name}: it runs, but "
            f"{cfg.hint} here for the best variant",
            RuntimeWarning,
            stacklevel=3,
        )
