"""The recall family (seed 003) on a fixture team memory, on every backend:
recall modes, what-do-I-know, why-did-we, ownership and dependency
questions, preflight, and their bad inputs and empty answers."""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone

import pytest

from mindpalace import Palace, ValidationError
from mindpalace.conversations import Message
from mindpalace.family import EMPTY_HINT, GROUP_ORDER, Answer
from mindpalace.models import Category
from mindpalace.retrieval.modes import MODES
from mindpalace.safety import HEADER

MakePalace = Callable[..., Palace]


def day(month: int, d: int, year: int = 2025) -> datetime:
    return datetime(year, month, d, 9, 0, tzinfo=timezone.utc)


@dataclass
class Team:
    """The fixture palace and its memories' ids by role."""

    palace: Palace
    ids: dict[str, str]


# role, content, options
MEMORIES: list[tuple[str, str, dict[str, object]]] = [
    (
        "supabase",
        "We use Supabase for the Atlas backend",
        {"category": "decision", "created_at": day(9, 1)},
    ),
    (
        "lesson",
        "Lesson: Supabase row-level security policies were hard to test and deadlocked under load",
        {"category": "lesson", "created_at": day(9, 20)},
    ),
    (
        "outage",
        "Outage: the Billing service deadlocked on Supabase during the invoice run",
        {"category": "event", "created_at": day(9, 25), "store": "episodic"},
    ),
    (
        "convex",
        "We now use Convex for the Atlas backend",
        {"category": "decision", "created_at": day(10, 1)},
    ),
    (
        "migration",
        "Migrated the Billing service from Supabase to Convex over one weekend",
        {"category": "event", "created_at": day(10, 15), "store": "episodic"},
    ),
    ("documents", "Convex stores documents, not rows", {"created_at": day(10, 2)}),
    ("documents2", "Convex stores documents and not rows", {"created_at": day(10, 3)}),
    (
        "goal",
        "Goal: move every service to Convex by March",
        {"category": "goal", "created_at": day(10, 4)},
    ),
    (
        "workflow",
        "Release workflow: run the migration test, tag from CI, then deploy the service",
        {"category": "workflow", "store": "procedural", "created_at": day(8, 1)},
    ),
    (
        "rule",
        "Never deploy the Billing service on Fridays",
        {"category": "rule", "constraint": True, "created_at": day(8, 2)},
    ),
    ("alice", "Alice owns the Billing service", {"created_at": day(8, 1)}),
    ("bob", "Bob now owns the Billing service", {"created_at": day(11, 1)}),
    ("carol", "Carol maintains the Checkout API", {"created_at": day(8, 5)}),
    ("checkout_deps", "The Checkout API depends on Redis and Convex", {"created_at": day(8, 6)}),
    ("billing_deps", "The Billing service relies on Redis", {"created_at": day(8, 7)}),
    (
        "dana",
        "Dana is our designer and prefers asynchronous design reviews",
        {"category": "person", "type": "person", "created_at": day(7, 1)},
    ),
    ("plants", "The office plants need watering on Mondays", {"created_at": day(7, 2)}),
]


@pytest.fixture
def team(make_palace: MakePalace) -> Team:
    palace = make_palace("ann")
    ids = {role: palace.remember(text, **options).id for role, text, options in MEMORIES}  # type: ignore[arg-type]
    turns = palace.add_messages(
        [
            Message(
                "Supabase deadlocked again during the invoice run.",
                speaker="Ann",
                created_at=day(9, 30),
            ),
            Message(
                "Let's move the backend database to Convex; its mutations are transactional.",
                speaker="Bo",
                created_at=day(9, 30).replace(minute=5),
            ),
        ],
        session="arch-review",
    )
    ids["turn1"], ids["turn2"] = turns[0].id, turns[1].id
    return Team(palace, ids)


def item_ids(answer: Answer) -> list[str]:
    return [item.memory.id for item in answer.items]


def check_scores(answer: Answer) -> None:
    """Seed 003: every item has score and confidence in 0-1, high confidence from 0.8."""
    for item in answer.items:
        assert 0.0 <= item.hit.score <= 1.0
        assert 0.0 <= item.hit.confidence <= 1.0
        assert item.hit.high_confidence == (item.hit.confidence >= 0.8)
        assert item.relation
    block = answer.injection_block
    assert block.startswith(HEADER)
    for item in answer.items:
        assert item.memory.id in block


