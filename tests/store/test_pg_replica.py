"""Read replicas: a real primary and a streaming hot standby of it
(``pg_basebackup -R``, on its own socket), started by the test.

Writes go to the primary; reads go to the standby once it has replayed the
process's last write, else to the primary, so a writer always reads what
it wrote, even while the standby is held back; a standby that is down
leaves the primary to serve."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime, timezone

import psycopg
import pytest

from bench.pgserver import ThrowawayPostgres, ThrowawayStandby
from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.embed import HashingEmbedder
from mindpalace.engine import Engine
from mindpalace.errors import ConfigError
from mindpalace.store import open_store
from mindpalace.store.postgres import PostgresStore

NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def standby(postgres_server: ThrowawayPostgres) -> Iterator[ThrowawayStandby]:
    server = ThrowawayStandby(postgres_server.url)
    yield server
    server.stop()


@pytest.fixture
def urls(postgres_url: str, standby: ThrowawayStandby) -> tuple[str, str]:
    """A fresh palace on the primary, and its URL on the standby (once the
    standby has replayed its creation)."""
    replica = standby.url_of(postgres_url)
    standby.wait_for(replica)
    return postgres_url, replica


def _served_by_standby(store: PostgresStore) -> bool:
    with store._read() as cur:
        return bool(cur.execute("SELECT pg_is_in_recovery()").fetchone()[0])


def _wait_until(check: object, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "the standby did not catch up"
        time.sleep(0.05)


def _palace(primary: str, replica: str, agent: str = "ann") -> Palace:
    settings = Settings(agent_id=agent, replicas=(replica,), signals=False)
    return Palace(primary, agent_id=agent, settings=settings, embedder=HashingEmbedder(64))


def test_reads_go_to_the_standby_and_writes_to_the_primary(urls: tuple[str, str]) -> None:
    primary, replica = urls
    with _palace(primary, replica) as palace:
        store = palace.store
        assert isinstance(store, PostgresStore) and store.replicas == 1
        # Nothing written by this process yet: the standby serves at once.
        assert _served_by_standby(store)
        memory = palace.remember("the standby streams from the primary")  # a write: primary
        assert palace.get(memory.id).content == memory.content  # read-your-writes
        _wait_until(lambda: _served_by_standby(store))
        hits = palace.recall("standby streams")
        assert [h.memory.id for h in hits][:1] == [memory.id]


def test_the_writer_reads_its_writes_while_the_standby_is_held_back(
    urls: tuple[str, str], standby: ThrowawayStandby
) -> None:
    primary, replica = urls
    with _palace(primary, replica) as palace, psycopg.connect(replica, autocommit=True) as admin:
        store = palace.store
        assert isinstance(store, PostgresStore)
        _wait_until(lambda: _served_by_standby(store))
        admin.execute("SELECT pg_wal_replay_pause()")
        try:
            written = [palace.remember(f"paused note {i} about kayaks") for i in range(3)]
            # The standby has not replayed them: the primary serves, and
            # every read of the writer sees every write.
            assert not _served_by_standby(store)
            assert {h.memory.id for h in palace.recall("kayaks", limit=10)} >= {
                m.id for m in written
            }
            assert len(palace.memories(limit=10)) == 3
            # The standby itself does not have them yet (the test can fail).
            with psycopg.connect(replica, autocommit=True) as direct:
                held = direct.execute("SELECT COUNT(*) FROM memories").fetchone()[0]
            assert held == 0
        finally:
            admin.execute("SELECT pg_wal_replay_resume()")
        _wait_until(lambda: _served_by_standby(store))
        assert len(palace.memories(limit=10)) == 3


def test_a_standby_that_is_down_leaves_the_primary_to_serve(postgres_url: str) -> None:
    # A socket nobody listens on: every read finds the replica unreachable.
    dead = "postgresql://postgres@/postgres?host=/nonexistent-mindpalace&port=5999"
    store = open_store(postgres_url, replicas=[dead])
    try:
        assert isinstance(store, PostgresStore)
        assert not _served_by_standby(store)
        assert store.size() == 0
    finally:
        store.close()


def test_replica_settings_are_checked(tmp_path: object, postgres_url: str) -> None:
    env = {"MINDPALACE_REPLICAS": "postgresql://a@h1/db, postgresql://b:secret@h2/db"}
    settings = Settings.from_env(env)
    assert settings.replicas == ("postgresql://a@h1/db", "postgresql://b:secret@h2/db")
    assert "secret" not in repr(settings)
    with pytest.raises(ConfigError, match="PostgreSQL palace"):
        Engine(f"{tmp_path}/palace.db", settings=Settings(replicas=("postgresql://a@h/db",)))
    with pytest.raises(ConfigError, match="postgresql:// URL"):
        PostgresStore(postgres_url, replicas=["mysql://x"])
