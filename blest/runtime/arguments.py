"""The checks of every engine call's arguments, beside the engine contract
(:mod:`blest.runtime.engine_protocol`): each runs once per call, in the engine that takes it.

Sources are the user's ids; an engine maps them to its internal ids after the check.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Generic, NamedTuple, TypeVar, cast, overload

import numpy as np

from blest.errors import ArgumentError
from blest.reference.centrality import as_sources
from blest.reference.scipy_bfs import check_seeds, check_source, is_single_seed

#: ``progress(done, total)``: called as batches of sources finish.
Progress = Callable[[int, int], None]

__all__ = [
    "Progress",
    "many_out",
    "host_memory_limit",
    "centrality_sources",
    "bfs_many_sources",
    "CallRules",
    "RuleSetting",
    "call_rules",
    "check_idle_ms",
    "check_rule",
    "seeds",
    "depth_limit",
    "check_out",
    "check_host_out",
]


class CallRules(NamedTuple):
    """The runtime rules a traversal runs under: the switching constant ``eta``, the return
    rule ``beta``, the edge-ratio guard ``alpha`` (docs/algorithm.md), the one-block level
    threshold ``small_queue`` and whether the call is timed by CUDA events. A tuple: a captured
    call is kept per rules. Build one with :func:`call_rules`, which checks the values."""

    eta: float
    beta: float
    alpha: float
    small_queue: int
    timing: bool


def call_rules(eta: Any, beta: Any, alpha: Any, small_queue: Any, timing: Any) -> CallRules:
    """Checked :class:`CallRules` (``eta``, ``beta``, ``alpha``: numbers >= 0, inf allowed;
    ``small_queue``: an integer >= 0)."""
    sq = int(small_queue)
    if sq < 0:
        raise ArgumentError(f"small_queue must be >= 0, got {small_queue}")
    return CallRules(
        check_rule("eta", eta), check_rule("beta", beta), check_rule("alpha", alpha), sq,
        bool(timing),
    )  # fmt: skip


T = TypeVar("T")


class RuleSetting(Generic[T]):
    """An engine's setting of the rules its next calls run under (``eta``, ``beta``, ``alpha``,
    ``small_queue``, ``timing``): read from, and checked into, the engine's ``_rules``
    (:class:`CallRules`). ``alpha`` > 0 is refused on a per-level variant, as at construction."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, engine: None, owner: type | None = None) -> RuleSetting[T]: ...

    @overload
    def __get__(self, engine: object, owner: type | None = None) -> T: ...

    def __get__(self, engine: object, owner: type | None = None) -> T | RuleSetting[T]:
        if engine is None:
            return self
        return cast(T, getattr(engine._rules, self.name))  # type: ignore[attr-defined]

    def __set__(self, engine: object, value: T) -> None:
        rules = engine._rules._replace(**{self.name: value})  # type: ignore[attr-defined]
        checked = call_rules(rules.eta, rules.beta, rules.alpha, rules.small_queue, rules.timing)
        spec = engine.spec  # type: ignore[attr-defined]
        if checked.alpha and spec.launch == "per_level":
            raise ArgumentError(f"alpha > 0 needs a persistent variant, not {spec.name}")
        engine._rules = checked  # type: ignore[attr-defined]


def check_idle_ms(idle_ms: Any) -> None:
    """Refuse an idle limit for ``serving()`` outside (0, 60000] ms."""
    if not (isinstance(idle_ms, (int, float)) and 0 < idle_ms <= 60_000):
        raise ArgumentError(f"idle_ms must be in (0, 60000], got {idle_ms!r}")


def check_rule(name: str, value: Any) -> float:
    """``value`` as a float >= 0 (inf allowed; NaN, negatives and non-numbers refused)."""
    if isinstance(value, (bool, np.bool_)):
        raise ArgumentError(f"{name} must be a number >= 0, got {value!r}")
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ArgumentError(f"{name} must be a number >= 0, got {value!r}") from None
    if math.isnan(x) or x < 0:
        off = " (0: off)" if name in ("beta", "alpha") else ""
        raise ArgumentError(f"{name} must be >= 0{off}, inf allowed; got {value!r}")
    return x