# -- modes ---------------------------------------------------------------------------


def test_fixture_supersedes_as_intended(team: Team) -> None:
    palace, ids = team.palace, team.ids
    assert palace.get(ids["supabase"]).superseded_by == ids["convex"]
    assert palace.get(ids["alice"]).superseded_by == ids["bob"]


def test_decision_mode_puts_decisions_first_without_filtering(team: Team) -> None:
    palace = team.palace
    general = palace.recall("backend database Supabase Convex", limit=8)
    decision = palace.recall("backend database Supabase Convex", limit=8, mode="decision")
    assert decision[0].memory.category is Category.DECISION
    assert decision[0].memory.id == team.ids["convex"]
    # Reweighted, not filtered: other categories are still there.
    assert {h.memory.category for h in decision} - {Category.DECISION, Category.LESSON}
    wanted = {Category.DECISION, Category.LESSON}

    def share(hits: list) -> float:  # type: ignore[type-arg]
        top = hits[:4]
        return sum(h.memory.category in wanted for h in top) / len(top)

    assert share(decision) >= share(general)
    scores = [h.score for h in decision]
    assert scores == sorted(scores, reverse=True)


def test_mode_shows_in_explain(team: Team) -> None:
    hits = team.palace.recall("Convex", limit=5, mode="decision")
    prior = MODES["decision"]
    now = team.palace.now()
    for hit in hits:
        explained = hit.to_dict(explain=True)["explain"]
        factor = explained["scores"]["mode"]
        assert prior.floor <= factor <= 1.0
        assert factor == pytest.approx(prior.factor(hit.memory, now), abs=1e-6)
        assert any(g.startswith("mode decision: x") for g in explained["gates"])
        assert explained["ranks"]["mode"] == explained["ranks"]["final"]


def test_general_mode_changes_nothing(team: Team) -> None:
    plain = team.palace.recall("Billing service", limit=6)
    general = team.palace.recall("Billing service", limit=6, mode="general")
    assert [h.memory.id for h in plain] == [h.memory.id for h in general]
    # the clock moves a second between calls: recency differs in the 9th digit
    assert [h.score for h in plain] == pytest.approx([h.score for h in general], abs=1e-6)
    assert all("mode" not in h.stage_scores for h in general)


def test_people_mode_prefers_people(team: Team) -> None:
    hits = team.palace.recall("who prefers asynchronous reviews", limit=5, mode="people")
    assert hits[0].memory.id == team.ids["dana"]


def test_conversation_mode_prefers_turns(team: Team) -> None:
    hits = team.palace.recall("move the backend database to Convex", limit=5, mode="conversation")
    assert hits[0].memory.category is Category.CONVERSATION


def test_workflow_mode_prefers_procedures(team: Team) -> None:
    hits = team.palace.recall("how do we deploy the service", limit=5, mode="workflow")
    assert hits[0].memory.category in (Category.WORKFLOW, Category.RULE)


def test_explicit_filters_still_filter_under_a_mode(team: Team) -> None:
    hits = team.palace.recall(
        "Billing Supabase Convex", limit=10, mode="decision", categories="event"
    )
    assert hits and all(h.memory.category is Category.EVENT for h in hits)


@pytest.mark.parametrize("mode", ["", "decisions", "GENERAL ", 3, "semantic"])
def test_invalid_mode_names_the_six(team: Team, mode: object) -> None:
    if mode == "GENERAL ":  # case and spaces are forgiven
        team.palace.recall("Convex", mode=mode)
        return
    with pytest.raises(ValidationError) as caught:
        team.palace.recall("Convex", mode=mode)  # type: ignore[arg-type]
    for name in ("general", "decision", "project", "people", "workflow", "conversation"):
        assert name in str(caught.value)


def test_a_mode_keeps_constraints(team: Team) -> None:
    hits = team.palace.recall("deploy Billing", limit=3, mode="conversation")
    assert team.ids["rule"] in {h.memory.id for h in hits}


# -- what do I know ----------------------------------------------------------------------


