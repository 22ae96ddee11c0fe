"""PostgreSQL's scope-first keyword search: work in proportion to what the caller sees.

The GIN index over ``memories.fts`` finds every row holding a word, whoever
owns it, and BM25 in SQL counted every such row for its idf, so a search's
time grew with matches in other agents' private memories: a timing oracle
for their words. As SQLite does since its partitioned FTS5 index
(``sqlite_text.py``), each row's lexemes are also indexed under its scope
partition (agent, visibility, group, channel): a second GIN index, over
``mp_text_keys(...)``, holds one 64-bit key per (partition, lexeme), so the
lexeme "falcon" of agent a's isolated memories is a key of its own. A
search lists the partitions the caller may see (``text_scopes``, scope
clause applied, each with its row count and total length kept by a trigger
on write), and counts and ranks only the keys of those partitions: nothing
of another partition is read.

Scores are BM25 with per-scope statistics, as the warm keyword index
(``retrieval/keyword.py``) defines them: ``idf(N_scope, n_scope) * f (k1 +
1) / (f + k1 (1 - b + b |D| / avgdl_scope))`` summed over the query's
terms, with N, n and the mean length ``avgdl_scope`` (the partitions'
summed lengths over their summed row counts) counted over the rows the
caller may see, and ``f`` the column-weighted count. So what another agent
writes or erases in its own partitions moves neither a score nor the order
of this caller's hits. Every visible match is scored, so the result is
exact, not the union of each term's best rows.
"""

from __future__ import annotations

from collections.abc import Sequence

from mindpalace.models import RecallFilters, Scope
from mindpalace.store.base import TextMatch
from mindpalace.store.core import Cursor
from mindpalace.store.fragments import SELECT_MEMORY, filter_clause, row_to_memory, scope_clause
from mindpalace.store.fts5_bm25 import K1, B
from mindpalace.store.sql import SqlStore

__all__ = [
    "SCOPE_COLUMNS",
    "SCOPE_KEY_SCHEMA",
    "SCOPE_TOKENS_SCHEMA",
    "TEXT_COLUMNS",
    "ScopeKeyTextSearch",
]

#: the columns of a scope partition (text_scopes' key)
SCOPE_COLUMNS = "agent_id, visibility, group_name, channel"
_SCOPE = SCOPE_COLUMNS

# A partition's lexeme as a 64-bit key: the first 16 hex digits of an MD5 of
# the four scope columns and the lexeme (unit and record separators between
# them, so no two distinct tuples meet). MD5, not hashtext: the same key on
# every server, architecture and version. A collision (one in 2^64 per pair)
# could only make a row a candidate for a word it lacks; its score for that
# word is then 0 (the score reads the row's own lexemes).
_KEY_OF = (
    "('x' || substr(md5(agent || chr(31) || vis || chr(31) || grp || chr(31)"
    " || chan || chr(30) || {lexeme}), 1, 16))::bit(64)::BIGINT"
)
_KEY_FUNCTIONS = [
    f"""
    CREATE FUNCTION mp_text_key(agent TEXT, vis TEXT, grp TEXT, chan TEXT, lexeme TEXT)
    RETURNS BIGINT LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
        SELECT {_KEY_OF.format(lexeme="lexeme")}
    $$
    """,
    # Spelled out rather than calling mp_text_key: an index expression runs
    # under a search_path of pg_catalog alone (PostgreSQL 17+), where the
    # palace's own functions are not found.
    f"""
    CREATE FUNCTION mp_text_keys(agent TEXT, vis TEXT, grp TEXT, chan TEXT, fts tsvector)
    RETURNS BIGINT[] LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
        SELECT COALESCE(array_agg({_KEY_OF.format(lexeme="l")}), '{{}}')
        FROM unnest(tsvector_to_array(COALESCE(fts, ''::tsvector))) AS l
    $$
    """,
]

#: The index expression; a query must spell it exactly so for the planner to use it.
_KEYS = "mp_text_keys(m.agent_id, m.visibility, m.group_name, m.channel, m.fts)"

