"""The Palace facade: remember, recall, get, forget, list, stats."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone

import pytest

from mindpalace import (
    Category,
    MemoryType,
    NotFoundError,
    Palace,
    PermissionDenied,
    StoreKind,
    ValidationError,
    Visibility,
)
from mindpalace.config import Settings

ALL_TYPES = ["person", "project", "system", "tool", "concept", "skill", "task", "unknown"]
ALL_STORES = ["sensory", "episodic", "semantic", "procedural", "prospective"]
ALL_CATEGORIES = [
    "decision",
    "lesson",
    "person",
    "rule",
    "event",
    "fact",
    "goal",
    "workflow",
    "conversation",
]


def test_remember_defaults(palace: Palace) -> None:
    m = palace.remember("  The build uses uv and ruff.  ")
    assert m.content == "The build uses uv and ruff."
    assert (m.type, m.store, m.category) == (
        MemoryType.UNKNOWN,
        StoreKind.SEMANTIC,
        Category.FACT,
    )
    assert m.visibility is Visibility.ISOLATED
    assert m.agent_id == "default"
    assert m.id.startswith("mem_") and len(m.id) == 30
    assert not m.archived and not m.constraint and m.superseded_by is None
    assert m.created_at.tzinfo is not None
    assert palace.get(m.id) == m


def test_remember_all_fields_round_trip(palace: Palace) -> None:
    m = palace.remember(
        "Deploys need two approvals.",
        title="Deploy rule",
        type="process" if False else "task",
        store="procedural",
        category="rule",
        tags="Deploy, release ,deploy",
        source="pipeline",
        visibility="shared",
        constraint=True,
        confidence=0.7,
        valid_from="2026-01-01",
        valid_to=datetime(2027, 1, 1, tzinfo=timezone.utc),
        metadata={"ticket": "OPS-12", "n": [1, 2]},
    )
    got = palace.get(m.id)
    assert got == m
    assert got.tags == ("deploy", "release")
    assert got.title == "Deploy rule"
    assert got.constraint is True
    assert got.valid_from == datetime(2026, 1, 1, tzinfo=timezone.utc)
    assert dict(got.metadata) == {"ticket": "OPS-12", "n": [1, 2]}


def _row_count(palace: Palace) -> int:
    return palace.stats().memories


@pytest.mark.parametrize(
    ("field", "value", "valid"),
    [
        ("type", "persn", ALL_TYPES),
        ("store", "long-term", ALL_STORES),
        ("category", "facts", ALL_CATEGORIES),
        ("visibility", "public", ["isolated", "shared", "group"]),
        ("source", "robot", ["manual", "skill", "pipeline", "import"]),
    ],
)
def test_invalid_enum_names_every_option_and_writes_nothing(
    palace: Palace, field: str, value: str, valid: list[str]
) -> None:
    palace.remember("something already there")
    with pytest.raises(ValidationError) as info:
        palace.remember("new text", **{field: value})  # type: ignore[arg-type]
    message = str(info.value)
    assert info.value.field == field
    assert all(option in message for option in valid)
    assert list(info.value.valid) == valid
    assert _row_count(palace) == 1


def test_did_you_mean(palace: Palace) -> None:
    with pytest.raises(ValidationError, match="did you mean 'person'"):
        palace.remember("x", type="persn")


@pytest.mark.parametrize("content", ["", "   ", "\n\t"])
def test_empty_content_rejected(palace: Palace, content: str) -> None:
    with pytest.raises(ValidationError, match="must not be empty"):
        palace.remember(content)
    assert _row_count(palace) == 0


def test_oversize_content_rejected_and_cap_configurable(
    make_palace: Callable[..., Palace],
) -> None:
    small = make_palace(settings=Settings(max_content_chars=20))
    small.remember("x" * 20)
    with pytest.raises(ValidationError, match="limit is 20"):
        small.remember("x" * 21)
    assert _row_count(small) == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"visibility": "group"}, "needs a group"),
        ({"group": "ops"}, "only meaningful"),
        ({"confidence": 1.5}, "from 0 to 1"),
        ({"confidence": float("nan")}, "from 0 to 1"),
        ({"valid_from": "yesterday"}, "ISO 8601"),
        ({"valid_from": "2026-02-01", "valid_to": "2026-01-01"}, "before valid_from"),
        ({"metadata": {"x": object()}}, "JSON-serialisable"),
        ({"tags": [f"t{i}" for i in range(65)]}, "0-64 tags"),
        ({"title": "t" * 501}, "longer than 500"),
    ],
)
def test_other_invalid_arguments(palace: Palace, kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        palace.remember("valid content", **kwargs)  # type: ignore[arg-type]
    assert _row_count(palace) == 0


def test_same_text_twice_is_one_memory_with_more_strength(palace: Palace) -> None:
    first = palace.remember("Alice leads Project Falcon.")
    again = palace.remember("  alice   leads project FALCON.  ")
    assert again.id == first.id
    assert again.strength > first.strength
    assert _row_count(palace) == 1


def test_dedup_is_per_scope(make_palace: Callable[..., Palace]) -> None:
    a, b = make_palace("a"), make_palace("b")
    ma = a.remember("same words")
    mb = b.remember("same words")
    shared = a.remember("same words", visibility="shared")
    assert len({ma.id, mb.id, shared.id}) == 3


def test_remembering_an_archived_text_revives_it(palace: Palace) -> None:
    m = palace.remember("Use tabs in Makefiles.")
    palace.forget(m.id)
    assert palace.recall("makefiles tabs") == []
    again = palace.remember("Use tabs in Makefiles.")
    assert again.id == m.id and not again.archived
    assert [h.memory.id for h in palace.recall("makefiles tabs")] == [m.id]


def test_recall_finds_by_keywords_best_first(palace: Palace) -> None:
    palace.remember("We chose SQLite for the embedded store because processes share one file.")
    palace.remember("Alice prefers green tea.")
    palace.remember("SQLite WAL mode lets readers proceed while one writer writes; sqlite rocks.")
    hits = palace.recall("why sqlite", limit=5)
    assert hits.mode == "hybrid" and hits.notice is None
    assert len(hits) == 2  # the tea memory has neither a keyword nor a close meaning
    assert all("SQLite" in h.memory.content for h in hits)
    assert 1.0 >= hits[0].score >= hits[1].score > 0
    assert sorted(h.ranks["bm25"] for h in hits) == [1, 2]
    assert all("dense" in h.ranks and "final" in h.stage_scores for h in hits)


def test_recall_by_meaning_without_shared_words(palace: Palace) -> None:
    palace.remember("Alice's favourite is green tea.")
    palace.remember("The deploy pipeline runs on Fridays.")
    hits = palace.recall("what does Alice like to drink?")
    assert hits and hits[0].memory.content == "Alice's favourite is green tea."


def test_keyword_ties_are_deterministic_newest_first(
    make_palace: Callable[..., Palace],
) -> None:
    text_only = make_palace(settings=Settings(embedder="none"))
    ids = [text_only.remember(f"identical words {n}").id for n in range(5)]
    hits = text_only.recall("identical words")
    assert hits.mode == "text"
    assert hits.notice is not None
    assert hits.notice.startswith("Using text search (semantic search is not available).")
    assert [h.memory.id for h in hits] == list(reversed(ids))
    again = text_only.recall("identical words")
    assert [h.memory.id for h in hits] == [h.memory.id for h in again]
    assert [h.score for h in hits] == pytest.approx([h.score for h in again])


def test_hybrid_recall_is_deterministic(palace: Palace) -> None:
    for n in range(20):
        palace.remember(f"note {n} about the kafka cluster and its brokers")
    first = palace.recall("kafka brokers", limit=20)
    again = palace.recall("kafka brokers", limit=20)
    assert len(first) == 20
    assert [h.memory.id for h in first] == [h.memory.id for h in again]
    assert [h.score for h in first] == pytest.approx([h.score for h in again])


def test_recall_limit_validated(palace: Palace) -> None:
    for bad in (0, 101, -1, 2.5, "10", True):
        with pytest.raises(ValidationError, match="1 to 100"):
            palace.recall("x", limit=bad)  # type: ignore[arg-type]
    for n in range(12):
        palace.remember(f"note number {n} about kafka")
    assert len(palace.recall("kafka", limit=1)) == 1
    assert len(palace.recall("kafka", limit=100)) == 12


def test_recall_filters(palace: Palace, clock: object) -> None:
    d = palace.remember("kafka decision", category="decision", tags=["infra"], type="system")
    f = palace.remember("kafka fact", category="fact", tags=["ops"], store="episodic")
    s = palace.remember("kafka shared", visibility="shared", tags=["infra", "ops"])

    def ids(**kw: object) -> set[str]:
        return {h.memory.id for h in palace.recall("kafka", **kw)}  # type: ignore[arg-type]

    assert ids() == {d.id, f.id, s.id}
    assert ids(categories="decision") == {d.id}
    assert ids(categories=["decision", "fact"]) == {d.id, f.id, s.id}
    assert ids(types=["system"]) == {d.id}
    assert ids(stores="episodic") == {f.id}
    assert ids(tags="infra") == {d.id, s.id}
    assert ids(tags=["ops", "nothing"]) == {f.id, s.id}
    assert ids(visibility="shared") == {s.id}
    assert ids(created_after=f.created_at) == {f.id, s.id}
    assert ids(created_before=f.created_at) == {d.id}
    with pytest.raises(ValidationError, match="valid options: decision"):
        palace.recall("kafka", categories="decisions")
    with pytest.raises(ValidationError, match="valid options"):
        palace.recall("kafka", stores=["semantic", "nope"])


def test_archived_hidden_unless_asked(palace: Palace) -> None:
    m = palace.remember("rotate the api keys monthly")
    forgotten = palace.forget(m.id)
    assert forgotten.id == m.id
    assert palace.get(m.id).archived
    assert palace.recall("api keys") == []
    assert [h.memory.id for h in palace.recall("api keys", include_archived=True)] == [m.id]
    assert palace.memories() == []
    assert [x.id for x in palace.memories(include_archived=True)] == [m.id]


def test_hard_forget_deletes(palace: Palace) -> None:
    m = palace.remember("temporary secret note")
    palace.forget(m.id, hard=True)
    with pytest.raises(NotFoundError):
        palace.get(m.id)
    assert palace.recall("secret") == []
    with pytest.raises(NotFoundError):
        palace.forget(m.id)


def test_isolated_memories_invisible_to_other_agents(make_palace: Callable[..., Palace]) -> None:
    alice, bob = make_palace("alice"), make_palace("bob")
    private = alice.remember("alice private plan for falcon")
    shared = alice.remember("falcon launch date is friday", visibility="shared")
    group = alice.remember("falcon budget", visibility="group", group="leads")
    with pytest.raises(NotFoundError):
        bob.get(private.id)
    assert {h.memory.id for h in bob.recall("falcon")} == {shared.id}
    lead = make_palace("carol", groups=["leads"])
    assert {h.memory.id for h in lead.recall("falcon")} == {shared.id, group.id}
    assert bob.stats().memories == 1


def test_only_the_owner_may_forget(make_palace: Callable[..., Palace]) -> None:
    alice, bob = make_palace("alice"), make_palace("bob")
    shared = alice.remember("shared runbook", visibility="shared")
    with pytest.raises(PermissionDenied, match="alice"):
        bob.forget(shared.id)
    assert not alice.get(shared.id).archived


def test_channel_memories_seen_only_through_their_channel(
    make_palace: Callable[..., Palace],
) -> None:
    peer = make_palace("coach", channel="peer-coach:511")
    other = make_palace("coach", channel="peer-coach:999")
    plain = make_palace("coach")
    inside = peer.remember("client prefers morning sessions")
    general = plain.remember("sessions last fifty minutes")
    assert {h.memory.id for h in peer.recall("sessions")} == {inside.id, general.id}
    assert {h.memory.id for h in other.recall("sessions")} == {general.id}
    assert {h.memory.id for h in plain.recall("sessions")} == {general.id}


def test_memories_listing_and_paging(palace: Palace) -> None:
    ids = [palace.remember(f"entry {n}", category="event").id for n in range(7)]
    page1 = palace.memories(limit=3)
    page2 = palace.memories(limit=3, offset=3)
    assert [m.id for m in page1 + page2] == list(reversed(ids))[:6]
    assert palace.memories(categories="fact") == []
    with pytest.raises(ValidationError):
        palace.memories(limit=0)
    with pytest.raises(ValidationError):
        palace.memories(offset=-1)


def test_stats(make_palace: Callable[..., Palace]) -> None:
    p = make_palace("a")
    p.remember("one", category="decision")
    p.remember("two", type="person")
    gone = p.remember("three")
    p.forget(gone.id)
    make_palace("b").remember("not mine")
    st = p.stats()
    assert st.memories == 3
    assert st.archived == 1
    assert st.by_category == {"decision": 1, "fact": 1}
    assert st.by_type == {"person": 1, "unknown": 1}
    assert st.by_agent == {"a": 2}
    assert st.schema_version >= 1


def test_get_unknown_id(palace: Palace) -> None:
    with pytest.raises(NotFoundError, match="mem_nope"):
        palace.get("mem_nope")
    with pytest.raises(ValidationError):
        palace.get("")


def test_context_manager_closes(tmp_path: object) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "ctx.db"
    with Palace(path) as p:
        m = p.remember("hello context manager")
    with Palace(path) as p:
        assert p.get(m.id).content == "hello context manager"


def test_unknown_url_scheme(tmp_path: object) -> None:
    from mindpalace import ConfigError

    with pytest.raises(ConfigError, match="valid options"):
        Palace("mysql://localhost/db")
