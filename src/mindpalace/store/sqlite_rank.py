"""The exact best rows of a several-word keyword search over SQLite's
partitioned index, without scoring every row its common words hold.

A search's score of a row is the sum, over the query's words in order, of
each word's BM25 under the caller's scope (``fts5_bm25.bm25_term``: the
float ``KeywordIndex.scores`` gives). FTS5 matches one word of one
partition at a time (a "list"); ``sqlite_text.py`` reads a list's rows with
FTS5's scores and scores them again under the scope (``rescored``). Which
lists are read is the MaxScore strategy (Turtle and Flood, "Query
evaluation: strategies and optimizations", 1995), as the warm index's
``keyword_top.py``:

1. A word adds at most ``idf * (k1 + 1)`` to any row's score (BM25's
   ceiling, whatever the count and length). Words are taken rarest (highest
   ceiling) first, every list of each read in full; the rows read have
   partial scores (the words taken), and the ``limit``-th best partial
   score of those that pass the scope and filters is a floor.
2. Once the ceilings of the words not taken sum to less than the floor, a
   row none of the taken words holds scores less than ``limit`` rows
   already do: it can be neither among the best nor tied with the last.
3. A row read whose partial score and the words left's ceilings sum to
   less than the floor is dropped the same way; the others' counts of the
   words left are read at those rows alone (``counted``: the index's own
   token positions), so every score kept is whole.

Rows are numpy arrays: a common word's list holds tens of thousands.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from mindpalace.store.fts5_bm25 import (
    K1,
    Floats,
    Ints,
    bm25_term,
    fts5_idf,
    index_lengths,
    term_frequency,
)

__all__ = [
    "COLUMN_WEIGHTS",
    "IndexFigures",
    "PhraseList",
    "Read",
    "Scoring",
    "counted",
    "most_of",
    "rarest_first",
]

#: bm25() column weights: title, content, context, tags (as the index's
#: columns). Context (the turn before a conversation message) helps find a
#: memory but counts less than the memory's own words.
COLUMN_WEIGHTS = {"title": 1.5, "content": 1.0, "context": 0.5, "tags": 1.0}
#: a bound's relative slack for the rounding of the scores it bounds
_SLACK = 1e-9


@dataclass(frozen=True, slots=True)
class IndexFigures:
    """What FTS5 scored one phrase with: its idf and the index's mean length."""

    idf: float
    avgdl: float

    @classmethod
    def of(cls, averages: bytes | None, *, phrase_hits: int) -> IndexFigures:
        rows, avgdl = index_lengths(averages)
        return cls(fts5_idf(rows, phrase_hits), avgdl)


@dataclass(frozen=True, slots=True)
class Scoring:
    """A word's figures over the scope: its idf and the rows' mean length."""

    idf: float
    avgdl: float

    def scores(self, tf: Floats, lengths: Ints) -> Floats:
        """Rows' scores for weighted counts ``tf`` and ``lengths`` in tokens."""
        return bm25_term(self.idf, tf, lengths, self.avgdl)

    def rescored(self, scores: Floats, lengths: Ints, index: IndexFigures) -> Floats:
        """FTS5's ``scores`` of rows of ``lengths`` tokens, under these
        figures: each solved for its weighted count, then scored."""
        return self.scores(term_frequency(scores, index.idf, lengths, index.avgdl), lengths)

    def ceiling(self) -> float:
        """The most any row can score: ``idf * (k1 + 1)``, a hair above for
        the rounding of the scores it bounds."""
        return self.idf * (K1 + 1.0) * (1.0 + _SLACK)


@dataclass(frozen=True, slots=True)
class PhraseList:
    """One query word's matches in one partition: the word's place in the
    query, the partition's place in the scope's, its FTS5 phrase and that
    phrase's index terms (the partition's key before each token), and how
    many rows hold it."""

    word: int
    part: int
    phrase: str
    tokens: tuple[str, ...]
    hits: int


class Read:
    """The rows the lists read so far hold: for each, its key (``seq``),
    partition and length, its partial score (the words read, added in the
    order they were read: a bound's figure), and each word's scores, kept
    for ``totals``."""

    def __init__(self, words: int) -> None:
        self.words = words
        self._at: dict[int, int] = {}
        self._seqs: list[int] = []
        self._parts: list[int] = []
        self._lengths: list[int] = []
        self._partial: Floats = np.zeros(1024, dtype=np.float64)
        self._entries: list[tuple[int, Ints, Floats]] = []

    def __len__(self) -> int:
        return len(self._seqs)

    def add(self, word: int, part: int, seqs: Ints, lengths: Ints, scores: Floats) -> None:
        """One list's rows (each once) and their scores for ``word``."""
        places = np.empty(len(seqs), dtype=np.int64)
        at = self._at
        for i, (seq, length) in enumerate(zip(seqs.tolist(), lengths.tolist(), strict=True)):
            place = at.get(seq)
            if place is None:
                place = at[seq] = len(self._seqs)
                self._seqs.append(seq)
                self._parts.append(part)
                self._lengths.append(length)
            places[i] = place
        if len(self._seqs) > len(self._partial):
            grown = np.zeros(max(len(self._seqs), 2 * len(self._partial)), dtype=np.float64)
            grown[: len(self._partial)] = self._partial
            self._partial = grown
        self._partial[places] += scores
        self._entries.append((word, places, scores))

    def places(self, seqs: Sequence[int]) -> Ints:
        """Where rows ``seqs`` (all read) are kept."""
        return np.fromiter((self._at[s] for s in seqs), dtype=np.int64, count=len(seqs))

    def seqs(self) -> Ints:
        return np.asarray(self._seqs, dtype=np.int64)

    def parts(self) -> Ints:
        return np.asarray(self._parts, dtype=np.int64)

    def lengths(self) -> Ints:
        return np.asarray(self._lengths, dtype=np.int64)

    def partial(self) -> Floats:
        """Each row's score for the words read so far."""
        return self._partial[: len(self._seqs)]

    def totals(self) -> Floats:
        """Each row's score: its words' scores added in the query's order
        (as ``KeywordIndex.scores`` adds them, so the same floats)."""
        matrix = np.zeros((len(self._seqs), self.words), dtype=np.float64)
        for word, places, scores in self._entries:
            matrix[places, word] = scores
        out = np.zeros(len(self._seqs), dtype=np.float64)
        for word in range(self.words):
            out += matrix[:, word]
        return out


def rarest_first(scorings: Mapping[int, Scoring]) -> list[int]:
    """The query's words (by place) with matches, highest ceiling first
    (the query's order among equals)."""
    return sorted(scorings, key=lambda word: -scorings[word].ceiling())


def most_of(scorings: Mapping[int, Scoring], words: Iterable[int]) -> float:
    """The most ``words`` can add to a row's score together."""
    return sum(scorings[word].ceiling() for word in words)


def counted(
    positions: Sequence[Sequence[tuple[int, str, int]]],
) -> dict[int, float]:
    """Each row's weighted count of a phrase, from its tokens' positions
    (row, column, offset), one sequence per token in the phrase's order: a
    match is the first token at an offset with each next one after it."""
    if not positions:
        return {}
    later = [set(found) for found in positions[1:]]
    out: dict[int, float] = defaultdict(float)
    for row, column, offset in positions[0]:
        if all((row, column, offset + n + 1) in found for n, found in enumerate(later)):
            out[row] += COLUMN_WEIGHTS[column]
    return dict(out)
