"""pgvector on PostgreSQL: a ``vector`` copy of every stored embedding and
an HNSW index over it, so the server proposes dense candidates.

The ``embeddings`` table of every backend keeps a vector's bytes (``vector``,
in half precision since schema 28: store/vector_bytes.py), what warm recall
scores exactly and what a migration copies. PostgreSQL adds
``vec``, the same numbers as a pgvector ``vector``: the writer sends it in
pgvector's binary format (``PgVector``), and a trigger decodes the bytes in
SQL for every row written without it (a copy between backends, the backfill
of an old palace), so no write path can leave it empty. ``vec`` has no fixed
size, since a palace's model is chosen at run time; the HNSW index is an
expression index over ``vec::vector(D)`` for the recorded model's size D,
built whenever ``embedding_config`` is written (a trigger), so recording a
model, a re-embedding, a migration and an import all get it.

Index parameters are those measured in ``bench/pgvector_ann.py``: HNSW,
cosine, m 16, ef_construction 64, searched with ef_search 100 and pgvector
0.8's iterative scan, so that a query whose scope or filters reject most
neighbours still returns as many rows as asked.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg import sql
from psycopg.adapt import Dumper
from psycopg.pq import Format

from mindpalace.store.vector_bytes import from_blob

__all__ = [
    "EF_SEARCH",
    "MAX_DIMENSIONS",
    "PgVector",
    "PgVectorDumper",
    "ef_search",
    "half_vector_schema",
    "index_name",
    "rebuild_index",
    "storage_schema",
    "vector_schema",
    "worn_indexes",
]

#: candidates an HNSW search keeps (at least as many as rows asked for)
EF_SEARCH = 100
#: the most dimensions pgvector's HNSW indexes for ``vector``; a larger
#: model's palace keeps ``vec`` but no index (dense search stays exact)
MAX_DIMENSIONS = 2000
# pgvector's ceiling for ef_search
_EF_SEARCH_MAX = 1000


def index_name(dimensions: int) -> str:
    """The HNSW index of ``dimensions``-sized vectors."""
    return f"embeddings_vec_{int(dimensions)}"


def ef_search(limit: int) -> int:
    """ef_search for a query asking ``limit`` rows: HNSW keeps at least as
    many candidates as it returns (as the in-process graph does, ann.py)."""
    return min(max(EF_SEARCH, limit), _EF_SEARCH_MAX)


def worn_indexes(conn: psycopg.Connection[Any], erased: int, share: float) -> list[str]:
    """The HNSW indexes over ``embeddings`` of which ``erased`` deleted
    vectors are at least ``share`` of those they held (their size as the
    server last counted it, the deleted included: an index never counted
    counts as empty, and is rebuilt)."""
    if erased <= 0:
        return []
    rows = conn.execute(
        "SELECT c.relname, GREATEST(c.reltuples, 0) FROM pg_index i"
        " JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam"
        " WHERE i.indrelid = 'embeddings'::regclass AND a.amname = 'hnsw' AND i.indisvalid"
        " ORDER BY c.relname"
    ).fetchall()
    return [str(name) for name, held in rows if erased >= share * float(held)]


def rebuild_index(conn: psycopg.Connection[Any], name: str) -> None:
    """``REINDEX INDEX CONCURRENTLY`` ``name`` (on an autocommit
    connection): reads and writes go on meanwhile. A rebuild that fails
    (a lock wait past ``lock_timeout``: a transaction kept the table)
    leaves PostgreSQL's invalid copy, ``<name>_ccnew``, which writes would
    keep up: dropped then if it can be, else before the next rebuild."""
    _drop_unfinished(conn, name)
    try:
        conn.execute(sql.SQL("REINDEX INDEX CONCURRENTLY {}").format(sql.Identifier(name)))
    except psycopg.Error:
        with contextlib.suppress(psycopg.Error):
            _drop_unfinished(conn, name)
        raise


def _drop_unfinished(conn: psycopg.Connection[Any], name: str) -> None:
    """Drop the invalid copies failed rebuilds of ``name`` left."""
    invalid = conn.execute(
        "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
        " WHERE i.indrelid = 'embeddings'::regclass AND NOT i.indisvalid"
    ).fetchall()
    for (left,) in invalid:
        if str(left).startswith(f"{name}_ccnew"):
            drop = sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}")
            conn.execute(drop.format(sql.Identifier(str(left))))


@dataclass(frozen=True, slots=True)
class PgVector:
    """A vector's stored bytes (the ``embeddings.vector`` blob, either form
    of ``vector_bytes``) to be sent as a pgvector ``vector``."""

    blob: bytes

    @classmethod
    def of(cls, values: npt.NDArray[np.float32]) -> PgVector:
        """The vector of an array."""
        return cls(np.ascontiguousarray(values, dtype="<f4").tobytes())


class PgVectorDumper(Dumper):
    """pgvector's binary input (``vector_recv``): dimensions and a zero as
    big-endian int16, then the values as big-endian float4.

    The type OID stays 0: the server infers ``vector`` from the column or
    the cast the parameter meets, so no per-connection type lookup is needed.
    """

    format = Format.BINARY
    oid = 0

    def dump(self, obj: PgVector) -> bytes:
        values = from_blob(obj.blob)
        return int(values.shape[0]).to_bytes(2, "big") + b"\0\0" + values.astype(">f4").tobytes()


# float32 little-endian bytes -> vector, exactly (zeros, subnormals and signs
# included; embeddings hold no infinities or NaNs): per element, sign,
# 8-bit exponent and 23-bit fraction from the four bytes, as IEEE 754 says.
# Pure SQL, so it runs wherever pgvector does; ~0.7 ms for 384 dimensions,
# against ~0.1 ms for the binary parameter the writer sends instead.
_FLOAT32 = """(
    SELECT array_agg(
        CASE WHEN t.e = 0 THEN t.s * t.f * 2.0::DOUBLE PRECISION ^ -149
             ELSE t.s * (t.f + 8388608) * 2.0::DOUBLE PRECISION ^ (t.e - 150) END
        ORDER BY t.i)::vector
    FROM (
        SELECT i,
            CASE WHEN get_byte(b, 4 * i + 3) >= 128
                 THEN -1.0::DOUBLE PRECISION ELSE 1.0::DOUBLE PRECISION END AS s,
            ((get_byte(b, 4 * i + 3) & 127) << 1) | (get_byte(b, 4 * i + 2) >> 7) AS e,
            ((get_byte(b, 4 * i + 2) & 127) << 16) | (get_byte(b, 4 * i + 1) << 8)
                | get_byte(b, 4 * i) AS f
        FROM generate_series(0, length(b) / 4 - 1) AS i
    ) AS t
)"""

# The same for half precision (store/vector_bytes.py): a blob of odd length
# is float16 (sign, 5-bit exponent, 10-bit fraction per two bytes,
# little-endian) and its tag byte.
_FLOAT16 = """(
    SELECT array_agg(
        CASE WHEN t.e = 0 THEN t.s * t.f * 2.0::DOUBLE PRECISION ^ -24
             ELSE t.s * (t.f + 1024) * 2.0::DOUBLE PRECISION ^ (t.e - 25) END
        ORDER BY t.i)::vector
    FROM (
        SELECT i,
            CASE WHEN get_byte(b, 2 * i + 1) >= 128
                 THEN -1.0::DOUBLE PRECISION ELSE 1.0::DOUBLE PRECISION END AS s,
            (get_byte(b, 2 * i + 1) & 124) >> 2 AS e,
            ((get_byte(b, 2 * i + 1) & 3) << 8) | get_byte(b, 2 * i) AS f
        FROM generate_series(0, (length(b) - 1) / 2 - 1) AS i
    ) AS t
)"""

_DECODE = f"""
CREATE FUNCTION mp_vector(b BYTEA) RETURNS vector
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$ SELECT {_FLOAT32} $$
"""

# Either stored form, told apart by the blob's length (schema 28).
_DECODE_EITHER = f"""
CREATE OR REPLACE FUNCTION mp_vector(b BYTEA) RETURNS vector
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT CASE WHEN length(b) % 2 = 0 THEN {_FLOAT32} ELSE {_FLOAT16} END
$$
"""

_SCHEMA = [
    # Needs a superuser once per database (pgvector is not a trusted
    # extension), unless an administrator created it already.
    "CREATE EXTENSION IF NOT EXISTS vector",
    "ALTER TABLE embeddings ADD COLUMN vec vector",
    _DECODE,
    """
    CREATE FUNCTION mp_embeddings_vec() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF NEW.vec IS NULL OR TG_OP = 'UPDATE' THEN
            NEW.vec := mp_vector(NEW.vector);
        END IF;
        RETURN NEW;
    END
    $$
    """,
    """
    CREATE TRIGGER embeddings_vec BEFORE INSERT OR UPDATE OF vector
        ON embeddings FOR EACH ROW EXECUTE FUNCTION mp_embeddings_vec()
    """,
    "UPDATE embeddings SET vec = mp_vector(vector) WHERE vec IS NULL",
    # Nearest-neighbour search walks the index by embedding and joins each
    # to its memories (scope and filters live there).
    "CREATE INDEX memories_embed_hash ON memories (embed_hash)",
    # The HNSW index of the recorded model's size, and no other: partial on
    # that size, so vectors of another model (kept until a re-embedding
    # drops them) never meet the cast.
    f"""
    CREATE FUNCTION mp_vector_index(dims INTEGER) RETURNS void LANGUAGE plpgsql AS $$
    DECLARE
        wanted TEXT := 'embeddings_vec_' || dims;
        old TEXT;
    BEGIN
        FOR old IN
            SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
            WHERE i.indrelid = 'embeddings'::regclass
              AND c.relname LIKE 'embeddings!_vec!_%' ESCAPE '!' AND c.relname <> wanted
        LOOP
            EXECUTE format('DROP INDEX %I', old);
        END LOOP;
        IF dims BETWEEN 1 AND {MAX_DIMENSIONS} THEN
            EXECUTE format(
                'CREATE INDEX IF NOT EXISTS %I ON embeddings'
                ' USING hnsw ((vec::vector(%s)) vector_cosine_ops)'
                ' WITH (m = 16, ef_construction = 64) WHERE vector_dims(vec) = %s',
                wanted, dims, dims);
        END IF;
    END
    $$
    """,
    """
    CREATE FUNCTION mp_embedding_config_index() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM mp_vector_index(NEW.dimensions);
        RETURN NULL;
    END
    $$
    """,
    """
    CREATE TRIGGER embedding_config_index AFTER INSERT OR UPDATE OF dimensions
        ON embedding_config FOR EACH ROW EXECUTE FUNCTION mp_embedding_config_index()
    """,
    "SELECT mp_vector_index(dimensions) FROM embedding_config",
]


# A row of ``embeddings`` holds each vector twice (the bytes and ``vec``):
# past 2 kB PostgreSQL moved one of them out of the row into TOAST (pgvector
# stores ``vec`` EXTERNAL), so reading a vector cost four more buffers. Rows
# up to about 4 kB stay whole now (models up to ~480 dimensions), and for
# larger ones ``vec`` is the value kept in the row (MAIN), since recall in
# the database reads it and the bytes only at a process's warm-up. Rows
# written before keep their layout until rewritten (VACUUM FULL embeddings).
_STORAGE = [
    "ALTER TABLE embeddings SET (toast_tuple_target = 4080)",
    "ALTER TABLE embeddings ALTER COLUMN vec SET STORAGE MAIN",
]


def storage_schema() -> list[str]:
    """Statements keeping vectors in their rows (measured: a database-mode
    read of 1,000 vectors touched 7,295 buffers before, 4,295 after)."""
    return list(_STORAGE)


def half_vector_schema() -> list[str]:
    """Statements letting the trigger decode half-precision blobs too."""
    return [_DECODE_EITHER]


def vector_schema() -> list[str]:
    """Statements adding ``vec``, its upkeep, the backfill and the index."""
    return list(_SCHEMA)
