"""Side channels: another agent's private memories must not move this
agent's keyword scores (FTS5 computes idf over the whole index), and
``explain`` shows no raw BM25."""

from __future__ import annotations

from collections.abc import Callable

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.models import RecallFilters, Scope
from mindpalace.retrieval.sparse import query_terms
from mindpalace.store import Store

# Every memory has exactly four words, so the average document length (the
# one statistic still global) is the same with and without the intruder.
MINE = [
    "orange cat sleeps often",
    "orange fox runs fast",
    "grey cat eats fish",
    "blue bird flies high",
]
PROBES = ["orange orange orange orange", "orange tree grows tall", "orange sun sets late"]
QUERY = "orange cat"


def _scores(palace: Palace) -> list[tuple[str, float]]:
    hits = palace.recall(QUERY, limit=10)
    return [(h.memory.content, round(h.score, 6)) for h in hits]


def _raw(store: Store, scope: Scope) -> list[tuple[str, float]]:
    matches = store.search_text(query_terms(QUERY), scope, RecallFilters(), limit=10)
    return [(m.memory.content, round(m.bm25, 6)) for m in matches]


def test_private_memories_of_others_do_not_move_my_scores(
    make_palace: Callable[..., Palace], store: Store
) -> None:
    text = Settings(agent_id="ann", embedder="none")
    ann = make_palace("ann", settings=text)
    for content in [*MINE, "pad words here too"]:
        ann.remember(content)
    before, raw_before = _scores(ann), _raw(store, ann.scope)
    unscoped_before = _raw(store, Scope.management())

    mallory = make_palace("mallory", settings=Settings(agent_id="mallory", embedder="none"))
    for content in PROBES:
        mallory.remember(content)  # isolated: ann cannot see them
    # The same number of rows outside ann's view, of the same length, as FTS5 counts them.
    assert _scores(ann) == before
    assert _raw(store, ann.scope) == raw_before
    # Whole-index BM25 (what FTS5 alone would give) did move: the test can fail.
    mine = {c for c, _ in unscoped_before}
    assert [x for x in _raw(store, Scope.management()) if x[0] in mine] != unscoped_before


def test_a_single_agent_palace_keeps_fts5_scores(
    store: Store, make_palace: Callable[..., Palace]
) -> None:
    ann = make_palace("ann", settings=Settings(agent_id="ann", embedder="none"))
    for content in MINE:
        ann.remember(content)
    assert _raw(store, ann.scope) == _raw(store, Scope.management())


def test_explain_has_no_raw_bm25(make_palace: Callable[..., Palace]) -> None:
    ann = make_palace("ann", settings=Settings(agent_id="ann", embedder="none"))
    for content in MINE:
        ann.remember(content)
    for hit in ann.recall(QUERY):
        explain = hit.to_dict(explain=True)["explain"]
        assert "bm25" not in explain["scores"]
        assert 0.0 <= explain["scores"]["keyword"] <= 1.0
