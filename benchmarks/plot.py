"""Plot benchmark results (matplotlib, the optional ``plot`` extra).

``plot_results(rows, path)``: one panel per graph, mean traversal time of every variant and
geometry (log scale), the paper's fixed choice and the C++ anchor marked. ``plot_levels``
(per-level timelines) lives in the package, :mod:`blest.tuning.plots`.
Usage: ``python3 benchmarks/plot.py results.json out.png``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from blest.tuning.plots import plot_levels

__all__ = ["plot_levels", "plot_results"]


def plot_results(rows: list[dict], path: str | Path) -> Path:
    from run import CPP_MS

    from blest.tuning.plots import require_matplotlib

    plt = require_matplotlib()
    rows = [r for r in rows if r["kind"] != "levels"]
    graphs = list(dict.fromkeys(r["graph"] for r in rows))
    per_graph = max(sum(r["graph"] == g for r in rows) for g in graphs)
    fig, axes = plt.subplots(len(graphs), 1, figsize=(10, len(graphs) * (0.9 + 0.17 * per_graph)))
    axes = [axes] if len(graphs) == 1 else list(axes)
    for ax, name in zip(axes, graphs, strict=True):
        mine = [r for r in rows if r["graph"] == name and r["kind"] in ("variant", "paper")]
        mine.sort(key=lambda r: r["traversal_ms"])
        labels = [("paper: " if r["kind"] == "paper" else "") + r["variant"] for r in mine]
        colors = ["tab:orange" if r["kind"] == "paper" else "tab:blue" for r in mine]
        ax.barh(range(len(mine)), [r["traversal_ms"] for r in mine], color=colors)
        ax.set_yticks(range(len(mine)), labels, fontsize=6)
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.set_title(f"{name}: mean traversal ms (64 sources)", fontsize=8)
        if name in CPP_MS:
            ax.axvline(CPP_MS[name], color="tab:red", linestyle="--", label="C++ Blest (H200)")
            ax.legend(fontsize=6, loc="lower right")
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=130)
    plt.close(fig)
    return out


if __name__ == "__main__":
    data = json.loads(Path(sys.argv[1]).read_text())
    print(plot_results(data, sys.argv[2]))
    if any(r["kind"] == "levels" for r in data):
        print(plot_levels(data, Path(sys.argv[2]).with_suffix(".levels.png")))
