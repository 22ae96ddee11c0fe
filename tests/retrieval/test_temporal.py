"""Time expressions: the phrases (table), and invariants (hypothesis)."""

from __future__ import annotations

import itertools
from datetime import date, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mindpalace.retrieval.time.prior import TimeQuery, read_query, time_prior
from mindpalace.retrieval.time.temporal import Interval, asks_when, find_times, overlaps

UTC = timezone.utc
# Monday 8 May 2023, 13:56: a LoCoMo-like session time.
REF = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def _day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


def _days(first: tuple[int, int, int], last: tuple[int, int, int]) -> Interval:
    return Interval(_day(*first), _day(*last) + timedelta(days=1))


TABLE: list[tuple[str, Interval, str]] = [
    # absolute
    ("on 7 May 2023", _days((2023, 5, 7), (2023, 5, 7)), "7 May 2023"),
    ("the 7th of May, 2023", _days((2023, 5, 7), (2023, 5, 7)), "7 May 2023"),
    ("May 7th, 2023", _days((2023, 5, 7), (2023, 5, 7)), "7 May 2023"),
    ("2023-05-07", _days((2023, 5, 7), (2023, 5, 7)), "7 May 2023"),
    ("in May 2023", Interval(_day(2023, 5, 1), _day(2023, 6, 1)), "May 2023"),
    ("2023-02", Interval(_day(2023, 2, 1), _day(2023, 3, 1)), "February 2023"),
    ("in 2022", Interval(_day(2022, 1, 1), _day(2023, 1, 1)), "2022"),
    ("summer 2021", Interval(_day(2021, 6, 1), _day(2021, 9, 1)), "summer 2021"),
    ("winter of 2022", Interval(_day(2022, 12, 1), _day(2023, 3, 1)), "winter 2022"),
    ("in March", Interval(_day(2023, 3, 1), _day(2023, 4, 1)), "March 2023"),
    ("on Friday", _days((2023, 5, 5), (2023, 5, 5)), "5 May 2023"),
    ("on 12 May", _days((2023, 5, 12), (2023, 5, 12)), "12 May 2023"),
    # relative
    ("yesterday", _days((2023, 5, 7), (2023, 5, 7)), "7 May 2023"),
    ("today", _days((2023, 5, 8), (2023, 5, 8)), "8 May 2023"),
    ("last night", _days((2023, 5, 7), (2023, 5, 7)), "7 May 2023"),
    ("tomorrow", _days((2023, 5, 9), (2023, 5, 9)), "9 May 2023"),
    ("the day before yesterday", _days((2023, 5, 6), (2023, 5, 6)), "6 May 2023"),
    ("two days ago", _days((2023, 5, 6), (2023, 5, 6)), "6 May 2023"),
    ("3 days ago", _days((2023, 5, 5), (2023, 5, 5)), "5 May 2023"),
    ("last week", _days((2023, 5, 1), (2023, 5, 7)), "week of 1 May 2023"),
    ("this week", _days((2023, 5, 8), (2023, 5, 14)), "week of 8 May 2023"),
    ("next week", _days((2023, 5, 15), (2023, 5, 21)), "week of 15 May 2023"),
    ("last weekend", _days((2023, 5, 6), (2023, 5, 7)), "weekend of 6 May 2023"),
    ("this weekend", _days((2023, 5, 13), (2023, 5, 14)), "weekend of 13 May 2023"),
    ("two weekends ago", _days((2023, 4, 29), (2023, 4, 30)), "weekend of 29 April 2023"),
    ("last month", Interval(_day(2023, 4, 1), _day(2023, 5, 1)), "April 2023"),
    ("next month", Interval(_day(2023, 6, 1), _day(2023, 7, 1)), "June 2023"),
    ("last year", Interval(_day(2022, 1, 1), _day(2023, 1, 1)), "2022"),
    ("ten years ago", Interval(_day(2013, 1, 1), _day(2014, 1, 1)), "2013"),
    ("next Friday", _days((2023, 5, 12), (2023, 5, 12)), "12 May 2023"),
    ("last Fri", _days((2023, 5, 5), (2023, 5, 5)), "5 May 2023"),
    ("last Tues", _days((2023, 5, 2), (2023, 5, 2)), "2 May 2023"),
    ("this Friday", _days((2023, 5, 12), (2023, 5, 12)), "12 May 2023"),
    ("a few weeks ago", _days((2023, 4, 7), (2023, 4, 27)), "7 April 2023 to 27 April 2023"),
    ("a couple of days ago", _days((2023, 5, 6), (2023, 5, 6)), "6 May 2023"),
    ("two weeks ago", _days((2023, 4, 21), (2023, 4, 27)), "week of 21 April 2023"),
    ("last summer", Interval(_day(2022, 6, 1), _day(2022, 9, 1)), "summer 2022"),
    ("the other day", _days((2023, 5, 2), (2023, 5, 7)), "2 May 2023 to 7 May 2023"),
    ("earlier this month", _days((2023, 5, 1), (2023, 5, 8)), "1 May 2023 to 8 May 2023"),
    ("last March", Interval(_day(2023, 3, 1), _day(2023, 4, 1)), "March 2023"),
    ("next May", Interval(_day(2024, 5, 1), _day(2024, 6, 1)), "May 2024"),
    # open ranges
    ("before June 2023", Interval(None, _day(2023, 6, 1)), "before June 2023"),
    ("after 2022", Interval(_day(2023, 1, 1), None), "after 2022"),
    # In a stored text an onset names when it began, not every day after ...
    ("since last week", _days((2023, 5, 1), (2023, 5, 7)), "since week of 1 May 2023"),
    # ... and a deadline names its day, not the past up to it.
    ("until Friday", _days((2023, 5, 5), (2023, 5, 5)), "until 5 May 2023"),
    # spans next to a date
    ("the week before 3 May 2023", _days((2023, 4, 26), (2023, 5, 2)),
     "26 April 2023 to 2 May 2023"),
    ("two weeks before 11 May 2023", _days((2023, 4, 24), (2023, 4, 30)),
     "24 April 2023 to 30 April 2023"),
    ("on the Sunday before 25 October 2022", _days((2022, 10, 23), (2022, 10, 23)),
     "23 October 2022"),
    ("the Saturday after October 28, 2023", _days((2023, 11, 4), (2023, 11, 4)),
     "4 November 2023"),
    ("the weekend before 4th October, 2023", _days((2023, 9, 30), (2023, 10, 1)),
     "30 September 2023 to 1 October 2023"),
    ("the day after 5 May", _days((2023, 5, 6), (2023, 5, 6)), "6 May 2023"),
    ("the month after June 2023", _days((2023, 7, 1), (2023, 7, 31)),
     "1 July 2023 to 31 July 2023"),
    # ranges of days, and two dates joined
    ("10 to 13 June 2023", _days((2023, 6, 10), (2023, 6, 13)), "10 June 2023 to 13 June 2023"),
    ("on 10-13 June 2023", _days((2023, 6, 10), (2023, 6, 13)), "10 June 2023 to 13 June 2023"),
    ("June 10\u201313, 2023", _days((2023, 6, 10), (2023, 6, 13)), "10 June 2023 to 13 June 2023"),
    ("between 19 and 31 March", _days((2023, 3, 19), (2023, 3, 31)),
     "19 March 2023 to 31 March 2023"),
    ("the 2nd to 4th of May", _days((2023, 5, 2), (2023, 5, 4)),
     "2 May 2023 to 4 May 2023"),
    ("from 25 April to 3 May 2023", _days((2023, 4, 25), (2023, 5, 3)),
     "25 April 2023 to 3 May 2023"),
    ("between 1 April 2023 and 9 April 2023", _days((2023, 4, 1), (2023, 4, 9)),
     "1 April 2023 to 9 April 2023"),
    ("from March to April 2023", Interval(_day(2023, 3, 1), _day(2023, 5, 1)),
     "1 March 2023 to 30 April 2023"),
]  # fmt: skip


