"""``load_tuned(config)``: an engine for a tuned config, from its prepared artifact alone.

On a GPU this is a :class:`blest.Engine` with the config's variant, eta and geometry, built on
the artifact's BVSS and permutation (no reordering, no BVSS build, no source graph needed).
Without a GPU it is an :class:`EmulatedEngine` with the same ``bfs`` / ``source`` / ``spec``
API that runs the NumPy emulator of the variant (exact, slow), after a one-time warning.
"""

from __future__ import annotations

import os
import time
import warnings
from typing import Any

import numpy as np

from blest.codegen.spec import VariantSpec
from blest.errors import ConfigError, GPUUnavailableError
from blest.tuning.artifact import Prepared, load_artifact
from blest.tuning.config import TunedConfig
from blest.tuning.files import sha256_file

__all__ = ["load_tuned", "load_prepared", "EmulatedEngine"]


def load_prepared(cfg: TunedConfig) -> Prepared:
    """The config's artifact, verified: its SHA-256 and its graph hash must match the config."""
    path = cfg.artifact_path
    if not path.is_file():
        raise ConfigError(f"prepared artifact {path} is missing: {cfg.hint}")
    if sha256_file(path) != cfg.artifact_sha256:
        raise ConfigError(
            f"prepared artifact {path} does not match {cfg.path or 'the config'} "
            f"(its SHA-256 differs): {cfg.hint}"
        )
    try:
        prep = load_artifact(path, source=cfg.graph.get("source"), graph_hash=cfg.graph["hash"])
    except ConfigError as exc:
        raise ConfigError(f"{exc}: {cfg.hint}") from None
    spec = cfg.spec
    if prep.bvss.sigma != spec.sigma or prep.graph.n != int(cfg.graph["n"]):
        raise ConfigError(f"prepared artifact {path} does not fit the config's variant: {cfg.hint}")
    return prep


def load_tuned(
    path: str | os.PathLike[str], *, device: int | None = None, emulate: bool | None = None
) -> Any:
    """An engine for the tuned config at ``path``.

    Parameters
    ----------
    path : str or os.PathLike
        A ``.blest.json`` written by ``blest-tune``.
    device : int, optional
        CUDA device (default: the current one).
    emulate : bool, optional
        True forces the CPU emulator; None (default) uses it only when no GPU is usable.

    Raises
    ------
    ConfigError
        Unreadable config, unknown format version, missing or mismatched artifact (the message
        says how to re-tune).
    """
    cfg = TunedConfig.read(path)
    prep = load_prepared(cfg)
    if emulate is None:
        from blest.codegen.toolchain import have_gpu

        emulate = not have_gpu()
    if emulate:
        return EmulatedEngine(cfg, prep)
    return _gpu_engine(cfg, prep, device)


def _gpu_engine(cfg: TunedConfig, prep: Prepared, device: int | None) -> Any:
    from blest.runtime.engine import Engine

    perm = None if prep.permutation.is_identity else prep.permutation
    engine = Engine(
        prep.graph,
        cfg.spec,
        eta=cfg.eta,
        permutation=perm,
        device=device,
        block_size=cfg.block_size,
        blocks_per_sm=cfg.blocks_per_sm,
        bvss=prep.bvss,
        small_queue=cfg.small_queue,
    )
    tuned_on = (cfg.gpu or {}).get("name")
    if not cfg.tuned:
        warnings.warn(
            f"{cfg.path} was not tuned on a GPU (the paper's rules chose the variant); "
            f"{cfg.hint} on this machine to tune it",
            RuntimeWarning,
            stacklevel=3,
        )
    elif tuned_on != engine.device_name:
        warnings.warn(
            f"{cfg.path} was tuned on {tuned_on}, this is {engine.device_name}: it runs, but "
            f"{cfg.hint} here for the best variant",
            RuntimeWarning,
            stacklevel=3,
        )
    return engine


class EmulatedEngine:
    """The CPU stand-in for :class:`blest.Engine`: the NumPy emulator of the tuned variant.

    Same ``bfs(src, out=None, depth_limit=None)``, ``spec``, ``eta``, ``source``, ``ptx``,
    ``stats``, ``close()`` and context-manager API; ids are the user's, levels int32 with -1
    for unreachable. ``stats.traversal_ms`` is the emulator's wall time.
    """

    def __init__(self, cfg: TunedConfig, prep: Prepared) -> None:
        warnings.warn(
            "no GPU: blest runs the NumPy emulator of the tuned kernel (exact but slow)",
            RuntimeWarning,
            stacklevel=3,
        )
        self.config = cfg
        self.spec: VariantSpec = cfg.spec
        self.eta = float(cfg.eta)
        self.graph = prep.graph
        self.n = prep.graph.n
        self.permutation = prep.permutation
        self.bvss = prep.bvss
        self._in = (np.asarray(prep.in_ptr), np.asarray(prep.in_idx))
        self._new_of_old = np.asarray(prep.permutation.new_of_old)
        self.device_name = "CPU (NumPy emulator)"
        self.last_stats: Any = None
        self._closed = False

    @property
    def source(self) -> str:
        """The generated CUDA source of the variant."""
        from blest.codegen.render import render

        return render(self.spec)

    @property
    def ptx(self) -> str:
        """PTX of the variant for sm_90 (NVRTC; no GPU needed)."""
        from blest.codegen.compile import compile_source

        return compile_source(self.source, arch="compute_90", target="ptx").decode()

    def bfs(self, src: int, *, out: Any = None, depth_limit: int | None = None) -> np.ndarray:
        """BFS levels from ``src`` (a user id): int32, -1 for unreachable vertices."""
        from blest.reference import check_source, emulate_spec
        from blest.runtime.engine import BFSStats

        if self._closed:
            raise RuntimeError("this engine is closed")
        if isinstance(out, str):
            raise GPUUnavailableError("out='device' needs a GPU")
        if isinstance(src, (bool, np.bool_)) or not isinstance(src, (int, np.integer)):
            raise TypeError(f"src must be an integer vertex id, got {type(src).__name__}")
        if out is not None and (
            not isinstance(out, np.ndarray) or out.dtype != np.int32 or out.shape != (self.n,)
        ):
            raise ValueError(f"out must be an int32 NumPy array of shape ({self.n},)")
        user = check_source(src, self.n)
        internal = int(self._new_of_old[user])
        t0 = time.perf_counter()
        result = emulate_spec(
            self.bvss,
            self._in,
            internal,
            self.spec,
            eta=self.eta,
            depth_limit=depth_limit,
            record=False,
        )
        levels = result.levels[self._new_of_old]  # internal levels back to user ids
        reached = levels >= 0
        self.last_stats = BFSStats(
            source=user,
            depth=int(levels.max()) if self.n else 0,
            visited=int(reached.sum()),
            levels_run=int(levels.max()) + 1 if self.n else 0,
            traversal_ms=(time.perf_counter() - t0) * 1e3,
        )
        if out is None:
            return levels.astype(np.int32, copy=False)
        np.copyto(out, levels)
        return out

    @property
    def stats(self) -> Any:
        if self.last_stats is None:
            raise RuntimeError("no bfs call yet")
        return self.last_stats

    def close(self) -> None:
        self._closed = True

    def __enter__(self) -> EmulatedEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<blest.EmulatedEngine {self.spec.name} n={self.n} (CPU)>"
