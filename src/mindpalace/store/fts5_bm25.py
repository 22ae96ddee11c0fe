"""FTS5's ``bm25()`` re-scored with another mean length, as small pure functions.

FTS5 (``fts5_aux.c``, ``fts5Bm25Function``) scores a row ``d`` for one
phrase ``p`` as

    idf(p) * F * (k1 + 1) / (F + k1 * (1 - b + b * D / avgdl))

with ``F`` the column-weighted count of ``p`` in ``d``, ``D`` the row's
tokens over every column (``xColumnSize(-1)``: the ``_docsize`` shadow
table, one varint per column), ``avgdl`` the index's tokens over its rows
(``xColumnTotalSize(-1) / xRowCount``: the ``_data`` record of id 1, a
varint of rows then one of tokens per column), k1 = 1.2, b = 0.75.

A scoped search needs the same score with the idf and the mean length of
the rows the caller may see (``retrieval/keyword.py`` computes it so over
its postings). Given FTS5's score, ``idf`` and ``D``, the formula is solved
for ``F``; column weights are multiples of 0.5 (1.5, 1.0, 0.5, 1.0), so
``F`` is rounded to one, which makes it exact however the score was
rounded, and the row is scored again with the scope's figures.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

__all__ = [
    "K1",
    "B",
    "Floats",
    "Ints",
    "bm25_term",
    "fts5_idf",
    "index_lengths",
    "term_frequency",
    "tokens_each",
    "tokens_in",
    "varints",
]

K1 = 1.2
B = 0.75
# Every column weight is a multiple of this, so every F is.
_WEIGHT_STEP = 0.5


def fts5_idf(total: int, hits: int) -> float:
    """FTS5's idf (``fts5Bm25Function``): ln((N - n + 0.5) / (n + 0.5)),
    floored at 1e-6."""
    idf = math.log(max(total - hits + 0.5, 1e-9) / (hits + 0.5)) if total else 0.0
    return idf if idf > 0 else 1e-6


def varints(blob: bytes) -> list[int]:
    """SQLite's varints (``sqlite3Fts5GetVarint``): seven bits a byte, most
    significant first, high bit set while more follow; a ninth byte keeps
    all eight bits."""
    out: list[int] = []
    value = used = 0
    for byte in blob:
        if used == 8:
            out.append((value << 8) | byte)
            value = used = 0
            continue
        value = (value << 7) | (byte & 0x7F)
        used += 1
        if byte < 0x80:
            out.append(value)
            value = used = 0
    return out


def tokens_in(blobs: list[bytes]) -> int:
    """The sum of every varint in ``blobs`` (``_docsize`` rows: their
    tokens), vectorised: a scope may hold a million rows. Token counts stay
    far below 2**56, so no varint has a ninth byte."""
    data = np.frombuffer(b"".join(blobs), dtype=np.uint8)
    if not data.size:
        return 0
    ends = np.flatnonzero(data < 0x80)
    # Each byte's place in its varint: seven bits for every byte after it.
    after = ends[np.searchsorted(ends, np.arange(data.size))] - np.arange(data.size)
    return int(np.sum((data & 0x7F).astype(np.int64) << (7 * after).astype(np.int64)))


Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]


def tokens_each(blobs: list[bytes]) -> Ints:
    """``tokens_in`` of each of ``blobs`` (one ``_docsize`` row each, none
    empty), vectorised."""
    sizes = np.fromiter((len(blob) for blob in blobs), dtype=np.int64, count=len(blobs))
    data = np.frombuffer(b"".join(blobs), dtype=np.uint8)
    if not data.size:
        return np.zeros(len(blobs), dtype=np.int64)
    ends = np.flatnonzero(data < 0x80)
    places = np.arange(data.size)
    after = ends[np.searchsorted(ends, places)] - places
    values = (data & 0x7F).astype(np.int64) << (7 * after).astype(np.int64)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    return np.add.reduceat(values, starts).astype(np.int64)


def index_lengths(averages: bytes | None) -> tuple[int, float]:
    """(rows, mean tokens a row) of an FTS5 index, from its averages record
    (none before the index's first commit: no rows)."""
    rows, *columns = varints(averages or b"") or [0]
    return rows, (sum(columns) / rows if rows else 1.0)


def term_frequency(score: Floats, idf: float, length: Ints, avgdl: float) -> Floats:
    """``F`` of each row FTS5 scored ``score`` for one phrase (``-bm25()``),
    given the phrase's ``idf`` and the row's ``length`` over the index's
    ``avgdl``: ``F = r * norm / (k1 + 1 - r)``, ``r = score / idf`` (arrays,
    or one row's numbers)."""
    ratio = score / idf
    norm = K1 * (1 - B + B * length / avgdl)
    raw = ratio * norm / np.maximum(K1 + 1.0 - ratio, 1e-12)
    out: Floats = np.maximum(np.round(raw / _WEIGHT_STEP) * _WEIGHT_STEP, _WEIGHT_STEP)
    return out


def bm25_term(idf: float, tf: Floats, length: Ints, avgdl: float) -> Floats:
    """One phrase's BM25 for each row, written as ``KeywordIndex.scores``
    does (the same operations in the same order give the same floats)."""
    base, per_token = K1 * (1.0 - B), K1 * B / avgdl
    out: Floats = idf * tf * (K1 + 1.0) / (tf + (base + per_token * length))
    return out
