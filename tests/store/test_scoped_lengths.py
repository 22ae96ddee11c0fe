"""SQLite's keyword search before the warm index is built (FTS5 on disk)
counts BM25's mean length, like idf, over the rows the caller sees: what
other agents write or erase moves neither the scores nor the order of this
one's hits, and several words ranked together give the rows and scores
of scoring every visible row (the warm index's)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.models import RecallFilters, Scope
from mindpalace.retrieval.dense import DenseIndex
from mindpalace.retrieval.hybrid import warm_matches
from mindpalace.retrieval.sparse import query_terms
from mindpalace.store.sqlite import SQLiteStore
from mindpalace.store.sqlite_text import partition_key

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
    # And they are what FTS5 itself gives a palace of ann's memories alone,
    # one word or several ranked together.
    alone = SQLiteStore(tmp_path / "alone.db")
    own = _palace(alone, "ann")
    own.remember_many(_texts(80, seed=1, low=2, high=30, tag="ann"))
    for query in [*WORDS, *QUERIES, " ".join(WORDS)]:
        got, expected = _search(store, ann.scope, query, 20), _search(alone, own.scope, query, 20)
        assert [c for c, _ in got] == [c for c, _ in expected]
        assert [s for _, s in got] == pytest.approx([s for _, s in expected], rel=1e-12)
    store.close()
    alone.close()


@pytest.mark.parametrize(("low", "high"), [(0, 0), (150, 200)], ids=["others_short", "others_long"])
@pytest.mark.parametrize("limit", [3, 20])
def test_the_best_rows_under_the_scopes_mean_length(
    tmp_path: Path, low: int, high: int, limit: int
) -> None:
    store = SQLiteStore(tmp_path / "palace.db")
    ann, bob = _palace(store, "ann"), _palace(store, "bob")
    # Ann's rows mix short ones holding a word once and long ones holding it
    # often; which come first depends on the mean length BM25 divides by.
    ann.remember_many(_texts(300, seed=4, low=0, high=120, tag="ann"))
    bob.remember_many(_texts(400, seed=5, low=low, high=high, tag="bob"))
    for query in [*QUERIES, " ".join(WORDS)]:
        got = _search(store, ann.scope, query, limit)
        assert len(got) == limit
        assert got == _warm(store, ann.scope, query, limit), query
    # FTS5's own order of ann's rows (the whole index's mean length) differs:
    # the re-scoring had rows to move.
    key = partition_key("ann", "isolated", "", "")
    fts5 = [
        row[0]
        for row in store._conn.execute(
            "SELECT m.content FROM memories_fts_scoped f JOIN memories m ON m.seq = f.rowid"
            " WHERE memories_fts_scoped MATCH ?"
            " ORDER BY bm25(memories_fts_scoped, 1.5, 1.0, 0.5, 1.0), m.created_at DESC, m.id DESC"
            " LIMIT 40",
            [f'"{key}falcon"'],
        )
    ]
    assert len(fts5) == 40
    assert [c for c, _ in _search(store, ann.scope, "falcon", 40)] != fts5
    store.close()


def _warm(store: SQLiteStore, scope: Scope, query: str, limit: int) -> list[tuple[str, float]]:
    """``_search``'s answer from the warm keyword index, which scores every row."""
    index = DenseIndex(store.load_vectors("none", texts=True), generation=0)
    found = warm_matches(index, scope, query_terms(query), limit=limit)
    texts = store.get_many([memory_id for memory_id, _ in found], scope)
    return [(texts[memory_id].content, score) for memory_id, score in found]


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
    got = _search(store, ann.scope, "falcon", 3)
    assert [c[:4] for c, _ in got] == ["long"] * 3
    assert got == _warm(store, ann.scope, "falcon", 3)
    # A common word beside a rare one: the common one is counted at the rare
    # one's rows (or read in full), never cut to its best rows.
    ann.remember_many([{"content": f"rare{i} plover falcon"} for i in range(5)])
    query = "plover falcon"
    assert _search(store, ann.scope, query, 7) == _warm(store, ann.scope, query, 7)
    store.close()
