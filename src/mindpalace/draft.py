"""What a write asks for, as values: ``Draft`` (a memory to remember) and
``Changes`` (an update of one).

Each is defined once, with its validation, and built once at the edge that
received the request (``Palace.remember`` / ``update``'s keyword arguments,
a CLI command line, an MCP or REST call, a record of ``remember_many`` or an
import); the write path (``writing.remember``, ``writing.change``) takes
the value as it is. Their fields are the names every surface uses.

A rule that needs the palace (the content limit of its settings, the
channel its scope writes into, the entities its extractor finds) is
applied when the draft is written; every other rule is applied here, on
construction, so an invalid request fails before anything is read.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, MISSING, dataclass, field, fields
from datetime import datetime
from typing import Any, cast

from mindpalace.errors import ValidationError, shown
from mindpalace.models import (
    Category,
    MemoryKind,
    MemoryType,
    Source,
    StoreKind,
    Visibility,
    parse_enum,
)
from mindpalace.validation import (
    check_content,
    check_context,
    check_identifier,
    check_kind,
    check_metadata,
    check_tags,
    check_title,
    check_unit,
    parse_datetime,
)

__all__ = ["DRAFT_FIELDS", "KEEP", "UPDATE_FIELDS", "Changes", "Draft", "Keep"]

# Longer text fails when written, against the palace's own limit
# (``Settings.max_content_chars``); a value alone has no palace to ask.
_NO_LIMIT = sys.maxsize

# One rule per field, shared by ``Draft`` and ``Changes``: each takes what a
# caller gave and returns the stored form, or raises ``ValidationError``.
# The rules that tie fields together (group and visibility, the validity
# interval, kind with project and completed) are ``Draft``'s alone.
_RULES: dict[str, Callable[[object], object]] = {
    "content": lambda v: check_content(v, max_chars=_NO_LIMIT),
    "title": check_title,
    "context": lambda v: check_context(v, max_chars=_NO_LIMIT),
    "session": lambda v: check_identifier(v, "session", optional=True),
    "type": lambda v: parse_enum(MemoryType, v, "type"),
    "store": lambda v: parse_enum(StoreKind, v, "store"),
    "category": lambda v: parse_enum(Category, v, "category"),
    "tags": lambda v: check_tags(cast(Any, v)),
    "source": lambda v: parse_enum(Source, v, "source"),
    "visibility": lambda v: parse_enum(Visibility, v, "visibility"),
    "group": lambda v: check_identifier(v, "group", optional=True),
    "channel": lambda v: check_identifier(v, "channel", optional=True),
    "constraint": bool,
    "confidence": lambda v: check_unit(v, "confidence"),
    "valid_from": lambda v: parse_datetime(v, "valid_from"),
    "valid_to": lambda v: parse_datetime(v, "valid_to"),
    "created_at": lambda v: parse_datetime(v, "created_at"),
    "metadata": check_metadata,
    "identity": lambda v: None if v is None else str(v),
}


def _unknown(given: Mapping[str, object], valid: tuple[str, ...], what: str) -> None:
    """Refuse a field name that is not one of ``valid``."""
    if given.keys() <= set(valid):
        return
    unknown = sorted(shown(k) if not isinstance(k, str) else k for k in given)
    unknown = [k for k in unknown if k not in valid]
    if unknown:
        raise ValidationError(
            "field", unknown[0], valid=sorted(valid), reason=f"{unknown[0]!r} {what}"
        )


@dataclass(frozen=True, slots=True)
class Draft:
    """A memory to remember, validated on construction.

    ``Draft("text", category="decision")`` with the types below, or
    ``Draft.of(content, **fields)`` with what a request carried (strings for
    enums, ISO 8601 for times, a comma-separated string for tags): either
    way every field holds its stored form afterwards, and ``kind`` is never
    None. ``Palace.remember`` documents each field.

    Raises:
        ValidationError: an invalid field (naming the valid values), a group
            without visibility group or the other way round, ``valid_to``
            before ``valid_from``, ``completed`` on a kind other than issue.
    """

    content: str
    _: KW_ONLY
    title: str | None = None
    context: str | None = None
    session: str | None = None
    type: MemoryType = MemoryType.UNKNOWN
    store: StoreKind = StoreKind.SEMANTIC
    category: Category = Category.FACT
    tags: tuple[str, ...] = ()
    source: Source = Source.MANUAL
    visibility: Visibility = Visibility.ISOLATED
    group: str | None = None
    channel: str | None = None
    constraint: bool = False
    confidence: float = 1.0
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    created_at: datetime | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    # None: message for category conversation, memory otherwise.
    kind: MemoryKind | None = None
    project: str | None = None
    completed: bool | None = None
    # What besides the text makes two drafts one memory (a conversation
    # turn's session and time; a part's place in its note): not an argument
    # of ``Palace.remember``, but of ``remember_many``'s records.
    identity: str | None = None

    def __post_init__(self) -> None:
        for name, rule in _RULES.items():
            value = getattr(self, name)
            if value is not _DEFAULTS.get(name, KEEP):  # a default is in stored form
                object.__setattr__(self, name, rule(value))
        if self.visibility is Visibility.GROUP and self.group is None:
            raise ValidationError(
                "group", self.group, reason="visibility 'group' needs a group name"
            )
        if self.visibility is not Visibility.GROUP and self.group is not None:
            raise ValidationError(
                "group",
                self.group,
                reason="group is only meaningful with visibility 'group',"
                f" not {self.visibility.value!r}",
            )
        if (
            self.valid_from is not None
            and self.valid_to is not None
            and self.valid_to < self.valid_from
        ):
            raise ValidationError("valid_to", self.valid_to, reason="valid_to is before valid_from")
        kind, project, completed = check_kind(
            self.kind, category=self.category, project=self.project, completed=self.completed
        )
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "project", project)
        object.__setattr__(self, "completed", completed)

    @classmethod
    def of(cls, content: object, **given: object) -> Draft:
        """A draft from a request's values, named by ``DRAFT_FIELDS``.

        Raises:
            ValidationError: an unknown field name (naming the valid ones),
                or an invalid value.
        """
        _unknown(given, DRAFT_FIELDS, "is not a field of a memory")
        # The values are checked, and converted, by __post_init__.
        return cast(Any, cls)(content, **given)  # type: ignore[no-any-return]

    @property
    def memory_kind(self) -> MemoryKind:
        """``kind``, resolved (never None after construction)."""
        return self.kind or MemoryKind.MEMORY


_DEFAULTS = {f.name: f.default for f in fields(Draft) if f.default is not MISSING}

# Every field of a draft, in order: the names ``Palace.remember``,
# ``remember_many``'s records, the CLI, MCP and REST use.
DRAFT_FIELDS = tuple(f.name for f in fields(Draft))


class Keep(enum.Enum):
    """An update field's default: keep the stored value."""

    KEEP = "keep"


