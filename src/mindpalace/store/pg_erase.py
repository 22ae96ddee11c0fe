"""PostgreSQL's erasure of many memories, the keyword records kept by set.

Three row triggers keep a memory's keyword records: the palace's row count
and length (``text_stats``, one row), its partition's (``text_scopes``)
and its postings with their keys' counts (pg_postings.py). An erasure of
125,000 memories deletes them in one transaction, and each deleted memory
updated the one ``text_stats`` row again. A row updated many times in one transaction
leaves a chain of versions that each later update walks, so the erasure
slowed as it went: an agent of a million took minutes, with a concurrent
writer waiting on the palace's write lock throughout.

So an erasure deletes each chunk of memories in one statement that also
deletes their postings, and subtracts their counts and lengths once per
chunk and partition (and each key's count once per chunk). The triggers
stand aside while a transaction says so (``mindpalace.rows_by_set``,
local to it, set around those statements only).
Every other write keeps them row by row.

Where the erasure takes every row of a partition (an agent's own
memories, a channel), that partition's postings go by key: each of its
words' keys, found from the erased rows, has its postings deleted as one
range of the index and its count row with them. A posting is then not
looked up by (key, memory) one at a time.
"""

from __future__ import annotations

from collections.abc import Sequence

from mindpalace.store.core import Cursor, SqlCore
from mindpalace.store.dialect import array_literal
from mindpalace.store.pg_text import SCOPE_COLUMNS as _SCOPE
from mindpalace.store.pg_text import TEXT_COLUMNS as _TEXTS

__all__ = ["SET_CHUNK", "SET_DELETE_SCHEMA", "PgSetDeletes"]

_BY_SET = "mindpalace.rows_by_set"
#: memories deleted by one statement. Its postings are found in key order
#: (each key's postings of the chunk side by side in the index): 10,000
#: at a time took half the time of 500 at a time at a million memories.
SET_CHUNK = 10_000
_UNLESS = f"WHEN (current_setting('{_BY_SET}', true) IS DISTINCT FROM 'on')"

# The same triggers (events, columns, functions), each standing aside while
# its transaction keeps the records by set.
SET_DELETE_SCHEMA = [
    "DROP TRIGGER memories_text_stats ON memories",
    f"""
    CREATE TRIGGER memories_text_stats AFTER INSERT OR DELETE OR UPDATE OF {_TEXTS}
        ON memories FOR EACH ROW {_UNLESS} EXECUTE FUNCTION mp_text_stats()
    """,
    "DROP TRIGGER memories_text_scopes ON memories",
    f"""
    CREATE TRIGGER memories_text_scopes AFTER INSERT OR DELETE OR UPDATE OF {_SCOPE}, {_TEXTS}
        ON memories FOR EACH ROW {_UNLESS} EXECUTE FUNCTION mp_text_scopes()
    """,
    "DROP TRIGGER memories_text_postings ON memories",
    f"""
    CREATE TRIGGER memories_text_postings
        AFTER INSERT OR DELETE OR UPDATE OF {_SCOPE}, title, content, context, tags
        ON memories FOR EACH ROW {_UNLESS} EXECUTE FUNCTION mp_text_postings()
    """,
]

