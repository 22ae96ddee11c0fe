"""What the readers of ``mindpalace.formats`` share: the values they give,
the rules they all follow, and small checks on the JSON they read.

The rules: a system prompt is left out by every importer (``SKIPPED_ROLES``)
and counted as ignored; entries are numbered from 1 in error messages; a
chat export's conversation is the session ``"{title} ({short id})"``
(``SessionNames``), so that the inspector, ``recent`` and
``search-messages`` show what it was about.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from mindpalace.conversations import Message
from mindpalace.errors import ValidationError, shown
from mindpalace.validation import MAX_IDENTIFIER_CHARS

__all__ = [
    "SKIPPED_ROLES",
    "Loaded",
    "Note",
    "SessionNames",
    "epoch",
    "mapping",
    "text_or_none",
]

#: Roles every importer leaves out (and counts as ignored): a system prompt
#: (``system``, or OpenAI's newer ``developer``) is an instruction to a
#: model, not something said, and the same prompt heading every chat would
#: be stored once a conversation.
SKIPPED_ROLES = ("system", "developer")
#: How much of a conversation's id its session name shows.
SHORT_ID = 8
# What a session name may not hold (``validation.check_identifier``).
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f\ud800-\udfff]")


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
            prompts, ChatGPT's tool and hidden messages, other branches of a
            chat, empty notes); each reader's docstring says which.
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


class SessionNames:
    """The sessions of one file's conversations: ``"{title} ({short id})"``
    (the title on one line, cut to fit a session name's 128 characters; the
    id's first ``SHORT_ID`` characters), else the id when there is no title.
    Where two conversations' names would be the same, the second shows its
    whole id. A conversation's turns keep its whole id too
    (``Message.conversation_id``): what makes a turn the same turn when the
    conversation is renamed and imported again."""

    def __init__(self) -> None:
        self._taken: dict[str, str] = {}

    def name(self, conversation_id: str, title: str | None, *, whole: bool = False) -> str:
        """The session of the conversation ``conversation_id`` titled
        ``title``; ``whole``: show the whole id (an id made up by the reader)."""
        shown_id = conversation_id if whole else conversation_id[:SHORT_ID]
        label = _label(conversation_id, title, shown_id)
        if self._taken.setdefault(label, conversation_id) != conversation_id:
            label = _label(conversation_id, title, conversation_id)
            self._taken.setdefault(label, conversation_id)
        return label


def _label(conversation_id: str, title: str | None, shown_id: str) -> str:
    words = " ".join(_UNPRINTABLE.sub(" ", title).split()) if title else ""
    suffix = f" ({shown_id})"
    room = MAX_IDENTIFIER_CHARS - len(suffix)
    if not words or room < SHORT_ID:
        return conversation_id
    if len(words) > room:  # cut at a word's end where one is near
        cut = words[: room - 1]
        space = cut.rfind(" ")
        words = (cut[:space] if space > room // 2 else cut).rstrip() + "\u2026"
    return words + suffix