SCOPE_KEY_SCHEMA = [
    *_KEY_FUNCTIONS,
    f"CREATE INDEX memories_text_keys ON memories USING GIN ({_KEYS.replace('m.', '')})",
    # The partitions that hold rows, with how many: the caller's N is the
    # sum over those it sees, with no count of rows at search time.
    f"""
    CREATE TABLE text_scopes (
        agent_id TEXT NOT NULL, visibility TEXT NOT NULL,
        group_name TEXT NOT NULL, channel TEXT NOT NULL,
        docs BIGINT NOT NULL DEFAULT 0,
        PRIMARY KEY ({_SCOPE})
    )
    """,
    f"""
    CREATE FUNCTION mp_text_scopes() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'UPDATE' AND (OLD.agent_id, OLD.visibility, OLD.group_name, OLD.channel)
                IS NOT DISTINCT FROM (NEW.agent_id, NEW.visibility, NEW.group_name, NEW.channel)
        THEN
            RETURN NULL;
        END IF;
        IF TG_OP IN ('UPDATE', 'DELETE') THEN
            UPDATE text_scopes SET docs = docs - 1
            WHERE ({_SCOPE}) = (OLD.agent_id, OLD.visibility, OLD.group_name, OLD.channel);
        END IF;
        IF TG_OP IN ('UPDATE', 'INSERT') THEN
            INSERT INTO text_scopes ({_SCOPE}, docs)
            VALUES (NEW.agent_id, NEW.visibility, NEW.group_name, NEW.channel, 1)
            ON CONFLICT ({_SCOPE}) DO UPDATE SET docs = text_scopes.docs + 1;
        END IF;
        RETURN NULL;
    END
    $$
    """,
    f"""
    CREATE TRIGGER memories_text_scopes AFTER INSERT OR DELETE OR UPDATE OF {_SCOPE}
        ON memories FOR EACH ROW EXECUTE FUNCTION mp_text_scopes()
    """,
    f"""
    INSERT INTO text_scopes ({_SCOPE}, docs)
    SELECT {_SCOPE}, COUNT(*) FROM memories GROUP BY {_SCOPE}
    """,
]

# Schema 20: each partition's total length (the sum of its rows' ``fts_len``)
# beside its row count, so a search's mean length is that of the rows its
# caller sees. The trigger also fires on the text columns, whose update
# changes ``fts_len`` through the BEFORE trigger ``mp_memories_fts``: a
# column trigger sees only the columns an UPDATE names, never those a BEFORE
# trigger sets, so ``UPDATE OF fts_len`` alone missed every edit of a text
# (as ``text_stats``' trigger did; it is mended here too, and recounted).
#: the columns whose change changes a row's keyword records
TEXT_COLUMNS = "title, content, context, tags, fts_len"
_TEXTS = TEXT_COLUMNS
SCOPE_TOKENS_SCHEMA = [
    "ALTER TABLE text_scopes ADD COLUMN tokens BIGINT NOT NULL DEFAULT 0",
    f"""
    CREATE OR REPLACE FUNCTION mp_text_scopes() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'UPDATE'
            AND (OLD.agent_id, OLD.visibility, OLD.group_name, OLD.channel, OLD.fts_len)
            IS NOT DISTINCT FROM (NEW.agent_id, NEW.visibility, NEW.group_name, NEW.channel,
                                  NEW.fts_len)
        THEN
            RETURN NULL;
        END IF;
        IF TG_OP IN ('UPDATE', 'DELETE') THEN
            UPDATE text_scopes SET docs = docs - 1, tokens = tokens - OLD.fts_len
            WHERE ({_SCOPE}) = (OLD.agent_id, OLD.visibility, OLD.group_name, OLD.channel);
        END IF;
        IF TG_OP IN ('UPDATE', 'INSERT') THEN
            INSERT INTO text_scopes ({_SCOPE}, docs, tokens)
            VALUES (NEW.agent_id, NEW.visibility, NEW.group_name, NEW.channel, 1, NEW.fts_len)
            ON CONFLICT ({_SCOPE}) DO UPDATE
            SET docs = text_scopes.docs + 1, tokens = text_scopes.tokens + excluded.tokens;
        END IF;
        RETURN NULL;
    END
    $$
    """,
    "DROP TRIGGER memories_text_scopes ON memories",
    f"""
    CREATE TRIGGER memories_text_scopes AFTER INSERT OR DELETE OR UPDATE OF {_SCOPE}, {_TEXTS}
        ON memories FOR EACH ROW EXECUTE FUNCTION mp_text_scopes()
    """,
    "DROP TRIGGER memories_text_stats ON memories",
    f"""
    CREATE TRIGGER memories_text_stats AFTER INSERT OR DELETE OR UPDATE OF {_TEXTS}
        ON memories FOR EACH ROW EXECUTE FUNCTION mp_text_stats()
    """,
    # The rows already written: their lengths, and the palace's recounted.
    f"""
    UPDATE text_scopes SET docs = s.docs, tokens = s.tokens
    FROM (SELECT {_SCOPE}, COUNT(*) AS docs, COALESCE(SUM(fts_len), 0) AS tokens
          FROM memories GROUP BY {_SCOPE}) AS s
    WHERE (text_scopes.agent_id, text_scopes.visibility, text_scopes.group_name,
           text_scopes.channel) = (s.agent_id, s.visibility, s.group_name, s.channel)
    """,
    """
    UPDATE text_stats SET docs = s.docs, tokens = s.tokens
    FROM (SELECT COUNT(*) AS docs, COALESCE(SUM(fts_len), 0) AS tokens FROM memories) AS s
    WHERE text_stats.id = 1
    """,
]

