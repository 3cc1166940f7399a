"""Plots of benchmark results (matplotlib, the optional ``plot`` extra).

:func:`plot_bench` draws what ``blest bench --plot`` shows: the time of every source (traversal
and whole call) and, when the benchmark recorded one, the per-level timeline of one source.
:func:`plot_levels` draws per-level timelines of several runs (``benchmarks/plot.py`` uses it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from blest.errors import MissingDependencyError

__all__ = ["require_matplotlib", "plot_bench", "plot_levels"]

_HINT = 'plots need matplotlib: pip install "blest-bfs[plot]"'


def require_matplotlib() -> Any:
    """``matplotlib.pyplot`` on the non-interactive Agg backend, or
    :class:`MissingDependencyError` naming the ``plot`` extra."""
    try:
        import matplotlib
    except ImportError:
        raise MissingDependencyError(_HINT) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _timeline(ax: Any, level_ms: list[float], bottom_up: list[int], title: str) -> None:
    """Bars of microseconds per level: tensor-core (top-down) blue, bottom-up orange."""
    up = set(bottom_up)
    colors = ["tab:orange" if i in up else "tab:blue" for i in range(len(level_ms))]
    ax.bar(range(len(level_ms)), [1e3 * t for t in level_ms], color=colors, width=1.0)
    ax.set_ylabel("µs", fontsize=7)
    ax.set_xlabel("BFS level", fontsize=7)
    ax.set_title(f"{title} (blue: tensor cores, orange: CUDA-core bottom-up)", fontsize=8)


def _save(fig: Any, plt: Any, path: str | Path) -> Path:
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=130)
    plt.close(fig)
    return out


def plot_bench(result: dict[str, Any], path: str | Path) -> Path:
    """Per-source times of a ``blest bench`` result (its JSON form), and its per-level
    timeline when it has one; written to ``path`` (the extension picks the format)."""
    plt = require_matplotlib()
    per = result["per_source"]
    timeline = result.get("timeline")
    fig, axes = plt.subplots(2 if timeline else 1, 1, figsize=(10, 6 if timeline else 3.2))
    axes = list(axes) if timeline else [axes]
    x = range(len(per["sources"]))
    ax = axes[0]
    ax.plot(x, per["whole_call_ms"], "o", ms=3, color="tab:gray", label="whole call")
    ax.plot(x, per["traversal_ms"], "o", ms=3, color="tab:blue", label="traversal")
    ax.set_yscale("log")
    ax.set_xlabel("source (in timing order)", fontsize=7)
    ax.set_ylabel("ms", fontsize=7)
    ax.set_title(f"{result['target']}: {result['engine']}, {result['variant']}", fontsize=8)
    ax.legend(fontsize=7)
    if timeline:
        title = f"source {timeline['source']}"
        _timeline(axes[1], timeline["level_ms"], timeline["bottom_up_levels"], title)
    return _save(fig, plt, path)


def plot_levels(rows: list[dict[str, Any]], path: str | Path) -> Path:
    """Time per BFS level of each row with ``kind == "levels"`` (keys ``graph``, ``source``,
    ``variant``, ``level_ms``, ``bottom_up_levels``), one panel each, as in the Blest paper's
    Fig. 5."""
    plt = require_matplotlib()
    timelines = [r for r in rows if r["kind"] == "levels"]
    fig, axes = plt.subplots(len(timelines), 1, figsize=(10, 2.4 * max(1, len(timelines))))
    axes = [axes] if len(timelines) == 1 else list(axes)
    for ax, r in zip(axes, timelines, strict=True):
        title = f"{r['graph']} from source {r['source']}: {r['variant']}"
        _timeline(ax, r["level_ms"], r["bottom_up_levels"], title)
    return _save(fig, plt, path)
