"""The embedded default backend: one SQLite file, WAL, FTS5.

Many processes may share one file: readers never block (WAL), writers take
the write lock up front (``BEGIN IMMEDIATE``) and wait for each other up to
the busy timeout, so concurrent writers lose nothing and never deadlock.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from pathlib import Path

from mindpalace.errors import BusyError, ConfigError, StorageError
from mindpalace.store.checkpoints import Checkpointer
from mindpalace.store.core import Cursor
from mindpalace.store.dialect import Dialect
from mindpalace.store.sql import SqlStore
from mindpalace.store.sqlite_text import (
    ONE_TEXT_INDEX_SCHEMA,
    PARTITION_COUNTS_SCHEMA,
    PARTITIONED_TEXT_SCHEMA,
    PartitionedTextSearch,
    doc_tokens,
    scoped_terms,
)

__all__ = ["SQLiteDialect", "SQLiteStore"]

# FTS5 over title, content and tags; ``memories`` is the content table and
# triggers keep the index in the same transaction as the row. Dropped by
# schema 32: the partitioned index (sqlite_text.py) serves every search.
_FTS_SCHEMA = [
    """
    CREATE VIRTUAL TABLE memories_fts USING fts5(
        title, content, context, tags,
        content = 'memories', content_rowid = 'seq',
        tokenize = 'porter unicode61 remove_diacritics 2'
    )
    """,
    """
    CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
        INSERT INTO memories_fts (rowid, title, content, context, tags)
        VALUES (new.seq, new.title, new.content, new.context, new.tags);
    END
    """,
    """
    CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
        INSERT INTO memories_fts (memories_fts, rowid, title, content, context, tags)
        VALUES ('delete', old.seq, old.title, old.content, old.context, old.tags);
    END
    """,
    """
    CREATE TRIGGER memories_fts_update
    AFTER UPDATE OF title, content, context, tags ON memories BEGIN
        INSERT INTO memories_fts (memories_fts, rowid, title, content, context, tags)
        VALUES ('delete', old.seq, old.title, old.content, old.context, old.tags);
        INSERT INTO memories_fts (rowid, title, content, context, tags)
        VALUES (new.seq, new.title, new.content, new.context, new.tags);
    END
    """,
]

# The graph's link tables rebuilt as WITHOUT ROWID tables: a row lives in
# its key's b-tree, and the key index beside a rowid table (a copy of both
# key columns and the rowid) goes: about 260 bytes a memory. Their rows are
# a few dozen bytes, well under SQLite's guidance for such tables.
_KEYED_TABLES_SCHEMA = [
    """
    CREATE TABLE mentions_keyed (
        memory_seq INTEGER NOT NULL REFERENCES memories (seq) ON DELETE CASCADE,
        entity_seq INTEGER NOT NULL REFERENCES entities (seq) ON DELETE CASCADE,
        surface TEXT NOT NULL,
        count INTEGER NOT NULL DEFAULT 1,
        fact SMALLINT NOT NULL DEFAULT 0,
        PRIMARY KEY (memory_seq, entity_seq)
    ) WITHOUT ROWID
    """,
    "INSERT INTO mentions_keyed (memory_seq, entity_seq, surface, count, fact)"
    " SELECT memory_seq, entity_seq, surface, count, fact FROM mentions",
    "DROP TABLE mentions",
    "ALTER TABLE mentions_keyed RENAME TO mentions",
    "CREATE INDEX mentions_entity_memory ON mentions (entity_seq, memory_seq)",
    "CREATE INDEX mentions_fact ON mentions (entity_seq, memory_seq) WHERE fact = 1",
    """
    CREATE TABLE entity_edges_keyed (
        src_seq INTEGER NOT NULL REFERENCES entities (seq) ON DELETE CASCADE,
        dst_seq INTEGER NOT NULL REFERENCES entities (seq) ON DELETE CASCADE,
        count INTEGER NOT NULL DEFAULT 1,
        weight REAL NOT NULL,
        updated_at REAL NOT NULL,
        PRIMARY KEY (src_seq, dst_seq)
    ) WITHOUT ROWID
    """,
    "INSERT INTO entity_edges_keyed (src_seq, dst_seq, count, weight, updated_at)"
    " SELECT src_seq, dst_seq, count, weight, updated_at FROM entity_edges",
    "DROP TABLE entity_edges",
    "ALTER TABLE entity_edges_keyed RENAME TO entity_edges",
    "CREATE INDEX entity_edges_dst ON entity_edges (dst_seq)",
]

# How long a write that may be dropped (a recall's signal) waits for the lock.
_BRIEF_WAIT = 0.05


class SQLiteDialect(Dialect):
    """SQLite: ``?`` placeholders, INTEGER keys, FTS5."""

    name = "sqlite"
    serial_pk = "INTEGER PRIMARY KEY"
    ref_type = "INTEGER"
    float_type = "REAL"
    blob_type = "BLOB"
    # SQLite's LOWER() folds ASCII only; the store registers Python's.
    lower = "py_lower"
    list_tables_sql = (
        "SELECT name FROM sqlite_master WHERE type = 'table'"
        " AND name NOT GLOB 'memories_fts*' AND name NOT GLOB 'sqlite_*'"
    )

    def text_index_schema(self) -> list[str]:
        """FTS5 table and its sync triggers."""
        return list(_FTS_SCHEMA)

    def scoped_text_schema(self) -> list[str]:
        """The partitioned FTS5 index (sqlite_text.py), its triggers and backfill."""
        return list(PARTITIONED_TEXT_SCHEMA)

    def partition_counts_schema(self) -> list[str]:
        """Each partition's rows and tokens kept by the triggers (sqlite_text.py)."""
        return list(PARTITION_COUNTS_SCHEMA)

    def one_text_index_schema(self) -> list[str]:
        """The whole-palace index dropped; the partitioned one's positions
        readable (sqlite_text.py)."""
        return list(ONE_TEXT_INDEX_SCHEMA)

    def keyed_tables_schema(self) -> list[str]:
        """Mentions and edges rebuilt WITHOUT ROWID (their key index goes)."""
        return list(_KEYED_TABLES_SCHEMA)

    def short_keys_schema(self, short: int, full: int) -> list[str]:
        """Every stored key cut to its first ``short`` digits, in place (at
        a million memories about a minute, under the write lock), then
        recorded."""
        del full  # nothing keeps the longer keys here
        cut = f"substr({{0}}, 1, {short})"
        # A closed version keeps its text under "<hash>~<its id>"
        # (``sql.py``, an update that keeps the text): its hash is cut, not
        # the id after it, or it would take its successor's key.
        tail = "instr(content_hash, '~')"
        content = (
            f"CASE WHEN {tail} > 0 THEN {cut.format('content_hash')}"
            f" || substr(content_hash, {tail}) ELSE {cut.format('content_hash')} END"
        )
        return [
            f"UPDATE memories SET content_hash = {content},"
            f" embed_hash = {cut.format('embed_hash')}"
            f" WHERE length(content_hash) > {short} OR length(embed_hash) > {short}",
            f"UPDATE embeddings SET text_hash = {cut.format('text_hash')}"
            f" WHERE length(text_hash) > {short}",
            f"UPDATE part_vectors SET text_hash = {cut.format('text_hash')}"
            f" WHERE length(text_hash) > {short}",
            f"INSERT INTO palace_meta (key, value) VALUES ('hash_chars', {short})"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        ]

    def vector_codes_schema(self, code: str, codes: str) -> list[str]:
        """Each model of the stored vectors given a code (in the names'
        order), every row rewritten to it in place (a few seconds at a
        million), and the counter set past the codes given."""
        named = f"palace_meta WHERE key LIKE '{code.replace('_', '!_')}%' ESCAPE '!'"
        return [
            f"INSERT INTO palace_meta (key, value) SELECT '{code}' || model,"
            " ROW_NUMBER() OVER (ORDER BY model) FROM (SELECT model FROM embeddings"
            " UNION SELECT model FROM part_vectors) AS models WHERE true"
            " ON CONFLICT (key) DO NOTHING",
            *(
                f"UPDATE {table} SET model = (SELECT CAST(value AS TEXT) FROM palace_meta"
                f" WHERE key = '{code}' || {table}.model)"
                f" WHERE model IN (SELECT substr(key, {len(code) + 1}) FROM {named})"
                for table in ("embeddings", "part_vectors")
            ),
            f"INSERT INTO palace_meta (key, value) SELECT '{codes}', COUNT(*) FROM {named}"
            " ON CONFLICT (key) DO NOTHING",
        ]