def test_what_do_i_know_groups_by_category(team: Team) -> None:
    answer = team.palace.family.what_do_i_know("Convex")
    names = [g.name for g in answer.groups]
    order = [f"{c.value}s" if c is not Category.PERSON else "people" for c in GROUP_ORDER]
    assert names == [n for n in order if n in names]
    by_name = {g.name: [i.memory.id for i in g.items] for g in answer.groups}
    assert team.ids["convex"] in by_name["decisions"]
    assert team.ids["goal"] in by_name["goals"]
    for group in answer.groups:
        assert all(i.relation == i.memory.category.value for i in group.items)
        scores = [i.hit.score for i in group.items]
        assert scores == sorted(scores, reverse=True)
    check_scores(answer)


def test_what_do_i_know_deduplicates(team: Team) -> None:
    answer = team.palace.family.what_do_i_know("Convex documents")
    found = item_ids(answer)
    assert len(found) == len(set(found))
    pair = {team.ids["documents"], team.ids["documents2"]}
    assert len(pair & set(found)) == 1  # near-duplicates fold into one
    kept = next(i for i in answer.items if i.memory.id in pair)
    assert set(kept.duplicates) == pair - {kept.memory.id}
    # Superseded versions appear only as the current one.
    assert team.ids["supabase"] not in found


def test_what_do_i_know_caps(team: Team) -> None:
    answer = team.palace.family.what_do_i_know("Convex Supabase Billing", limit=4, per_group=1)
    assert len(answer.items) <= 4
    assert all(len(g.items) == 1 for g in answer.groups)


def test_what_do_i_know_empty_is_an_answer(make_palace: MakePalace) -> None:
    answer = make_palace("zoe").family.what_do_i_know("quantum gardening")
    assert answer.empty and answer.groups == ()
    assert answer.hint == EMPTY_HINT
    assert answer.to_dict()["hint"] == EMPTY_HINT
    assert answer.injection_block.startswith(HEADER)


# -- why did we ------------------------------------------------------------------------


def test_why_did_we_traces_the_decision(team: Team) -> None:
    answer = team.palace.family.why_did_we("why did we choose Convex for the database")
    (timeline,) = answer.groups
    roles = {i.memory.id: i.relation for i in timeline.items}
    ids = team.ids
    assert roles[ids["convex"]] == "decision"
    assert roles[ids["supabase"]] == "superseded"
    assert roles[ids["lesson"]] == "lesson"
    assert roles.get(ids["migration"]) == "event" or roles.get(ids["outage"]) == "event"
    assert "message" in roles.values()
    times = [i.memory.created_at for i in timeline.items]
    assert times == sorted(times)
    superseded = next(i for i in timeline.items if i.relation == "superseded")
    assert superseded.via == "supersession"
    check_scores(answer)


def test_why_did_we_limit(team: Team) -> None:
    answer = team.palace.family.why_did_we("choose Convex", limit=2)
    assert len(answer.items) == 3  # the decision and two linked memories


def test_why_did_we_nothing(make_palace: MakePalace) -> None:
    answer = make_palace("zoe").family.why_did_we("choose Kubernetes")
    assert answer.empty and answer.hint == EMPTY_HINT


# -- ownership and dependencies -------------------------------------------------------------


def test_who_owns_answers_from_current_facts(team: Team) -> None:
    answer = team.palace.family.who_owns("the Billing service")
    assert [g.name for g in answer.groups] == ["Bob"]  # Alice's fact was superseded
    (item,) = answer.groups[0].items
    assert item.memory.id == team.ids["bob"] and item.relation == "owns"
    assert item.entity == "Bob"
    check_scores(answer)


def test_who_owns_counts_maintainers(team: Team) -> None:
    answer = team.palace.family.who_owns("Checkout API")
    assert [(g.name, g.items[0].relation) for g in answer.groups] == [("Carol", "maintains")]
    assert answer.items[0].memory.id == team.ids["carol"]


def test_depends_on_both_directions(team: Team) -> None:
    family = team.palace.family
    dependents = family.depends_on("Redis")
    assert {g.name for g in dependents.groups} == {"Checkout API", "Billing"}
    cited = {i.memory.id for i in dependents.items}
    assert cited == {team.ids["checkout_deps"], team.ids["billing_deps"]}
    needs = family.depends_on("the Checkout API", direction="dependencies")
    assert {g.name for g in needs.groups} == {"Redis", "Convex"}
    check_scores(needs)


