"""PostgreSQL's scope-first keyword search: the same BM25 as the warm
keyword index across scopes (idf and mean length of the rows the caller
sees), untouched by other agents' writes, per-partition counts and lengths
kept on every write, and an old palace keyed and measured on upgrade."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import psycopg
import pytest

from mindpalace import Palace, Selection
from mindpalace.config import Settings
from mindpalace.conversations import Message
from mindpalace.embed import HashingEmbedder
from mindpalace.models import NewMemory, RecallFilters, Scope, Visibility
from mindpalace.retrieval.keyword import KeywordIndex
from mindpalace.store import Store
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


QUERIES = [["tea"], ["green", "tea"], ["morning", "coffee"], ["release"], ["run", "running"]]


def _add(store: Store, key: str, row: tuple[str, str, str, str]) -> None:
    agent, visibility, group, text = row
    store.add(
        NewMemory(
            content=text,
            content_hash=content_hash(text, 32),
            agent_id=agent,
            visibility=Visibility(visibility),
            group=group or None,
        ),
        memory_id=key,
        now=NOW,
        scope=Scope(agent_id=agent),
    )


def _fill(store: Store) -> None:
    for n, row in enumerate(CORPUS):
        _add(store, f"mem_{n}", row)


@pytest.fixture
def both(tmp_path: Path, postgres_url: str) -> Iterator[tuple[SQLiteStore, PostgresStore]]:
    sqlite = SQLiteStore(tmp_path / "parity.db")
    postgres = PostgresStore(postgres_url, max_connections=2)
    for store in (sqlite, postgres):
        _fill(store)
    yield sqlite, postgres
    sqlite.close()
    postgres.close()


def _warm_scores(store: Store, terms: list[str], reader: Scope) -> dict[str, float]:
    """The warm keyword index's BM25 (``retrieval/keyword.py``, itself
    checked against FTS5's ``bm25()``) of every row ``reader`` sees, its
    idf and mean length counted over those rows."""
    visible = {m.id for m in store.iter_memories(reader)}
    ids = [f"mem_{n}" for n in range(len(CORPUS))]
    index = KeywordIndex([(None, text, None, "[]") for *_, text in CORPUS])
    mask = np.array([key in visible for key in ids], dtype=bool)
    scores = index.scores(terms, mask)
    return {key: float(scores[n]) for n, key in enumerate(ids) if mask[n] and scores[n] > 0}


@pytest.mark.parametrize("terms", [*QUERIES, ["zzz"]])
@pytest.mark.parametrize(
    "reader",
    [*READERS, Scope.management()],
    ids=[*(s.agent_id for s in READERS), "management"],
)
def test_scoped_bm25_equals_the_warm_index_across_scopes(
    both: tuple[SQLiteStore, PostgresStore], terms: list[str], reader: Scope
) -> None:
    """Per-scope idf and mean length, every visible match: the scores of
    the warm keyword index over the rows the reader sees, in its order."""
    _, postgres = both
    found = postgres.search_text(terms, reader, RecallFilters(), limit=50)
    expected = _warm_scores(postgres, terms, reader)
    assert {m.memory.id: m.bm25 for m in found} == pytest.approx(expected, rel=1e-9)
    assert [m.bm25 for m in found] == sorted((m.bm25 for m in found), reverse=True)


def test_the_palace_wide_search_equals_sqlites(both: tuple[SQLiteStore, PostgresStore]) -> None:
    """Where the reader sees every row, the statistics are the palace's:
    SQLite's FTS5 scores, the same on both backends."""
    sqlite, postgres = both
    for terms in QUERIES:
        a = sqlite.search_text(terms, Scope.management(), RecallFilters(), limit=50)
        b = postgres.search_text(terms, Scope.management(), RecallFilters(), limit=50)
        assert [m.memory.id for m in a] == [m.memory.id for m in b]
        assert [m.bm25 for m in a] == pytest.approx([m.bm25 for m in b], rel=1e-9)


def _answers(store: PostgresStore, reader: Scope) -> list[list[tuple[str, float]]]:
    return [
        [(m.memory.id, m.bm25) for m in store.search_text(terms, reader, RecallFilters(), limit=50)]
        for terms in QUERIES
    ]


