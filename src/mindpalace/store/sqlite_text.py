"""SQLite's scope-first keyword index: work in proportion to what the caller sees.

FTS5 ranks every match of a term before a scope can be applied, and its
``bm25()`` counts every match to compute idf, so over one index the time of
a search grows with the matches in other agents' private memories: a
timing oracle for their words (2.7 ms against 158 ms a request at 20,000
rows of another agent holding the word). Here a second FTS5 index holds the
same terms, each prefixed with a key of the row's scope partition (agent,
visibility, group, channel), so the term "falcon" of agent a's isolated
memories is a term of its own. A search enumerates the partitions the
caller may see (``memories_fts_parts``, scope clause applied), and counts
and ranks each one's term alone: nothing of another partition is read.

Scores are FTS5's BM25 with the scope's figures, as the warm index
(``retrieval/keyword.py``) computes them: idf and the mean length count the
rows the caller may see, so what other agents write or erase moves no score.
Each partition's ``bm25()`` is solved for the term's weighted count
(``fts5_bm25.py``) and scored again with the scope's idf and mean length;
row lengths are the index's own (the same tokens as the main index, one
for one). Where the scope sees every row, FTS5's single query answers.
"""

from __future__ import annotations

import hashlib
import heapq
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mindpalace.models import RecallFilters, Scope
from mindpalace.store import words
from mindpalace.store.base import TextMatch
from mindpalace.store.core import Cursor
from mindpalace.store.fragments import filter_clause, scope_clause
from mindpalace.store.fts5_bm25 import (
    bm25_term,
    index_lengths,
    most_after_rescoring,
    term_frequency,
    tokens_in,
    varints,
)
from mindpalace.store.scoped_text import ScopedTextSearch, ScopeFigures, fts5_idf

__all__ = [
    "PARTITIONED_TEXT_SCHEMA",
    "PARTITION_COUNTS_SCHEMA",
    "PartitionedTextSearch",
    "doc_tokens",
    "scoped_terms",
]

_COLUMNS = ("title", "content", "context", "tags")
_SCOPE = "agent_id, visibility, group_name, channel"


def partition_key(agent_id: str, visibility: str, group_name: str, channel: str) -> str:
    """The prefix of a scope partition's terms: 16 hex digits of a hash of
    its four scope columns (token characters for FTS5's ascii tokenizer)."""
    raw = "\x1f".join((agent_id, visibility, group_name or "", channel or ""))
    return hashlib.blake2b(raw.encode("utf-8"), digest_size=8).hexdigest()


def scoped_terms(
    agent_id: str, visibility: str, group_name: str, channel: str, text: str | None
) -> str:
    """``text`` as the partitioned index stores it: its FTS5 terms (porter
    unicode61 remove_diacritics 2, ``store/words.py``), in order, each
    prefixed with the partition's key (SQL function ``mp_scoped_terms``)."""
    if not text:
        return ""
    key = partition_key(agent_id, visibility, group_name, channel)
    return " ".join(key + term for term in words.terms(text))


def doc_tokens(size: bytes | None) -> int:
    """The tokens of one ``_docsize`` row (every column's; SQL function
    ``mp_doc_tokens``): 0 for none."""
    return tokens_in([bytes(size)]) if size else 0


def _row(prefix: str) -> str:
    return ", ".join(
        f"mp_scoped_terms({', '.join(f'{prefix}.{c}' for c in _SCOPE.split(', '))}, {prefix}.{col})"
        for col in _COLUMNS
    )


def _indexed(r: str) -> str:
    """Index row ``r``'s terms (a trigger's ``new``)."""
    return (
        f"INSERT INTO memories_fts_scoped (rowid, {', '.join(_COLUMNS)})"
        f" VALUES ({r}.seq, {_row(r)});"
    )


def _unindexed(r: str) -> str:
    """Take row ``r``'s terms out of the index (a trigger's ``old``)."""
    return (
        f"INSERT INTO memories_fts_scoped (memories_fts_scoped, rowid, {', '.join(_COLUMNS)})"
        f" VALUES ('delete', {r}.seq, {_row(r)});"
    )


