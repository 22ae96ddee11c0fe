"""What the inspector reads and writes through the Python API, on every
backend: restore, the owner filter, sessions and day counts, the signals
about a memory, an entity's neighbourhood."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone

import pytest

from mindpalace import Palace
from mindpalace.conversations import Message
from mindpalace.errors import NotFoundError, PermissionDenied, ValidationError


def test_restore_brings_a_forgotten_memory_back(palace: Palace) -> None:
    memory = palace.remember("The Zebra service moved to the new cluster")
    palace.forget(memory.id)
    assert palace.get(memory.id).archived
    assert not palace.recall("Zebra cluster")
    restored = palace.restore(memory.id)
    assert restored.id == memory.id and not restored.archived
    assert palace.recall("Zebra cluster")[0].memory.id == memory.id
    assert palace.restore(memory.id) == palace.get(memory.id)  # nothing to do: as it is


def test_restore_is_the_owners_alone(make_palace: Callable[..., Palace]) -> None:
    alice, bob = make_palace("alice"), make_palace("bob")
    private = alice.remember("Alice's private note about the vault")
    shared = alice.remember("The wiki lives at the usual place", visibility="shared")
    alice.forget(private.id)
    alice.forget(shared.id)
    with pytest.raises(NotFoundError):
        bob.restore(private.id)  # not visible: not found, not "forbidden"
    with pytest.raises(PermissionDenied):
        bob.restore(shared.id)  # visible (archived, but shared), not bob's
    with pytest.raises(ValidationError):
        alice.restore("")
    assert alice.get(private.id).archived


def test_agents_filter_keeps_the_owners_memories(make_palace: Callable[..., Palace]) -> None:
    alice, bob = make_palace("alice"), make_palace("bob")
    mine = alice.remember("Billing runs on Postgres, says Alice")
    theirs = bob.remember("Billing runs on Postgres, says Bob", visibility="shared")
    bob.remember("Bob's private Billing note")
    assert {m.id for m in alice.memories()} == {mine.id, theirs.id}
    assert [m.id for m in alice.memories(agents="bob")] == [theirs.id]
    assert [m.id for m in alice.memories(agents=["alice"])] == [mine.id]
    assert {h.memory.id for h in alice.recall("Billing Postgres", agents="bob")} == {theirs.id}
    assert {h.memory.id for h in alice.recall("Billing Postgres", agents="alice")} == {mine.id}
    assert alice.memories(agents="carol") == []
    with pytest.raises(ValidationError, match="agents"):
        alice.memories(agents="not an id!")


def test_sessions_latest_first_and_paged(palace: Palace) -> None:
    start = datetime(2026, 3, 1, 9, tzinfo=timezone.utc)
    for n in range(5):
        palace.add_messages(
            [
                Message(
                    f"turn one of talk {n}", speaker="Ann", created_at=start + timedelta(days=n)
                ),
                Message(
                    f"turn two of talk {n}",
                    speaker="Bo",
                    created_at=start + timedelta(days=n, minutes=5),
                ),
            ],
            session=f"talk-{n}",
        )
    first = palace.timeline.sessions(limit=2)
    assert [s.session for s in first] == ["talk-4", "talk-3"]
    assert first[0].turns == 2
    assert first[0].last_at - first[0].first_at == timedelta(minutes=5)
    rest = palace.timeline.sessions(limit=10, cursor=palace.timeline.next_cursor(first))
    assert [s.session for s in rest] == ["talk-2", "talk-1", "talk-0"]
    assert palace.timeline.next_cursor([]) is None
    with pytest.raises(ValidationError):
        palace.timeline.sessions(cursor="forged")
    with pytest.raises(ValidationError):
        palace.timeline.sessions(limit=0)


def test_sessions_and_day_counts_follow_scope(make_palace: Callable[..., Palace]) -> None:
    alice, bob = make_palace("alice"), make_palace("bob")
    day = datetime(2026, 2, 3, 12, tzinfo=timezone.utc)
    alice.add_messages([Message("hello", speaker="Ann", created_at=day)], session="alice-talk")
    bob.add_messages([Message("hi", speaker="Bo", created_at=day)], session="bob-talk")
    alice.remember("A decision of the second day", category="decision", created_at=day)
    late = datetime(2026, 2, 3, 23, 59, 59, 700_000, tzinfo=timezone.utc)
    alice.remember("A lesson late that night", category="lesson", created_at=late)
    forgotten = alice.remember("Forgotten", created_at=day + timedelta(days=1))
    alice.forget(forgotten.id)
    assert [s.session for s in alice.timeline.sessions()] == ["alice-talk"]
    counts = {(c.day.isoformat(), c.category, c.store): c.count for c in alice.timeline.by_day()}
    assert counts == {
        ("2026-02-03", "conversation", "episodic"): 1,
        ("2026-02-03", "decision", "semantic"): 1,
        ("2026-02-03", "lesson", "semantic"): 1,  # not rounded into the next day
    }


def test_signals_about_a_memory_are_the_agents_own(make_palace: Callable[..., Palace]) -> None:
    alice, bob = make_palace("alice"), make_palace("bob")
    shared = alice.remember("The on-call rota is in the wiki", visibility="shared")
    bob.feedback(shared.id, useful=True)
    alice.feedback(shared.id, useful=False)
    kinds = [(s.kind, s.agent_id) for s in alice.signals.about(shared.id)]
    assert ("feedback", "alice") in kinds and ("store", "alice") in kinds
    assert all(agent == "alice" for _, agent in kinds)
    assert [(s.kind, s.data["useful"]) for s in bob.signals.about(shared.id)] == [
        ("feedback", True)
    ]
    admin = Palace(engine=alice.engine, agent_id="ops", management=True)
    assert {s.agent_id for s in admin.signals.about(shared.id)} == {"alice", "bob"}
    private = alice.remember("Alice's own")
    with pytest.raises(NotFoundError):
        bob.signals.about(private.id)


def test_neighbourhood_lists_the_memories_behind_each_edge(
    make_palace: Callable[..., Palace],
) -> None:
    alice, bob = make_palace("alice"), make_palace("bob")
    first = alice.remember("Alice Chen reviewed the Billing service with Bob Stone")
    second = alice.remember("Alice Chen deployed the Billing service on Friday")
    bob.remember("Bob's note: Alice Chen and Carol Diaz plan the Search service")
    hood = alice.graph.neighbourhood("Alice Chen")
    assert hood.norm == "alice chen" and hood.entities
    edges = {e.norm: e for e in hood.edges}
    billing = next(e for key, e in edges.items() if "billing" in key)
    assert {m.id for m in billing.memories} == {first.id, second.id}
    assert all("carol" not in key and "search" not in key for key in edges)  # bob's scope
    assert [e.weight for e in hood.edges] == sorted((e.weight for e in hood.edges), reverse=True)
    assert len(alice.graph.neighbourhood("alice chen", limit=1).edges) == 1
    with pytest.raises(NotFoundError):
        alice.graph.neighbourhood("Carol Diaz")  # only in bob's isolated memory
    with pytest.raises(ValidationError):
        alice.graph.neighbourhood("Alice Chen", limit=0)


def test_counts_from_the_warm_table_are_the_stores(make_palace: Callable[..., Palace]) -> None:
    alice, bob = make_palace("alice", groups=["core"]), make_palace("bob")
    day = datetime(2026, 4, 1, 23, 59, 59, 600_000, tzinfo=timezone.utc)
    kept = alice.remember("Alice keeps the release notes", category="decision", created_at=day)
    alice.update(kept.id, content="Alice keeps the release notes in the wiki")
    gone = alice.remember("A scratch note", type="task", created_at=day + timedelta(days=3))
    alice.forget(gone.id)
    bob.remember("Bob shares the on-call rota", visibility="shared", store="episodic")
    bob.remember("Bob's group note", visibility="group", group="core", category="rule")
    bob.remember("Bob's own note", category="lesson")
    alice.add_messages([Message("hi", speaker="Ann", created_at=day)], session="talk")
    admin = Palace(engine=alice.engine, agent_id="ops", management=True)
    for view in (alice, bob, admin):
        assert view.semantic.dense() is not None  # the warm path is the one under test
        store = view.engine.store
        assert view.timeline.stats() == store.stats(view.scope)
        assert view.timeline.by_day() == store.day_counts(view.scope)
    assert alice.timeline.stats().by_agent == {"alice": 2, "bob": 2}
    assert admin.timeline.stats().memories == 7  # old versions and archived too
