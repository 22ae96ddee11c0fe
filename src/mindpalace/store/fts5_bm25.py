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
    "bm25_term",
    "fts5_idf",
    "index_lengths",
    "most_after_rescoring",
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


def tokens_each(blobs: list[bytes]) -> npt.NDArray[np.int64]:
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


def term_frequency(score: float, idf: float, length: float, avgdl: float) -> float:
    """``F`` of a row FTS5 scored ``score`` for one phrase (``-bm25()``),
    given the phrase's ``idf`` and the row's ``length`` over the index's
    ``avgdl``: ``F = r * norm / (k1 + 1 - r)``, ``r = score / idf``."""
    ratio = score / idf
    norm = K1 * (1 - B + B * length / avgdl)
    raw = ratio * norm / max(K1 + 1.0 - ratio, 1e-12)
    return max(round(raw / _WEIGHT_STEP) * _WEIGHT_STEP, _WEIGHT_STEP)


def bm25_term(idf: float, tf: float, length: float, avgdl: float) -> float:
    """One phrase's BM25 for a row, written as ``KeywordIndex.scores`` does
    (the same operations in the same order give the same float)."""
    base, per_token = K1 * (1.0 - B), K1 * B / avgdl
    return idf * tf * (K1 + 1.0) / (tf + (base + per_token * length))


def most_after_rescoring(score: float, idf: float, idf_scope: float, ratio: float) -> float:
    """The highest ``bm25_term`` under the scope's figures of any row FTS5
    scored at most ``score``, ``ratio`` being the index's mean length over
    the scope's.

    With r = score / idf and c = k1 (1 - b), eliminating D gives the
    re-scored r' = (k1 + 1) / ((1 - ratio) (1 + c / F) + ratio (k1 + 1) / r):
    where the scope's rows are shorter on average (ratio >= 1) it is at most
    r (reached as D goes to 0); where they are longer it grows with F
    toward (k1 + 1) / ((1 - ratio) + ratio (k1 + 1) / r). Both grow with r.
    """
    if score <= 0.0:
        return 0.0
    r = score / idf
    bound = r if ratio >= 1.0 else (K1 + 1.0) / ((1.0 - ratio) + ratio * (K1 + 1.0) / r)
    # A hair above: the rounding of the two scores must not let a row past.
    return idf_scope * bound * (1.0 + 1e-9)
