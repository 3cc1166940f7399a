"""A read-only view of a GPU engine's last call, for checks and measurements: per-level and
per-stage clocks, and the traversal state (bitmaps, queue) for level-by-level checks.

``engine.probes`` is an :class:`EngineProbes`; it reads what the engine's
:class:`~blest.runtime.traversal.Traversal` left on the device and never changes it (a
running server, which shares those buffers, is ended first).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from blest.codegen.contract import CTL, STAGE2_CLOCK, frontier_slot, queue_slot
from blest.errors import EngineError
from blest.runtime.served import ServedCalls
from blest.runtime.traversal import Traversal

__all__ = ["EngineProbes"]


class EngineProbes:
    """What an engine's last call left on the GPU (see the module docstring)."""

    def __init__(self, traversal: Traversal, served: ServedCalls, lock: Any) -> None:
        self._tr = traversal
        self._served = served
        self._lock = lock

    def _quiet(self) -> Traversal:
        """The traversal, with no server running over its buffers."""
        with self._lock:
            self._served.stop()
        return self._tr

    def level_times_ms(self) -> tuple[np.ndarray, tuple[int, ...]]:
        """Milliseconds spent on each expanded level of the last call, and the levels that ran
        bottom-up (needs an engine built with ``record_levels=True``). Timed by block 0's
        global timer at each level start, so a level's time includes its barriers."""
        tr = self._quiet()
        if not tr.record_levels:
            raise EngineError("construct the Engine with record_levels=True")
        stats = tr.stats()
        clock = tr.values["level_clock"][: stats.levels_run + 1].get().astype(np.int64)
        return np.diff(clock) / 1e6, stats.bottom_up_levels

    def stage_times_ms(self) -> np.ndarray | None:
        """Lazy variants: milliseconds of Stage 1 (expansion) and Stage 2 (finalization) of each
        expanded level of the last call, shape (levels, 2); None for eager variants."""
        tr = self._quiet()
        if not tr.record_levels:
            raise EngineError("construct the Engine with record_levels=True")
        if tr.spec.update != "lazy":
            return None
        levels = tr.stats().levels_run
        clock = tr.values["level_clock"].get().astype(np.int64)
        starts = clock[: levels + 1]
        first = tr.n + STAGE2_CLOCK
        stage2 = clock[first : first + levels]
        return np.stack([stage2 - starts[:-1], starts[1:] - stage2], axis=1) / 1e6

    def visited_bits(self) -> np.ndarray:
        """The visited bitmap after the last call. The eager kernels keep none on a reordered
        graph (they claim a vertex by its level: ``claims_by_level``, level_state.cu.j2), so
        there it is the vertices whose internal level is set."""
        tr = self._quiet()
        if tr.spec.update != "eager" or not tr.by_level_ids:
            return tr.values["visited"].get()
        reached = tr.values["levels"][: tr.n].get() >= 0
        bits = np.zeros(tr.n_words * 32, dtype=bool)
        bits[: reached.size] = reached
        return np.packbits(bits, bitorder="little").view(np.uint32)

    def debug_state(self) -> dict[str, Any]:
        """Bitmaps and queue after the last call (internal ids), for level-by-level checks.

        After ``bfs(src, depth_limit=L)`` these are ``F_L``, ``visited`` (levels <= L) and
        ``Q_L`` as a sorted array of VSS ids with, in ``queue_sets``, the slice set each entry
        carries (the sweep policy keeps no queue: None; the resident policy keeps neither queue
        nor ``qsize``: None). The block launch keeps its state in shared memory:
        :class:`EngineError`."""
        tr = self._quiet()
        spec = tr.spec
        if spec.launch == "block":
            raise EngineError("launch='block' keeps its traversal state in shared memory")
        if spec.hops > 1:
            raise EngineError(
                f"hops={spec.hops} runs several levels a phase, and its frontier may hold "
                "stale bits (docs/algorithm.md): it has no per-level state to show"
            )
        level = tr.stats().levels_run
        ctl = tr.values["ctl"].get()
        frontier = tr.values["frontier"]
        w = tr.n_words
        at = frontier_slot(spec, level)
        frontier = frontier[at * w : (at + 1) * w]
        q = queue_slot(spec, level)
        size = None if spec.queue == "resident" else int(ctl[CTL["qsize"] + q])
        queue = queue_sets = None
        if spec.queue == "vss":
            assert size is not None  # read for every queue but the resident one
            nv = max(tr.prepared.bvss.n_vss, 1)
            start = 2 * q * nv
            entries = tr.values["queue"][start : start + 2 * size].get().reshape(-1, 2)
            order = np.argsort(entries[:, 0], kind="stable")
            queue = entries[order, 0].astype(np.int64)
            queue_sets = entries[order, 1].astype(np.int64)
        return {
            "visited": self.visited_bits(),
            "frontier": frontier.get(),
            "queue": queue,
            "queue_sets": queue_sets,
            "qsize": size,
        }
