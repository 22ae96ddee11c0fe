"""Intervals of time and the calendar arithmetic that makes them.

The shared vocabulary of the time modules (``temporal`` finds time
expressions in text, ``anchors`` frames events, ``prior`` scores):
half-open intervals in a reference's time zone, day-aligned, with weeks
from Monday and meteorological seasons.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

__all__ = [
    "Calendar",
    "Interval",
    "TimeMention",
    "hull",
    "month_label",
    "overlaps",
    "shift_month",
    "span_label",
    "spoken_day",
]


@dataclass(frozen=True, slots=True)
class Interval:
    """A half-open span of time ``[start, end)``; ``None`` ends are open."""

    start: datetime | None
    end: datetime | None

    @property
    def closed(self) -> bool:
        """Whether both ends are known ("last week", not "since March")."""
        return self.start is not None and self.end is not None

    def contains(self, moment: datetime) -> bool:
        """Whether ``moment`` falls inside."""
        return (self.start is None or self.start <= moment) and (
            self.end is None or moment < self.end
        )


def overlaps(a: Interval, b: Interval) -> bool:
    """Whether two intervals share any moment."""
    return (a.end is None or b.start is None or b.start < a.end) and (
        b.end is None or a.start is None or a.start < b.end
    )


@dataclass(frozen=True, slots=True)
class TimeMention:
    """One time expression: where it is, what it says, what it resolves to.

    Attributes:
        text: the expression as written.
        start / end: its character span in the text.
        interval: the time it names.
        label: that time in words, for indexing and explain
            ("7 May 2023", "week of 1 May 2023", "before June 2023").
        relative: whether it needed the reference to resolve.
    """

    text: str
    start: int
    end: int
    interval: Interval
    label: str
    relative: bool


def spoken_day(day: date) -> str:
    """``7 May 2023``."""
    return f"{day.day} {day:%B} {day.year}"


class Calendar:
    """Day-aligned intervals in the reference's time zone."""

    def __init__(self, reference: datetime) -> None:
        self.tz = reference.tzinfo
        self.today = reference.date()

    def at(self, day: date) -> datetime:
        return datetime.combine(day, time(), tzinfo=self.tz)

    def days(self, first: date, last: date) -> Interval:
        """From the start of ``first`` to the end of ``last``."""
        return Interval(self.at(first), self.at(last + timedelta(days=1)))

    def month(self, year: int, month: int) -> Interval:
        following = date(year + 1, 1, 1) if month == 12 else date(year, month + 1, 1)
        return Interval(self.at(date(year, month, 1)), self.at(following))

    def year(self, year: int) -> Interval:
        return Interval(self.at(date(year, 1, 1)), self.at(date(year + 1, 1, 1)))

    def season(self, year: int, first_month: int) -> Interval:
        # Winter 2023 is December 2023 to February 2024.
        start = date(year, first_month, 1)
        end_year, end_month = (year + 1, first_month + 3 - 12) if first_month > 9 else (year, 0)
        end = date(end_year, end_month, 1) if end_month else date(year, first_month + 3, 1)
        return Interval(self.at(start), self.at(end))

    def week_start(self, day: date) -> date:
        return day - timedelta(days=day.weekday())


def shift_month(year: int, month: int, by: int) -> tuple[int, int]:
    index = year * 12 + (month - 1) + by
    return index // 12, index % 12 + 1


def month_label(year: int, month: int) -> str:
    return f"{date(year, month, 1):%B} {year}"


def span_label(interval: Interval) -> str:
    assert interval.start is not None and interval.end is not None
    last = interval.end.date() - timedelta(days=1)
    return f"{spoken_day(interval.start.date())} to {spoken_day(last)}"


def hull(a: Interval, b: Interval) -> Interval:
    assert a.start is not None and b.start is not None and a.end is not None and b.end is not None
    return Interval(min(a.start, b.start), max(a.end, b.end))
