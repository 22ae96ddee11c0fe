"""What a recall asks for, as one value: ``RecallRequest``.

Defined once, with its validation, and built once at the edge that
received the request (``Palace.recall``'s keyword arguments, a CLI command
line, an MCP or REST call, a framework retriever, the inspector's search);
the read path (``reading.recall``) takes the value as it is. Its fields
are the names every surface uses, and ``FILTER_FIELDS`` (the filters
among them) are the names a listing (``Palace.memories``) shares with
recall: tests hold each surface's parameters to these tuples, so no
surface can spell a filter its own way.

Every rule is applied on construction, so an invalid request fails before
anything is read, naming the valid values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, fields
from datetime import datetime
from typing import Any, cast

from mindpalace.errors import ValidationError, shown
from mindpalace.listing import recall_filters
from mindpalace.models import Category, MemoryKind, MemoryType, RecallFilters, StoreKind, Visibility
from mindpalace.retrieval.modes import DEFAULT_MODE, ModePrior, check_mode
from mindpalace.validation import check_limit, check_query

__all__ = ["FILTER_FIELDS", "MAX_RECALL_LIMIT", "RECALL_FIELDS", "RecallRequest"]

MAX_RECALL_LIMIT = 100

# The fields that narrow which memories are searched (the rest say how).
_HOW = ("query", "limit", "expand", "mode")


@dataclass(frozen=True, slots=True)
class RecallRequest:
    """A recall, validated on construction.

    ``RecallRequest("why sqlite", categories=(Category.DECISION,))`` with
    the types below, or ``RecallRequest.of(query, **fields)`` with what a
    request carried (strings for enums, a comma-separated string or a list
    for many, ISO 8601 for times): either way every field holds its stored
    form afterwards (tuples, enum members, aware datetimes, a mode's name).
    ``Palace.recall`` documents each field.

    Raises:
        ValidationError: an invalid query, limit (1-100), mode or filter,
            naming the valid values.
    """

    query: str
    _: KW_ONLY
    limit: int = 10
    types: tuple[MemoryType, ...] = ()
    stores: tuple[StoreKind, ...] = ()
    categories: tuple[Category, ...] = ()
    tags: tuple[str, ...] = ()
    visibility: tuple[Visibility, ...] = ()
    include_archived: bool = False
    created_after: datetime | None = None
    created_before: datetime | None = None
    expand: bool = True
    # None is taken for the default mode.
    mode: str = DEFAULT_MODE
    kinds: tuple[MemoryKind, ...] = ()
    projects: tuple[str, ...] = ()
    completed: bool | None = None
    agents: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        put = object.__setattr__
        put(self, "query", check_query(self.query))
        check_limit(self.limit, low=1, high=MAX_RECALL_LIMIT)
        put(self, "mode", check_mode(self.mode).name)
        put(self, "expand", bool(self.expand))
        # The one validation of filters, shared with listings.
        valid = recall_filters(**{name: getattr(self, name) for name in FILTER_FIELDS})
        for name in FILTER_FIELDS:
            put(self, name, getattr(valid, _STORED.get(name, name)))

    @classmethod
    def of(cls, query: object, **given: object) -> RecallRequest:
        """A request from a caller's values, named by ``RECALL_FIELDS``.

        Raises:
            ValidationError: an unknown field name (naming the valid ones),
                or an invalid value.
        """
        _check_names(given)
        # The values are checked, and converted, by __post_init__.
        return cast(Any, cls)(query, **given)  # type: ignore[no-any-return]

    @property
    def filters(self) -> RecallFilters:
        """The filters, as the store applies them inside every search."""
        stored = {_STORED.get(name, name): getattr(self, name) for name in FILTER_FIELDS}
        return RecallFilters(**stored)

    @property
    def prior(self) -> ModePrior:
        """The mode's prior over categories, stores and types."""
        return check_mode(self.mode)


def _check_names(given: Mapping[str, object]) -> None:
    """Refuse a field name that is not one of ``RECALL_FIELDS``."""
    unknown = sorted(
        shown(k) if not isinstance(k, str) else k for k in given if k not in RECALL_FIELDS
    )
    if unknown:
        raise ValidationError(
            "field",
            unknown[0],
            valid=sorted(RECALL_FIELDS),
            reason=f"{unknown[0]!r} is not an argument of recall",
        )


# Every field of a request, in order: the names ``Palace.recall`` takes and
# the CLI, MCP and REST spell the same way.
RECALL_FIELDS = tuple(f.name for f in fields(RecallRequest))

# The filters among them, shared with ``Palace.memories`` (which adds
# sources, sessions and superseded versions of its own).
FILTER_FIELDS = tuple(name for name in RECALL_FIELDS if name not in _HOW)

# A filter the store's ``RecallFilters`` names otherwise.
_STORED = {"visibility": "visibilities"}
