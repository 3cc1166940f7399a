"""MPI ranks: the world under a launcher, each rank's index on its own machine (the GPU it
takes), and the abort that ends every rank when one fails.

mpi4py is imported only under a launcher (:data:`MPI_ENV_VARS`); nothing here needs it
otherwise.
"""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = [
    "LOCAL_RANK_ENV_VARS",
    "MPI_ENV_VARS",
    "abort_world",
    "is_mpi4py",
    "local_rank",
    "mpi_world",
]

#: Environment variables that MPI launchers (Open MPI, MPICH / Hydra, PMIx, Intel MPI) set.
MPI_ENV_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS")
#: Environment variables that say a rank's index among the ranks of its machine (Open MPI,
#: MPICH / Hydra and Intel MPI, Slurm's srun), read where the communicator cannot say.
LOCAL_RANK_ENV_VARS = ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID")


def mpi_world() -> tuple[Any, int, int] | None:
    """``(MPI.COMM_WORLD, rank, size)`` when launched by ``mpirun`` and mpi4py imports.

    A launcher is recognized by one of :data:`MPI_ENV_VARS`; outside a launcher, or without
    mpi4py, returns None (and never imports mpi4py outside a launcher).
    """
    if not any(v in os.environ for v in MPI_ENV_VARS):
        return None
    try:
        from mpi4py import MPI
    except ImportError:
        return None
    comm = MPI.COMM_WORLD
    return comm, int(comm.Get_rank()), int(comm.Get_size())


def local_rank(comm: Any, rank: int) -> int:
    """This rank's index among the ranks on its own machine (the GPU it takes is this index
    modulo the machine's GPUs). A collective call: every rank of ``comm`` must make it.

    In order: the communicator's own ``local_rank`` (local workers: every one is on this
    machine); the rank within ``comm.Split_type(COMM_TYPE_SHARED)`` (an MPI communicator: the
    ranks that share this machine's memory, however the launcher placed them); the first of
    :data:`LOCAL_RANK_ENV_VARS` the launcher set; else ``rank`` (one machine).
    """
    own = getattr(comm, "local_rank", None)
    if own is not None:
        return int(own)
    split, kind = getattr(comm, "Split_type", None), _shared_type(comm)
    if split is not None and kind is not None:
        try:
            node = split(kind, key=rank)
        except NotImplementedError:  # an MPI library older than MPI-3
            node = None
        if node is not None:
            try:
                return int(node.Get_rank())
            finally:
                free = getattr(node, "Free", None)
                if free is not None:
                    free()
    for var in LOCAL_RANK_ENV_VARS:
        value = os.environ.get(var, "").strip()
        if value.isdigit():
            return int(value)
    return rank


def is_mpi4py(comm: Any) -> bool:
    """Whether ``comm`` is an mpi4py communicator (else one of blest's own)."""
    return type(comm).__module__.startswith("mpi4py")


def _shared_type(comm: Any) -> Any:
    """``MPI.COMM_TYPE_SHARED`` for an mpi4py communicator, else the comm's own (None: none)."""
    if is_mpi4py(comm):
        from mpi4py import MPI

        return MPI.COMM_TYPE_SHARED
    return getattr(comm, "COMM_TYPE_SHARED", None)


def abort_world(code: int) -> None:
    """End every rank of an MPI job of several ranks with exit status ``code``
    (``MPI_Abort``), after flushing this rank's output; nothing outside MPI (mpi4py not
    imported) or on one rank. A rank that fails must not return normally: the others would
    wait for it in their next reduction, and ``MPI_Finalize`` would wait for them."""
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is None or not code:
        return
    world = mpi.COMM_WORLD
    if int(world.Get_size()) < 2:
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass
    world.Abort(int(code))