# FTS5's bm25() constants and column weights (tsvector weights A-D: title,
# content, context, tags), as postgres.py's.
_K1, _B = K1, B
_WEIGHT_CASE = "CASE w WHEN 'A' THEN 1.5 WHEN 'B' THEN 1.0 WHEN 'C' THEN 0.5 ELSE 1.0 END"

# The query's lexemes, one row per (term, lexeme) in term order, each with
# its keys in the partitions the caller sees; then each lexeme's visible
# document count (read from those keys' posting lists alone) and idf, and
# the mean length of the visible rows (the partitions' sums, as the warm
# index's ``KeywordIndex.scores``: 1 where they hold no token).
# Parameters: the scope (text_scopes), the terms, the scope (memories) per
# count. ``{scope_p}`` / ``{scope_m}`` are the scope clauses.
_QUERY_SIDE = """
WITH p AS MATERIALIZED (
    SELECT p.agent_id, p.visibility, p.group_name, p.channel, p.docs, p.tokens
    FROM text_scopes p WHERE {scope_p} AND p.docs > 0
),
s AS MATERIALIZED (
    SELECT COALESCE(SUM(p.docs), 0) AS seen,
           CASE WHEN SUM(p.tokens) > 0
                THEN SUM(p.tokens)::DOUBLE PRECISION / SUM(p.docs)::DOUBLE PRECISION
                ELSE 1.0 END AS avgdl
    FROM p
),
q AS MATERIALIZED (
    SELECT t.ord, l.lexeme, ARRAY(
        SELECT mp_text_key(p.agent_id, p.visibility, p.group_name, p.channel, l.lexeme) FROM p
    ) AS keys
    FROM unnest(?::TEXT[]) WITH ORDINALITY AS t(term, ord),
         unnest(tsvector_to_array(to_tsvector('mp_english', t.term))) AS l(lexeme)
),
n AS MATERIALIZED (
    SELECT q.ord, q.lexeme, q.keys, (
        SELECT COUNT(*) FROM memories m WHERE {keys} && q.keys AND {scope_m}
    ) AS hits
    FROM q
),
bm AS MATERIALIZED (
    SELECT array_agg(n.lexeme ORDER BY n.ord) AS lexemes,
           array_agg(GREATEST(ln((GREATEST(s.seen, n.hits) - n.hits + 0.5) / (n.hits + 0.5)),
                              1e-6) ORDER BY n.ord) AS idfs,
           (SELECT array_agg(k) FROM n, unnest(n.keys) AS k WHERE n.hits > 0) AS keys,
           s.avgdl
    FROM n, s WHERE n.hits > 0 GROUP BY s.avgdl
)
"""

# The row side, set-based: every visible matching row's occurrences of the
# query's lexemes (one unnest over the few rows that match), their
# column-weighted counts, and per row the sum over the query's (term,
# lexeme) pairs of idf * f (k1 + 1) / (f + k1 (1 - b + b |D| / avgdl)).
# One aggregate over all rows rather than a subquery per row: 4x less time
# for a common word's few hundred rows. ``{keys}``, ``{scope_m}`` and
# ``{filters}`` are the match and the scope and filter clauses.
_ROW_SIDE = f"""
, hit AS MATERIALIZED (
    SELECT m.seq, m.created_at, m.id, m.fts_len, u.lexeme, u.weights
    FROM memories m, unnest(m.fts) AS u
    WHERE {{keys}} && (SELECT keys FROM bm) AND {{scope_m}} AND {{filters}}
      AND u.lexeme = ANY ((SELECT lexemes FROM bm)::TEXT[])
),
tf AS (
    SELECT h.seq, h.created_at, h.id, h.fts_len, h.lexeme, SUM({_WEIGHT_CASE}) AS f
    FROM hit AS h, unnest(h.weights) AS w
    GROUP BY h.seq, h.created_at, h.id, h.fts_len, h.lexeme
),
scored AS (
    SELECT tf.seq, tf.created_at, tf.id, SUM(q.idf * tf.f * {_K1 + 1}
        / (tf.f + {_K1} * ({1 - _B} + {_B} * tf.fts_len / bm.avgdl))) AS score
    FROM bm CROSS JOIN LATERAL unnest(bm.lexemes, bm.idfs) AS q(lexeme, idf)
    JOIN tf ON tf.lexeme = q.lexeme
    GROUP BY tf.seq, tf.created_at, tf.id
),
best AS MATERIALIZED (
    SELECT seq, score FROM scored ORDER BY score DESC, created_at DESC, id DESC LIMIT ?
)
"""