def test_unknown_entity_is_an_empty_answer(team: Team) -> None:
    answer = team.palace.family.who_owns("Kubernetes cluster")
    assert answer.empty and answer.hint == EMPTY_HINT
    assert answer.notice and "Kubernetes cluster" in answer.notice


def test_relations_follow_the_memory(team: Team) -> None:
    palace = team.palace
    palace.forget(team.ids["carol"])  # archived: states nothing
    assert palace.family.who_owns("Checkout API").empty
    palace.forget(team.ids["billing_deps"], hard=True)
    assert {g.name for g in palace.family.depends_on("Redis").groups} == {"Checkout API"}


def test_relations_are_scoped(make_palace: MakePalace) -> None:
    ann, bob = make_palace("ann"), make_palace("bob")
    ann.remember("Alice owns the Search service")
    bob.remember("Mallory owns the Search service")
    shared = bob.remember("Trent maintains the Search service", visibility="shared")
    names = {g.name for g in ann.family.who_owns("Search").groups}
    assert names == {"Alice", "Trent"}
    assert shared.id in item_ids(ann.family.who_owns("Search"))
    assert {g.name for g in bob.family.who_owns("Search").groups} == {"Mallory", "Trent"}


def test_relations_survive_export_and_import(team: Team, make_palace: MakePalace, tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = io.StringIO()
    team.palace.export_jsonl(out)
    copy = Palace(tmp_path / "copy.db", agent_id="ann", settings=team.palace.settings)
    with copy:
        copy.import_jsonl(out.getvalue().splitlines())
        assert [g.name for g in copy.family.who_owns("Billing").groups] == ["Bob"]


@pytest.mark.parametrize("direction", ["up", "dependants", ""])
def test_bad_direction(team: Team, direction: str) -> None:
    with pytest.raises(ValidationError, match="dependents, dependencies"):
        team.palace.family.depends_on("Redis", direction=direction)


# -- preflight ------------------------------------------------------------------------------


def test_preflight_gathers_context(team: Team) -> None:
    answer = team.palace.family.preflight("deploy the Billing service")
    groups = {g.name: [i.memory.id for i in g.items] for g in answer.groups}
    assert groups["constraints"][0] == team.ids["rule"]
    assert team.ids["workflow"] in groups["workflows"]
    assert "billing" in answer.entities
    assert "Never deploy the Billing service on Fridays" in answer.injection_block
    check_scores(answer)


def test_preflight_with_skills(team: Team) -> None:
    from pathlib import Path

    skills = Path(__file__).resolve().parents[1] / "examples" / "skills"
    team.palace.skills.import_path(skills / "api-integration")
    answer = team.palace.family.preflight("integrate a third-party REST API with retries")
    names = [i.entity for g in answer.groups if g.name == "skills" for i in g.items]
    assert names and names[0] == "api-integration"


# -- bad inputs ------------------------------------------------------------------------------

BAD = [
    ("what_do_i_know", ("",), {}, "topic"),
    ("what_do_i_know", ("  ",), {}, "topic"),
    ("what_do_i_know", (3,), {}, "topic"),
    ("what_do_i_know", ("x",), {"limit": 0}, "limit"),
    ("what_do_i_know", ("x",), {"limit": 101}, "limit"),
    ("what_do_i_know", ("x",), {"per_group": 21}, "per_group"),
    ("why_did_we", ("",), {}, "query"),
    ("why_did_we", ("x",), {"limit": 51}, "limit"),
    ("who_owns", ("",), {}, "name"),
    ("who_owns", ("x",), {"limit": 0}, "limit"),
    ("depends_on", (None,), {}, "name"),
    ("preflight", ("",), {}, "action"),
    ("preflight", ("x",), {"limit": 21}, "limit"),
]


@pytest.mark.parametrize(("method", "args", "kwargs", "field"), BAD)
def test_bad_inputs(
    make_palace: MakePalace,
    method: str,
    args: tuple[object, ...],
    kwargs: dict[str, object],
    field: str,
) -> None:
    with pytest.raises(ValidationError) as caught:
        getattr(make_palace("ann").family, method)(*args, **kwargs)
    assert caught.value.field == field
