"""Date awareness in recall: the time prior.

A query may say when ("what did we decide last week", "in May 2023",
"before June 2023") or ask when ("When did Caroline go to the support
group?"). ``read_query`` finds both, resolving the query's time expressions
against the palace clock (relative ones in a query that also names a date,
"last week, as mentioned on 6 November 2023", against that date), and the
events it dates things by ("before the trip", "the week after her birthday
party"), which the caller looks up under its scope (``anchors``;
``anchor`` does it through the store) and ``settle`` turns into windows
like the others.

``time_prior`` is the stage, a pure function: a memory's relevance is
multiplied by

    (1 + window_weight x [its time falls in a window the query names]
       + when_weight x [the query asks when and the memory states a time])
    x outside, for a memory written on its own whose time falls in none
      of the windows when one of them is closed (else 1)

where a memory's time is its ``created_at`` and every time its content
states, resolved against ``created_at`` ("yesterday" in a turn of 8 May 2023
is 7 May 2023). A soft prior, never a filter: only the caller's explicit
``created_after`` / ``created_before`` filter. ``lift`` runs it over the
best candidates of a recall, read in full by the caller, and ``mark`` says
why in ``explain`` (stage score ``time``, and a gate line). A memory written
on its own (not a turn of a conversation) takes ``WRITTEN_WINDOW`` times
the window weight: a turn's time names its whole session, whose turns all
share it, while the time of a fact written alone names that fact (measured
on the everyday palaces, BENCHMARKS.md; the conversation benchmarks hold
turns only and are unchanged). For the same reason only such a memory is
lowered (``outside``, the option ``time_outside_factor``) when its time
falls in none of the windows and one is closed ("last week", "in October",
not "since March"): "what stopped working last week?" is not answered by a
breakdown written in March, however well its words match.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from mindpalace.models import Hit, Memory, MemoryKind, Scope
from mindpalace.retrieval.time import stored
from mindpalace.retrieval.time.anchors import Anchor, EventPhrase, TextSearch, find_events, resolve
from mindpalace.retrieval.time.temporal import (
    Interval,
    TimeMention,
    asks_when,
    find_times,
    overlaps,
)
from mindpalace.store.roles import TextIndex

__all__ = [
    "TimeBoost",
    "TimeQuery",
    "Timed",
    "anchor",
    "lift",
    "mark",
    "read_query",
    "settle",
    "stated_times",
    "time_prior",
]

#: the window weight's multiple for a memory written on its own (module docstring)
WRITTEN_WINDOW = 2.5

Candidate = tuple[float, str, int | None]


@dataclass(frozen=True, slots=True)
class TimeQuery:
    """What a query says about time.

    Attributes:
        windows: the times it names, resolved.
        labels: those times in words, for explain.
        asks_when: whether it asks for a time.
        events: the events it dates things by, not yet looked up.
        looks_back: whether it asks what held at an earlier time (a window
            that ended by now, or ``asks_before``): memories replaced since
            then answer it too.
        asks_before: whether its words ask what held before a change
            ("before", "used to", "originally", ...): a replaced memory
            answers it before the memory that replaced it.
    """

    windows: tuple[Interval, ...] = ()
    labels: tuple[str, ...] = ()
    asks_when: bool = False
    events: tuple[EventPhrase, ...] = ()
    looks_back: bool = False
    asks_before: bool = False

    @property
    def active(self) -> bool:
        """Whether the time prior has anything to do."""
        return bool(self.windows) or self.asks_when or bool(self.events)


@dataclass(frozen=True, slots=True)
class TimeBoost:
    """The factor the prior gave a memory, why, and whether its time falls
    in a window the query names."""

    factor: float
    reason: str
    inside: bool = False


@dataclass(frozen=True, slots=True)
class Timed:
    """Candidates after the time prior (best first where it looked), and
    the boosts it gave, by memory id."""

    candidates: list[Candidate]
    boosts: Mapping[str, TimeBoost] = field(default_factory=dict)


# Words by which a question asks what held before something changed.
_LOOKS_BACK = re.compile(
    r"\b(?:before|previously|used to|originally|formerly|former|earlier|at first|initially"
    r"|prior to|supposed to|(?:was|were) going to|back then|at the time|old)\b",
    re.IGNORECASE,
)


def read_query(query: str, now: datetime) -> TimeQuery:
    """The time windows a query names and whether it asks when.

    Occurrences without a year are the latest that began by ``now`` (people
    ask about what happened). Relative expressions in a query that also
    names an absolute date are resolved against that date.
    """
    mentions = find_times(query, now, prefer="past")
    before = bool(_LOOKS_BACK.search(query))
    absolute = [m for m in mentions if not m.relative]
    if absolute and len(absolute) < len(mentions):
        anchor = absolute[0].interval.start or absolute[0].interval.end
        if anchor is not None:
            again = {(m.start, m.end): m for m in find_times(query, anchor, prefer="past")}
            mentions = [m if not m.relative else again.get((m.start, m.end), m) for m in mentions]
    return TimeQuery(
        windows=tuple(m.interval for m in mentions),
        labels=tuple(m.label for m in mentions),
        asks_when=asks_when(query),
        events=tuple(find_events(query, mentions)),
        looks_back=before
        or any(m.interval.end is not None and m.interval.end <= now for m in mentions),
        asks_before=before,
    )


def anchor(
    store: TextIndex, query: TimeQuery, *, scope: Scope, search: TextSearch | None = None
) -> TimeQuery:
    """``query`` with its events looked up under ``scope``: each event some
    visible memory dates adds its window ("before 'the trip' = 12 July 2023
    (anchor mem_...)"); the others add nothing."""
    if not query.events:
        return query
    found = resolve(store, query.events, scope=scope, search=search)
    return replace(
        query,
        windows=query.windows + tuple(a.window for a in found),
        labels=query.labels + tuple(a.label for a in found),
        events=(),
    )


def stated_times(memory: Memory) -> list[TimeMention]:
    """The times a memory's content states, resolved against when it was
    written: as its write read them (``stored``), else read now."""
    return stored.stated(memory.content, memory.created_at, memory.stated_times)


def time_prior(
    created_at: datetime,
    stated: Sequence[TimeMention],
    query: TimeQuery,
    *,
    window_weight: float,
    when_weight: float,
    outside: float = 1.0,
) -> TimeBoost | None:
    """The stage: how much a memory's time lifts its relevance (module
    docstring); None when it does not. ``outside`` multiplies the factor of
    a memory whose time falls in none of the query's windows when one of
    them is closed (both ends known)."""
    factor = 1.0
    lowered = 1.0
    reasons = []
    inside = False
    if query.windows and window_weight:
        for window, label in zip(query.windows, query.labels, strict=True):
            if window.contains(created_at):
                factor += window_weight
                reasons.append(f"written {created_at:%Y-%m-%d}, in {label}")
                inside = True
                break
            said = next((m for m in stated if overlaps(m.interval, window)), None)
            if said is not None:
                factor += window_weight
                reasons.append(f"says {said.text!r} ({said.label}), in {label}")
                inside = True
                break
        if not inside and outside != 1.0:
            pairs = zip(query.windows, query.labels, strict=True)
            closed = next((label for window, label in pairs if window.closed), None)
            if closed is not None:
                lowered = outside
                reasons.append(f"written {created_at:%Y-%m-%d}, outside {closed}")
    if query.asks_when and when_weight and stated:
        factor += when_weight
        first = stated[0]
        reasons.append(f"the query asks when; it says {first.text!r} ({first.label})")
    if factor == 1.0 and lowered == 1.0:
        return None
    return TimeBoost(factor * lowered, "time: " + "; ".join(reasons), inside=inside)


def settle(
    query: TimeQuery, anchors: Sequence[Anchor], *, window_weight: float, when_weight: float
) -> TimeQuery:
    """The query the prior applies, its events replaced by the windows of
    the ``anchors`` found for them (``resolve``); inactive when the prior
    has nothing to do (no weights, or nothing named or asked)."""
    if not query.active or not (window_weight or when_weight):
        return TimeQuery()
    if not window_weight:  # events only ever give windows
        return replace(query, events=())
    return replace(
        query,
        windows=query.windows + tuple(a.window for a in anchors),
        labels=query.labels + tuple(a.label for a in anchors),
        events=(),
    )


def lift(
    candidates: Sequence[Candidate],
    memories: Mapping[str, Memory],
    query: TimeQuery,
    *,
    pool: int,
    window_weight: float,
    when_weight: float,
    outside: float = 1.0,
    also: Collection[str] = (),
) -> Timed:
    """The stage over a recall: ``time_prior`` on the ``pool`` best
    candidates and those named in ``also`` (those of ``memories``, read in
    full), under the settled ``query``; the others keep their values.
    ``outside`` is the factor of a memory written on its own whose time
    falls outside every closed window the query names."""
    if not query.active:
        return Timed(list(candidates))
    ordered = sorted(candidates, key=lambda item: (-item[0], item[1]))
    wanted = set(also)
    # A memory it lowers stays above those it did not look at: their times
    # are unknown, and they were not read.
    beyond = next(
        (
            value
            for place, (value, key, _) in enumerate(ordered)
            if place >= pool and key not in wanted
        ),
        0.0,
    )
    boosts: dict[str, TimeBoost] = {}
    out: list[Candidate] = []
    for place, (value, key, row) in enumerate(ordered):
        memory = memories.get(key) if place < pool or key in wanted else None
        boost = None
        if memory is not None:
            # A turn's time names its session (every turn of it shares the
            # date); the time of a memory written on its own names that memory.
            alone = memory.session is None and memory.kind is not MemoryKind.MESSAGE
            boost = time_prior(
                memory.created_at,
                stated_times(memory),
                query,
                window_weight=window_weight * (WRITTEN_WINDOW if alone else 1.0),
                when_weight=when_weight,
                outside=outside if alone else 1.0,
            )
        if boost is not None:
            boosts[key] = boost
        if boost is None:
            out.append((value, key, row))
        elif boost.factor >= 1.0:
            out.append((value * boost.factor, key, row))
        else:
            out.append((max(value * boost.factor, min(value, beyond)), key, row))
    return Timed(out, boosts)


def mark(hit: Hit, boosts: Mapping[str, TimeBoost]) -> Hit:
    """``hit`` with its time factor in ``stage_scores`` (and ``window`` 1
    when its time falls in a window the query names) and the reason among
    its gates."""
    boost = boosts.get(hit.memory.id)
    if boost is None:
        return hit
    scores = {**hit.stage_scores, "time": boost.factor}
    if boost.inside:
        scores["window"] = 1.0
    return replace(hit, stage_scores=scores, gates=(*hit.gates, boost.reason))
