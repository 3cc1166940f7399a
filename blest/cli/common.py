"""What the command-line tools share: argument parsing, progress on stderr, the error policy.

Every user error (a :class:`~blest.errors.BlestError`: bad file, bad argument, missing GPU; or an
``OSError``) is one line on stderr and exit status 2. Anything else is a bug in blest: its
traceback is printed and the exit status is 1. Signals end a command after removing the
temporary files of a write in progress and stopping compiler processes, with one line and no
traceback: Ctrl-C (SIGINT) "interrupted", status 130 (or, when CPython insists, death by
SIGINT, which a shell also reports as 130); SIGTERM / SIGHUP "terminated", status 143 / 129.
A signal that comes once the command's result is published changes nothing (status 0), and
signals ignored when the command started stay ignored. A standard output closed early (``blest
variants | head -3``) ends the command quietly with status 141 (128 + SIGPIPE, what a shell
reports for a program killed by SIGPIPE).

Whatever the tools print that may hold a string from a user or a file (paths, notes, messages)
goes through :func:`printable`, so that control characters in a file name cannot move the
cursor, rewrite the screen or fake a line.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import signal
import sys
import threading
import time
import unicodedata
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import IO, TYPE_CHECKING, NoReturn

from blest._version import __version__
from blest.codegen.spec import VariantSpec
from blest.defaults import SIGMAS
from blest.errors import BlestError, CompileError
from blest.tuning.storage import Terminated, raise_if_stopped, stops_recorded, write_error

if TYPE_CHECKING:
    from blest.tuning.config import TunedConfig

EXIT_USER_ERROR = 2
EXIT_BROKEN_PIPE = 128 + 13


#: Not control characters, yet able to reorder or split what a terminal shows.
_INVISIBLE = frozenset("\u061c\u200e\u200f\u2028\u2029\u202a\u202b\u202c\u202d\u202e"
                       "\u2066\u2067\u2068\u2069")  # fmt: skip


def _escape(ch: str) -> str:
    if ch in "\n\r\t":
        return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}[ch]
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # a byte of a file name that is not UTF-8
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: object) -> str:
    """``text`` safe to print on one line: control characters (C0, DEL, C1), bidirectional
    and line-separator marks and the undecodable bytes of a file name (lone surrogates) are
    written as escapes (``\\x1b``, ``\\n``, ``\\u202e``, ``\\xff``); all else is kept."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(
        _escape(ch) if unicodedata.category(ch) in ("Cc", "Cs") or ch in _INVISIBLE else ch
        for ch in text
    )


def say(*lines: object, file: IO[str] | None = None) -> None:
    """Print each of ``lines`` (:func:`printable`) on a line of its own, to stdout by default."""
    for line in lines:
        print(printable(line), file=sys.stdout if file is None else file)


class Progress:
    """One self-overwriting status line on stderr, only when stderr is a terminal.

    With a ``budget`` (seconds), messages of the timed search (those starting with "timing")
    also show how much of it is left, counted from the first of them.
    """

    def __init__(self, prog: str, enabled: bool = True, budget: float | None = None) -> None:
        self.prog = prog
        self.enabled = enabled and sys.stderr.isatty()
        self.budget = budget
        self._search_start: float | None = None
        self._shown = False

    def __call__(self, message: str) -> None:
        if not self.enabled:
            return
        if self.budget is not None and message.startswith("timing"):
            if self._search_start is None:
                self._search_start = time.monotonic()
            left = max(0.0, self.budget - (time.monotonic() - self._search_start))
            message = f"{left:4.0f} s left | {message}"
        width = max(20, _columns() - 1)
        sys.stderr.write(f"\r\x1b[K{self.prog}: {printable(message)}"[: width + 4])
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
    def error(self, message: str) -> NoReturn:  # one line, exit 2
        self.exit(EXIT_USER_ERROR, f"{self.prog}: error: {message}\n")


