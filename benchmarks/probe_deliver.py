"""What moving n levels to the user's ids costs on the GPU, apart from any traversal: a plain
copy, a scatter through a random permutation (``dst[old_of_new[i]] = levels[i]``, as
deliver.cu.j2 does) and the gather that gives the same result (``dst[u] =
levels[new_of_old[u]]``), each as one CuPy elementwise kernel (a thread an element), timed by
CUDA events, median of the repeats.

    python3 benchmarks/probe_deliver.py --n 1048576 2097152 4194304 8388608
"""

from __future__ import annotations

import argparse


def main() -> None:
    import cupy as cp

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--n", type=int, nargs="+", default=[1 << 20, 1 << 21, 1 << 22, 1 << 23])
    ap.add_argument("--repeats", type=int, default=50)
    args = ap.parse_args()
    copy = cp.ElementwiseKernel("raw int32 src", "raw int32 dst", "dst[i] = src[i]", "d_copy")
    scatter = cp.ElementwiseKernel(
        "raw int32 src, raw int32 to", "raw int32 dst", "dst[to[i]] = src[i]", "d_scatter"
    )
    gather = cp.ElementwiseKernel(
        "raw int32 src, raw int32 frm", "raw int32 dst", "dst[i] = src[frm[i]]", "d_gather"
    )
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    for n in args.n:
        cp.random.seed(5)
        old_of_new = cp.random.permutation(n).astype(cp.int32)
        new_of_old = cp.empty_like(old_of_new)
        new_of_old[old_of_new] = cp.arange(n, dtype=cp.int32)
        levels = cp.random.randint(-1, 20, n, dtype=cp.int32)
        dst = cp.empty(n, dtype=cp.int32)
        want = cp.empty_like(dst)
        want[old_of_new] = levels
        row = []
        for name, kernel, args_ in (
            ("copy", copy, (levels, dst)),
            ("scatter", scatter, (levels, old_of_new, dst)),
            ("gather", gather, (levels, new_of_old, dst)),
        ):
            kernel(*args_, size=n)
            times = []
            for _ in range(args.repeats):
                start.record()
                kernel(*args_, size=n)
                stop.record()
                stop.synchronize()
                times.append(cp.cuda.get_elapsed_time(start, stop) * 1e3)
            if name != "copy":
                assert bool((dst == want).all()), name
            times.sort()
            row.append(f"{name} {times[len(times) // 2]:7.1f} us")
        print(f"n {n:>9}: " + "  ".join(row), flush=True)


if __name__ == "__main__":
    main()
