"""The embedded default backend: one SQLite file, WAL, FTS5.

Many processes may share one file: readers never block (WAL), writers take
the write lock up front (``BEGIN IMMEDIATE``) and wait for each other up to
the busy timeout, so concurrent writers lose nothing and never deadlock.
"""

from __future__ import annotations

import math
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from mindpalace.errors import BusyError, StorageError
from mindpalace.models import RecallFilters, Scope
from mindpalace.store.base import TextMatch
from mindpalace.store.core import Cursor
from mindpalace.store.dialect import Dialect, TextQuery
from mindpalace.store.fragments import filter_clause, scope_clause
from mindpalace.store.sql import SqlStore

__all__ = ["SQLiteDialect", "SQLiteStore"]

# FTS5 over title, content and tags; ``memories`` is the content table and
# triggers keep the index in the same transaction as the row.
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

# bm25() column weights: title, content, context, tags. Context (e.g. the
# turn before a conversation message) helps find a memory but counts less
# than the memory's own words.
_BM25_WEIGHTS = (1.5, 1.0, 0.5, 1.0)

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

    def text_index_schema(self) -> list[str]:
        """FTS5 table and its sync triggers."""
        return list(_FTS_SCHEMA)

    def text_query(self, terms: Sequence[str]) -> TextQuery:
        """Any-term FTS5 match; every term is quoted, so no user text is FTS syntax."""
        match = " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
        weights = ", ".join(str(w) for w in _BM25_WEIGHTS)
        return TextQuery(
            source="memories_fts JOIN memories m ON m.seq = memories_fts.rowid",
            where="memories_fts MATCH ?",
            score=f"-bm25(memories_fts, {weights})",
            params=(match,),
        )


def _fts5_idf(total: int, hits: int) -> float:
    """FTS5's idf (fts5_aux.c ``fts5Bm25Function``): log((N - n + 0.5) / (n + 0.5)),
    floored at 1e-6."""
    idf = math.log((total - hits + 0.5) / (hits + 0.5)) if total else 0.0
    return idf if idf > 0 else 1e-6


def _lower(value: str | None) -> str | None:
    return value.lower() if isinstance(value, str) else value


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class SQLiteStore(SqlStore):
    """A palace in one SQLite file (or ``:memory:``)."""

    dialect = SQLiteDialect()

    def __init__(self, path: str | Path, *, busy_timeout: float = 30.0) -> None:
        self._path = str(path) if str(path) == ":memory:" else str(Path(path).expanduser())
        self._busy_timeout = busy_timeout
        self._lock = threading.RLock()
        self._sizes: dict[Scope, tuple[int, int, int]] = {}
        if self._path != ":memory:":
            Path(self._path).parent.mkdir(parents=True, exist_ok=True)
        try:
            self._conn = sqlite3.connect(
                self._path,
                timeout=busy_timeout,
                isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error as exc:
            raise StorageError(f"cannot open {self._path}: {exc}") from exc
        try:
            self._configure()
            self._migrate()
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            raise StorageError(f"cannot use {self._path}: {exc}") from exc
        except BaseException:
            self._conn.close()
            raise

    def _configure(self) -> None:
        self._conn.create_function("py_lower", 1, _lower, deterministic=True)
        deadline = time.monotonic() + self._busy_timeout
        while True:
            try:
                self._conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout * 1000)}")
                self._conn.execute("PRAGMA journal_mode = WAL")
                self._conn.execute("PRAGMA synchronous = NORMAL")
                self._conn.execute("PRAGMA foreign_keys = ON")
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

    def search_text(
        self, terms: Sequence[str], scope: Scope, filters: RecallFilters, *, limit: int
    ) -> list[TextMatch]:
        """BM25 whose idf counts only what ``scope`` may see.

        FTS5 computes idf over the whole index, every agent's memories
        included, so another agent's private memories would move this one's
        scores, and an agent planting probe memories could learn from the
        order of its own hits whether a word occurs in memories it may not
        read. FTS5's BM25 is a sum over query terms of ``idf(t) * f(t, d)``,
        so each term is searched alone and its score re-weighted by
        ``idf_scope(t) / idf_index(t)``. What remains global is the average
        document length inside ``f``: one aggregate number, no word of any
        memory. Where the scope sees every row (one agent) the two idfs are
        equal and FTS5's single query runs as it is.
        """
        if scope.unscoped or len(terms) < 1:
            return super().search_text(terms, scope, filters, limit=limit)
        total, seen = self._collection_sizes(scope)
        if seen == total:  # the scope sees every row: its idf is the index's
            return super().search_text(terms, scope, filters, limit=limit)
        s_sql, s_params = scope_clause(scope)
        f_sql, f_params = filter_clause(filters)
        scores: dict[str, float] = {}
        created: dict[str, float] = {}
        with self._read() as cur:
            for term in terms:
                q = self.dialect.text_query([term])
                index_hits, scope_hits = self._exec(
                    cur,
                    f"SELECT COUNT(*), COALESCE(SUM(CASE WHEN {s_sql} THEN 1 ELSE 0 END), 0)"
                    f" FROM {q.source} WHERE {q.where}",
                    [*s_params, *q.params],
                ).fetchone()
                if not scope_hits:
                    continue
                weight = _fts5_idf(seen, int(scope_hits)) / _fts5_idf(total, int(index_hits))
                rows = self._exec(
                    cur,
                    f"SELECT m.id, {q.score} AS score, m.created_at FROM {q.source}"
                    f" WHERE {q.where} AND {s_sql} AND {f_sql} ORDER BY score DESC LIMIT ?",
                    [*q.params, *s_params, *f_params, limit],
                ).fetchall()
                for memory_id, score, at in rows:
                    scores[memory_id] = scores.get(memory_id, 0.0) + float(score) * weight
                    created[memory_id] = float(at)
        # The SQL's order: best first, then newest, then id descending.
        ranked = sorted(scores, reverse=True)
        ranked.sort(key=lambda key: (-scores[key], -created[key]))
        found = self.get_many(ranked[:limit], scope)
        return [TextMatch(found[key], scores[key]) for key in ranked[:limit] if key in found]

    def _collection_sizes(self, scope: Scope) -> tuple[int, int]:
        """(rows in the index, rows ``scope`` sees), cached until the next write:
        counting a scope is a scan, and recall needs it every time."""
        generation = self.generation()
        cached = self._sizes.get(scope)
        if cached is not None and cached[0] == generation:
            return cached[1], cached[2]
        s_sql, s_params = scope_clause(scope)
        with self._read() as cur:
            total = int(self._exec(cur, "SELECT COUNT(*) FROM memories").fetchone()[0])
            seen = int(
                self._exec(
                    cur, f"SELECT COUNT(*) FROM memories m WHERE {s_sql}", s_params
                ).fetchone()[0]
            )
        if len(self._sizes) >= 256:
            self._sizes.clear()
        self._sizes[scope] = (generation, total, seen)
        return total, seen

    def _is_unique_violation(self, exc: BaseException) -> bool:
        return isinstance(exc, sqlite3.IntegrityError) and "UNIQUE" in str(exc)

    def integrity_check(self) -> str:
        """``PRAGMA integrity_check`` and the FTS index's own check; "ok" when sound."""
        with self._read() as cur:
            result = str(cur.execute("PRAGMA integrity_check").fetchone()[0])
            if result == "ok":
                cur.execute("INSERT INTO memories_fts (memories_fts) VALUES ('integrity-check')")
        return result

    def close(self) -> None:
        """Close the connection. Idempotent."""
        with self._lock:
            self._conn.close()
