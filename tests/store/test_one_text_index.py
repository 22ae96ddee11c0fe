"""SQLite keeps one keyword index, partitioned by scope (schema 32): an
older palace loses the whole-palace index when opened, every search reads
the partitioned one, and several words ranked together over several
partitions give the rows and scores of scoring every visible row."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import pytest
from tests.store.older_palaces import NOTES, open_palace

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.models import RecallFilters, Scope, Visibility
from mindpalace.retrieval.dense import DenseIndex
from mindpalace.retrieval.hybrid import warm_matches
from mindpalace.retrieval.sparse import query_terms
from mindpalace.store.migrations import latest_version
from mindpalace.store.sqlite import SQLiteStore
from mindpalace.store.sqlite_rank import PhraseList, counted
from mindpalace.store.sqlite_text import partition_key

WORDS = "falcon billing deploy audit kafka queue review ledger".split()
FILLER = "the team wrote notes about work during the week".split()
QUERIES = ["falcon", "billing audit", "kafka queue ledger review", " ".join(WORDS)]


def _text(rng: random.Random, tag: str, i: int) -> str:
    found = [rng.choice(WORDS) for _ in range(rng.randint(1, 4))]
    words = found + [rng.choice(FILLER) for _ in range(rng.randint(0, 60))]
    rng.shuffle(words)
    return f"{tag}{i} " + " ".join(words)


def _fill(store: SQLiteStore) -> dict[str, Palace]:
    """Three agents; ann's memories isolated, shared and in a group."""
    rng = random.Random(7)
    palaces = {
        name: Palace(
            store=store,
            agent_id=name,
            groups=("crew",),
            settings=Settings(agent_id=name, embedder="none"),
        )
        for name in ("ann", "bob", "cyd")
    }
    for name, palace in palaces.items():
        for visibility in ("isolated", "shared", "group"):
            palace.remember_many(
                [
                    {
                        "content": _text(rng, f"{name}-{visibility}-", i),
                        "visibility": visibility,
                        **({"group": "crew"} if visibility == "group" else {}),
                    }
                    for i in range(60)
                ]
            )
    return palaces


def _search(
    store: SQLiteStore, scope: Scope, query: str, limit: int, filters: RecallFilters
) -> list[tuple[str, float]]:
    found = store.search_text(query_terms(query), scope, filters, limit=limit)
    return [(m.memory.id, m.bm25) for m in found]


def _warm(
    store: SQLiteStore, scope: Scope, query: str, limit: int, filters: RecallFilters
) -> list[tuple[str, float]]:
    index = DenseIndex(store.load_vectors("none", texts=True), generation=0)
    return warm_matches(index, scope, query_terms(query), limit=limit, filters=filters)


def test_several_words_over_several_partitions_rank_as_every_row_scored(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "palace.db")
    palaces = _fill(store)
    scopes = [palaces["ann"].scope, palaces["bob"].scope, Scope.management()]
    everyone = RecallFilters()
    shared = RecallFilters(visibilities=(Visibility.SHARED,))
    for scope in scopes:
        for query in QUERIES:
            for limit in (1, 7, 40):
                for filters in (everyone, shared):
                    got = _search(store, scope, query, limit, filters)
                    want = _warm(store, scope, query, limit, filters)
                    assert [i for i, _ in got] == [i for i, _ in want], (query, limit)
                    assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-12)
                    assert len(got) == limit
    store.close()


def test_an_older_palace_drops_the_whole_palace_index(
    tmp_path: Path, opened_before: Callable[[int], AbstractContextManager[None]]
) -> None:
    path = tmp_path / "older.db"
    with opened_before(32), open_palace(path) as palace:
        palace.remember_many([{"content": note} for note in NOTES])
        palace.remember("Maria Lopez keeps the billing ledger", visibility="shared")
        before = {q: palace.recall(q, limit=5) for q in ("billing ledger", "standup room")}
        assert palace.engine.store.schema_version() == 31
    con = sqlite3.connect(path)
    assert con.execute("SELECT COUNT(*) FROM sqlite_master WHERE name = 'memories_fts'").fetchone()
    con.close()
    with open_palace(path) as palace:
        assert palace.engine.store.schema_version() == latest_version()
        after = {q: palace.recall(q, limit=5) for q in before}
        assert {q: [h.memory.id for h in hits] for q, hits in after.items()} == {
            q: [h.memory.id for h in hits] for q, hits in before.items()
        }
        written = palace.remember("The falcon release ships on Friday")
        assert [h.memory.id for h in palace.recall("falcon release", limit=1)] == [written.id]
        assert palace.engine.store.integrity_check() == "ok"
    con = sqlite3.connect(path)
    try:
        kinds = con.execute("SELECT name, type FROM sqlite_master").fetchall()
        names = {name for name, kind in kinds if kind == "table"}
        triggers = {name for name, kind in kinds if kind == "trigger"}
        assert not {n for n in names if n == "memories_fts" or n.startswith("memories_fts_")} - {
            "memories_fts_scoped",
            "memories_fts_scoped_data",
            "memories_fts_scoped_idx",
            "memories_fts_scoped_docsize",
            "memories_fts_scoped_config",
            "memories_fts_parts",
            "memories_fts_positions",
        }
        assert not {t for t in triggers if t.startswith("memories_fts_")} - {
            "memories_fts_scoped_insert",
            "memories_fts_scoped_delete",
            "memories_fts_scoped_update",
        }
    finally:
        con.close()


