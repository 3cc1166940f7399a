"""The MPI launcher the tests that start ``mpirun -n 2`` use, where there is one."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def mpi_launcher() -> str | None:
    """``mpiexec`` or ``mpirun`` on the PATH, when mpi4py is importable too; else None."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return None
    return shutil.which("mpiexec") or shutil.which("mpirun")


#: Marks a test that runs ranks under the launcher.
needs_mpi = pytest.mark.skipif(mpi_launcher() is None, reason="needs mpi4py and mpiexec / mpirun")


def mpi_run(script: Path, *args: object, ranks: int = 2, timeout: float = 300) -> None:
    """Run ``python script args...`` on ``ranks`` ranks under the launcher (this checkout on
    the path, root allowed), and fail with its output unless every rank succeeds."""
    launcher = mpi_launcher()
    assert launcher is not None
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = [launcher, "-n", str(ranks), sys.executable, str(script), *map(str, args)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
