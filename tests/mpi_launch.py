"""The MPI launcher the tests that start ``mpirun -n 2`` use, where there is one."""

from __future__ import annotations

import shutil

import pytest


def mpi_launcher() -> str | None:
    """``mpiexec`` or ``mpirun`` on the PATH, when mpi4py is importable too; else None."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return None
    return shutil.which("mpiexec") or shutil.which("mpirun")


#: Marks a test that runs ranks under the launcher.
needs_mpi = pytest.mark.skipif(mpi_launcher() is None, reason="needs mpi4py and mpiexec / mpirun")
