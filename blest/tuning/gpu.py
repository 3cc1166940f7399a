"""Engines for the tuner on a GPU: shared device BVSS per (ordering, sigma), no re-permuting."""

from __future__ import annotations

from typing import Any

from blest.tuning.prepare import Preparation
from blest.tuning.space import Candidate

__all__ = ["EngineFactory"]


class EngineFactory:
    """``factory(candidate)`` → a :class:`blest.Engine` (current device) on the candidate's
    preparation."""

    def __init__(self, preps: dict[str, Preparation]) -> None:
        self.preps = preps

    def __call__(self, c: Candidate) -> Any:
        import cupy

        from blest.runtime.engine import Engine

        prep = self.preps[c.ordering]
        bvss = prep.bvss(c.spec.sigma, xp=cupy)  # built once per (ordering, sigma), kept
        perm = None if prep.permutation.is_identity else prep.permutation
        return Engine(
            prep.graph,
            c.spec,
            eta=c.engine_eta,
            permutation=perm,
            internal=prep.internal if perm is not None else None,
            block_size=c.block_size,
            blocks_per_sm=c.blocks_per_sm,
            bvss=bvss,
            small_queue=c.small_queue,
        )

    def release(self) -> None:
        for prep in self.preps.values():
            prep.release_device()