KEEP = Keep.KEEP


@dataclass(frozen=True, slots=True, kw_only=True)
class Changes:
    """An update of a memory: the fields to change, each validated on
    construction by the rule ``Draft`` applies to it; the others ``KEEP``
    the stored value. None clears title, group, validity, tags (to none)
    and metadata (to ``{}``); so does an empty string or list, as every
    surface that cannot send None (a command line, a form) sends.

    The rules that tie fields together are applied to the next version as
    a whole (``writing.change``), as for any draft.

    Raises:
        ValidationError: an invalid field (naming the valid values).
    """

    content: str | Keep = KEEP
    title: str | Keep | None = KEEP
    tags: tuple[str, ...] | Keep = KEEP
    category: Category | Keep = KEEP
    type: MemoryType | Keep = KEEP
    store: StoreKind | Keep = KEEP
    visibility: Visibility | Keep = KEEP
    group: str | Keep | None = KEEP
    valid_from: datetime | Keep | None = KEEP
    valid_to: datetime | Keep | None = KEEP
    metadata: Mapping[str, Any] | Keep = KEEP

    def __post_init__(self) -> None:
        for name in UPDATE_FIELDS:
            value = getattr(self, name)
            if value is not KEEP:
                object.__setattr__(self, name, _RULES[name](value))

    @classmethod
    def of(cls, **given: object) -> Changes:
        """Changes from a request's values, named by ``UPDATE_FIELDS``
        (``KEEP`` keeps, None clears).

        Raises:
            ValidationError: a field that cannot be updated (naming those
                that can), or an invalid value.
        """
        _unknown(given, UPDATE_FIELDS, "cannot be updated")
        return cast(Any, cls)(**given)  # type: ignore[no-any-return]

    @classmethod
    def given(cls, **sent: object) -> Changes:
        """Changes from a surface where a field not sent arrives as None (a
        command line, an MCP or REST call): None keeps; an empty string or
        list clears.

        Raises:
            ValidationError: as ``of``.
        """
        return cls.of(**{name: value for name, value in sent.items() if value is not None})

    def changed(self) -> dict[str, object]:
        """The changed fields and their new values."""
        return {name: value for name in UPDATE_FIELDS if (value := getattr(self, name)) is not KEEP}


# What an update may change, in order.
UPDATE_FIELDS = tuple(f.name for f in fields(Changes))
