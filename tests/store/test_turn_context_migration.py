"""Migration 11: conversation turns written when a turn kept the whole
previous turn as keyword context keep its first characters, on every
backend, exactly as a fresh ingest indexes them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path

import psycopg
import pytest

from bench.pgserver import ThrowawayPostgres, database_url
from mindpalace import Palace, transcripts
from mindpalace.config import Settings
from mindpalace.conversations import Message
from mindpalace.embed.hashing import HashingEmbedder
from mindpalace.store import core
from mindpalace.store.graph_sql import GraphSql
from mindpalace.store.link_rows import LinkWrites
from mindpalace.store.migrations import MIGRATIONS, TURN_CONTEXT_CHARS, Migration
from mindpalace.store.postgres import PostgresStore
from mindpalace.store.same_as_sql import SameAsSql
from mindpalace.store.sqlite import SQLiteStore

LONG = "I compared three espresso machines for a week " * 12  # 564 characters
WHEN = datetime(2023, 5, 20, 9, 30, tzinfo=timezone.utc)
TURNS = [
    Message(LONG + "and the Gaggia won.", role="user", session="s1", created_at=WHEN),
    Message("Which grinder do you pair it with?", role="assistant", session="s1", created_at=WHEN),
    Message("A Niche Zero, bought yesterday.", role="user", session="s1", created_at=WHEN),
    Message("Short first turn", role="user", session="s2", created_at=WHEN),
    Message(LONG, role="assistant", session="s2", created_at=WHEN),
    Message("Noted.", role="user", session="s2", created_at=WHEN),
]


def test_the_rule_and_the_migration_agree() -> None:
    assert transcripts.CONTEXT_CHARS == TURN_CONTEXT_CHARS


@pytest.fixture(params=["sqlite", "postgres"])
def old_target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str | Path]]:
    if request.param == "sqlite":
        yield "sqlite", tmp_path / "old.db"
        return
    server: ThrowawayPostgres = request.getfixturevalue("postgres_server")
    name = f"{server.prefix}turnctx"
    with psycopg.connect(server.url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")  # empty: not from the migrated template
    url = database_url(server.url, name)
    try:
        yield "postgres", url
    finally:
        server.drop(url)


def _open(backend: str, target: str | Path) -> SQLiteStore | PostgresStore:
    return SQLiteStore(Path(target)) if backend == "sqlite" else PostgresStore(str(target))


def _contexts(store: SQLiteStore | PostgresStore, agent: str) -> dict[str, str | None]:
    with Palace(
        store=store,
        agent_id=agent,
        settings=Settings(agent_id=agent, signals=False),
        embedder=HashingEmbedder(dimensions=32),
    ) as palace:
        return {m.content: m.context for m in palace.memories(limit=100, categories="conversation")}


_write_links = GraphSql._write_links


def _links_of_schema_9(store: GraphSql, cur: object, writes: LinkWrites) -> None:
    """``_write_links`` with the mentions written as schema 9 holds them."""
    store._exec_many(
        cur,
        "INSERT INTO mentions (memory_seq, entity_seq, surface) VALUES (?, ?, ?)",
        [(writes.seqs[m], e, surface) for m, e, surface, _ in writes.mentions],
    )
    writes.mentions.clear()
    _write_links(store, cur, writes)


def test_migration_cuts_old_contexts_as_new_ingest_does(
    old_target: tuple[str, str | Path],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    older_migrations: Callable[[int], tuple[Migration, ...]],
) -> None:
    backend, target = old_target
    settings = Settings(agent_id="ann", signals=False)
    embedder = HashingEmbedder(dimensions=32)
    with monkeypatch.context() as old:
        earlier = older_migrations(10)
        old.setattr(core, "MIGRATIONS", earlier)
        old.setattr(core, "latest_version", lambda: earlier[-1].version)
        old.setattr(transcripts, "CONTEXT_CHARS", 10**9)  # the whole previous turn
        # Entities of schema 9 have no links to short names (migration 17).
        old.setattr(SameAsSql, "_first_name_rule", lambda *args: None)
        # Mentions of schema 9 have no mark of the facts among them (22).
        old.setattr(GraphSql, "_write_links", _links_of_schema_9)
        store = _open(backend, target)
        assert store.schema_version() == earlier[-1].version
        with Palace(store=store, agent_id="ann", settings=settings, embedder=embedder) as p:
            p.add_messages(TURNS)
            p.remember("A hand-written note", context=LONG + LONG)
        before = _contexts(_open(backend, target), "ann")
    assert before["assistant: Which grinder do you pair it with?"].startswith(
        "user: " + LONG + "and the Gaggia won."
    )
    # opened by this version: migrated
    migrated_store = _open(backend, target)
    assert migrated_store.schema_version() == MIGRATIONS[-1].version
    after = _contexts(migrated_store, "ann")
    # a fresh ingest under today's rule
    fresh_path = tmp_path / "fresh.db"
    with Palace(fresh_path, agent_id="ann", settings=settings, embedder=embedder) as p:
        p.add_messages(TURNS)
    fresh = _contexts(SQLiteStore(fresh_path), "ann")
    assert after == fresh
    cut = after["assistant: Which grinder do you pair it with?"]
    assert cut is not None and cut == ("user: " + LONG)[:TURN_CONTEXT_CHARS].rstrip()
    # the dates line after the previous turn stays
    said = after["user: A Niche Zero, bought yesterday."]
    assert said is not None and said.endswith("when: 19 May 2023")
    # short previous turns and first turns are unchanged
    assert after["user: Noted."] == ("assistant: " + LONG)[:TURN_CONTEXT_CHARS].rstrip()
    assert after["assistant: " + LONG.strip()] == "user: Short first turn"
    # keyword search follows the new context: the old context's tail is gone
    with Palace(
        store=_open(backend, target), agent_id="ann", settings=settings, embedder=embedder
    ) as palace:
        found = palace.recall("Gaggia", limit=10)
        assert [h.memory.content for h in found][:1] == ["user: " + LONG + "and the Gaggia won."]
