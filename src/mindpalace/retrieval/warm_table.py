"""A large SQLite palace's rows kept beside it: the columns recall reads.

An index's rows are every memory's id, write order, scope columns (agent,
visibility, group, channel), filter columns (type, store, category, kind,
project, source, session), flags, time and length (``VectorTable``). A
process's first recall read them from SQLite for every row: at a million
memories, 15 of the first recall's 17 to 21 seconds. ``table.bin`` in the
warm folder (``warm_cache.py``, ``warm_arrays.py``'s layout) holds them for
the palace's first rows: coded columns as int32 codes with their names,
flags as bytes, ids as NUL-separated UTF-8. A first load takes those rows
from the file and reads from SQLite only the rows written since, and the
flags of rows archived, restored or superseded since (``flag_changes``).

The file is used only where it is of the palace as it is now: the same
epoch (every write that changes existing rows in another way bumps it: a
delete, an erasure, a re-embedding), the same vectors counter (vectors
added to existing rows change which rows have one), the same model, and a
last saved row the store still holds under the same id. The vectors'
file is then checked against the whole table (``warm_vectors``: write
sequences, ids, which rows have a vector, sampled vectors) before either
is used. It holds ids and names, never text; an erasure removes it with
the other warm files (``warm_cache.discard``).
"""

from __future__ import annotations

from typing import IO, Any, Protocol

import numpy as np
import numpy.typing as npt

from mindpalace.retrieval import warm_arrays, warm_cache
from mindpalace.retrieval.dense import DenseIndex
from mindpalace.store.roles import Handle, VectorRows
from mindpalace.store.vector_rows import CODED_COLUMNS, VectorTable

__all__ = ["TableStore", "load", "save", "save_when_stale", "stale"]

_KIND = "table"
#: flag columns, kept as bytes
_FLAGS = ("archived", "superseded", "embedded")
#: number columns, kept as they are
_NUMBERS: dict[str, type[np.generic]] = {
    "created_at": np.float64,
    "seq": np.int64,
    "length": np.int32,
}


class TableStore(Handle, VectorRows, Protocol):
    """What a load reads: where the palace is, its rows and flag changes."""


def save(store: Handle, index: DenseIndex) -> bool:
    """Write ``index``'s rows beside ``store``; False when not written (no
    folder, a stale index, a string that cannot be kept, a folder that
    cannot be written)."""
    folder = warm_cache.folder_of(store)
    table = index.table
    if folder is None or len(index) < warm_cache.SAVE_ROWS or not warm_cache.current(store, index):
        return False
    if table.embedded.shape[0] != len(table) or table.length.shape[0] != len(table):
        return False
    ids = [str(i) for i in table.ids.tolist()]
    packed = warm_cache.pack(ids)
    if packed is None:
        return False
    arrays: dict[str, npt.NDArray[Any]] = {"ids": packed}
    names: dict[str, int] = {}
    for column in CODED_COLUMNS:
        named: tuple[str, ...] = getattr(table, f"{column}_names")
        packed_names = warm_cache.pack(list(named))
        if packed_names is None:
            return False
        arrays[column] = np.ascontiguousarray(getattr(table, column), dtype=np.int32)
        arrays[f"{column}_names"] = packed_names
        names[column] = len(named)
    for column in _FLAGS:
        arrays[column] = np.ascontiguousarray(getattr(table, column), dtype=np.uint8)
    for column, kind in _NUMBERS.items():
        arrays[column] = np.ascontiguousarray(getattr(table, column), dtype=kind)
    meta = warm_cache.meta_of(index, len(index), _KIND)
    meta.update(
        flags=index.flags,
        vectors=index.vectors,
        last_id=ids[-1],
        ids=len(ids),
        names=names,
    )

    def dump(handle: IO[bytes]) -> None:
        warm_arrays.dump(handle, meta, arrays)

    return warm_cache.write_file(folder, warm_cache.TABLE, dump)