class ScopeKeyTextSearch(SqlStore):
    """``search_text`` and the recall's word probes over the keys of the
    caller's partitions (mixed in before ``PostgresStore``'s SqlStore)."""

    def search_text(
        self, terms: Sequence[str], scope: Scope, filters: RecallFilters, *, limit: int
    ) -> list[TextMatch]:
        """BM25 with per-scope idf over the partitions ``scope`` sees (every
        partition for the management view), in one statement."""
        if not terms:
            return []
        p_sql, p_params = scope_clause(scope, "p")
        s_sql, s_params = scope_clause(scope)
        f_sql, f_params = filter_clause(filters)
        head = _QUERY_SIDE.format(scope_p=p_sql, scope_m=s_sql, keys=_KEYS)
        rows_side = _ROW_SIDE.format(keys=_KEYS, scope_m=s_sql, filters=f_sql)
        with self._read() as cur:
            rows = self._exec(
                cur,
                # Only the best rows are read in full.
                f"{head}{rows_side} SELECT {SELECT_MEMORY}, b.score"
                f" FROM best AS b JOIN memories m ON m.seq = b.seq WHERE {s_sql}"
                " ORDER BY b.score DESC, m.created_at DESC, m.id DESC",
                [*p_params, list(terms), *s_params, *s_params, *f_params, limit, *s_params],
            ).fetchall()
        return [TextMatch(row_to_memory(r[:-1]), float(r[-1])) for r in rows]

    def _sizes(self, cur: Cursor, scope: Scope) -> tuple[int, int]:
        """(rows in the palace, rows ``scope`` sees), from the counts the
        write triggers keep: no row is counted at search time."""
        p_sql, p_params = scope_clause(scope, "p")
        row = self._exec(
            cur,
            "SELECT (SELECT docs FROM text_stats WHERE id = 1),"
            f" (SELECT COALESCE(SUM(p.docs), 0) FROM text_scopes p WHERE {p_sql})",
            p_params,
        ).fetchone()
        return int(row[0] or 0), int(row[1] or 0)

    def _collection_sizes(self, scope: Scope) -> tuple[int, int, int]:
        """(generation, rows, rows ``scope`` sees) from the trigger-kept counts."""
        with self._read() as cur:
            total, seen = self._sizes(cur, scope)
        return self.generation(), total, seen

    def _present(
        self, cur: Cursor, terms: Sequence[str], scope: Scope, *, include_archived: bool
    ) -> frozenset[str]:
        """Which of ``terms`` a (live, unless ``include_archived``) memory
        ``scope`` sees holds: per word, the postings of its keys in the
        caller's partitions (pg_postings.py), read until one's memory is
        live. (The rows' key index took 85-170 ms a probe at a million
        memories, combining its matches with the scope's; this reads a
        posting or two.)"""
        wanted = list(dict.fromkeys(terms))
        if not wanted:
            return frozenset()
        p_sql, p_params = scope_clause(scope, "p")
        s_sql, s_params = scope_clause(scope)
        live = "" if include_archived else " AND m.archived = 0"
        rows = self._exec(
            cur,
            "WITH p AS MATERIALIZED (SELECT p.agent_id, p.visibility, p.group_name, p.channel"
            f" FROM text_scopes p WHERE {p_sql} AND p.docs > 0),"
            " q AS MATERIALIZED (SELECT t.ord, ARRAY("
            "SELECT mp_text_key(p.agent_id, p.visibility, p.group_name, p.channel, l)"
            " FROM p, unnest(tsvector_to_array(to_tsvector('mp_english', t.term))) AS l"
            ") AS keys FROM unnest(?::TEXT[]) WITH ORDINALITY AS t(term, ord))"
            " SELECT q.ord FROM q WHERE EXISTS (SELECT 1 FROM text_postings t"
            " JOIN memories m ON m.seq = t.seq"
            f" WHERE t.key = ANY (q.keys) AND {s_sql}{live})",
            [*p_params, wanted, *s_params],
        ).fetchall()
        return frozenset(wanted[int(r[0]) - 1] for r in rows)
