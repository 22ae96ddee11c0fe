"""The base every SQL backend shares: connection contract, migrations, the
write transaction that bumps the palace's change counters.

``SqlStore`` (sql.py) builds the ``Store`` protocol on it, from mixins that
each own one part of the schema (the writes of memories in sql.py, their
reads in reads_sql.py, vectors in vectors_sql.py; the graph, skills and
signals in their own modules). A backend subclass supplies the
connection, its transaction discipline and a ``Dialect``.
"""

from __future__ import annotations

import abc
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import datetime, timezone
from typing import Any

from mindpalace.errors import StorageError
from mindpalace.store.dialect import Dialect
from mindpalace.store.migrations import (
    FULL_HASH_CHARS,
    MIGRATIONS,
    VECTOR_CODE,
    VECTOR_CODES,
    latest_version,
)
from mindpalace.store.roles import Handle
from mindpalace.store.vector_rows import Counters, FlagChange, VectorBatch

__all__ = ["FLAG_CHANGES", "Cursor", "SqlCore"]

Cursor = Any  # a DB-API cursor; sqlite3 and psycopg differ in their stubs

#: the rows whose flags changed since a value of the ``flags`` counter: by
#: the partial index (its condition repeated, as a bound parameter alone
#: does not imply it; unsorted, as an ORDER BY makes SQLite walk every row)
FLAG_CHANGES = (
    "SELECT seq, archived, superseded_by IS NOT NULL FROM memories"
    " WHERE flagged > 0 AND flagged > ?"
)


