"""Date awareness on a conversation with real timestamps (both backends):
the dates turns state are indexed at ingest; time in a query lifts the
memories of that time; the Python API and the CLI agree."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import pytest

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.conversations import Message
from mindpalace.formats import read_messages
from mindpalace.retrieval.pipeline import RecallOptions
from mindpalace.retrieval.time.temporal import find_times

# A billing team's chat, written for these tests. Recall runs on Wednesday
# 10 June 2026, so "last week" is Monday 1 to Sunday 7 June 2026.
NOW = datetime(2026, 6, 10, 10, 0, tzinfo=timezone.utc)
CHAT = [
    ("2026-04-14T10:00:00Z", "Ana", "We decided to move the billing service onto Postgres."),
    ("2026-04-14T10:01:00Z", "Ben", "Good, that billing decision makes the audit easier."),
    ("2026-05-06T09:00:00Z", "Ben", "The billing migration to Postgres finished yesterday."),
    ("2026-05-20T09:00:00Z", "Ana", "We decided to drop the legacy billing export."),
    ("2026-06-03T15:00:00Z", "Ben", "Freeze billing deploys until the audit, we decided."),
    ("2026-06-03T15:01:00Z", "Ana", "Agreed, no deploys for now."),
    ("2026-06-09T09:00:00Z", "Ana", "Billing dashboards look green; we decided nothing new."),
    ("2026-06-09T09:02:00Z", "Ben", "Back in May we decided invoices go out monthly."),
]
LAST_WEEK = "Ben: Freeze billing deploys until the audit, we decided."
IN_MAY = {
    "Ben: The billing migration to Postgres finished yesterday.",
    "Ana: We decided to drop the legacy billing export.",
    "Ben: Back in May we decided invoices go out monthly.",
}
# The time prior off (and the re-ranker, which reads what the prior did).
OFF = RecallOptions(time_window_weight=0.0, time_when_weight=0.0, rerank=False)


def _chat_file(tmp_path: Path) -> Path:
    path = tmp_path / "billing.jsonl"
    rows = [{"timestamp": t, "speaker": who, "content": text} for t, who, text in CHAT]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def _palace(make_palace: Callable[..., Palace], clock: object, tmp_path: Path) -> Palace:
    palace = make_palace()
    palace.add_messages(read_messages(_chat_file(tmp_path), session="billing"))
    clock.now = NOW  # type: ignore[attr-defined]
    return palace


def test_ingest_indexes_the_dates_a_turn_states(
    make_palace: Callable[..., Palace], clock: object, tmp_path: Path
) -> None:
    palace = _palace(make_palace, clock, tmp_path)
    turns = {m.content: m for m in palace.recent(20, session="billing")}
    said = turns["Ben: The billing migration to Postgres finished yesterday."]
    assert said.context is not None
    assert said.context.splitlines() == [
        "Ben: Good, that billing decision makes the audit easier.",
        "when: 5 May 2026",
    ]
    assert turns["Ben: Back in May we decided invoices go out monthly."].context == (
        "Ana: Billing dashboards look green; we decided nothing new.\nwhen: May 2026"
    )
    # A turn that states no time keeps only its neighbour as context.
    assert turns["Ana: Agreed, no deploys for now."].context == LAST_WEEK
    hits = palace.recall("what happened on 5 May 2026", limit=3)
    found = next(h for h in hits[:2] if h.memory.id == said.id)
    assert found.stage_scores["keyword"] == 1.0  # the best keyword match: "5 May 2026"


def test_last_week_ranks_last_weeks_decision_first(
    make_palace: Callable[..., Palace], clock: object, tmp_path: Path
) -> None:
    palace = _palace(make_palace, clock, tmp_path)
    query = "what did we decide about billing last week"
    hits = palace.recall(query, limit=5)
    assert hits[0].memory.content == LAST_WEEK
    assert hits[0].stage_scores["time"] > 1.0
    assert any("week of 1 June 2026" in gate for gate in hits[0].gates)
    # Without date awareness the same palace ranks it lower: the prior did it.
    palace.recall_options = OFF
    plain = palace.recall(query, limit=5)
    assert [h.memory.content for h in plain].index(LAST_WEEK) > 0
    assert all("time" not in h.stage_scores for h in plain)


def test_a_window_brings_in_what_happened_in_it(
    make_palace: Callable[..., Palace], clock: object, tmp_path: Path
) -> None:
    """ "What stopped working last week" shares no word with the memory of
    what did; written in the window, it is recalled all the same."""
    palace = _palace(make_palace, clock, tmp_path)
    clock.now = datetime(2026, 6, 4, 9, 0, tzinfo=timezone.utc)  # type: ignore[attr-defined]
    fault = palace.remember("The label printer jammed on every roll; a loan unit is coming.")
    clock.now = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)  # type: ignore[attr-defined]
    since = palace.remember("Working hours have been 9 am to 5 pm since March 2026.")
    clock.now = NOW  # type: ignore[attr-defined]
    hits = palace.recall("what stopped working last week?", limit=10)
    found = next(h for h in hits if h.memory.id == fault.id)
    assert any("written 2026-06-04, in week of 1 June 2026" in gate for gate in found.gates)
    assert "time-window: written in a window the query names" in found.gates
    assert found.stage_scores["window"] == 1.0  # in the window: answer support counts it
    # Said to hold since March, it is no event of last week: written
    # outside the window, it is lowered, not lifted.
    held = next(h for h in hits if h.memory.id == since.id)  # a keyword match
    assert held.stage_scores["time"] == pytest.approx(RecallOptions().time_outside_factor)
    assert "time: written 2026-03-02, outside week of 1 June 2026" in held.gates
    assert "window" not in held.stage_scores
    # Without the window the same palace does not recall it at all.
    palace.recall_options = OFF
    assert fault.id not in {h.memory.id for h in palace.recall("what stopped working last week?")}


def test_a_fact_written_outside_the_window_falls_below_one_written_in_it(
    make_palace: Callable[..., Palace], clock: object
) -> None:
    """A breakdown written in March says "stopped working" word for word; the
    one of last week says it otherwise. Asked about last week, the March one
    is lowered (``time_outside_factor``) and last week's comes first; not
    lowered, the March one's words win."""
    palace = make_palace()
    clock.now = datetime(2026, 3, 11, 9, 0, tzinfo=timezone.utc)  # type: ignore[attr-defined]
    march = palace.remember("The autoclave stopped working mid-cycle with a tray of kits inside.")
    clock.now = datetime(2026, 6, 4, 9, 0, tzinfo=timezone.utc)  # type: ignore[attr-defined]
    june = palace.remember("The blood analyser began failing every sample; a loan unit is coming.")
    clock.now = NOW  # type: ignore[attr-defined]
    query = "what stopped working last week?"
    hits = palace.recall(query, limit=5)
    assert [h.memory.id for h in hits][:2] == [june.id, march.id]
    assert "time: written 2026-03-11, outside week of 1 June 2026" in hits[1].gates
    palace.recall_options = replace(RecallOptions(), time_outside_factor=1.0)
    assert [h.memory.id for h in palace.recall(query, limit=5)][:2] == [march.id, june.id]


