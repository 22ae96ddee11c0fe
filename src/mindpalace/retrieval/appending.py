"""Arrays that grow at their end, for the versions of a warm index.

Each write a recall has not seen yet makes a new version of the warm
``DenseIndex`` (``DenseIndex.extended``), while a recall running in another
thread may still read the version before: that one must answer as it did.
Copying every column for every version made a write's first recall cost
what the palace holds (25 ms at 100,000 memories). Here a column keeps a
buffer with spare room; a new version writes its rows past the end of the
version it extends and holds a view of its own prefix, so older versions
see the same values they always saw, and an append costs what its rows
cost (amortised: the buffer grows by half when full, which copies it once).

A column is written in place only by the version whose view is the
buffer's latest (``Growable.view``): a second version made from the same
older one (or one whose array was replaced, as ``DenseIndex.reflagged``
replaces the flags) copies its prefix into a buffer of its own instead.
The first load of a palace keeps its arrays exact-size (perhaps mapped
from a warm file, never written): spare room comes with the first append.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from mindpalace.store.vector_rows import CODED_COLUMNS, PLAIN_COLUMNS, VectorTable, recoded

__all__ = ["Growable", "RowsOf", "TableRoom", "appended"]


class Growable:
    """A buffer whose first rows are shared by views of several lengths.

    ``view`` is the longest prefix written so far: whoever holds it may
    append (``append``); any other prefix of the buffer is left as it is.
    """

    __slots__ = ("_buffer", "view")

    def __init__(self, array: npt.NDArray[Any]) -> None:
        self._buffer = array
        self.view = array

    def append(self, current: npt.NDArray[Any], more: npt.NDArray[Any]) -> tuple[Growable, Any]:
        """``current`` followed by ``more``, and the growable that holds it:
        this one, written past ``current`` when ``current`` is its latest
        view; else a new one, ``current`` copied into it."""
        count, extra = current.shape[0], more.shape[0]
        owner = self if current is self.view else Growable(current)
        buffer = owner._buffer
        if owner is not self or count + extra > buffer.shape[0] or not buffer.flags.writeable:
            room = count + extra
            room += room // 2 + 64
            grown = np.empty((room, *current.shape[1:]), dtype=current.dtype)
            grown[:count] = current
            owner._buffer = buffer = grown
        buffer[count : count + extra] = more
        owner.view = buffer[: count + extra]
        return owner, owner.view


class RowsOf:
    """Memory id -> row, shared by the versions of an index: each new
    version adds its rows' ids, and a version reads only rows below its
    length (``get``)."""

    __slots__ = ("_rows", "filled")

    def __init__(self, rows: dict[str, int], filled: int) -> None:
        self._rows = rows
        #: rows the mapping covers (0 .. filled-1)
        self.filled = filled

    @classmethod
    def of(cls, ids: npt.NDArray[np.object_]) -> RowsOf:
        """The rows of ``ids`` (in row order)."""
        # Ids are str already: one dict over the list, no call per row (a
        # million rows: 0.66 s as a comprehension of str(id), a sixth of a
        # worker's first recall).
        return cls(dict(zip(ids.tolist(), range(len(ids)), strict=True)), len(ids))

    def get(self, memory_id: str, length: int) -> int | None:
        """The row of ``memory_id`` in a version of ``length`` rows."""
        row = self._rows.get(memory_id)
        return row if row is not None and row < length else None

    def extended(self, length: int, ids: npt.NDArray[np.object_]) -> RowsOf:
        """The mapping of a version of ``length`` rows with ``ids`` after
        them: this one, grown, when it covers exactly those rows; else a
        copy of what the version sees (a second version of the same rows)."""
        owner = self
        if self.filled != length:
            owner = RowsOf({k: v for k, v in self._rows.items() if v < length}, length)
        for offset, memory_id in enumerate(ids.tolist()):
            owner._rows[str(memory_id)] = length + offset
        owner.filled = length + len(ids)
        return owner


@dataclass(slots=True)
class _Coded:
    """A coded column's growable codes, and name -> code for ``names``."""

    codes: Growable
    names: tuple[str, ...]
    number: dict[str, int]


@dataclass(slots=True)
class TableRoom:
    """The growable columns of a ``VectorTable`` (``appended``)."""

    plain: dict[str, Growable] = field(default_factory=dict)
    coded: dict[str, _Coded] = field(default_factory=dict)


def appended(
    table: VectorTable, more: VectorTable, room: TableRoom | None
) -> tuple[VectorTable, TableRoom]:
    """``table`` with ``more``'s rows after its own (``VectorTable.extend``:
    the same columns, codes and names), written into ``room``'s buffers
    past ``table``'s rows, and the room that holds it. ``more``'s texts
    are dropped; a matrix without columns (vectors kept compact) stays so."""
    if room is None:
        room = TableRoom()
    mine, theirs = table.matrix.shape[1], more.matrix.shape[1]
    if mine != theirs:  # rows loaded without the model's width, or two models
        raise ValueError(f"vectors of {mine} and {theirs} dimensions in one table")
    merged: dict[str, Any] = {}
    for column in CODED_COLUMNS:
        merged[column], merged[f"{column}_names"] = _append_coded(table, more, room, column)
    for column in PLAIN_COLUMNS:
        current, extra = getattr(table, column), getattr(more, column)
        if column == "matrix" and mine == 0:
            merged[column] = np.empty((len(table) + len(more), 0), dtype=np.float32)
            continue
        grow = room.plain.get(column) or Growable(current)
        room.plain[column], merged[column] = grow.append(current, extra)
    return VectorTable(**merged), room


def _append_coded(
    table: VectorTable, more: VectorTable, room: TableRoom, column: str
) -> tuple[npt.NDArray[np.int32], tuple[str, ...]]:
    """A coded column's codes and names with ``more``'s rows appended
    (theirs re-mapped into ``table``'s names, new names after them)."""
    current: npt.NDArray[np.int32] = getattr(table, column)
    names: tuple[str, ...] = getattr(table, f"{column}_names")
    coded = room.coded.get(column)
    if coded is None or coded.codes.view is not current or coded.names is not names:
        # A first append, or a second version of these rows: name -> code
        # made afresh (the codes are copied by ``Growable.append``).
        coded = _Coded(coded.codes if coded else Growable(current), names, _numbers(names))
    codes, names = recoded(names, coded.number, more, column)
    grown, view = coded.codes.append(current, codes)
    room.coded[column] = _Coded(grown, names, coded.number)
    return view, names


def _numbers(names: tuple[str, ...]) -> dict[str, int]:
    return {name: code for code, name in enumerate(names)}