@pytest.mark.parametrize(("phrase", "interval", "label"), TABLE, ids=[row[0] for row in TABLE])
def test_phrases(phrase: str, interval: Interval, label: str) -> None:
    found = find_times(f"She said it happened {phrase}, I think.", REF)
    assert len(found) == 1, found
    assert found[0].interval == interval
    assert found[0].label == label
    assert phrase.endswith(found[0].text) or found[0].text.endswith(phrase.rsplit(maxsplit=1)[-1])


@pytest.mark.parametrize(
    "text",
    [
        "You may 5 times try again",  # "may" the verb
        "I march on",
        "every other day",
        "I sat in the sun",
        "4 years of practice",
        "Friday is my favourite",  # a bare weekday names no date here
        "room 2023 is free",
        "call 555-1234",
        "on 31 February 2023",  # no such day
        "",
    ],
)
def test_not_dates(text: str) -> None:
    assert find_times(text, REF) == []


def test_what_is_no_range_keeps_its_dates() -> None:
    """A range backwards names the day it ends on; two dates joined by a
    plain "and", or spans over a year apart, stay two mentions."""
    assert [m.label for m in find_times("from 5 to 3 June 2023", REF)] == ["3 June 2023"]
    found = find_times("We met on 10 June 2023 and 13 June 2023.", REF)
    assert [m.label for m in found] == ["10 June 2023", "13 June 2023"]
    found = find_times("from 1 May 2021 to 3 June 2023", REF)
    assert [m.label for m in found] == ["1 May 2021", "3 June 2023"]
    found = find_times("from 3 June 2023 to 1 May 2023", REF)
    assert [m.label for m in found] == ["3 June 2023", "1 May 2023"]
    # an open time after "until" is no end of a span (found by a property test)
    found = find_times("in May 2023 until before in May 2023", REF)
    assert [m.label for m in found] == ["May 2023", "before May 2023"]


