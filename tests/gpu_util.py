"""Shared helpers of the gpu-marked tests: the skip condition and the graph zoo."""

from __future__ import annotations

import numpy as np
import pytest

from blest.codegen import toolchain
from blest.datasets.classes import graph_zoo, path_like  # noqa: F401  (re-exported)
from blest.datasets.classes import zoo_sources as sources  # noqa: F401

requires_gpu = pytest.mark.skipif(not toolchain.have_gpu(), reason="needs an NVIDIA GPU with CuPy")


def seeded_zoo() -> tuple[np.random.Generator, dict]:
    """A fresh random generator (its seed printed, to replay a failure) and the graph zoo drawn
    from it: the body of each gpu test module's ``zoo`` fixture."""
    seed = int(np.random.SeedSequence().entropy) % 2**32
    print(f"graph zoo seed {seed}")
    rng = np.random.default_rng(seed)
    return rng, graph_zoo(rng)
