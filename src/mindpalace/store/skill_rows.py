"""The value types of the skills part of the store (store/skills_sql.py):
who owns a skill, what a write carries, and what reads return.

Their own module so that the ``Store`` protocol (base.py) and the SQL that
implements it (skills_sql.py) both import them, neither the other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mindpalace.models import Memory, NewMemory, Visibility

__all__ = [
    "SkillLink",
    "SkillOwner",
    "SkillRow",
    "SkillUsage",
    "SkillWrite",
    "UsageSignal",
]


@dataclass(frozen=True, slots=True)
class SkillOwner:
    """The scope a skill is written in: whose it is and who may see it."""

    agent_id: str
    visibility: Visibility = Visibility.ISOLATED
    group: str | None = None
    channel: str | None = None

    def params(self) -> list[Any]:
        """Values for ``agent_id, visibility, group_name, channel`` columns."""
        return [self.agent_id, self.visibility.value, self.group or "", self.channel or ""]


@dataclass(frozen=True, slots=True)
class SkillWrite:
    """One skill to insert or update (by name, in the owner's scope).

    ``memory_id`` is used only when the skill is new.
    """

    name: str
    digest: str
    origin: str | None
    memory: NewMemory
    memory_id: str


@dataclass(frozen=True, slots=True)
class SkillRow:
    """A stored skill: its memory, name, definition digest and origin file."""

    memory: Memory
    name: str
    digest: str
    origin: str | None


@dataclass(frozen=True, slots=True)
class SkillLink:
    """A correlation edge between two visible skills."""

    src_id: str
    src_name: str
    dst_id: str
    dst_name: str
    kind: str
    weight: float


@dataclass(frozen=True, slots=True)
class SkillUsage:
    """How often a skill was activated and fetched, and when last."""

    activations: int = 0
    gets: int = 0
    last_used: datetime | None = None


@dataclass(frozen=True, slots=True)
class UsageSignal:
    """A recorded usage event."""

    seq: int
    kind: str
    agent_id: str
    at: datetime
    memory_id: str | None
    query: str | None
    data: Mapping[str, Any]
