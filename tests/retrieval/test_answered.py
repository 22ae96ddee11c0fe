"""Answer support: a question the palace does not answer gets hits labelled
low, not a confident best match (``retrieval/answered.py``), and the
context block keeps only hits above its floor."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.models import Hit, HitList
from mindpalace.retrieval.answer_kind import AMOUNT
from mindpalace.retrieval.answered import MISSING_SUPPORT, judged, marks_for, read, words_share
from mindpalace.skills.facade import CONTEXT_FLOOR

from .memories import memory as _memory

NOW = datetime(2026, 11, 27, 17, 0, tzinfo=timezone.utc)

FACTS = [
    ("We decided to use PostgreSQL 16 as the main database for the billing service.", "decision"),
    ("We work in two-week sprints that start on Mondays.", "fact"),
    (
        "New deploy policy from 2 November 2026: production deploys may go out any weekday"
        " morning before 11 am.",
        "rule",
    ),
    ("Priya Raman is the engineering manager; she holds one-on-ones every other week.", "fact"),
    (
        "The studio shuts between Christmas and New Year; other leave goes in the HR calendar.",
        "rule",
    ),
    ("Feature flags live in Unleash; a flag older than 90 days gets a cleanup ticket.", "rule"),
]


@pytest.fixture(scope="module")
def palace(tmp_path_factory: pytest.TempPathFactory) -> Palace:
    path: Path = tmp_path_factory.mktemp("answered") / "p.db"
    p = Palace(path, settings=Settings(embedder="local", signals=False), clock=lambda: NOW)
    for content, category in FACTS:
        p.remember(content, category=category)
    p.semantic.wait_for_vectors(timeout=60)
    return p


def test_an_answered_question_keeps_its_relevance(palace: Palace) -> None:
    hits = palace.recall("which database do we use for billing?", limit=5)
    assert "PostgreSQL" in hits[0].memory.content
    assert hits[0].score >= 0.5
    assert not any(g.startswith("answer-support") for g in hits[0].gates)


def test_a_paraphrase_is_still_answered(palace: Palace) -> None:
    # "begin" is not in the palace; the word table finds "start" close to it
    hits = palace.recall("when do our sprints begin?", limit=5)
    assert "sprints" in hits[0].memory.content
    assert hits[0].score >= 0.5


def test_a_question_about_something_never_stored_is_labelled_low(palace: Palace) -> None:
    answered = palace.recall("what is our deploy policy?", limit=5)
    never = palace.recall("what's our parental leave policy?", limit=5)
    assert never, "the stages still find the nearest memories"
    assert all(h.score < 0.5 for h in never)
    # the order is the stages' own; explain says why the relevance is low
    assert any(g.startswith("answer-support: low") for g in never[0].gates)
    assert never[0].stage_scores["support"] < 1.0
    assert answered[0].score >= 0.5


def test_the_context_block_leaves_out_hits_under_its_floor(palace: Palace) -> None:
    hits = palace.recall("how much did we pay for the new sofa?", limit=8)
    kept = {h.memory.id for h in hits if h.score >= CONTEXT_FLOOR}
    dropped = {h.memory.id for h in hits if h.score < CONTEXT_FLOOR}
    block = palace.context("how much did we pay for the new sofa?", max_tokens=1024)
    shown = {s.id for s in block.sources if s.kind == "memory"}
    assert shown <= kept
    assert not shown & dropped
    assert dropped, "the floor had something to leave out"


def test_words_share() -> None:
    assert words_share("which database do we use", ["We use a database."]) == 1.0
    # a question of stopwords only asks about nothing in particular
    assert words_share("what is it?", ["anything"]) == 1.0
    low = words_share("parental leave policy", ["We work in two-week sprints."])
    assert low < 0.2
    # the best text counts, not the sum
    assert words_share("parental leave", ["parental", "leave"]) < 1.0


def test_the_rule_runs_only_for_models_it_was_measured_on() -> None:
    assert marks_for("local/all-minilm-l6-v2-int8/384") == (0.44, 0.44)
    assert marks_for("static/minilm-l6-m2v-256/256") == (0.42, 0.54)
    assert marks_for("hashing/hashing-v1/256") is None
    hit = Hit(memory=_memory("m", None), score=0.9, ranks={"final": 1}, stage_scores={"dense": 0.1})
    hits = HitList([hit])
    assert judged("what's our parental leave policy?", hits, "hashing/hashing-v1/256") is hits
    low = judged("what's our parental leave policy?", hits, "local/all-minilm-l6-v2-int8/384")
    assert low[0].score < 0.5


# --- a question asking a price the palace never stored ---

SERVICE = [
    (
        "The annual boiler service by Hartley Heating is booked for 3 March 2027,"
        " with Sam Okoro as the contact.",
        "event",
    ),
    ("Sam Okoro prefers phone calls to email and answers before 9 am.", "fact"),
    ("Hartley Heating fitted the new thermostat in the hall in January 2026.", "event"),
    ("Radiators are bled every autumn; the boiler pressure should sit near 1.5 bar.", "rule"),
    ("The gutters were cleared by Brightside Roofing on 12 October 2026.", "event"),
    ("Our window cleaner charges £25 a visit and comes every six weeks.", "fact"),
]
NEVER_PRICED = "How much are we paying Hartley Heating for the boiler service?"


@pytest.fixture()
def service(tmp_path: Path) -> Palace:
    p = Palace(
        tmp_path / "service.db",
        settings=Settings(embedder="local", signals=False),
        clock=lambda: NOW,
    )
    for content, category in SERVICE:
        p.remember(content, category=category)
    p.semantic.wait_for_vectors(timeout=60)
    return p


def _support_gates(hits: HitList) -> list[str]:
    return [g for h in hits for g in h.gates if g.startswith("answer-support")]


def test_a_price_the_palace_never_stored_is_labelled_low(service: Palace) -> None:
    hits = service.recall(NEVER_PRICED, limit=4)
    # the stages find the booking, and it carries most of the question
    assert "Hartley Heating" in hits[0].memory.content
    reading = read(NEVER_PRICED, hits, marks_for("all-minilm-l6-v2-int8") or (1.0, 1.0))
    assert reading is not None and reading.words >= 0.44, "the words alone would pass"
    assert reading.missing == AMOUNT
    assert reading.support == MISSING_SUPPORT
    assert all(h.score < 0.5 for h in hits)
    assert "asks for an amount of money" in hits[0].gates[-1]


def test_a_price_the_palace_holds_keeps_its_relevance(service: Palace) -> None:
    hits = service.recall("How much does the window cleaner charge?", limit=4)
    assert "£25" in hits[0].memory.content
    assert hits[0].score >= 0.5
    assert not _support_gates(hits)


def test_another_agents_memories_do_not_change_the_reading(service: Palace) -> None:
    before = service.recall(NEVER_PRICED, limit=4)
    assert all(h.score < 0.5 for h in before)
    other = service.for_agent("bookkeeper")
    other.remember("Hartley Heating's boiler service costs us £180 a year.", category="fact")
    service.semantic.wait_for_vectors(timeout=60)
    # the other agent sees its own price ...
    assert other.recall(NEVER_PRICED, limit=4)[0].score >= 0.5
    # ... and the first agent's hits, relevance and explanation are as they were
    after = service.recall(NEVER_PRICED, limit=4)
    assert [(h.memory.id, h.score, h.gates) for h in after] == [
        (h.memory.id, h.score, h.gates) for h in before
    ]


def test_an_amount_in_a_lower_hit_is_another_things_price() -> None:
    """ "What does the loan analyser cost?" above another service's fee: the
    best hit, about the loan, states no amount, so the question is not
    answered; with the amount in the best hit it is."""
    question = "How much are we paying per month for the loan blood analyser?"
    loan = _memory("loan", None, content="The manufacturer sent a loan blood analyser.")
    fee = _memory("fee", None, content="A standard consultation is £54 including VAT.")
    priced = _memory("priced", None, content="The loan blood analyser costs us £90 a month.")
    marks = marks_for("all-minilm-l6-v2-int8") or (1.0, 1.0)
    first = read(question, HitList([Hit(loan, 0.9), Hit(fee, 0.5)]), marks)
    assert first is not None and first.missing == AMOUNT
    answered = read(question, HitList([Hit(priced, 0.9), Hit(loan, 0.5)]), marks)
    assert answered is not None and answered.missing is None


def test_a_best_hit_written_in_the_window_answers_the_question() -> None:
    """ "What stopped working last week?" shares no word and little meaning
    with "the analyser showed error E-14"; written that week (the time
    prior's ``window`` score), it answers the question. Asked a price, it
    still has to state one; and a best hit outside the window is judged by
    its words as before."""
    marks = marks_for("all-minilm-l6-v2-int8") or (1.0, 1.0)
    fault = _memory("fault", None, content="The analyser showed error E-14 on every sample.")
    question = "What stopped working last week?"
    plain = read(question, HitList([Hit(fault, 0.9, stage_scores={"dense": 0.2})]), marks)
    assert plain is not None and not plain.answered
    scores = {"dense": 0.2, "time": 1.5, "window": 1.0}
    then = read(question, HitList([Hit(fault, 0.9, stage_scores=scores)]), marks)
    assert then is not None and then.answered
    windowed = HitList([Hit(fault, 0.9, stage_scores=scores)])
    priced = read("How much did last week's repair cost?", windowed, marks)
    assert priced is not None and priced.missing == AMOUNT and not priced.answered
