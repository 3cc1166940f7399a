"""CPU references for blest: SciPy BFS levels (one seed or several), the bit-exact binary-MMA
emulation with Blest's fragment packing, a level-by-level emulator of the BVSS kernels (Blest
paper, Alg. 2/3/4; semantics in docs/algorithm.md) and the Graph500 checks of a BFS result."""

from blest.reference.bitmaps import (
    bitmap_to_bool,
    bits_set,
    ids_to_bitmap,
    n_words,
    popcount32,
    set_alphas,
    vss_of_sets,
    words_to_ids,
)
from blest.reference.emulator import (
    EmulatorResult,
    LevelState,
    emulate_bfs,
    emulate_parents,
    emulate_spec,
)
from blest.reference.mma import (
    B_ALPHA_LANES,
    B_SHIFTED_LANES,
    a_fragment,
    b_fragment,
    mma_m8n8k128_and_popc,
    n_rounds,
    slot_popcounts,
)
from blest.reference.scipy_bfs import (
    ScipyBFS,
    bfs_levels,
    check_seeds,
    check_source,
    frontier_bfs,
    is_single_seed,
    tree_depths,
)
from blest.reference.validate import CHECKS, validate_bfs

__all__ = [
    "CHECKS",
    "ScipyBFS",
    "B_ALPHA_LANES",
    "B_SHIFTED_LANES",
    "EmulatorResult",
    "LevelState",
    "a_fragment",
    "b_fragment",
    "bfs_levels",
    "bitmap_to_bool",
    "bits_set",
    "check_seeds",
    "check_source",
    "emulate_bfs",
    "emulate_parents",
    "emulate_spec",
    "frontier_bfs",
    "ids_to_bitmap",
    "is_single_seed",
    "mma_m8n8k128_and_popc",
    "n_rounds",
    "n_words",
    "popcount32",
    "set_alphas",
    "slot_popcounts",
    "tree_depths",
    "validate_bfs",
    "vss_of_sets",
    "words_to_ids",
]
