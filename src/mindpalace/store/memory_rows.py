"""Values the memory and signal roles (roles.py, roles_palace.py) take and
return: value types only, so that the protocols and the SQL that implements
them both import them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from mindpalace.models import Memory

__all__ = ["AddResult", "Signal"]


@dataclass(frozen=True, slots=True)
class AddResult:
    """What ``Store.add`` did: the stored memory, and whether it is new."""

    memory: Memory
    created: bool


@dataclass(frozen=True, slots=True)
class Signal:
    """One event of the signals table, kept apart from the memories so that
    reading never changes them.

    ``kind`` is ``store`` (a write and its source), ``recall`` (a query and
    what it returned), or ``feedback`` (a hit judged useful or not).
    ``data`` holds the kind's features as JSON-ready values. ``seq`` is 0
    until stored.
    """

    kind: str
    agent_id: str
    at: datetime
    channel: str | None = None
    memory_id: str | None = None
    query: str | None = None
    data: Mapping[str, Any] = field(default_factory=dict)
    seq: int = 0