# A contentless FTS5 table (the terms are computed, never shown) with the
# ascii tokenizer, which keeps each prefixed term whole; triggers keep it in
# the row's transaction. ``memories_fts_parts`` lists the partitions that
# ever held a row. Both names fall under ``memories_fts*``: derived, never
# copied by export or backup.
PARTITIONED_TEXT_SCHEMA = [
    f"""
    CREATE VIRTUAL TABLE memories_fts_scoped USING fts5(
        {", ".join(_COLUMNS)}, content = '', tokenize = 'ascii'
    )
    """,
    f"""
    CREATE TABLE memories_fts_parts (
        agent_id TEXT NOT NULL, visibility TEXT NOT NULL,
        group_name TEXT NOT NULL, channel TEXT NOT NULL,
        PRIMARY KEY ({_SCOPE})
    )
    """,
    f"""
    CREATE TRIGGER memories_fts_scoped_insert AFTER INSERT ON memories BEGIN
        {_indexed("new")}
        INSERT OR IGNORE INTO memories_fts_parts ({_SCOPE})
        VALUES (new.agent_id, new.visibility, new.group_name, new.channel);
    END
    """,
    f"""
    CREATE TRIGGER memories_fts_scoped_delete AFTER DELETE ON memories BEGIN
        {_unindexed("old")}
    END
    """,
    f"""
    CREATE TRIGGER memories_fts_scoped_update
    AFTER UPDATE OF {", ".join(_COLUMNS)}, {_SCOPE} ON memories BEGIN
        {_unindexed("old")}
        {_indexed("new")}
        INSERT OR IGNORE INTO memories_fts_parts ({_SCOPE})
        VALUES (new.agent_id, new.visibility, new.group_name, new.channel);
    END
    """,
    f"""
    INSERT INTO memories_fts_scoped (rowid, {", ".join(_COLUMNS)})
    SELECT m.seq, {_row("m")} FROM memories m
    """,
    f"INSERT OR IGNORE INTO memories_fts_parts ({_SCOPE}) SELECT DISTINCT {_SCOPE} FROM memories",
]

# Each partition's rows and their tokens (the partitioned index's own
# counts, read from its ``_docsize`` row: ``mp_doc_tokens``), kept by the
# triggers in the row's transaction, so a search's figures are sums over
# the caller's partitions instead of a scan of every row it sees (two
# seconds at a million). Replaces the triggers above, and counts what is
# there.
_DOC_TOKENS = "(SELECT mp_doc_tokens(sz) FROM memories_fts_scoped_docsize WHERE id = {r}.seq)"


def _same_part(row: str) -> str:
    """WHERE fragment: a ``memories_fts_parts`` row is ``row``'s partition."""
    return " AND ".join(f"memories_fts_parts.{c} = {row}.{c}" for c in _SCOPE.split(", "))


def _counted(r: str) -> str:
    """Add row ``r`` (``new``) to its partition's counts, after its terms."""
    return (
        f"INSERT INTO memories_fts_parts ({_SCOPE}, row_count, token_count)"
        f" VALUES ({r}.agent_id, {r}.visibility, {r}.group_name, {r}.channel, 1,"
        f" COALESCE({_DOC_TOKENS.format(r=r)}, 0))"
        f" ON CONFLICT ({_SCOPE}) DO UPDATE SET row_count = row_count + 1,"
        " token_count = token_count + excluded.token_count;"
    )


def _uncounted(r: str) -> str:
    """Take row ``r`` (``old``) from its partition's counts, before its terms go."""
    return (
        "UPDATE memories_fts_parts SET row_count = row_count - 1,"
        f" token_count = token_count - COALESCE({_DOC_TOKENS.format(r=r)}, 0)"
        f" WHERE {_same_part(r)};"
    )


PARTITION_COUNTS_SCHEMA = [
    "ALTER TABLE memories_fts_parts ADD COLUMN row_count INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE memories_fts_parts ADD COLUMN token_count INTEGER NOT NULL DEFAULT 0",
    "DROP TRIGGER memories_fts_scoped_insert",
    "DROP TRIGGER memories_fts_scoped_delete",
    "DROP TRIGGER memories_fts_scoped_update",
    f"""
    CREATE TRIGGER memories_fts_scoped_insert AFTER INSERT ON memories BEGIN
        {_indexed("new")}
        {_counted("new")}
    END
    """,
    f"""
    CREATE TRIGGER memories_fts_scoped_delete AFTER DELETE ON memories BEGIN
        {_uncounted("old")}
        {_unindexed("old")}
    END
    """,
    f"""
    CREATE TRIGGER memories_fts_scoped_update
    AFTER UPDATE OF {", ".join(_COLUMNS)}, {_SCOPE} ON memories BEGIN
        {_uncounted("old")}
        {_unindexed("old")}
        {_indexed("new")}
        {_counted("new")}
    END
    """,
    f"""
    UPDATE memories_fts_parts SET
        row_count = (SELECT COUNT(*) FROM memories m WHERE {_same_part("m")}),
        token_count = (
            SELECT COALESCE(SUM(mp_doc_tokens(d.sz)), 0) FROM memories m
            JOIN memories_fts_scoped_docsize d ON d.id = m.seq WHERE {_same_part("m")}
        )
    """,
]

