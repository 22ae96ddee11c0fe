"""Retention rules: how long memories of a store, category, type or agent
are kept before ``retention.apply`` erases them (``Palace.retention``).

A rule names at most one store, one category and one type, and an agent
(or every agent), and a number of days: a memory matching all it names,
created more than that many days before a run, is erased by the run, with
every older version of it, as ``Palace.erase`` would. Rules are kept in the
palace itself (the ``retention_rules`` table), one per combination of what
they name: setting the same combination again changes its days.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from mindpalace.errors import ValidationError
from mindpalace.models import Category, MemoryType, RecallFilters, StoreKind, parse_enum
from mindpalace.validation import check_agent_id

__all__ = ["MAX_DAYS", "RetentionRule", "parse_days", "rule_key"]

MAX_DAYS = 36_500  # a hundred years


@dataclass(frozen=True, slots=True)
class RetentionRule:
    """Keep what matches for ``days`` days, then erase it.

    Attributes:
        id: the rule's id (``ret_...``).
        days: how many days after its creation a matching memory is kept.
        agent_id: the agent whose memories it reaches; None: every agent's.
        store: only memories of this store (None: any).
        category: only memories of this category (None: any).
        type: only memories of this type (None: any).
        set_by: the agent that set it.
        set_at: when it was set (or its days last changed).
    """

    id: str
    days: int
    agent_id: str | None
    store: StoreKind | None
    category: Category | None
    type: MemoryType | None
    set_by: str
    set_at: datetime

    def cutoff(self, now: datetime) -> datetime:
        """Memories created before this moment have outlived the rule."""
        return now - timedelta(days=self.days)

    def filters(self, now: datetime) -> RecallFilters:
        """What the rule reaches at ``now``: archived memories and older
        versions too (retention keeps nothing past its days)."""
        return RecallFilters(
            agents=() if self.agent_id is None else (self.agent_id,),
            stores=() if self.store is None else (self.store,),
            categories=() if self.category is None else (self.category,),
            types=() if self.type is None else (self.type,),
            created_before=self.cutoff(now),
            include_archived=True,
            include_superseded=True,
        )

    def describe(self) -> str:
        """In words: ``episodic conversation memories of every agent: 90 days``."""
        what = " ".join(v.value for v in (self.store, self.category, self.type) if v is not None)
        whose = "every agent" if self.agent_id is None else f"agent {self.agent_id}"
        return f"{what + ' ' if what else ''}memories of {whose}: {self.days} days"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (None for what the rule does not narrow)."""
        return {
            "id": self.id,
            "days": self.days,
            "agent_id": self.agent_id,
            "store": None if self.store is None else self.store.value,
            "category": None if self.category is None else self.category.value,
            "type": None if self.type is None else self.type.value,
            "set_by": self.set_by,
            "set_at": self.set_at.isoformat(),
        }


def parse_days(value: object) -> int:
    """A rule's days: a whole number from 1 to ``MAX_DAYS``.

    Raises:
        ValidationError: anything else, naming the range.
    """
    days = value
    if isinstance(value, str) and value.strip().isdigit():
        days = int(value.strip())
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= MAX_DAYS:
        raise ValidationError(
            "days", value, reason=f"days must be a whole number from 1 to {MAX_DAYS}"
        )
    return days


def rule_key(
    *, agent_id: object, store: object, category: object, type: object
) -> tuple[str | None, StoreKind | None, Category | None, MemoryType | None]:
    """What a rule names, checked: an agent id (None: every agent) and at
    most one store, category and type.

    Raises:
        ValidationError: a bad agent id, or a store, category or type that
            is not one (naming the valid ones).
    """
    return (
        None if agent_id is None else check_agent_id(agent_id),
        None if store is None else parse_enum(StoreKind, store, "store"),
        None if category is None else parse_enum(Category, category, "category"),
        None if type is None else parse_enum(MemoryType, type, "type"),
    )
