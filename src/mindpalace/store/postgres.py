"""The shared backend: PostgreSQL over psycopg 3 with a connection pool.

Same queries as SQLite (sql.py), same semantics. Writers serialise on one
transaction-scoped advisory lock per palace, the equivalent of SQLite's
``BEGIN IMMEDIATE``: exact de-duplication under concurrency and no lost
updates, without retry loops in every query. Readers never take it.

Full text is a trigger-maintained ``tsvector`` (title, content, context, tags
as weights A-D) under a GIN index; ranking is Okapi BM25 computed in SQL with
the same parameters and column weights as SQLite's FTS5 ``bm25()``, because
``ts_rank`` ranks measurably worse (BENCHMARKS.md has the comparison);
the scoped searches are pg_text.py's and pg_postings.py's.

Vectors are also kept as pgvector ``vector`` values under an HNSW index
(pg_vectors.py), so dense candidates come from the server (``nearest``).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import numpy as np
import numpy.typing as npt

from mindpalace.errors import BusyError, ConfigError, StorageError
from mindpalace.models import RecallFilters, Scope
from mindpalace.store.base import SERVER_SCHEMES, VectorBatch, redact_url
from mindpalace.store.core import Cursor
from mindpalace.store.dialect import Dialect, array_literal
from mindpalace.store.fragments import filter_clause, scope_clause
from mindpalace.store.pg_text import SCOPE_KEY_SCHEMA, SCOPE_TOKENS_SCHEMA
from mindpalace.store.sql import SqlStore

try:
    import psycopg
    from psycopg import errors as pg_errors
    from psycopg_pool import ConnectionPool, PoolTimeout
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ConfigError(
        "PostgreSQL support needs the 'postgres' extra: pip install 'mindpalace[postgres]'"
    ) from exc

# Needs psycopg: imported once the check above passed.
from mindpalace.store import pg_bulk, pg_vectors
from mindpalace.store.pg_dense import DatabaseDense
from mindpalace.store.pg_erase import SET_DELETE_SCHEMA, PgSetDeletes
from mindpalace.store.pg_graph import PgGraphReads
from mindpalace.store.pg_postings import KEY_COUNTS_SCHEMA, POSTINGS_SCHEMA, PostingsSearch
from mindpalace.store.pg_replicas import Replicas
from mindpalace.store.pg_vectors import PgVector, PgVectorDumper

__all__ = ["ERASED_TABLES", "PostgresDialect", "PostgresStore"]

# The text search configuration every tsvector and tsquery uses: the English
# Snowball stemmer without a stopword list, so that, as with FTS5's porter
# tokenizer, every word is indexed and counts toward a row's length (the
# retrieval layer already drops function words from queries).
_TS_CONFIG = "mp_english"

# FTS5's bm25() constants (k1, b) and our column weights, in tsvector weight
# order A-D: title, content, context, tags (as in sqlite.py).
_K1 = 1.2
_B = 0.75
_WEIGHTS = {"A": 1.5, "B": 1.0, "C": 0.5, "D": 1.0}
_WEIGHT_CASE = "CASE w " + " ".join(f"WHEN '{k}' THEN {v}" for k, v in _WEIGHTS.items()) + " END"
_TEXT_SCHEMA = [
    "CREATE TEXT SEARCH DICTIONARY mp_english_stem (TEMPLATE = snowball, LANGUAGE = english)",
    f"CREATE TEXT SEARCH CONFIGURATION {_TS_CONFIG} (COPY = english)",
    f"""
    ALTER TEXT SEARCH CONFIGURATION {_TS_CONFIG}
        ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part
        WITH mp_english_stem
    """,
    "ALTER TABLE memories ADD COLUMN fts tsvector",
    # Row length in tokens, as BM25 needs: the last position in the vector
    # (positions count every word, and || shifts each column past the last).
    "ALTER TABLE memories ADD COLUMN fts_len INTEGER NOT NULL DEFAULT 0",
    "CREATE INDEX memories_fts ON memories USING GIN (fts)",
    f"""
    CREATE FUNCTION mp_memories_fts() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        NEW.fts := setweight(to_tsvector('{_TS_CONFIG}', COALESCE(NEW.title, '')), 'A')
            || setweight(to_tsvector('{_TS_CONFIG}', NEW.content), 'B')
            || setweight(to_tsvector('{_TS_CONFIG}', COALESCE(NEW.context, '')), 'C')
            || setweight(to_tsvector('{_TS_CONFIG}', NEW.tags), 'D');
        NEW.fts_len := (SELECT COALESCE(MAX(p), 0) FROM unnest(NEW.fts) u, unnest(u.positions) p);
        RETURN NEW;
    END
    $$
    """,
    """
    CREATE TRIGGER memories_fts BEFORE INSERT OR UPDATE OF title, content, context, tags
        ON memories FOR EACH ROW EXECUTE FUNCTION mp_memories_fts()
    """,
    # Collection statistics for BM25 (row count, total length), kept in the
    # writing transaction; writers are serialised, so one row suffices.
    "CREATE TABLE text_stats (id INTEGER PRIMARY KEY CHECK (id = 1), docs BIGINT, tokens BIGINT)",
    "INSERT INTO text_stats (id, docs, tokens) VALUES (1, 0, 0)",
    """
    CREATE FUNCTION mp_text_stats() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP IN ('UPDATE', 'DELETE') THEN
            UPDATE text_stats SET docs = docs - 1, tokens = tokens - OLD.fts_len;
        END IF;
        IF TG_OP IN ('UPDATE', 'INSERT') THEN
            UPDATE text_stats SET docs = docs + 1, tokens = tokens + NEW.fts_len;
        END IF;
        RETURN NULL;
    END
    $$
    """,
    """
    CREATE TRIGGER memories_text_stats AFTER INSERT OR DELETE OR UPDATE OF fts_len
        ON memories FOR EACH ROW EXECUTE FUNCTION mp_text_stats()
    """,
    # The query side of BM25, computed once per query: each distinct lexeme
    # of the query with its inverse document frequency (FTS5's formula:
    # ln((N - n + 0.5) / (n + 0.5)), floored at 1e-6), and the mean length.
    f"""
    CREATE FUNCTION mp_bm25_query(terms TEXT)
    RETURNS TABLE (lexemes TEXT[], idfs DOUBLE PRECISION[], avgdl DOUBLE PRECISION)
    LANGUAGE sql STABLE AS $$
        WITH s AS (SELECT docs, tokens FROM text_stats WHERE id = 1),
        l AS MATERIALIZED (
            SELECT t.lexeme, (
                SELECT COUNT(*) FROM memories
                WHERE fts @@ quote_literal(t.lexeme)::tsquery
            ) AS n
            FROM unnest(tsvector_to_array(to_tsvector('{_TS_CONFIG}', terms))) AS t(lexeme)
        )
        SELECT array_agg(l.lexeme),
               array_agg(GREATEST(ln((s.docs - l.n + 0.5) / (l.n + 0.5)), 1e-6)),
               GREATEST(s.tokens, 1)::DOUBLE PRECISION / GREATEST(s.docs, 1)
        FROM l, s GROUP BY s.docs, s.tokens
    $$
    """,
    # LOWER() follows the database's collation, which may fold ASCII only;
    # PostgreSQL 17+ has a built-in Unicode collation to make it exact.
    """
    DO $$
    BEGIN
        IF current_setting('server_version_num')::INTEGER >= 170000 THEN
            EXECUTE 'CREATE FUNCTION mp_lower(TEXT) RETURNS TEXT LANGUAGE sql IMMUTABLE'
                ' RETURN lower($1 COLLATE pg_c_utf8)';
        ELSE
            EXECUTE 'CREATE FUNCTION mp_lower(TEXT) RETURNS TEXT LANGUAGE sql IMMUTABLE'
                ' AS ''SELECT lower($1)''';
        END IF;
    END
    $$
    """,
]

_WORD = re.compile(r"\w+", re.UNICODE)

#: the longest a writer waits for the write lock while an erasure holds it
ERASURE_WAIT = 900.0
#: the share of an HNSW index's vectors an erasure's cleanup rebuilds it past
REBUILD_SHARE = 0.05

#: The tables an erasure deletes from or rewrites (store/erase_sql.py).
ERASED_TABLES = (
    "memories",
    "memory_tags",
    "embeddings",
    "part_vectors",
    "entities",
    "entity_aliases",
    "mentions",
    "entity_edges",
    "entity_relations",
    "memory_links",
    "skills",
    "signals",
    "scorer_weights",
    "text_stats",
    "text_scopes",
    "text_postings",
    "text_key_counts",
)


class PostgresDialect(Dialect):
    """PostgreSQL: ``%s`` placeholders, BIGSERIAL keys, tsvector + GIN, BM25 in SQL."""

    name = "postgres"
    serial_pk = "BIGSERIAL PRIMARY KEY"
    ref_type = "BIGINT"
    float_type = "DOUBLE PRECISION"
    blob_type = "BYTEA"
    lower = "mp_lower"
    placeholder = "%s"
    list_tables_sql = "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
    derived_columns = frozenset({"memories.fts", "memories.fts_len", "embeddings.vec"})

    def marks(self, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """One array parameter for ``values`` (all integers or all
        strings): psycopg parses a statement's placeholders on the client,
        and an erasure's look-ups of 500 placeholders each spent a fifth of
        its time there. The array goes as its text (``array_literal``).
        Other values: one placeholder each."""
        if not values:
            return super().marks(values)
        try:
            literal = array_literal(values)  # decides what the values are, once
        except TypeError:
            return super().marks(values)
        kind = "TEXT" if isinstance(values[0], str) else "BIGINT"
        return f"SELECT unnest(?::{kind}[])", [literal]

    def pair_rows(self, pairs: Sequence[tuple[int, int]]) -> tuple[str, list[Any]]:
        """Two array parameters, unnested side by side."""
        return "(SELECT * FROM unnest(?::BIGINT[], ?::BIGINT[]) AS u(a, b))", [
            array_literal(a for a, _ in pairs),
            array_literal(b for _, b in pairs),
        ]

    def sql(self, text: str) -> str:
        """Shared SQL for psycopg: a literal ``%`` doubled, ``?`` made ``%s``."""
        return text.replace("%", "%%").replace("?", "%s")

    def before_bulk_insert(self) -> list[str]:
        """Set the text and vector indexes aside until every row is in (pg_bulk.py)."""
        return list(pg_bulk.BEFORE_BULK_INSERT)

    def after_bulk_insert(self, tables: Mapping[str, Sequence[str]]) -> list[str]:
        """Move each ``seq`` sequence past the keys inserted explicitly;
        build the text indexes set aside again (pg_bulk.py)."""
        return [
            f"SELECT setval(pg_get_serial_sequence('{table}', 'seq'),"
            f" (SELECT COALESCE(MAX(seq), 0) + 1 FROM {table}), false)"
            for table, columns in tables.items()
            if "seq" in columns
        ] + list(pg_bulk.AFTER_BULK_INSERT)

    def derived_values(
        self, table: str, columns: Sequence[str]
    ) -> list[tuple[str, Callable[[Sequence[Any]], Any]]]:
        """``embeddings.vec`` in binary, not decoded by the trigger (pg_bulk.py)."""
        return pg_bulk.derived_values(table, columns)

    def text_index_schema(self) -> list[str]:
        """The text search configuration, tsvector column, GIN index, BM25 functions."""
        return list(_TEXT_SCHEMA)

    def scope_key_schema(self) -> list[str]:
        """The scope-partitioned keys of each row's lexemes (pg_text.py)."""
        return list(SCOPE_KEY_SCHEMA)

    def scope_tokens_schema(self) -> list[str]:
        """Each partition's total length, for its mean length (pg_text.py)."""
        return list(SCOPE_TOKENS_SCHEMA)

    def text_postings_schema(self) -> list[str]:
        """Each row's words as postings by partition's lexeme key (pg_postings.py)."""
        return list(POSTINGS_SCHEMA)

    def key_counts_schema(self) -> list[str]:
        """Each postings key's count, kept by the postings' trigger (pg_postings.py)."""
        return list(KEY_COUNTS_SCHEMA)

    def set_delete_schema(self) -> list[str]:
        """Keyword row triggers that stand aside for an erasure (pg_erase.py)."""
        return list(SET_DELETE_SCHEMA)

    def vector_storage_schema(self) -> list[str]:
        """Vectors in their rows, not TOAST (pg_vectors.py)."""
        return pg_vectors.storage_schema()

    def half_vector_schema(self) -> list[str]:
        """The trigger's decoding of either form of a vector's bytes (pg_vectors.py)."""
        return pg_vectors.half_vector_schema()

    def vector_index_schema(self) -> list[str]:
        """pgvector: the ``vec`` column, its trigger and backfill, the HNSW index."""
        return pg_vectors.vector_schema()