def test_a_phrase_is_counted_where_its_tokens_follow_each_other() -> None:
    # (row, column, offset) of each token: "kafka" then "queue".
    kafka = [(1, "content", 3), (1, "content", 9), (2, "title", 0), (3, "content", 5)]
    queue = [(1, "content", 4), (1, "content", 7), (2, "title", 1), (3, "context", 6)]
    assert counted([kafka, queue]) == {1: 1.0, 2: 1.5}
    assert counted([kafka]) == {1: 2.0, 2: 1.5, 3: 1.0}
    assert counted([]) == {}


def test_a_word_no_list_read_is_counted_at_the_rows_that_need_it(tmp_path: Path) -> None:
    # Rare words fill the list before the common one is read: it is counted
    # at their rows only, and the scores are those of scoring every row.
    store = SQLiteStore(tmp_path / "palace.db")
    palaces = _fill(store)
    ann = palaces["ann"]
    texts = [f"plover{i % 3} sighting with the team {'team ' * (i % 4)}" for i in range(12)]
    ann.remember_many([{"content": text} for text in texts])
    counts = store._counts
    calls: list[int] = []

    def counted_at(*args: object) -> dict[int, float]:
        calls.append(len(args[-1]))  # type: ignore[arg-type]
        return counts(*args)  # type: ignore[arg-type]

    store._counts = counted_at  # type: ignore[method-assign]
    for query in ("plover0 team", "plover1 plover2 team week", "team plover0"):
        for limit in (1, 3, 12):
            got = _search(store, ann.scope, query, limit, RecallFilters())
            want = _warm(store, ann.scope, query, limit, RecallFilters())
            assert [i for i, _ in got] == [i for i, _ in want], (query, limit)
            assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-12)
    assert calls  # the common word was counted, not read
    store.close()


def test_a_filter_of_agents_and_visibilities_reads_only_their_partitions(tmp_path: Path) -> None:
    # A write's look for what it restates asks for its own agent's and
    # visibility's rows: the other partitions the scope sees count for the
    # idf (the scores stay the warm index's) but none of their lists is read.
    store = SQLiteStore(tmp_path / "palace.db")
    palaces = _fill(store)
    read_parts: list[tuple[str, ...]] = []
    read_list = store._read_list

    def reading(cur: object, found: PhraseList, *args: object) -> None:
        read_parts.append(found.tokens)
        read_list(cur, found, *args)  # type: ignore[arg-type]

    store._read_list = reading  # type: ignore[method-assign]
    con = sqlite3.connect(tmp_path / "palace.db")
    partitions = con.execute(
        "SELECT agent_id, visibility, group_name, channel FROM memories_fts_parts"
    ).fetchall()
    con.close()
    own = RecallFilters(agents=("ann",), visibilities=(Visibility.ISOLATED,))
    two = RecallFilters(agents=("ann", "bob"), visibilities=(Visibility.SHARED, Visibility.GROUP))
    for scope in (palaces["ann"].scope, Scope.management()):
        for filters in (own, two):
            admitted = [
                partition_key(agent, visibility, group, channel)
                for agent, visibility, group, channel in partitions
                if agent in filters.agents and visibility in {v.value for v in filters.visibilities}
            ]
            for query in QUERIES:
                for limit in (1, 5, 40):
                    read_parts.clear()
                    got = _search(store, scope, query, limit, filters)
                    want = _warm(store, scope, query, limit, filters)
                    assert [i for i, _ in got] == [i for i, _ in want], (query, limit)
                    assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-12)
                    assert got
                    assert read_parts
                    for tokens in read_parts:
                        assert any(t.startswith(tuple(admitted)) for t in tokens), tokens
    store.close()
