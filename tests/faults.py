"""Fault injection for the tests. blest itself only marks the points of a write
(:func:`blest.tuning.storage.failpoint`); what happens there is installed here, in the test's own
process (:func:`hook`) or in a ``blest-tune`` started through this file:

    python tests/faults.py POINT[:ACTION] [blest-tune arguments...]

ACTION is ``kill`` (SIGKILL, the default), ``int`` (SIGINT), ``term`` (SIGTERM), ``raise``
(``RuntimeError``) or ``sleep=<seconds>``; an empty first argument injects nothing. With
``BLEST_TEST_SIGINT_IN_JIT=1`` in the environment, a SIGINT is also sent from inside LLVM's
first object-cache callback of a Numba compile (where an exception would be lost).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable


def hook(spec: str) -> Callable[[str], None]:
    """A ``fault_hook`` acting as ``spec`` (``POINT[:ACTION]``) says."""
    point, _, action = spec.partition(":")
    action = action or "kill"

    def act(name: str) -> None:
        if name != point:
            return
        if action.startswith("sleep="):
            time.sleep(float(action[len("sleep=") :]))
        elif action == "raise":
            raise RuntimeError(f"failpoint {name}")
        elif action == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
            time.sleep(5)
        else:  # the handler runs before raise_signal returns (unless held or ignored)
            signal.raise_signal({"int": signal.SIGINT, "term": signal.SIGTERM}[action])

    return act


def _sigint_inside_jit_callback() -> None:
    from llvmlite.binding.executionengine import ExecutionEngine

    original = ExecutionEngine.set_object_cache
    fired = []

    def set_object_cache(self, notify_func=None, getbuffer_func=None):
        def notify(module, buf):  # called by LLVM, through ctypes, as it emits object code
            if not fired:
                fired.append(True)
                os.kill(os.getpid(), signal.SIGINT)  # its Python handler runs right here
            return notify_func(module, buf)

        return original(self, notify if notify_func else None, getbuffer_func)

    ExecutionEngine.set_object_cache = set_object_cache


def main(argv: list[str]) -> int:
    spec, *args = argv
    sys.argv[0] = "blest-tune"  # start as the installed command does (blest.cli's start-up)
    from blest.tuning import storage as files

    if spec:
        files.fault_hook = hook(spec)
    if os.environ.get("BLEST_TEST_SIGINT_IN_JIT"):
        _sigint_inside_jit_callback()
    from blest.cli import tune_main

    return tune_main(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
