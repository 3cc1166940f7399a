"""Settings read from the environment (they reach spawned worker processes too)."""

from __future__ import annotations

import os

from blest.errors import ArgumentError

__all__ = ["env_count"]


def env_count(name: str) -> int | None:
    """The whole number >= 1 in ``$name``, or None where it is unset or blank.

    Raises
    ------
    ArgumentError
        ``$name`` holds anything else.
    """
    text = os.environ.get(name, "").strip()
    if not text:
        return None
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise ArgumentError(f"{name} must be a whole number >= 1, got {text!r}")
    return count
