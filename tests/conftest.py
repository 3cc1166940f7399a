"""Shared pytest setup: tests/ on sys.path (for ``random_graphs``), a seeded ``rng``, and the
split between the default run and the full suite (``pytest --full``).

The default run leaves out the tests marked ``full`` (or ``slow``), and those of
:data:`FULL_FILES` and :data:`FULL_TESTS`: CUDA kernels compiled with g++ and run on the CPU
(one OS thread per CUDA thread: minutes of every core), which keeps one sample of them
(:data:`SAMPLES`), and NVRTC compiles of every candidate of a tune. They run with ``--full``,
with ``-m full``, or when their file is named on the command line.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)


#: Files whose every test runs kernels on the CPU through tests/cuda_cpu.py.
FULL_FILES = {
    "test_dense_cpu.py",
    "test_deliver_cpu.py",
    "test_hops.py",
    "test_ms_kernels_cpu.py",
    "test_ss_block_cpu.py",
    "test_ss_kernels_cpu.py",
}
#: Single tests of other files that take ten seconds or more on two cores.
FULL_TESTS = {"test_cli.py::test_compile_check_compiles_the_candidates"}
#: Tests of FULL_FILES the default run keeps: a one-block kernel run on the CPU.
SAMPLES = {"test_ss_block_cpu.py::test_levels_and_control_block_match_scipy[block-64]"}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--full",
        action="store_true",
        help="run the full suite: also the tests marked full (CUDA kernels run on the CPU "
        "with g++, compiles of every tuning candidate)",
    )


def _is_full(item: pytest.Item) -> bool:
    name = Path(str(item.fspath)).name
    key = f"{name}::{item.name}"
    if key in SAMPLES:
        return False
    marked = item.get_closest_marker("full") or item.get_closest_marker("slow")
    return bool(marked) or name in FULL_FILES or key in FULL_TESTS


def _named_files(config: pytest.Config) -> set[str]:
    """Test files named on the command line (a file or a test of it, not a directory)."""
    names = set()
    for arg in config.args:
        path = Path(arg.split("::")[0])
        if path.suffix == ".py":
            names.add(path.name)
    return names


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _is_full(item):
            item.add_marker(pytest.mark.full)
    if config.getoption("--full") or "full" in (config.getoption("markexpr") or ""):
        return
    named = _named_files(config)
    keep, left = [], []
    for item in items:
        out = item.get_closest_marker("full") and Path(str(item.fspath)).name not in named
        (left if out else keep).append(item)
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = keep
        config._blest_left_out = len(left)  # type: ignore[attr-defined]


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    left = getattr(config, "_blest_left_out", 0)
    if left:
        terminalreporter.write_line(
            f"{left} tests of the full suite left out (CUDA kernels on the CPU, compiles of "
            "every candidate): run them with `python3 -m pytest --full`"
        )


@pytest.fixture
def rng() -> np.random.Generator:
    """A fresh generator; its seed is printed (shown on failure). Reproduce a failure with
    ``BLEST_TEST_SEED=<seed> pytest ...``."""
    env = os.environ.get("BLEST_TEST_SEED")
    seed = int(env) if env else int(np.random.SeedSequence().entropy)
    print(f"rng seed: {seed}  (rerun with BLEST_TEST_SEED={seed})")
    return np.random.default_rng(seed)
