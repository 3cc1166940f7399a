"""The contract between the generated kernels and the host: written once, here.

The control block is one ``u32`` array that every block reads after a barrier; :data:`CTL_FIELDS`
gives each field's offset, and the templates receive the same table (``#define CTL_<NAME>``), so
the offsets the host reads are the offsets the kernels write. The buffer counts say how many
rotating copies of the frontier and of the queue a variant keeps; the host sizes its allocations
and the templates index them from these functions. The block launch's shared memory (a visited
bit per vertex, then the heads of its two frontier queues) is sized here too, for the engine and
the tuner alike.
"""

from __future__ import annotations

from dataclasses import dataclass

from blest.codegen.spec import VariantSpec
from blest.errors import ArgumentError

__all__ = [
    "CtlField",
    "CTL_FIELDS",
    "CTL",
    "CTL_WORDS",
    "CALL_SLOT",
    "SLOT_FIELDS",
    "SLOT",
    "SLOT_WORDS",
    "SERVE_FIELDS",
    "SERVE",
    "SERVE_WORDS",
    "SERVE_QUIT",
    "DST_TAG_SHIFT",
    "DST_TAG_MASK",
    "DST_HOST_BIT",
    "FUSED_ONCE",
    "FUSED_SERVE",
    "frontier_buffers",
    "queue_buffers",
    "frontier_slot",
    "queue_slot",
    "level_clock_words",
    "STAGE2_CLOCK",
    "resident_vss",
    "launch_bounds",
    "max_block_size",
    "check_block_size",
    "SMEM_STATIC_RESERVE",
    "HOPPER_SMEM_OPTIN",
    "BLOCK_SMEM_QUEUE",
    "CLUSTER_HEAD_WORDS",
    "CLUSTER_SCAN_WORDS",
    "HUB_DEGREE",
    "HUB_COUNT_SHIFT",
    "block_smem_bytes",
    "block_max_vertices",
    "block_smem_queue",
]


@dataclass(frozen=True)
class CtlField:
    """One field of the control block: name (``CTL_<NAME>`` in CUDA), offset, words, meaning."""

    name: str
    offset: int
    words: int
    doc: str


#: Words of the control block.
CTL_WORDS = 44

CTL_FIELDS: tuple[CtlField, ...] = (
    CtlField("QSIZE", 0, 4, "[QUEUE_BUFFERS] |Q_L| at index L % QUEUE_BUFFERS"),
    CtlField("NEW", 4, 4, "[QUEUE_BUFFERS] |F_L| (vertices first reached at level L)"),
    CtlField("VISITED", 8, 1, "vertices visited so far"),
    CtlField("DEPTH", 9, 1, "the largest level assigned"),
    CtlField(
        "BARRIER_COUNT_ODD",
        10,
        2,
        "grid_barrier_sum (resident queue): the odd barriers' 64-bit count, a sum above bit 32",
    ),
    CtlField("DONE", 12, 1, "per-level launch: set once the traversal has ended"),
    CtlField("LEVELS_RUN", 13, 1, "levels expanded (the L at which the traversal stopped)"),
    CtlField("ERROR", 14, 1, "nonzero: a grid barrier timed out (the traversal is void)"),
    CtlField("NEAR_DEPTH", 15, 1, "hops > 1: the largest level KL + 1 (a phase's first) assigned"),
    CtlField("RESUME", 16, 1, "small-frontier mode: the level at which block 0 handed back"),
    CtlField("PROGRESS", 17, 1, "levels block 0 ran alone (keeps the barrier watchdog quiet)"),
    CtlField("NEXT_BATCH", 18, 1, "multi-source block form: batches taken so far in this launch"),
    CtlField(
        "HUBS",
        20,
        2 * 2,
        "[QUEUE_BUFFERS] expand=csr: u64 at 20 + 2 (L % 2), hubs of F_L << 40 | their out-arcs",
    ),
    CtlField("ARCS", 24, 2 * 2, "[2] the edge-ratio guard: u64 at 24 + 2 (L % 2), in-arcs of F_L"),
    CtlField(
        "SEEN_ARCS", 28, 2 * 2, "[2] the edge-ratio guard: u64 at 28 + 2 (L % 2), visited in-arcs"
    ),
    # The call slot: what a captured call's first node copies from page-locked host memory,
    # three u64 side by side (so init never clears them: CALL_SLOT_WORDS).
    CtlField("SEED", 32, 2, "captured calls: the seed (internal id, low word)"),
    CtlField("DST", 34, 2, "captured calls: where the levels go (a device address; 0: stay)"),
    CtlField("BARRIER_COUNT", 36, 2, "grid barrier: 64-bit monotonic arrival count"),
    CtlField("NEXT", 38, 2, "served calls: the array the host named for its next call (0: none)"),
    CtlField(
        "DEEP",
        40,
        2,
        "hops = 3: [2] at 40 + L % 2, phase L's net count of vertices at level 3L + 2",
    ),
    CtlField("CALL", 42, 1, "served calls: the call's number (0: the server ends)"),
    CtlField("CALL_HOST", 43, 1, "served calls: nonzero when the levels go to host memory"),
)
#: First word and length of the call slot {SEED, DST, BARRIER_COUNT}: one copy of 24 bytes
#: sets a captured call's seed and destination and zeroes the grid barrier's count.
CALL_SLOT = (32, 6)

