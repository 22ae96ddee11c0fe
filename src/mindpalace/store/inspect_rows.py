"""Values the inspector's store reads return (``store/inspect_sql.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

__all__ = ["DayCount", "SessionSummary"]


@dataclass(frozen=True, slots=True)
class SessionSummary:
    """One session (conversation or other episode) a scope sees: how many
    live memories it has and when the first and the last were created."""

    session: str
    turns: int
    first_at: datetime
    last_at: datetime


@dataclass(frozen=True, slots=True)
class DayCount:
    """How many live memories of one category and store were created on one
    day (UTC)."""

    day: date
    category: str
    store: str
    count: int
