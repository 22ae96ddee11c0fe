"""Reading only the stretches of a text that can hold a time expression
finds what reading the whole text finds."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from mindpalace.retrieval.time.scan import _BREAKS, time_matches
from mindpalace.retrieval.time.temporal import _BODY, _PATTERN, find_times

SAID = datetime(2023, 5, 20, tzinfo=timezone.utc)
PIECES = [
    *"0123456789", "May", "may", "Sept.", "2023", "2023-05-04", "5th", "the", "of", "in", "on",
    "last", "next", "this", "past", "coming", "week", "weekend", "days", "night", "ago", "back",
    "yesterday", "tomorrow", "other day", "day before yesterday", "Saturday", "sat", "mid",
    "early", "summer", "fall", "before", "after", "since", "until", "by", "two", "a couple of",
    "morning", "earlier", "later", "month", "year", "x", "foo", "_", ":", ":30", "/", "-", ",",
    ".", " ", "  ", "\n", *_BREAKS,
]  # fmt: skip


def _joined(pieces: list[str], spaced: list[bool]) -> str:
    return "".join(p + (" " if i < len(spaced) and spaced[i] else "") for i, p in enumerate(pieces))


def _found(matches: Iterator[re.Match[str]]) -> list[tuple[tuple[int, int], str]]:
    return [(m.span(), m.group()) for m in matches]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40), st.lists(st.booleans(), max_size=40))
def test_stretches_find_what_the_whole_text_finds(pieces: list[str], spaced: list[bool]) -> None:
    text = _joined(pieces, spaced)
    assert _found(time_matches(_PATTERN, text)) == _found(_PATTERN.finditer(text))


# The pattern without the look-ahead that skips positions no time starts at.
UNLED = re.compile(r"\b" + _BODY, re.IGNORECASE | re.VERBOSE)
MORE = [
    *PIECES, "10 to 13 June", "June 10-13", "between", "and", "to", "from 25 July", "Monday",
    "Tues", "thu", "Sep", "sept", "spring 2024", "during", "over", "through", "around", "late",
    "an", "a few", "several", "twelve", "four", "the week", "the Saturday", "earlier this week",
    "this past", "this coming", "previous", "January", "jan.", "1999", "20", "19",
]  # fmt: skip


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(MORE), max_size=30), st.lists(st.booleans(), max_size=30))
def test_the_lead_skips_no_time(pieces: list[str], spaced: list[bool]) -> None:
    text = _joined(pieces, spaced)
    assert _found(_PATTERN.finditer(text)) == _found(UNLED.finditer(text))


PHRASES = [
    "mid-May 2023", "early summer 2023", "late 2023", "in the spring of 2023", "over the summer",
    "the week before 3 May 2023", "two weeks before 11 May 2023", "on the Sunday before 25 May",
    "a couple of days ago", "couple of days ago", "a few weeks back", "few days ago",
    "several months ago", "one year ago",
    "during May 2023", "through June 2023", "around 5 May", "of 2023", "by Friday",
    "until next week", "till tomorrow", "since last March", "after 2022", "from 3 to 5 May",
    "the other day", "the day before yesterday", "earlier this month", "later this year",
    "this past weekend", "this coming Monday", "previous week", "past month", "coming Friday",
    "last night", "this morning", "tonight", "today", "twelve days ago", "an hour ago on 5 May",
]  # fmt: skip


def test_the_lead_skips_no_time_in_these_phrases() -> None:
    """Each phrase, alone and after a word, is found the same with and
    without the look-ahead (a start word missing from it would move or
    lose a match)."""
    for phrase in PHRASES:
        for text in (phrase, f"x {phrase} y", f"She said {phrase}, then left."):
            whole = _found(UNLED.finditer(text))
            assert whole, text
            assert _found(_PATTERN.finditer(text)) == whole, text


def test_a_break_ends_a_stretch_but_no_time() -> None:
    # "(" and '"' are breaks: the dates on both sides are still found.
    found = find_times('We met (on 4 May 2023) and "last week"!', SAID)
    assert [m.text for m in found] == ["on 4 May 2023", "last week"]


EDGES = ["May", "5", "2023", "05", " ", ":", ":3", "-", "/", ".", ",", "x", "(", "*", "!", "'"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(EDGES), max_size=12))
def test_stretches_keep_what_follows_a_match(pieces: list[str]) -> None:
    # What follows a date ("5:30", "2023-", "2023/") decides whether it is
    # one: the characters read there must not be breaks.
    text = "".join(pieces)
    assert _found(time_matches(_PATTERN, text)) == _found(_PATTERN.finditer(text))
