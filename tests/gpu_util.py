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


def assert_level_states(eng, spec, ref, bvss, call, what: str) -> None:
    """After ``eng.bfs(call, depth_limit=L)`` for each of the emulator's level states
    (``ref.states``), ``eng.probes.debug_state()`` against it: visited, F_L, |Q_L| (None for the
    resident queue, which counts none) and Q_L with each entry's slice set (``bvss``: the
    BVSS the engine runs)."""
    for state in ref.states:
        eng.bfs(call, depth_limit=state.level)
        got = eng.probes.debug_state()
        ctx = f"{what} level={state.level}"
        np.testing.assert_array_equal(got["visited"], state.visited, err_msg=ctx)
        np.testing.assert_array_equal(got["frontier"], state.frontier, err_msg=ctx)
        if spec.queue == "resident":
            assert got["qsize"] is None, ctx
        else:
            assert got["qsize"] == state.queue.size, ctx
        if got["queue"] is not None:
            np.testing.assert_array_equal(got["queue"], state.queue, err_msg=ctx)
            want_sets = bvss.virtual_to_real[state.queue]
            np.testing.assert_array_equal(got["queue_sets"], want_sets, err_msg=ctx)