def test_a_window_fact_no_word_matches_counts_as_a_fair_candidate(
    make_palace: Callable[..., Palace], clock: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The window's fact shares no word with the question; facts of other
    months say "went wrong" outright, and trips mention "went". Counted as
    the upper quartile of the candidates (and lifted by the window), it
    comes first on the pipeline's order; counted as the weakest candidate
    (a trip), words of other months stay above it. (Neither lowered nor
    re-ordered here: the base alone decides.)"""
    from mindpalace.retrieval import hybrid

    palace = make_palace()
    palace.recall_options = RecallOptions(rerank=False, time_outside_factor=1.0)
    texts = [
        "What went wrong with the boiler: the pressure valve failed.",
        "What went wrong at the fete: the marquee blew over in the wind.",
        "The van went wrong on the ring road and was towed.",
        *(f"We went to {place} for the day." for place in ("Bath", "Wells", "Frome", "Bude")),
        *(f"Anna went swimming at the {pool} pool." for pool in ("leisure", "lido", "school")),
    ]
    for day, text in enumerate(texts, start=2):
        clock.now = datetime(2026, 3, day, 9, 0, tzinfo=timezone.utc)  # type: ignore[attr-defined]
        palace.remember(text)
    clock.now = datetime(2026, 6, 4, 9, 0, tzinfo=timezone.utc)  # type: ignore[attr-defined]
    june = palace.remember("The label printer jammed on every roll; a loan unit is coming.")
    clock.now = NOW  # type: ignore[attr-defined]
    query = "what went wrong last week?"
    assert palace.recall(query, limit=5)[0].memory.id == june.id
    monkeypatch.setattr(hybrid, "WINDOW_QUANTILE", 0.0)
    assert june.id not in [h.memory.id for h in palace.recall(query, limit=3)]


def test_a_busy_chat_in_the_window_leaves_room_for_a_fact(
    make_palace: Callable[..., Palace], clock: object
) -> None:
    """The window brings in its nearest turns and, apart, its nearest facts:
    a dozen turns nearer the query (hashing model: shared letters) do not
    crowd out what was written then."""
    palace = make_palace(settings=Settings(embedder="hashing"))
    clock.now = datetime(2026, 6, 4, 9, 0, tzinfo=timezone.utc)  # type: ignore[attr-defined]
    fault = palace.remember("The label printer jammed on every roll; a loan unit is coming.")
    chatter = [f"the brokerage brokers called about lot {i}" for i in range(12)]
    palace.add_messages([Message(content=text, speaker="Cy", session="desk") for text in chatter])
    clock.now = NOW  # type: ignore[attr-defined]
    hits = palace.recall("what broke down last week?", limit=20)
    found = next(h for h in hits if h.memory.id == fault.id)
    assert any("in week of 1 June 2026" in gate for gate in found.gates)


def test_a_window_brings_in_its_memories_through_the_graph_too(
    make_palace: Callable[..., Palace], clock: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the graph proposes the rows to score (a large palace), a window
    memory the graph did not propose counts as the weakest candidate: not
    the 0 of a row never scored, which no time prior lifts. (Hashing model:
    the March rows are nearer the query than the June one, all under the
    cosine floor, none a keyword match.)"""
    from mindpalace.retrieval import dense

    monkeypatch.setattr(dense, "GATHER_ROWS", 1)  # score through the graph at any size
    palace = make_palace(settings=Settings(embedder="hashing", signals=False))
    palace.semantic.ann_rows = 1
    clock.now = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)  # type: ignore[attr-defined]
    palace.remember_many([{"content": f"downtown brokerage report {i}"} for i in range(2, 62)])
    clock.now = datetime(2026, 6, 4, 9, 0, tzinfo=timezone.utc)  # type: ignore[attr-defined]
    fault = palace.remember("the brokerage desk closed downtown at lot 1")
    clock.now = NOW  # type: ignore[attr-defined]
    assert palace.semantic.wait_for_graph()
    palace.recall_options = RecallOptions(ann_candidates=5)
    hits = palace.recall("what broke down last week?", limit=20)
    found = next(h for h in hits if h.memory.id == fault.id)
    assert found.stage_scores["time"] > 1.0 and found.stage_scores["final"] > 0.0