#: Words of a served engine's request block, in page-locked host memory right after the
#: control block's copy (``ctl_out + CTL_WORDS``; serve.cu.j2).
SERVE_WORDS = 16

SERVE_FIELDS: tuple[CtlField, ...] = (
    CtlField("SEQ", 0, 1, "host: the number of the call posted last (one u64 store with SEED)"),
    CtlField("SEED", 1, 1, "host: the call's seed (internal id); SERVE_QUIT: end the server"),
    CtlField("DST", 2, 2, "host: where the levels go, tagged (see DST_TAG_SHIFT), then SEQ"),
    CtlField("IDLE_US", 4, 1, "host: the server ends after this long without a call"),
    CtlField(
        "ANSWER",
        6,
        2,
        "GPU: the number of the call answered last, then (resident queue) the grid barriers met "
        "since the launch; one u64 store",
    ),
    CtlField(
        "NEXT", 8, 2, "host: the array of the next out='device' call (0: none), tagged as DST"
    ),
)

#: Request-block offsets by lower-case name, for the host.
SERVE: dict[str, int] = {f.name.lower(): f.offset for f in SERVE_FIELDS}
#: SEED's value that asks the server to end (SEQ unchanged: no call pending). No id is this big.
SERVE_QUIT = 0xFFFFFFFF
#: The DST word: the address in its low 48 bits, SEQ's low 15 bits above them (the kernel loads
#: DST beside the poll's acquire of {SEQ, SEED} and trusts it once the tag matches) and, in the
#: top bit, whether the address is page-locked host memory.
DST_TAG_SHIFT = 48
DST_TAG_MASK = 0x7FFF
DST_HOST_BIT = 63
# serve.cu.j2 loads {SEQ, SEED}, DST, IDLE_US, ANSWER and NEXT as aligned u64 words.
if (
    CTL_WORDS % 2
    or (SERVE["seq"], SERVE["seed"]) != (0, 1)
    or any(SERVE[k] % 2 for k in ("dst", "idle_us", "answer", "next"))
):
    raise AssertionError("the request block's fields must pair as aligned u64 words")

#: The traversal kernel's ``fused`` argument: 0 traverses only, 1 also initializes and delivers
#: (a captured call); 2 is the serving kernel's own (``render(spec, serving=True)``), which
#: serves calls until told to stop (serve.cu.j2).
FUSED_ONCE = 1
FUSED_SERVE = 2

#: expand="csr": a vertex of more out-arcs is a hub, whose arcs every warp shares.
HUB_DEGREE = 256
#: The hub counter packs the count above this bit and the arcs below it.
HUB_COUNT_SHIFT = 40

#: Offsets by lower-case name, for the host.
CTL: dict[str, int] = {f.name.lower(): f.offset for f in CTL_FIELDS}


#: Words (u64) of the per-batch-slot counters of the multi-source kernels.
SLOT_WORDS = 16

