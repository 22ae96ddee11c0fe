"""Reading only the stretches of a text that can hold a time expression
finds what reading the whole text finds."""

from __future__ import annotations

from datetime import datetime, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from mindpalace.retrieval.time.scan import _BREAKS, time_matches
from mindpalace.retrieval.time.temporal import _PATTERN, find_times

SAID = datetime(2023, 5, 20, tzinfo=timezone.utc)
PIECES = [
    *"0123456789", "May", "may", "Sept.", "2023", "2023-05-04", "5th", "the", "of", "in", "on",
    "last", "next", "this", "past", "coming", "week", "weekend", "days", "night", "ago", "back",
    "yesterday", "tomorrow", "other day", "day before yesterday", "Saturday", "sat", "mid",
    "early", "summer", "fall", "before", "after", "since", "until", "by", "two", "a couple of",
    "morning", "earlier", "later", "month", "year", "x", "foo", "_", ":", ":30", "/", "-", ",",
    ".", " ", "  ", "\n", *_BREAKS,
]  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40), st.lists(st.booleans(), max_size=40))
def test_stretches_find_what_the_whole_text_finds(pieces: list[str], spaced: list[bool]) -> None:
    text = "".join(p + (" " if i < len(spaced) and spaced[i] else "") for i, p in enumerate(pieces))
    whole = [(m.span(), m.group()) for m in _PATTERN.finditer(text)]
    assert [(m.span(), m.group()) for m in time_matches(_PATTERN, text)] == whole


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
    whole = [(m.span(), m.group()) for m in _PATTERN.finditer(text)]
    assert [(m.span(), m.group()) for m in time_matches(_PATTERN, text)] == whole
