"""Introspection of the GPU engine's last call: its statistics, per-level and per-stage clocks,
and the traversal state (bitmaps, queue) for level-by-level checks. Mixed into
:class:`blest.runtime.engine.Engine`, which provides the state buffers."""

from __future__ import annotations

from typing import Any

import numpy as np

from blest.codegen.contract import CTL, queue_buffers
from blest.errors import EngineError
from blest.runtime.protocol import BFSStats

__all__ = ["EngineProbes"]


class EngineProbes:
    """Mixed into :class:`blest.runtime.engine.Engine` (it provides ``_state``, ``_last``: the
    last call's user source, timing events or None, and seed count)."""

    _cp: Any
    _device_id: int
    _host_ctl: Any
    _last: tuple
    last_stats: BFSStats | None
    spec: Any
    _state: dict[str, Any]
    _record_levels: bool
    _n_words: int
    permutation: Any

    def _by_level_ids(self) -> bool:
        """Whether the kernels get new_of_old and claim by level: a reordered graph, or any
        graph under ``hops`` > 1 (whose engine gives the identity; contract.claims_form)."""
        return not self.permutation.is_identity or self.spec.hops > 1

    @property
    def stats(self) -> BFSStats:
        """Statistics of the last ``bfs`` call (read from the GPU on first access)."""
        if self.last_stats is None:
            if not hasattr(self, "_last"):
                raise EngineError("no bfs call yet")
            self.last_stats = self._read_stats()
        return self.last_stats

    def _read_stats(self) -> BFSStats:
        user, start, stop, seeds = self._last
        ctl = self._host_ctl
        with self._cp.cuda.Device(self._device_id):
            ms = np.nan if start is None else self._cp.cuda.get_elapsed_time(start, stop)
            bottom_up: tuple[int, ...] = ()
            if self.spec.switching:  # a bit per level: the words of the levels run, not all n/32
                words = (int(ctl[CTL["levels_run"]]) + 31) // 32
                bits = self._state["bottom_up_levels"][: max(words, 1)].get()
                flat = np.unpackbits(bits.view(np.uint8), bitorder="little")
                bottom_up = tuple(int(x) for x in np.flatnonzero(flat))
        return BFSStats(
            source=user,
            depth=int(np.int32(ctl[CTL["depth"]])),
            visited=int(ctl[CTL["visited"]]),
            levels_run=int(ctl[CTL["levels_run"]]),
            traversal_ms=float(ms),
            bottom_up_levels=bottom_up,
            seeds=seeds,
        )

    def level_times_ms(self) -> tuple[np.ndarray, tuple[int, ...]]:
        """Milliseconds spent on each expanded level of the last call, and the levels that ran
        bottom-up (needs ``record_levels=True``). Timed by block 0's global timer at each level
        start, so a level's time includes its barriers."""
        if not self._record_levels:
            raise EngineError("construct the Engine with record_levels=True")
        stats = self.stats
        clock = self._state["level_clock"][: stats.levels_run + 1].get().astype(np.int64)
        return np.diff(clock) / 1e6, stats.bottom_up_levels

    def stage_times_ms(self) -> np.ndarray | None:
        """Lazy variants: milliseconds of Stage 1 (expansion) and Stage 2 (finalization) of each
        expanded level of the last call, shape (levels, 2); None for eager variants."""
        if not self._record_levels:
            raise EngineError("construct the Engine with record_levels=True")
        if self.spec.update != "lazy":
            return None
        levels = self.stats.levels_run
        clock = self._state["level_clock"].get().astype(np.int64)
        starts = clock[: levels + 1]
        stage2 = clock[self.n + 2 : self.n + 2 + levels]
        return np.stack([stage2 - starts[:-1], starts[1:] - stage2], axis=1) / 1e6

    def _visited_bits(self) -> np.ndarray:
        """The visited bitmap after the last call. The eager kernels keep none on a reordered
        graph (they claim a vertex by its level: ``claims_by_level``, level_state.cu.j2), so
        there it is the vertices whose internal level is set."""
        if self.spec.update != "eager" or not self._by_level_ids():
            return self._state["visited"].get()
        reached = self._state["levels"][: self.n].get() >= 0
        bits = np.zeros(self._n_words * 32, dtype=bool)
        bits[: reached.size] = reached
        return np.packbits(bits, bitorder="little").view(np.uint32)

    def debug_state(self) -> dict[str, Any]:
        """Bitmaps and queue after the last call (internal ids), for level-by-level checks.

        After ``bfs(src, depth_limit=L)`` these are ``F_L``, ``visited`` (levels <= L) and
        ``Q_L`` as a sorted array of VSS ids with, in ``queue_sets``, the slice set each entry
        carries (the sweep policy keeps no queue: None; the resident policy keeps neither queue
        nor ``qsize``: None). The block launch keeps its state in
        shared memory: :class:`EngineError`."""
        if self.spec.launch == "block":
            raise EngineError("launch='block' keeps its traversal state in shared memory")
        if self.spec.hops > 1:
            raise EngineError(
                f"hops={self.spec.hops} runs several levels a phase, and its frontier may hold "
                "stale bits (docs/algorithm.md): it has no per-level state to show"
            )
        level = self.stats.levels_run
        nq = queue_buffers(self.spec)
        ctl = self._state["ctl"].get()
        frontier = self._state["frontier"]
        if self.spec.update == "eager":
            w = self._n_words
            frontier = frontier[(level % 3) * w : (level % 3 + 1) * w]
        size = None if self.spec.queue == "resident" else int(ctl[CTL["qsize"] + level % nq])
        queue = queue_sets = None
        if self.spec.queue == "vss":
            nv = max(self.prepared.bvss.n_vss, 1)
            start = 2 * (level % nq) * nv
            entries = self._state["queue"][start : start + 2 * size].get().reshape(-1, 2)
            order = np.argsort(entries[:, 0], kind="stable")
            queue = entries[order, 0].astype(np.int64)
            queue_sets = entries[order, 1].astype(np.int64)
        return {
            "visited": self._visited_bits(),
            "frontier": frontier.get(),
            "queue": queue,
            "queue_sets": queue_sets,
            "qsize": size,
        }
