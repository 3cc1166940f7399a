"""Numba for blest's CPU kernels: compiled code cached only where it can be trusted.

Numba's ``cache=True`` stores pickled index files and loads them back, so whoever can write the
cache can run code in the next process that loads it. blest's functions are therefore cached in
the ``numba/`` part of blest's own cache directory, checked as :mod:`blest.cachedirs` says
(never in the package's ``__pycache__`` nor in Numba's user-wide cache, whatever
``NUMBA_CACHE_DIR`` says); when it cannot be trusted they are compiled in every process, after
one warning.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import blest.cachedirs as cachedirs

__all__ = ["njit"]

_config_lock = threading.Lock()


@contextlib.contextmanager
def _numba_cache_dir(numba: Any, where: Path) -> Iterator[None]:
    """Numba's cache directory setting, for the decorations within the block (a decorator
    picks its cache's location when it runs)."""
    with _config_lock:
        before = numba.config.CACHE_DIR
        numba.config.CACHE_DIR = str(where)
        try:
            yield
        finally:
            numba.config.CACHE_DIR = before


def _trusted(path: Path) -> bool:
    """Whether the directory a decorated function caches in lies inside blest's checked
    directory and holds only files that can be trusted (created 0700 when missing)."""
    root = cachedirs.private_dir("numba")
    if root is None or root not in path.parents:
        return False
    rel = path.relative_to(root).parts
    if cachedirs.private_dir("numba", *rel) is None:
        return False
    private = cachedirs.sealed(path)
    for entry in os.scandir(path):
        why = cachedirs.untrusted_file(entry.stat(follow_symlinks=False), private)
        if why is not None:
            cachedirs.untrusted_entry(Path(entry.path), why)
            return False
    return True


def njit(**options: Any) -> Callable[[Callable[..., Any]], Any]:
    """``numba.njit(**options)``, with ``cache=True`` only in blest's checked cache."""
    import numba

    def decorate(func: Callable[..., Any]) -> Any:
        where = cachedirs.private_dir("numba")
        if where is not None:
            with _numba_cache_dir(numba, where):
                cached = numba.njit(cache=True, **options)(func)
            try:
                if _trusted(Path(cached.stats.cache_path)):
                    return cached
            except OSError:
                pass
        return numba.njit(cache=False, **options)(func)

    return decorate