SLOT_FIELDS: tuple[CtlField, ...] = (
    CtlField("QSIZE", 0, 2, "[2] |Q_L| at index L & 1"),
    CtlField("FRESH", 2, 3, "[3] (vertex, BFS) pairs first reached at level L, at index L % 3"),
    CtlField("LEVELS", 5, 1, "levels expanded in the last batch"),
    CtlField("TCOUNT", 6, 2, "[2] vertices touched (next words written) at level L, index L & 1"),
    CtlField("FCOUNT", 8, 3, "[3] vertices of F_L, at index L mod 3"),
)

#: Slot counter offsets by lower-case name, for the host.
SLOT: dict[str, int] = {f.name.lower(): f.offset for f in SLOT_FIELDS}


def _check_layout(table: tuple[CtlField, ...], words: int) -> None:
    used: set[int] = set()
    for f in table:
        span = set(range(f.offset, f.offset + f.words))
        if span & used or max(span) >= words:
            raise AssertionError(f"control field {f.name} overlaps or overflows")
        used |= span


_check_layout(CTL_FIELDS, CTL_WORDS)
# init.cu.j2 keeps SEED and DST, and in a fused launch BARRIER_COUNT too, as one range.
if (CTL["seed"], CTL["dst"], CTL["barrier_count"]) != tuple(CALL_SLOT[0] + k for k in (0, 2, 4)):
    raise AssertionError("the call slot must be SEED, DST and BARRIER_COUNT side by side")
# ... and a serving kernel keeps everything from SEED to the end (CALL, CALL_HOST last).
if (CTL["call"], CTL["call_host"]) != (CTL_WORDS - 2, CTL_WORDS - 1):
    raise AssertionError("CALL and CALL_HOST must be the control block's last two words")
_check_layout(SLOT_FIELDS, SLOT_WORDS)
_check_layout(SERVE_FIELDS, SERVE_WORDS)


def frontier_buffers(spec: VariantSpec) -> int:
    """Eager rotates F_L, F_{L+1} and F_{L-1} (being cleared); lazy updates F in place."""
    return 3 if spec.update == "eager" else 1


def queue_buffers(spec: VariantSpec) -> int:
    """Rotation depth of the queue and its counters (eager resets two levels ahead)."""
    return 4 if spec.update == "eager" else 2


def frontier_slot(spec: VariantSpec, level: int) -> int:
    """Which of the :func:`frontier_buffers` holds F_L (the eager kernels rotate three)."""
    return level % frontier_buffers(spec)


def queue_slot(spec: VariantSpec, level: int) -> int:
    """Which of the :func:`queue_buffers` (and of the QSIZE / NEW counters) holds level L's."""
    return level % queue_buffers(spec)


#: The level clock (``record_levels``): word L holds when level L started (ns, block 0's global
#: timer); the BVSS kernels then keep when each level's Stage 2 started from word
#: ``n + STAGE2_CLOCK + L`` on.
STAGE2_CLOCK = 2


def level_clock_words(spec: VariantSpec, n: int) -> int:
    """Words (u64) of the level clock of ``spec`` on n vertices: the level starts (n + 2 at
    most), and for the BVSS kernels as many Stage 2 starts after them."""
    starts = n + STAGE2_CLOCK
    return starts if spec.launch == "block" else 2 * starts


CLAIMS_FORMS = ("level", "visited")


def claims_form(spec: VariantSpec, reordered: bool) -> str | None:
    """How an eager kernel claims a reached row, fixed when it is rendered for one graph:
    ``"level"`` (a compare-and-swap of the row's level) on a reordered graph, ``"visited"`` (an
    atomicOr on visited) on a graph in its own ids; None for the lazy variants, which claim in
    their finalization, and the one-block launch, which claims in shared memory. A kernel
    rendered without a form holds both and picks one at run time (``claims_by_level``,
    level_state.cu.j2); compiling only one made delaunay-20 1.5% faster (benchmarks/NOTES.md).
    ``hops`` > 1 always claims by level (an ``atomicMin``), and its engine gives
    the kernels a permutation even for a graph in its own ids, so that init sets every level."""
    if spec.update != "eager" or spec.launch == "block":
        return None
    if spec.hops > 1:  # atomicMin on levels that init set to -1: the engine passes new_of_old
        return "level"
    return "level" if reordered else "visited"


