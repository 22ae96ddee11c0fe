"""Moving a whole palace between backends, losslessly and verifiably.

Every table is copied row for row, keys included, so references between
tables hold; columns only one backend has (its full-text machinery) are left
to that backend's triggers. The copy is one transaction on the destination,
checked before it commits: each table's row count and a digest of its rows
must match on both sides, and so must each memory's own digest.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mindpalace.errors import StorageError
from mindpalace.store.core import Cursor, SqlCore
from mindpalace.store.migrations import VECTOR_CODE, VECTOR_CODES

__all__ = ["TableReport", "TransferReport", "copy_palace", "palace_digests"]

# Copied in this order, parents before children. A table added by a later
# migration is copied after these (tests check none is missed).
TABLE_ORDER = (
    "memories",
    "memory_tags",
    "embeddings",
    "part_vectors",
    "embedding_config",
    "entities",
    "entity_aliases",
    "entity_apart",
    "mentions",
    "entity_edges",
    "memory_links",
    "entity_relations",
    "skills",
    "signals",
    "scorer_weights",
    "erasures",
    "retention_rules",
)
# Bookkeeping each palace keeps for itself (but the length of its text keys
# and its models' codes, which its rows carry: ``copy_palace``): the schema
# version, the change
# counters of in-process caches, PostgreSQL's BM25 collection statistics
# (the whole palace's and each scope partition's), keyword postings and
# their keys' counts.
NOT_COPIED = frozenset(
    {
        "schema_migrations",
        "palace_meta",
        "text_stats",
        "text_scopes",
        "text_postings",
        "text_key_counts",
    }
)

_BATCH = 1000
_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class TableReport:
    """One table on both sides: row counts and SHA-256 digests of the rows."""

    table: str
    source_rows: int
    destination_rows: int
    source_digest: str
    destination_digest: str

    @property
    def identical(self) -> bool:
        """Same count and same digest."""
        return (
            self.source_rows == self.destination_rows
            and self.source_digest == self.destination_digest
        )


@dataclass(frozen=True, slots=True)
class TransferReport:
    """What ``copy_palace`` copied and how it checked the copy."""

    source: str
    destination: str
    tables: tuple[TableReport, ...]
    memories: int
    memory_digest: str  # over every memory's own digest, on both sides

    @property
    def identical(self) -> bool:
        """Every table identical (the memory digests are checked before commit)."""
        return all(t.identical for t in self.tables)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {
            "from": self.source,
            "to": self.destination,
            "identical": self.identical,
            "memories": self.memories,
            "memory_digest": self.memory_digest,
            "tables": {
                t.table: {
                    "rows": {"from": t.source_rows, "to": t.destination_rows},
                    "sha256": {"from": t.source_digest, "to": t.destination_digest},
                }
                for t in self.tables
            },
        }


def _canonical(value: Any) -> Any:
    """A value in a form both backends' drivers agree on."""
    kind = type(value)
    if kind is str or kind is int or value is None:  # most values: as they are
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return {"bytes": bytes(value).hex()}
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float):
        return {"float": value.hex()}  # exact: no decimal rounding
    return value


def _row_digest(columns: Sequence[str], row: Sequence[Any]) -> str:
    text = _JSON.encode([[c, _canonical(v)] for c, v in zip(columns, row, strict=True)])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _tables(store: SqlCore, cur: Cursor) -> list[str]:
    names = {str(r[0]) for r in store._exec(cur, store.dialect.list_tables_sql).fetchall()}
    known = [t for t in TABLE_ORDER if t in names]
    return known + sorted(names - set(TABLE_ORDER) - NOT_COPIED)


def _columns(store: SqlCore, cur: Cursor, table: str) -> list[str]:
    cur = store._exec(cur, f"SELECT * FROM {table} WHERE 1 = 0")
    return [str(d[0]) for d in cur.description]