class PostgresStore(PgGraphReads, PgSetDeletes, DatabaseDense, PostingsSearch, SqlStore):
    """A palace in a PostgreSQL database (``postgresql://user@host/db``).

    ``replicas`` names streaming replicas of it (URLs of the same
    database): reads go to them once they have replayed this process's
    writes, writes to the primary (pg_replicas.py).
    """

    dialect = PostgresDialect()
    # BM25 in SQL is slow at scale and stems as Snowball does: recall uses
    # the warm keyword index (FTS5's terms) from its first call.
    warm_at_once = True
    # pgvector's HNSW index answers ``nearest`` (scoped, filtered), but recall
    # takes its dense candidates from the in-process graph, as on SQLite:
    # measured, 400 candidates cost 130 ms through pgvector against about
    # 1 ms in process (BENCHMARKS.md, "pgvector in recall"). An instance
    # may set this True to use pgvector instead.
    ann_in_store = False
    # pgvector and SQL can find a recall's rows (pg_dense.py): database mode.
    dense_in_store = True

    # Any constant would do: advisory locks are per database, and a palace
    # is one database.
    _WRITE_LOCK = 0x6D70_616C  # "mpal"
    _ERASING_LOCK = 0x6D70_6572  # "mper": held beside it by an erasure

    def __init__(
        self,
        url: str,
        *,
        busy_timeout: float = 30.0,
        max_connections: int = 8,
        replicas: Sequence[str] = (),
    ) -> None:
        self._location = redact_url(url)
        self._replicas: Replicas | None = None
        self._busy_timeout = busy_timeout
        # The erasure log's place up to which the cleanup rebuilt (or did
        # not need to rebuild) the vector index.
        self._rebuilt_through = 0
        self._closed = threading.Event()
        lock_ms = max(1, int(busy_timeout * 1000))

        def configure(conn: psycopg.Connection[Any]) -> None:
            # A writer waits this long for the write lock, then is BusyError.
            conn.execute(f"SET lock_timeout = {lock_ms}")
            conn.adapters.register_dumper(PgVector, PgVectorDumper)

        self._pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
            url,
            min_size=1,
            max_size=max_connections,
            kwargs={"autocommit": True, "prepare_threshold": None},
            configure=configure,
            timeout=busy_timeout,
            open=False,
        )
        try:
            self._pool.open(wait=True, timeout=busy_timeout)
        except (PoolTimeout, psycopg.Error) as exc:
            self._pool.close()
            raise StorageError(f"cannot connect to {self._location}: {exc}") from exc
        try:
            self._migrate()
        except psycopg.Error as exc:
            self._pool.close()
            raise StorageError(f"cannot use {self._location}: {exc}") from exc
        except BaseException:
            self._pool.close()
            raise
        if replicas:
            for replica in replicas:
                if not replica.startswith(SERVER_SCHEMES):
                    self._pool.close()
                    raise ConfigError(
                        f"a read replica must be a postgresql:// URL, not {redact_url(replica)!r}"
                    )
            self._replicas = Replicas(
                list(replicas), configure=configure, max_connections=max_connections
            )

    @property
    def location(self) -> str:
        """The database URL, password redacted."""
        return self._location

    def disk_bytes(self) -> int:
        """The database's size (a palace is one database)."""
        with self._read() as cur:
            row = cur.execute("SELECT pg_database_size(current_database())").fetchone()
        return int(row[0]) if row is not None else 0

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        try:
            with self._pool.connection() as conn:
                yield conn
        except PoolTimeout as exc:
            raise BusyError(
                f"no connection to {self._location} within {self._busy_timeout:g} s"
            ) from exc
        except pg_errors.LockNotAvailable as exc:
            raise BusyError(f"{self._location} stayed locked for {self._busy_timeout:g} s") from exc
        except psycopg.OperationalError as exc:
            raise StorageError(f"{self._location}: {exc}") from exc

    @contextmanager
    def _write(self) -> Iterator[Cursor]:
        with self._connection() as conn:
            with conn.transaction(), conn.cursor() as cur:
                self._take_write_lock(conn, cur)
                yield cur
            if self._replicas is not None:  # committed: replicas must reach this
                self._replicas.note_write(conn)

    def _take_write_lock(self, conn: psycopg.Connection[Any], cur: Cursor) -> None:
        """The palace's write lock, waited for ``busy_timeout`` seconds, and
        for as long again each time while an erasure holds it (up to
        ``ERASURE_WAIT`` seconds): erasing an agent of a million memories
        holds it for minutes, in one transaction, and a writer must wait
        for it rather than fail."""
        row = cur.execute("SELECT pg_try_advisory_xact_lock(%s)", (self._WRITE_LOCK,)).fetchone()
        if row and row[0]:  # free: one round trip, as an unwaited lock takes
            return
        deadline = time.monotonic() + ERASURE_WAIT
        while True:
            try:
                with conn.transaction():  # a savepoint: a timeout undoes only it
                    cur.execute("SELECT pg_advisory_xact_lock(%s)", (self._WRITE_LOCK,))
                return
            except pg_errors.LockNotAvailable:
                if time.monotonic() >= deadline or not self._erasing(cur):
                    raise

    def _erasing(self, cur: Cursor) -> bool:
        """Whether an erasure's transaction holds the palace (its lock,
        taken beside the write lock: ``_erasure_started``)."""
        row = cur.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted"
            " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
            " AND classid = 0 AND objid = %s AND objsubid = 1)",
            (self._ERASING_LOCK,),
        ).fetchone()
        return bool(row and row[0])

    def _erasure_started(self, cur: Cursor) -> None:
        """Mark this write transaction as an erasure, for writers waiting."""
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (self._ERASING_LOCK,))

    @contextmanager
    def _read(self) -> Iterator[Cursor]:
        """A cursor on a read replica that has replayed this process's
        writes (pg_replicas.py), else on the primary."""
        if self._replicas is not None:
            try:
                with self._replicas.connection() as replica:
                    if replica is not None:
                        with replica.cursor() as cur:
                            yield cur
                        return
            except psycopg.OperationalError as exc:
                raise StorageError(f"a read replica of {self._location}: {exc}") from exc
        with self._connection() as conn, conn.cursor() as cur:
            yield cur

    def _bulk(self, cur: Cursor) -> AbstractContextManager[object]:
        """Pipeline mode: statements whose results are not read go out
        without waiting for each reply, so a bulk write costs a round trip
        per statement read, not per statement (bench/pgwrites.py)."""
        pipeline: AbstractContextManager[object] = cur.connection.pipeline()
        return pipeline

    def _settle(self, cur: Cursor) -> None:
        """A nested pipeline block syncs as it closes: every statement sent
        before is answered, so the read after it gets its own result. (Read
        straight after many unread writes in one pipeline, a SELECT's rows
        were at times the reply of an earlier INSERT.)"""
        if cur.connection.info.pipeline_status != psycopg.pq.PipelineStatus.OFF:
            with cur.connection.pipeline():
                pass

    def _insert_rows(
        self, cur: Cursor, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]
    ) -> None:
        """``COPY ... FROM STDIN``: one stream, no statement per row. Rows
        holding pgvector values (sent in binary only) go as INSERT statements."""
        if not rows or any(isinstance(v, PgVector) for v in rows[0]):
            super()._insert_rows(cur, table, columns, rows)
            return
        with cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)

    def _is_unique_violation(self, exc: BaseException) -> bool:
        return isinstance(exc, pg_errors.UniqueViolation)

    def _put_vectors(self, cur: Cursor, vectors: VectorBatch | None) -> None:
        """The vectors with their pgvector copy, sent in binary: decoding the
        bytes in the trigger instead costs ~7x more per row (pg_vectors.py)."""
        if vectors is None:
            return
        key = self._put_key(cur, vectors.model)
        self._exec_many(
            cur,
            "INSERT INTO embeddings (model, text_hash, vector, vec) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (model, text_hash) DO NOTHING",
            [(key, text_hash, blob, PgVector(blob)) for text_hash, blob in vectors.vectors.items()],
        )
        self._put_parts(cur, vectors)
        # Every caller reads next (the entities a batch links to): in a
        # pipeline, a read straight after these unread inserts at times got
        # one of their replies ("the last operation didn't produce records").
        self._settle(cur)

    def nearest(
        self,
        model: str,
        query: npt.NDArray[np.float32],
        scope: Scope,
        filters: RecallFilters,
        *,
        limit: int,
    ) -> list[str] | None:
        """The ``limit`` visible memories matching ``filters`` nearest
        ``query`` by cosine, through the HNSW index; None when the vectors'
        size has no index (dense search stays exact).

        Scope and filters are inside the query, like every read's. The
        index is walked in order of distance and each embedding joined to
        its memories; with pgvector's iterative scan the walk goes on past
        ``ef_search`` candidates until ``limit`` rows pass scope and
        filters (or ``hnsw.max_scan_tuples`` were seen), so a narrow scope
        still gets its rows. ``relaxed_order`` may return them slightly out
        of order; the outer query sorts the few found by exact distance.
        """
        if not 1 <= int(query.shape[0]) <= pg_vectors.MAX_DIMENSIONS:
            return None
        if limit <= 0:
            return []
        sql, params = self.nearest_query(model, query, scope, filters, limit=limit)
        with self._connection() as conn, conn.transaction(), conn.cursor() as cur:
            # Local settings (SET LOCAL): they end with this read's transaction.
            cur.execute(
                "SELECT set_config('hnsw.ef_search', %s, true),"
                " set_config('hnsw.iterative_scan', 'relaxed_order', true)",
                (str(pg_vectors.ef_search(limit)),),
            )
            rows = self._exec(cur, sql, params).fetchall()
        return [str(r[0]) for r in rows]

    def nearest_query(
        self,
        model: str,
        query: npt.NDArray[np.float32],
        scope: Scope,
        filters: RecallFilters,
        *,
        limit: int,
    ) -> tuple[str, list[Any]]:
        """The SQL and parameters of ``nearest`` (shared SQL: ``?``
        placeholders), for tests and benchmarks to EXPLAIN."""
        dims = int(query.shape[0])
        s_sql, s_params = scope_clause(scope)
        f_sql, f_params = filter_clause(filters)
        # ORDER BY the index's own expression, and the partial index's
        # predicate restated, so the planner can walk the HNSW index.
        distance = f"e.vec::vector({dims}) <=> ?::vector({dims})"
        sql = (
            f"WITH near AS MATERIALIZED (SELECT m.id, {distance} AS distance"
            " FROM embeddings e JOIN memories m ON m.embed_hash = e.text_hash"
            f" WHERE e.model = ? AND vector_dims(e.vec) = {dims} AND {s_sql} AND {f_sql}"
            " ORDER BY distance LIMIT ?)"
            " SELECT id FROM near ORDER BY distance, id"
        )
        key = self._stored_key(model)
        return sql, [PgVector.of(query), key, *s_params, *f_params, limit]

    def _after_erase(self, cur: Cursor) -> None:
        """Scope partitions of the keyword index left without rows go."""
        cur.execute("DELETE FROM text_scopes WHERE docs <= 0")

    def _clean_disk(self) -> bool:
        """VACUUM the tables an erasure touches (outside any transaction),
        so the deleted rows' dead tuples and index entries go; False when
        it failed (e.g. no permission). A transaction still open elsewhere
        that began before the erasure keeps them until a later vacuum.

        An HNSW index is rebuilt first (``REINDEX CONCURRENTLY``: writers
        and readers go on) when the pending erasures removed at least
        ``REBUILD_SHARE`` of its vectors: pgvector's vacuum mends the graph
        around each deleted vector as an insert would (about 9 ms a vector
        at a million), so erasing an agent of 120,000 vectors kept the
        vacuum running past 47 minutes, while a rebuild costs what the live
        vectors cost to index once, and leaves the vacuum nothing to mend."""
        try:
            with self._connection() as conn:
                with conn.cursor() as cur:
                    erased, newest = self._erased_pending(cur, after=self._rebuilt_through)
                for index in pg_vectors.worn_indexes(conn, erased.vectors, REBUILD_SHARE):
                    pg_vectors.rebuild_index(conn, index)
                # A VACUUM that fails is tried again: without a second rebuild.
                self._rebuilt_through = newest
                conn.execute(f"VACUUM {', '.join(ERASED_TABLES)}")
        except (psycopg.Error, StorageError, BusyError):
            return False
        return True

    def _after_bulk_copy(self) -> None:
        """VACUUM the keyword postings a copy filled: their visibility map
        set, a search reads them from the index alone (until then each
        posting's row is read too, several times slower). Left to
        autovacuum when it fails."""
        try:
            with self._connection() as conn:
                conn.execute("VACUUM (ANALYZE) text_postings, text_key_counts")
        except (psycopg.Error, StorageError, BusyError):
            return

    @property
    def replicas(self) -> int:
        """How many read replicas this store reads from."""
        return 0 if self._replicas is None else self._replicas.count

    def close(self) -> None:
        """Close the pools. Idempotent."""
        if not self._closed.is_set():
            self._closed.set()
            self._pool.close()
            if self._replicas is not None:
                self._replicas.close()
