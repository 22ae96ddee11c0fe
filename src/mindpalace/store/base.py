"""The storage protocol every backend implements.

Scope is a mandatory argument of every read: a backend applies it inside the
query, so a memory outside the caller's scope can never be returned, counted
or ranked. Every write is one transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from mindpalace.models import Memory, NewMemory, RecallFilters, Scope, Stats

__all__ = ["AddResult", "ImportReport", "Store", "TextMatch"]


@dataclass(frozen=True, slots=True)
class AddResult:
    """What ``Store.add`` did: the stored memory, and whether it is new."""

    memory: Memory
    created: bool


@dataclass(frozen=True, slots=True)
class TextMatch:
    """A memory matched by full-text search, with its raw BM25 score (higher is better)."""

    memory: Memory
    bm25: float


@dataclass(frozen=True, slots=True)
class ImportReport:
    """Outcome of an import: rows written and rows already present."""

    inserted: int
    skipped: int


class Store(Protocol):
    """A palace's storage: memories, their text index, and their scope rules."""

    @property
    def location(self) -> str:
        """Where the data lives (a file path or a URL without password)."""
        ...

    def schema_version(self) -> int:
        """The latest migration applied."""
        ...

    def close(self) -> None:
        """Release connections. Idempotent."""
        ...

    def add(self, new: NewMemory, *, memory_id: str, now: datetime) -> AddResult:
        """Write ``new`` unless its content hash already exists in its scope.

        When it exists, the existing memory is returned with its strength
        bumped (and un-archived); no second row is written.
        """
        ...

    def get(self, memory_id: str, scope: Scope) -> Memory | None:
        """The memory with this id if ``scope`` may see it."""
        ...

    def list_memories(
        self, scope: Scope, filters: RecallFilters, *, limit: int, offset: int = 0
    ) -> list[Memory]:
        """Visible memories matching ``filters``, newest first."""
        ...

    def search_text(
        self, terms: Sequence[str], scope: Scope, filters: RecallFilters, *, limit: int
    ) -> list[TextMatch]:
        """BM25 full-text search for any of ``terms`` (already normalised words).

        Ties are broken by newest first, then id, so the order is deterministic.
        """
        ...

    def archive(self, memory_id: str, *, owner: str | None, now: datetime) -> bool:
        """Soft-delete: mark archived. False if no such memory owned by ``owner``
        (``None``: any owner, for management calls)."""
        ...

    def delete(self, memory_id: str, *, owner: str | None) -> bool:
        """Hard-delete the row and its index entries. False if no such memory
        owned by ``owner`` (``None``: any owner)."""
        ...

    def stats(self, scope: Scope) -> Stats:
        """Counts over what ``scope`` can see."""
        ...

    def iter_memories(self, scope: Scope, *, batch: int = 500) -> Iterator[Memory]:
        """Every visible memory (archived and superseded included), oldest first."""
        ...

    def import_memories(self, memories: Iterable[Memory]) -> ImportReport:
        """Write complete memories as they are (ids and timestamps kept), in one
        transaction. A memory whose id or scoped content hash exists is skipped."""
        ...