class SqlCore(abc.ABC, Handle):
    """Connection contract and schema; subclasses bring connection and dialect.

    The ``Handle`` role declares what a backend also supplies (``location``,
    ``close``, ``disk_bytes``); mypy checks that each backend does.
    """

    dialect: Dialect
    #: ``hash_chars``, once read
    _hash_chars: int | None = None
    #: whether the vector tables key a model by its code (``vector_key``),
    #: read on opening
    _vector_codes: bool = False
    #: each model's code, as committed (a code never changes once given)
    _vector_keys: dict[str, str] | None = None

    # -- what a backend supplies ------------------------------------------------

    @abc.abstractmethod
    def _write(self) -> AbstractContextManager[Cursor]:
        """A cursor inside a write transaction, committed on exit, rolled back on error."""

    @abc.abstractmethod
    def _read(self) -> AbstractContextManager[Cursor]:
        """A cursor for reads."""

    def _write_briefly(self) -> AbstractContextManager[Cursor]:
        """A write transaction for data that may be dropped (statistics): a
        backend whose writers queue for a lock gives up quickly instead of
        making a reader wait; ``BusyError`` when it does."""
        return self._write()

    def _bulk(self, cur: Cursor) -> AbstractContextManager[object]:
        """Around many statements of one write transaction whose results are
        not all read at once: a backend with per-statement round trips sends
        them together (PostgreSQL's pipeline mode); others do nothing. Inside
        it, ``rowcount`` may not be read."""
        return nullcontext()

    def _settle(self, cur: Cursor) -> None:
        """Inside ``_bulk``, wait for every statement sent so far before a
        read whose result depends on them; nothing to do elsewhere."""
        return

    def _after_bulk_copy(self) -> None:
        """After a whole palace was copied in and committed: upkeep that
        cannot run inside a transaction (nothing by default)."""
        return

    @abc.abstractmethod
    def _is_unique_violation(self, exc: BaseException) -> bool:
        """Whether ``exc`` is the backend's unique-constraint error."""

    # -- helpers ------------------------------------------------------------------

    def _exec(self, cur: Cursor, sql: str, params: Sequence[Any] = ()) -> Cursor:
        cur.execute(self.dialect.sql(sql), tuple(params))
        return cur

    def _exec_many(self, cur: Cursor, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """One statement for many parameter rows (no results): a single batch
        on backends that pipeline it."""
        if rows:
            cur.executemany(self.dialect.sql(sql), [tuple(r) for r in rows])

    def _insert_rows(
        self, cur: Cursor, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]
    ) -> None:
        """Insert ``rows`` (values of ``columns``) into ``table`` as they are,
        keys included: the bulk copy of a palace (transfer.py)."""
        marks = ", ".join("?" for _ in columns)
        self._exec_many(cur, f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", rows)

    # -- schema -------------------------------------------------------------------

    def _applied(self, cur: Cursor) -> set[int] | None:
        """The schema versions applied (None: no schema yet)."""
        try:
            rows = self._exec(cur, "SELECT version FROM schema_migrations").fetchall()
        except Exception:  # no such table yet: a new database
            return None
        return {int(r[0]) for r in rows}

    def _migrate(self) -> None:
        """Apply the migrations not applied yet, then read the palace's
        key length once (``hash_chars``), so no recall pays for it."""
        self._apply_migrations()
        self._hash_chars = None
        self.hash_chars()
        self._read_vector_codes()

    def _apply_migrations(self) -> None:
        # Opening a current palace must not take the write lock: readers
        # never wait for writers.
        with self._read() as cur:
            applied = self._applied(cur)
        if applied is not None and all(m.version in applied for m in MIGRATIONS):
            self._check_not_newer(max(applied, default=0))
            return
        with self._write() as cur:
            self._exec(
                cur,
                f"CREATE TABLE IF NOT EXISTS schema_migrations ("
                f"version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                f"applied_at {self.dialect.float_type} NOT NULL)",
            )
            applied = self._applied(cur) or set()
            self._check_not_newer(max(applied, default=0))
            now = datetime.now(timezone.utc).timestamp()
            # Every step not applied yet, in order (a step is applied once).
            for migration in MIGRATIONS:
                if migration.version in applied:
                    continue
                for statement in migration.statements(self.dialect):
                    self._exec(cur, statement)
                self._exec(
                    cur,
                    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                    (migration.version, migration.name, now),
                )

    def _check_not_newer(self, current: int) -> None:
        if current > latest_version():
            raise StorageError(
                f"{self.location} has schema version {current}, newer than this "
                f"mindpalace understands ({latest_version()}); upgrade mindpalace"
            )

    def schema_version(self) -> int:
        """The latest migration applied."""
        with self._read() as cur:
            row = self._exec(cur, "SELECT MAX(version) FROM schema_migrations").fetchone()
        return int(row[0] or 0)

    def hash_chars(self) -> int:
        """How many hex digits of a text's SHA-256 this palace keys it by
        (a memory's ``content_hash``, a vector's ``text_hash``): 32 from
        schema 30 on; 64 in a palace whose rows kept the longer keys (a
        PostgreSQL palace that held memories before it, or one older than
        schema 30). Read on opening: only a copy into an empty palace
        changes it (``store/transfer.py``)."""
        if self._hash_chars is None:
            with self._read() as cur:
                row = self._exec(
                    cur, "SELECT value FROM palace_meta WHERE key = 'hash_chars'"
                ).fetchone()
            self._hash_chars = FULL_HASH_CHARS if row is None else int(row[0])
        return self._hash_chars

    # -- the key a model's vectors are stored under ---------------------------------

    def _read_vector_codes(self) -> None:
        """Read whether the palace keys vectors by model codes, and the codes
        given so far (on opening, and after a copy replaced them)."""
        with self._read() as cur:
            rows = self._exec(
                cur, "SELECT key, value FROM palace_meta WHERE key LIKE 'vector!_code%' ESCAPE '!'"
            ).fetchall()
        self._vector_codes = any(str(key) == VECTOR_CODES for key, _ in rows)
        self._vector_keys = {
            str(key)[len(VECTOR_CODE) :]: str(int(value))
            for key, value in rows
            if str(key).startswith(VECTOR_CODE)
        }

    def _vector_key(self, cur: Cursor, model: str) -> str:
        """The key ``model``'s rows carry in the vector tables (``embeddings``,
        ``part_vectors``): its code (``"1"``, ``"2"``: the model's name in
        every row kept 840-byte rows at four to a page), or its name where
        the palace keeps names (a PostgreSQL palace that held vectors before
        schema 31) or no vector of the model was stored under a code yet
        (then no row has the code: a read finds nothing, as it should).

        A code is given in a transaction of its own (``_ensure_vector_key``),
        so one found here is committed and may be kept."""
        known = self._known_key(model)
        if known is not None:
            return known
        row = self._exec(
            cur, "SELECT value FROM palace_meta WHERE key = ?", (VECTOR_CODE + model,)
        ).fetchone()
        if row is None:
            return model
        key = str(int(row[0]))
        if self._vector_keys is None:
            self._vector_keys = {}
        self._vector_keys[model] = key
        return key

    def _known_key(self, model: str) -> str | None:
        """``model``'s key where no read is needed (its code kept, or the
        palace keeps names); None where a read must tell."""
        found = None if self._vector_keys is None else self._vector_keys.get(model)
        if found is not None:
            return found
        return None if self._vector_codes else model

    def _stored_key(self, model: str) -> str:
        """``_vector_key`` for a statement built before its read: from what
        was read before, or one read of its own."""
        known = self._known_key(model)
        if known is not None:
            return known
        with self._read() as cur:
            return self._vector_key(cur, model)

    def _ensure_vector_key(self, vectors: VectorBatch | None) -> None:
        """Before a write that stores ``vectors`` (outside its transaction):
        give their model a code if it has none, committed at once. The next
        code is the ``vector_codes`` counter's, raised under the write lock
        (PostgreSQL's row lock), so two writers never give two models one
        code."""
        if vectors is None or self._known_key(vectors.model) is not None:
            return
        model = vectors.model
        with self._write() as cur:
            if (
                self._exec(
                    cur, "SELECT value FROM palace_meta WHERE key = ?", (VECTOR_CODE + model,)
                ).fetchone()
                is None
            ):
                self._exec(
                    cur, "UPDATE palace_meta SET value = value + 1 WHERE key = ?", (VECTOR_CODES,)
                )
                self._exec(
                    cur,
                    "INSERT INTO palace_meta (key, value)"
                    " SELECT ?, value FROM palace_meta WHERE key = ?"
                    " ON CONFLICT (key) DO NOTHING",
                    (VECTOR_CODE + model, VECTOR_CODES),
                )
        with self._read() as cur:
            self._vector_key(cur, model)

    def _put_key(self, cur: Cursor, model: str) -> str:
        """The key a write stores ``model``'s vectors under: its code, which
        the write's method gave before its transaction (``_ensure_vector_key``)."""
        key = self._vector_key(cur, model)
        if self._vector_codes and key == model:
            raise StorageError(
                f"internal: vectors of {model} written before the model was given a code"
            )
        return key

    def size(self) -> int:
        """How many memories the palace holds, every scope's."""
        with self._read() as cur:
            return int(self._exec(cur, "SELECT COUNT(*) FROM memories").fetchone()[0])

    def generation(self) -> int:
        """A number that changes whenever anything is written."""
        return self.change_counters()[0]

    def change_counters(self) -> Counters:
        """The palace's change counters (``Counters``): every write of
        memories bumps the generation; writes that change existing rows in
        a way a copy cannot patch (delete, re-embedding) bump the epoch too;
        archiving, restoring and supersession bump ``flags``; vectors added
        for memories already written (``add_vectors``) bump only ``vectors``."""
        with self._read() as cur:
            rows = dict(
                self._exec(
                    cur,
                    "SELECT key, value FROM palace_meta"
                    " WHERE key IN ('generation', 'epoch', 'vectors', 'flags')",
                ).fetchall()
            )
        return Counters(*(int(rows.get(k, 0)) for k in ("generation", "epoch", "vectors", "flags")))

    def flag_changes(self, after: int) -> list[FlagChange]:
        """Each row archived, restored or superseded since the ``flags``
        counter was ``after``, with its flags now, by seq."""
        with self._read() as cur:
            rows = self._exec(cur, FLAG_CHANGES, (after,)).fetchall()
        return sorted(FlagChange(int(r[0]), bool(r[1]), bool(r[2])) for r in rows)

    def _flagged(self, cur: Cursor, where: str, params: Sequence[Any]) -> None:
        """Stamp the rows ``where`` selects (after changing their archived or
        superseded flag, in the same transaction) with a new ``flags`` value."""
        self._exec(cur, "UPDATE palace_meta SET value = value + 1 WHERE key = 'flags'")
        self._exec(
            cur,
            "UPDATE memories SET flagged = (SELECT value FROM palace_meta WHERE key = 'flags')"
            f" WHERE {where}",
            params,
        )

    # -- writes -------------------------------------------------------------------

    @contextmanager
    def _mutate(self, *, structural: bool = False) -> Iterator[Cursor]:
        """A write transaction that also bumps the palace generation (and the
        epoch, for writes that change existing rows rather than append)."""
        with self._write() as cur:
            yield cur
            self._exec(cur, "UPDATE palace_meta SET value = value + 1 WHERE key = 'generation'")
            if structural:
                self._exec(cur, "UPDATE palace_meta SET value = value + 1 WHERE key = 'epoch'")