def _digest(store: SqlCore, cur: Cursor, table: str, columns: Sequence[str]) -> tuple[int, str]:
    """Row count and an order-independent digest of ``columns`` of ``table``."""
    rows = store._exec(cur, f"SELECT {', '.join(columns)} FROM {table}")
    digests: list[str] = []
    while batch := rows.fetchmany(_BATCH):  # a large palace's rows never all at once
        digests.extend(_row_digest(columns, row) for row in batch)
    digests.sort()
    return len(digests), hashlib.sha256("\n".join(digests).encode()).hexdigest()


def _memory_digests(store: SqlCore, cur: Cursor, columns: Sequence[str]) -> dict[str, str]:
    """Each memory's digest (its row, its tags, its vector), by id."""
    listed = ", ".join(f"m.{c}" for c in columns)
    rows = store._exec(cur, f"SELECT {listed} FROM memories m").fetchall()
    tags: dict[int, list[str]] = {}
    for seq, tag in store._exec(cur, "SELECT memory_seq, tag FROM memory_tags").fetchall():
        tags.setdefault(int(seq), []).append(str(tag))
    vectors: dict[str, list[Any]] = {}
    for model, text_hash, blob in store._exec(
        cur, "SELECT model, text_hash, vector FROM embeddings"
    ).fetchall():
        vectors.setdefault(str(text_hash), []).append([str(model), _canonical(blob)])
    seq_at, id_at, hash_at = columns.index("seq"), columns.index("id"), columns.index("embed_hash")
    out: dict[str, str] = {}
    for row in rows:
        extra = [sorted(tags.get(int(row[seq_at]), [])), sorted(vectors.get(row[hash_at], []))]
        out[str(row[id_at])] = _row_digest([*columns, "+tags", "+vectors"], [*row, *extra])
    return out


def palace_digests(store: SqlCore) -> dict[str, str]:
    """Each table's row count and digest, and the memories' combined digest,
    over the columns every backend has; equal for identical palaces."""
    out: dict[str, str] = {}
    with store._read() as cur:
        for table in _tables(store, cur):
            columns = _shared_columns(store, cur, table)
            count, digest = _digest(store, cur, table, columns)
            out[table] = f"{count}:{digest}"
        memory_columns = _shared_columns(store, cur, "memories")
        out["memories/each"] = _combined(_memory_digests(store, cur, memory_columns))
    return out


def _shared_columns(store: SqlCore, cur: Cursor, table: str) -> list[str]:
    # The columns of the shared schema: a backend's own extras (PostgreSQL's
    # tsvector and token count) are derived, never data.
    derived = store.dialect.derived_columns
    return [c for c in _columns(store, cur, table) if f"{table}.{c}" not in derived]


def _combined(digests: dict[str, str]) -> str:
    text = "\n".join(f"{k}:{v}" for k, v in sorted(digests.items()))
    return hashlib.sha256(text.encode()).hexdigest()


