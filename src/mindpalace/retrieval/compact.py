"""A large palace's vectors held compactly: int8 codes to scan, exact floats
to re-score.

Each vector ``x`` (a row of float32) is kept as int8 codes ``c`` and one
scale per row, ``s = max|x_j| / 127``, with ``c_j = round(x_j / s)``. A
query's cosine to every row is then estimated from the codes, a quarter of
the bytes of the floats::

    approx(x) = s * (c . q)

and, since each ``|x_j - s c_j| <= s / 2``, the estimate is never further
from the exact cosine than ``bound(x) = s / 2 * ||q||_1`` (plus float
rounding). Dense search ranks by the estimate and re-scores exactly, from
the float rows, every row the bound says could be in the exact top
``window`` (``shortlist``) or be the exact lowest (``lowest``): the rows,
their order and the lowest cosine are those of an exact search.

A scale per row (not per dimension) makes the bound one number per row
and lets rows be appended without re-quantising the others; measured on
35,000 real chat turns (static model, 256-d), its mean error is 0.00078
against 0.00073 for a scale per dimension, and the codes alone put 9.5 of
the exact top 10 in their top 10 (9.7) (docs/benchmarks/03-speed.md).

The rows are held in parts: the first may be memory-mapped from the warm
file beside the palace (``warm_cache.py``: every process on a host shares
its pages, and floats are read only for the rows re-scored); rows written
since are a part in memory, appended to as more are written.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mindpalace.retrieval.appending import Growable

__all__ = ["CompactVectors", "Part", "lowest", "shortlist"]

Floats = npt.NDArray[np.float32]
Codes = npt.NDArray[np.int8]
Rows = npt.NDArray[np.int64]

#: rows scanned at a time: codes widened to float32 a block at a time stay
#: in cache (a whole-matrix conversion was 3x slower than float32 itself)
BLOCK_ROWS = 2_048
#: float rounding of two 384-term sums, far below any code's error
_SLACK = 1e-5


@dataclass(frozen=True, slots=True)
class Part:
    """A run of rows: their float vectors, int8 codes and per-row scales."""

    floats: Floats
    codes: Codes
    scales: Floats

    @classmethod
    def of(cls, floats: Floats) -> Part:
        """Quantise ``floats`` (one vector a row; a zero row gets codes 0)."""
        floats = np.asarray(floats, dtype=np.float32)
        top = np.abs(floats).max(axis=1) if floats.shape[1] else np.zeros(floats.shape[0])
        scales = (top / 127.0).astype(np.float32)
        safe = np.where(scales > 0, scales, np.float32(1.0))
        codes = np.clip(np.rint(floats / safe[:, None]), -127, 127).astype(np.int8)
        return cls(floats, codes, scales)

    def __len__(self) -> int:
        return int(self.codes.shape[0])


class CompactVectors:
    """Vectors of an index's rows, in parts (see the module docstring)."""

    __slots__ = ("_offsets", "_room", "dimensions", "parts")

    def __init__(self, parts: tuple[Part, ...], dimensions: int) -> None:
        self.parts = tuple(p for p in parts if len(p))
        self.dimensions = dimensions
        self._offsets = np.cumsum([0, *(len(p) for p in self.parts)]).astype(np.int64)
        # the growable arrays of the last part, once rows were appended to it
        self._room: tuple[Growable, Growable, Growable] | None = None

    @classmethod
    def of(cls, floats: Floats) -> CompactVectors:
        """One part in memory, from ``floats``."""
        return cls((Part.of(floats),), int(floats.shape[1]))

    def __len__(self) -> int:
        return int(self._offsets[-1])

    def extended(self, floats: Floats) -> CompactVectors:
        """These rows and ``floats`` after them. The first part (perhaps
        mapped) is kept as it is; later rows join one part in memory."""
        if floats.shape[0] == 0:
            return self
        new = Part.of(floats)
        # The tail's arrays grow in place past this version's rows (an
        # older version keeps its views of them: ``appending.py``).
        if len(self.parts) < 2:
            kept, tail = self.parts, Part(new.floats[:0], new.codes[:0], new.scales[:0])
        else:
            kept, tail = self.parts[:-1], self.parts[-1]
        room = self._room or (Growable(tail.floats), Growable(tail.codes), Growable(tail.scales))
        floats_room, floats = room[0].append(tail.floats, new.floats)
        codes_room, codes = room[1].append(tail.codes, new.codes)
        scales_room, scales = room[2].append(tail.scales, new.scales)
        grown = CompactVectors((*kept, Part(floats, codes, scales)), self.dimensions)
        grown._room = (floats_room, codes_room, scales_room)
        return grown

    def floats(self, rows: Rows) -> Floats:
        """The float vectors of ``rows`` (read from a mapped part only there)."""
        rows = np.asarray(rows, dtype=np.int64)
        out = np.empty((rows.shape[0], self.dimensions), dtype=np.float32)
        which = np.searchsorted(self._offsets, rows, side="right") - 1
        for i, part in enumerate(self.parts):
            here = np.flatnonzero(which == i)
            if here.shape[0]:
                out[here] = part.floats[rows[here] - self._offsets[i]]
        return out

    def all_floats(self) -> Floats:
        """Every row's float vector, in one array in memory (a copy)."""
        if not self.parts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        return np.concatenate([np.asarray(p.floats) for p in self.parts])

    def estimates(self, query: Floats) -> tuple[Floats, Floats]:
        """Every row's estimated cosine to ``query`` and its error bound."""
        query = np.asarray(query, dtype=np.float32)
        approx = np.empty(len(self), dtype=np.float32)
        scales = np.empty(len(self), dtype=np.float32)
        for i, part in enumerate(self.parts):
            lo = int(self._offsets[i])
            for start in range(0, len(part), BLOCK_ROWS):
                block = part.codes[start : start + BLOCK_ROWS]
                at = lo + start
                approx[at : at + block.shape[0]] = block.astype(np.float32) @ query
            scales[lo : lo + len(part)] = part.scales
        approx *= scales
        return approx, scales * np.float32(float(np.abs(query).sum()) / 2 + _SLACK)


def shortlist(approx: Floats, bound: Floats, window: int) -> Rows:
    """Positions (into ``approx``) of every entry that may be among the
    ``window`` best exact values: the ``window``-th best lower end
    (``approx - bound``) is a floor the exact ``window``-th best reaches,
    so an entry whose upper end is below it cannot be among them. Entries
    at -inf (not allowed) are never listed."""
    finite = np.isfinite(approx)
    count = int(np.count_nonzero(finite))
    if count <= window:
        return np.flatnonzero(finite).astype(np.int64)
    low_end = np.where(finite, approx - bound, -np.inf)
    at = low_end.shape[0] - window
    floor = float(np.partition(low_end, at)[at])
    return np.flatnonzero(finite & (approx + bound >= floor)).astype(np.int64)


def lowest(approx: Floats, bound: Floats) -> Rows:
    """Positions of every finite entry that may hold the lowest exact value."""
    finite = np.isfinite(approx)
    if not finite.any():
        return np.empty(0, dtype=np.int64)
    ceiling = float(np.min(np.where(finite, approx + bound, np.inf)))
    return np.flatnonzero(finite & (approx - bound <= ceiling)).astype(np.int64)
