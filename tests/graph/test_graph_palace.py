"""The entity graph through the palace and the CLI: linking, propagation,
constraints, scope, consolidation."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from mindpalace import Palace
from mindpalace.cli import main
from mindpalace.embed.hashing import HashingEmbedder
from mindpalace.graph.consolidate import ConsolidationReport
from mindpalace.models import MemoryType, Scope


def test_remember_links_entities_with_types(palace: Palace) -> None:
    memory = palace.remember("Alice from Acme met Bob about Project Falcon on Tuesday")
    linked = {e.name: e.type for e in palace.graph.mentions(memory.id)}
    assert linked == {
        "Alice": MemoryType.PERSON,
        "Acme": MemoryType.UNKNOWN,
        "Bob": MemoryType.PERSON,
        "Project Falcon": MemoryType.PROJECT,
        "Tuesday": MemoryType.UNKNOWN,
    }
    palace.remember("Falcon ships in May")  # "Falcon" resolves to Project Falcon by alias
    falcon = palace.graph.entities("falcon")
    assert [(e.name, e.mentions, e.aliases) for e in falcon] == [("Project Falcon", 2, ("falcon",))]


def test_recall_carries_associative_context(palace: Palace) -> None:
    meeting = palace.remember("Alice from Acme met Bob about Project Falcon on Tuesday")
    tea = palace.remember("Bob prefers green tea in the afternoon")
    invoices = palace.remember("Acme pays its invoices within thirty days")
    hits = palace.recall("Falcon", limit=5)
    by_id = {h.memory.id: h for h in hits}
    assert meeting.id in by_id
    context = {a.memory_id: a.path for a in by_id[meeting.id].associative_context}
    assert context[tea.id] == (meeting.id, "Bob", tea.id)
    assert context[invoices.id] == (meeting.id, "Acme", invoices.id)
    plain = palace.recall("Falcon", limit=5, expand=False)
    assert all(h.associative_context == () for h in plain)


def test_constraints_surface_without_pushing_out_the_best(palace: Palace) -> None:
    for i in range(6):
        palace.remember(f"Falcon sprint {i} notes: latency work on the ingest path")
    assert not palace.store.has_constraints()  # recall skips the name lookups
    rule = palace.remember("Never deploy Falcon on a Friday", category="rule", constraint=True)
    hits = palace.recall("Falcon sprint latency ingest notes", limit=3)
    ids = [h.memory.id for h in hits]
    assert len(ids) == 3
    assert rule.id in ids
    assert ids[0] != rule.id
    assert any(g.startswith("constraint:") for h in hits for g in h.gates if h.memory.id == rule.id)
    assert palace.store.has_constraints()


def test_entities_and_traversal_stay_in_scope(make_palace: Callable[..., Palace]) -> None:
    alice = make_palace("alice")
    bob = make_palace("bob")
    alice.remember("Zed owns the secret Orion budget spreadsheet")
    seen = bob.remember("Zed reviewed the Falcon launch plan", visibility="shared")
    assert [e.name for e in bob.graph.entities()] == ["Zed", "Falcon"] or {
        e.name for e in bob.graph.entities()
    } == {"Zed", "Falcon"}
    assert all(e.agent_id == "bob" for e in bob.graph.entities())
    hits = bob.recall("Falcon launch", limit=5)
    reached = {a.memory_id for h in hits for a in h.associative_context}
    assert {h.memory.id for h in hits} <= {seen.id}
    assert reached <= {seen.id}
    # Alice sees Bob's shared memory, and her own; the entity "Zed" joins them.
    joined = alice.recall("Orion budget", limit=5)
    assert any(a.memory_id == seen.id for h in joined for a in h.associative_context)


def test_consolidate_is_idempotent(make_palace: Callable[..., Palace], clock: object) -> None:
    palace = make_palace("consol", embedder=HashingEmbedder(dimensions=64))
    palace.remember("The Falcon release is planned for March at Acme.")
    palace.remember("The Falcon release is planned for March at Acme!!")
    palace.remember("Bob leads the Acme account")
    first = palace.graph.consolidate()
    assert len(first.merged) == 1
    assert palace.graph.consolidate().changed is False
    clock.now += timedelta(days=60)  # type: ignore[attr-defined]
    later = palace.graph.consolidate()
    assert later.days == 60 and later.decayed_memories
    assert palace.graph.consolidate().changed is False
    dry = palace.graph.consolidate(dry_run=True)
    assert dry.changed is False


def test_the_falcon_example_through_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MINDPALACE_EMBEDDER", "hashing")
    db = str(tmp_path / "cli.db")

    def run(*args: str) -> object:
        assert main(["--db", db, *args]) == 0
        return json.loads(capsys.readouterr().out)

    meeting = run("remember", "Alice from Acme met Bob about Project Falcon on Tuesday")
    old = run("remember", "Alice leads Project Falcon")
    run("remember", "Bob prefers green tea")
    new = run("remember", "Bob now leads Project Falcon")
    names = {e["name"] for e in run("entities")}  # type: ignore[union-attr]
    assert {"Alice", "Acme", "Bob", "Project Falcon"} <= names
    got = run("get", meeting["id"])  # type: ignore[index]
    assert {e["name"] for e in got["entities"]} >= {"Alice", "Bob"}  # type: ignore[index]
    hits = run("recall", "Falcon")
    ids = [h["id"] for h in hits]  # type: ignore[union-attr]
    assert meeting["id"] in ids and new["id"] in ids and old["id"] not in ids  # type: ignore[index]
    assert any(h["associative_context"] for h in hits)  # type: ignore[union-attr]
    history = run("history", old["id"])  # type: ignore[index]
    assert [m["id"] for m in history] == [old["id"], new["id"]]  # type: ignore[index]
    report = run("consolidate")
    assert run("consolidate")["changed"] is False  # type: ignore[index]
    assert "merged" in report  # type: ignore[operator]


def test_feedback_on_one_recall_strengthens_edges_once(
    make_palace: Callable[..., Palace],
) -> None:
    palace = make_palace("hebb", embedder=HashingEmbedder(dimensions=64))
    a = palace.remember("Alice reviewed the Falcon design with Bob")
    b = palace.remember("Carol tested the Orion build for Dan")
    hits = palace.recall("Falcon design Orion build", limit=5)
    assert {a.id, b.id} <= {h.memory.id for h in hits}
    palace.feedback(a.id, useful=True)
    palace.feedback(b.id, useful=True)
    first = palace.graph.consolidate()
    assert first.signals_used >= 2
    assert first.strengthened  # edges between the two memories' entities
    assert all(0 < change["to"] <= 1 for change in first.strengthened)
    assert palace.graph.consolidate().strengthened == []


def test_consolidation_keeps_to_what_the_palace_sees_and_changes(
    make_palace: Callable[..., Palace], clock: object
) -> None:
    """A peer-facing palace consolidates its channel only: the agent's
    isolated notes, its shared memories and other channels are neither
    merged, decayed nor named, and their signals are not counted."""
    hashing = HashingEmbedder(dimensions=64)
    coach = make_palace("coach", embedder=hashing)
    peer = make_palace("coach", channel="peer:1", peer=True, embedder=hashing)
    other = make_palace("coach", channel="peer:2", peer=True, embedder=hashing)

    def pair(palace: Palace, text: str, **options: str) -> list[str]:
        return [palace.remember(text + end, **options).id for end in (".", "!!")]

    notes = pair(coach, "The Falcon release is planned for March at Acme")
    shared = pair(coach, "Orion budget review happens every Friday at noon", visibility="shared")
    theirs = pair(other, "Client two prefers evening calls on Thursday with Dana")
    mine = pair(peer, "Client one prefers morning sessions on Monday with Bob")
    coach.recall("Falcon release Acme", limit=5)
    for memory_id in notes:
        coach.feedback(memory_id, useful=True)
    elsewhere = notes + shared + theirs
    store = coach.engine.store

    def untouched() -> None:
        found = store.get_many(elsewhere, Scope.management())
        assert [found[i] for i in elsewhere] == [before[i] for i in elsewhere]

    def named(report: ConsolidationReport) -> set[str]:
        ids = {d["id"] for d in report.decayed_memories}
        return ids | {r[k] for r in report.merged for k in ("kept", "merged")}

    before = store.get_many(elsewhere, Scope.management())
    dry = peer.graph.consolidate(dry_run=True)
    first = peer.graph.consolidate()
    for report in (dry, first):
        assert [(r["kept"], r["merged"]) for r in report.merged] == [(mine[0], mine[1])]
        assert report.signals_used == 0 and report.strengthened == []
    untouched()
    clock.now += timedelta(days=60)  # type: ignore[attr-defined]
    later = peer.graph.consolidate()
    assert later.days == 60 and named(later) == {mine[0]}
    untouched()
    # The agent's own palace consolidates its unchannelled memories, not the channels.
    own = coach.graph.consolidate()
    assert {(r["kept"], r["merged"]) for r in own.merged} == {tuple(notes), tuple(shared)}
    assert own.signals_used == 2
    assert not named(own) & set(mine + theirs)
    assert store.get_many(theirs, Scope.management()) == {i: before[i] for i in theirs}
