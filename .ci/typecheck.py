"""Type-check blest/ with mypy and fail on errors that the baseline does not list.

The baseline (``.ci/mypy-baseline.txt``) holds the errors known when it was written, one per
line as ``path: message  [code]`` without line numbers, so that editing a file does not move
them. A new error fails the check; a fixed one is reported, so that the baseline shrinks
(``python3 .ci/typecheck.py --write`` rewrites it).
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / ".ci" / "mypy-baseline.txt"
ERROR = re.compile(r"^(?P<path>[^:]+):\d+(?::\d+)?: error: (?P<message>.*)$")


def errors() -> Counter[str]:
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "blest"], cwd=ROOT, capture_output=True, text=True
    )
    if run.returncode not in (0, 1):  # 2: mypy itself failed
        sys.stderr.write(run.stdout + run.stderr)
        raise SystemExit(f"mypy failed (status {run.returncode})")
    found: Counter[str] = Counter()
    for line in run.stdout.splitlines():
        m = ERROR.match(line)
        if m:
            found[f"{m['path']}: {m['message']}"] += 1
    return found


def main() -> int:
    found = errors()
    if "--write" in sys.argv[1:]:
        BASELINE.write_text("".join(f"{e}\n" for e in sorted(found.elements())))
        print(f"typecheck: baseline written, {sum(found.values())} errors")
        return 0
    known = Counter(BASELINE.read_text().splitlines()) if BASELINE.exists() else Counter()
    new, fixed = found - known, known - found
    for e in sorted(new.elements()):
        print(f"new: {e}")
    if fixed:
        print(f"typecheck: {sum(fixed.values())} baseline errors are fixed: --write shrinks it")
    print(f"typecheck: {sum(found.values())} errors, {sum(new.values())} new")
    return 1 if new else 0


if __name__ == "__main__":
    raise SystemExit(main())
