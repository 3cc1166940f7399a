"""CPU references for blest: SciPy BFS levels, the bit-exact binary-MMA emulation with Blest's
fragment packing, and a level-by-level emulator of the BVSS kernels (Blest paper, Alg. 2/3/4;
semantics in docs/algorithm.md)."""

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
from blest.reference.emulator import EmulatorResult, LevelState, emulate_bfs, emulate_spec
from blest.reference.mma import (
    B_ALPHA_LANES,
    B_SHIFTED_LANES,
    a_fragment,
    b_fragment,
    mma_m8n8k128_and_popc,
    n_rounds,
    slot_popcounts,
)
from blest.reference.scipy_bfs import bfs_levels, check_source, tree_depths

__all__ = [
    "B_ALPHA_LANES",
    "B_SHIFTED_LANES",
    "EmulatorResult",
    "LevelState",
    "a_fragment",
    "b_fragment",
    "bfs_levels",
    "bitmap_to_bool",
    "bits_set",
    "check_source",
    "emulate_bfs",
    "emulate_spec",
    "ids_to_bitmap",
    "mma_m8n8k128_and_popc",
    "n_rounds",
    "n_words",
    "popcount32",
    "set_alphas",
    "slot_popcounts",
    "tree_depths",
    "vss_of_sets",
    "words_to_ids",
]
