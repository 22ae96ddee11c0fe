"""A large SQLite palace's vectors kept on disk beside it, memory-mapped.

A compact dense index (``compact.py``) scans int8 codes and re-scores a few
rows from their floats. Held in each process's own memory they cost
1.9 KB a 384-d row (1.5 KB floats, 0.4 KB codes) in every worker; mapped
from one file in the palace's warm folder (``warm_cache.py``), the pages
are the operating system's file cache, shared by every process on the
host, and the floats are read only for the rows re-scored.

``vectors.bin`` holds, for the first ``rows`` rows of the palace::

    b"MPVECS01" | header length (8 bytes, little-endian) | JSON header
    | floats (rows x d float32) | codes (rows x d int8) | scales (rows float32)

each array at a page-aligned offset the header names. The header is the
warm files' record (``warm_cache.meta_of``: model, epoch, rows, last seq,
fingerprint); a file is mapped only when it matches the palace as it is
now and belongs to this user alone, and it is written like the other warm
files (temporary name, synced, renamed). An erasure removes it
(``warm_cache.discard``): the bytes of a file a process still maps stay in
its memory until that process reloads its index, which its next recall
does (the erasure bumped the palace's epoch), and the file system frees
them then.
"""

from __future__ import annotations

import json
import os
from typing import IO, Any

import numpy as np

from mindpalace.retrieval import warm_cache
from mindpalace.retrieval.compact import CompactVectors, Part
from mindpalace.retrieval.dense import DenseIndex
from mindpalace.store.roles import Handle

__all__ = ["MAGIC", "load", "mapped", "save"]

MAGIC = b"MPVECS01"
_ALIGN = 4_096
_KIND = "vectors"


def _aligned(offset: int) -> int:
    return -(-offset // _ALIGN) * _ALIGN


def save(store: Handle, index: DenseIndex) -> bool:
    """Write ``index``'s vectors (every row's) beside ``store``; False when
    not written (no folder, a stale index, a folder that cannot be written)."""
    folder = warm_cache.folder_of(store)
    compact = index.compact
    if folder is None or compact is None or len(index) == 0:
        return False
    if store.change_counters()[1] != index.epoch:
        return False  # the palace changed since: never save a stale index
    rows, dims = len(index), compact.dimensions
    meta: dict[str, Any] = warm_cache.meta_of(index, rows, _KIND)
    floats_at = _ALIGN  # the header fits one page at least
    codes_at = _aligned(floats_at + rows * dims * 4)
    scales_at = _aligned(codes_at + rows * dims)
    meta.update(dimensions=dims, floats=floats_at, codes=codes_at, scales=scales_at)
    header = json.dumps(meta).encode("utf-8")
    if len(MAGIC) + 8 + len(header) > floats_at:
        return False

    def dump(handle: IO[bytes]) -> None:
        handle.write(MAGIC + len(header).to_bytes(8, "little") + header)
        for offset, arrays in (
            (floats_at, [p.floats for p in compact.parts]),
            (codes_at, [p.codes for p in compact.parts]),
            (scales_at, [p.scales for p in compact.parts]),
        ):
            handle.seek(offset)
            for array in arrays:
                handle.write(np.ascontiguousarray(array).tobytes())

    return warm_cache.write_file(folder, warm_cache.VECTORS, dump)


def load(store: Handle, index: DenseIndex) -> CompactVectors | None:
    """The saved vectors of ``index``'s first rows, memory-mapped, followed
    by its later rows (in memory); None when no file matches the palace as
    it is now."""
    folder = warm_cache.folder_of(store)
    compact = index.compact
    if folder is None or compact is None:
        return None
    try:
        with open(folder / warm_cache.VECTORS, "rb") as handle:
            if not warm_cache.trusted(folder, handle):
                return None
            start = handle.read(len(MAGIC) + 8)
            if len(start) != len(MAGIC) + 8 or start[: len(MAGIC)] != MAGIC:
                return None
            meta = json.loads(handle.read(int.from_bytes(start[len(MAGIC) :], "little")))
            if not isinstance(meta, dict):
                return None
            rows = warm_cache.matches(meta, _KIND, index)
            dims = meta.get("dimensions")
            if rows is None or dims != compact.dimensions:
                return None
            size = os.fstat(handle.fileno()).st_size
            scales_at = int(meta["scales"])
            if size < scales_at + rows * 4:
                return None
            base = Part(
                np.memmap(handle, np.float32, "r", int(meta["floats"]), (rows, dims)),
                np.memmap(handle, np.int8, "r", int(meta["codes"]), (rows, dims)),
                np.memmap(handle, np.float32, "r", scales_at, (rows,)),
            )
    except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError):
        return None
    later = np.arange(rows, len(index), dtype=np.int64)
    mapped = CompactVectors((base,), dims)
    return mapped.extended(compact.floats(later)) if later.shape[0] else mapped


def mapped(store: Handle, index: DenseIndex) -> DenseIndex:
    """``index`` with its vectors mapped from the file beside ``store``
    (written first when none matches); ``index`` itself where there is no
    such file to be had (a small, in-memory or PostgreSQL palace, a folder
    that cannot be written)."""
    if index.compact is None or len(index) < warm_cache.SAVE_ROWS:
        return index
    found = load(store, index)
    if found is None and save(store, index):
        found = load(store, index)
    return index if found is None else index.with_compact(found)
