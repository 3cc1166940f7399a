"""Where results go: levels to ``.npy`` / ``.txt`` / ``.csv`` or standard output (``-``), and
JSON; output paths are checked before any work starts, and an output that is one of the
command's inputs is refused (:func:`check_outputs_apart`)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

import numpy as np

from blest.cli.common import is_config
from blest.errors import ArgumentError
from blest.tuning.config import is_own_artifact, json_ready, named_artifact
from blest.tuning.storage import atomic_write, check_output_path, write_error

__all__ = [
    "LEVEL_FORMATS",
    "check_levels_output",
    "check_outputs_apart",
    "check_tune_outputs",
    "print_json",
    "write_levels",
]

#: file extension → what is written: int32 .npy; one level per line; ``vertex,level`` rows
LEVEL_FORMATS = {".npy": "npy", ".txt": "txt", ".csv": "csv"}


def check_levels_output(path: str | None) -> str | None:
    """The format of ``--out PATH``, levels or scores (None without one);
    :class:`ArgumentError` naming the path when it cannot be written or its extension is
    unknown."""
    if path is None:
        return None
    if path == "-":
        return "txt"
    check_output_path(path)
    suffix = Path(path).suffix.lower()
    if suffix not in LEVEL_FORMATS:
        known = ", ".join(LEVEL_FORMATS)
        raise ArgumentError(
            f"cannot write {path}: unknown extension {suffix or '(none)'} "
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


def _same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Whether two paths name one file: equal once resolved (symbolic links, ``..``, relative
    paths), or the same file on disk (hard links, bind mounts)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return False


def _inputs(target: str | None, sources: str | None) -> list[tuple[str, str]]:
    """(what, path) of every file a command reads: the graph, or the config and its artifact;
    and the sources file."""
    found = []
    if target is not None and target != "-":
        if is_config(target):
            found.append(("the tuned config", target))
            artifact = named_artifact(target)
            if artifact is not None:
                found.append(("the config's prepared artifact", str(artifact)))
        else:
            found.append(("the input graph", target))
    if sources is not None and sources != "-":
        found.append(("the sources file", sources))
    return found


def check_outputs_apart(
    outputs: Mapping[str, str | None], *, target: str | None = None, sources: str | None = None
) -> None:
    """Refuse (:class:`ArgumentError`), before any work, an output that is one of the inputs.

    ``outputs`` maps each output flag to its path (None or ``-``: none); ``target`` is the graph
    file or tuned config the command reads (a config brings its artifact), ``sources`` the
    file of ``--sources``. Writing a result over its own input would destroy the input.
    """
    inputs = _inputs(target, sources)
    for flag, out in outputs.items():
        if out is None or out == "-":
            continue
        for what, path in inputs:
            if _same_file(out, path):
                raise ArgumentError(
                    f"{flag} {out} is {what} ({path}): writing there would destroy it; "
                    "choose another output path"
                )


def check_tune_outputs(config: str | os.PathLike[str], graph: str) -> None:
    """Refuse a tuned config written over the graph it is tuned from, or a graph named as that
    config's artifacts are (a re-tune replaces and removes those)."""
    check_outputs_apart({"-o": str(config)}, target=graph)
    if graph != "-" and (
        is_own_artifact(config, graph) or is_own_artifact(config, os.path.realpath(graph))
    ):
        raise ArgumentError(
            f"the graph {graph} is named as the prepared artifacts of {config} are, which a "
            "tune replaces and removes: rename the graph or choose another -o"
        )
