"""The speed work's caches and shortcuts give the answers of the plain queries:
per-scope term counts cached until the next write (by any connection), the
keyword search that reads a common word at the rarer words' rows only, and
capped hub degrees."""

from __future__ import annotations

from datetime import datetime, timezone

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.models import RecallFilters, Scope
from mindpalace.retrieval.dense import DenseIndex
from mindpalace.retrieval.hybrid import warm_matches
from mindpalace.retrieval.sparse import query_terms
from mindpalace.store import Store, open_store

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _palace(store: Store, agent: str) -> Palace:
    return Palace(store=store, agent_id=agent, settings=Settings(agent_id=agent, embedder="none"))


def _raw(store: Store, scope: Scope, query: str, limit: int = 50) -> list[tuple[str, float]]:
    matches = store.search_text(query_terms(query), scope, RecallFilters(), limit=limit)
    return [(m.memory.content, round(m.bm25, 9)) for m in matches]


def _fresh(store_target: str, scope: Scope, query: str, limit: int = 50) -> list[tuple[str, float]]:
    """``_raw`` through a new connection, as a process opening the palace now."""
    fresh = open_store(store_target, busy_timeout=10)
    try:
        return _raw(fresh, scope, query, limit)
    finally:
        fresh.close()


def test_term_counts_follow_writes_of_another_connection(store: Store, store_target: str) -> None:
    ann = _palace(store, "ann")
    bob = _palace(store, "bob")
    for i in range(6):
        ann.remember(f"kiwi harvest note {i}", visibility="shared")
        bob.remember(f"private plum list {i}")
    before = _raw(store, ann.scope, "kiwi plum")
    assert before  # cached now
    other = open_store(store_target, busy_timeout=10)  # another connection, as another process
    try:
        writer = _palace(other, "ann")
        writer.remember("kiwi and plum together", visibility="shared")
        writer.remember("only kiwi again", visibility="shared")
    finally:
        other.close()
    cached = _raw(store, ann.scope, "kiwi plum")
    assert cached != before  # the new rows moved the idf: the test can fail
    assert cached == _fresh(store_target, ann.scope, "kiwi plum")


def test_rank_first_window_matches_the_joined_query(store: Store) -> None:
    """Most matches invisible to the caller: the window must grow until it
    finds every visible one, in the same order the joined query gives."""
    ann = _palace(store, "ann")
    bob = _palace(store, "bob")
    # Bob's short rows outrank Ann's long ones: the first window holds none of hers.
    bob.remember_many([{"content": f"apple pie {i}"} for i in range(700)])
    ann.remember_many(
        [
            {"content": f"apple idea {i} {'with many more words to make it long ' * (1 + i % 3)}"}
            for i in range(30)
        ]
    )
    got = _raw(store, ann.scope, "apple", limit=20)
    assert len(got) == 20
    assert all("idea" in content for content, _ in got)
    # The warm index scores every visible row: the same rows, the same scores.
    assert got == warm_top(store, ann.scope, "apple", 20)


def warm_top(store: Store, scope: Scope, query: str, limit: int) -> list[tuple[str, float]]:
    """``_raw``'s answer from the warm keyword index, which scores every row."""
    index = DenseIndex(store.load_vectors("none", texts=True), generation=0)
    found = warm_matches(index, scope, query_terms(query), limit=limit)
    texts = store.get_many([memory_id for memory_id, _ in found], scope)
    return [(texts[memory_id].content, round(score, 9)) for memory_id, score in found]


def test_hub_degree_is_capped_and_small_entities_are_exact(store: Store) -> None:
    ann = _palace(store, "ann")
    ann.remember_many([{"content": f"Zoltan reviewed item {i}"} for i in range(12)])
    ann.remember_many([{"content": f"Yvette fixed bug {i}"} for i in range(3)])
    members = store.entity_members(["zoltan", "yvette"], ann.scope, RecallFilters(), max_degree=5)
    assert members["zoltan"] == (6, [])
    degree, ids = members["yvette"]
    assert degree == 3 and len(ids) == 3 and ids == sorted(ids)
    wide = store.entity_members(["zoltan"], ann.scope, RecallFilters(), max_degree=50)
    assert wide["zoltan"][0] == 12 and len(wide["zoltan"][1]) == 12


def test_members_of_a_name_count_its_linked_short_name_once_and_only_the_callers(
    store: Store,
) -> None:
    """A name's members are the visible memories that mention it or a short
    name linked to it, each once; another agent's memories of the same
    name are not counted."""
    ann, bob = _palace(store, "ann"), _palace(store, "bob")
    full = ann.remember("Maria Lopez joined the billing team")
    short = ann.remember("Maria fixed the invoice bug")
    both = ann.remember("Maria Lopez reviewed what Maria wrote")
    bob.remember("Maria Lopez is on holiday")
    linked = {(e.norm, e.same_as) for e in ann.graph.entities()}
    if ("maria", "maria lopez") not in linked:  # linked on writing, else by hand
        ann.graph.join_entities("Maria", "Maria Lopez")
    members = store.entity_members(["maria lopez"], ann.scope, RecallFilters(), max_degree=5)
    assert members == {"maria lopez": (3, sorted([full.id, short.id, both.id]))}
    assert store.entity_members(["maria lopez"], ann.scope, RecallFilters(), max_degree=2) == {
        "maria lopez": (3, [])
    }
