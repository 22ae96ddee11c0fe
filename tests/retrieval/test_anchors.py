"""Event anchors: "before the trip", "the week after her birthday party".

The phrases (tables), the windows an anchor gives (table and invariants),
and recall over a small diary on both backends: the anchor is found and
shown, the windows lift the right memories, another agent's memories never
date an event, and a query whose event nobody mentions ranks exactly as
without anchors.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.models import Memory
from mindpalace.retrieval.pipeline import RecallOptions, warm_text_search
from mindpalace.retrieval.time.anchors import _stem, covered, find_events
from mindpalace.retrieval.time.prior import anchor, read_query
from mindpalace.retrieval.time.temporal import Interval, Offset, anchored, find_times, offset_ending

UTC = timezone.utc


def _day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


# -- the phrases ---------------------------------------------------------------------

EVENTS: list[tuple[str, str, str, tuple[str, ...]]] = [
    # query, relation, event as written, words looked for
    ("What did Caroline do before the trip?", "before", "the trip", ("trip",)),
    ("what did she realise after the charity race", "after", "the charity race",
     ("charity", "race")),
    ("What has changed since she moved?", "since", "she moved", ("moved",)),
    ("Where did Caroline go the week after her birthday party?", "the week after",
     "her birthday party", ("birthday", "party")),
    ("what did we ship two days before the launch", "two days before", "the launch", ("launch",)),
    ("Which city was John in before traveling to Chicago?", "before", "traveling to Chicago",
     ("traveling", "chicago")),
    ("who called prior to the outage", "before", "the outage", ("outage",)),
    ("what broke after the migration and why", "after", "the migration", ("migration",)),
    ("what did we plan until the release in May 2023", "until", "the release", ("release",)),
]  # fmt: skip


@pytest.mark.parametrize(("query", "relation", "text", "terms"), EVENTS)
def test_events_in_queries(query: str, relation: str, text: str, terms: tuple[str, ...]) -> None:
    mentions = find_times(query, _day(2023, 12, 1), prefer="past")
    events = find_events(query, mentions)
    assert [(e.relation, e.text, e.terms) for e in events] == [(relation, text, terms)]


def test_two_events_in_one_query() -> None:
    events = find_events("What happened after the race and before the party?")
    assert [(e.relation, e.text) for e in events] == [
        ("after", "the race"),
        ("before", "the party"),
    ]


@settings(max_examples=200, deadline=None)
@given(
    pieces=st.lists(
        st.sampled_from(
            [
                "before",
                "after",
                "since",
                "until",
                "the",
                "week",
                "two days",
                "trip",
                "Caroline",
                "moved",
                "in May 2023",
                "that",
                "and",
                ",",
                "?",
                "her birthday party",
            ]
        ),
        max_size=10,
    ),
    noise=st.text(max_size=30),
)
def test_any_query_gives_well_formed_events(pieces: list[str], noise: str) -> None:
    query = " ".join(pieces) + noise
    for event in find_events(query, find_times(query, _day(2023, 12, 1), prefer="past")):
        assert event.op in ("before", "after", "since", "until")
        assert event.terms and event.text
        assert set(event.required) <= set(event.terms)
        assert event.offset is None or event.op in ("before", "after")


def test_event_names_and_subject() -> None:
    [event] = find_events("Which city was John in before traveling to Chicago?")
    assert event.required == ("chicago",)  # a name pins the event down
    assert event.names == ("john",)  # who the query is about


@pytest.mark.parametrize(
    "query",
    [
        "what happened before June 2023",  # a date, not an event
        "what did we decide after 3 May 2023",
        "what did John do the week before August 3, 2023",
        "the day before yesterday",
        "what changed after that",
        "and since then?",
        "after all, who cares",
        "before long we were done",
        "How long has it been since she moved?",  # asks when she moved
        "what did we discuss about the trip",  # no before / after
    ],
)
def test_no_event(query: str) -> None:
    assert find_events(query, find_times(query, _day(2023, 12, 1), prefer="past")) == []


def test_offset_ending() -> None:
    assert offset_ending("what did she do the week") == Offset("the week", "week", 1, 1, True)
    assert offset_ending("we left a few days") == Offset("a few days", "day", 2, 4, False)
    assert offset_ending("on the Saturday") == Offset("the Saturday", "saturday", 1, 1, True)
    assert offset_ending("what did she do") is None


# -- the windows ---------------------------------------------------------------------

# Thursday 2 July 2026, a day.
DAY = Interval(_day(2026, 7, 2), _day(2026, 7, 3))

WINDOWS: list[tuple[str, str | None, bool, Interval]] = [
    ("before", None, False, Interval(None, _day(2026, 7, 2))),
    ("before", None, True, Interval(None, _day(2026, 7, 3))),  # the day itself in
    ("after", None, False, Interval(_day(2026, 7, 3), None)),
    ("after", None, True, Interval(_day(2026, 7, 2), None)),
    ("since", None, False, Interval(_day(2026, 7, 2), None)),
    ("until", None, False, Interval(None, _day(2026, 7, 3))),
    ("after", "the day", False, Interval(_day(2026, 7, 3), _day(2026, 7, 4))),
    ("before", "the night", False, Interval(_day(2026, 7, 1), _day(2026, 7, 2))),
    ("after", "the week", False, Interval(_day(2026, 7, 3), _day(2026, 7, 10))),
    ("before", "the week", True, Interval(_day(2026, 6, 25), _day(2026, 7, 2))),
    ("after", "the month", False, Interval(_day(2026, 7, 3), _day(2026, 8, 3))),
    ("before", "two days", False, Interval(_day(2026, 6, 30), _day(2026, 7, 1))),
    ("after", "two weeks", False, Interval(_day(2026, 7, 13), _day(2026, 7, 20))),
    ("before", "a few days", False, Interval(_day(2026, 6, 28), _day(2026, 7, 1))),
    ("after", "the Saturday", False, Interval(_day(2026, 7, 4), _day(2026, 7, 5))),
    ("before", "the Saturday", False, Interval(_day(2026, 6, 27), _day(2026, 6, 28))),
    ("after", "the Thursday", False, Interval(_day(2026, 7, 9), _day(2026, 7, 10))),
    ("before", "the weekend", False, Interval(_day(2026, 6, 27), _day(2026, 6, 29))),
    ("after", "the weekend", False, Interval(_day(2026, 7, 4), _day(2026, 7, 6))),
]


@pytest.mark.parametrize(("op", "offset", "inclusive", "expected"), WINDOWS)
def test_windows(op: str, offset: str | None, inclusive: bool, expected: Interval) -> None:
    parsed = offset_ending(offset) if offset else None
    assert offset is None or parsed is not None
    assert anchored(DAY, op, parsed, inclusive=inclusive) == expected


def test_anchored_rejects_open_anchors_and_unknown_operators() -> None:
    with pytest.raises(ValueError, match="both ends"):
        anchored(Interval(None, DAY.end), "before", None, inclusive=False)
    with pytest.raises(ValueError, match="op must be"):
        anchored(DAY, "during", None, inclusive=False)


OFFSETS = [
    "the day", "the week", "the weekend", "the fortnight", "the month", "the year",
    "the Monday", "the Sunday", "a day", "three days", "a week", "two weeks", "a few weeks",
    "several days", "a couple of weekends", "two months",
]  # fmt: skip
anchors = st.builds(
    lambda first, length: Interval(
        datetime.combine(first, datetime.min.time(), tzinfo=UTC),
        datetime.combine(first + timedelta(days=length), datetime.min.time(), tzinfo=UTC),
    ),
    st.dates(min_value=date(1950, 1, 1), max_value=date(2090, 12, 31)),
    st.integers(min_value=1, max_value=31),
)


@settings(max_examples=300, deadline=None)
@given(
    anchor_time=anchors,
    op=st.sampled_from(["before", "after"]),
    offset=st.sampled_from(OFFSETS),
)
def test_offset_windows_lie_on_their_side(anchor_time: Interval, op: str, offset: str) -> None:
    """A span before an anchor ends by its start; one after starts after its end."""
    parsed = offset_ending(offset)
    assert parsed is not None
    window = anchored(anchor_time, op, parsed, inclusive=True)
    assert window.start is not None and window.end is not None
    assert window.start < window.end
    assert anchor_time.start is not None and anchor_time.end is not None
    if op == "before":
        assert window.end <= anchor_time.start
    else:
        assert window.start >= anchor_time.end


@settings(max_examples=300, deadline=None)
@given(
    anchor_time=anchors,
    op=st.sampled_from(["before", "after", "since", "until"]),
    offset=st.sampled_from([None, *[o for o in OFFSETS if "month" not in o and "year" not in o]]),
    weeks=st.integers(min_value=-50, max_value=50),
)
def test_windows_move_with_the_anchor(
    anchor_time: Interval, op: str, offset: str | None, weeks: int
) -> None:
    """Moving the anchor by whole weeks moves its window by as much
    (months and years are calendar-aligned, so they are left out)."""
    parsed = offset_ending(offset) if offset and op in ("before", "after") else None
    shift = timedelta(weeks=weeks)
    assert anchor_time.start is not None and anchor_time.end is not None
    moved = Interval(anchor_time.start + shift, anchor_time.end + shift)
    a = anchored(anchor_time, op, parsed, inclusive=False)
    b = anchored(moved, op, parsed, inclusive=False)
    assert b.start == (a.start + shift if a.start else None)
    assert b.end == (a.end + shift if a.end else None)


# -- recall over a diary (both backends) ---------------------------------------------

NOW = datetime(2026, 9, 1, 10, 0, tzinfo=UTC)
POTTERY = "Caroline signed up for a pottery workshop."
RACE = "Caroline ran the charity race last Saturday, her first 10k."  # 6 June 2026
PAINTING = "Caroline signed up for a painting workshop."
PARTY = "Caroline's birthday party was yesterday, with thirty candles."  # 2 July 2026
HILLS = "Caroline went hiking in the hills with her sister."
LAKE = "Caroline went hiking by the lake with her sister."
LISBON = "Caroline is back from the trip to Lisbon today."
DIARY = [
    ("2026-05-20T18:00:00Z", POTTERY),
    ("2026-06-10T18:00:00Z", RACE),
    ("2026-06-20T18:00:00Z", PAINTING),
    ("2026-07-03T18:00:00Z", PARTY),
    ("2026-07-06T18:00:00Z", HILLS),
    ("2026-07-25T18:00:00Z", LAKE),
    ("2026-08-01T18:00:00Z", LISBON),
]
# Another agent's private notes: never an anchor for the default agent.
BOBS = [
    ("2026-05-01T18:00:00Z", "Bob is back from the trip to Lisbon today."),
    ("2026-08-15T18:00:00Z", "Bob finished the volcano marathon."),
]
OFF = RecallOptions(time_window_weight=0.0, time_when_weight=0.0)


def _write(palace: Palace, rows: list[tuple[str, str]]) -> dict[str, Memory]:
    return {
        text: palace.remember(text, created_at=at, category="conversation", store="episodic")
        for at, text in rows
    }


@pytest.fixture
def diary(make_palace: Callable[..., Palace], clock: object) -> tuple[Palace, dict[str, Memory]]:
    palace = make_palace()
    written = _write(palace, DIARY)
    clock.now = NOW  # type: ignore[attr-defined]
    return palace, written


def _order(palace: Palace, query: str) -> list[str]:
    return [hit.memory.content for hit in palace.recall(query, limit=7)]


def _time_gates(palace: Palace, query: str) -> dict[str, str]:
    hits = palace.recall(query, limit=7)
    return {h.memory.content: g for h in hits for g in h.gates if g.startswith("time:")}


def test_the_anchor_is_found_and_dated_by_what_it_says(
    diary: tuple[Palace, dict[str, Memory]],
) -> None:
    palace, written = diary
    query = read_query("What did Caroline sign up for after the charity race?", palace.now())
    resolved = anchor(palace.store, query, scope=palace.scope)
    race = written[RACE].id
    assert resolved.labels == (f"after 'the charity race' = 6 June 2026 (anchor {race})",)
    # Said on 10 June about "last Saturday": the race was on 6 June; after it
    # begins the next day.
    assert resolved.windows == (Interval(_day(2026, 6, 7), None),)
    gates = _time_gates(palace, "What did Caroline sign up for after the charity race?")
    assert gates[PAINTING] == (
        f"time: written 2026-06-20, in after 'the charity race' = 6 June 2026 (anchor {race})"
    )
    assert POTTERY not in gates  # written before the race


def test_before_and_after_an_event_reorder_recall(
    diary: tuple[Palace, dict[str, Memory]],
) -> None:
    palace, _ = diary
    before = "Which workshop did Caroline sign up for before the charity race?"
    after = "Which workshop did Caroline sign up for after the charity race?"
    order = _order(palace, before)
    assert order.index(POTTERY) < order.index(PAINTING)
    assert RACE not in _time_gates(palace, before)  # the event itself is not before itself
    order = _order(palace, after)
    assert order.index(PAINTING) < order.index(POTTERY)
    # Without the prior the two questions rank the workshops alike (by
    # wording alone): the anchor did the reordering.
    palace.recall_options = OFF
    unanchored = [_order(palace, before), _order(palace, after)]
    assert len({o.index(POTTERY) < o.index(PAINTING) for o in unanchored}) == 1


def test_the_week_after_an_event(diary: tuple[Palace, dict[str, Memory]]) -> None:
    palace, written = diary
    query = "Where did Caroline go hiking the week after her birthday party?"
    gates = _time_gates(palace, query)
    label = f"the week after 'her birthday party' = 2 July 2026 (anchor {written[PARTY].id})"
    assert gates[HILLS] == f"time: written 2026-07-06, in {label}"
    assert LAKE not in gates  # 25 July: three weeks after
    assert _order(palace, query).index(HILLS) < _order(palace, query).index(LAKE)


def test_another_agents_events_never_anchor(
    make_palace: Callable[..., Palace], clock: object
) -> None:
    palace = make_palace()
    bob = make_palace("bob")
    mine = _write(palace, DIARY)
    bobs = _write(bob, BOBS)
    clock.now = NOW  # type: ignore[attr-defined]
    # Both went on "the trip to Lisbon": each is anchored on their own.
    query = "What did they do before the trip to Lisbon?"
    own = anchor(palace.store, read_query(query, NOW), scope=palace.scope)
    assert own.labels == (
        f"before 'the trip to Lisbon' = 1 August 2026 (anchor {mine[LISBON].id})",
    )
    theirs = anchor(bob.store, read_query(query, NOW), scope=bob.scope)
    bobs_trip = bobs["Bob is back from the trip to Lisbon today."].id
    assert theirs.labels == (f"before 'the trip to Lisbon' = 1 May 2026 (anchor {bobs_trip})",)
    # Only Bob mentions the marathon: nothing of his dates the default
    # agent's query, which ranks exactly as without the prior.
    marathon = "What did Caroline do after the volcano marathon?"
    assert anchor(palace.store, read_query(marathon, NOW), scope=palace.scope).windows == ()
    assert anchor(bob.store, read_query(marathon, NOW), scope=bob.scope).windows != ()
    _same_as_without_the_prior(palace, marathon)


def test_an_event_nobody_mentions_changes_nothing(
    diary: tuple[Palace, dict[str, Memory]],
) -> None:
    palace, _ = diary
    _same_as_without_the_prior(palace, "What did Caroline do after the solar eclipse?")


def _same_as_without_the_prior(palace: Palace, query: str) -> None:
    hits = palace.recall(query, limit=7)
    assert hits and all("time" not in h.stage_scores for h in hits)
    palace.recall_options = OFF
    plain = palace.recall(query, limit=7)
    assert [(h.memory.id, h.gates) for h in plain] == [(h.memory.id, h.gates) for h in hits]
    # The clock moves a second a call: recency differs in the ninth digit.
    assert [h.score for h in plain] == pytest.approx([h.score for h in hits], rel=1e-6)


def test_text_search_fallback_anchors_too(
    make_palace: Callable[..., Palace], clock: object
) -> None:
    palace = make_palace(settings=Settings(embedder="none"))
    written = _write(palace, DIARY)
    clock.now = NOW  # type: ignore[attr-defined]
    hits = palace.recall("Which workshop did Caroline sign up for before the charity race?")
    assert hits.mode == "text"
    pottery = next(h for h in hits if h.memory.content == POTTERY)
    assert f"(anchor {written[RACE].id})" in " ".join(pottery.gates)
    assert pottery.stage_scores["time"] > 1.0


def test_the_warm_keyword_index_finds_the_anchors_the_store_finds(
    make_palace: Callable[..., Palace], clock: object
) -> None:
    palace = make_palace()
    bob = make_palace("bob")
    _write(palace, DIARY)
    _write(bob, BOBS)
    clock.now = NOW  # type: ignore[attr-defined]
    queries = [
        "What did Caroline sign up for after the charity race?",
        "Where did Caroline go hiking the week after her birthday party?",
        "What did they do before the trip to Lisbon?",
        "What did Caroline do after the volcano marathon?",
        "What did Caroline do after the solar eclipse?",
    ]
    for who in (palace, bob):
        dense = who.semantic.wait_for_warm()
        assert dense is not None and dense.keyword is not None
        search = warm_text_search(who.store, dense, who.scope)
        assert search is not None
        found = 0
        for query in queries:
            asked = read_query(query, NOW)
            warm = anchor(who.store, asked, scope=who.scope, search=search)
            assert warm == anchor(who.store, asked, scope=who.scope), (who.scope.agent_id, query)
            found += len(warm.windows)
        assert found >= 2  # each of them dates some of these events, under their own scope


# -- which of an event's words a match contains ----------------------------------------


def _covered_word_by_word(content: str, terms: tuple[str, ...]) -> tuple[list[int], set[str]]:
    """The plain reading: stem every word of the content and look it up."""
    wanted = {_stem(t): t for t in terms}
    places, found = [], set()
    for word in re.finditer(r"\w+", content.lower()):
        term = wanted.get(_stem(word.group()))
        if term is not None:
            places.append(word.start())
            found.add(term)
    return places, found


_WORDS = st.sampled_from(
    "go goes going good trip trips tripped party parties partying race races racing raced"
    " tv tvs moved move moving ties tie tied I ie née Éclair éclairs x xs".split()
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_WORDS, min_size=1, max_size=4).map(tuple),
    st.lists(
        st.one_of(_WORDS, st.sampled_from([" ", ", ", "-", "'s ", "\n", "İ", "_", "2023"])),
        max_size=40,
    ),
)
def test_covered_finds_what_stemming_every_word_finds(
    terms: tuple[str, ...], pieces: list[str]
) -> None:
    content = " ".join(pieces)
    got = covered(content, [t.lower() for t in terms])
    assert got == _covered_word_by_word(content, tuple(t.lower() for t in terms))


def test_covered_on_a_long_turn() -> None:
    content = ("We moved the party to Friday; racing games and TV trips. " * 200) + "Goes."
    terms = ("move", "parties", "race", "tv", "go")
    places, found = covered(content, list(terms))
    assert found == {"move", "parties", "race", "tv"}  # "goes" is not "go" to _stem
    assert (places, found) == _covered_word_by_word(content, terms)
