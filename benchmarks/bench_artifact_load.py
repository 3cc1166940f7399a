"""Time loading a tuned config's prepared artifact, each repetition in a fresh process (as a run
pays it: no memory the process already touched, the artifact in the page cache after the
first read).

    python3 benchmarks/bench_artifact_load.py out/kron-21.blest.json --repeat 5
    python3 benchmarks/bench_artifact_load.py out/kron-21.blest.json --what tuned --device cpu

``--what prepared`` (default) times ``load_prepared(TunedConfig.read(config))``: the file's
checks, its read and SHA-256, the members and the structure checks; ``--what tuned`` times
``blest.load_tuned(config, device=...)``, the engine included. ``--cold`` drops the page
cache before each repetition (needs root: ``/proc/sys/vm/drop_caches``). ``--pause`` waits
between repetitions: on a VM, memory a process has just freed can be faster to fault in
again than memory the host took back. The blest timed is the one Python imports (set
PYTHONPATH to time another checkout; the first line says which). Prints each time, then the
best and the median.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path


def _child(config: str, what: str, device: str) -> None:
    """One timing, in this fresh process: on stdout, where blest came from, then the seconds."""
    import warnings

    import blest
    from blest.tuning.config import TunedConfig
    from blest.tuning.loader import load_prepared, load_tuned

    t = time.perf_counter()
    if what == "prepared":
        load_prepared(TunedConfig.read(config))
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            load_tuned(config, device=device)
    seconds = time.perf_counter() - t
    print(Path(blest.__file__).parent, seconds)


def _drop_caches() -> None:
    subprocess.run(["sync"], check=True)
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("config", help="a .blest.json")
    ap.add_argument("--what", choices=["prepared", "tuned"], default="prepared")
    ap.add_argument("--device", default="cpu", help="for --what tuned (default cpu)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cold", action="store_true", help="drop the page cache before each")
    ap.add_argument("--pause", type=float, default=3.0, help="seconds between repetitions")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(args.config, args.what, args.device)
        return 0
    times = []
    for i in range(args.repeat):
        if i:
            time.sleep(args.pause)
        if args.cold:
            _drop_caches()
        child = [__file__, args.config, "--what", args.what, "--device", args.device, "--child"]
        run = subprocess.run(
            [sys.executable, *child],
            capture_output=True,
            text=True,
            check=True,
        )
        where, seconds = run.stdout.split()[-2:]
        if not times:
            print(f"blest from {where}")
        times.append(float(seconds))
        print(f"{args.what} {times[-1]:.3f} s", flush=True)
    print(f"best {min(times):.3f} s, median {statistics.median(times):.3f} s of {len(times)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
