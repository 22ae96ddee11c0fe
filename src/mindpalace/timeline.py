"""``palace.timeline``: what a palace holds over time, as its scope sees it.

Sessions (conversations and other episodes) with their span, latest first
and paged by cursor; live memories counted by day, category and store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mindpalace import listing
from mindpalace.store.inspect_rows import DayCount, SessionSummary
from mindpalace.validation import check_limit

if TYPE_CHECKING:
    from mindpalace.view import View

__all__ = ["DayCount", "SessionSummary", "Timeline"]

MAX_SESSIONS = 1000


class Timeline:
    """Sessions and day counts of one palace, through its scope."""

    def __init__(self, palace: View) -> None:
        self._palace = palace

    def sessions(self, *, limit: int = 50, cursor: str | None = None) -> list[SessionSummary]:
        """Sessions of the live memories this palace sees, the latest active
        first. The cursor of the next page is ``next_cursor(page)``.

        Raises:
            ValidationError: ``limit`` outside 1-1,000, or a cursor this
                listing did not give out.
        """
        check_limit(limit, low=1, high=MAX_SESSIONS)
        before = None if cursor is None else listing.decode_cursor(cursor)
        return self._palace.engine.store.sessions(self._palace.scope, limit=limit, before=before)

    @staticmethod
    def next_cursor(page: list[SessionSummary]) -> str | None:
        """The cursor of the page after ``page`` (None for an empty page)."""
        if not page:
            return None
        return listing.encode_position(page[-1].last_at, page[-1].session)

    def by_day(self) -> list[DayCount]:
        """Live memories this palace sees, counted by creation day (UTC),
        category and store, oldest day first."""
        return self._palace.engine.store.day_counts(self._palace.scope)
