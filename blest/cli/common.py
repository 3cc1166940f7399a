"""What the command-line tools share: argument parsing, progress on stderr, the error policy.

Every user error (a :class:`~blest.errors.BlestError`: bad file, bad argument, missing GPU; or an
``OSError``) is one line on stderr and exit status 2. Anything else is a bug in blest: its
traceback is printed and the exit status is 1. Ctrl-C exits with status 130.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Sequence

from blest._version import __version__
from blest.codegen.spec import VariantSpec
from blest.defaults import SIGMAS
from blest.errors import BlestError


class Progress:
    """One self-overwriting status line on stderr, only when stderr is a terminal."""

    def __init__(self, prog: str, enabled: bool = True) -> None:
        self.prog = prog
        self.enabled = enabled and sys.stderr.isatty()
        self._shown = False

    def __call__(self, message: str) -> None:
        if self.enabled:
            width = max(20, _columns() - 1)
            sys.stderr.write(f"\r\x1b[K{self.prog}: {message}"[: width + 4])
            sys.stderr.flush()
            self._shown = True

    def clear(self) -> None:
        if self._shown:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
            self._shown = False


def _columns() -> int:
    try:
        return os.get_terminal_size(sys.stderr.fileno()).columns or 80
    except OSError:
        return 80


def is_config(target: str) -> bool:
    """A tuned config is named ``*.json``; anything else is a graph file."""
    return target.lower().endswith(".json")


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2
        self.exit(2, f"{self.prog}: error: {message}\n")


def common_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    p.add_argument(
        "--debug", action="store_true", help="show the traceback of errors too (default: one line)"
    )


_SPEC_FLAGS = ("sigma", "update", "dirty_sets", "queue", "switching", "launch")


def spec_args(p: argparse.ArgumentParser) -> None:
    d = VariantSpec()
    p.add_argument("--sigma", type=int, choices=SIGMAS, help=f"default {d.sigma}")
    p.add_argument("--update", choices=("eager", "lazy"), help=f"default {d.update}")
    p.add_argument("--dirty-sets", action=argparse.BooleanOptionalAction, default=None)
    p.add_argument("--queue", choices=("vss", "sweep"), help=f"default {d.queue}")
    p.add_argument(
        "--switching", action=argparse.BooleanOptionalAction, default=None, help="default: lazy"
    )
    p.add_argument("--launch", choices=("persistent", "per_level"), help=f"default {d.launch}")


def given_spec_flags(args: argparse.Namespace) -> list[str]:
    return ["--" + k.replace("_", "-") for k in _SPEC_FLAGS if getattr(args, k, None) is not None]


def spec_from(args: argparse.Namespace) -> VariantSpec:
    d = VariantSpec()
    update = args.update or d.update
    switching = args.switching if args.switching is not None else update == "lazy"
    return VariantSpec(
        sigma=args.sigma or d.sigma,
        update=update,
        dirty_sets=d.dirty_sets if args.dirty_sets is None else args.dirty_sets,
        queue=args.queue or d.queue,
        switching=switching,
        launch=args.launch or d.launch,
    )


def read_config(path: str) -> object:
    from blest.tuning.config import TunedConfig

    return TunedConfig.read(path)


def target_spec(args: argparse.Namespace) -> tuple[VariantSpec, object]:
    """The spec of ``args.config`` (a tuned config) or of the spec flags; and the config."""
    if args.config is None:
        return spec_from(args), None
    if not is_config(args.config):
        raise BlestError(f"{args.config} is not a tuned config (*.blest.json from blest-tune)")
    flags = given_spec_flags(args)
    if flags:
        raise BlestError(f"{', '.join(flags)} cannot be combined with a tuned config")
    cfg = read_config(args.config)
    return cfg.spec, cfg


def load(path: str, directed: bool | None) -> object:
    from blest.graph.io import load_graph

    return load_graph(path, directed=directed)


def run(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> int:
    args = parser.parse_args(argv)

    def one_line(message: Warning | str, *_: object, **__: object) -> None:
        print(f"{parser.prog}: warning: {message}", file=sys.stderr)

    with warnings.catch_warnings():
        warnings.showwarning = one_line
        try:
            return int(args.func(args) or 0)
        except (BlestError, OSError) as exc:
            if getattr(args, "debug", False):
                raise
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            print(f"{parser.prog}: error: {first}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print(f"{parser.prog}: interrupted", file=sys.stderr)
            return 130
        except Exception:
            import traceback

            traceback.print_exc()
            print(
                f"{parser.prog}: internal error (a bug in blest {__version__}): please report it "
                "with the command line and the traceback above",
                file=sys.stderr,
            )
            return 1
