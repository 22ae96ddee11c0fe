"""Reads from PostgreSQL streaming replicas, with read-your-writes.

A palace may name read replicas beside its primary (``MINDPALACE_REPLICAS``,
or ``PostgresStore(url, replicas=[...])``): hot standbys of the primary,
fed by PostgreSQL's own streaming replication. Writes always go to the
primary. A read goes to a replica, in turn, once that replica has replayed
the WAL up to this process's last write: after every write transaction the
primary's WAL insert position (``pg_current_wal_insert_lsn()``, past the
commit record) is remembered, and a replica whose last known replay position
(``pg_last_wal_replay_lsn()``) is behind it is asked again, then passed
over; with no replica caught up, the primary serves. So whatever a process
wrote, any agent of that process (the writer included) reads it at once,
and a replica lagging behind costs one short query, never a stale answer.
Across processes, replicas are eventually consistent (their lag).

A replica that cannot be reached is left out for ``RETRY_SECONDS``; the
primary serves meanwhile.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

__all__ = ["RETRY_SECONDS", "Replicas"]

#: how long a replica that failed is left out
RETRY_SECONDS = 10.0
# How long a read waits for a replica's connection before the primary serves.
_CONNECT_SECONDS = 2.0

_REPLAYED = "SELECT COALESCE(pg_wal_lsn_diff(pg_last_wal_replay_lsn(), '0/0'), -1)::BIGINT"
_WRITTEN = "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::BIGINT"


class _Replica:
    """One replica's pool and what is known of its replay position."""

    def __init__(self, pool: ConnectionPool[psycopg.Connection[Any]]) -> None:
        self.pool = pool
        self.replayed = -1  # bytes of WAL known replayed; -1: not asked yet
        self.down_until = 0.0


class Replicas:
    """The read replicas of one primary, and this process's write position.

    Args:
        urls: the replicas' connection URLs.
        configure: run on each new connection (the store's session settings).
        max_connections: per replica.
    """

    def __init__(
        self,
        urls: Sequence[str],
        *,
        configure: Callable[[psycopg.Connection[Any]], None],
        max_connections: int,
    ) -> None:
        self._replicas = [
            _Replica(
                ConnectionPool(
                    url,
                    min_size=0,
                    max_size=max_connections,
                    kwargs={"autocommit": True, "prepare_threshold": None},
                    configure=configure,
                    timeout=_CONNECT_SECONDS,
                    open=True,
                )
            )
            for url in urls
        ]
        self._turn = itertools.count()
        self._lock = threading.Lock()
        self.written = 0  # the WAL position past this process's last commit

    @property
    def count(self) -> int:
        """How many replicas there are."""
        return len(self._replicas)

    def note_write(self, conn: psycopg.Connection[Any]) -> None:
        """Remember the primary's WAL position after a write committed on ``conn``."""
        row = conn.execute(_WRITTEN).fetchone()
        position = int(row[0]) if row is not None else 0
        with self._lock:
            self.written = max(self.written, position)

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any] | None]:
        """A connection to a replica that has replayed this process's last
        write, in turn; None when none has (the primary must serve)."""
        needed = self.written
        count = len(self._replicas)
        start = next(self._turn)
        for offset in range(count):
            replica = self._replicas[(start + offset) % count]
            if replica.down_until > time.monotonic():
                continue
            held = ExitStack()
            try:
                conn = held.enter_context(replica.pool.connection())
                if replica.replayed < needed:
                    row = conn.execute(_REPLAYED).fetchone()
                    replayed = int(row[0]) if row is not None else -1
                    # -1: not in recovery (a promoted standby): it has
                    # everything it will ever receive from this primary.
                    replica.replayed = needed if replayed < 0 else replayed
            except (PoolTimeout, psycopg.OperationalError):
                held.close()
                replica.down_until = time.monotonic() + RETRY_SECONDS
                replica.replayed = -1
                continue
            if replica.replayed < needed:
                held.close()
                continue
            with held:  # errors of the read itself reach the caller
                yield conn
            return
        yield None

    def close(self) -> None:
        """Close every replica's pool."""
        for replica in self._replicas:
            replica.pool.close()