def entry_with_top(spec: VariantSpec) -> bool:
    """Whether the persistent level loop loads each warp's first queue entry beside the level's
    counters (read_level_top_entry, level.cu.j2) rather than after them: the eager vss queue.
    The lazy variants with switching kept their old form: the entry's registers made them spill
    more, and urand-20 ran 3% slower (benchmarks/NOTES.md)."""
    return spec.queue == "vss" and spec.update == "eager" and spec.launch == "persistent"


def resident_vss(spec: VariantSpec) -> int:
    """VSSs each warp of a ``queue="resident"`` kernel keeps in registers (its slice set, mask
    word and theta row ids each): about twelve registers a warp's lane, within the 64 that a
    1,024-thread block allows. A graph of more than this many VSSs per warp loads the rest at
    every level."""
    return {1: 4, 2: 3, 4: 2, 8: 1}[spec.theta]


def launch_bounds(spec: VariantSpec) -> tuple[int, ...]:
    """``__launch_bounds__`` of the persistent kernel: the most threads a block, and the fewest
    blocks an SM (1 when not given), which set the registers a thread may use, 65,536 /
    (threads x blocks): 64 for ``registers=64`` (blocks of up to 1,024 threads), 128 for
    ``registers=128`` (up to 512)."""
    return (1024,) if spec.registers == 64 else (512, 1)


def max_block_size(spec: VariantSpec) -> int:
    """The most threads a block of ``spec``'s kernels may have."""
    return launch_bounds(spec)[0]


def check_block_size(spec: VariantSpec, block_size: int) -> None:
    """Raise ArgumentError when ``spec``'s kernels cannot run blocks of ``block_size``."""
    if block_size > max_block_size(spec):
        raise ArgumentError(
            f"{spec.name} (registers={spec.registers}) runs blocks of at most "
            f"{max_block_size(spec)} threads, got {block_size}"
        )


#: Shared-memory bytes kept free of a kernel's dynamic share for what it declares statically.
SMEM_STATIC_RESERVE = 4096
#: Shared memory one block may opt in to on Hopper (sm_90): the tuner's figure when it has no
#: device to ask.
HOPPER_SMEM_OPTIN = 227 * 1024
#: Most entries of each frontier queue the block launch keeps in shared memory (the rest spill
#: to global memory); a deep graph's levels hold far fewer, and a smaller share leaves more of
#: the multiprocessor's L1 cache to the adjacency reads.
BLOCK_SMEM_QUEUE = 4096


#: Words at the start of each block's dynamic shared memory in the cluster kernel: its three
#: rotating queue tails, then the cluster's prefix sums of |F_L| (17 words for 16 blocks).
CLUSTER_HEAD_WORDS = 32
#: Then its scratch for spreading the arcs of its frontier vertices over its threads: per
#: thread (up to 1024) an 8-byte first arc and a 4-byte prefix sum, and 33 words for the warps
#: (rounded up to 16 bytes).
CLUSTER_SCAN_WORDS = 3 * 1024 + 36


def block_smem_bytes(n: int, smem_queue: int, cluster: int = 1) -> int:
    """Dynamic shared memory of one block of the block launch: ceil(n / 32) visited words (a
    cluster: the head and scratch words, then this block's share, every ``cluster``-th word),
    then two queues of ``smem_queue`` 4-byte vertex ids."""
    words = (n + 31) // 32
    if cluster == 1:
        return 4 * words + 2 * 4 * smem_queue
    head = CLUSTER_HEAD_WORDS + CLUSTER_SCAN_WORDS
    return 4 * (head + -(-words // cluster)) + 2 * 4 * smem_queue


def block_max_vertices(limit: int, cluster: int = 1) -> int:
    """Most vertices whose visited bitmap fits in ``limit`` bytes of dynamic shared memory per
    block, over ``cluster`` blocks."""
    head = 0 if cluster == 1 else CLUSTER_HEAD_WORDS + CLUSTER_SCAN_WORDS
    return max(0, limit // 4 - head) * 32 * cluster


def block_smem_queue(n: int, limit: int, most: int = BLOCK_SMEM_QUEUE, cluster: int = 1) -> int:
    """Entries of each queue the block launch keeps in shared memory within ``limit`` bytes:
    at most ``most``, never more than n (a queue never holds more), 0 when only the bitmap
    fits (every entry then goes to global memory). The bitmap itself must fit."""
    room = (limit - block_smem_bytes(n, 0, cluster)) // 8
    return int(max(0, min(most, n, room)))
