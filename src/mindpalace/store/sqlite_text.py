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

Scores stay FTS5's BM25 with per-scope idf, as ``scoped_text.py`` defines
them: each partition's ``bm25()`` is re-weighted by
``idf_scope(t) / idf_partition(t)``; row lengths and the average length are
the main index's (the same tokens are indexed, one for one).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from mindpalace.models import RecallFilters, Scope
from mindpalace.store import words
from mindpalace.store.base import TextMatch
from mindpalace.store.core import Cursor
from mindpalace.store.fragments import filter_clause, scope_clause
from mindpalace.store.scoped_text import ScopedTextSearch, fts5_idf

__all__ = ["PARTITIONED_TEXT_SCHEMA", "PartitionedTextSearch", "scoped_terms"]

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


def _row(prefix: str) -> str:
    return ", ".join(
        f"mp_scoped_terms({', '.join(f'{prefix}.{c}' for c in _SCOPE.split(', '))}, {prefix}.{col})"
        for col in _COLUMNS
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
        INSERT INTO memories_fts_scoped (rowid, {", ".join(_COLUMNS)})
        VALUES (new.seq, {_row("new")});
        INSERT OR IGNORE INTO memories_fts_parts ({_SCOPE})
        VALUES (new.agent_id, new.visibility, new.group_name, new.channel);
    END
    """,
    f"""
    CREATE TRIGGER memories_fts_scoped_delete AFTER DELETE ON memories BEGIN
        INSERT INTO memories_fts_scoped (memories_fts_scoped, rowid, {", ".join(_COLUMNS)})
        VALUES ('delete', old.seq, {_row("old")});
    END
    """,
    f"""
    CREATE TRIGGER memories_fts_scoped_update
    AFTER UPDATE OF {", ".join(_COLUMNS)}, {_SCOPE} ON memories BEGIN
        INSERT INTO memories_fts_scoped (memories_fts_scoped, rowid, {", ".join(_COLUMNS)})
        VALUES ('delete', old.seq, {_row("old")});
        INSERT INTO memories_fts_scoped (rowid, {", ".join(_COLUMNS)})
        VALUES (new.seq, {_row("new")});
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

    def search_text(
        self, terms: Sequence[str], scope: Scope, filters: RecallFilters, *, limit: int
    ) -> list[TextMatch]:
        """BM25 with per-scope idf, reading only the partitions ``scope``
        sees (where it sees every row, FTS5's single query over the main
        index, as ``ScopedTextSearch`` does)."""
        if scope.unscoped or len(terms) < 1:
            return super().search_text(terms, scope, filters, limit=limit)
        _, total, seen = self._collection_sizes(scope)
        if seen == total:
            return super().search_text(terms, scope, filters, limit=limit)
        s_sql, s_params = scope_clause(scope)
        scores: dict[str, float] = {}
        created: dict[str, float] = {}
        with self._read() as cur:
            keys = [
                partition_key(*row)
                for row in self._exec(
                    cur, f"SELECT {_SCOPE} FROM memories_fts_parts m WHERE {s_sql}", s_params
                ).fetchall()
            ]
            for term in terms:
                phrases = [p for p in (_phrase(k, term) for k in keys) if p is not None]
                counts = [(p, self._phrase_count(cur, p)) for p in phrases]
                scope_hits = sum(n for _, n in counts)
                if not scope_hits:
                    continue
                idf = fts5_idf(max(seen, scope_hits), scope_hits)
                for phrase, hits in counts:
                    if not hits:
                        continue
                    weight = idf / fts5_idf(max(total, hits), hits)
                    for memory_id, score, at in self._phrase_top(
                        cur, phrase, hits=hits, scope=scope, filters=filters, limit=limit
                    ):
                        scores[memory_id] = scores.get(memory_id, 0.0) + score * weight
                        created[memory_id] = at
        # The SQL's order: best first, then newest, then id descending.
        ranked = sorted(scores, reverse=True)
        ranked.sort(key=lambda key: (-scores[key], -created[key]))
        found = self.get_many(ranked[:limit], scope)
        return [TextMatch(found[key], scores[key]) for key in ranked[:limit] if key in found]

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
        scope: Scope,
        filters: RecallFilters,
        limit: int,
    ) -> list[tuple[str, float, float]]:
        """The ``limit`` best rows of one partition's ``phrase`` that pass
        ``filters``: (id, score, created_at). The best ``window`` matches
        are ranked in the index and joined to their rows; the window grows
        until ``limit`` rows pass or it holds all ``hits``."""
        s_sql, s_params = scope_clause(scope)  # the partition's: kept as every read's
        f_sql, f_params = filter_clause(filters)
        window = max(limit * 4, 256)
        while True:
            rows = self._exec(
                cur,
                f"SELECT m.id, f.score, m.created_at FROM (SELECT rowid AS seq,"
                f" -bm25(memories_fts_scoped, {_WEIGHTS}) AS score FROM memories_fts_scoped"
                " WHERE memories_fts_scoped MATCH ? ORDER BY score DESC LIMIT ?) f"
                f" JOIN memories m ON m.seq = f.seq WHERE {s_sql} AND {f_sql}"
                " ORDER BY f.score DESC LIMIT ?",
                [phrase, window, *s_params, *f_params, limit],
            ).fetchall()
            if len(rows) >= limit or window >= hits:
                break
            window *= 8
        return [(str(r[0]), float(r[1]), float(r[2])) for r in rows]
