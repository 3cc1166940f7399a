"""Holding stop signals over a step that must not be cut in two.

Within :func:`held_signals`, SIGINT, SIGTERM and SIGHUP are recorded instead of acted on; when
the block ends, the handlers they had before come back and each recorded signal is raised again
for them (so a Ctrl-C becomes a ``KeyboardInterrupt`` just after the block). blest holds them
around a JIT compile, where an exception raised inside a native callback would be printed and
lost, and around a publication and the clean-up that belongs to it. Only signals handled in
Python are held: ignored ones stay ignored (``nohup``, background jobs of a script), and those
at their default action still end the process at once. Outside the main thread the block runs
unchanged: Python runs signal handlers in the main thread only. A process forked within the
block (a worker pool's) does not hold them: there a stop signal takes its default action.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator

__all__ = ["STOP_SIGNALS", "held_signals"]

#: The signals that ask a command to stop.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def held_signals() -> Iterator[list[int]]:
    """Hold the stop signals for the block (see the module docstring).

    Yields the list of the signals received so far; a caller that has dealt with them may
    clear it, and then nothing is raised again at the end.
    """
    held: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield held
        return

    holder = os.getpid()

    def record(signum: int, _frame: object) -> None:
        if os.getpid() != holder:  # a process forked within the block: the signal is its own
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        held.append(signum)

    previous = {}
    try:
        for sig in STOP_SIGNALS:
            old = signal.getsignal(sig)
            if not callable(old):  # ignored, default (dies at once) or not set from Python
                continue
            previous[sig] = signal.signal(sig, record)
        yield held
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
        for signum in dict.fromkeys(held):
            if signum in previous:
                signal.raise_signal(signum)  # its own handler runs now, before this returns
