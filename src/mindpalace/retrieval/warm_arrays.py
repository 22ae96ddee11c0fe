"""Named numpy arrays in one file, read back memory-mapped.

The warm keyword postings (``warm_cache.py``) are a few hundred megabytes at
a million memories. Read into each worker process they are that much of
every worker's own memory; mapped read-only from the file, their pages are
the operating system's file cache, held once for every process of the host
that opens the palace. One file (not one per array) because a save is one
rename: a reader sees one save's arrays, never a mix of two.

Layout::

    b"MPARRS01" | header length (8 bytes, little-endian) | JSON header
    | padding | array bytes, each at a multiple of 64 bytes

The header is ``{"meta": {...}, "arrays": {name: {"dtype", "shape",
"offset", "crc32"}}}``, offsets counted from the first multiple of 64 after
the header. Only plain little-endian numbers are accepted (no objects, so
nothing runs from a file), every array must lie inside the file, and each
one's CRC-32 is checked when it is mapped: a truncated or damaged file is
refused, as a zip member's checksum refused it before. A mapped file is
never written in place (writers write a new file and rename it over the
old one), so a mapping always sees the bytes it was checked with.
"""

from __future__ import annotations

import json
import mmap
import zlib
from collections.abc import Mapping
from typing import IO, Any

import numpy as np
import numpy.typing as npt

__all__ = ["DTYPES", "MAGIC", "dump", "load"]

MAGIC = b"MPARRS01"
_ALIGN = 64
_PREFIX = len(MAGIC) + 8
#: the element types a file may hold
DTYPES = frozenset({"|u1", "<i4", "<i8", "<f2", "<f4", "<f8"})


def _aligned(offset: int) -> int:
    return -(-offset // _ALIGN) * _ALIGN


def _crc(array: npt.NDArray[Any]) -> int:
    return zlib.crc32(np.ascontiguousarray(array).data)


def dump(
    handle: IO[bytes], meta: Mapping[str, Any], arrays: Mapping[str, npt.NDArray[Any]]
) -> None:
    """Write ``meta`` and the one-dimensional ``arrays`` to ``handle``.

    Raises:
        ValueError: an array is not one-dimensional or of a type ``DTYPES``
            lacks.
    """
    entries: dict[str, dict[str, Any]] = {}
    offset = 0
    for name, array in arrays.items():
        code = (
            array.dtype.newbyteorder("<").str if array.dtype.byteorder == ">" else array.dtype.str
        )
        if array.ndim != 1 or code not in DTYPES:
            raise ValueError(f"{name}: {array.dtype} x {array.shape} cannot be stored")
        entries[name] = {
            "dtype": code,
            "shape": [int(array.shape[0])],
            "offset": offset,
            "crc32": _crc(array.astype(code, copy=False)),
        }
        offset = _aligned(offset + array.nbytes)
    header = json.dumps({"meta": dict(meta), "arrays": entries}).encode("utf-8")
    handle.write(MAGIC + len(header).to_bytes(8, "little") + header)
    base = _aligned(_PREFIX + len(header))
    for name, array in arrays.items():
        handle.seek(base + entries[name]["offset"])
        handle.write(np.ascontiguousarray(array, dtype=entries[name]["dtype"]).tobytes())
    handle.truncate(base + offset)


def load(handle: IO[bytes]) -> tuple[dict[str, Any], dict[str, npt.NDArray[Any]]]:
    """The metadata and arrays of the file open as ``handle``, the arrays
    read-only views of one memory mapping of it (which outlives ``handle``).

    Raises:
        ValueError: not such a file, or a damaged one (truncated, an array
            outside the file, a type not in ``DTYPES``, a checksum that
            does not match).
    """
    start = handle.read(_PREFIX)
    if len(start) != _PREFIX or start[: len(MAGIC)] != MAGIC:
        raise ValueError("not a file of arrays")
    length = int.from_bytes(start[len(MAGIC) :], "little")
    header = json.loads(handle.read(length))
    if not isinstance(header, dict):
        raise ValueError("the header is not an object")
    meta, entries = header.get("meta"), header.get("arrays")
    if not isinstance(meta, dict) or not isinstance(entries, dict):
        raise ValueError("the header lacks its metadata or arrays")
    base = _aligned(_PREFIX + length)
    mapping = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    arrays: dict[str, npt.NDArray[Any]] = {}
    for name, entry in entries.items():
        code, shape, offset = entry.get("dtype"), entry.get("shape"), entry.get("offset")
        if (
            code not in DTYPES
            or not isinstance(shape, list)
            or len(shape) != 1
            or not isinstance(shape[0], int)
            or not isinstance(offset, int)
            or shape[0] < 0
            or offset < 0
        ):
            raise ValueError(f"{name}: not an array this file may hold")
        dtype = np.dtype(code)
        at = base + offset
        if at + shape[0] * dtype.itemsize > len(mapping):
            raise ValueError(f"{name} lies past the end of the file")
        if shape[0]:
            array = np.frombuffer(mapping, dtype=dtype, count=shape[0], offset=at)
        else:
            array = np.zeros(0, dtype=dtype)
            array.flags.writeable = False
        if _crc(array) != entry.get("crc32"):
            raise ValueError(f"{name} is damaged (its checksum differs)")
        arrays[str(name)] = array
    return meta, arrays
