"""Who someone is: the memory introducing the person a question names
comes first (``identity.introduction_first``), in the ranking and through
a real palace."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.conversations import Message
from mindpalace.models import Category, Hit, HitList, MemoryKind
from mindpalace.retrieval.identity import asked_name, introduces, introduction_first
from mindpalace.retrieval.options import RecallOptions

from .memories import memory as _memory


def _fact(key: str, content: str) -> Hit:
    memory = replace(
        _memory(key, None, content=content), category=Category.FACT, kind=MemoryKind.MEMORY
    )
    return Hit(memory=memory, score=1.0, ranks={"final": 0})


def _turn(key: str, content: str) -> Hit:
    memory = replace(_memory(key, "s1", content=content), kind=MemoryKind.MESSAGE)
    return Hit(memory=memory, score=1.0, ranks={"final": 0})


def _ranked(*hits: Hit) -> HitList:
    return HitList(
        [replace(h, score=1.0 - i / 10, ranks={"final": i + 1}) for i, h in enumerate(hits)]
    )


def _keys(hits: HitList) -> list[str]:
    return [h.memory.id for h in hits]


@pytest.mark.parametrize(
    ("question", "name"),
    [
        ("Who is Nell?", "Nell"),
        ("who's Geoffrey?", "Geoffrey"),
        ("Who\u2019s Geoffrey", "Geoffrey"),
        ("Who was Marcus Adeyemi?", "Marcus Adeyemi"),
        ("tell me about Priya Sandhu", "Priya Sandhu"),
        ("What do we know about Dolly?", "Dolly"),
        ("Who is the treasurer?", None),  # a role, not a name
        ("who is responsible for billing?", None),
        ("who is nell", None),  # lower case: not read as a name
        ("Who is Nell and what does she do?", None),
        ("Where is Nell?", None),
        ("", None),
    ],
)
def test_the_name_a_question_asks_about(question: str, name: str | None) -> None:
    assert asked_name(question) == name


@pytest.mark.parametrize(
    ("content", "asked", "strength"),
    [
        ("Eleanor Hartwell is the senior partner; everyone calls her Nell.", "Nell", 2),
        ("Eleanor Marsh, Nell to friends and family, keeps the budget.", "Nell", 1),
        ("Eleanor Marsh, our budget keeper, is known as Nell.", "Nell", 2),
        ("Rebecca Thwaite farms the land next door.", "Becca", 1),
        ("Geoffrey Calloway is the executor of the estate.", "Geoffrey", 2),
        ("Geoffrey Calloway does not use email.", "Geoffrey", 1),
        ("Marcus Adeyemi is on leave; Jenna Hollis is the supply teacher.", "Jenna", 2),
        ("Biscuit is the class guinea pig.", "Biscuit", 2),
        # not an introduction of the asked name
        ("Geoffrey Calloway is the executor; Eleanor Hartwell acts for him.", "Nell", 0),
        ("While the works go on, the cat stays with Nell's mum.", "Nell", 0),
        ("On Monday Nell is away.", "Nell", 0),
        ("The Nell account is closed.", "Nell", 0),
        ("Bec Stone is the treasurer.", "Becca", 0),  # too short a form to match
    ],
)
def test_what_introduces_a_person(content: str, asked: str, strength: int) -> None:
    assert introduces(_fact("m", content).memory, asked) == strength


def test_a_turn_never_introduces_anyone() -> None:
    assert introduces(_turn("t", "Eleanor Hartwell is the senior partner").memory, "Eleanor") == 0


def test_the_introduction_is_placed_first_and_says_so() -> None:
    hits = _ranked(
        _turn("turn", "Becca: the gate is open"),
        _fact("about", "Dougie Platt counts the sheep Becca keeps."),
        _fact("does", "Rebecca Thwaite farms Low Garth next door."),
    )
    out = introduction_first(hits, "Who is Becca?")
    assert _keys(out) == ["does", "turn", "about"]
    assert [h.score for h in out] == [h.score for h in hits]  # scores stay with the places
    assert out[0].gates[-1] == "introduces Becca: placed above turn"
    # What a person is comes before what they do, wherever it ranks.
    hits = _ranked(
        _fact("does", "Geoffrey Calloway does not use email."),
        _fact("is", "Geoffrey Calloway is the executor of the estate."),
    )
    assert _keys(introduction_first(hits, "who's Geoffrey?")) == ["is", "does"]


def test_other_questions_and_lists_without_an_introduction_are_unchanged() -> None:
    hits = _ranked(
        _turn("turn", "Nell: see you at the meeting"),
        _fact("other", "Geoffrey Calloway is the executor; Eleanor Hartwell acts for him."),
    )
    for question in ("Who is Nell?", "who is nell?", "What did Nell say?", "Who is the boss?"):
        assert introduction_first(hits, question) is hits
    first = _ranked(_fact("is", "Nell Gwyn is an actress."), _fact("x", "Nell Gwyn sells fruit."))
    assert introduction_first(first, "Who is Nell?") is first
    assert introduction_first(HitList([]), "Who is Nell?") == []


NOW = datetime(2026, 11, 27, 17, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize("on", [True, False])
def test_a_palace_answers_who_someone_is_with_their_introduction(tmp_path: Path, on: bool) -> None:
    with Palace(
        tmp_path / "p.db", agent_id="ann", settings=Settings(agent_id="ann", embedder="static")
    ) as palace:
        palace.recall_options = RecallOptions(introduction_first=on)
        intro = palace.remember(
            "Rebecca Thwaite farms Low Garth next door and rents us her meadow in August.",
            created_at=NOW - timedelta(days=30),
        )
        palace.add_messages(
            [
                Message(
                    content=text,
                    role="user",
                    speaker="Becca",
                    session="farm",
                    created_at=NOW - timedelta(days=2, minutes=-i),
                )
                for i, text in enumerate(
                    [
                        "Becca here: the gate into Low Garth is open",
                        "Becca says my sheep are all up top",
                        "cheers, Becca signing off",
                    ]
                )
            ]
        )
        hits = palace.recall("Who is Becca?", limit=5)
    ids = [h.memory.id for h in hits]
    assert intro.id in ids
    if on:
        assert ids[0] == intro.id
        assert hits[0].gates[-1].startswith("introduces Becca: placed above")
    else:  # ranked by relevance alone, Becca's own turns come first
        assert ids[0] != intro.id
