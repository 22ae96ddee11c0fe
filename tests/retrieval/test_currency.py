"""Curated memories among chat, and the newer of two statements on one
subject first (``stages.session_support``, ``currency.newer_first``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.conversations import Message
from mindpalace.models import Category, Hit, HitList, MemoryKind
from mindpalace.retrieval.currency import (
    asks_current,
    changed_cosine,
    newer_first,
    stated_cosine,
)

from .memories import T0
from .memories import memory as _memory

NOW = datetime(2026, 11, 27, 17, 0, tzinfo=timezone.utc)


def _hit(
    key: str,
    days: int,
    score: float,
    *,
    category: Category = Category.DECISION,
    content: str = "",
) -> Hit:
    memory = replace(
        _memory(key, None, content=content),
        category=category,
        kind=MemoryKind.MEMORY,
        created_at=T0 + timedelta(days=days),
    )
    return Hit(memory=memory, score=score, ranks={"final": 0})


def _unit(*values: float) -> np.ndarray:
    vector = np.array(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


VECTORS = {
    "old": _unit(1.0, 0.1, 0.0),
    "new": _unit(1.0, 0.2, 0.1),  # the same subject, said again
    "other": _unit(0.0, 0.0, 1.0),
    "chat": _unit(1.0, 0.1, 0.0),
}


def _keys(hits: HitList) -> list[str]:
    return [h.memory.id for h in hits]


def test_the_newer_statement_is_placed_above_the_older() -> None:
    hits = HitList([_hit("old", 0, 0.9), _hit("other", 5, 0.8), _hit("new", 10, 0.7)])
    out = newer_first(hits, VECTORS.get, cosine=0.6)
    assert _keys(out) == ["new", "old", "other"]
    # scores stay with the places; explain says why
    assert [h.score for h in out] == [0.9, 0.8, 0.7]
    assert "newer: placed above old" in out[0].gates
    assert [h.ranks["final"] for h in out] == [1, 2, 3]


def test_unrelated_other_categories_chat_and_time_keep_their_place() -> None:
    far = HitList([_hit("old", 0, 0.9), _hit("other", 10, 0.8)])
    assert _keys(newer_first(far, VECTORS.get, cosine=0.6)) == ["old", "other"]
    person = HitList([_hit("old", 0, 0.9), _hit("new", 10, 0.7, category=Category.PERSON)])
    assert _keys(newer_first(person, VECTORS.get, cosine=0.6)) == ["old", "new"]
    turn = replace(_memory("chat", "s1"), created_at=T0 + timedelta(days=10))
    chat = HitList([_hit("old", 0, 0.9), Hit(memory=turn, score=0.8)])
    assert _keys(newer_first(chat, VECTORS.get, cosine=0.6)) == ["old", "chat"]
    # the time prior lifted the older one: the query asks what held then
    lifted = replace(_hit("old", 0, 0.9), stage_scores={"time": 1.3})
    timed = HitList([lifted, _hit("new", 10, 0.7)])
    assert _keys(newer_first(timed, VECTORS.get, cosine=0.6)) == ["old", "new"]


def test_a_chain_of_versions_ends_newest_first() -> None:
    vectors = {"v1": _unit(1, 0, 0), "v2": _unit(1, 0.1, 0), "v3": _unit(1, 0.2, 0)}
    hits = HitList([_hit("v1", 0, 0.9), _hit("v2", 5, 0.8), _hit("v3", 9, 0.7)])
    assert _keys(newer_first(hits, vectors.get, cosine=0.6)) == ["v3", "v2", "v1"]


# A replacement said in other words: further from the old statement than a
# restatement (cosine 0.42 here), and filed under another category.
WIDER = {
    "rule": _unit(1.0, 0.0, 0.0),
    "change": _unit(0.42, 0.9075, 0.0),
    "later": _unit(0.42, 0.0, 0.9075),
}
RULE = "Rehearsals are on Tuesday and Thursday evenings at the church hall."
CHANGE = "From 8 September we rehearse on Tuesdays and Wednesdays instead."
PLAIN = "We rehearse on Tuesdays and Wednesdays."


def test_for_a_question_about_now_a_stated_change_is_placed_above_what_it_replaces() -> None:
    hits = HitList(
        [
            _hit("rule", 0, 0.9, category=Category.RULE, content=RULE),
            _hit("change", 10, 0.7, category=Category.DECISION, content=CHANGE),
        ]
    )
    # Not a question about now: too far apart to be a restatement.
    assert _keys(newer_first(hits, WIDER.get, cosine=0.6)) == ["rule", "change"]
    out = newer_first(hits, WIDER.get, cosine=0.6, changed=0.3)
    assert _keys(out) == ["change", "rule"]
    assert "newer: placed above rule" in out[0].gates
    # Not close enough even so.
    assert _keys(newer_first(hits, WIDER.get, cosine=0.6, changed=0.5)) == ["rule", "change"]


def test_whatever_the_question_a_stated_change_of_the_same_category_is_placed_above() -> None:
    # cosine 0.42: under a restatement's 0.6, over the stated mark of 0.4
    same = HitList(
        [
            _hit("rule", 0, 0.9, category=Category.RULE, content=RULE),
            _hit("change", 10, 0.7, category=Category.RULE, content=CHANGE),
        ]
    )
    out = newer_first(same, WIDER.get, cosine=0.6, stated=0.4)
    assert _keys(out) == ["change", "rule"]
    assert "newer: placed above rule" in out[0].gates
    # not close enough, or no mark for the model: relevance orders them
    assert _keys(newer_first(same, WIDER.get, cosine=0.6, stated=0.45)) == ["rule", "change"]
    assert _keys(newer_first(same, WIDER.get, cosine=0.6)) == ["rule", "change"]
    # another category needs a question about now
    other = HitList(
        [same[0], replace(same[1], memory=replace(same[1].memory, category=Category.DECISION))]
    )
    assert _keys(newer_first(other, WIDER.get, cosine=0.6, stated=0.4)) == ["rule", "change"]
    # the newer must say that something changed, and the older must not
    plain = HitList([same[0], _hit("change", 10, 0.7, category=Category.RULE, content=PLAIN)])
    assert _keys(newer_first(plain, WIDER.get, cosine=0.6, stated=0.4)) == ["rule", "change"]
    both = HitList([_hit("rule", 0, 0.9, category=Category.RULE, content=CHANGE), same[1]])
    assert _keys(newer_first(both, WIDER.get, cosine=0.6, stated=0.4)) == ["rule", "change"]
    # the time prior lifted the older one: the question asks what held then
    lifted = replace(same[0], stage_scores={"time": 1.3})
    assert _keys(newer_first(HitList([lifted, same[1]]), WIDER.get, cosine=0.6, stated=0.4)) == [
        "rule",
        "change",
    ]


def test_only_a_newer_memory_stating_a_change_passes_one_stating_none() -> None:
    said_plainly = HitList(
        [
            _hit("rule", 0, 0.9, category=Category.RULE, content=RULE),
            _hit("change", 10, 0.7, category=Category.DECISION, content=PLAIN),
        ]
    )
    assert _keys(newer_first(said_plainly, WIDER.get, cosine=0.6, changed=0.3)) == [
        "rule",
        "change",
    ]
    # An older memory that states a change itself keeps its place: a still
    # newer change about something else would otherwise push it down.
    vectors = {**WIDER, "later": _unit(0.42, 0.2, 0.88)}
    two_changes = HitList(
        [
            _hit("change", 10, 0.9, category=Category.DECISION, content=CHANGE),
            _hit("later", 20, 0.7, category=Category.DECISION, content=CHANGE.replace("8", "9")),
        ]
    )
    assert float(vectors["change"] @ vectors["later"]) < 0.6
    assert _keys(newer_first(two_changes, vectors.get, cosine=0.6, changed=0.3)) == [
        "change",
        "later",
    ]
    # Chat is not a statement written on its own.
    turn = replace(_memory("change", "s1", content=CHANGE), created_at=T0 + timedelta(days=10))
    chat = HitList([_hit("rule", 0, 0.9, category=Category.RULE, content=RULE), Hit(turn, 0.7)])
    assert _keys(newer_first(chat, WIDER.get, cosine=0.6, changed=0.3)) == ["rule", "change"]


def test_a_question_about_now_is_told_by_its_words() -> None:
    for query in (
        "Who is playing Madame Arcati now?",
        "Are we still doing two-week sprints?",
        "Where do we get our manure from these days?",
        "Which nights are rehearsal nights at the moment?",
        "What is the current price of a pitch?",
        "Does Hannah run the nurse clinics any longer?",
        # what will happen: the plan that holds now
        "When will the builders hand the house back to us?",
        "How much is an hour of partner time going to cost clients?",
        "Won't the hall be shut over Christmas?",
    ):
        assert asks_current(query), query
    for query in (
        "What did we decide in October?",
        "Who knows the alarm code?",  # "now" inside a word
        "When did Kenji join the team?",
        "Who can fetch an original will from the basement?",  # the document
        "Where is her will kept?",
        "Who drafted the will?",
    ):
        assert not asks_current(query), query
    assert changed_cosine("local/all-minilm-l6-v2-int8/384") == 0.3
    assert changed_cosine("static/minilm-l6-m2v-256/256") == 0.45
    assert changed_cosine("bge-small-en-v1.5-int8") == 0.5
    assert changed_cosine("http/some-model/1024") is None
    assert stated_cosine("local/all-minilm-l6-v2-int8/384") == 0.45
    assert stated_cosine("static/minilm-l6-m2v-256/256") == 0.6
    assert stated_cosine("bge-small-en-v1.5-int8") == 0.6
    assert stated_cosine("hashing/hashing-v1/256") is None


def _palace(tmp_path: Path, when: list[datetime]) -> Palace:
    return Palace(
        tmp_path / "p.db",
        settings=Settings(embedder="local", signals=False),
        clock=lambda: when[0],
    )


def test_a_fact_is_not_outranked_by_chat_that_borrows_its_session(tmp_path: Path) -> None:
    when = [datetime(2026, 11, 2, 9, 0, tzinfo=timezone.utc)]
    palace = _palace(tmp_path, when)
    joined = palace.remember(
        "Kenji Sato joined the platform team on 2 November 2026 as a backend engineer.",
        category="fact",
    )
    when[0] = datetime(2026, 11, 24, 9, 30, tzinfo=timezone.utc)
    palace.add_messages(
        [
            Message("Morning team, standup time.", speaker="Ana"),
            Message(
                "Kenji, since you joined the team, can you own the outage report?", speaker="Ana"
            ),
            Message("Yes, report by Thursday.", speaker="Kenji"),
            Message("Kenji joining the team was good timing for the on-call rota.", speaker="Ben"),
            Message("The whole team joins the retro on Friday.", speaker="Ana"),
            Message("I'll pair with Kenji on the dashboards.", speaker="Ben"),
        ],
        session="standup-24-nov",
    )
    palace.semantic.wait_for_vectors(timeout=60)
    when[0] = NOW
    hits = palace.recall("when did Kenji join the team", limit=5)
    assert hits[0].memory.id == joined.id
    palace.close()


def _old_then_new(
    tmp_path: Path,
    old: tuple[str, str],
    new: tuple[str, str],
    *,
    between: Sequence[tuple[str, str]] = (),
) -> tuple[Palace, str, str]:
    """A palace holding ``old`` (text, category), written in the spring,
    ``between`` after it, and ``new`` in the autumn, asked at ``NOW``; the
    ids of ``old`` and ``new``, which the write path did not link."""
    when = [datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)]
    palace = _palace(tmp_path, when)
    first = palace.remember(old[0], category=old[1])
    for text, category in between:
        palace.remember(text, category=category)
    when[0] = datetime(2026, 10, 30, 15, 0, tzinfo=timezone.utc)
    second = palace.remember(new[0], category=new[1])
    palace.semantic.wait_for_vectors(timeout=60)
    when[0] = NOW
    assert palace.get(first.id).superseded_by is None
    return palace, first.id, second.id


def test_the_replacement_of_a_decision_comes_first(tmp_path: Path) -> None:
    # Said without a word of change, so the write path links nothing and
    # both are recalled: the newer is placed first.
    palace, old, new = _old_then_new(
        tmp_path,
        (
            "Production deploys go out on Tuesdays and Thursdays before 3 pm. Nothing is"
            " deployed on a Friday.",
            "rule",
        ),
        (
            "Deploy policy: production deploys may go out any weekday morning before 11 am,"
            " Fridays included, if the canary stays green.",
            "rule",
        ),
    )
    hits = palace.recall("can I deploy to production on a Friday?", limit=5)
    assert _keys(hits)[:2] == [new, old]
    palace.close()


def test_the_rule_runs_only_for_models_it_was_measured_on() -> None:
    from mindpalace.retrieval.currency import link_cosine, same_subject_cosine

    assert same_subject_cosine("local/all-minilm-l6-v2-int8/384") == 0.6
    assert same_subject_cosine("bge-small-en-v1.5-int8") == 0.7
    assert same_subject_cosine("hashing/hashing-v1/256") is None
    assert same_subject_cosine("http/text-embedding-3-small/1536") is None
    # the write path links a replacement from its own, lower cosine for MiniLM
    assert link_cosine("local/all-minilm-l6-v2-int8/384") == 0.5
    assert link_cosine("static/minilm-l6-m2v-256/256") == 0.7
    assert link_cosine("hashing/hashing-v1/256") is None


def test_a_replaced_memory_is_placed_above_its_replacement_when_asked_about_before() -> None:
    from mindpalace.retrieval.currency import older_first

    old = replace(_hit("old", 0, 0.5).memory, superseded_by="new")
    hits = HitList(
        [
            _hit("new", 10, 0.9),
            _hit("other", 5, 0.8),
            replace(_hit("old", 0, 0.5), memory=old),
        ]
    )
    out = older_first(hits)
    assert _keys(out) == ["old", "new", "other"]
    assert [h.score for h in out] == [0.9, 0.8, 0.5]
    assert "older: placed above new" in out[0].gates
    # a replaced memory whose replacement ranks below it stays where it is
    assert _keys(older_first(HitList([out[0], out[2]]))) == ["old", "other"]


def test_asked_about_now_the_replacement_in_other_words_comes_first(tmp_path: Path) -> None:
    palace, old, new = _old_then_new(
        tmp_path,
        (
            "Marjorie Quinn, our longest-serving member, is playing Madame Arcati in Blithe"
            " Spirit.",
            "fact",
        ),
        (
            "Marjorie Quinn has withdrawn from Blithe Spirit after a hip operation; since"
            " 22 September 2026 Patricia Lowe has taken on the part of the eccentric medium.",
            "event",
        ),
        between=[("Blithe Spirit runs for four nights in late October.", "event")],
    )
    then = _keys(palace.recall("Who was cast as Madame Arcati?", limit=5))
    assert then.index(old) < then.index(new)
    hits = palace.recall("Who is playing Madame Arcati now?", limit=5)
    assert _keys(hits).index(new) < _keys(hits).index(old)
    assert any(g.startswith("newer: placed above") for g in hits[0].gates)
    palace.close()


def test_asked_what_will_happen_the_changed_plan_comes_first(tmp_path: Path) -> None:
    # The new date is said in other words and written as a decision: the
    # write path links nothing. A question about the past keeps the order
    # of relevance; one about what will happen asks for the plan now.
    palace, old, new = _old_then_new(
        tmp_path,
        (
            "Gareth Pryce's programme: work starts on 13 April 2026 and the house is"
            " finished by the end of September 2026.",
            "decision",
        ),
        (
            "Gareth has pushed handover back to 20 November 2026, blaming the late steel"
            " and the rot repairs.",
            "decision",
        ),
        between=[("The steel beam arrived three weeks late, on 23 June 2026.", "event")],
    )
    hits = palace.recall("When will the builders hand the house back to us?", limit=5)
    keys = _keys(hits)
    assert keys.index(new) < keys.index(old)
    assert any(g == f"newer: placed above {old}" for g in hits[keys.index(new)].gates)
    # the same words without the tense: relevance orders them
    then = _keys(palace.recall("When did the builders hand the house back to us?", limit=5))
    assert then.index(old) < then.index(new)
    palace.close()


def test_without_a_word_of_now_the_stated_change_of_a_rule_comes_first(tmp_path: Path) -> None:
    # A rule replaced by a rule said in other words (cosine about 0.45 with
    # MiniLM, under a restatement's 0.6; the write path links nothing).
    palace, old, new = _old_then_new(
        tmp_path,
        (
            "Guests can arrive between 1 pm and 8 pm and must leave by 11 am on their last day.",
            "rule",
        ),
        (
            "Arrivals now start at 3 pm, since Kasia Nowak needs the extra time for pod"
            " changeovers; anyone turning up after 9 pm parks in the lay-by.",
            "rule",
        ),
        between=[("Quiet hours on the site run from 10:30 pm to 7 am.", "rule")],
    )
    hits = palace.recall("What time can guests arrive?", limit=5)
    keys = _keys(hits)
    assert keys.index(new) < keys.index(old)
    assert f"newer: placed above {old}" in hits[keys.index(new)].gates
    palace.close()
