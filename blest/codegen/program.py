"""What every kernel family emits: a :class:`KernelProgram`, and the one render context behind it.

A family (single-source BFS, multi-source BFS, the dense every-vertex form; see
:mod:`blest.codegen.family`) turns a frozen spec into CUDA C++ through the jinja2 templates in
``blest/templates``. Whatever the family, the runtime needs the same facts of the module it
compiles, and they are gathered here once:

* ``source``: the generated CUDA C++ (deterministic: the same spec gives the same bytes);
* ``kernels``: the ``extern "C"`` entry point of each role (``"init"``, ``"bfs"``, ``"ms"``, ...);
* ``params``: the ABI every kernel of the module takes first, in order, one :class:`KernelParam`
  each, grouped as the CUDA structs that the kernels unpack them into (``Graph g``,
  ``State st``, ...); ``extras``: the arguments a role takes after them;
* ``launch_bounds``, the shared-memory formula and the contract tables the source embeds.

:func:`kernel_context` is the one builder of the templates' context: every family calls it with
its parameter groups and adds its own keys.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jinja2

from blest.codegen.contract import CTL_FIELDS, CTL_WORDS

__all__ = [
    "KERNEL_PREFIX",
    "KernelParam",
    "ParamGroup",
    "KernelProgram",
    "environment",
    "render_file",
    "kernel_context",
]

#: Prefix of every entry point (``blest_bfs``, ``blest_ms``, ...).
KERNEL_PREFIX = "blest"


@dataclass(frozen=True)
class KernelParam:
    """One flat kernel parameter: its C type, name (also the struct field) and a comment."""

    ctype: str
    name: str
    doc: str = ""


@dataclass(frozen=True)
class ParamGroup:
    """Parameters the kernels unpack into one struct: ``const <struct> <var>{...};``; the
    templates list its fields as ``<key>_fields``."""

    struct: str
    var: str
    key: str
    params: tuple[KernelParam, ...]


def _no_shared(n: int, smem_queue: int = 0) -> int:
    return 0


@dataclass(frozen=True)
class KernelProgram:
    """One generated module as the runtime sees it (see the module docstring)."""

    family: str
    name: str
    source: str
    kernels: Mapping[str, str]
    groups: tuple[ParamGroup, ...]
    extras: Mapping[str, tuple[KernelParam, ...]] = field(default_factory=dict)
    launch_bounds: tuple[int, ...] = (1024,)
    tables: tuple[str, ...] = ("CTL",)
    #: Dynamic shared memory a block needs on a graph of n vertices (and ``smem_queue``
    #: queue entries in shared memory, where the family keeps some).
    shared_bytes: Callable[..., int] = _no_shared

    @property
    def params(self) -> tuple[KernelParam, ...]:
        """The arguments every kernel takes first, in order."""
        return tuple(p for g in self.groups for p in g.params)

    def signature(self, role: str) -> tuple[KernelParam, ...]:
        """Every argument of kernel ``role``, in order."""
        return self.params + tuple(self.extras.get(role, ()))

    @property
    def max_block_size(self) -> int:
        """The most threads a block of the main kernel may have."""
        return self.launch_bounds[0]


@functools.lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The jinja2 environment over ``blest/templates`` (strict: an undefined name is an error)."""
    return jinja2.Environment(
        loader=jinja2.PackageLoader("blest", "templates"),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )


def render_file(template: str, context: Mapping[str, Any]) -> str:
    """A kernel file rendered from ``template``: blank-line runs squeezed (stable spacing
    whatever the include pattern), one trailing newline."""
    text = environment().get_template(template).render(**context)
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"


def kernel_context(spec: Any, groups: Sequence[ParamGroup], **extra: Any) -> dict[str, Any]:
    """The templates' context for ``spec``: its parameter groups (``params``, the comma-separated
    declarations; ``unpack``, one struct per group; ``<key>_fields``), the control block's
    table, the kernel prefix, and, for the BVSS families (a spec with ``sigma``), the slice
    geometry; then the family's own keys (``extra``)."""
    params = [p for g in groups for p in g.params]
    context: dict[str, Any] = {
        "spec": spec,
        "params": "\n    " + ",\n    ".join(f"{p.ctype} {p.name}" for p in params),
        "unpack": "\n    ".join(
            f"const {g.struct} {g.var}{{" + ", ".join(p.name for p in g.params) + "};"
            for g in groups
        ),
        "ctl_fields": CTL_FIELDS,
        "ctl_words": CTL_WORDS,
        "prefix": KERNEL_PREFIX,
    }
    for g in groups:
        context[f"{g.key}_fields"] = [(p.ctype, p.name, p.doc) for p in g.params]
    sigma = getattr(spec, "sigma", None)
    if sigma is not None:
        theta = 32 // sigma
        context.update(
            sigma=sigma,
            theta=theta,
            tau=32 * theta,
            rounds=max(1, theta // 2),
            slice_mask="0x%x" % ((1 << sigma) - 1),
            pair_mask="0x%x" % ((1 << min(2 * sigma, 32)) - 1),
            row_load_bytes=4 * theta,
        )
    context.update(extra)
    return context
