"""A generated module on one GPU: :class:`DeviceProgram`, the runtime's side of a
:class:`~blest.codegen.program.KernelProgram`, whatever its family.

It owns what every kernel family needs to run a module:

* the module, compiled through NVRTC (disk-cached) and loaded, and its kernels by role;
* the arguments every kernel takes first, bound once from named device buffers and sizes in
  the order of the program's ABI (a name the ABI lists and the family did not provide, or one
  it provided that the ABI does not list, is refused: the two cannot drift apart);
* one :class:`~blest.runtime.launch.PreparedLaunch` per role and number of extra arguments,
  packed at its first use, whose extra arguments are rewritten in place at each launch;
* the control block (the ``ctl`` buffer, when the ABI has one) and its page-locked host mirror;
* :meth:`close`.

A family's driver (the single-source :class:`~blest.runtime.traversal.Traversal`, the
multi-source :class:`~blest.runtime.ms_runner.MSRunner`, the dense
:class:`~blest.runtime.dense_runner.DenseRunner`) allocates the buffers, decides the launch
geometry with :meth:`occupancy` and sets each role's :class:`LaunchShape`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from blest.codegen.contract import CTL_WORDS
from blest.codegen.program import KernelProgram
from blest.errors import ArgumentError
from blest.runtime.device import pinned_array

__all__ = ["DeviceProgram", "LaunchShape"]


@dataclass(frozen=True)
class LaunchShape:
    """Blocks, threads a block, dynamic shared memory and whether the launch is cooperative."""

    grid: int
    block: int
    shared_bytes: int = 0
    cooperative: bool = False


class DeviceProgram:
    """``program`` compiled for ``arch``, loaded on ``device_id``, with its common arguments
    bound from ``values`` (see the module docstring). ``host_words``: extra page-locked words
    after the control block's mirror (a served engine's request block)."""

    def __init__(
        self,
        program: KernelProgram,
        device_id: int,
        arch: str,
        values: Mapping[str, Any] | None = None,
        *,
        host_words: int = 0,
    ) -> None:
        from blest.codegen.compile import compile_source
        from blest.runtime.device import cupy_module
        from blest.runtime.launch import load_module

        self.program = program
        self.device_id = device_id
        self.arch = arch
        self.cp = cp = cupy_module()
        binary = compile_source(program.source, arch=arch, target="cubin")
        module = load_module(binary, device_id)
        self.kernels = {role: module.get_function(entry) for role, entry in program.kernels.items()}
        self.shapes: dict[str, LaunchShape] = {}
        self._launches: dict[tuple[str, int], Any] = {}
        self.values: dict[str, Any] = {}
        self.args: tuple = ()
        self._index: dict[str, int] = {}
        self.ctl: Any = None
        self.host_block = pinned_array(cp, CTL_WORDS + host_words, np.uint32)
        self.host_ctl = self.host_block[:CTL_WORDS]
        if values is not None:
            self.bind(values)

    def bind(self, values: Mapping[str, Any]) -> None:
        """Bind the common arguments: one value for each name of the ABI, no other."""
        names = [p.name for p in self.program.params]
        missing = [name for name in names if name not in values]
        unknown = sorted(set(values) - set(names))
        if missing or unknown:
            raise ArgumentError(
                f"{self.program.name}: buffers do not match the kernels' parameters "
                f"(missing {missing}, unknown {unknown})"
            )
        self.values = dict(values)
        self.args = tuple(values[name] for name in names)
        self._index = {name: i for i, name in enumerate(names)}
        self._launches = {}
        self.ctl = values.get("ctl")

    def occupancy(self, role: str, block_size: int, shared_bytes: int = 0) -> int:
        """Blocks of kernel ``role`` that fit on one multiprocessor at once."""
        from blest.runtime.launch import max_active_blocks

        return max_active_blocks(self.kernels[role], block_size, shared_bytes)

    def launch(self, role: str, extra: tuple = ()) -> None:
        """Start kernel ``role`` on the current stream with the common arguments and ``extra``,
        in the shape set for the role."""
        key = (role, len(extra))
        prepared = self._launches.get(key)
        if prepared is None:
            from blest.runtime.launch import PreparedLaunch

            shape = self.shapes[role]
            prepared = self._launches[key] = PreparedLaunch(
                self.kernels[role], (shape.grid,), (shape.block,), self.args + extra,
                shared_mem=shape.shared_bytes, cooperative=shape.cooperative,
            )  # fmt: skip
        else:
            base = len(self.args)
            for i, arg in enumerate(extra):
                prepared.set(base + i, arg)
        prepared()

    def rebind(self, **values: Any) -> None:
        """Common arguments that change between launches (a multi-source launch's batch
        range, say): the next launches of every role take them."""
        args = list(self.args)
        for name, value in values.items():
            i = self._index[name]
            args[i] = self.values[name] = value
            for prepared in self._launches.values():
                prepared.set(i, value)
        self.args = tuple(args)

    def read_ctl(self) -> Any:
        """The control block copied into its page-locked mirror (waits for the work before)."""
        self.ctl.get(out=self.host_ctl)
        return self.host_ctl

    def close(self) -> None:
        """Drop the module, the launches and every buffer this object holds."""
        self._launches = {}
        self.kernels = {}
        self.values = {}
        self.args = ()
        self.ctl = self.host_block = self.host_ctl = None