def test_several_in_text_order() -> None:
    found = find_times("Yesterday was busy; next week too. We met on 2 April 2023.", REF)
    assert [m.label for m in found] == ["7 May 2023", "week of 15 May 2023", "2 April 2023"]
    assert [m.relative for m in found] == [True, True, False]


def test_a_deadline_is_its_day_in_text_and_open_in_a_query() -> None:
    # Written on Monday 8 May: "report by Thursday" is about Thursday 11 May,
    # not about every day before it.
    (said,) = find_times("Kenji: yes, report by Thursday.", REF)
    assert said.interval == _days((2023, 5, 11), (2023, 5, 11))
    assert said.label == "by 11 May 2023"
    assert not overlaps(said.interval, _days((2023, 5, 1), (2023, 5, 7)))
    # Asked, "until Friday" is a window over what came before.
    (asked,) = find_times("what did we ship until Friday?", REF, prefer="past")
    assert asked.interval.start is None and asked.interval.end == _day(2023, 5, 6)


def test_an_onset_is_its_time_in_text_and_open_in_a_query() -> None:
    # "texts owners since March" says when it began; it is no event of
    # every later week ("what went wrong last week" is not about it).
    (said,) = find_times("The software texts owners since March 2023.", REF)
    assert said.interval == Interval(_day(2023, 3, 1), _day(2023, 4, 1))
    assert not overlaps(said.interval, _days((2023, 5, 1), (2023, 5, 7)))
    # Asked, "since March" is a window over everything after.
    (asked,) = find_times("what changed since March?", REF, prefer="past")
    assert asked.interval == Interval(_day(2023, 3, 1), None)


def test_prefer_past_for_queries() -> None:
    # On 8 May 2023, the nearest September is 2023's; asked about, the past one.
    assert find_times("in September", REF)[0].label == "September 2023"
    assert find_times("in September", REF, prefer="past")[0].label == "September 2022"
    with pytest.raises(ValueError, match="nearest"):
        find_times("in May", REF, prefer="future")


def test_asks_when() -> None:
    assert asks_when("When did Caroline go to the support group?")
    assert asks_when("what year did they move?")
    assert asks_when("How long ago was her birthday?")
    assert asks_when("Nice. When is the party?")
    assert not asks_when("What did you do when it rained?")
    assert not asks_when("Where did Jon move from?")


def test_query_relative_to_a_date_it_names() -> None:
    q = read_query("What was the issue last week, as mentioned on 6 November 2023?", REF)
    assert q.labels == ("week of 30 October 2023", "6 November 2023")
    plain = read_query("what did we decide last week", REF)
    assert plain.labels == ("week of 1 May 2023",) and not plain.asks_when


def test_time_prior() -> None:
    in_may = read_query("what happened in May 2023", REF)
    boost = time_prior(REF, [], in_may, window_weight=0.2, when_weight=0.3)
    assert boost is not None and boost.factor == pytest.approx(1.2)
    assert "in May 2023" in boost.reason
    # Written in June about a day in May: in the window by what it says.
    later = datetime(2023, 6, 2, tzinfo=UTC)
    said = find_times("we met on 30 May", later)
    boost = time_prior(later, said, in_may, window_weight=0.2, when_weight=0.3)
    assert boost is not None and "says 'on 30 May'" in boost.reason
    assert time_prior(later, [], in_may, window_weight=0.2, when_weight=0.3) is None
    when = read_query("When did we meet?", REF)
    boost = time_prior(later, said, when, window_weight=0.2, when_weight=0.3)
    assert boost is not None and boost.factor == pytest.approx(1.3)
    assert time_prior(later, [], when, window_weight=0.2, when_weight=0.3) is None
    assert time_prior(later, said, TimeQuery(), window_weight=0.2, when_weight=0.3) is None