def test_other_agents_writes_and_erasures_move_no_score(postgres_url: str) -> None:
    """What bob and cy write in partitions ann cannot see, long rows or
    short, with her query's words or without, and then delete, leaves
    every one of her scores and their order as they were."""
    store = PostgresStore(postgres_url, max_connections=2)
    try:
        _fill(store)
        ann = Scope(agent_id="ann")
        before = _answers(store, ann)
        assert all(before[:3])  # her queries find her rows
        others = [
            ("bob", "isolated", "", " ".join(["tea morning coffee green"] * 60)),
            ("bob", "isolated", "", "tea"),
            ("cy", "group", "ops", "green"),
            ("cy", "isolated", "", " ".join(["unrelated words of a long note"] * 80)),
        ]
        for n, row in enumerate(others):
            _add(store, f"other_{n}", row)
        assert _answers(store, ann) == before
        # Their rows moved the mean length of a reader who sees them.
        bob = Scope(agent_id="bob")
        _, all_rows, seen = store._collection_sizes(bob)
        assert seen < all_rows and _answers(store, bob) != before
        for n, (agent, *_) in enumerate(others):
            assert store.delete(f"other_{n}", owner=agent)
        assert _answers(store, ann) == before
    finally:
        store.close()


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
    """Each partition's row count, checked with its length (and the
    palace's, ``text_stats``) against a recount of the rows."""
    with store._read() as cur:
        rows = cur.execute(
            "SELECT agent_id, visibility, group_name, channel, docs, tokens FROM text_scopes"
            " WHERE docs > 0"
        ).fetchall()
        truth = cur.execute(
            "SELECT agent_id, visibility, group_name, channel, COUNT(*), SUM(fts_len)"
            " FROM memories GROUP BY agent_id, visibility, group_name, channel"
        ).fetchall()
        stats = cur.execute("SELECT docs, tokens FROM text_stats WHERE id = 1").fetchone()
        whole = cur.execute("SELECT COUNT(*), COALESCE(SUM(fts_len), 0) FROM memories").fetchone()
    assert {tuple(r[:4]): (int(r[4]), int(r[5])) for r in rows} == {
        tuple(r[:4]): (int(r[4]), int(r[5])) for r in truth
    }
    assert tuple(stats) == tuple(whole)
    return {tuple(r[:4]): int(r[4]) for r in rows}  # type: ignore[misc]


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
        # An edit of a text changes the row's length (the BEFORE trigger
        # sets fts_len, which the UPDATE itself does not name); an edit of
        # both scope and text moves the new length to the new partition.
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(
                "UPDATE memories SET content = content || ' and more words' WHERE id = 'mem_4'"
            )
            conn.execute(
                "UPDATE memories SET title = 'a long title of many words' WHERE id = 'mem_6'"
            )
            conn.execute(
                "UPDATE memories SET tags = '[\"kettle\"]', context = 'the kitchen'"
                " WHERE id = 'mem_7'"
            )
            conn.execute("UPDATE memories SET agent_id = 'cy', content = 'tea' WHERE id = 'mem_1'")
        _scope_counts(store)
    finally:
        store.close()


def _length(store: PostgresStore, memory_id: str) -> int:
    with store._read() as cur:
        row = cur.execute("SELECT fts_len FROM memories WHERE id = %s", (memory_id,)).fetchone()
    return int(row[0])


def test_partition_lengths_follow_an_erasure_that_rewrites_a_turn(postgres_url: str) -> None:
    """Erasing a turn rewrites the ``context`` of the next turn of its
    session (it held the erased turn's start): that row's length changes,
    and its partition's with it."""
    settings = Settings(agent_id="ann", signals=False)
    with Palace(
        postgres_url, agent_id="ann", settings=settings, embedder=HashingEmbedder(dimensions=16)
    ) as palace:
        store = palace.store
        assert isinstance(store, PostgresStore)
        turns = palace.add_messages(
            [
                Message("my locker code is 4417 and the gym is on Elm street", speaker="ann"),
                Message("noted, I will remember the locker", speaker="bot"),
                Message("thanks", speaker="ann"),
            ],
            session="gym",
        )
        assert sum(_scope_counts(store).values()) == 3
        long = _length(store, turns[1].id)
        palace.erase(Selection.memory(turns[0].id), confirm=True)
        assert _length(store, turns[1].id) < long
        assert sum(_scope_counts(store).values()) == 2


def test_an_old_palace_is_keyed_on_upgrade(
    older_pg_palace: Callable[[int], tuple[str, PostgresStore]],
) -> None:
    """A palace written before the scope keys (schema 9) gets its partition
    counts and key index when opened, and searches by them."""
    url, store = older_pg_palace(12)
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


def test_an_older_palace_gets_its_partition_lengths_on_upgrade(
    older_pg_palace: Callable[[int], tuple[str, PostgresStore]],
) -> None:
    """A palace written before the partition lengths (schema 19), with an
    edit of a text its triggers did not count, gets every partition's
    length and the palace's counted when opened, and searches with them."""
    url, store = older_pg_palace(20)
    _fill(store)
    _add(store, "edited", ("bob", "isolated", "", "short"))
    store.close()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE memories SET content = %s WHERE id = 'edited'", ("long " * 50,))
    store = PostgresStore(url)
    try:
        assert store.schema_version() == MIGRATIONS[-1].version
        assert sum(_scope_counts(store).values()) == len(CORPUS) + 1
        ann = Scope(agent_id="ann")
        for terms in QUERIES:
            found = store.search_text(terms, ann, RecallFilters(), limit=50)
            expected = _warm_scores(store, terms, ann)
            assert {m.memory.id: m.bm25 for m in found} == pytest.approx(expected, rel=1e-9)
    finally:
        store.close()
