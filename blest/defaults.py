"""The paper's constants and blest's defaults, defined once.

Every module that needs one of these imports it from here; nothing else in the package spells
the numbers. The notation (sigma, kappa, eta, W, U_div) is explained in ``docs/notation.md``.
"""

from __future__ import annotations

__all__ = [
    "SIGMAS",
    "DEFAULT_SIGMA",
    "KAPPAS",
    "QUEUE_KAPPAS",
    "DEFAULT_KAPPA",
    "DEEP_KAPPA",
    "DEFAULT_ETA",
    "JACCARD_WINDOW",
    "U_DIV_LAZY",
    "SOURCE_SEED",
    "TIMING_SOURCES",
    "DEFAULT_ARCH",
    "MIN_COMPUTE_CAPABILITY",
    "CLUSTER_COMPUTE_CAPABILITY",
    "DEFAULT_BLOCK_SIZE",
]

#: Slice widths the generator supports (columns per slice set).
SIGMAS: tuple[int, ...] = (4, 8, 16, 32)
#: The paper's slice width.
DEFAULT_SIGMA = 8
#: BFSs per multi-source batch the generator supports.
KAPPAS: tuple[int, ...] = (32, 64, 128, 256, 512)
#: BFSs per batch of the multi-source queue form (visited bits of every vertex in shared memory).
QUEUE_KAPPAS: tuple[int, ...] = (1, 2, 4, 8, 16, 32)
#: BFSs per batch of the multi-source kernel an engine runs when no config chose one, on graphs
#: of few levels (the grid form, vertex-major; the one definition of kappa's default).
DEFAULT_KAPPA = 128
#: ... and on deep graphs, where the queue form's shared memory does not take the graph (the
#: block form with the CUDA-core expansion).
DEEP_KAPPA = 32
#: Switching constant: a level runs bottom-up when #unvisited < eta * |Q| (the paper's value
#: on Hopper).
DEFAULT_ETA = 10.0
#: Return rule after a bottom-up level: stay bottom-up while |F_L| * beta >= n (0: off, the
#: paper's rule alone decides every level).
DEFAULT_BETA = 0.0
#: Edge-ratio guard beside eta (Beamer's rule): a level may go bottom-up only when
#: alpha * m_f > m_u, m_f the in-arcs of F_L and m_u those of the unvisited vertices (0: off).
DEFAULT_ALPHA = 0.0
#: Window width W of JaccardWithWindows.
JACCARD_WINDOW = 1 << 16
#: The paper's rule takes the lazy update path when U_div exceeds this (an id spread).
U_DIV_LAZY = 25_000
#: Seed of the timing protocol's source draw (and of the dataset generators).
SOURCE_SEED = 27491095
#: Sources per graph in the timing protocol.
TIMING_SOURCES = 64
#: Architecture compiled for when no GPU says otherwise (Hopper).
DEFAULT_ARCH = "sm_90"
#: Oldest GPU generation the binary MMA kernels run on (sm_80).
MIN_COMPUTE_CAPABILITY = 80
#: The first compute capability with thread-block clusters (Hopper, sm_90).
CLUSTER_COMPUTE_CAPABILITY = 90
#: Threads per block of an engine unless told or tuned otherwise.
DEFAULT_BLOCK_SIZE = 256
#: The workloads ``blest-tune --workload`` knows; :mod:`blest.tuning.workloads` registers each.
WORKLOAD_NAMES: tuple[str, ...] = ("bfs", "closeness", "betweenness")
