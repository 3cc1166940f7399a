"""Exception classes of blest.

Every error a user can cause derives from :class:`BlestError`; the command-line tools turn
those into one line on stderr and exit status 2. Any other exception is a bug in blest: the
command-line tools print its traceback and exit with status 1.
"""

from __future__ import annotations

__all__ = [
    "BlestError",
    "GraphFormatError",
    "GraphLimitError",
    "GPUUnavailableError",
    "CompileError",
    "ConfigError",
    "CheckpointError",
    "ArgumentError",
    "VertexError",
    "EngineError",
    "DeviceMemoryError",
    "ValidationError",
    "MissingDependencyError",
]


class BlestError(Exception):
    """Base class of every error blest raises on bad input or a missing capability."""


class GraphFormatError(BlestError, ValueError):
    """A graph file or object cannot be read as a graph.

    Attributes
    ----------
    path : str or None
        The file, when the graph came from one.
    line : int or None
        1-based line number of the offending line, when there is one.
    """

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None):
        self.path = None if path is None else str(path)
        self.line = line
        where = ""
        if self.path is not None:
            where = self.path if line is None else f"{self.path}:{line}"
            where += ": "
        elif line is not None:
            where = f"line {line}: "
        super().__init__(where + message)
        self.reason = message


class GraphLimitError(BlestError, ValueError):
    """A graph exceeds what blest can represent (vertex count, arc count)."""


class GPUUnavailableError(BlestError, RuntimeError):
    """A GPU feature was asked for but CuPy, NVRTC, a driver or a suitable GPU is missing."""


class CompileError(BlestError, RuntimeError):
    """NVRTC rejected generated source; carries the compiler log and the offending source line."""

    def __init__(self, message: str, *, log: str = "", source: str = ""):
        self.log = log
        self.source = source
        super().__init__(message)


class ConfigError(BlestError, ValueError):
    """A tuned config or prepared artifact is unreadable, of an unknown version or mismatched."""


class CheckpointError(BlestError, ValueError):
    """A checkpoint directory cannot be used: another run's (graph, sources, blest version),
    not the user's, or damaged."""


class ArgumentError(BlestError, ValueError, TypeError):
    """An argument has the wrong type or value (a ``ValueError`` and a ``TypeError``)."""


class VertexError(ArgumentError, IndexError):
    """A vertex id is out of range for the graph (also an ``IndexError``)."""


class EngineError(BlestError, RuntimeError):
    """An engine cannot serve the call: it is closed, or a kernel failed and left it void."""


class DeviceMemoryError(BlestError, MemoryError):
    """The GPU has too little free memory for what was asked (the message gives both sizes)."""


class ValidationError(BlestError, ValueError):
    """A BFS result failed one of the checks of :func:`blest.validate`.

    Attributes
    ----------
    check : str
        The failed check: ``"format"``, ``"seeds"``, ``"cycles"`` (a), ``"tree levels"`` (b),
        ``"arc span"`` (c), ``"spanning"`` (d) or ``"tree arcs"`` (e).
    """

    def __init__(self, check: str, message: str):
        self.check = check
        super().__init__(f"BFS check '{check}' failed: {message}")


class MissingDependencyError(BlestError, ImportError):
    """An optional dependency is not installed (the message names the extra that brings it)."""