def common_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    p.add_argument(
        "--debug", action="store_true", help="show the traceback of errors too (default: one line)"
    )


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {value}")
    return value


def seconds(text: str) -> float:
    """argparse type: a finite number of seconds > 0 (refuses nan and inf)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a finite number of seconds > 0, got {text}")
    return value


def switching_constant(name: str) -> Callable[[str], float]:
    """argparse type of ``--<name>`` (beta, alpha): a number >= 0, 0 for off, inf allowed
    (refuses nan), checked before any work."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a number, got {text!r}") from None
        if not value >= 0:  # also refuses NaN
            raise argparse.ArgumentTypeError(
                f"{name} must be >= 0 (0: off, inf allowed), got {text}"
            )
        return value

    return parse


_SPEC_FLAGS = (
    "sigma",
    "update",
    "dirty_sets",
    "queue",
    "switching",
    "launch",
    "cluster",
    "expand",
    "registers",
)


def spec_args(p: argparse.ArgumentParser) -> None:
    d = VariantSpec()
    p.add_argument("--sigma", type=int, choices=SIGMAS, help=f"default {d.sigma}")
    p.add_argument("--update", choices=("eager", "lazy"), help=f"default {d.update}")
    p.add_argument(
        "--dirty-sets",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=f"default {'on' if d.dirty_sets else 'off'}",
    )
    p.add_argument("--queue", choices=("vss", "sweep", "resident"), help=f"default {d.queue}")
    p.add_argument(
        "--switching",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="default: on for lazy updates",
    )
    p.add_argument(
        "--launch",
        choices=("persistent", "per_level", "block"),
        help=f"default {d.launch}; block: the whole BFS in one thread block (eager, no switching)",
    )
    p.add_argument(
        "--cluster",
        type=int,
        choices=(1, 2, 4, 8, 16),
        help="with --launch block: run it on a thread-block cluster of this many blocks (sm_90); "
        "default 1",
    )
    p.add_argument(
        "--expand",
        choices=("mma", "csr"),
        help="top-down levels on tensor cores over the BVSS (mma) or on CUDA cores over the "
        "out-CSR (csr: lazy, sweep, persistent); default mma",
    )
    p.add_argument(
        "--registers",
        type=int,
        choices=(64, 128),
        help="registers a thread of the persistent kernel may use; 128 (eager only) runs "
        "blocks of at most 512 threads; default 64",
    )


def given_spec_flags(args: argparse.Namespace) -> list[str]:
    return ["--" + k.replace("_", "-") for k in _SPEC_FLAGS if getattr(args, k, None) is not None]


def spec_from(args: argparse.Namespace) -> VariantSpec:
    d = VariantSpec()
    block = args.launch == "block"  # it takes only eager updates without switching
    csr = getattr(args, "expand", None) == "csr"  # it takes only the sweep
    update = args.update or ("eager" if block else d.update)
    switching = args.switching if args.switching is not None else update == "lazy"
    return VariantSpec(
        sigma=args.sigma or d.sigma,
        update=update,
        dirty_sets=d.dirty_sets if args.dirty_sets is None else args.dirty_sets,
        queue=args.queue or ("sweep" if csr else d.queue),
        switching=switching,
        launch=args.launch or d.launch,
        cluster=args.cluster or 1,
        expand="csr" if csr else "mma",
        registers=getattr(args, "registers", None) or d.registers,
    )


def read_config(path: str) -> TunedConfig:
    from blest.tuning.config import TunedConfig

    return TunedConfig.read(path)


def target_spec(args: argparse.Namespace) -> tuple[VariantSpec, TunedConfig | None]:
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


