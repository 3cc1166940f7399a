"""Reading a tuned config's text safely: only a regular file of at most
:data:`MAX_CONFIG_BYTES` bytes (a FIFO or a device would block or never end), a check of how
deeply its JSON nests (:data:`MAX_DEPTH`), done without recursion, and typed access to its
fields (:class:`Fields`), whose every error names ``section.key``."""

from __future__ import annotations

import builtins
import math
import os
import stat
from pathlib import Path
from typing import Any

from blest.errors import ConfigError

__all__ = ["MAX_CONFIG_BYTES", "MAX_DEPTH", "Fields", "config_text", "json_depth"]

#: The largest config file read (a config with every timing table is well under 1 MiB).
MAX_CONFIG_BYTES = 64 << 20
#: The deepest nesting of JSON arrays and objects read (a config nests a few levels).
MAX_DEPTH = 32


def config_text(p: Path) -> str:
    """The text of the config file ``p``: a regular file of at most MAX_CONFIG_BYTES."""
    try:
        info = os.stat(p)
    except FileNotFoundError:
        raise ConfigError(f"no such tuned config: {p}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read tuned config {p}: {exc.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise ConfigError(
            f"tuned config {p} is not a regular file (a directory, device or pipe): not read"
        )
    if info.st_size > MAX_CONFIG_BYTES:
        raise ConfigError(
            f"tuned config {p} has {info.st_size:,} bytes, more than a config can have "
            f"({MAX_CONFIG_BYTES:,}): not a tuned config"
        )
    try:
        with open(p, "rb") as f:
            raw = f.read(MAX_CONFIG_BYTES + 1)
        return raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read tuned config {p}: {exc}") from None


def json_depth(data: Any) -> int:
    """How deeply ``data``'s lists and dicts nest (iteratively: no recursion)."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            deepest = max(deepest, level)
            if level <= MAX_DEPTH:
                stack.extend((v, level + 1) for v in item)
    return deepest


class Fields:
    """Typed access to one JSON object; every error names ``section.key``."""

    def __init__(self, data: Any, section: str) -> None:
        if not isinstance(data, dict):
            raise ConfigError(f"{section} must be an object, got {type(data).__name__}")
        self.data, self.section = data, section

    def _bad(self, key: str, want: str) -> ConfigError:
        value = self.data.get(key, "<missing>")
        return ConfigError(f"{self.section}.{key} must be {want}, got {value!r}")

    def int(self, key: str, *, minimum: int = 0, optional: bool = False) -> Any:
        v = self.data.get(key)
        if v is None and optional:
            return None
        if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
            raise self._bad(key, f"an integer >= {minimum}")
        return v

    def float(self, key: str, *, optional: bool = False) -> Any:
        v = self.data.get(key)
        if v is None and optional:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise self._bad(key, "a finite number")
        return float(v)

    def str(self, key: str, *, optional: bool = False) -> Any:
        v = self.data.get(key)
        if v is None and optional:
            return None
        if not isinstance(v, str):
            raise self._bad(key, "a string")
        return v

    def bool(self, key: builtins.str) -> builtins.bool:
        v = self.data.get(key)
        if not isinstance(v, bool):
            raise self._bad(key, "true or false")
        return v

    def dict(self, key: builtins.str) -> builtins.dict[builtins.str, Any]:
        v = self.data.get(key) or {}
        if not isinstance(v, dict):
            raise self._bad(key, "an object")
        return dict(v)