# bm25() column weights, as the main index's (sqlite.py).
_WEIGHTS = "1.5, 1.0, 0.5, 1.0"


def _phrase(key: str, term: str) -> str | None:
    """The FTS5 phrase of ``term`` (one query word) in one partition."""
    found = words.terms(term)
    if not found:
        return None
    return '"' + " ".join(key + t for t in found) + '"'


class PartitionedTextSearch(ScopedTextSearch):
    """``search_text`` over the caller's partitions of ``memories_fts_scoped``."""

    # The first window of a phrase's best matches ranked by FTS5 (then
    # multiplied by 8 until it holds the answer): ``limit`` times this, or
    # at least ``_WINDOW_FLOOR``.
    _WINDOW_PER_HIT = 4
    _WINDOW_FLOOR = 256

    def search_text(
        self, terms: Sequence[str], scope: Scope, filters: RecallFilters, *, limit: int
    ) -> list[TextMatch]:
        """BM25 whose idf and mean length count the rows ``scope`` sees,
        reading only the partitions it sees (where it sees every row, FTS5's
        single query over the main index: the figures are the index's)."""
        if scope.unscoped or len(terms) < 1:
            return super().search_text(terms, scope, filters, limit=limit)
        with self._read() as cur:
            figures = self._scope_figures(cur, scope)
            if figures.seen < figures.total:
                scores, created = self._in_parts(cur, terms, scope, filters, figures, limit=limit)
        if figures.seen >= figures.total:
            return super().search_text(terms, scope, filters, limit=limit)
        # The SQL's order: best first, then newest, then id descending.
        ranked = sorted(scores, reverse=True)
        ranked.sort(key=lambda key: (-scores[key], -created[key]))
        found = self.get_many(ranked[:limit], scope)
        return [TextMatch(found[key], scores[key]) for key in ranked[:limit] if key in found]

    def _in_parts(
        self,
        cur: Cursor,
        terms: Sequence[str],
        scope: Scope,
        filters: RecallFilters,
        figures: ScopeFigures,
        *,
        limit: int,
    ) -> tuple[dict[str, float], dict[str, float]]:
        """Each term's best matches in the partitions ``scope`` sees, scored
        with its ``figures`` (rows, mean length), summed by memory id; and
        each one's time."""
        seen = figures.seen
        avgdl = figures.tokens / seen if figures.tokens > 0 else 1.0  # as ``KeywordIndex.scores``
        scores: dict[str, float] = {}
        created: dict[str, float] = {}
        keys = [partition_key(*part) for part in figures.parts]
        for term in terms:
            phrases = [p for p in (_phrase(k, term) for k in keys) if p is not None]
            counts = [(p, self._phrase_count(cur, p)) for p in phrases]
            scope_hits = sum(n for _, n in counts)
            if not scope_hits:
                continue
            # The figures were read before the counts, in statements of
            # their own: a write between them may have added matches since,
            # so never count fewer rows than hits.
            scoring = _Scoring(fts5_idf(max(seen, scope_hits), scope_hits), avgdl)
            for phrase, hits in counts:
                if not hits:
                    continue
                for score, at, memory_id in self._phrase_top(
                    cur,
                    phrase,
                    hits=hits,
                    scoring=scoring,
                    scope=scope,
                    filters=filters,
                    limit=limit,
                ):
                    scores[memory_id] = scores.get(memory_id, 0.0) + score
                    created[memory_id] = at
        return scores, created

    def _phrase_count(self, cur: Cursor, phrase: str) -> int:
        """Rows holding ``phrase`` (one partition's): its doclist alone is read."""
        row = self._exec(
            cur,
            "SELECT COUNT(*) FROM memories_fts_scoped WHERE memories_fts_scoped MATCH ?",
            [phrase],
        ).fetchone()
        return int(row[0])

    def _phrase_top(
        self,
        cur: Cursor,
        phrase: str,
        *,
        hits: int,
        scoring: _Scoring,
        scope: Scope,
        filters: RecallFilters,
        limit: int,
    ) -> list[tuple[float, float, str]]:
        """The ``limit`` best rows of one partition's ``phrase`` that pass
        ``filters`` under the scope's figures: (score, created_at, id), best
        first.

        FTS5 ranks the best ``window`` matches by its own score (the whole
        index's idf and mean length); they are joined to their rows and
        re-scored in that order. Re-scoring moves rows, but no further than
        ``most_after_rescoring`` allows: once the ``limit``-th best so far
        beats what any row FTS5 ranked lower could reach, the rest are
        never read. Where the window runs out first it grows (times 8)
        until that holds or it holds all ``hits``, so the answer is the
        one ranking every match would give, ties included.
        """
        if limit < 1:
            return []
        s_sql, s_params = scope_clause(scope)  # the partition's: kept as every read's
        f_sql, f_params = filter_clause(filters)
        passes = (f"({s_sql}) AND ({f_sql})", [*s_params, *f_params])
        window = max(limit * self._WINDOW_PER_HIT, self._WINDOW_FLOOR)
        while True:
            best, settled = self._window_top(
                cur, phrase, window=window, hits=hits, scoring=scoring, passes=passes, limit=limit
            )
            if settled or window >= hits:
                return sorted(best, reverse=True)
            window *= 8

    def _window_top(
        self,
        cur: Cursor,
        phrase: str,
        *,
        window: int,
        hits: int,
        scoring: _Scoring,
        passes: tuple[str, list[Any]],
        limit: int,
    ) -> tuple[list[tuple[float, float, str]], bool]:
        """The best ``limit`` rows of FTS5's best ``window`` for ``phrase``
        that ``passes`` (scope and filters), re-scored; and whether no match
        past those read could displace them. Rows that do not pass are read
        too: their FTS5 scores bound those of the rows after them."""
        rows = self._exec(
            cur,
            f"SELECT f.score, m.created_at, m.id, d.sz, {passes[0]},"
            " (SELECT block FROM memories_fts_scoped_data WHERE id = 1)"
            f" FROM (SELECT rowid AS seq, -bm25(memories_fts_scoped, {_WEIGHTS}) AS score"
            " FROM memories_fts_scoped WHERE memories_fts_scoped MATCH ?"
            " ORDER BY score DESC LIMIT ?) f"
            " JOIN memories m ON m.seq = f.seq"
            " JOIN memories_fts_scoped_docsize d ON d.id = f.seq"
            " ORDER BY f.score DESC",
            [*passes[1], phrase, window],
        )
        best: list[tuple[float, float, str]] = []  # a min-heap of the best ``limit``
        index: _IndexFigures | None = None
        for score, at, memory_id, size, admitted, averages in rows:
            if index is None:  # one statement, one snapshot: FTS5's own figures
                index = _IndexFigures.of(averages, phrase_hits=hits)
            if len(best) >= limit and scoring.most(score, index) < best[0][0]:
                return best, True
            if not admitted:
                continue
            found = (scoring.rescore(score, sum(varints(size)), index), float(at), str(memory_id))
            if len(best) < limit:
                heapq.heappush(best, found)
            elif found > best[0]:
                heapq.heapreplace(best, found)
        return best, False


@dataclass(frozen=True, slots=True)
class _IndexFigures:
    """What FTS5 scored one phrase with: its idf and the index's mean length."""

    idf: float
    avgdl: float

    @classmethod
    def of(cls, averages: bytes | None, *, phrase_hits: int) -> _IndexFigures:
        rows, avgdl = index_lengths(averages)
        return cls(fts5_idf(rows, phrase_hits), avgdl)


@dataclass(frozen=True, slots=True)
class _Scoring:
    """A term's figures over the scope: its idf and the rows' mean length."""

    idf: float
    avgdl: float

    def rescore(self, score: float, length: int, index: _IndexFigures) -> float:
        """FTS5's ``score`` of a row of ``length`` tokens, under these figures."""
        tf = term_frequency(score, index.idf, length, index.avgdl)
        return bm25_term(self.idf, tf, length, self.avgdl)

    def most(self, score: float, index: _IndexFigures) -> float:
        """The best ``rescore`` of any row FTS5 scored ``score`` or less."""
        return most_after_rescoring(score, index.idf, self.idf, index.avgdl / self.avgdl)
