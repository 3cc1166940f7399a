"""A variant against text patches of its own rendered source, in one process: mean traversal
over the protocol sources and the per-level stage split of one source, for each patch.

    python3 benchmarks/probe_patches.py urand-20,kron-21 s8_lazy_csr_switch_pers base,nofilter

The patches (PATCHES) are experiments on the CUDA-core top-down of expand="csr"; a patch whose
text is not in the source stops the run.
"""

from __future__ import annotations

import argparse
import sys

from run import Bench, _by_name, time_variants

import blest.codegen.render  # noqa: F401  (the module, not the function it exports)

RENDER = sys.modules["blest.codegen.render"]

PATCHES: dict[str, list[tuple[str, str]]] = {
    "base": [],
    "nofilter": [("if (head[k] >= 0 && check_visited) {", "if (head[k] >= 0 && false) {")],
    "no_skip_marked": [("#define SKIP_MARKED 1", "#define SKIP_MARKED 0")],
    "steps8": [("#define ARC_STEPS 4", "#define ARC_STEPS 8")],
    "steps2": [("#define ARC_STEPS 4", "#define ARC_STEPS 2")],
    "span4": [("span = span < 32 ? span : 32;", "span = span < 4 ? span : 4;")],
}


def patched(render, key: str):
    def render_patched(spec):
        text = render(spec)
        for old, new in PATCHES[key]:
            if old not in text:
                raise SystemExit(f"patch {key!r}: {old!r} is not in the source of {spec.name}")
            text = text.replace(old, new)
        return text

    return render_patched


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("graphs")
    ap.add_argument("variants")
    ap.add_argument("patches", nargs="?", default=",".join(PATCHES))
    args = ap.parse_args()
    original = RENDER.render
    specs = [_by_name(n) for n in args.variants.split(",")]
    for name in args.graphs.split(","):
        b = Bench.load(name, 64)
        for key in args.patches.split(","):
            RENDER.render = patched(original, key)
            print(f"-- {key}", flush=True)
            time_variants(b, specs, 10.0, [(1024, 1, 0)])
            with b.engine(specs[0], 10.0, (1024, 1, 0), record_levels=True) as eng:
                eng.bfs(int(b.sources[0]))
                eng.bfs(int(b.sources[0]))
                stages = eng.stage_times_ms() * 1e3
            print("   stages us:", " | ".join(f"{a:.1f}/{c:.1f}" for a, c in stages), flush=True)
        RENDER.render = original


if __name__ == "__main__":
    main()
