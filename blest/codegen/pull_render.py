"""Render a :class:`PullSpec` into CUDA C++ (``templates/pull_bfs.cu.j2``).

One kernel, :data:`~blest.codegen.pullspec.PULL_KERNEL`, role ``"pull"``: the flat parameters
of :func:`pull_params` (bound once by the host, :mod:`blest.runtime.pull_runner`), then the
call's :func:`pull_extras` (its seeds and depth limit).
"""

from __future__ import annotations

import functools

from blest.codegen.program import (
    KernelParam,
    KernelProgram,
    ParamGroup,
    kernel_context,
    render_file,
)
from blest.codegen.pullspec import (
    PULL_CTL_WORDS,
    PULL_EARLY,
    PULL_KERNEL,
    PULL_OVERFLOW,
    PullSpec,
)

__all__ = ["PULL_SHARED_BYTES", "pull_params", "pull_extras", "render_pull", "pull_program"]

#: In-arcs a lane loads before it tests the first (loads in flight on a chain of dependent ones).
GROUP = 4
#: The hybrid form: in-arcs above which the warp pulls a vertex together instead of one lane
#: (a warp's width: a heavier vertex would hold its lane for more rounds than the warp takes).
HYBRID_DEGREE = 32
#: Dynamic shared memory of a block: counters (three, four when asynchronous) of the vertices
#: it reached at a level.
PULL_SHARED_BYTES = 16


def pull_params(spec: PullSpec) -> list[KernelParam]:
    """Every common kernel parameter, in order (the counts' only with ``spec.counts``)."""
    params = [
        KernelParam("const long long* __restrict__", "in_ptr", "n + 1 (in_csr, internal ids)"),
        KernelParam("const int* __restrict__", "in_idx", "in-neighbours"),
        KernelParam("const int* __restrict__", "old_of_new", "n, or null for the identity"),
        KernelParam("int", "n"),
        KernelParam("int", "n_words", "ceil(n / 32)"),
        KernelParam("u32*", "visited", "n_words; the bits past n are set"),
        KernelParam(
            "u32*", "frontier", f"{spec.frontiers} * n_words: F_L at index L % {spec.frontiers}"
        ),
        KernelParam("int*", "levels", "n, the user's ids: the level, -1 unreached"),
    ]
    if spec.counts:
        params += [
            KernelParam("u64*", "sigma", "n, internal ids: shortest paths from the seeds"),
            KernelParam("u64*", "sigma_out", "n, the user's ids, or null for the identity"),
        ]
    params.append(KernelParam("u32*", "ctl", "PULL_CTL_WORDS, zeroed before each launch"))
    return params


def pull_extras() -> tuple[KernelParam, ...]:
    """The arguments of one call, after the common ones."""
    return (
        KernelParam("const int* __restrict__", "seeds", "n_seeds internal ids, or null"),
        KernelParam("int", "n_seeds", "distinct seeds"),
        KernelParam("int", "seed", "the one seed when seeds is null"),
        KernelParam("int", "depth_limit", "the last level assigned, or -1 for none"),
    )


def _groups(spec: PullSpec) -> tuple[ParamGroup, ...]:
    return (ParamGroup("Pull", "p", "pull", tuple(pull_params(spec))),)


def _context(spec: PullSpec) -> dict:
    extras = pull_extras()
    return kernel_context(
        spec,
        _groups(spec),
        counts=spec.counts,
        asynchronous=spec.asynchronous,
        frontiers=spec.frontiers,
        form=spec.form,
        hybrid_degree=HYBRID_DEGREE,
        group=GROUP,
        overflow_word=PULL_OVERFLOW,
        early_word=PULL_EARLY,
        pull_ctl_words=PULL_CTL_WORDS,
        extras=",\n    ".join(f"{p.ctype} {p.name}" for p in extras),
        shared_bytes=PULL_SHARED_BYTES,
    )


@functools.lru_cache(maxsize=8)
def render_pull(spec: PullSpec) -> str:
    """The CUDA C++ source of ``spec``: readable, self-contained, deterministic."""
    return render_file("pull_bfs.cu.j2", _context(spec))


@functools.lru_cache(maxsize=8)
def pull_program(spec: PullSpec) -> KernelProgram:
    """The module of ``spec`` as the runtime loads it: one role, ``"pull"``."""
    return KernelProgram(
        family="pull",
        name=spec.name,
        source=render_pull(spec),
        kernels={"pull": PULL_KERNEL},
        groups=_groups(spec),
        extras={"pull": pull_extras()},
        shared_bytes=_shared_bytes,
    )


def _shared_bytes(n: int, smem_queue: int = 0) -> int:
    return PULL_SHARED_BYTES
