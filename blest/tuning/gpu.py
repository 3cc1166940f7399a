"""Engines for the tuner on a GPU: one device BVSS per (ordering, sigma), no re-permuting."""

from __future__ import annotations

from typing import Any

from blest.runtime.engine_protocol import Geometry
from blest.runtime.factory import make_engine
from blest.tuning.prepare import Preparation
from blest.tuning.space import Candidate

__all__ = ["EngineFactory"]


class EngineFactory:
    """``factory(candidate)`` → a GPU engine (current device) on the candidate's preparation."""

    def __init__(self, preps: dict[str, Preparation]) -> None:
        self.preps = preps

    def __call__(self, c: Candidate) -> Any:
        import cupy

        prepared = self.preps[c.ordering].prepared(c.spec.sigma, xp=cupy)  # BVSS built once
        geometry = Geometry(c.block_size, c.blocks_per_sm, None, c.small_queue)
        return make_engine(
            prepared,
            c.spec,
            eta=c.engine_eta,
            beta=c.engine_beta,
            alpha=c.engine_alpha,
            geometry=geometry,
            device="gpu",
        )

    def release(self) -> None:
        for prep in self.preps.values():
            prep.release_device()
