"""CUDA C++ → cubin / PTX through NVRTC (CuPy's binding), with the on-disk cache.

Compilation works without a GPU or a driver (only NVRTC and the CUDA headers are needed, see
:mod:`blest.codegen.toolchain`). Loading and launching the result is the runtime's business
(:mod:`blest.runtime.device_program`).

Options: always ``-std=c++17 -arch=<sm_XX | compute_XX> -I<CCCL> -I<CUDA include>``, then
``-lineinfo`` when asked, then the caller's options (later options win). No fast-math, no
``-default-device``: generated kernels say ``__device__`` / ``__global__`` explicitly.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import re
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Literal

from blest.codegen import cache as _cache
from blest.codegen import toolchain
from blest.defaults import DEFAULT_ARCH
from blest.errors import ArgumentError, CompileError
from blest.signals import held_signals

__all__ = [
    "arch_number",
    "DEFAULT_OPTIONS",
    "compile_source",
    "compile_ptx",
    "compile_cubin",
    "compile_many",
    "nvrtc_options",
    "normalize_arch",
]

Target = Literal["cubin", "ptx"]
DEFAULT_OPTIONS: tuple[str, ...] = ("-std=c++17",)
_log = logging.getLogger("blest.codegen")


# --------------------------------------------------------------------------- options
def normalize_arch(arch: str | int, target: Target = "cubin") -> str:
    """``"sm_90"``, ``"90"``, ``90``, ``"compute_90"``, ``"sm_90a"`` → NVRTC's ``-arch`` value.

    cubin targets get ``sm_XX``, PTX targets ``compute_XX`` (suffixes ``a``/``f`` are kept).
    """
    if target not in ("cubin", "ptx"):
        raise ArgumentError(f"target must be 'cubin' or 'ptx', got {target!r}")
    m = re.fullmatch(r"(?:sm_|compute_)?(\d{2,3})([af]?)", str(arch).strip())
    if not m:
        raise ArgumentError(f"arch must look like 'sm_90' or 'compute_90', got {arch!r}")
    return f"{'sm' if target == 'cubin' else 'compute'}_{m.group(1)}{m.group(2)}"


def arch_number(arch: str | int) -> int:
    """The compute capability of an arch in any form :func:`normalize_arch` takes (90 for
    ``"sm_90a"``)."""
    return int(re.sub(r"\D", "", normalize_arch(arch)))


def nvrtc_options(
    arch: str | int = DEFAULT_ARCH,
    target: Target = "cubin",
    options: Sequence[str] = (),
    *,
    lineinfo: bool = False,
) -> tuple[str, ...]:
    """The full NVRTC option list :func:`compile_source` uses (includes ``-I`` dirs)."""
    includes = tuple(f"-I{d}" for d in toolchain.include_dirs())
    extra = ("-lineinfo",) if lineinfo else ()
    return (
        *DEFAULT_OPTIONS,
        f"-arch={normalize_arch(arch, target)}",
        *includes,
        *extra,
        *map(str, options),
    )


def _check_arch(arch_flag: str, source: str) -> None:
    cc = int(re.sub(r"\D", "", arch_flag))
    supported = toolchain.supported_archs()
    if supported and cc not in supported:
        major, minor = toolchain.nvrtc_version()
        raise CompileError(
            f"NVRTC {major}.{minor} cannot target {arch_flag} "
            f"(it supports {', '.join(f'sm_{a}' for a in supported)})",
            source=source,
        )


# --------------------------------------------------------------------------- NVRTC errors
_DIAG = re.compile(r"^(?P<file>.+?)\((?P<line>\d+)\): (?P<sev>(?:catastrophic )?error)\b.*?: ")


def _error_message(source: str, log: str, name: str, arch_flag: str) -> str:
    """One line naming the first error, then the offending source line quoted with its number."""
    lines = log.splitlines()
    head = f"NVRTC could not compile {name} for {arch_flag}: "
    count = re.search(r"^(\d+ (?:catastrophic )?errors?) detected", log, re.M)
    tail = f"\n({count.group(1)}; NVRTC's full log is in .log)" if count else ""
    for text in lines:
        m = _DIAG.match(text)
        if not m:
            continue
        msg = head + text.strip()
        if "could not open source file" in text and not toolchain.include_dirs():
            msg += f"\n{toolchain.headers_hint()}"
        if m.group("file") == name:
            lineno = int(m.group("line"))
            src = source.splitlines()
            if 1 <= lineno <= len(src):
                msg += f"\n{lineno:6d} | {src[lineno - 1].rstrip()}"
        else:
            msg += f"\n(in a header, {m.group('file')})"
        return msg + tail
    # nvrtc option errors ("nvrtc: error: ...") and ptxas errors on inline PTX
    first = next((t for t in lines if "error" in t.lower()), lines[0] if lines else "(empty log)")
    msg = head + re.sub(r"\s+", " ", first.strip())
    if first.startswith("ptxas"):
        tokens = [t.lstrip(".") for t in re.findall(r"'([^']+)'", first)]
        for lineno, text in enumerate(source.splitlines(), 1):
            if '"' in text and any(t and t in text for t in tokens):
                msg += f"\nprobably the inline PTX at\n{lineno:6d} | {text.rstrip()}"
                break
    return msg + tail


# --------------------------------------------------------------------------- compile
def _nvrtc_compile(source: str, options: Sequence[str], target: Target, name: str) -> bytes:
    nv = toolchain.nvrtc()
    prog = nv.createProgram(source, name, (), ())
    try:
        try:
            nv.compileProgram(prog, list(options))
        except nv.NVRTCError:
            try:
                log = nv.getProgramLog(prog)
            except Exception:
                log = ""
            arch_flag = next((o[6:] for o in options if o.startswith("-arch=")), "?")
            raise CompileError(
                _error_message(source, log, name, arch_flag), log=log, source=source
            ) from None
        if _log.isEnabledFor(logging.DEBUG):
            log = nv.getProgramLog(prog)
            if log.strip():
                _log.debug("NVRTC log for %s:\n%s", name, log)
        return bytes(nv.getPTX(prog) if target == "ptx" else nv.getCUBIN(prog))
    finally:
        nv.destroyProgram(prog)


def _key(source: str, opts: Sequence[str], target: Target, name: str) -> str:
    arch_flag = next(o[6:] for o in opts if o.startswith("-arch="))
    return _cache.cache_key(
        source, opts, arch_flag, target, toolchain.toolchain_fingerprint(), name
    )


def compile_source(
    source: str,
    *,
    arch: str | int = DEFAULT_ARCH,
    target: Target = "cubin",
    options: Sequence[str] = (),
    name: str = "blest.cu",
    lineinfo: bool = False,
    cache: bool = True,
) -> bytes:
    """Compile CUDA C++ to a cubin (``target="cubin"``) or PTX text (``"ptx"``), as bytes.

    Raises :class:`~blest.errors.CompileError` (message: NVRTC's first error and the quoted
    source line; ``.log`` / ``.source`` attached) and
    :class:`~blest.errors.GPUUnavailableError` when NVRTC itself is missing.
    """
    opts = nvrtc_options(arch, target, options, lineinfo=lineinfo)
    _check_arch(normalize_arch(arch, target), source)
    key = _key(source, opts, target, name) if cache else None
    if key is not None:
        hit = _cache.load(key, target)
        if hit is not None:
            return hit
    binary = _nvrtc_compile(source, opts, target, name)
    if key is not None:
        _cache.store(key, target, binary)
    return binary


def _resolve(item: Any) -> tuple[str, str, str]:
    """(source, file name, label) of a source string, a VariantSpec, an MSSpec or a DenseSpec
    (rendered)."""
    if isinstance(item, str):
        return item, "blest.cu", "source"
    # lazily: rendering pulls in jinja2 and the templates
    from blest.codegen.family import emit

    label = str(getattr(item, "name", type(item).__name__))
    source = emit(item).source
    return source, f"blest_{label}.cu", label


def compile_ptx(spec_or_source: Any, arch: str | int = DEFAULT_ARCH, **kwargs: Any) -> bytes:
    """PTX (bytes of text) of a VariantSpec (rendered) or a CUDA source string."""
    source, name, _ = _resolve(spec_or_source)
    return compile_source(source, arch=arch, target="ptx", name=name, **kwargs)


def compile_cubin(spec_or_source: Any, arch: str | int = DEFAULT_ARCH, **kwargs: Any) -> bytes:
    """cubin of a VariantSpec (rendered) or a CUDA source string."""
    source, name, _ = _resolve(spec_or_source)
    return compile_source(source, arch=arch, target="cubin", name=name, **kwargs)


def _mp_context() -> multiprocessing.context.BaseContext:
    """fork on Linux when no other Python thread runs, else forkserver (spawn where missing).

    fork starts a worker in ~0.1 s against ~1-1.5 s for forkserver / spawn (each re-imports
    blest, NumPy, SciPy, CuPy and libnvrtc): that decides whether parallelism pays for a few
    modules. A forked worker only calls NVRTC, never the CUDA driver, and exits with os._exit,
    so a CUDA context held by the parent is not touched; with other Python threads alive (one
    might hold NVRTC's lock) we do not fork.
    """
    methods = multiprocessing.get_all_start_methods()
    if sys.platform == "linux" and "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """End a compile pool at once: kill the workers (a running NVRTC call cannot be cancelled),
    and let nothing wait for the call queue's feeder thread, which may be blocked writing
    sources into a pipe that no worker reads any more (the pool's manager thread and, at exit,
    ``multiprocessing`` would join it). The manager thread closes the pipe's read end when it
    sees the workers gone; only if it has not ended half a second later is the read end closed
    here (closing it from both threads at once races on the descriptor)."""
    workers = list((getattr(pool, "_processes", None) or {}).values())
    for proc in workers:
        proc.kill()
    for proc in workers:
        proc.join(timeout=1.0)
    call_queue = getattr(pool, "_call_queue", None)
    if call_queue is not None:
        call_queue.cancel_join_thread()
    pool.shutdown(wait=False, cancel_futures=True)
    manager = getattr(pool, "_executor_manager_thread", None)
    if manager is not None and call_queue is not None:
        manager.join(timeout=0.5)  # it sees the dead workers and closes the queue's read end
        if manager.is_alive():  # stuck behind the blocked feeder: free the pipe ourselves
            with contextlib.suppress(OSError):
                call_queue._reader.close()


def compile_many(
    items: Iterable[Any],
    *,
    arch: str | int = DEFAULT_ARCH,
    target: Target = "cubin",
    options: Sequence[str] = (),
    max_workers: int | None = None,
    lineinfo: bool = False,
    cache: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> list[bytes]:
    """Compile sources and/or specs; results in input order.

    Cache hits are served first; the misses (deduplicated) compile in a process pool of
    ``max_workers`` (default: one per CPU, at most one per miss; ``max_workers=1`` or a single
    miss compiles in-process). Processes, not threads: NVRTC serializes compilations inside one
    process (NVRTC 13.0, 2 cores, 4 modules of ~0.9 s: 3.50 s serial, 3.54 s with 2 threads at
    CPU time = wall time, 2.1-2.2 s with 2 processes). Workers fork (see :func:`_mp_context`);
    with other Python threads alive they come from forkserver / spawn, which re-import the
    caller's ``__main__``: guard scripts with ``if __name__ == "__main__":``.

    ``progress(done, total)`` is called once the cache hits are served and after each module
    is ready (in completion order; ``total`` counts the items). Workers ignore SIGINT; when the
    caller is interrupted (``KeyboardInterrupt`` or any other exception while waiting), the
    queued compiles are cancelled and the workers killed at once.

    A failure raises :class:`~blest.errors.CompileError` naming the item (index and spec name).
    """
    resolved = [_resolve(it) for it in items]
    opts = nvrtc_options(arch, target, options, lineinfo=lineinfo)
    _check_arch(normalize_arch(arch, target), resolved[0][0] if resolved else "")
    keys = [_key(src, opts, target, name) for src, name, _ in resolved]
    results: list[bytes | None] = [None] * len(resolved)
    todo: dict[str, list[int]] = {}  # key → indices of the items that need it
    for i, key in enumerate(keys):
        hit = _cache.load(key, target) if cache else None
        if hit is not None:
            results[i] = hit
        else:
            todo.setdefault(key, []).append(i)
    finished = [len(resolved) - sum(map(len, todo.values()))]

    def fail(i: int, exc: CompileError) -> CompileError:
        _, name, label = resolved[i]
        return CompileError(
            f"compile_many item {i} ({label}, {name}): {exc}", log=exc.log, source=exc.source
        )

    def done(key: str, binary: bytes) -> None:
        for i in todo[key]:
            results[i] = binary
        if cache:
            _cache.store(key, target, binary)
        finished[0] += len(todo[key])
        if progress is not None:
            progress(finished[0], len(resolved))

    if progress is not None:
        progress(finished[0], len(resolved))
    workers = min(len(todo), max_workers or os.cpu_count() or 1)
    if workers <= 1:
        for key, idx in todo.items():
            src, name, _ = resolved[idx[0]]
            try:
                done(key, _nvrtc_compile(src, opts, target, name))
            except CompileError as exc:
                raise fail(idx[0], exc) from exc
        return [r for r in results if r is not None]

    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=_mp_context(),
        initializer=signal.signal,  # workers ignore Ctrl-C: the parent stops them
        initargs=(signal.SIGINT, signal.SIG_IGN),
    )
    try:
        # Stop signals are held while the submissions fork the workers: a Ctrl-C inside a
        # fork's own handlers would be printed and lost. Python >= 3.12 warns on fork if CUDA
        # threads exist.
        with warnings.catch_warnings(), held_signals():
            warnings.filterwarnings("ignore", r".*fork\(\) may lead", DeprecationWarning)
            futures = {
                pool.submit(
                    _nvrtc_compile, resolved[idx[0]][0], opts, target, resolved[idx[0]][1]
                ): key
                for key, idx in todo.items()
            }
        pending = set(futures)
        while pending:
            # short waits: a signal that lands in one of the pool's threads is only acted on
            # when the main thread runs again
            finished_now, pending = wait(pending, timeout=0.05, return_when=FIRST_COMPLETED)
            for fut in finished_now:
                key = futures[fut]
                i = todo[key][0]
                try:
                    done(key, fut.result())
                except CompileError as exc:
                    raise fail(i, exc) from exc
                except BrokenProcessPool as exc:
                    raise CompileError(
                        f"compile_many item {i} ({resolved[i][2]}): a compiler process died "
                        f"({exc}); max_workers=1 compiles in-process",
                        source=resolved[i][0],
                    ) from exc
    except BaseException:
        _stop_pool(pool)
        raise
    pool.shutdown(wait=True)
    return [r for r in results if r is not None]
