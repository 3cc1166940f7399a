"""Command-line tools: ``blest`` (inspect, run, benchmark, demo) and ``blest-tune`` (the tuner).

See :mod:`blest.cli.common` for the error and signal policy shared by both. When a command
line starts (the ``blest`` / ``blest-tune`` scripts, ``python -m blest.cli...``), importing this
package installs a quiet Ctrl-C handler for the start-up (exit 130, no traceback); the
commands and their imports load only when an entry point runs. (Ctrl-C while Python imports
``blest`` itself, before this package, still ends in Python's own traceback.)
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence

__all__ = ["build_parser", "build_tune_parser", "main", "tune_main"]


_PROG = ["blest"]
_AS_PROGRAM = [False]  # set when a command line (not a program importing blest) started us


def _quiet_exit(signum: int, _frame: object) -> None:
    sys.stderr.write(f"{_PROG[0]}: interrupted\n")
    os._exit(128 + signum)


def _starting() -> None:
    """On a command line, until :func:`blest.cli.common.run` takes over, Ctrl-C just ends
    the process (a program that imports this package keeps its own handler)."""
    import threading

    script = os.path.basename(sys.argv[0]) if sys.argv else ""
    if script not in ("blest", "blest-tune", "-m"):
        return
    _PROG[0] = script if script != "-m" else "blest"
    _AS_PROGRAM[0] = True
    if threading.current_thread() is threading.main_thread():
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, _quiet_exit)


_starting()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``blest``."""
    from blest.cli.commands import main as blest_main

    return blest_main(argv)


def tune_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``blest-tune``."""
    from blest.cli.tune import tune_main as run_tune

    return run_tune(argv)


def build_parser() -> object:
    """The ``blest`` argument parser."""
    from blest.cli.commands import build_parser as build

    return build()


def build_tune_parser() -> object:
    """The ``blest-tune`` argument parser."""
    from blest.cli.tune import build_tune_parser as build

    return build()