def test_time_prior_lowers_what_falls_outside_a_closed_window() -> None:
    """``outside`` multiplies the factor of a memory whose time is in none of
    the query's windows when one is closed; an open window ("since March")
    or a memory in the window is not lowered, and 1 turns it off."""
    in_may = read_query("what happened in May 2023", REF)
    later = datetime(2023, 6, 2, tzinfo=UTC)
    boost = time_prior(later, [], in_may, window_weight=0.2, when_weight=0.3, outside=0.6)
    assert boost is not None and boost.factor == pytest.approx(0.6)
    assert boost.reason == "time: written 2023-06-02, outside May 2023"
    said = find_times("we met on 30 May", later)  # says a day in the window
    boost = time_prior(later, said, in_may, window_weight=0.2, when_weight=0.3, outside=0.6)
    assert boost is not None and boost.factor == pytest.approx(1.2)
    assert time_prior(later, [], in_may, window_weight=0.2, when_weight=0.3, outside=1.0) is None
    since = read_query("what has changed since March 2023", REF)
    assert since.windows and since.windows[0].end is None
    old = datetime(2022, 6, 2, tzinfo=UTC)
    assert time_prior(old, [], since, window_weight=0.2, when_weight=0.3, outside=0.6) is None
    # Asked when, outside the window: lowered, and lifted for the time it states.
    when_in_may = read_query("when in May 2023 did we meet?", REF)
    said_june = find_times("we met on 1 June", later)
    boost = time_prior(
        later, said_june, when_in_may, window_weight=0.2, when_weight=0.3, outside=0.5
    )
    assert boost is not None and boost.factor == pytest.approx(1.3 * 0.5)


# -- invariants ----------------------------------------------------------------------

PHRASES = [row[0] for row in TABLE] + [
    "in the summer",
    "on Sunday",
    "in June",
    "the past week",
    "later this year",
    "a few years back",
    "several months ago",
    "12 days ago",
]
references = st.datetimes(
    min_value=datetime(1901, 1, 1), max_value=datetime(2098, 12, 31), timezones=st.just(UTC)
)


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=200), reference=references)
def test_any_text_never_crashes(text: str, reference: datetime) -> None:
    for mention in find_times(text, reference):
        assert text[mention.start : mention.end] == mention.text
        iv = mention.interval
        assert iv.start is not None or iv.end is not None
        if iv.start is not None and iv.end is not None:
            assert iv.start < iv.end


@settings(max_examples=200, deadline=None)
@given(
    pieces=st.lists(st.sampled_from([*PHRASES, "and then", "we", "Caroline", "."]), max_size=8),
    reference=references,
)
def test_intervals_well_formed_and_in_order(pieces: list[str], reference: datetime) -> None:
    text = " ".join(pieces)
    found = find_times(text, reference)
    starts = [m.start for m in found]
    assert starts == sorted(starts)
    for before, after in itertools.pairwise(found):
        assert before.end <= after.start  # no overlapping mentions
    for mention in found:
        iv = mention.interval
        if iv.start is not None and iv.end is not None:
            assert iv.start < iv.end
            assert iv.start.tzinfo is not None
        assert mention.label


@settings(max_examples=300, deadline=None)
@given(
    phrase=st.sampled_from(PHRASES),
    first=references,
    gap=st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=800)),
    prefer=st.sampled_from(["nearest", "past"]),
)
def test_resolution_is_monotone_in_the_reference(
    phrase: str, first: datetime, gap: timedelta, prefer: str
) -> None:
    """A later reference never resolves a phrase to an earlier time."""
    second = first + gap
    a = find_times(phrase, first, prefer=prefer)
    b = find_times(phrase, second, prefer=prefer)
    assert [m.text for m in a] == [m.text for m in b]  # what is found ignores the reference
    for x, y in zip(a, b, strict=True):
        for u, v in ((x.interval.start, y.interval.start), (x.interval.end, y.interval.end)):
            if u is not None and v is not None:
                assert u <= v
        if not x.relative:
            assert x.interval == y.interval