def seeds(src: Any, n: int, new_of_old: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(user seeds as given, int64; internal seeds sorted without repeats, int32) of one
    source vertex or a sequence of seeds."""
    if is_single_seed(src):
        user = check_source(src, n)
        return np.array([user], dtype=np.int64), np.array([new_of_old[user]], dtype=np.int32)
    users = check_seeds(src, n)
    return users, np.unique(new_of_old[users]).astype(np.int32)


def depth_limit(limit: Any) -> int:
    """A depth limit as the kernels take it: -1 for none, else an integer >= 0."""
    if limit is None:
        return -1
    if isinstance(limit, (bool, np.bool_)):
        raise ArgumentError(f"depth_limit must be an integer >= 0, got {limit!r}")
    try:
        value = int(limit)
    except (TypeError, ValueError, OverflowError):
        raise ArgumentError(f"depth_limit must be an integer >= 0, got {limit!r}") from None
    if value != limit or value < 0:
        raise ArgumentError(f"depth_limit must be an integer >= 0, got {limit!r}")
    return value


def check_out(out: Any, n: int, cp: Any) -> None:
    """Refuse an ``out`` that no GPU call can fill: None, "device", "view", an int32 CuPy array
    (module ``cp``) of length n, or a writeable int32 NumPy array of length n."""
    if isinstance(out, str):
        if out not in ("device", "view"):
            raise ArgumentError(f"out must be None, 'device', 'view' or an array, got {out!r}")
    elif isinstance(out, cp.ndarray):
        if out.dtype != np.int32 or out.shape != (n,):
            raise ArgumentError(f"out must be an int32 array of shape ({n},)")
    elif out is not None:
        check_host_out(out, n)


def check_host_out(out: Any, n: int) -> None:
    """Refuse an ``out`` that is not a writeable int32 NumPy array of length n."""
    if not isinstance(out, np.ndarray) or out.dtype != np.int32 or out.shape != (n,):
        raise ArgumentError(f"out must be an int32 array of shape ({n},)")
    if not out.flags.writeable:
        raise ArgumentError("out is read-only")


# ---------------------------------------------------------------------- many sources
def host_memory_limit() -> int:
    """Bytes of host memory a result may take: what this process may still allocate (the
    available memory, ``ulimit -v`` and the cgroup limit: :mod:`blest.graph.io.memory`)."""
    from blest.graph.io.memory import available_memory

    room = available_memory()
    return room.nbytes if room is not None else 1 << 34


def many_out(out: Any, k: int, n: int) -> np.ndarray:
    """The ``(k, n)`` int32 result array of ``bfs_many``: ``out`` checked, or a new one if it
    fits in memory."""
    if out is None:
        need = 4 * k * n
        if need > host_memory_limit():
            raise ArgumentError(
                f"bfs_many of {k:,} sources on {n:,} vertices needs {need / 2**30:.1f} GiB of "
                "memory, more than is available: pass out= (a numpy.memmap, say) or fewer sources"
            )
        return np.empty((k, n), dtype=np.int32)
    if not isinstance(out, np.ndarray) or out.dtype != np.int32 or out.shape != (k, n):
        raise ArgumentError(f"out must be an int32 NumPy array of shape ({k}, {n})")
    if not out.flags.writeable:
        raise ArgumentError("out must be writeable")
    return out


def centrality_sources(sources: Any, n: int) -> np.ndarray:
    """The vertices to score: every vertex by default, else the given ids (checked)."""
    if sources is None:
        return np.arange(n, dtype=np.int64)
    return as_sources(sources, n)


def bfs_many_sources(sources: Any, n: int) -> np.ndarray:
    """The sources of ``bfs_many``: at least one, checked."""
    users = as_sources(sources, n)
    if users.size == 0:
        raise ArgumentError("bfs_many needs at least one source")
    return users
