"""What a feature may ask of a palace view: the ``View`` protocol.

The features built on recall (the recall family, personal data, transcripts,
backup, signals, skills, the graph view) take a view through this protocol:
its engine, its scope and clock, and the public remember / recall / list /
get. ``Palace`` implements it; nothing here reaches into a palace's
private members, so the features sit below the facade with no import circle.
The facade's own writes (palace_writes.py) are written against it too; each
runs in the view's ``seat`` (seat.py). ``tests/test_views.py`` holds every
method here to ``Palace``'s signature, so the two cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, Protocol

from mindpalace.engine import Engine
from mindpalace.models import (
    Category,
    HitList,
    Memory,
    MemoryKind,
    MemoryType,
    Scope,
    Source,
    StoreKind,
    Visibility,
)
from mindpalace.seat import Seat

__all__ = ["View"]


class View(Protocol):
    """One scope's view of an engine (see ``Palace`` for each method)."""

    @property
    def engine(self) -> Engine:
        """The shared engine: store, settings, semantic index, extractor."""

    @property
    def scope(self) -> Scope:
        """Whose eyes the view looks through."""

    @property
    def seat(self) -> Seat:
        """The engine and the scope together, as operations take them."""

    def now(self) -> datetime:
        """The engine's clock."""

    def get(self, memory_id: str) -> Memory:
        """The visible memory with this id."""

    def remember(
        self,
        content: str,
        *,
        title: str | None = None,
        context: str | None = None,
        session: str | None = None,
        type: str | MemoryType = MemoryType.UNKNOWN,
        store: str | StoreKind = StoreKind.SEMANTIC,
        category: str | Category = Category.FACT,
        tags: Iterable[str] | str | None = None,
        source: str | Source = Source.MANUAL,
        visibility: str | Visibility = Visibility.ISOLATED,
        group: str | None = None,
        channel: str | None = None,
        constraint: bool = False,
        confidence: float = 1.0,
        valid_from: datetime | str | None = None,
        valid_to: datetime | str | None = None,
        created_at: datetime | str | None = None,
        metadata: Mapping[str, Any] | None = None,
        kind: str | MemoryKind | None = None,
        project: str | None = None,
        completed: bool | None = None,
    ) -> Memory:
        """Store a memory in this scope."""

    def recall(
        self,
        query: str,
        *,
        limit: int = 10,
        types: str | Iterable[str | MemoryType] | None = None,
        stores: str | Iterable[str | StoreKind] | None = None,
        categories: str | Iterable[str | Category] | None = None,
        tags: Iterable[str] | str | None = None,
        visibility: str | Iterable[str | Visibility] | None = None,
        include_archived: bool = False,
        created_after: datetime | str | None = None,
        created_before: datetime | str | None = None,
        expand: bool = True,
        mode: str | None = None,
        kinds: str | Iterable[str | MemoryKind] | None = None,
        projects: Iterable[str] | None = None,
        completed: bool | None = None,
        agents: Iterable[str] | str | None = None,
    ) -> HitList:
        """The visible memories most relevant to ``query``."""

    def memories(
        self,
        *,
        limit: int = 50,
        offset: int = 0,
        types: str | Iterable[str | MemoryType] | None = None,
        stores: str | Iterable[str | StoreKind] | None = None,
        categories: str | Iterable[str | Category] | None = None,
        tags: Iterable[str] | str | None = None,
        visibility: str | Iterable[str | Visibility] | None = None,
        sources: str | Iterable[str | Source] | None = None,
        sessions: Iterable[str] | None = None,
        include_archived: bool = False,
        include_superseded: bool = False,
        created_after: datetime | str | None = None,
        created_before: datetime | str | None = None,
        kinds: str | Iterable[str | MemoryKind] | None = None,
        projects: Iterable[str] | None = None,
        completed: bool | None = None,
        cursor: str | None = None,
        agents: Iterable[str] | str | None = None,
    ) -> list[Memory]:
        """Visible memories, newest first."""