def test_in_may_ranks_mays_memories_first(
    make_palace: Callable[..., Palace], clock: object, tmp_path: Path
) -> None:
    palace = _palace(make_palace, clock, tmp_path)
    hits = palace.recall("billing decisions in May", limit=8)
    ranked = [h.memory.content for h in hits]
    # May's memories lead; April's strongest keyword match ("billing
    # decision") may stay among them: the prior is a lift, not a filter.
    assert ranked[0] in IN_MAY and set(ranked[:4]) >= IN_MAY
    palace.recall_options = OFF
    plain = [h.memory.content for h in palace.recall("billing decisions in May", limit=8)]
    assert sum(ranked.index(c) for c in IN_MAY) < sum(plain.index(c) for c in IN_MAY)
    palace.recall_options = RecallOptions()
    # Written in June, found by what it says about May.
    june = next(h for h in hits if h.memory.content.startswith("Ben: Back in May"))
    assert any("says 'in May'" in gate for gate in june.gates)


def test_soft_prior_not_a_filter_unless_asked(
    make_palace: Callable[..., Palace], clock: object, tmp_path: Path
) -> None:
    palace = _palace(make_palace, clock, tmp_path)
    hits = palace.recall("billing decisions in May", limit=8)
    assert len(hits) > len(IN_MAY)  # April and June memories still come, lower
    only = palace.recall(
        "billing decisions", limit=8, created_after="2026-05-01", created_before="2026-06-01"
    )
    assert {h.memory.content for h in only} <= IN_MAY
    assert all(h.memory.created_at.month == 5 for h in only)


def test_when_questions_prefer_turns_that_state_a_time(
    make_palace: Callable[..., Palace], clock: object, tmp_path: Path
) -> None:
    palace = _palace(make_palace, clock, tmp_path)
    hits = palace.recall("When did the billing migration to Postgres finish?", limit=3)
    assert hits[0].memory.content == "Ben: The billing migration to Postgres finished yesterday."
    assert any("the query asks when" in gate for gate in hits[0].gates)


def test_text_search_fallback_uses_dates_too(
    make_palace: Callable[..., Palace], clock: object, tmp_path: Path
) -> None:
    palace = make_palace(settings=Settings(embedder="none"))  # keyword search only
    palace.add_messages(read_messages(_chat_file(tmp_path), session="billing"))
    clock.now = NOW  # type: ignore[attr-defined]
    hits = palace.recall("what did we decide about billing last week", limit=5)
    assert hits.mode == "text"
    assert hits[0].memory.content == LAST_WEEK
    assert 0.0 <= hits[0].score <= 1.0


