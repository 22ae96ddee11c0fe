"""Time expressions: found in text and resolved against a reference time.

Pure functions, no I/O. ``find_times(text, reference)`` returns every time
expression it recognises with the interval it names:

* absolute: ``7 May 2023``, ``May 7th, 2023``, ``2023-05-07``, ``May 2023``,
  ``summer 2022``, ``in 2022``, ``in May``, ``on Friday``;
* relative: ``yesterday``, ``today``, ``last night``, ``two days ago``,
  ``a few weeks ago``, ``last week``, ``this weekend``, ``next Friday``,
  ``last month``, ``earlier this year``, ``the other day``, ``last summer``;
* open ranges around any of them: ``before June 2023``, ``since May``,
  ``after 2022``, ``until Friday`` (in a stored text a deadline, ``until
  Friday``, and an onset, ``since May``, name their own day or month);
* spans next to a date: ``the week before 3 August 2023`` (the seven days
  before it), ``two weeks before August 11, 2023`` (about fourteen days
  before it, give or take three), ``the Saturday after October 28, 2023``.

Intervals are half-open ``[start, end)`` in the reference's time zone; a
``None`` end is open. Weeks start on Monday; a weekend is Saturday and
Sunday; seasons are meteorological (northern hemisphere: summer is June to
August, winter December to February). A month, season or weekday named
without a year or modifier is the occurrence nearest the reference (ties go
to the past), or, with ``prefer="past"`` (queries: people ask about what
happened), the latest one that began by the reference. A weekday named
without a date follows the tense around it (``tense``): "the
party is on Saturday" is the coming Saturday, "we went on Saturday" the
last one, "by Friday" said on a Friday is that day.

Vague amounts have ranges: "a couple of" is 2, "a few" 2-4, "several" 3-6.
What is not recognised is left alone: "recently", "before the trip"
(``anchored`` and ``offset_ending`` let ``anchors`` frame such
an event once the palace says when it was).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from functools import lru_cache
from typing import Any

from mindpalace.retrieval.time.intervals import (
    Calendar,
    Interval,
    TimeMention,
    hull,
    month_label,
    overlaps,
    shift_month,
    span_label,
    spoken_day,
)
from mindpalace.retrieval.time.scan import time_matches
from mindpalace.retrieval.time.tense import BACKWARD, FORWARD, direction

__all__ = [
    "Interval",
    "Offset",
    "TimeMention",
    "anchored",
    "asks_when",
    "find_times",
    "offset_ending",
    "overlaps",
    "spoken_day",
]

_MONTHS = {
    "jan": 1, "january": 1, "feb": 2, "february": 2, "mar": 3, "march": 3,
    "apr": 4, "april": 4, "may": 5, "jun": 6, "june": 6, "jul": 7, "july": 7,
    "aug": 8, "august": 8, "sep": 9, "sept": 9, "september": 9, "oct": 10,
    "october": 10, "nov": 11, "november": 11, "dec": 12, "december": 12,
}  # fmt: skip
# Month names that are also ordinary words are dates only when capitalised.
_WORDLIKE_MONTHS = frozenset({"may", "march", "mar", "august", "aug", "jan"})
_WEEKDAYS = {
    "monday": 0, "mon": 0, "tuesday": 1, "tue": 1, "tues": 1, "wednesday": 2, "wed": 2,
    "thursday": 3, "thu": 3, "thur": 3, "thurs": 3, "friday": 4, "fri": 4,
    "saturday": 5, "sat": 5, "sunday": 6, "sun": 6,
}  # fmt: skip
_SEASONS = {"spring": 3, "summer": 6, "fall": 9, "autumn": 9, "winter": 12}  # first month
_NUMBERS = {
    "a": (1, 1), "an": (1, 1), "one": (1, 1), "two": (2, 2), "three": (3, 3),
    "four": (4, 4), "five": (5, 5), "six": (6, 6), "seven": (7, 7), "eight": (8, 8),
    "nine": (9, 9), "ten": (10, 10), "eleven": (11, 11), "twelve": (12, 12),
    "few": (2, 4), "a few": (2, 4), "couple": (2, 2), "a couple": (2, 2),
    "couple of": (2, 2), "a couple of": (2, 2), "several": (3, 6),
}  # fmt: skip
_MAX_AMOUNT = 200  # "300 years ago" is history, not memory
_DEADLINES = frozenset({"by", "until", "till"})

_MONTH = (
    r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?"
)
_FULL_MONTH = (
    r"january|february|march|april|may|june|july|august|september|sept|october|november|december"
)
_WEEKDAY = (
    r"monday|mon|tuesday|tues|tue|wednesday|wed|thursday|thurs|thur|thu|friday|fri"
    r"|saturday|sat|sunday|sun"
)
_FULL_WEEKDAY = r"monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_SEASON = r"spring|summer|fall|autumn|winter"
_NUM = r"\d{1,3}|a\s+couple(?:\s+of)?|couple(?:\s+of)?|a\s+few|few|several|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"  # noqa: E501
_UNIT = r"days?|nights?|weeks?|weekends?|fortnights?|months?|years?"
_ORD = r"(?:st|nd|rd|th)?"

# What joins two times into a span ("from 25 July to 8 August", "June 10-13");
# the days of a range may also be joined by "and" ("between 19 and 31 March").
_JOINERS = r"-|\u2013|to|until|till|through"
_TO = rf"(?:{_JOINERS}|and)"

# "the week", "two days", "the Saturday" right before "before" / "after".
_OFFSET = rf"(?:the|{_NUM})\s+(?:{_UNIT}|{_FULL_WEEKDAY})"

# The words a time expression can start with (besides a digit): a position
# that starts none of them is skipped before the pattern's alternatives are
# tried there (a third of the time over long texts; the same matches).
_STARTS = (
    r"on|in|during|over|the|before|after|since|until|till|by|of|from|through|around"
    r"|early|mid|late|other|day|yesterday|today|tonight|tomorrow|last|this|earlier|later"
    r"|past|previous|next|coming|an?|one|two|three|four|five|six|seven|eight|nine|ten"
    r"|eleven|twelve|couple|few|several|" + _SEASON + "|" + _MONTH + "|" + _WEEKDAY
)
_LEAD = rf"\b(?=\d|(?:{_STARTS})\b)"
_BODY = rf"""
    (?:(?:(?:on|in|during|over)\s+)?(?P<off>{_OFFSET})\s+(?=(?:before|after)\s))?
    (?:(?P<op>before|after|since|until|till|by)\s+)?
    (?:(?P<pre>in|on|during|over|of|from|through|around)\s+)?
    (?:(?P<the>the)\s+)?
    (?:(?P<mod>early|mid|late)[\s-]+)?
    (?:
        (?P<iso_y>\d{{4}})-(?P<iso_m>\d{{1,2}})(?:-(?P<iso_d>\d{{1,2}}))?\b(?!-)
      | (?:(?P<dmy_from>\d{{1,2}}){_ORD}\s*{_TO}\s*)?
            (?P<dmy_d>\d{{1,2}}){_ORD}\s+(?:of\s+)?(?P<dmy_m>{_MONTH})\b\.?
            (?:,?\s*(?P<dmy_y>\d{{4}})\b)?
      | (?P<mdy_m>{_MONTH})\.?\s+(?P<mdy_d>\d{{1,2}}){_ORD}\b(?!:\d)
            (?:\s*{_TO}\s*(?P<mdy_to>\d{{1,2}}){_ORD}\b(?!:\d))?
            (?:,?\s*(?P<mdy_y>\d{{4}})\b)?
      | (?P<my_m>{_MONTH})\.?,?\s+(?:of\s+)?(?P<my_y>\d{{4}})\b
      | (?P<sy_s>{_SEASON})\s+(?:of\s+)?(?P<sy_y>\d{{4}})\b
      | (?P<ago_n>{_NUM})\s+(?P<ago_u>{_UNIT})\s+(?:ago|back)\b
      | (?P<other>other\s+day)\b
      | (?P<dby>day\s+before\s+yesterday|day\s+after\s+tomorrow)\b
      | (?P<word>yesterday|today|tonight|tomorrow|last\s+night
            |this\s+(?:morning|afternoon|evening))\b
      | (?P<edge>earlier|later)\s+this\s+(?P<edge_u>week|month|year)\b
      | (?P<rel>this\s+past|this\s+coming|last|past|previous|this|next|coming)
            \s+(?P<rel_u>week|weekend|month|year|{_SEASON}|{_WEEKDAY}|{_FULL_MONTH})\b
      | (?P<bwd>{_FULL_WEEKDAY})\b
      | (?P<bs>{_SEASON})\b
      | (?P<bm>{_FULL_MONTH})\b
      | (?P<by>(?:19|20)\d{{2}})\b(?![-/:])
    )
    """
_PATTERN = re.compile(_LEAD + _BODY, re.IGNORECASE | re.VERBOSE)


def _pick(candidates: list[tuple[Interval, str]], today: date, prefer: str) -> tuple[Interval, str]:
    """The occurrence nearest ``today`` (ties to the past), or with ``past``
    the latest that began by ``today``; candidates are in time order."""
    if prefer == "past":
        begun = [c for c in candidates if c[0].start is not None and c[0].start.date() <= today]
        return begun[-1] if begun else candidates[0]

    def distance(item: tuple[Interval, str]) -> tuple[int, int]:
        interval = item[0]
        assert interval.start is not None and interval.end is not None
        first, last = interval.start.date(), interval.end.date() - timedelta(days=1)
        if first <= today <= last:
            return (0, 0)
        if today < first:
            return ((first - today).days, 1)
        return ((today - last).days, 0)

    return min(candidates, key=distance)


def _season_name(first_month: int) -> str:
    return {3: "spring", 6: "summer", 9: "autumn", 12: "winter"}[first_month]


# -- resolution ----------------------------------------------------------------------

_Resolved = tuple[Interval, str, bool]  # interval, label, relative


def _number(text: str) -> tuple[int, int] | None:
    word = " ".join(text.lower().split())
    if word.isdigit():
        value = int(word)
        return (value, value) if 0 < value <= _MAX_AMOUNT else None
    return _NUMBERS.get(word)


def _unit_ago(cal: Calendar, unit: str, amount: int) -> tuple[Interval, str]:
    today = cal.today
    unit = unit.lower().rstrip("s")
    if unit in ("day", "night"):
        day = today - timedelta(days=amount)
        return cal.days(day, day), spoken_day(day)
    if unit in ("week", "fortnight"):
        # "two weeks ago" is about fourteen days back, give or take three.
        centre = today - timedelta(days=amount * (7 if unit == "week" else 14))
        return (
            cal.days(centre - timedelta(days=3), centre + timedelta(days=3)),
            f"week of {spoken_day(centre - timedelta(days=3))}",
        )
    if unit == "weekend":
        saturday = cal.week_start(today) - timedelta(days=7 * amount) + timedelta(days=5)
        return cal.days(saturday, saturday + timedelta(days=1)), (
            f"weekend of {spoken_day(saturday)}"
        )
    if unit == "month":
        year, month = shift_month(today.year, today.month, -amount)
        return cal.month(year, month), month_label(year, month)
    year = today.year - amount  # years
    return cal.year(year), str(year)


def _relative(cal: Calendar, rel: str, unit: str) -> tuple[Interval, str]:
    """ "last / this / next" + a unit, weekday, season or month."""
    today = cal.today
    rel = " ".join(rel.lower().split())
    step = {"last": -1, "past": -1, "previous": -1, "this past": -1, "next": 1, "coming": 1}
    offset = step.get(rel, 0)  # "this", "this coming": within the current unit
    word = unit.lower()
    if word == "week":
        monday = cal.week_start(today) + timedelta(days=7 * offset)
        return cal.days(monday, monday + timedelta(days=6)), f"week of {spoken_day(monday)}"
    if word == "weekend":
        saturday = cal.week_start(today) + timedelta(days=7 * offset + 5)
        return cal.days(saturday, saturday + timedelta(days=1)), (
            f"weekend of {spoken_day(saturday)}"
        )
    if word == "month":
        year, month = shift_month(today.year, today.month, offset)
        return cal.month(year, month), month_label(year, month)
    if word == "year":
        return cal.year(today.year + offset), str(today.year + offset)
    if word in _SEASONS:
        first = _SEASONS[word]
        # This season's occurrence in the current year (in January and
        # February, "this winter" began the December before).
        base = today.year - 1 if first == 12 and today.month <= 2 else today.year
        this_one = cal.season(base, first)
        assert this_one.start is not None and this_one.end is not None
        year = base
        if offset < 0:  # the latest that has ended
            year = base if this_one.end.date() <= today else base - 1
        elif offset > 0:  # the first that has not begun
            year = base if this_one.start.date() > today else base + 1
        return cal.season(year, first), f"{_season_name(first)} {year}"
    if word in _WEEKDAYS:
        wanted = _WEEKDAYS[word]
        if offset < 0:  # the latest before today
            day = today - timedelta(days=(today.weekday() - wanted) % 7 or 7)
        elif offset > 0:  # the first after today
            day = today + timedelta(days=(wanted - today.weekday()) % 7 or 7)
        else:  # that day of this week
            day = cal.week_start(today) + timedelta(days=wanted)
        return cal.days(day, day), spoken_day(day)
    month = _MONTHS[word]
    if offset < 0:  # the latest before this month
        year = today.year if month < today.month else today.year - 1
    elif offset > 0:  # the first after this month
        year = today.year if month > today.month else today.year + 1
    else:
        year = today.year
    return cal.month(year, month), month_label(year, month)


def _bare_month(cal: Calendar, month: int, prefer: str) -> tuple[Interval, str]:
    year = cal.today.year
    options = [(cal.month(y, month), month_label(y, month)) for y in (year - 1, year, year + 1)]
    return _pick(options, cal.today, prefer)


def _bare_season(cal: Calendar, first: int, prefer: str) -> tuple[Interval, str]:
    year = cal.today.year
    options = [
        (cal.season(y, first), f"{_season_name(first)} {y}") for y in (year - 2, year - 1, year)
    ] + [(cal.season(year + 1, first), f"{_season_name(first)} {year + 1}")]
    return _pick(options, cal.today, prefer)


def _bare_weekday(cal: Calendar, weekday: int, step: int) -> tuple[Interval, str]:
    """The weekday before today (``step`` -1), after today (+1), or today
    or after (0: a deadline, "by Friday" said on a Friday is that day)."""
    today = cal.today
    if step < 0:
        day = today - timedelta(days=(today.weekday() - weekday) % 7 or 7)
    else:
        ahead = (weekday - today.weekday()) % 7
        day = today + timedelta(days=ahead or (7 if step > 0 else 0))
    return cal.days(day, day), spoken_day(day)


def _weekday_step(match: re.Match[str], prefer: str) -> int:
    """Which occurrence a bare weekday names (``_bare_weekday``'s step), from
    the tense around it (``tense``): "is on / will ... on Saturday" the
    coming one, "went ... on Saturday" the last one; "by / until Friday" a
    deadline unless said in the past; "since Friday" the last one. With no
    cue, text points forward ("party on Saturday!") and a query, asked
    about what happened (``prefer="past"``), back."""
    op = (match.group("op") or "").lower()
    if op == "since":
        return BACKWARD
    default = BACKWARD if prefer == "past" and op not in _DEADLINES else FORWARD
    step = direction(match.string, match.start(), match.end(), default=default)
    return 0 if step == FORWARD and op in _DEADLINES else step


def _day_month(
    cal: Calendar, day: int, month: int, year: int | None, prefer: str
) -> tuple[Interval, str, bool] | None:
    if year is not None:
        try:
            moment = date(year, month, day)
        except ValueError:
            return None
        return cal.days(moment, moment), spoken_day(moment), False
    options = []
    for y in (cal.today.year - 1, cal.today.year, cal.today.year + 1):
        try:
            moment = date(y, month, day)
        except ValueError:  # 29 February
            continue
        options.append((cal.days(moment, moment), spoken_day(moment)))
    if not options:
        return None
    interval, label = _pick(options, cal.today, prefer)
    return interval, label, True


def _month_ok(word: str, *, attached: bool) -> bool:
    """A month name is a date when capitalised, or lower-case and not a word
    people use otherwise ("may", "march")."""
    if word[:1].isupper():
        return True
    return word.lower() not in _WORDLIKE_MONTHS and (attached or len(word) > 3)


def _year(text: str | None) -> int | None:
    if text is None:
        return None
    value = int(text)
    return value if 1 <= value <= 9998 else None


_Group = Callable[[str], "str | Any"]


def _resolve(match: re.Match[str], cal: Calendar, prefer: str) -> _Resolved | None:
    g = match.group
    if g("iso_y") or g("dmy_d") or g("mdy_d") or g("my_m") or g("sy_s"):
        return _absolute(g, cal, prefer)
    if g("ago_n") or g("other") or g("dby") or g("word") or g("edge") or g("rel"):
        return _relative_form(g, cal)
    if g("bwd"):
        if (g("pre") or "").lower() != "on" and not g("op"):
            return None  # "Friday" alone, "during Friday"
        interval, label = _bare_weekday(
            cal, _WEEKDAYS[g("bwd").lower()], _weekday_step(match, prefer)
        )
        return interval, label, True
    return _bare(g, cal, prefer)


def _absolute(g: _Group, cal: Calendar, prefer: str) -> _Resolved | None:
    if g("iso_y"):
        year, month = _year(g("iso_y")), int(g("iso_m"))
        if year is None or not 1 <= month <= 12:
            return None
        if g("iso_d"):
            try:
                day = date(year, month, int(g("iso_d")))
            except ValueError:
                return None
            return cal.days(day, day), spoken_day(day), False
        return cal.month(year, month), month_label(year, month), False
    if g("dmy_d") or g("mdy_d"):
        word = g("dmy_m") or g("mdy_m")
        if not _month_ok(word, attached=True):
            return None
        year_text = g("dmy_y") or g("mdy_y")
        if year_text is not None and _year(year_text) is None:
            return None
        month = _MONTHS[word.lower()]
        last = _day_month(cal, int(g("dmy_d") or g("mdy_d")), month, _year(year_text), prefer)
        first_text = g("dmy_from") or (g("mdy_d") if g("mdy_to") else None)
        if last is None or first_text is None:
            return last
        # A range of days in one month: the last day settles the year.
        if g("mdy_to"):
            last = _day_month(cal, int(g("mdy_to")), month, _year(year_text), prefer)
            if last is None:
                return None
        assert last[0].start is not None and last[0].end is not None
        end = last[0].start.date()
        if not 1 <= int(first_text) < end.day:
            return last  # "5 to 3 June" is no range: the day named last
        interval = cal.days(end.replace(day=int(first_text)), end)
        return interval, span_label(interval), last[2]
    if g("my_m"):
        year = _year(g("my_y"))
        if year is None or not _month_ok(g("my_m"), attached=True):
            return None
        month = _MONTHS[g("my_m").lower()]
        return cal.month(year, month), month_label(year, month), False
    if g("sy_s"):
        year = _year(g("sy_y"))
        if year is None:
            return None
        first = _SEASONS[g("sy_s").lower()]
        return cal.season(year, first), f"{_season_name(first)} {year}", False
    return None


def _relative_form(g: _Group, cal: Calendar) -> _Resolved | None:
    if g("ago_n"):
        amounts = _number(g("ago_n"))
        if amounts is None:
            return None
        low, high = amounts
        near, label = _unit_ago(cal, g("ago_u"), low)
        if high != low:
            far, _ = _unit_ago(cal, g("ago_u"), high)
            near = hull(far, near)
            label = span_label(near)
        return near, label, True
    if g("other"):
        if not g("the"):
            return None  # "every other day"
        first, last = cal.today - timedelta(days=6), cal.today - timedelta(days=1)
        return cal.days(first, last), f"{spoken_day(first)} to {spoken_day(last)}", True
    if g("dby"):
        shift = -2 if "before" in g("dby").lower() else 2
        day = cal.today + timedelta(days=shift)
        return cal.days(day, day), spoken_day(day), True
    if g("word"):
        word = " ".join(g("word").lower().split())
        shift = {"yesterday": -1, "last night": -1, "tomorrow": 1}.get(word, 0)
        day = cal.today + timedelta(days=shift)
        return cal.days(day, day), spoken_day(day), True
    if g("edge"):
        unit = g("edge_u").lower()
        if unit == "week":
            first = cal.week_start(cal.today)
            last = first + timedelta(days=6)
        elif unit == "month":
            first = cal.today.replace(day=1)
            month = cal.month(first.year, first.month)
            assert month.end is not None
            last = month.end.date() - timedelta(days=1)
        else:
            first, last = date(cal.today.year, 1, 1), date(cal.today.year, 12, 31)
        if g("edge").lower() == "earlier":
            last = cal.today
        else:
            first = cal.today
        return cal.days(first, last), f"{spoken_day(first)} to {spoken_day(last)}", True
    if g("rel"):
        unit = g("rel_u")
        if unit.lower() in _MONTHS and not _month_ok(unit, attached=True):
            return None
        if g("the") and g("rel").lower() in ("past", "last", "next", "coming"):
            return _rolling(cal, g("rel").lower(), unit.lower())
        interval, label = _relative(cal, g("rel"), unit)
        return interval, label, True
    return None


def _bare(g: _Group, cal: Calendar, prefer: str) -> _Resolved | None:
    if not (g("pre") or g("op") or g("mod")):
        return None  # a bare name: "Friday", "summer", "2023" alone are not dates here
    if g("bs"):
        interval, label = _bare_season(cal, _SEASONS[g("bs").lower()], prefer)
        return interval, label, True
    if g("bm"):
        if not _month_ok(g("bm"), attached=False):
            return None
        interval, label = _bare_month(cal, _MONTHS[g("bm").lower()], prefer)
        return interval, label, True
    if g("by"):
        if (g("pre") or "").lower() == "on":
            return None
        year = int(g("by"))
        return cal.year(year), str(year), False
    return None


def _rolling(cal: Calendar, rel: str, unit: str) -> _Resolved | None:
    """ "the past week": the seven days up to today; "the next month": the
    thirty days from today."""
    length = {"week": 7, "weekend": 2, "month": 30, "year": 365}.get(unit)
    if length is None:
        return None
    if rel in ("past", "last"):
        first, last = cal.today - timedelta(days=length), cal.today
    else:
        first, last = cal.today, cal.today + timedelta(days=length)
    return cal.days(first, last), f"{spoken_day(first)} to {spoken_day(last)}", True


def _frame(resolved: _Resolved, op: str | None, *, prefer: str) -> _Resolved:
    """The time an operator makes of a resolved one: "before June" is
    everything up to June. In a stored text (``prefer`` "nearest") a
    deadline ("report by Thursday", "open until Friday") names its day, not
    the whole past up to it, and an onset ("texts owners since March")
    names when it began, not every day after: the text is about that day
    ("what went wrong last week" is not answered by what holds since March)."""
    interval, label, relative = resolved
    if not op:
        return resolved
    op = op.lower()
    if (op in _DEADLINES or op == "since") and prefer != "past":
        return interval, f"{op} {label}", relative
    if op == "before":
        return Interval(None, interval.start), f"before {label}", relative
    if op == "after":
        return Interval(interval.end, None), f"after {label}", relative
    if op == "since":
        return Interval(interval.start, None), f"since {label}", relative
    return Interval(None, interval.end), f"until {label}", relative  # until, till, by


# -- spans next to an anchor ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Offset:
    """How far from an anchor a time lies: "the week" (``adjacent``: the
    seven days next to it), "two weeks" (about fourteen days away),
    "the Saturday" (the nearest one on that side).

    Attributes:
        text: as written ("the week", "a few days").
        unit: ``day``, ``week``, ``weekend``, ``fortnight``, ``month``,
            ``year`` or a weekday's full name.
        low / high: how many units (a range for vague amounts).
        adjacent: "the" + unit: the span next to the anchor, not a point
            that far from it.
    """

    text: str
    unit: str
    low: int
    high: int
    adjacent: bool


_OFFSET_AT_END = re.compile(rf"\b(?:{_OFFSET})\s*$", re.IGNORECASE)
_UNIT_DAYS = {"day": 1, "night": 1, "week": 7, "fortnight": 14, "month": 30, "year": 365}
# A point "N units" away is that far give or take this many days ("two
# weeks before" is 11 to 17 days before).
_SLACK_DAYS = {"day": 0, "night": 0, "week": 3, "fortnight": 3, "month": 15, "year": 182}


def _offset(text: str) -> Offset | None:
    words = text.lower().split()
    unit = words[-1]
    if unit not in _WEEKDAYS:
        unit = unit.rstrip("s") if unit != "days" else "day"
    if words[0] == "the" and len(words) == 2:
        return Offset(text, unit, 1, 1, adjacent=True)
    if unit in _WEEKDAYS:
        return None  # "two Fridays before" is not said
    amounts = _number(" ".join(words[:-1]))
    if amounts is None:
        return None
    return Offset(text, unit, amounts[0], amounts[1], adjacent=False)


def offset_ending(text: str) -> Offset | None:
    """The offset ``text`` ends with ("what did she do the week" gives "the
    week"), or None."""
    match = _OFFSET_AT_END.search(text)
    return _offset(match.group().strip()) if match else None


def _weekday_from(day: date, weekday: int, step: int) -> date:
    """The first ``weekday`` strictly before ``day`` (step -1) or on/after it (+1)."""
    if step < 0:
        return day - timedelta(days=(day.weekday() - weekday) % 7 or 7)
    return day + timedelta(days=(weekday - day.weekday()) % 7)


def _point(cal: Calendar, edge: date, offset: Offset, amount: int, step: int) -> Interval:
    unit = "week" if offset.unit == "weekend" else offset.unit
    centre = edge + timedelta(days=step * amount * _UNIT_DAYS[unit])
    if offset.unit == "weekend":
        saturday = _weekday_from(centre + timedelta(days=1 if step < 0 else 0), 5, step)
        return cal.days(saturday, saturday + timedelta(days=1))
    slack = timedelta(days=_SLACK_DAYS[unit])
    return cal.days(centre - slack, centre + slack)


def _add(day: date, unit: str, step: int) -> date:
    """``day`` moved one unit; a month or year later keeps the day of the
    month where it exists ("the month before 31 March" begins 28 February)."""
    if unit in ("month", "year"):
        year, month = shift_month(day.year, day.month, step * (12 if unit == "year" else 1))
        following = date(year + 1, 1, 1) if month == 12 else date(year, month + 1, 1)
        return min(date(year, month, 1) + timedelta(days=day.day - 1), following - timedelta(1))
    return day + timedelta(days=step * _UNIT_DAYS[unit])


def anchored(anchor: Interval, op: str, offset: Offset | None, *, inclusive: bool) -> Interval:
    """The time ``op`` (before, after, since, until, till, by) names
    relative to ``anchor``, a bounded interval.

    Without an offset the range is open: before the anchor began, after it
    ended (with ``inclusive``, the anchor's own span is in the range: a
    memory reporting an event is often written the day it happened). With
    one it is the span next to the anchor ("the week before": the seven
    days before it began; "the Saturday after": the first Saturday from its
    end) or the point that far away ("two days after": the anchor's last day
    plus two; "two weeks before": fourteen days before it, give or take
    three; ranges for "a few"). Offsets apply to before and after only.

    Raises:
        ValueError: ``anchor`` has an open end, or ``op`` is not one of these.
    """
    if anchor.start is None or anchor.end is None:
        raise ValueError("an anchor must have both ends")
    op = op.lower()
    if op not in ("before", "after", "since", "until", "till", "by"):
        raise ValueError(f"op must be before, after, since, until, till or by, not {op!r}")
    if offset is None or op not in ("before", "after"):
        if op in ("before", "until", "till", "by"):
            return Interval(None, anchor.end if inclusive or op != "before" else anchor.start)
        return Interval(anchor.start if inclusive or op == "since" else anchor.end, None)
    cal = Calendar(anchor.start)
    first = anchor.start.date()
    last = (anchor.end - timedelta(microseconds=1)).date()
    step, edge = (-1, first) if op == "before" else (1, last)
    if offset.unit in _WEEKDAYS:
        day = _weekday_from(
            edge + timedelta(days=1 if step > 0 else 0), _WEEKDAYS[offset.unit], step
        )
        return cal.days(day, day)
    if offset.adjacent:
        if offset.unit == "weekend":
            saturday = _weekday_from(edge + timedelta(days=1 if step < 0 else 0), 5, step)
            if step < 0 and saturday + timedelta(days=1) >= edge:
                saturday -= timedelta(days=7)  # the weekend that ended before the anchor
            elif step > 0 and saturday <= edge:
                saturday += timedelta(days=7)
            return cal.days(saturday, saturday + timedelta(days=1))
        if step < 0:
            return Interval(cal.at(_add(edge, offset.unit, -1)), cal.at(edge))
        after = edge + timedelta(days=1)
        return Interval(cal.at(after), cal.at(_add(after, offset.unit, 1)))
    near = _point(cal, edge, offset, offset.low, step)
    if offset.high == offset.low:
        return near
    return hull(near, _point(cal, edge, offset, offset.high, step))


def _label(interval: Interval) -> str:
    assert interval.start is not None and interval.end is not None
    if interval.end - interval.start <= timedelta(days=1):
        return spoken_day(interval.start.date())
    return span_label(interval)


def find_times(text: str, reference: datetime, *, prefer: str = "nearest") -> list[TimeMention]:
    """Every time expression in ``text``, resolved against ``reference``.

    Args:
        text: any text.
        reference: when the text was written (or the query asked).
        prefer: ``"nearest"`` or ``"past"``: which occurrence a month,
            season or date without a year names.

    Returns:
        The mentions in text order; unrecognised or impossible dates
        ("31 February") are skipped.
    """
    if prefer not in ("nearest", "past"):
        raise ValueError(f"prefer must be 'nearest' or 'past', not {prefer!r}")
    return list(_find_cached(text, reference, prefer))


@lru_cache(maxsize=8192)
def _find_cached(text: str, reference: datetime, prefer: str) -> tuple[TimeMention, ...]:
    # Recall re-reads the same memories for query after query: cached.
    if not _may_name_time(text):
        return ()
    cal = Calendar(reference)
    found = []
    for match in time_matches(_PATTERN, text):
        try:
            resolved = _resolve(match, cal, prefer)
        except (OverflowError, ValueError):  # beyond year 1..9999
            continue
        if resolved is None:
            continue
        offset = _offset(match.group("off")) if match.group("off") else None
        if offset is not None and resolved[0].start is not None and resolved[0].end is not None:
            interval = anchored(resolved[0], match.group("op"), offset, inclusive=False)
            label, relative = _label(interval), resolved[2]
        else:
            interval, label, relative = _frame(resolved, match.group("op"), prefer=prefer)
        found.append(
            TimeMention(match.group(), match.start(), match.end(), interval, label, relative)
        )
    return tuple(_joined(text, found))


# "from 25 July to 8 August": two dates joined into the span between them.
_JOIN = re.compile(rf"\s*(?:{_JOINERS})\s*", re.IGNORECASE)
_AND = re.compile(r"\s+and\s+", re.IGNORECASE)
_BETWEEN = re.compile(r"\bbetween\s+$", re.IGNORECASE)
_LONGEST_SPAN = timedelta(days=366)


def _joined(text: str, found: list[TimeMention]) -> list[TimeMention]:
    """``found`` with each two dates that ``_JOIN`` links ("25 July to 8
    August", "between 10 June and 13 June") made one mention of the span
    from the first to the second."""
    out: list[TimeMention] = []
    for mention in found:
        before = out[-1] if out else None
        if (
            before is not None
            and (
                _JOIN.fullmatch(text, before.end, mention.start)
                or (
                    _AND.fullmatch(text, before.end, mention.start)
                    and _BETWEEN.search(text, 0, before.start) is not None
                )
            )
            and before.interval.start is not None
            and mention.interval.start is not None
            and mention.interval.end is not None
            and before.interval.start < mention.interval.start
            and mention.interval.end - before.interval.start <= _LONGEST_SPAN
        ):
            interval = Interval(before.interval.start, mention.interval.end)
            out[-1] = TimeMention(
                text[before.start : mention.end],
                before.start,
                mention.end,
                interval,
                span_label(interval),
                before.relative or mention.relative,
            )
            continue
        out.append(mention)
    return out


# Most texts name no time: a set lookup over their words decides whether to
# run the pattern (which costs a few hundred microseconds a text).
_KEYWORDS = frozenset(
    {*_MONTHS, *_WEEKDAYS, *_SEASONS}
    | set(
        "yesterday today tonight tomorrow ago week weeks weekend weekends fortnight"
        " fortnights month months year years night nights day days morning afternoon"
        " evening".split()
    )
)
_SEPARATORS = str.maketrans({c: " " for c in ".,;:!?()[]{}\"'-/\n\t"})


def _may_name_time(text: str) -> bool:
    words = text.lower().translate(_SEPARATORS).split()
    if not _KEYWORDS.isdisjoint(words):
        return True
    return any(len(w) == 4 and w.isdigit() for w in words)


_ASKS_WHEN = re.compile(
    r"(?:^|[.?!;]\s*)\s*(?:when\b|since\s+when\b|what\s+(?:date|day|month|year|time|week)\b"
    r"|which\s+(?:date|day|month|year|week)\b|how\s+long\s+ago\b|on\s+what\s+(?:date|day)\b)",
    re.IGNORECASE,
)


def asks_when(query: str) -> bool:
    """Whether a question asks for a time ("When did...", "What year...",
    "How long ago..."), from its form alone."""
    return bool(_ASKS_WHEN.search(query))
