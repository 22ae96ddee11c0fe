"""SQLite's scope-first keyword index: work in proportion to what the caller sees.

FTS5 ranks every match of a term before a scope can be applied, and its
``bm25()`` counts every match to compute idf, so over one index the time of
a search grows with the matches in other agents' private memories: a
timing oracle for their words (2.7 ms against 158 ms a request at 20,000
rows of another agent holding the word). Here the FTS5 index holds each
row's terms prefixed with a key of the row's scope partition (agent,
visibility, group, channel), so the term "falcon" of agent a's isolated
memories is a term of its own. A search enumerates the partitions the
caller may see (``memories_fts_parts``, scope clause applied), and counts
and ranks each one's term alone: nothing of another partition is read.

Scores are FTS5's BM25 with the scope's figures, as the warm index
(``retrieval/keyword.py``) computes them: idf and the mean length count the
rows the caller may see, so what other agents write or erase moves no score.
Each partition's ``bm25()`` is solved for the term's weighted count
(``fts5_bm25.py``) and scored again with the scope's idf and mean length;
row lengths are the index's own. Several words are ranked together
exactly, reading each word's best rows first (``sqlite_rank.py``). This is
the palace's one keyword index (schema 32 dropped the whole-palace one):
a caller seeing every partition reads each of them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from mindpalace.models import RecallFilters, Scope
from mindpalace.store import sqlite_rank as rank
from mindpalace.store import words
from mindpalace.store.base import TextMatch
from mindpalace.store.core import Cursor
from mindpalace.store.fragments import filter_clause, scope_clause
from mindpalace.store.fts5_bm25 import tokens_each, tokens_in
from mindpalace.store.scoped_text import ScopedTextSearch, ScopeFigures, fts5_idf

__all__ = [
    "ONE_TEXT_INDEX_SCHEMA",
    "PARTITIONED_TEXT_SCHEMA",
    "PARTITION_COUNTS_SCHEMA",
    "PartitionedTextSearch",
    "doc_tokens",
    "scoped_terms",
]

_COLUMNS = ("title", "content", "context", "tags")
# Words probed per statement (each probe carries the scope's parameters).
_PROBES = 50
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


@dataclass(slots=True)
class _Rows:
    """What a search knows of the rows it read: the scope and filters'
    condition over ``memories m`` and its parameters, and each row looked
    up (time, id, whether it passes)."""

    passes: str
    params: list[Any]
    known: dict[int, tuple[float, str, bool]] = field(default_factory=dict)


# bm25() column weights, in the index's column order; and a position's
# weight by its column's name (``memories_fts_positions``).
_WEIGHTS = ", ".join(str(rank.COLUMN_WEIGHTS[column]) for column in _COLUMNS)
_COLUMN_WEIGHT = (
    "CASE col "
    + " ".join(f"WHEN '{column}' THEN {rank.COLUMN_WEIGHTS[column]}" for column in _COLUMNS)
    + " END"
)

# The whole-palace FTS5 index (sqlite.py's ``memories_fts``) and its
# triggers dropped: every search reads the partitioned one. A search
# counts a word in the rows it may still rank through the index's own
# positions of that word (FTS5's ``instance`` vocabulary over it: nothing
# stored, read from the index).
ONE_TEXT_INDEX_SCHEMA = [
    "DROP TRIGGER memories_fts_insert",
    "DROP TRIGGER memories_fts_delete",
    "DROP TRIGGER memories_fts_update",
    "DROP TABLE memories_fts",
    "CREATE VIRTUAL TABLE memories_fts_positions USING fts5vocab(memories_fts_scoped, 'instance')",
]


def _admitted(parts: Sequence[tuple[str, str, str, str]], filters: RecallFilters) -> list[bool]:
    """Whether the filters' agents and visibilities admit each partition's
    rows (agent, visibility, group, channel): no row of another can pass
    them (a write's look for what it restates asks for its own agent's and
    visibility's)."""
    agents = set(filters.agents)
    visibilities = {v.value for v in filters.visibilities}
    return [
        (not agents or agent in agents) and (not visibilities or visibility in visibilities)
        for agent, visibility, _, _ in parts
    ]


def _phrase(key: str, tokens: Sequence[str]) -> str:
    """The FTS5 phrase of a word's index ``tokens`` in the partition whose
    key is ``key``."""
    return '"' + " ".join(key + token for token in tokens) + '"'


class PartitionedTextSearch(ScopedTextSearch):
    """``search_text`` over the caller's partitions of ``memories_fts_scoped``."""

    def search_text(
        self, terms: Sequence[str], scope: Scope, filters: RecallFilters, *, limit: int
    ) -> list[TextMatch]:
        """The ``limit`` best rows ``scope`` sees that pass ``filters``, by
        BM25 whose idf and mean length count the rows ``scope`` sees,
        reading only the partitions it sees (every one for the management
        view): the rows and scores of scoring every match
        (``sqlite_rank.py``). Where the scope sees the whole index and it
        is one partition, FTS5's figures are the scope's: its one query
        over every word answers."""
        if not terms or limit < 1:
            return []
        with self._read() as cur:
            figures = self._scope_figures(cur, scope)
            if len(figures.parts) == 1 and figures.seen >= figures.total:
                best = self._in_one(cur, terms, figures.parts[0], scope, filters, limit=limit)
            else:
                best = self._in_parts(cur, terms, scope, filters, figures, limit=limit)
        rows = self.get_many([memory_id for memory_id, _ in best], scope)
        return [TextMatch(rows[key], score) for key, score in best if key in rows]

    def _in_one(
        self,
        cur: Cursor,
        terms: Sequence[str],
        part: tuple[str, str, str, str],
        scope: Scope,
        filters: RecallFilters,
        *,
        limit: int,
    ) -> list[tuple[str, float]]:
        """The ``limit`` best (id, score) of FTS5's query of any of
        ``terms`` in the one partition ``part``, which ``scope`` sees whole."""
        key = partition_key(*part)
        phrases = [_phrase(key, tokens) for tokens in map(words.terms, terms) if tokens]
        if not phrases:
            return []
        s_sql, s_params = scope_clause(scope)
        f_sql, f_params = filter_clause(filters)
        rows = self._exec(
            cur,
            "SELECT m.id, f.score FROM (SELECT rowid AS seq,"
            f" -bm25(memories_fts_scoped, {_WEIGHTS}) AS score FROM memories_fts_scoped"
            " WHERE memories_fts_scoped MATCH ?) f JOIN memories m ON m.seq = f.seq"
            f" WHERE {s_sql} AND {f_sql}"
            " ORDER BY f.score DESC, m.created_at DESC, m.id DESC LIMIT ?",
            [" OR ".join(phrases), *s_params, *f_params, limit],
        ).fetchall()
        return [(str(memory_id), float(score)) for memory_id, score in rows]

    def _in_parts(
        self,
        cur: Cursor,
        terms: Sequence[str],
        scope: Scope,
        filters: RecallFilters,
        figures: ScopeFigures,
        *,
        limit: int,
    ) -> list[tuple[str, float]]:
        """The ``limit`` best (id, score) of the rows that pass the scope
        and ``filters`` (``sqlite_rank.py``): the rarer words' matches read
        in full until the words left could not lift an unread row to the
        best; those words then counted at the rows read that may still be."""
        lists, scorings = self._lists(cur, terms, figures, _admitted(figures.parts, filters))
        if not lists:
            return []
        s_sql, s_params = scope_clause(scope)  # the partition's: kept as every read's
        f_sql, f_params = filter_clause(filters)
        rows = _Rows(f"({s_sql}) AND ({f_sql})", [*s_params, *f_params])
        read = rank.Read(len(terms))
        left = rank.rarest_first(scorings)
        while left and self._floor(cur, read, rows, limit) <= rank.most_of(scorings, left):
            word = left.pop(0)
            for found in lists:
                if found.word == word:
                    self._read_list(cur, found, scorings[word], read)
        kept = np.arange(len(read), dtype=np.int64)
        if left:
            floor = self._floor(cur, read, rows, limit)
            kept = np.flatnonzero(read.partial() + rank.most_of(scorings, left) >= floor)
            self._count_left(cur, read, kept, [f for f in lists if f.word in left], scorings)
        return self._best(cur, read.seqs()[kept], read.totals()[kept], rows, limit)

    def _lists(
        self, cur: Cursor, terms: Sequence[str], figures: ScopeFigures, admitted: Sequence[bool]
    ) -> tuple[list[rank.PhraseList], dict[int, rank.Scoring]]:
        """Each word's matches in each partition ``scope`` sees that holds
        it and the filters admit (``admitted``, by partition), and each
        word's figures over the scope: a partition the filters leave out
        counts for the idf, but none of its rows is read."""
        seen = figures.seen
        avgdl = figures.tokens / seen if figures.tokens > 0 else 1.0  # as ``KeywordIndex.scores``
        keys = [partition_key(*part) for part in figures.parts]
        lists: list[rank.PhraseList] = []
        scorings: dict[int, rank.Scoring] = {}
        for word, term in enumerate(terms):
            tokens = words.terms(term)
            if not tokens:
                continue
            found = []
            for part, key in enumerate(keys):
                phrase = _phrase(key, tokens)
                hits = self._phrase_count(cur, phrase)
                if hits:
                    keyed = tuple(key + token for token in tokens)
                    found.append(rank.PhraseList(word, part, phrase, keyed, hits))
            scope_hits = sum(f.hits for f in found)
            # A word no admitted partition holds adds nothing to a row that
            # may be kept: neither read nor counted in the ceilings.
            found = [f for f in found if admitted[f.part]]
            if not found:
                continue
            # The figures were read before the counts, in statements of
            # their own: a write between them may have added matches since,
            # so never count fewer rows than hits.
            scorings[word] = rank.Scoring(fts5_idf(max(seen, scope_hits), scope_hits), avgdl)
            lists += found
        return lists, scorings

    def _present(
        self, cur: Cursor, terms: Sequence[str], scope: Scope, *, include_archived: bool
    ) -> frozenset[str]:
        """Which of ``terms`` some live (or any, with ``include_archived``)
        memory ``scope`` may see contains: per word, one ``LIMIT 1`` probe of
        its phrases in the partitions ``scope`` sees, the probes of up to
        ``_PROBES`` words in one statement."""
        keys = [partition_key(*part) for part in self._scope_figures(cur, scope).parts]
        s_sql, s_params = scope_clause(scope)
        live = "" if include_archived else " AND m.archived = 0"
        wanted = [(t, tokens) for t in dict.fromkeys(terms) if (tokens := words.terms(t))]
        found: set[str] = set()
        for start in range(0, len(wanted) if keys else 0, _PROBES):
            chunk = wanted[start : start + _PROBES]
            probes: list[str] = []
            params: list[object] = []
            for n, (_, tokens) in enumerate(chunk):
                match = " OR ".join(_phrase(key, tokens) for key in keys)
                probes.append(
                    f"SELECT {n} AS probe FROM (SELECT 1 AS hit FROM memories_fts_scoped f"
                    " JOIN memories m ON m.seq = f.rowid WHERE memories_fts_scoped MATCH ?"
                    f" AND {s_sql}{live} LIMIT 1) AS p{n}"
                )
                params += [match, *s_params]
            rows = self._exec(cur, " UNION ALL ".join(probes), params).fetchall()
            found.update(chunk[int(row[0])][0] for row in rows)
        return frozenset(found)

    def _phrase_count(self, cur: Cursor, phrase: str) -> int:
        """Rows holding ``phrase`` (one partition's): its doclist alone is read."""
        row = self._exec(
            cur,
            "SELECT COUNT(*) FROM memories_fts_scoped WHERE memories_fts_scoped MATCH ?",
            [phrase],
        ).fetchone()
        return int(row[0])

    def _read_list(
        self, cur: Cursor, found: rank.PhraseList, scoring: rank.Scoring, read: rank.Read
    ) -> None:
        """Every row of one list, scored under the scope into ``read``."""
        fetched = self._exec(
            cur,
            f"SELECT f.rowid, -bm25(memories_fts_scoped, {_WEIGHTS}), d.sz,"
            " (SELECT block FROM memories_fts_scoped_data WHERE id = 1)"
            " FROM memories_fts_scoped f"
            " JOIN memories_fts_scoped_docsize d ON d.id = f.rowid"
            " WHERE memories_fts_scoped MATCH ?",
            [found.phrase],
        ).fetchall()
        if not fetched:
            return
        # One statement, one snapshot: FTS5's own figures.
        index = rank.IndexFigures.of(fetched[0][3], phrase_hits=found.hits)
        seqs = np.fromiter((row[0] for row in fetched), dtype=np.int64, count=len(fetched))
        scores = np.fromiter((row[1] for row in fetched), dtype=np.float64, count=len(fetched))
        lengths = tokens_each([row[2] for row in fetched])
        read.add(found.word, found.part, seqs, lengths, scoring.rescored(scores, lengths, index))

    def _count_left(
        self,
        cur: Cursor,
        read: rank.Read,
        kept: npt.NDArray[np.int64],
        lists: Sequence[rank.PhraseList],
        scorings: dict[int, rank.Scoring],
    ) -> None:
        """The words of ``lists`` (not read) counted at the rows ``kept``
        of their partitions, scored into ``read``."""
        seqs, parts, lengths = read.seqs()[kept], read.parts()[kept], read.lengths()
        for found in lists:
            chosen = seqs[parts == found.part]
            if not chosen.size:
                continue
            counts = self._counts(cur, found.tokens, chosen.tolist())
            if not counts:
                continue
            held = np.fromiter(counts, dtype=np.int64, count=len(counts))
            tf = np.fromiter(counts.values(), dtype=np.float64, count=len(counts))
            length = lengths[read.places(held.tolist())]
            read.add(found.word, found.part, held, length, scorings[found.word].scores(tf, length))

    def _floor(self, cur: Cursor, read: rank.Read, rows: _Rows, limit: int) -> float:
        """The ``limit``-th best partial score of the rows read that pass
        (minus infinity while fewer pass): rows are looked up best first,
        a few at a time (the best few found without ordering every row)."""
        partial = read.partial()
        seqs = read.seqs()
        for width in (4 * limit, len(partial)):
            admitted = 0
            if width < len(partial):
                order = np.argpartition(-partial, width)[:width]
                order = order[np.argsort(-partial[order], kind="stable")]
            else:
                order = np.argsort(-partial, kind="stable")
            for start in range(0, len(order), 2 * limit):
                chunk = seqs[order[start : start + 2 * limit]].tolist()
                self._rows_of(cur, chunk, rows)
                for n, seq in enumerate(chunk):
                    found = rows.known.get(seq)
                    if found is not None and found[2]:
                        admitted += 1
                        if admitted == limit:
                            return float(partial[order[start + n]])
            if width >= len(partial):
                break
        return float("-inf")

    def _best(
        self,
        cur: Cursor,
        seqs: npt.NDArray[np.int64],
        totals: npt.NDArray[np.float64],
        rows: _Rows,
        limit: int,
    ) -> list[tuple[str, float]]:
        """The ``limit`` best of rows ``seqs`` with their whole scores that
        pass: best first, then newest, then id descending (the order of the
        SQL searches); every row tied with the last is looked at."""
        order = np.argsort(-totals, kind="stable")
        chosen: list[tuple[float, float, str]] = []
        for start in range(0, len(order), 2 * limit):
            chunk = order[start : start + 2 * limit]
            if len(chosen) >= limit and totals[chunk[0]] < sorted(chosen)[-limit][0]:
                break
            self._rows_of(cur, seqs[chunk].tolist(), rows)
            for place in chunk.tolist():
                found = rows.known.get(int(seqs[place]))
                if found is not None and found[2]:
                    chosen.append((float(totals[place]), found[0], found[1]))
        chosen.sort(key=lambda row: row[2], reverse=True)
        chosen.sort(key=lambda row: (-row[0], -row[1]))
        return [(memory_id, score) for score, _, memory_id in chosen[:limit]]

    def _rows_of(self, cur: Cursor, seqs: Sequence[int], rows: _Rows) -> None:
        """Each row of ``seqs`` not looked up yet: its time, id and whether
        it passes the scope and filters."""
        wanted = [seq for seq in seqs if seq not in rows.known]
        if not wanted:
            return
        for seq, at, memory_id, admitted in self._exec(
            cur,
            f"SELECT m.seq, m.created_at, m.id, {rows.passes} FROM memories m"
            " WHERE m.seq IN (SELECT value FROM json_each(?))",
            [*rows.params, json.dumps(wanted)],
        ):
            rows.known[int(seq)] = (float(at), str(memory_id), bool(admitted))

    def _counts(self, cur: Cursor, tokens: Sequence[str], seqs: Sequence[int]) -> dict[int, float]:
        """Each of rows ``seqs``' weighted count of the phrase of ``tokens``
        (index terms), from the index's positions of those rows alone (a
        word's summed by SQLite; a phrase's matched here)."""
        wanted = json.dumps(list(seqs))
        if len(tokens) == 1:
            return {
                int(doc): float(count)
                for doc, count in self._exec(
                    cur,
                    f"SELECT doc, SUM({_COLUMN_WEIGHT}) FROM memories_fts_positions"
                    " WHERE term = ? AND doc IN (SELECT value FROM json_each(?)) GROUP BY doc",
                    [tokens[0], wanted],
                )
            }
        positions = [
            [
                (int(doc), str(column), int(offset))
                for doc, column, offset in self._exec(
                    cur,
                    'SELECT doc, col, "offset" FROM memories_fts_positions'
                    " WHERE term = ? AND doc IN (SELECT value FROM json_each(?))",
                    [token, wanted],
                )
            ]
            for token in tokens
        ]
        return rank.counted(positions)