# ---------------------------------------------------------------------- the policy
def one_line(exc: BaseException) -> str:
    """An error's message on one line, printable: OSErrors without their ``[Errno n]`` prefix
    (a full disk said as such, with the path), a compile error's first line only (its log
    follows), control characters of any other message (a file name's, say) escaped."""
    if isinstance(exc, OSError) and exc.strerror:
        text = exc.strerror
        if exc.errno in (errno.ENOSPC, errno.EDQUOT) and "disk" not in text:
            text = str(write_error(exc, exc.filename or "a file").strerror)
        elif exc.filename:
            text = f"{text}: {exc.filename}"
    else:
        text = str(exc).strip()
        if isinstance(exc, CompileError):
            text = text.splitlines()[0] if text else ""
    return printable(text) if text else type(exc).__name__


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that Python's final flush does not complain again."""
    with contextlib.suppress(Exception):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def _stopped(status: int) -> int:
    """The exit status after Ctrl-C, SIGTERM or SIGHUP. In a command-line process that still
    has threads the interpreter would wait for at exit (a worker pool's helper threads, say),
    the process ends here instead: the work is abandoned and its temporary files are already
    gone, so waiting for those threads would only delay the exit the user asked for."""
    cli = sys.modules.get("blest.cli")  # (it set _AS_PROGRAM when it was imported)
    as_program = cli is not None and cli._AS_PROGRAM[0]
    me = threading.current_thread()
    waited_for = [t for t in threading.enumerate() if t is not me and not t.daemon]
    if as_program and waited_for:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(status)
    return status


def _run_command(func: Callable[[argparse.Namespace], int | None], args: argparse.Namespace) -> int:
    status = int(func(args) or 0)
    sys.stdout.flush()  # a closed pipe shows here, not at exit
    return status


class _NamedStream:
    """A text stream whose write errors name it (a full disk under ``> file``, say)."""

    def __init__(self, stream: IO[str], name: str) -> None:
        self._stream, self._name = stream, name

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as exc:
            raise self._named(exc) from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            raise self._named(exc) from None

    def _named(self, exc: OSError) -> OSError:
        if exc.filename is None:
            exc.filename = self._name
        return exc

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


@contextlib.contextmanager
def _named_stdout() -> Iterator[None]:
    stream = sys.stdout
    if stream is not None:
        sys.stdout = _NamedStream(stream, "standard output")  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.stdout = stream


def run(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> int:
    """Parse ``argv`` and run the chosen command under the error and signal policy. Under
    ``mpirun`` a rank that fails ends every rank with its exit status (MPI_Abort) once it has
    said why: the others would wait for it."""
    from blest.runtime.mpi import abort_world

    status = _run_policy(parser, argv)
    abort_world(status)  # nothing unless the command failed under MPI
    return status


def _run_policy(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> int:
    prog = parser.prog

    def warn(message: Warning | str, *_: object, **__: object) -> None:
        print(f"{prog}: warning: {printable(message)}", file=sys.stderr)

    args = None
    with stops_recorded(), warnings.catch_warnings(), _named_stdout():
        warnings.showwarning = warn
        try:
            args = parser.parse_args(argv)
            status = _run_command(args.func, args)
            raise_if_stopped()  # a stop whose exception was lost on the way (files.stops_recorded)
            return status
        except BrokenPipeError:
            _silence_stdout()
            return EXIT_BROKEN_PIPE
        except (BlestError, OSError) as exc:
            if getattr(args, "debug", False):
                raise
            if isinstance(exc, OSError) and exc.filename == "standard output":
                _silence_stdout()  # or the interpreter's last flush fails again
            print(f"{prog}: error: {one_line(exc)}", file=sys.stderr)
            return EXIT_USER_ERROR
        except Terminated as exc:
            print(f"{prog}: terminated", file=sys.stderr)
            return _stopped(128 + exc.signum)
        except KeyboardInterrupt:
            print(f"{prog}: interrupted", file=sys.stderr)
            return _stopped(128 + signal.SIGINT)
        except Exception:
            import traceback

            traceback.print_exc()
            print(
                f"{prog}: internal error (a bug in blest {__version__}): please report it "
                "with the command line and the traceback above",
                file=sys.stderr,
            )
            return 1
