"""A probe_patches.py patch of an eager persistent variant, checked on the CPU runner
(tests/cuda_cpu.py: one block of 128 threads) against SciPy before it goes to a GPU: the
small zoo at 360, 3,000 and 10,000 vertices, grid and small-queue levels.

    python3 benchmarks/probe_patches_cpu.py owned 32,16,8 resident [seed] [rcm]

Patches joined by "+" apply together; a queue named ``lazy-vss`` (or ``lazy-sweep``) runs the
lazy variant of that queue. ``rcm`` runs the graphs in RCM order, where the eager
kernels claim rows by their levels (claims_by_level).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import test_ss_kernels_cpu as cpu  # noqa: E402
from cuda_cpu import build, small_zoo  # noqa: E402
from probe_patches import PATCHES  # noqa: E402

from blest.codegen.render import render  # noqa: E402
from blest.codegen.spec import VariantSpec  # noqa: E402
from blest.graph.ordering import rcm  # noqa: E402
from blest.graph.prepared import Prepared  # noqa: E402
from blest.reference import bfs_levels  # noqa: E402


def patched_program(spec: VariantSpec, key: str, cache: Path) -> Path:
    """The init and traversal kernels of ``spec`` with patch ``key``, built for the CPU."""
    text = render(spec)
    for old, new in (p for k in key.split("+") for p in PATCHES[k]):
        if old not in text:
            raise SystemExit(f"patch {key!r}: {old[:60]!r}... is not in {spec.name}")
        text = text.replace(old, new)
    params, init, bfs = cpu.kernel_signatures(spec)
    return build(text, [init, bfs], params, [], cache)


# The GPU's control block has a 512-byte segment (blest/runtime/hot_buffers.py); patches may use
# its words past CTL_WORDS (push_shard2), so the CPU runner's gets as many.
cpu.CTL_WORDS = 128


def main() -> None:
    key, sigmas, queue = sys.argv[1], [int(x) for x in sys.argv[2].split(",")], sys.argv[3]
    rng = np.random.default_rng(int(sys.argv[4]) if len(sys.argv) > 4 else 0)
    reorder = len(sys.argv) > 5 and sys.argv[5] == "rcm"
    cache = Path("/tmp/blest-patch-cpu")
    cache.mkdir(exist_ok=True)
    for sigma in sigmas:
        update, _, q = queue.rpartition("-")  # "lazy-vss": a lazy variant
        spec = VariantSpec(sigma=sigma, update=update or "eager", queue=q, switching=False)
        exe = patched_program(spec, key, cache)
        for n in (360, 3000, 10000):
            for name, graph in small_zoo(rng, n).items():
                prep = Prepared.from_graph(graph, sigma, rcm(graph) if reorder else None)
                order = np.asarray(prep.permutation.new_of_old)
                for small in (0, 16):
                    src = int(rng.choice(np.flatnonzero(graph.out_degree > 0)))
                    levels, _ = cpu.traverse(exe, spec, prep, int(order[src]), 0.0, small)
                    if not np.array_equal(levels[order], bfs_levels(graph, src)):
                        raise SystemExit(f"{key} sigma {sigma} {name} n={n} src={src}: differs")
                order_name = " rcm" if reorder else ""
                print(f"ok: {key} sigma {sigma} n={n} {name}{order_name}", flush=True)


if __name__ == "__main__":
    main()
