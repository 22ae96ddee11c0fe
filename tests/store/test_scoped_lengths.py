"""SQLite's keyword search before the warm index is built (FTS5 on disk)
counts BM25's mean length, like idf, over the rows the caller sees: what
other agents write or erase moves neither the scores nor the order of this
one's hits, and FTS5's rank-first window still yields the true best rows
once re-scored."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.models import RecallFilters, Scope
from mindpalace.retrieval.sparse import query_terms
from mindpalace.store.sqlite import SQLiteStore

WORDS = "falcon billing deploy audit kafka queue review ledger".split()
FILLER = "the team wrote notes about work during the week".split()


def _palace(store: SQLiteStore, agent: str) -> Palace:
    return Palace(store=store, agent_id=agent, settings=Settings(agent_id=agent, embedder="none"))


def _texts(count: int, *, seed: int, low: int, high: int, tag: str) -> list[dict[str, object]]:
    rng = random.Random(seed)
    out: list[dict[str, object]] = []
    for i in range(count):
        found = [rng.choice(WORDS) for _ in range(rng.randint(1, 4))]
        filler = [rng.choice(FILLER) for _ in range(rng.randint(low, high))]
        words = found + filler
        rng.shuffle(words)
        out.append({"content": f"{tag}{i} " + " ".join(words)})
    return out


def _search(store: SQLiteStore, scope: Scope, query: str, limit: int) -> list[tuple[str, float]]:
    matches = store.search_text(query_terms(query), scope, RecallFilters(), limit=limit)
    return [(m.memory.content, m.bm25) for m in matches]


QUERIES = ["falcon", "billing audit", "kafka queue ledger review"]


@pytest.mark.parametrize(("low", "high"), [(0, 1), (60, 90)], ids=["short", "long"])
def test_other_agents_writes_and_erasures_move_no_score(
    tmp_path: Path, low: int, high: int
) -> None:
    store = SQLiteStore(tmp_path / "palace.db")
    ann, bob = _palace(store, "ann"), _palace(store, "bob")
    ann.remember_many(_texts(80, seed=1, low=2, high=30, tag="ann"))
    bob.remember_many(_texts(5, seed=2, low=5, high=10, tag="bob"))
    before = {q: _search(store, ann.scope, q, 20) for q in QUERIES}
    assert all(before.values())
    written = bob.remember_many(_texts(120, seed=3, low=low, high=high, tag="more"))
    after = {q: _search(store, ann.scope, q, 20) for q in QUERIES}
    for memory in written[:100]:
        bob.forget(memory.id, hard=True)
    erased = {q: _search(store, ann.scope, q, 20) for q in QUERIES}
    assert after == before  # the same floats, the same order
    assert erased == before
    # And a word's are what FTS5 itself gives a palace of ann's memories
    # alone. (Several words are searched one by one, each word's best
    # ``limit`` summed, so they may differ from FTS5's single query.)
    alone = SQLiteStore(tmp_path / "alone.db")
    own = _palace(alone, "ann")
    own.remember_many(_texts(80, seed=1, low=2, high=30, tag="ann"))
    for word in WORDS:
        got, expected = _search(store, ann.scope, word, 20), _search(alone, own.scope, word, 20)
        assert [c for c, _ in got] == [c for c, _ in expected]
        assert [s for _, s in got] == pytest.approx([s for _, s in expected], rel=1e-12)
    store.close()
    alone.close()


@pytest.mark.parametrize(("low", "high"), [(0, 0), (150, 200)], ids=["others_short", "others_long"])
@pytest.mark.parametrize("limit", [3, 20])
def test_the_window_yields_the_best_rows_under_the_scopes_mean_length(
    tmp_path: Path, low: int, high: int, limit: int
) -> None:
    store = SQLiteStore(tmp_path / "palace.db")
    ann, bob = _palace(store, "ann"), _palace(store, "bob")
    # Ann's rows mix short ones holding a word once and long ones holding it
    # often; which come first depends on the mean length BM25 divides by.
    ann.remember_many(_texts(300, seed=4, low=0, high=120, tag="ann"))
    bob.remember_many(_texts(400, seed=5, low=low, high=high, tag="bob"))
    for query in QUERIES:
        wide = _with_window(store, ann.scope, query, limit, floor=1_000_000, per_hit=4)
        narrow = _with_window(store, ann.scope, query, limit, floor=1, per_hit=1)
        assert narrow == wide, query
        assert len(wide) == limit
    # FTS5's own order of ann's rows (the whole index's mean length) differs:
    # the window had rows to move.
    fts5 = [
        row[0]
        for row in store._conn.execute(
            "SELECT m.content FROM memories_fts JOIN memories m ON m.seq = memories_fts.rowid"
            " WHERE memories_fts MATCH 'falcon' AND m.agent_id = 'ann'"
            " ORDER BY bm25(memories_fts, 1.5, 1.0, 0.5, 1.0), m.created_at DESC, m.id DESC"
            " LIMIT 40"
        )
    ]
    ours = [c for c, _ in _with_window(store, ann.scope, "falcon", 40, floor=1, per_hit=1)]
    assert ours != fts5
    store.close()


def _with_window(
    store: SQLiteStore, scope: Scope, query: str, limit: int, *, floor: int, per_hit: int
) -> list[tuple[str, float]]:
    store._WINDOW_FLOOR, store._WINDOW_PER_HIT = floor, per_hit  # type: ignore[misc]
    try:
        return _search(store, scope, query, limit)
    finally:
        del store._WINDOW_FLOOR, store._WINDOW_PER_HIT


def test_rows_fts5_ranks_past_the_window_are_found(tmp_path: Path) -> None:
    # Over the whole index (others' rows hold one token) a long row holding
    # the word ten times ranks below every short row holding it once; over
    # ann's rows, whose mean length is far greater, it ranks above them all.
    store = SQLiteStore(tmp_path / "palace.db")
    ann, bob = _palace(store, "ann"), _palace(store, "bob")
    short = [{"content": f"short{i} falcon note"} for i in range(200)]
    long = [
        {"content": f"long{i} " + "falcon " * 20 + " ".join(["filler"] * 140)} for i in range(100)
    ]
    ann.remember_many(short + long)
    bob.remember_many([{"content": f"bob{i}"} for i in range(3000)])
    got = _with_window(store, ann.scope, "falcon", 3, floor=1, per_hit=1)
    assert [c[:4] for c, _ in got] == ["long"] * 3
    assert got == _with_window(store, ann.scope, "falcon", 3, floor=1_000_000, per_hit=4)
    store.close()
