"""``palace.timeline``: what a palace holds over time, as its scope sees it.

Sessions (conversations and other episodes) with their span, latest first
and paged by cursor; live memories counted by day, category and store; the
counts of ``Palace.stats``.

Counting reads the engine's warm table of every memory's scope and filter
columns (the one dense recall masks) when there is one: a count over the
whole palace is then a few array operations instead of a scan of every
row (hundreds of milliseconds at 100,000 memories). The mask is recall's,
so exactly the memories the scope sees are counted; without a warm table
(no embedder) the store counts in SQL, with the same result.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from mindpalace import listing
from mindpalace.models import RecallFilters, Stats
from mindpalace.store.base import VectorTable
from mindpalace.store.inspect_rows import DayCount, SessionSummary
from mindpalace.validation import check_limit

if TYPE_CHECKING:
    from mindpalace.view import View

__all__ = ["DayCount", "SessionSummary", "Timeline"]

MAX_SESSIONS = 1000
_DAY = 86_400
_EVERYTHING = RecallFilters(include_archived=True, include_superseded=True)


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
        warm = self._warm()
        if warm is None:
            return self._palace.engine.store.day_counts(self._palace.scope)
        t, visible = warm
        rows = np.flatnonzero(visible & ~t.archived & ~t.superseded)
        if not len(rows):
            return []
        days = np.floor(t.created_at[rows] / _DAY).astype(np.int64)
        first = int(days.min())
        # One integer key per (day, category, store): a flat unique is a
        # plain sort, many times faster than a unique over rows.
        stores = len(t.store_names)
        pairs = stores * len(t.category_names)
        keys = (days - first) * pairs + t.category[rows].astype(np.int64) * stores + t.store[rows]
        groups, counts = np.unique(keys, return_counts=True)
        out = [
            DayCount(
                datetime.fromtimestamp((first + key // pairs) * _DAY, tz=timezone.utc).date(),
                t.category_names[key % pairs // stores],
                t.store_names[key % stores],
                count,
            )
            for key, count in zip(groups.tolist(), counts.tolist(), strict=True)
        ]
        out.sort(key=lambda c: (c.day, c.category, c.store))
        return out

    def stats(self) -> Stats:
        """``Palace.stats``: counts over what this palace sees."""
        palace = self._palace
        warm = self._warm()
        if warm is None:
            return palace.engine.store.stats(palace.scope)
        t, visible = warm
        live = visible & ~t.archived & ~t.superseded

        def count(codes: npt.NDArray[np.int32], names: tuple[str, ...]) -> dict[str, int]:
            found = np.bincount(codes[live], minlength=len(names))
            return {names[i]: int(n) for i, n in enumerate(found.tolist()) if n}

        store = palace.engine.store
        return Stats(
            memories=int(visible.sum()),
            archived=int((visible & t.archived).sum()),
            superseded=int((visible & t.superseded).sum()),
            by_type=count(t.type, t.type_names),
            by_store=count(t.store, t.store_names),
            by_category=count(t.category, t.category_names),
            by_agent=count(t.agent, t.agent_names),
            schema_version=store.schema_version(),
            path=store.location,
        )

    def _warm(self) -> tuple[VectorTable, npt.NDArray[np.bool_]] | None:
        """The warm table and the rows this palace sees, if the engine has one."""
        semantic = self._palace.engine.semantic
        index = semantic.dense() if semantic.available else None
        if index is None:
            return None
        return index.table, index.mask(self._palace.scope, _EVERYTHING)
