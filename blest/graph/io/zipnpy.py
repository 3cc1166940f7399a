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

:class:`NpzBuffer` reads an archive already in memory: its stored (uncompressed) members are
views into that memory, not copies, so they cost nothing against the byte cap; each must lie
within the buffer, overlap no other (so each is read once), and match its CRC-32 unless the
caller has verified the whole buffer (a checksum of its own). A member whose data is not
aligned for its dtype (zipfile and NumPy align nothing in the archive) is moved back to an
aligned address within its own bytes, over the end of its already parsed ``.npy`` header.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from typing import IO, Any, cast

import numpy as np

from blest.graph.io.files import GZIP_RATIO

__all__ = ["MemberError", "NpzBuffer", "NpzMembers"]

_SLACK = 50_000  # bytes a member may declare beyond its compressed size times the ratio
_LOCAL_MAGIC = b"PK\x03\x04"  # how a zip local file header starts
_LOCAL_HEADER = 30  # its bytes before the member's name and extra field
_NAME_LENGTHS_AT = 26  # where it holds the lengths of those two


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
        info = self._info(name)
        self._check_info(info)
        self._charge(info.file_size, info.filename)
        with self._zip.open(info) as member:
            return self._read_npy(member, info, max_items)

    def header(self, name: str) -> tuple[tuple[int, ...], np.dtype]:
        """The shape and dtype the member ``name`` declares (only its header is inflated)."""
        info = self._info(name)
        with self._zip.open(info) as member:
            shape, _, dtype = _read_header(member, info.filename)
        return shape, dtype

    def _info(self, name: str) -> zipfile.ZipInfo:
        info = self._infos.get(name)
        if info is None:
            raise MemberError(f"no member {name}.npy")
        return info

    def _charge(self, nbytes: int, name: str) -> None:
        """Count ``nbytes`` more of new memory against the cap."""
        if self._left is not None:
            if nbytes > self._left:
                raise MemberError(
                    f"{name} declares {nbytes} bytes, more than the memory limit leaves"
                )
            self._left -= nbytes

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

    @staticmethod
    def _read_npy(member: IO[bytes], info: zipfile.ZipInfo, max_items: int | None) -> np.ndarray:
        """One ``.npy`` member, allocated only once its size is known to be real."""
        name = info.filename
        shape, fortran, dtype = _read_header(member, name)
        count = _count(shape, name, max_items)
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


class NpzBuffer(NpzMembers):
    """The ``.npy`` members of the zip archive held in ``data`` (writable memory, which the
    returned arrays share); ``cap`` bounds the bytes of the members inflated out of it;
    ``verified``: the caller has checked ``data`` as a whole, so stored members skip their
    CRC-32."""

    def __init__(
        self, data: memoryview, cap: float | None = None, *, verified: bool = False
    ) -> None:
        super().__init__(_BufferFile(data), cap)
        self._data = data
        self._verified = verified
        self._spans: list[tuple[int, int]] = []  # the bytes of the members viewed so far

    def read(self, name: str, *, max_items: int | None = None) -> np.ndarray:
        """The member ``name``: a view into the buffer when it is stored, else a copy."""
        info = self._info(name)
        if info.compress_type != zipfile.ZIP_STORED:
            return super().read(name, max_items=max_items)
        self._check_info(info)
        begin, end = self._span(info)
        self._claim(info, begin, end)
        member = _BufferFile(self._data[begin:end])
        shape, fortran, dtype = _read_header(cast(IO[bytes], member), info.filename)
        count = _count(shape, info.filename, max_items)
        at = begin + member.tell()
        if count < 0 or at + count * dtype.itemsize > end:
            raise MemberError(f"{info.filename}: declares more bytes of data than it holds")
        array = np.frombuffer(self._data, dtype=dtype, count=count, offset=at)
        if not array.flags.aligned:  # move the data back, over the end of its parsed header
            back = array.ctypes.data % dtype.alignment  # < 16, a .npy header is 50+ bytes
            self._data[at - back : at - back + array.nbytes] = self._data[at : at + array.nbytes]
            array = np.frombuffer(self._data, dtype=dtype, count=count, offset=at - back)
        return array.reshape(shape, order="F" if fortran else "C")

    def header(self, name: str) -> tuple[tuple[int, ...], np.dtype]:
        """The shape and dtype the member ``name`` declares."""
        info = self._info(name)
        if info.compress_type != zipfile.ZIP_STORED:
            return super().header(name)
        begin, end = self._span(info)
        member = cast(IO[bytes], _BufferFile(self._data[begin:end]))
        shape, _, dtype = _read_header(member, info.filename)
        return shape, dtype

    def _span(self, info: zipfile.ZipInfo) -> tuple[int, int]:
        """Where the stored member's bytes lie, ``(begin, end)``, after checking its local
        header as zipfile does, and that it ends within the buffer."""
        name, start = info.filename, info.header_offset
        fixed = bytes(self._data[start : start + _LOCAL_HEADER]) if start >= 0 else b""
        if len(fixed) < _LOCAL_HEADER or fixed[:4] != _LOCAL_MAGIC:
            raise MemberError(f"{name}: no local header where the directory says")
        name_len, extra_len = struct.unpack_from("<HH", fixed, _NAME_LENGTHS_AT)
        local_name = bytes(self._data[start + _LOCAL_HEADER : start + _LOCAL_HEADER + name_len])
        if local_name != info.orig_filename.encode("utf-8" if info.flag_bits & 0x800 else "cp437"):
            raise MemberError(f"{name}: its local header names another member")
        begin = start + _LOCAL_HEADER + name_len + extra_len
        end = begin + info.compress_size
        if end > len(self._data):
            raise MemberError(f"{name}: truncated (it runs past the end of the archive)")
        return begin, end

    def _claim(self, info: zipfile.ZipInfo, begin: int, end: int) -> None:
        """Take the member's bytes for an array: they must overlap no member read before and
        (unless verified) match its CRC-32."""
        start, name = info.header_offset, info.filename
        if any(start < b and a < end for a, b in self._spans):
            raise MemberError(f"{name} overlaps another member")
        self._spans.append((start, end))
        if not self._verified and zlib.crc32(self._data[begin:end]) != info.CRC:
            raise MemberError(f"{name}: its CRC-32 does not match (damaged)")


class _BufferFile(io.RawIOBase):
    """A read-only, seekable file over ``data`` (for zipfile's directory and the ``.npy``
    headers): a read copies only what it returns."""

    def __init__(self, data: memoryview) -> None:
        super().__init__()
        self._data = data
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: len(self._data)}[whence]
        if base + offset < 0:
            raise OSError(f"seek to {base + offset}, before the start")
        self._pos = base + offset
        return self._pos

    def readinto(self, buffer: Any) -> int:
        dest = memoryview(buffer).cast("B")
        chunk = self._data[self._pos : self._pos + len(dest)]
        dest[: len(chunk)] = chunk
        self._pos += len(chunk)
        return len(chunk)


def _count(shape: tuple[int, ...], name: str, max_items: int | None) -> int:
    """The elements of ``shape``, at most ``max_items``."""
    count = int(np.prod(shape, dtype=object)) if shape else 1
    if max_items is not None and count > max_items:
        raise MemberError(f"{name}: declares {count} elements, at most {max_items} fit")
    return count


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
