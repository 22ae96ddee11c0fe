"""What the readers of ``mindpalace.formats`` share: the values they give
and small checks on the JSON they read."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from mindpalace.conversations import Message
from mindpalace.errors import ValidationError, shown

__all__ = ["Loaded", "Note", "epoch", "mapping", "text_or_none"]


@dataclass(frozen=True, slots=True)
class Note:
    """One memory read from a notes format (mem0, Markdown)."""

    content: str
    title: str | None = None
    tags: tuple[str, ...] = ()
    category: str | None = None
    created_at: datetime | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    # Where it was read from ("notes/deploy.md"), for error messages.
    origin: str | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Loaded:
    """What a file held, read by its format's reader.

    Attributes:
        format: the format's name (``FORMATS``).
        messages: conversation turns, oldest first (conversation formats).
        notes: memories (mem0, Markdown).
        lines: the lines of a palace export (``export``), imported as they are.
        ignored: entries the reader left out by its format's rules (system
            and tool messages, hidden ones, other branches of a chat, empty
            notes); each reader's docstring says which.
    """

    format: str
    messages: tuple[Message, ...] = ()
    notes: tuple[Note, ...] = ()
    lines: tuple[str, ...] = ()
    ignored: int = 0


def mapping(value: object, where: str, what: str) -> Mapping[str, Any]:
    """``value`` if it is a JSON object.

    Raises:
        ValidationError: naming ``where`` and what was expected there.
    """
    if not isinstance(value, Mapping):
        raise ValidationError("file", shown(value), reason=f"{where}: {what} must be an object")
    return value


def text_or_none(value: object) -> str | None:
    """``value`` if it is a non-blank string, else None."""
    return value if isinstance(value, str) and value.strip() else None


def epoch(value: object, where: str) -> datetime | None:
    """A Unix time in seconds (how ChatGPT stamps messages) as a UTC
    datetime; None for null.

    Raises:
        ValidationError: not a finite number of seconds within years 1-9999.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValidationError(
            "create_time", shown(value), reason=f"{where}: a time must be seconds since 1970"
        )
    try:
        return datetime.fromtimestamp(value, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        raise ValidationError(
            "create_time", shown(value), reason=f"{where}: {shown(value)} is not a time we read"
        ) from None