def test_cli_recall_with_a_date(store_target: str, tmp_path: Path) -> None:
    base = [sys.executable, "-m", "mindpalace.cli", "--db", store_target]
    subprocess.run(
        [*base, "ingest", str(_chat_file(tmp_path)), "--session", "billing"],
        capture_output=True,
        check=True,
    )
    out = subprocess.run(
        [*base, "recall", "billing decisions in May 2026", "--limit", "5", "--explain"],
        capture_output=True,
        text=True,
        check=True,
    )
    hits = json.loads(out.stdout)
    # May's memories lead; the prior is a lift, not a filter, and the
    # re-ranker may let a strong keyword match of another month among them.
    assert hits[0]["content"] in IN_MAY and {h["content"] for h in hits[:4]} >= IN_MAY
    assert hits[0]["explain"]["scores"]["time"] > 1.0
    assert any("May 2026" in gate for gate in hits[0]["explain"]["gates"])


# -- a weekday named without a date follows the tense around it ----------------------

MONDAY = datetime(2026, 11, 16, 18, 0, tzinfo=timezone.utc)  # Monday 16 November 2026
FRIDAY = datetime(2026, 11, 20, 9, 0, tzinfo=timezone.utc)  # Friday 20 November 2026


@pytest.mark.parametrize(
    ("text", "said", "label"),
    [
        # forward: the coming one
        ("The party is on Saturday.", MONDAY, "21 November 2026"),
        ("the party's on Saturday", MONDAY, "21 November 2026"),
        ("We will meet on Saturday.", MONDAY, "21 November 2026"),
        ("We're driving up on Saturday", MONDAY, "21 November 2026"),
        ("Can't wait for the concert on Saturday!", MONDAY, "21 November 2026"),
        ("Party on Saturday!", MONDAY, "21 November 2026"),  # no tense: ahead
        ("The party is on Monday.", MONDAY, "23 November 2026"),  # not today
        # backward: the last one
        ("We went to the party on Saturday.", MONDAY, "14 November 2026"),
        ("On Saturday we went hiking.", MONDAY, "14 November 2026"),
        ("I finished the report on Saturday.", MONDAY, "14 November 2026"),
        ("Since Friday the build is green.", MONDAY, "since 13 November 2026"),
        # deadlines: today counts
        ("Send me the slides by Friday.", FRIDAY, "by 20 November 2026"),
        ("Send me the slides by Friday.", MONDAY, "by 20 November 2026"),
        ("Keep the freeze until Friday.", FRIDAY, "until 20 November 2026"),
        ("We had it done by Friday.", FRIDAY, "by 13 November 2026"),  # said of the past
    ],
)
def test_a_bare_weekday_follows_the_tense(text: str, said: datetime, label: str) -> None:
    assert [m.label for m in find_times(text, said)] == [label]


def test_a_query_without_tense_still_asks_about_the_past() -> None:
    # People ask about what happened: "the meeting on Saturday" in a question
    # is the last Saturday unless its words say otherwise.
    assert [m.label for m in find_times("the meeting on Saturday", MONDAY, prefer="past")] == [
        "14 November 2026"
    ]
    for question in ("what is happening on Saturday", "Where is Ana going on Saturday?"):
        asked = find_times(question, MONDAY, prefer="past")
        assert [m.label for m in asked] == ["21 November 2026"], question
    asked = find_times("Where was Ana going on Saturday?", MONDAY, prefer="past")
    assert [m.label for m in asked] == ["14 November 2026"]


def test_ingest_indexes_the_coming_weekday(
    make_palace: Callable[..., Palace], tmp_path: Path
) -> None:
    path = tmp_path / "plans.jsonl"
    said = [
        ("2026-11-16T18:00:00Z", "Ana", "The party is on Saturday."),
        ("2026-11-20T09:00:00Z", "Ben", "Send the slides by Friday."),
        ("2026-11-23T09:00:00Z", "Ana", "We went to the party on Saturday."),
    ]
    rows = [{"timestamp": t, "speaker": who, "content": text} for t, who, text in said]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    palace = make_palace(settings=Settings(embedder="none"))
    palace.add_messages(read_messages(path, session="plans"), dates=True)
    turns = {m.content: m for m in palace.recent(10, session="plans")}
    assert turns["Ana: The party is on Saturday."].context == "when: 21 November 2026"
    assert turns["Ben: Send the slides by Friday."].context.endswith("when: by 20 November 2026")
    assert turns["Ana: We went to the party on Saturday."].context.endswith(
        "when: 21 November 2026"
    )
    # Asked about the party on the Saturday itself, the plan is found by its date.
    hits = palace.recall("party on 21 November 2026", limit=3)
    assert {h.memory.content for h in hits[:2]} == {
        "Ana: The party is on Saturday.",
        "Ana: We went to the party on Saturday.",
    }
