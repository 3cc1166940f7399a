"""Command-line tools: ``blest`` (inspect, run, benchmark, demo) and ``blest-tune`` (the tuner).

See :mod:`blest.cli.common` for the error policy shared by both.
"""

from blest.cli.commands import build_parser, main
from blest.cli.tune import build_tune_parser, tune_main

__all__ = ["build_parser", "build_tune_parser", "main", "tune_main"]
