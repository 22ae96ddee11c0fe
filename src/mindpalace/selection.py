"""What an erasure removes: a ``Selection``, built once at the edge.

One of ``SELECTION_KINDS``:

* ``memory``: one memory (by id) and every older version of it;
* ``agent``: every memory of the acting agent, every version, every
  channel, with the agent's signals and learned-scorer weights;
* ``channel``: every memory of one channel (the acting agent's; every
  agent's through the management view), with that channel's signals and
  learned-scorer weights;
* ``session``: every memory of one conversation session;
* ``entity``: every memory that mentions a named entity (a person, say),
  by its name or one of its aliases;
* ``filter``: every memory of given types, categories or stores, or
  created before a date (at least one of them).

Within a selection, only the memories the view may change count
(``scoping.check_change``): its own agent's (of its channel, for a
peer-facing view), or any agent's through the management view.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mindpalace.errors import ValidationError
from mindpalace.models import Category, MemoryType, StoreKind
from mindpalace.validation import check_id, check_identifier, parse_datetime, parse_many

__all__ = ["SELECTION_KINDS", "Selection", "parse_selection"]

SELECTION_KINDS = ("memory", "agent", "channel", "session", "entity", "filter")
# The kinds that name one thing (an id, a channel...), and what it is called.
_NAMED = {"memory": "id", "channel": "channel", "session": "session", "entity": "name"}
_MAX_NAME_CHARS = 200


@dataclass(frozen=True, slots=True)
class Selection:
    """Which memories an erasure removes (see the module's docstring).

    Build one with ``parse_selection`` or the class methods; a direct
    construction is checked the same way.

    Raises:
        ValidationError: an unknown kind (naming the valid ones), a missing
            or unexpected value, filters with a kind other than ``filter``,
            or a ``filter`` with none.
    """

    kind: str
    value: str | None = None
    types: tuple[MemoryType, ...] = ()
    categories: tuple[Category, ...] = ()
    stores: tuple[StoreKind, ...] = ()
    created_before: datetime | None = None

    def __post_init__(self) -> None:
        if self.kind not in SELECTION_KINDS:
            raise ValidationError(
                "kind", self.kind, valid=SELECTION_KINDS, reason=f"unknown selection {self.kind!r}"
            )
        named = _NAMED.get(self.kind)
        if named is not None and not (isinstance(self.value, str) and self.value.strip()):
            raise ValidationError(
                named, self.value, reason=f"erasing a {self.kind} needs its {named}"
            )
        if named is None and self.value is not None:
            raise ValidationError(
                "value",
                self.value,
                reason=f"the {self.kind} selection takes no value; kinds that do: "
                + ", ".join(f"{k} ({v})" for k, v in _NAMED.items()),
            )
        filtered = bool(self.types or self.categories or self.stores or self.created_before)
        if self.kind == "filter" and not filtered:
            raise ValidationError(
                "filter",
                None,
                reason="a filter selection needs at least one of: types, categories, stores,"
                " created_before",
            )
        if self.kind != "filter" and filtered:
            raise ValidationError(
                "kind",
                self.kind,
                reason="types, categories, stores and created_before go with kind 'filter' only",
            )

    @classmethod
    def memory(cls, memory_id: str) -> Selection:
        """One memory and its older versions."""
        return parse_selection("memory", memory_id)

    @classmethod
    def agent(cls) -> Selection:
        """Everything of the acting agent."""
        return parse_selection("agent")

    @classmethod
    def channel(cls, name: str) -> Selection:
        """Everything of one channel."""
        return parse_selection("channel", name)

    @classmethod
    def session(cls, session: str) -> Selection:
        """Every memory of one session."""
        return parse_selection("session", session)

    @classmethod
    def entity(cls, name: str) -> Selection:
        """Every memory mentioning a named entity."""
        return parse_selection("entity", name)

    @classmethod
    def matching(
        cls,
        *,
        types: str | Iterable[str | MemoryType] | None = None,
        categories: str | Iterable[str | Category] | None = None,
        stores: str | Iterable[str | StoreKind] | None = None,
        created_before: datetime | str | None = None,
    ) -> Selection:
        """Every memory of these types, categories or stores, created before a date."""
        return parse_selection(
            "filter",
            types=types,
            categories=categories,
            stores=stores,
            created_before=created_before,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, as a receipt keeps it: a person's name (``entity``) as
        ``sha256:`` and its digest, never the name itself."""
        out: dict[str, Any] = {"kind": self.kind}
        if self.value is not None:
            out["value"] = (
                "sha256:" + hashlib.sha256(self.value.encode("utf-8")).hexdigest()
                if self.kind == "entity"
                else self.value
            )
        if self.types:
            out["types"] = [t.value for t in self.types]
        if self.categories:
            out["categories"] = [c.value for c in self.categories]
        if self.stores:
            out["stores"] = [s.value for s in self.stores]
        if self.created_before is not None:
            out["created_before"] = self.created_before.isoformat()
        return out


def parse_selection(
    kind: object,
    value: object = None,
    *,
    types: object = None,
    categories: object = None,
    stores: object = None,
    created_before: object = None,
) -> Selection:
    """A ``Selection`` from what a caller typed.

    Raises:
        ValidationError: naming the valid kinds, types, categories or
            stores, or what is missing.
    """
    if not isinstance(kind, str) or kind.strip().lower() not in SELECTION_KINDS:
        raise ValidationError(
            "kind", kind, valid=SELECTION_KINDS, reason=f"unknown selection {kind!r}"
        )
    name = kind.strip().lower()
    text: str | None = None
    field = _NAMED.get(name, "value")
    if name in _NAMED and (value is None or value == ""):
        raise ValidationError(field, value, reason=f"erasing a {name} needs its {field}")
    if value is not None and value != "":
        if name == "memory":
            text = check_id(value, field)
        elif name == "entity":
            if not isinstance(value, str) or not value.strip():
                raise ValidationError(field, value, reason="erasing an entity needs its name")
            if len(value) > _MAX_NAME_CHARS:
                raise ValidationError(
                    field, value, reason=f"a name has at most {_MAX_NAME_CHARS} characters"
                )
            text = value.strip()
        else:
            text = check_identifier(value, field)
    return Selection(
        kind=name,
        value=text,
        types=parse_many(MemoryType, types, "types"),
        categories=parse_many(Category, categories, "categories"),
        stores=parse_many(StoreKind, stores, "stores"),
        created_before=parse_datetime(created_before, "created_before"),
    )
