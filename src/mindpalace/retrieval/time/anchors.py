"""Event anchors: a time a query names by an event the palace knows.

"What did Caroline do before the trip?", "after the charity race", "since
she moved", "the week after her birthday party": ``find_events`` reads the
phrase after before / after / since / until (with an offset such as "the
week" or "two days" in front of before and after) when that phrase is not a
date (``temporal`` reads dates, "the week before 3 August 2023"
included).

``resolve`` looks each event up by keyword search under the caller's scope
(so another agent's memories never date an event), takes the best match's
time and frames it with ``temporal.anchored``: before the event, after it,
the week after it. The match's time is the time it states nearest the
event's words, resolved against when it was written ("I ran the charity
race last Saturday"), else the day it was written. That day only bounds
the event (it happened then or before), so "before" and "after" then keep
the day itself in the range; a stated time is the event's own, and the
range leaves it out. The window is one more window for the time prior
(``prior``): a soft lift, never a filter. An event no visible memory
mentions gives no window.

A match must contain every name the event has and some of its other words:
with a name ("Chicago" in "returning from Chicago") half of all its words,
without one two thirds ("the volcano hike" is not "hiking by the lake").
The best is the one containing most of them, then naming more of the
query's other names (its subject: "Caroline"), then with the higher BM25
score.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from functools import lru_cache

from mindpalace.models import Memory, RecallFilters, Scope
from mindpalace.retrieval.sparse import STOPWORDS, salient_terms
from mindpalace.retrieval.time import stored
from mindpalace.retrieval.time.temporal import (
    Interval,
    Offset,
    TimeMention,
    anchored,
    offset_ending,
    spoken_day,
)
from mindpalace.store.base import TextMatch
from mindpalace.store.roles import TextIndex

__all__ = ["Anchor", "EventPhrase", "best_anchor", "find_anchor", "find_events", "resolve"]

SEARCH_LIMIT = 30  # keyword matches an event is looked for among
#: Keyword search under the caller's scope: (terms, limit) -> best matches
#: (a warm in-memory index where the caller has one; else the store's).
TextSearch = Callable[[Sequence[str], int], list[TextMatch]]
MAX_WORDS = 6  # words of an event phrase

_OP = re.compile(
    # The rest is a lookahead: "after the race and before the party" has two.
    r"\b(?P<op>before|after|since|until|till|prior\s+to)\s+(?=(?P<rest>[^?!.;:,()\[\]\"\n]+))",
    re.IGNORECASE,
)
# A clause ends an event phrase: "after the trip when she ..." is "the trip".
_ENDS = frozenset(
    "and or but so because while when where which who whom whose whether if than then"
    " though although as how what why before after since until till".split()
)
# Words that make "after X" a manner of speaking, not an event.
_NOT_EVENTS = frozenset(
    "ever later earlier soon recently lately long time times moment day days week weeks"
    " weekend weekends month months year years".split()
)
_WORD = re.compile(r"\w+", re.UNICODE)
# "How long has it been since she moved?" asks when she moved: no window.
_HOW_LONG = re.compile(r"\bhow\s+long\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class EventPhrase:
    """An event a query dates something by.

    Attributes:
        text: the event as written ("the charity race").
        op: before, after, since or until ("prior to" is before, "till" until).
        offset: "the week" in "the week after", if any.
        terms: the event's words to look for.
        required: those of them that are names: a match must have them.
        names: the query's names outside the event (who it is about).
    """

    text: str
    op: str
    offset: Offset | None
    terms: tuple[str, ...]
    required: tuple[str, ...] = ()
    names: tuple[str, ...] = ()

    @property
    def relation(self) -> str:
        """ "the week after", "before"."""
        return f"{self.offset.text} {self.op}" if self.offset else self.op


@dataclass(frozen=True, slots=True)
class Anchor:
    """An event found in the palace and the window it gives.

    Attributes:
        event: what the query said.
        memory_id: the memory that dates it.
        time: the event's time; ``time_label`` in words.
        window: the time the query names by it.
        label: for explain: "before 'the trip' = 12 July 2023 (anchor mem_...)".
    """

    event: EventPhrase
    memory_id: str
    time: Interval
    time_label: str
    window: Interval

    @property
    def label(self) -> str:
        """The window in words, with the anchor it came from."""
        return (
            f"{self.event.relation} {self.event.text!r} = {self.time_label}"
            f" (anchor {self.memory_id})"
        )


def _stem(word: str) -> str:
    """A light suffix strip, enough to match "moved" with "move" and "races"
    with "racing" (the text index stems on its own; this only checks which
    of an event's words a match contains)."""
    for suffix, replacement in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("e", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + replacement
    if word.endswith("s") and not word.endswith("ss") and len(word) >= 4:
        return word[:-1]
    return word


def find_events(query: str, dates: Sequence[TimeMention] = ()) -> list[EventPhrase]:
    """The events ``query`` dates something by; ``dates`` are the time
    expressions ``temporal.find_times`` found in it (an operator of one of
    them, "before June 2023", is not an event's)."""
    events = []
    salient = salient_terms(query)
    dated = " ".join(m.text.lower() for m in dates)
    for match in _OP.finditer(query):
        start = match.start("op")
        if any(m.start <= start < m.end for m in dates):
            continue
        rest_start, rest = match.start("rest"), match.group("rest")
        cut = min((m.start - rest_start for m in dates if m.start >= rest_start), default=None)
        if cut is not None:
            rest = rest[:cut]
        words: list[str] = []
        for word in rest.split():
            if word.lower() in _ENDS:
                break
            words.append(word)
        text = " ".join(words[:MAX_WORDS]).rstrip("'")
        found = [w.lower() for w in _WORD.findall(text)]
        terms = tuple(dict.fromkeys(w for w in found if w not in STOPWORDS | _NOT_EVENTS))
        if not terms or found[0] in _NOT_EVENTS or found[0] in ("that", "this", "it", "all"):
            continue
        op = " ".join(match.group("op").lower().split())
        op = {"prior to": "before", "till": "until"}.get(op, op)
        if op == "since" and _HOW_LONG.search(query[:start]):
            continue
        offset = offset_ending(query[:start]) if op in ("before", "after") else None
        names = tuple(n for n in salient if n not in terms and n not in dated)
        required = tuple(t for t in terms if t in salient)
        events.append(EventPhrase(text, op, offset, terms, required, names))
    return events


@lru_cache(maxsize=1024)
def _openings(stems: tuple[str, ...]) -> re.Pattern[str]:
    """The words that may stem to one of ``stems``: a stem keeps at least
    its word's first three characters (``_stem`` strips only from the end,
    leaving three), so only words opening with a stem's first three can
    match. Matching these in the regex engine spares stemming every word of
    a long text (the check after it is the exact one)."""
    heads = sorted({s[:3] for s in stems}, key=lambda h: (-len(h), h))
    return re.compile(r"(?<!\w)(?:" + "|".join(map(re.escape, heads)) + r")\w*", re.UNICODE)


def _covered(memory: Memory, terms: Sequence[str]) -> tuple[list[int], set[str]]:
    """Where in ``memory``'s content the event's words are, and which."""
    return covered(memory.content, terms)


def covered(content: str, terms: Sequence[str]) -> tuple[list[int], set[str]]:
    """Where in ``content`` the words ``terms`` are (as ``_stem`` matches
    them: "moved" is "move"), and which of them."""
    wanted = {_stem(t): t for t in terms}
    places: list[int] = []
    found: set[str] = set()
    if not wanted:
        return places, found
    for word in _openings(tuple(sorted(wanted))).finditer(content.lower()):
        term = wanted.get(_stem(word.group()))
        if term is not None:
            places.append(word.start())
            found.add(term)
    return places, found


def _time_of(memory: Memory, places: Sequence[int]) -> tuple[Interval, str, bool]:
    """The time the memory states nearest the event's words, else its day
    (and whether it was stated)."""
    stated = [
        m
        for m in stored.stated(memory.content, memory.created_at, memory.stated_times)
        if m.interval.start is not None and m.interval.end is not None
    ]
    if stated:

        def distance(mention: TimeMention) -> int:
            return min(min(abs(p - mention.start), abs(p - mention.end)) for p in places or (0,))

        nearest = min(stated, key=distance)
        return nearest.interval, nearest.label, True
    start = memory.created_at.replace(hour=0, minute=0, second=0, microsecond=0)
    return Interval(start, start + timedelta(days=1)), spoken_day(start.date()), False


def best_anchor(event: EventPhrase, matches: Sequence[TextMatch]) -> Anchor | None:
    """The match that best dates ``event`` among keyword ``matches`` for
    its words, and the window it gives; None when none mentions it."""
    best: tuple[tuple[int, int, float], Memory, list[int]] | None = None
    count = len(event.terms)
    needed = (count + 1) // 2 if event.required else (2 * count + 2) // 3  # rounded up
    for match in matches:
        places, found = _covered(match.memory, event.terms)
        if len(found) < needed or not found.issuperset(event.required):
            continue
        content = match.memory.content.lower()
        named = sum(1 for n in event.names if re.search(rf"\b{re.escape(n)}\b", content))
        key = (len(found), named, match.bm25)
        if best is None or key > best[0]:
            best = (key, match.memory, places)
    if best is None:
        return None
    _, memory, places = best
    time, time_label, stated = _time_of(memory, places)
    window = anchored(time, event.op, event.offset, inclusive=not stated)
    return Anchor(event, memory.id, time, time_label, window)


def find_anchor(
    store: TextIndex, event: EventPhrase, *, scope: Scope, search: TextSearch | None = None
) -> Anchor | None:
    """The memory ``scope`` may see that best dates ``event``, and the
    window it gives; None when no visible memory mentions the event."""
    if search is not None:
        matches = search(list(event.terms), SEARCH_LIMIT)
    else:
        matches = store.search_text(list(event.terms), scope, RecallFilters(), limit=SEARCH_LIMIT)
    return best_anchor(event, matches)


def resolve(
    store: TextIndex,
    events: Sequence[EventPhrase],
    *,
    scope: Scope,
    search: TextSearch | None = None,
) -> list[Anchor]:
    """The anchors of those ``events`` some memory ``scope`` may see dates."""
    found = (find_anchor(store, event, scope=scope, search=search) for event in events)
    return [anchor for anchor in found if anchor is not None]
