"""Shared pytest setup: tests/ on sys.path (for ``random_graphs``) and a seeded ``rng``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)


@pytest.fixture
def rng() -> np.random.Generator:
    """A fresh generator; its seed is printed (shown on failure). Reproduce a failure with
    ``BLEST_TEST_SEED=<seed> pytest ...``."""
    env = os.environ.get("BLEST_TEST_SEED")
    seed = int(env) if env else int(np.random.SeedSequence().entropy)
    print(f"rng seed: {seed}  (rerun with BLEST_TEST_SEED={seed})")
    return np.random.default_rng(seed)
