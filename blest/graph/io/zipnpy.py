"""The ``.npy`` members of a zip archive (``.npz``), read one at a time and only when asked for.

Nothing is inflated before it is checked:

- the member's compression must be none or deflate (what NumPy writes), it must not be
  encrypted, and its declared size must be one its compressed bytes can hold (stored: equal;
  deflate: at most :data:`~blest.graph.io.files.GZIP_RATIO` times, plus a little);
- the declared sizes of the members read so far must stay within a byte cap (the memory limit);
- the ``.npy`` header must declare a plain dtype (no pickled objects), no more elements than
  the caller allows and no more bytes than the member holds.

Members no caller asks for are never inflated. Errors are :class:`MemberError` (a
``ValueError``) naming the member; the callers turn them into their own errors.
"""

from __future__ import annotations

import io
import zipfile
from typing import IO, Any, cast

import numpy as np

from blest.graph.io.files import GZIP_RATIO

__all__ = ["MemberError", "NpzMembers"]

_SLACK = 50_000  # bytes a member may declare beyond its compressed size times the ratio


class MemberError(ValueError):
    """A member of an archive is missing, lies about its size or is not a plain array."""


class NpzMembers:
    """The ``.npy`` members of the zip archive ``source`` (a path or a binary file object),
    by name without the suffix; ``cap`` bounds the bytes of the members read (None: none)."""

    def __init__(self, source: Any, cap: float | None = None) -> None:
        self._zip = zipfile.ZipFile(source)
        self._infos = {
            i.filename[:-4]: i for i in self._zip.infolist() if i.filename.endswith(".npy")
        }
        self._left = cap

    def __enter__(self) -> NpzMembers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._zip.close()

    @property
    def names(self) -> set[str]:
        return set(self._infos)

    def __contains__(self, name: str) -> bool:
        return name in self._infos

    def read(self, name: str, *, max_items: int | None = None) -> np.ndarray:
        """The member ``name`` (checked as the module docstring says)."""
        info = self._infos.get(name)
        if info is None:
            raise MemberError(f"no member {name}.npy")
        self._check_info(info)
        with self._zip.open(info) as member:
            return self._read_npy(member, info, max_items)

    def header(self, name: str) -> tuple[tuple[int, ...], np.dtype]:
        """The shape and dtype the member ``name`` declares (only its header is inflated)."""
        info = self._infos.get(name)
        if info is None:
            raise MemberError(f"no member {name}.npy")
        with self._zip.open(info) as member:
            shape, _, dtype = _read_header(member, info.filename)
        return shape, dtype

    def _check_info(self, info: zipfile.ZipInfo) -> None:
        name = info.filename
        if info.flag_bits & 0x1:
            raise MemberError(f"{name} is encrypted")
        if info.compress_type == zipfile.ZIP_STORED:
            if info.file_size != info.compress_size:
                raise MemberError(f"{name} is stored but declares a size it does not hold")
        elif info.compress_type == zipfile.ZIP_DEFLATED:
            if info.file_size > info.compress_size * GZIP_RATIO + _SLACK:
                raise MemberError(
                    f"{name} declares {info.file_size} bytes, more than its "
                    f"{info.compress_size} compressed bytes can hold"
                )
        else:
            raise MemberError(f"{name} uses compression method {info.compress_type}, not deflate")
        if self._left is not None:
            if info.file_size > self._left:
                raise MemberError(
                    f"{name} declares {info.file_size} bytes, more than the memory limit leaves"
                )
            self._left -= info.file_size

    @staticmethod
    def _read_npy(member: IO[bytes], info: zipfile.ZipInfo, max_items: int | None) -> np.ndarray:
        """One ``.npy`` member, allocated only once its size is known to be real."""
        name = info.filename
        shape, fortran, dtype = _read_header(member, name)
        count = int(np.prod(shape, dtype=object)) if shape else 1
        if max_items is not None and count > max_items:
            raise MemberError(f"{name}: declares {count} elements, at most {max_items} fit")
        nbytes = count * dtype.itemsize
        if count < 0 or nbytes > info.file_size:
            raise MemberError(f"{name}: declares {nbytes} bytes of data, more than it holds")
        array = np.empty(count, dtype=dtype)
        view = array.view(np.uint8).reshape(-1).data
        stream = cast(io.BufferedIOBase, member)  # a zipfile.ZipExtFile
        got = 0
        while got < nbytes:
            step = stream.readinto(view[got:])
            if not step:
                raise MemberError(f"{name}: truncated ({got} of {nbytes} bytes)")
            got += step
        return array.reshape(shape, order="F" if fortran else "C")


def _read_header(member: IO[bytes], name: str) -> tuple[tuple[int, ...], bool, np.dtype]:
    """(shape, Fortran order, dtype) of a ``.npy`` stream; plain dtypes only."""
    version = np.lib.format.read_magic(member)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(member)
    elif version == (2, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(member)
    else:
        raise MemberError(f"{name}: unsupported .npy version {version}")
    if dtype.hasobject:
        raise MemberError(f"{name}: object arrays are not read (no pickle)")
    if dtype.itemsize == 0:
        raise MemberError(f"{name}: elements of no size ({dtype})")
    return shape, fortran, dtype