def stale(store: Handle, index: DenseIndex) -> bool:
    """Whether the file beside ``store`` is missing, of another state of the
    palace, or more than ``warm_cache.RESAVE_ROWS`` rows behind ``index``:
    worth saving again (``save``)."""
    folder = warm_cache.folder_of(store)
    if folder is None:
        return False
    found = warm_cache.read_file(folder, warm_cache.TABLE)
    if found is None:
        return True
    meta = found[0]
    rows = meta.get("rows")
    return (
        meta.get("format") != warm_cache.FORMAT
        or meta.get("model") != index.model
        or meta.get("epoch") != index.epoch
        or meta.get("vectors") != index.vectors
        or not isinstance(rows, int)
        or len(index) - rows >= warm_cache.RESAVE_ROWS
    )


def save_when_stale(store: Handle, index: DenseIndex) -> bool:
    """``save`` where the file is ``stale``; False when it was not written."""
    return stale(store, index) and save(store, index)


def load(store: TableStore, model: str, *, epoch: int, vectors: int) -> VectorTable | None:
    """The palace's rows as ``store.load_vectors(model, floats=False)``
    reads them, the saved ones from the file beside ``store``: None where no
    file is of the palace as it is now (``epoch``, ``vectors``: the store's
    counters, read before this)."""
    folder = warm_cache.folder_of(store)
    found = warm_cache.read_file(folder, warm_cache.TABLE) if folder is not None else None
    if found is None:
        return None
    meta, arrays = found
    rows, last_seq = meta.get("rows"), meta.get("last_seq")
    if (
        meta.get("format") != warm_cache.FORMAT
        or meta.get("kind") != _KIND
        or meta.get("model") != model
        or meta.get("epoch") != epoch
        or meta.get("vectors") != vectors
        or not isinstance(rows, int)
        or not isinstance(last_seq, int)
        or not isinstance(meta.get("flags"), int)
        or rows <= 0
    ):
        return None
    try:
        saved = _table(meta, arrays, rows)
    except (KeyError, TypeError, ValueError, UnicodeDecodeError):
        return None
    # The last saved row and every row after it: the first must be the
    # same row still (else the palace was replaced, or that row is gone).
    since = store.load_vectors(model, after_seq=last_seq - 1, floats=False)
    if (
        int(saved.seq[-1]) != last_seq
        or not len(since)
        or int(since.seq[0]) != last_seq
        or str(since.ids[0]) != meta.get("last_id")
        or str(saved.ids[-1]) != meta.get("last_id")
    ):
        return None
    table = saved.extend(since.take(np.arange(1, len(since), dtype=np.int64)))
    return table.with_flags(store.flag_changes(int(meta["flags"])))


def _table(meta: dict[str, Any], arrays: dict[str, npt.NDArray[Any]], rows: int) -> VectorTable:
    """The saved rows; mapped arrays are used in place (their pages shared
    with every process that opens the palace), flags copied (``with_flags``
    copies what it changes anyway, and a byte is not a bool).

    Raises:
        ValueError: an array of another length, type or range than a
            table's (``KeyError``, ``TypeError``: one missing or misnamed).
    """
    columns: dict[str, Any] = {
        "ids": np.array(warm_cache.unpack(arrays["ids"], rows), dtype=object),
        "matrix": np.empty((rows, 0), dtype=np.float32),
    }
    counts = meta["names"]
    for column in CODED_COLUMNS:
        names = tuple(warm_cache.unpack(arrays[f"{column}_names"], int(counts[column])))
        codes = arrays[column]
        if codes.dtype != np.int32 or codes.shape != (rows,):
            raise ValueError(f"{column}: {codes.dtype} x {codes.shape}")
        if rows and (int(codes.min()) < 0 or int(codes.max()) >= len(names)):
            raise ValueError(f"{column}: a code outside its names")
        columns[column], columns[f"{column}_names"] = codes, names
    for column in _FLAGS:
        flags = arrays[column]
        if flags.dtype != np.uint8 or flags.shape != (rows,):
            raise ValueError(f"{column}: {flags.dtype} x {flags.shape}")
        columns[column] = flags.astype(bool)
    for column, kind in _NUMBERS.items():
        values = arrays[column]
        if values.dtype != kind or values.shape != (rows,):
            raise ValueError(f"{column}: {values.dtype} x {values.shape}")
        columns[column] = values
    if rows > 1 and not bool(np.all(np.diff(columns["seq"]) > 0)):
        raise ValueError("the rows are not in write order")
    return VectorTable(**columns)
