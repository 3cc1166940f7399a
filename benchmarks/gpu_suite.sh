#!/usr/bin/env bash
# The GPU test suite in three pytest processes side by side (the two largest files alone, the
# rest together), waited for by PID; prints each part's summary line and exits nonzero if any
# part failed. Run from the repository root on a GPU machine:
#     bash benchmarks/gpu_suite.sh [extra pytest args]
set -u
export PYTHONPATH="${PYTHONPATH:-$PWD}"
log=${GPU_SUITE_LOG:-/tmp/gpu-suite}
mkdir -p "$log"
rest=$(ls tests/test_*.py | grep -v -e test_gpu_engine.py -e test_parents_gpu.py)
start=$(date +%s)
python3 -m pytest -m gpu -q -p no:randomly "$@" tests/test_gpu_engine.py >"$log/a.txt" 2>&1 &
a=$!
python3 -m pytest -m gpu -q -p no:randomly "$@" tests/test_parents_gpu.py >"$log/b.txt" 2>&1 &
b=$!
# shellcheck disable=SC2086
python3 -m pytest -m gpu -q -p no:randomly "$@" $rest >"$log/c.txt" 2>&1 &
c=$!
status=0
for part in a b c; do
    pid=${!part}
    wait "$pid" || status=1
    echo "part $part: $(tail -n 1 "$log/$part.txt")"
done
[ "$status" = 0 ] || grep -h -E "^(FAILED|ERROR)" "$log"/*.txt | head -40
echo "GPU suite: $(( $(date +%s) - start )) s, status $status"
exit "$status"
