"""Chat messages as JSON objects: ``jsonl`` and ``openai``.

``jsonl``
    One JSON object a line: ``content`` (or ``text``), and optionally
    ``role``, ``speaker`` (or ``name``), ``session``, ``timestamp`` (or
    ``created_at``; ISO 8601). Other fields are kept as the turn's metadata.
``openai``
    A JSON list of chat messages ``{"role", "content", "name"?}``, or an
    object with such a list under ``messages``; content may be a list of
    parts, whose ``text`` parts are joined.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from mindpalace.conversations import Message
from mindpalace.errors import ValidationError
from mindpalace.validation import json_lines, parse_datetime

__all__ = ["looks_like_message", "looks_like_openai", "read_jsonl", "read_openai"]

_KNOWN = frozenset(
    {"content", "text", "role", "speaker", "name", "session", "timestamp", "created_at"}
)


def looks_like_message(record: object) -> bool:
    """Whether a JSON value is one message of these formats."""
    return isinstance(record, Mapping) and ("content" in record or "text" in record)


def looks_like_openai(data: object) -> bool:
    """Whether a whole JSON document is an ``openai`` message list."""
    if isinstance(data, Mapping):
        return isinstance(data.get("messages"), list)
    return (
        isinstance(data, list)
        and bool(data)
        and isinstance(data[0], Mapping)
        and ("role" in data[0] or "content" in data[0])
    )


def _text(content: object, where: str) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts
        return "\n".join(
            str(part.get("text", "")) for part in content if isinstance(part, Mapping)
        ).strip()
    raise ValidationError("content", content, reason=f"{where}: message content must be text")


def message(record: object, where: str, session: str | None) -> Message:
    """One message of these formats.

    Raises:
        ValidationError: naming ``where`` and what is wrong.
    """
    if not isinstance(record, Mapping):
        raise ValidationError("message", record, reason=f"{where}: a message must be an object")
    content = record.get("content", record.get("text"))
    if content is None:
        raise ValidationError("content", None, reason=f"{where}: the message has no content")
    stamp = record.get("timestamp", record.get("created_at"))
    try:
        when = parse_datetime(stamp, "timestamp")
    except ValidationError as exc:
        raise ValidationError("timestamp", stamp, reason=f"{where}: {exc}") from None
    role = str(record.get("role") or "user")
    speaker = record.get("speaker") or record.get("name")
    extra = {k: v for k, v in record.items() if k not in _KNOWN}
    return Message(
        content=_text(content, where),
        role=role,
        speaker=str(speaker) if speaker else None,
        session=str(record["session"]) if record.get("session") else session,
        created_at=when,
        metadata=extra,
        origin=where,
    )


def read_jsonl(lines: Iterable[str], *, file: str, session: str) -> list[Message]:
    """The messages of a ``jsonl`` file's lines."""
    return [
        message(record, f"{file} line {number}", session)
        for number, record in json_lines(lines, source=file)
    ]


def read_openai(data: Any, *, file: str, session: str) -> list[Message]:
    """The messages of a parsed ``openai`` file."""
    items = data.get("messages") if isinstance(data, Mapping) else data
    if not isinstance(items, list):
        raise ValidationError(
            "file", file, reason="an openai file is a list of messages (or {messages: [...]})"
        )
    return [message(item, f"{file} message {i}", session) for i, item in enumerate(items)]
