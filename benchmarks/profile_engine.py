"""Where does Engine set-up and a small bfs call spend its time? (cProfile, top entries)."""

from __future__ import annotations

import cProfile
import pstats

import numpy as np

from blest import VariantSpec  # noqa: E402
from blest.datasets.classes import graph_zoo  # noqa: E402
from blest.runtime.engine import Engine  # noqa: E402


def main() -> None:
    rng = np.random.default_rng(1)
    graphs = graph_zoo(rng)
    Engine(graphs["uniform"], VariantSpec()).bfs(0)  # warm caches

    def work() -> None:
        for g in graphs.values():
            with Engine(g, VariantSpec()) as eng:
                for _ in range(3):
                    eng.bfs(0)

    prof = cProfile.Profile()
    prof.enable()
    work()
    prof.disable()
    pstats.Stats(prof).sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()
