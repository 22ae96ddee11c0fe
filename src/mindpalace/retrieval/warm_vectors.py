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

A process's first load of the palace takes its vectors from the file too
(``first_load``): where the file matches, the rows are read from the
database without their float blobs, the file's rows are mapped and only
the rows written since are read whole, so no process holds a full float
matrix (at 100,000 rows it had peaked at every float, twice, plus the
codes). The check reads just the vectors its fingerprint samples.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

import numpy as np
import numpy.typing as npt

from mindpalace.retrieval import dense, warm_cache, warm_table
from mindpalace.retrieval.compact import CompactVectors, Part
from mindpalace.retrieval.dense import DenseIndex
from mindpalace.store import vector_bytes
from mindpalace.store.roles import Handle, VectorRows
from mindpalace.store.vector_rows import VectorTable, key_dimensions

__all__ = ["MAGIC", "VectorStore", "first_load", "load", "mapped", "save"]

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


class VectorStore(warm_table.TableStore, Protocol):
    """What a first load reads: where the palace is, and its rows."""


@dataclass(frozen=True, slots=True)
class _Unread:
    """A palace's rows loaded without their vectors (``load_vectors`` with
    ``floats=False``): the vectors of the rows asked for are read from the
    store (a ``warm_cache.Snapshot``)."""

    store: VectorRows
    table: VectorTable
    model: str
    epoch: int
    dimensions: int

    def __len__(self) -> int:
        return len(self.table)

    def vectors_of(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
        """The vectors of ``rows`` (0 for a row without one).

        Raises:
            ValueError: a stored vector of another width.
        """
        ids = [str(i) for i in self.table.ids[np.asarray(rows, dtype=np.int64)].tolist()]
        found = self.store.memory_vectors(self.model, ids)
        out = np.zeros((len(ids), self.dimensions), dtype=np.float32)
        for at, memory_id in enumerate(ids):
            blob = found.get(memory_id)
            if blob is not None:
                out[at] = vector_bytes.from_blob(blob)
        return out


def _header(handle: IO[bytes]) -> dict[str, Any] | None:
    """The JSON header of an opened ``vectors.bin``; None if it is not one."""
    start = handle.read(len(MAGIC) + 8)
    if len(start) != len(MAGIC) + 8 or start[: len(MAGIC)] != MAGIC:
        return None
    meta = json.loads(handle.read(int.from_bytes(start[len(MAGIC) :], "little")))
    return meta if isinstance(meta, dict) else None


def _peek(folder: Path) -> dict[str, Any] | None:
    """The header of the file in ``folder``, when it is there and trusted."""
    try:
        with open(folder / warm_cache.VECTORS, "rb") as handle:
            return _header(handle) if warm_cache.trusted(folder, handle) else None
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def _mapped_part(folder: Path, snapshot: warm_cache.Snapshot, dims: int) -> Part | None:
    """The rows of the file in ``folder``, memory-mapped, when it is
    trusted, whole and of ``snapshot``'s palace as it is now (``dims``
    wide); else None."""
    try:
        with open(folder / warm_cache.VECTORS, "rb") as handle:
            if not warm_cache.trusted(folder, handle):
                return None
            meta = _header(handle)
            if meta is None:
                return None
            rows = warm_cache.matches(meta, _KIND, snapshot)
            if rows is None or meta.get("dimensions") != dims:
                return None
            size = os.fstat(handle.fileno()).st_size
            scales_at = int(meta["scales"])
            if size < scales_at + rows * 4:
                return None
            return Part(
                np.memmap(handle, np.float32, "r", int(meta["floats"]), (rows, dims)),
                np.memmap(handle, np.int8, "r", int(meta["codes"]), (rows, dims)),
                np.memmap(handle, np.float32, "r", scales_at, (rows,)),
            )
    except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError):
        return None


def first_load(
    store: VectorStore, model: str, *, epoch: int, vectors: int = -1, texts: bool = False
) -> tuple[VectorTable, CompactVectors] | None:
    """The palace's rows (``load_vectors(model, texts=texts)``) for an
    index's load, with their vectors from the file beside ``store``: the
    rows read without their floats (from the rows' file beside it where
    that matches too, ``warm_table``: ``vectors`` is the store's counter),
    the file's rows mapped, the rows written since it was saved read from
    the store. None where no file matches the palace as it is now
    (``epoch``), or the palace is below the size a compact index keeps:
    the caller loads every float then."""
    folder = warm_cache.folder_of(store)
    meta = _peek(folder) if folder is not None else None
    if folder is None or meta is None:
        return None
    dims = meta.get("dimensions")
    if (
        meta.get("format") != warm_cache.FORMAT
        or meta.get("kind") != _KIND
        or meta.get("model") != model
        or meta.get("epoch") != epoch
        or not isinstance(dims, int)
        or dims <= 0
        or key_dimensions(model) not in (0, dims)
    ):
        return None  # stale or another model's: not worth a read of the rows
    table = None if texts else warm_table.load(store, model, epoch=epoch, vectors=vectors)
    if table is None:
        table = store.load_vectors(model, texts=texts, floats=False)
    if len(table) < max(dense.COMPACT_ROWS, warm_cache.SAVE_ROWS):
        return None
    unread = _Unread(store, table, model, epoch, dims)
    base = _mapped_part(folder, unread, dims)
    if base is None:
        return None
    try:
        later = unread.vectors_of(np.arange(len(base), len(table), dtype=np.int64))
    except ValueError:
        return None
    return table, CompactVectors((base,), dims).extended(later)


def load(store: Handle, index: DenseIndex) -> CompactVectors | None:
    """The saved vectors of ``index``'s first rows, memory-mapped, followed
    by its later rows (in memory); None when no file matches the palace as
    it is now."""
    folder = warm_cache.folder_of(store)
    compact = index.compact
    if folder is None or compact is None:
        return None
    base = _mapped_part(folder, index, compact.dimensions)
    if base is None:
        return None
    later = np.arange(len(base), len(index), dtype=np.int64)
    mapped = CompactVectors((base,), compact.dimensions)
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
