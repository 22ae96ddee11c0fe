"""PostgreSQL's scope-first keyword search: the same BM25 as SQLite's
partitioned search across scopes, per-partition counts kept on every
write, and an old palace keyed on upgrade."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import psycopg
import pytest

from bench.pgserver import ThrowawayPostgres, database_url
from mindpalace.models import NewMemory, RecallFilters, Scope, Visibility
from mindpalace.store import Store, core
from mindpalace.store.migrations import MIGRATIONS
from mindpalace.store.postgres import PostgresStore
from mindpalace.store.sqlite import SQLiteStore
from mindpalace.validation import content_hash

NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)
# (agent, visibility, group, text)
CORPUS = [
    ("ann", "isolated", "", "Alice prefers green tea in the morning."),
    ("ann", "shared", "", "Bob drinks black coffee; Alice drinks tea too."),
    ("bob", "isolated", "", "The deploy runs every morning with make release."),
    ("bob", "shared", "", "Green energy and green tea are different things entirely."),
    ("bob", "isolated", "", "Coffee, tea, coffee again: the morning ritual of the team."),
    ("cy", "group", "ops", "tea tea tea morning green deploy"),
    ("cy", "isolated", "", "the release train leaves at noon"),
    ("ann", "isolated", "", "running runs morning"),
]
READERS = [
    Scope(agent_id="ann"),
    Scope(agent_id="bob"),
    Scope(agent_id="cy"),
    Scope(agent_id="dee", groups=("ops",)),
    Scope(agent_id="nobody"),
]


def _fill(store: Store) -> None:
    for n, (agent, visibility, group, text) in enumerate(CORPUS):
        store.add(
            NewMemory(
                content=text,
                content_hash=content_hash(text),
                agent_id=agent,
                visibility=Visibility(visibility),
                group=group or None,
            ),
            memory_id=f"mem_{n}",
            now=NOW,
            scope=Scope(agent_id=agent),
        )


@pytest.fixture
def both(tmp_path: Path, postgres_url: str) -> Iterator[tuple[SQLiteStore, PostgresStore]]:
    sqlite = SQLiteStore(tmp_path / "parity.db")
    postgres = PostgresStore(postgres_url, max_connections=2)
    for store in (sqlite, postgres):
        _fill(store)
    yield sqlite, postgres
    sqlite.close()
    postgres.close()


@pytest.mark.parametrize(
    "terms",
    [["tea"], ["green", "tea"], ["morning", "coffee"], ["release"], ["run", "running"], ["zzz"]],
)
@pytest.mark.parametrize("reader", READERS, ids=lambda s: s.agent_id)
def test_scoped_bm25_equals_sqlite_across_scopes(
    both: tuple[SQLiteStore, PostgresStore], terms: list[str], reader: Scope
) -> None:
    """Per-scope idf, global mean length, every visible match: the same
    ids in the same order and the same scores as SQLite's partitioned search."""
    sqlite, postgres = both
    a = sqlite.search_text(terms, reader, RecallFilters(), limit=50)
    b = postgres.search_text(terms, reader, RecallFilters(), limit=50)
    assert [m.memory.id for m in a] == [m.memory.id for m in b]
    assert [m.bm25 for m in a] == pytest.approx([m.bm25 for m in b], rel=1e-9)


def test_the_scoped_path_is_the_one_measured(both: tuple[SQLiteStore, PostgresStore]) -> None:
    """Readers who see part of the palace take the partitioned path (the
    test above would pass vacuously if every reader saw everything)."""
    _, postgres = both
    total = len(CORPUS)
    for reader in READERS:
        _, all_rows, seen = postgres._collection_sizes(reader)
        assert all_rows == total and seen < total


def test_word_probes_see_only_the_callers_partitions(
    both: tuple[SQLiteStore, PostgresStore],
) -> None:
    _, postgres = both
    with postgres._read() as cur:
        present = postgres._present(
            cur, ["tea", "deploy", "release", "zzz"], Scope(agent_id="ann"), include_archived=False
        )
        grouped = postgres._present(
            cur,
            ["deploy", "release"],
            Scope(agent_id="dee", groups=("ops",)),
            include_archived=False,
        )
    assert present == {"tea"}  # deploy and release live in bob's and cy's isolated rows
    assert grouped == {"deploy"}


def _scope_counts(store: PostgresStore) -> dict[tuple[str, str, str, str], int]:
    with store._read() as cur:
        rows = cur.execute(
            "SELECT agent_id, visibility, group_name, channel, docs FROM text_scopes WHERE docs > 0"
        ).fetchall()
        truth = cur.execute(
            "SELECT agent_id, visibility, group_name, channel, COUNT(*) FROM memories"
            " GROUP BY agent_id, visibility, group_name, channel"
        ).fetchall()
    counts = {tuple(r[:4]): int(r[4]) for r in rows}
    assert counts == {tuple(r[:4]): int(r[4]) for r in truth}
    return counts  # type: ignore[return-value]


def test_partition_counts_follow_every_write(postgres_url: str) -> None:
    store = PostgresStore(postgres_url, max_connections=2)
    try:
        _fill(store)
        before = _scope_counts(store)
        assert before[("ann", "isolated", "", "")] == 2
        # A change of scope columns (no API changes them; SQL may) moves
        # the row between partitions.
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute("UPDATE memories SET visibility = 'shared' WHERE id = 'mem_0'")
        moved = _scope_counts(store)
        assert moved[("ann", "isolated", "", "")] == 1
        assert moved[("ann", "shared", "", "")] == 2
        # A hard delete takes the row out of its partition's count.
        assert store.delete("mem_2", owner="bob")
        assert _scope_counts(store)[("bob", "isolated", "", "")] == 1
    finally:
        store.close()


def test_an_old_palace_is_keyed_on_upgrade(
    postgres_server: ThrowawayPostgres, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A palace written before the scope keys (schema 9) gets its partition
    counts and key index when opened, and searches by them."""
    name = f"{postgres_server.prefix}prekeys"
    with psycopg.connect(postgres_server.url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    url = database_url(postgres_server.url, name)
    old_version = max(m.version for m in MIGRATIONS if m.version < 12)
    try:
        with monkeypatch.context() as old:
            old.setattr(core, "MIGRATIONS", tuple(m for m in MIGRATIONS if m.version < 12))
            old.setattr(core, "latest_version", lambda: old_version)
            store = PostgresStore(url)
            assert store.schema_version() == old_version
            _fill(store)
            store.close()
        store = PostgresStore(url)
        try:
            assert store.schema_version() == MIGRATIONS[-1].version
            assert sum(_scope_counts(store).values()) == len(CORPUS)
            found = store.search_text(["release"], Scope(agent_id="cy"), RecallFilters(), limit=5)
            assert [m.memory.id for m in found] == ["mem_6"]
        finally:
            store.close()
    finally:
        postgres_server.drop(url)
