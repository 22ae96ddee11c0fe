"""Moving a palace between backends: SQLite -> PostgreSQL -> SQLite is identical."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mindpalace import Palace
from mindpalace.cli import main
from mindpalace.config import Settings
from mindpalace.embed.hashing import HashingEmbedder
from mindpalace.errors import StorageError
from mindpalace.models import Scope
from mindpalace.store import migrate
from mindpalace.store.core import SqlCore
from mindpalace.store.postgres import PostgresStore
from mindpalace.store.sqlite import SQLiteStore
from mindpalace.store.transfer import NOT_COPIED, TABLE_ORDER, copy_palace, palace_digests


def _fill(store: SqlCore) -> None:
    """Memories of every shape, vectors, and rows in the graph tables."""
    settings = Settings(agent_id="alice")
    alice = Palace(store=store, agent_id="alice", settings=settings, embedder=HashingEmbedder())
    alice.remember(
        "Alice prefers green tea — ünïcödé, 100% sure; use_underscores.",
        title="Tea",
        tags=["team", "drinks"],
        category="person",
        metadata={"nested": {"k": [1, 2.5, None]}},
        confidence=0.7,
    )
    alice.remember("Deploy with make release.", visibility="shared", constraint=True)
    # A first name linked to a full name written after it (a later key), and
    # a pair kept apart.
    alice.remember("Maria: I will take it")
    alice.remember("Maria Lopez owns the billing service")
    alice.remember("Aisha Khan leads search")
    alice.remember("Aisha: I review it")
    alice.graph.separate_entity("Aisha")
    alice.remember("Group secret", visibility="group", group="ops", tags=["ops"])
    alice.remember("Only in the support channel", channel="support")
    gone = alice.remember("An archived thought")
    alice.forget(gone.id)
    alice.remember(
        "Fact with validity", valid_from="2025-01-01T00:00:00Z", valid_to="2026-01-01T00:00:00Z"
    )
    alice.remember("Deploy with make release.", visibility="shared")  # dedup bump
    with store._write() as cur:
        now = 1_760_000_000.123456789
        store._exec(
            cur,
            "INSERT INTO entities (id, agent_id, visibility, name, norm, type, kind,"
            " mentions, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            ("ent_1", "alice", "isolated", "Zora Q", "zora q", "person", "name", 2, now, now),
        )
        store._exec(
            cur,
            "INSERT INTO entities (id, agent_id, visibility, name, norm, type, kind,"
            " mentions, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            ("ent_2", "alice", "isolated", "Qat", "qat", "concept", "name", 1, now, now),
        )
        seqs = [
            r[0]
            for r in store._exec(
                cur, "SELECT seq FROM entities WHERE id IN ('ent_1', 'ent_2') ORDER BY seq"
            )
        ]
        memory = store._exec(cur, "SELECT MIN(seq) FROM memories").fetchone()[0]
        store._exec(
            cur, "INSERT INTO entity_aliases (entity_seq, alias) VALUES (?, ?)", (seqs[0], "ali")
        )
        store._exec(
            cur,
            "INSERT INTO mentions (memory_seq, entity_seq, surface, count) VALUES (?, ?, ?, ?)",
            (memory, seqs[0], "Alice", 1),
        )
        store._exec(
            cur,
            "INSERT INTO entity_edges (src_seq, dst_seq, count, weight, updated_at)"
            " VALUES (?, ?, ?, ?, ?)",
            (seqs[0], seqs[1], 3, 0.333, now),
        )
        store._exec(
            cur,
            "INSERT INTO memory_links (src_seq, dst_seq, kind, weight, created_at, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (memory, memory + 1, "supersedes", 1.0, now, now),
        )
        store._exec(
            cur,
            "INSERT INTO signals (at, kind, agent_id, memory_id, query, data)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (now, "recall", "alice", None, "tea?", '{"n": 1}'),
        )


def test_sqlite_to_postgres_to_sqlite_is_identical(tmp_path: Path, postgres_url: str) -> None:
    first = SQLiteStore(tmp_path / "first.db")
    _fill(first)
    middle = PostgresStore(postgres_url)
    last = SQLiteStore(tmp_path / "last.db")
    try:
        there = copy_palace(first, middle)
        back = copy_palace(middle, last)
        assert there.identical and back.identical
        assert there.memories == back.memories == 10
        assert there.memory_digest == back.memory_digest
        rows = {t.table: t.source_rows for t in there.tables}
        # Linking adds entities of its own; the two written by hand are among them.
        assert rows["entities"] >= 2 and rows["signals"] >= 1 and rows["embeddings"] == 10
        assert rows["entity_apart"] == 1
        digests = palace_digests(first)
        assert digests == palace_digests(middle) == palace_digests(last)
        assert set(digests) == {*TABLE_ORDER, "memories/each"}
        everyone = Scope.management()
        assert list(first.iter_memories(everyone)) == list(middle.iter_memories(everyone))
        assert list(first.iter_memories(everyone)) == list(last.iter_memories(everyone))
        assert first.embedding_config() == middle.embedding_config() == last.embedding_config()
    finally:
        for s in (first, middle, last):
            s.close()


def test_every_table_is_copied_or_named_as_bookkeeping(postgres_url: str, tmp_path: Path) -> None:
    for store in (SQLiteStore(tmp_path / "t.db"), PostgresStore(postgres_url)):
        with store._read() as cur:
            names = {r[0] for r in store._exec(cur, store.dialect.list_tables_sql).fetchall()}
        store.close()
        # A table a later migration adds must be placed in TABLE_ORDER (or
        # NOT_COPIED) deliberately; copying it last by name may break its keys.
        assert names - NOT_COPIED == set(TABLE_ORDER), store.location


def test_migrated_palace_recalls_the_same_and_keeps_writing(
    tmp_path: Path, postgres_url: str
) -> None:
    source = tmp_path / "source.db"
    store = SQLiteStore(source)
    _fill(store)
    store.close()
    report = migrate(source, postgres_url)
    assert report.identical
    settings = Settings(agent_id="alice")
    with (
        Palace(source, agent_id="alice", settings=settings, embedder=HashingEmbedder()) as a,
        Palace(postgres_url, agent_id="alice", settings=settings, embedder=HashingEmbedder()) as b,
    ):
        for query in ["green tea", "deploy release", "secret"]:
            assert [h.memory.id for h in a.recall(query)] == [h.memory.id for h in b.recall(query)]
        # Keys were inserted explicitly: the sequences must have moved past them.
        new = b.remember("Written after the move")
        assert b.get(new.id).content == "Written after the move"
        assert b.stats().memories == a.stats().memories + 1


def test_refuses_a_destination_that_is_not_empty(tmp_path: Path, postgres_url: str) -> None:
    source = SQLiteStore(tmp_path / "s.db")
    _fill(source)
    target = PostgresStore(postgres_url)
    Palace(store=target, embedder=HashingEmbedder()).remember("already here")
    before = palace_digests(target)
    try:
        with pytest.raises(StorageError, match="already holds 1 memories"):
            copy_palace(source, target)
        assert palace_digests(target) == before
    finally:
        source.close()
        target.close()


def test_cli_migrate_reports_counts_and_hashes(
    tmp_path: Path, postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "cli.db"
    store = SQLiteStore(db)
    _fill(store)
    store.close()
    assert main(["migrate", "--from", str(db), "--to", postgres_url]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["identical"] is True
    assert report["from"] == str(db) and report["to"] == postgres_url
    assert report["memories"] == 10
    memories = report["tables"]["memories"]
    assert memories["rows"] == {"from": 10, "to": 10}
    assert memories["sha256"]["from"] == memories["sha256"]["to"]
    back = tmp_path / "back.db"
    assert main(["migrate", "--from", postgres_url, "--to", str(back)]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["memory_digest"] == report["memory_digest"]
    # A second run into the now non-empty palace is refused, exit 1.
    assert main(["migrate", "--from", str(db), "--to", str(back)]) == 1
    assert "already holds 10 memories" in capsys.readouterr().err
