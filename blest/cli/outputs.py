"""Where results go: levels to ``.npy`` / ``.txt`` / ``.csv`` or standard output (``-``), and
JSON; output paths are checked before any work starts."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import IO, Any

import numpy as np

from blest.errors import ArgumentError
from blest.tuning.config import json_ready
from blest.tuning.files import atomic_write, check_output_path, write_error

__all__ = ["LEVEL_FORMATS", "check_levels_output", "print_json", "write_levels"]

#: file extension → what is written: int32 .npy; one level per line; ``vertex,level`` rows
LEVEL_FORMATS = {".npy": "npy", ".txt": "txt", ".csv": "csv"}


def check_levels_output(path: str | None) -> str | None:
    """The format of ``--out PATH`` (None without one); :class:`ArgumentError` naming the
    path when it cannot be written or its extension is unknown."""
    if path is None:
        return None
    if path == "-":
        return "txt"
    check_output_path(path)
    suffix = Path(path).suffix.lower()
    if suffix not in LEVEL_FORMATS:
        known = ", ".join(LEVEL_FORMATS)
        raise ArgumentError(
            f"cannot write levels to {path}: unknown extension {suffix or '(none)'} "
            f"(use {known}, or - for standard output)"
        )
    return LEVEL_FORMATS[suffix]


def _text(levels: np.ndarray, vertices: np.ndarray | None) -> bytes:
    if vertices is None:
        return ("\n".join(map(str, levels.tolist())) + "\n").encode()
    rows = (f"{v},{lvl}" for v, lvl in zip(vertices.tolist(), levels.tolist(), strict=True))
    return ("vertex,level\n" + "\n".join(rows) + "\n").encode()


def write_levels(path: str, levels: np.ndarray, labels: np.ndarray | None = None) -> None:
    """Write ``levels`` as ``path``'s extension says (``-``: text on standard output).

    ``labels`` (the user's ids of the graph's vertices, after ``--relabel``) name the vertices
    of a ``.csv``; the other formats hold one level per vertex of the graph, in its order.
    """
    fmt = check_levels_output(path)

    def write(f: IO[bytes]) -> None:
        if fmt == "npy":
            np.save(f, levels)
        else:
            ids = None if fmt == "txt" else (np.arange(levels.size) if labels is None else labels)
            f.write(_text(levels, ids))

    if path == "-":
        try:
            sys.stdout.flush()
            write(sys.stdout.buffer)
            sys.stdout.buffer.flush()
        except OSError as exc:  # a full disk, say: name what could not be written
            raise write_error(exc, "standard output") from None
    else:
        atomic_write(path, write)


def print_json(data: Any) -> None:
    """``data`` as indented JSON on standard output (NumPy values made plain)."""
    print(json.dumps(json_ready(data), indent=2, allow_nan=False))
