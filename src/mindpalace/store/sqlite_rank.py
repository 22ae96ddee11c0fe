"""The exact best rows of a several-word keyword search over SQLite's
partitioned index, without scoring every row its common words hold.

A search's score of a row is the sum, over the query's words in order, of
each word's BM25 under the caller's scope (``fts5_bm25.bm25_term``: the
float ``KeywordIndex.scores`` gives). FTS5 matches one word of one
partition at a time (a "list"); ``sqlite_text.py`` reads a list's rows with
FTS5's scores and scores them again under the scope. Which lists are read
is the MaxScore strategy (Turtle and Flood, "Query evaluation: strategies
and optimizations", 1995), as the warm index's ``keyword_top.py``:

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
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from mindpalace.store.fts5_bm25 import (
    K1,
    bm25_term,
    fts5_idf,
    index_lengths,
    most_after_rescoring,
    term_frequency,
)

__all__ = [
    "COLUMN_WEIGHTS",
    "Found",
    "IndexFigures",
    "PhraseList",
    "Scoring",
    "counted",
    "floor_of",
    "most_of",
    "ranked",
    "rarest_first",
    "to_count",
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

    def rescore(self, score: float, length: int, index: IndexFigures) -> float:
        """FTS5's ``score`` of a row of ``length`` tokens, under these figures."""
        return self.score(term_frequency(score, index.idf, length, index.avgdl), length)

    def score(self, tf: float, length: int) -> float:
        """A row's score for a weighted count ``tf`` and ``length`` tokens."""
        return bm25_term(self.idf, tf, length, self.avgdl)

    def most(self, score: float, index: IndexFigures) -> float:
        """The best ``rescore`` of any row FTS5 scored ``score`` or less."""
        return most_after_rescoring(score, index.idf, self.idf, index.avgdl / self.avgdl)

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


@dataclass(slots=True)
class Found:
    """A row some list read: its partition, time, id, whether it passes the
    scope and filters, its length in tokens, and its score for each word
    known so far (by the word's place)."""

    part: int
    created: float
    memory_id: str
    admitted: bool
    length: int
    scores: dict[int, float] = field(default_factory=dict)

    def total(self) -> float:
        """The sum of the known scores in the query's order (as
        ``KeywordIndex.scores`` adds them, so the same float)."""
        out = 0.0
        for word in sorted(self.scores):
            out += self.scores[word]
        return out


def floor_of(rows: Iterable[Found], limit: int) -> float:
    """The ``limit``-th best partial score of the admitted rows (minus
    infinity when fewer are admitted: every row stays)."""
    partial = sorted((row.total() for row in rows if row.admitted), reverse=True)
    return partial[limit - 1] if len(partial) >= limit else float("-inf")


def rarest_first(scorings: Mapping[int, Scoring]) -> list[int]:
    """The query's words (by place) with matches, highest ceiling first
    (the query's order among equals)."""
    return sorted(scorings, key=lambda word: -scorings[word].ceiling())


def most_of(scorings: Mapping[int, Scoring], words: Iterable[int]) -> float:
    """The most ``words`` can add to a row's score together."""
    return sum(scorings[word].ceiling() for word in words)


def to_count(
    rows: Mapping[int, Found], scorings: Mapping[int, Scoring], left: Sequence[int], limit: int
) -> tuple[dict[tuple[int, int], list[int]], set[int]]:
    """For each word ``left`` (not read) and partition, the admitted rows
    whose count of it is still needed; and the rows dropped (their partial
    score and the ceilings of ``left`` stay under the floor: not among the
    best)."""
    needed: dict[tuple[int, int], list[int]] = defaultdict(list)
    dropped: set[int] = set()
    if not left:
        return needed, dropped
    floor = floor_of(rows.values(), limit)
    most = most_of(scorings, left)
    for seq, row in rows.items():
        if not row.admitted:
            continue
        if row.total() + most < floor:
            dropped.add(seq)
            continue
        for word in left:
            needed[(word, row.part)].append(seq)
    return needed, dropped


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


def ranked(rows: Mapping[int, Found], dropped: set[int]) -> list[Found]:
    """The admitted rows left, best first, then newest, then id descending
    (the order of the SQL searches)."""
    kept = [row for seq, row in rows.items() if row.admitted and seq not in dropped]
    kept.sort(key=lambda row: row.memory_id, reverse=True)
    kept.sort(key=lambda row: (-row.total(), -row.created))
    return kept