# One chunk of memories (parameters: their seqs; those of them in a
# partition not erased whole, whose postings go here) deleted, with their
# postings and their keys' counts, their partitions' and the palace's
# counts and lengths: all data-modifying parts of one statement run, on one
# snapshot. It returns the keys whose count it brought to 0 (their rows go
# next: one statement cannot change a row twice).
_DELETE = f"""
WITH gone AS MATERIALIZED (
    SELECT seq, {_SCOPE}, fts, fts_len FROM memories WHERE seq = ANY (?::BIGINT[])
),
postings AS (
    DELETE FROM text_postings t
    USING (SELECT g.seq, k.key FROM gone AS g
                  JOIN unnest(?::BIGINT[]) AS kept(seq) ON kept.seq = g.seq,
                  unnest(mp_text_keys(g.agent_id, g.visibility, g.group_name, g.channel, g.fts))
                  AS k(key) ORDER BY k.key, g.seq) AS d
    WHERE t.key = d.key AND t.seq = d.seq
    RETURNING t.key
),
counted AS (
    UPDATE text_key_counts AS c SET n = c.n - p.n
    FROM (SELECT key, COUNT(*) AS n FROM postings GROUP BY key) AS p
    WHERE c.key = p.key
    RETURNING c.key, c.n
),
scopes AS (
    UPDATE text_scopes AS s SET docs = s.docs - g.docs, tokens = s.tokens - g.tokens
    FROM (SELECT {_SCOPE}, COUNT(*) AS docs, COALESCE(SUM(fts_len), 0) AS tokens
          FROM gone GROUP BY {_SCOPE}) AS g
    WHERE (s.agent_id, s.visibility, s.group_name, s.channel)
        = (g.agent_id, g.visibility, g.group_name, g.channel)
),
stats AS (
    UPDATE text_stats SET docs = docs - (SELECT COUNT(*) FROM gone),
        tokens = tokens - (SELECT COALESCE(SUM(fts_len), 0) FROM gone)
    WHERE id = 1
),
erased AS (
    DELETE FROM memories WHERE seq IN (SELECT seq FROM gone)
)
SELECT array_agg(key) FROM counted WHERE n <= 0
"""
_UNCOUNTED = "DELETE FROM text_key_counts WHERE key = ANY (?::BIGINT[]) AND n <= 0"

# The partitions whose every row is among those to erase (parameter: their
# seqs), each with its rows' seqs.
_WHOLE = f"""
SELECT array_agg(m.seq) FROM memories AS m
JOIN (SELECT {_SCOPE}, COUNT(*) AS n FROM memories WHERE seq = ANY (?::BIGINT[])
      GROUP BY {_SCOPE}) AS e USING ({_SCOPE})
JOIN text_scopes AS s USING ({_SCOPE})
WHERE s.docs = e.n AND m.seq = ANY (?::BIGINT[])
GROUP BY {_SCOPE}
"""
# Every posting and count row of those partitions' keys (parameter: their
# rows' seqs): each key's postings one range of the index.
# Each distinct (partition, word) is hashed once: hashing each row's words
# (``mp_text_keys``, 33 a row) took 2.6 times as long for the same keys.
_BY_KEY = f"""
WITH words AS MATERIALIZED (
    SELECT DISTINCT {_SCOPE}, w.word
    FROM memories AS m, unnest(tsvector_to_array(COALESCE(m.fts, ''::tsvector))) AS w(word)
    WHERE m.seq = ANY (?::BIGINT[])
),
keys AS MATERIALIZED (
    SELECT DISTINCT mp_text_key({_SCOPE}, word) AS key FROM words
),
postings AS (
    DELETE FROM text_postings AS t USING keys WHERE t.key = keys.key
),
counts AS (
    DELETE FROM text_key_counts AS c USING keys WHERE c.key = keys.key
)
SELECT COUNT(*) FROM keys
"""


class PgSetDeletes(SqlCore):
    """``_delete_memories`` for PostgreSQL (mixed into ``PostgresStore``)."""

    def _delete_memories(self, cur: Cursor, seqs: Sequence[int]) -> None:
        """Delete these memories and their keyword records, by set, in
        chunks of ``SET_CHUNK``."""
        cur.execute("SELECT set_config(%s, 'on', true)", (_BY_SET,))
        everything = array_literal(seqs)
        whole: set[int] = set()
        for (members,) in self._exec(cur, _WHOLE, [everything, everything]).fetchall():
            whole.update(int(seq) for seq in members)
        if whole:
            self._exec(cur, _BY_KEY, [array_literal(sorted(whole))])
        for start in range(0, len(seqs), SET_CHUNK):
            chunk = list(seqs[start : start + SET_CHUNK])
            partial = [seq for seq in chunk if seq not in whole]
            row = self._exec(
                cur, _DELETE, [array_literal(chunk), array_literal(partial)]
            ).fetchone()
            if row is not None and row[0]:
                self._exec(cur, _UNCOUNTED, [array_literal(row[0])])
        cur.execute("SELECT set_config(%s, 'off', true)", (_BY_SET,))
