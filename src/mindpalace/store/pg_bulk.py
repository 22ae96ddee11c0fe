"""PostgreSQL's side of copying a whole palace into an empty one (transfer.py).

Kept up row by row, the text indexes (two GIN indexes over ``memories``)
and the vectors' HNSW index cost most of a large copy's time; built once
over every row, as pgvector's documentation advises for a bulk load, they
cost a fraction. So, inside the copy's one transaction: the GIN indexes of
``memories`` are dropped before the rows go in, their definitions kept in a
temporary table, and created again from those definitions after; the HNSW
index is dropped too, and the copied ``embedding_config`` row rebuilds it
(its trigger, pg_vectors.py) once the vectors are in. Readers of this
palace wait for the copy's commit (the dropped indexes hold their tables'
locks until then); nothing is visible half-built. The index builds use the
server's ``maintenance_work_mem``: pgvector notes in the server log when an
HNSW graph does not fit it, and the build is then much slower.

The copy also sends each vector's pgvector form (``embeddings.vec``) in
binary itself, as the write path does, instead of leaving the trigger to
decode the bytes in SQL (about 5x the cost per row, pg_vectors.py), and
counts the BM25 statistics (``text_stats``, ``text_scopes``: rows and their
lengths) once from the copied rows rather than through their per-row
triggers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from mindpalace.store.pg_postings import FILL_KEY_COUNTS, FILL_POSTINGS
from mindpalace.store.pg_vectors import PgVector

__all__ = ["AFTER_BULK_INSERT", "BEFORE_BULK_INSERT", "derived_values"]

_KEPT = "mp_bulk_indexes"
# The triggers keeping BM25's collection statistics (postgres.py, pg_text.py)
# and the keyword postings (pg_postings.py).
_STATISTICS = ("memories_text_stats", "memories_text_scopes", "memories_text_postings")
_SCOPE = "agent_id, visibility, group_name, channel"
_STATISTICS_PRESENT = (
    "SELECT tgname::TEXT FROM pg_trigger WHERE tgrelid = 'memories'::regclass"
    f" AND tgname IN ({', '.join(repr(t) for t in _STATISTICS)}) ORDER BY tgname"
)

BEFORE_BULK_INSERT = [
    # The GIN indexes of memories (the tsvector's and the scope keys'),
    # whatever their names: their definitions, to build them again.
    f"""
    CREATE TEMPORARY TABLE {_KEPT} ON COMMIT DROP AS
    SELECT indexname, indexdef FROM pg_indexes
    WHERE schemaname = current_schema() AND tablename = 'memories'
      AND indexdef LIKE '% USING gin %'
    """,
    f"""
    DO $$
    DECLARE
        name TEXT;
    BEGIN
        FOR name IN SELECT indexname FROM {_KEPT} LOOP
            EXECUTE format('DROP INDEX %I', name);
        END LOOP;
        -- The HNSW index: the copied embedding_config row builds it again.
        FOR name IN
            SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
            WHERE i.indrelid = 'embeddings'::regclass
              AND c.relname LIKE 'embeddings!_vec!_%' ESCAPE '!'
        LOOP
            EXECUTE format('DROP INDEX %I', name);
        END LOOP;
    END
    $$
    """,
    # The per-row upkeep of the BM25 statistics: each insert updated the
    # same row of text_stats (and of its scope in text_scopes), and in one
    # transaction every update leaves a row version the next must step
    # over, so a copy's cost grew with the square of its rows. Counted
    # once from the rows instead, after. (A palace of an older schema may
    # lack either: only those it has.)
    f"""
    DO $$
    DECLARE
        name TEXT;
    BEGIN
        FOR name IN {_STATISTICS_PRESENT} LOOP
            EXECUTE format('ALTER TABLE memories DISABLE TRIGGER %I', name);
        END LOOP;
    END
    $$
    """,
]

AFTER_BULK_INSERT = [
    f"""
    DO $$
    DECLARE
        name TEXT;
    BEGIN
        FOR name IN {_STATISTICS_PRESENT} LOOP
            IF name = 'memories_text_stats' THEN
                UPDATE text_stats SET docs = s.docs, tokens = s.tokens
                FROM (SELECT COUNT(*) AS docs, COALESCE(SUM(fts_len), 0) AS tokens
                      FROM memories) s
                WHERE text_stats.id = 1;
            ELSIF name = 'memories_text_postings' THEN
                -- Once over every row, in the index's order.
                DELETE FROM text_postings;
                {FILL_POSTINGS};
                IF to_regclass('text_key_counts') IS NOT NULL THEN
                    DELETE FROM text_key_counts;
                    {FILL_KEY_COUNTS};
                END IF;
            ELSE
                DELETE FROM text_scopes;
                INSERT INTO text_scopes ({_SCOPE}, docs, tokens)
                SELECT {_SCOPE}, COUNT(*), COALESCE(SUM(fts_len), 0)
                FROM memories GROUP BY {_SCOPE};
            END IF;
            EXECUTE format('ALTER TABLE memories ENABLE TRIGGER %I', name);
        END LOOP;
    END
    $$
    """,
    f"""
    DO $$
    DECLARE
        definition TEXT;
    BEGIN
        FOR definition IN SELECT indexdef FROM {_KEPT} ORDER BY indexname LOOP
            EXECUTE definition;
        END LOOP;
    END
    $$
    """,
    # Fresh planner statistics for the tables that received the rows.
    "ANALYZE memories, embeddings, mentions, entities",
    # (text_postings: vacuumed and analysed after the commit,
    # PostgresStore._after_bulk_copy.)
]


def derived_values(
    table: str, columns: Sequence[str]
) -> list[tuple[str, Callable[[Sequence[Any]], Any]]]:
    """``embeddings.vec`` from each copied row's bytes, sent in binary."""
    if table != "embeddings" or "vector" not in columns:
        return []
    at = list(columns).index("vector")

    def vec(row: Sequence[Any]) -> PgVector | None:
        blob = row[at]
        return None if blob is None else PgVector(bytes(blob))

    return [("vec", vec)]