def _lower(value: str | None) -> str | None:
    return value.lower() if isinstance(value, str) else value


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class SQLiteStore(PartitionedTextSearch, SqlStore):
    """A palace in one SQLite file (or ``:memory:``).

    The file is created when missing; its folder is created only with
    ``create_folder`` (the per-user default palace), else it must exist.

    Raises:
        ConfigError: the file's folder does not exist.
        StorageError: the file cannot be opened or is not a palace.
    """

    dialect = SQLiteDialect()
    # FTS5 ranks as the warm index does, and a one-shot process (the CLI)
    # should not pay for building it.
    warm_at_once = False
    # Dense candidates come from the in-process HNSW graph (retrieval/ann.py).
    ann_in_store = False
    # Recall runs in this process: SQLite is in it already.
    dense_in_store = False

    def __init__(
        self, path: str | Path, *, busy_timeout: float = 30.0, create_folder: bool = False
    ) -> None:
        self._path = str(path) if str(path) == ":memory:" else str(Path(path).expanduser())
        self._busy_timeout = busy_timeout
        self._lock = threading.RLock()
        if self._path != ":memory:":
            folder = Path(self._path).parent
            if create_folder:
                folder.mkdir(parents=True, exist_ok=True)
            elif not folder.is_dir():
                # A mistyped path should not leave new folders behind.
                raise ConfigError(
                    f"cannot open {self._path}: the folder {folder} does not exist"
                    " (create it first, or choose another path)"
                )
        try:
            self._conn = sqlite3.connect(
                self._path,
                timeout=busy_timeout,
                isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error as exc:
            raise StorageError(f"cannot open {self._path}: {exc}") from exc
        # The log is copied into the file beside the writers (checkpoints.py).
        self._checkpoints = None if self._path == ":memory:" else Checkpointer(self._path)
        try:
            self._configure()
            self._migrate()
        except sqlite3.DatabaseError as exc:
            self.close()
            raise StorageError(f"cannot use {self._path}: {exc}") from exc
        except BaseException:
            self.close()
            raise

    def _configure(self) -> None:
        self._conn.create_function("py_lower", 1, _lower, deterministic=True)
        # The partitioned text index's triggers call it on every write.
        self._conn.create_function("mp_scoped_terms", 5, scoped_terms, deterministic=True)
        # ... and this one, for each partition's token count.
        self._conn.create_function("mp_doc_tokens", 1, doc_tokens, deterministic=True)
        deadline = time.monotonic() + self._busy_timeout
        while True:
            try:
                self._conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout * 1000)}")
                self._conn.execute("PRAGMA journal_mode = WAL")
                self._conn.execute("PRAGMA synchronous = NORMAL")
                if self._checkpoints is not None:  # its thread copies the log instead
                    self._conn.execute("PRAGMA wal_autocheckpoint = 0")
                self._conn.execute("PRAGMA foreign_keys = ON")
                # Deleted content is overwritten with zeros, not left in
                # free space: an erased memory is not in the file any more.
                self._conn.execute("PRAGMA secure_delete = ON")
                return
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    @property
    def location(self) -> str:
        """The database file."""
        return self._path

    def _write(self) -> AbstractContextManager[Cursor]:
        return self._transaction(self._busy_timeout)

    def _write_briefly(self) -> AbstractContextManager[Cursor]:
        return self._transaction(_BRIEF_WAIT)

    @contextmanager
    def _transaction(self, patience: float) -> Iterator[Cursor]:
        with self._lock:
            cur = self._conn.cursor()
            deadline = time.monotonic() + patience
            brief = patience < self._busy_timeout
            if brief:  # SQLite itself would wait the connection's whole busy timeout
                cur.execute(f"PRAGMA busy_timeout = {int(patience * 1000)}")
            try:
                while True:
                    try:
                        cur.execute("BEGIN IMMEDIATE")
                        break
                    except sqlite3.OperationalError as exc:
                        if not _is_busy(exc):
                            raise
                        if time.monotonic() > deadline:
                            raise BusyError(
                                f"{self._path} stayed locked for {patience:g} s"
                            ) from exc
                        time.sleep(0.005)
            finally:
                if brief:
                    cur.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout * 1000)}")
            try:
                yield cur
                cur.execute("COMMIT")
                if self._checkpoints is not None:
                    self._checkpoints.committed()
            except BaseException:
                if self._conn.in_transaction:
                    cur.execute("ROLLBACK")
                raise
            finally:
                cur.close()

    @contextmanager
    def _read(self) -> Iterator[Cursor]:
        with self._lock:
            cur = self._conn.cursor()
            try:
                yield cur
            finally:
                cur.close()

    def _is_unique_violation(self, exc: BaseException) -> bool:
        return isinstance(exc, sqlite3.IntegrityError) and "UNIQUE" in str(exc)

    def _after_erase(self, cur: Cursor) -> None:
        """Partitions of the keyword index left empty go (the triggers keep
        each one's row count)."""
        cur.execute("DELETE FROM memories_fts_parts WHERE row_count = 0")

    def _clean_disk(self) -> bool:
        """Merge the FTS5 index into one segment, so the erased rows'
        terms leave the index's pages (a delete only adds delete markers);
        then copy the committed pages into the file and truncate the WAL,
        where the pages an erasure changed were written before (with their
        old text). True when done, False when another process's reader
        still needed the WAL (the next checkpoint overwrites it).

        Run after the erasure's commit, in the background: one FTS5
        ``optimize``, its own write transaction (about a
        second for a million short memories; a writer waits for it).
        Merging in many short steps instead, while writers added segments
        between them, chased their segments without end and left SQLite
        3.40's FTS5 index malformed after about a thousand steps (a palace
        of a million memories could no longer write; reproduced with
        SQLite alone at 100,000 rows). In the erasure's own transaction,
        FTS5 left the contentless index malformed too (test_leaks.py).
        The first checkpoint copies pages without taking the write lock,
        so the one that truncates has little left to copy."""
        with self._write() as cur:
            cur.execute("INSERT INTO memories_fts_scoped (memories_fts_scoped) VALUES ('optimize')")
        if self._checkpoints is None:
            return True
        with self._lock, self._checkpoints.exclusive():
            try:
                self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                row = self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            except sqlite3.OperationalError:
                return False
        return row is not None and int(row[0]) == 0

    def disk_bytes(self) -> int:
        """The file's pages (in use or free) and its write-ahead log."""
        with self._read() as cur:
            pages = int(cur.execute("PRAGMA page_count").fetchone()[0])
            page_size = int(cur.execute("PRAGMA page_size").fetchone()[0])
        try:
            wal = os.stat(f"{self._path}-wal").st_size if self._path != ":memory:" else 0
        except OSError:  # no log at the moment (checkpointed and removed)
            wal = 0
        return pages * page_size + wal

    def integrity_check(self, *, quick: bool = False) -> str:
        """``PRAGMA integrity_check`` (``quick_check`` with ``quick``: no
        index checked against its table, much faster on a large file) and
        the FTS index's own check; "ok" when sound."""
        pragma = "quick_check" if quick else "integrity_check"
        with self._read() as cur:
            result = str(cur.execute(f"PRAGMA {pragma}").fetchone()[0])
            if result == "ok":
                index = "memories_fts_scoped"
                cur.execute(f"INSERT INTO {index} ({index}) VALUES ('integrity-check')")
        return result

    def close(self) -> None:
        """Close the connection (after the log's last copy). Idempotent."""
        with self._lock:
            if self._checkpoints is not None:
                with suppress(sqlite3.ProgrammingError):  # closed already
                    self._checkpoints.close(self._conn)
            self._conn.close()