def copy_palace(source: SqlCore, destination: SqlCore) -> TransferReport:
    """Copy every row of ``source`` into the empty palace ``destination``.

    One transaction on the destination; it commits only when every table's
    count and digest and every memory's digest match the source's.

    Raises:
        StorageError: the destination is not empty, the schemas differ, or
            the copy does not match (nothing is written then).
    """
    if source.schema_version() != destination.schema_version():
        raise StorageError(
            f"schema versions differ: {source.location} has {source.schema_version()},"
            f" {destination.location} has {destination.schema_version()}"
        )
    reports: list[TableReport] = []
    # The rows carry the source's text keys: the empty destination takes
    # their length (``SqlCore.hash_chars``), as it is the only palace meta
    # a copy carries.
    chars = source.hash_chars()
    with source._read() as src, destination._mutate(structural=True) as dst:
        held = destination._exec(dst, "SELECT COUNT(*) FROM memories").fetchone()[0]
        if held:
            raise StorageError(
                f"{destination.location} already holds {held} memories;"
                " migrate into an empty palace"
            )
        destination._exec(
            dst,
            "INSERT INTO palace_meta (key, value) VALUES ('hash_chars', ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (chars,),
        )
        _copy_vector_codes(source, src, destination, dst)
        for statement in destination.dialect.before_bulk_insert():
            destination._exec(dst, statement)
        tables = _tables(source, src)
        missing = set(tables) - set(_tables(destination, dst))
        if missing:
            raise StorageError(f"{destination.location} lacks tables {sorted(missing)}")
        shared: dict[str, list[str]] = {}
        for table in tables:
            columns = _shared_columns(source, src, table)
            wanted = set(_shared_columns(destination, dst, table))
            if set(columns) != wanted:
                raise StorageError(f"table {table} differs: {sorted(set(columns) ^ wanted)}")
            shared[table] = columns
            _copy_table(source, src, destination=destination, dst=dst, table=table, columns=columns)
        for statement in destination.dialect.after_bulk_insert(shared):
            destination._exec(dst, statement)
        for table in tables:
            s_count, s_digest = _digest(source, src, table, shared[table])
            d_count, d_digest = _digest(destination, dst, table, shared[table])
            reports.append(TableReport(table, s_count, d_count, s_digest, d_digest))
        s_memories = _memory_digests(source, src, shared["memories"])
        d_memories = _memory_digests(destination, dst, shared["memories"])
        report = TransferReport(
            source=source.location,
            destination=destination.location,
            tables=tuple(reports),
            memories=len(s_memories),
            memory_digest=_combined(s_memories),
        )
        if not report.identical or s_memories != d_memories:
            differing = sorted(k for k in s_memories if s_memories[k] != d_memories.get(k))
            raise StorageError(
                f"copy does not match the source (tables: "
                f"{[t.table for t in reports if not t.identical]}, memories: {differing[:5]});"
                " nothing was written"
            )
    destination._hash_chars = chars
    destination._read_vector_codes()
    destination._after_bulk_copy()
    return report


def _copy_vector_codes(source: SqlCore, src: Cursor, destination: SqlCore, dst: Cursor) -> None:
    """The vector rows carry the source's model keys (``SqlCore._vector_key``):
    the empty destination takes its codes, or its names where it kept them."""
    coded = f"palace_meta WHERE key LIKE '{VECTOR_CODE.replace('_', '!_')}%' ESCAPE '!'"
    counter = f"palace_meta WHERE key = '{VECTOR_CODES}'"
    destination._exec(dst, f"DELETE FROM {coded}")
    destination._exec(dst, f"DELETE FROM {counter}")
    rows = source._exec(src, f"SELECT key, value FROM {coded} OR key = '{VECTOR_CODES}'")
    destination._exec_many(
        dst,
        "INSERT INTO palace_meta (key, value) VALUES (?, ?)",
        [(str(key), int(value)) for key, value in rows.fetchall()],
    )


def _copy_table(
    source: SqlCore,
    src: Cursor,
    *,
    destination: SqlCore,
    dst: Cursor,
    table: str,
    columns: Sequence[str],
) -> None:
    listed = ", ".join(columns)
    # Derived columns the destination would compute from these rows, where
    # sending them is cheaper (PostgreSQL's pgvector copy of each vector).
    present = set(_columns(destination, dst, table))
    derived = [d for d in destination.dialect.derived_values(table, columns) if d[0] in present]
    written = [*columns, *(name for name, _ in derived)]
    if table == "embedding_config":  # one row, which a fresh palace may hold
        destination._exec(dst, "DELETE FROM embedding_config")
    rows = source._exec(src, f"SELECT {listed} FROM {table}")
    while batch := rows.fetchmany(_BATCH):
        destination._insert_rows(
            dst, table, written, [(*r, *(value(r) for _, value in derived)) for r in batch]
        )