@settings(max_examples=100, deadline=None)
@given(day=st.dates(min_value=date(1950, 1, 1), max_value=date(2090, 12, 31)))
def test_written_dates_round_trip(day: date) -> None:
    """A date written out resolves to exactly that day, whatever the reference."""
    text = f"on {day.day} {day:%B} {day.year}"
    found = find_times(text, REF)
    assert len(found) == 1
    assert found[0].interval.start == datetime(day.year, day.month, day.day, tzinfo=UTC)
    assert found[0].interval.contains(found[0].interval.start)  # type: ignore[arg-type]


def test_overlaps_with_open_ends() -> None:
    may = Interval(_day(2023, 5, 1), _day(2023, 6, 1))
    assert overlaps(may, Interval(None, _day(2023, 5, 2)))
    assert not overlaps(may, Interval(None, _day(2023, 5, 1)))
    assert overlaps(may, Interval(_day(2023, 5, 31), None))
    assert not overlaps(may, Interval(_day(2023, 6, 1), None))
    assert overlaps(Interval(None, None), may)


def test_the_window_lifts_a_memory_written_alone_more_than_a_turn() -> None:
    from dataclasses import replace

    from mindpalace.models import Category, MemoryKind
    from mindpalace.retrieval.time.prior import WRITTEN_WINDOW, lift

    from .memories import memory as _memory

    when = datetime(2023, 5, 3, 10, tzinfo=UTC)  # in the week before REF (8 May 2023)
    turn = replace(_memory("turn", "s1"), created_at=when)
    fact = replace(
        _memory("fact", None),
        created_at=when,
        category=Category.DECISION,
        kind=MemoryKind.MEMORY,
    )
    query = read_query("what did we decide last week?", REF)
    timed = lift(
        [(1.0, "turn", 0), (1.0, "fact", 1)],
        {"turn": turn, "fact": fact},
        query,
        pool=10,
        window_weight=0.2,
        when_weight=0.0,
    )
    assert timed.boosts["turn"].factor == pytest.approx(1.2)
    assert timed.boosts["fact"].factor == pytest.approx(1.0 + 0.2 * WRITTEN_WINDOW)
    assert dict((k, v) for v, k, _ in timed.candidates)["fact"] > 1.2


def test_a_lowered_memory_stays_above_those_the_prior_did_not_look_at() -> None:
    """Outside the window, a fact of the pool is lowered, but never below the
    best candidate past the pool (whose time nobody read); a turn is not
    lowered at all."""
    from collections.abc import Sequence
    from dataclasses import replace

    from mindpalace.models import Category, Memory, MemoryKind
    from mindpalace.retrieval.time.prior import Timed, lift

    from .memories import memory as _memory

    def fact(key: str, when: datetime) -> Memory:
        return replace(
            _memory(key, None), created_at=when, category=Category.FACT, kind=MemoryKind.MEMORY
        )

    march = datetime(2023, 3, 3, 10, tzinfo=UTC)
    memories = {
        "in": fact("in", datetime(2023, 5, 3, 10, tzinfo=UTC)),
        "out": fact("out", march),
        "far": fact("far", march),
        "turn": replace(_memory("turn", "s1"), created_at=march),
    }
    query = read_query("what broke last week?", REF)
    candidates = [(1.0, "out", 0), (0.9, "far", 1), (0.95, "in", 2), (0.8, "beyond", 3)]

    def run(items: Sequence[tuple[float, str, int | None]], pool: int) -> Timed:
        return lift(
            items, memories, query, pool=pool, window_weight=0.2, when_weight=0.0, outside=0.6
        )

    timed = run(candidates, 3)
    values = {k: v for v, k, _ in timed.candidates}
    assert values["out"] == pytest.approx(0.8) and values["far"] == pytest.approx(0.8)
    assert values["in"] == pytest.approx(0.95 * 1.5) and values["beyond"] == 0.8
    assert "outside week of 1 May 2023" in timed.boosts["out"].reason
    deep = run(candidates, 4)
    assert {k: v for v, k, _ in deep.candidates}["out"] == pytest.approx(0.6)
    turned = run([(1.0, "turn", 0)], 3)
    assert "turn" not in turned.boosts and turned.candidates[0][0] == 1.0
