"""Chat messages as JSON objects: ``jsonl`` and ``openai``.

``jsonl``
    One JSON object a line: ``content`` (or ``text``), and optionally
    ``role``, ``speaker`` (or ``name``), ``session``, ``timestamp`` (or
    ``created_at``; ISO 8601). Other fields are kept as the turn's metadata.
``openai``
    A JSON list of chat messages ``{"role", "content", "name"?}``, or an
    object with such a list under ``messages``; content may be a list of
    parts, whose ``text`` parts are joined.

In both, as in OpenAI's chat API: an assistant message whose ``content``
is null and that has ``tool_calls`` (or the older ``function_call``) is a
turn saying what it called, ``called get_weather({"city": "Paris"})``
(its text first, when it has some too); a ``tool`` (or ``function``)
message is a turn of role ``tool`` whose speaker is the tool's name (from
the call its ``tool_call_id`` answers, else its ``name``, else "tool");
an assistant's ``refusal`` is its text when it has no content. System
prompts (``system`` and ``developer`` messages) are left out, as every
importer leaves them out (``base.SKIPPED_ROLES``), and counted as ignored.
Messages are numbered from 1 in error messages.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from mindpalace.conversations import Message
from mindpalace.errors import ValidationError
from mindpalace.formats.base import SKIPPED_ROLES
from mindpalace.validation import json_lines, parse_datetime

__all__ = ["looks_like_message", "looks_like_openai", "read_jsonl", "read_openai"]

_KNOWN = frozenset(
    {
        "content",
        "text",
        "role",
        "speaker",
        "name",
        "session",
        "timestamp",
        "created_at",
        "tool_calls",
        "function_call",
        "refusal",
    }
)
_CALL = "a tool call is {'function': {'name': ..., 'arguments': ...}}"


def looks_like_message(record: object) -> bool:
    """Whether a JSON value is one message of these formats."""
    return isinstance(record, Mapping) and (
        "content" in record or "text" in record or "tool_calls" in record
    )


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


def read_jsonl(lines: Iterable[str], *, file: str, session: str) -> tuple[list[Message], int]:
    """The messages of a ``jsonl`` file's lines, and how many were left out."""
    reader = _Reader(session)
    for number, record in json_lines(lines, source=file):
        reader.add(record, f"{file} line {number}")
    return reader.turns, reader.ignored


def read_openai(data: Any, *, file: str, session: str) -> tuple[list[Message], int]:
    """The messages of a parsed ``openai`` file, and how many were left out."""
    items = data.get("messages") if isinstance(data, Mapping) else data
    if not isinstance(items, list):
        raise ValidationError(
            "file", file, reason="an openai file is a list of messages (or {messages: [...]})"
        )
    reader = _Reader(session)
    for number, item in enumerate(items, start=1):
        reader.add(item, f"{file} message {number}")
    return reader.turns, reader.ignored


class _Reader:
    """The turns of one file, in order: the tools called so far are
    remembered by call id, to name the tool that answers one."""

    def __init__(self, session: str) -> None:
        self.session = session
        self.turns: list[Message] = []
        self.ignored = 0
        self.tools: dict[str, str] = {}

    def add(self, record: object, where: str) -> None:
        if not isinstance(record, Mapping):
            raise ValidationError("message", record, reason=f"{where}: a message must be an object")
        role = record.get("role")
        if role in SKIPPED_ROLES:
            self.ignored += 1
            return
        self.turns.append(self._message(record, where))

    def _message(self, record: Mapping[str, Any], where: str) -> Message:
        calls = _calls(record, where)
        content = record.get("content", record.get("text"))
        if content is None and isinstance(record.get("refusal"), str):
            content = record["refusal"]
        if content is None and not calls:
            raise ValidationError(
                "content",
                None,
                reason=f"{where}: the message has no content (a message has 'content' or"
                " 'text'; an assistant's may be null beside its 'tool_calls')",
            )
        said = _text(content, where) if content is not None else ""
        text = "\n".join(t for t in (said, *(c[2] for c in calls)) if t)
        stamp = record.get("timestamp", record.get("created_at"))
        try:
            when = parse_datetime(stamp, "timestamp")
        except ValidationError as exc:
            raise ValidationError("timestamp", stamp, reason=f"{where}: {exc}") from None
        role = str(record.get("role") or "user")
        speaker = record.get("speaker") or record.get("name")
        if role in ("tool", "function"):
            called = record.get("tool_call_id")
            speaker = self.tools.get(called, speaker) if isinstance(called, str) else speaker
            speaker = speaker or "tool"
        extra = {k: v for k, v in record.items() if k not in _KNOWN}
        ids = [call_id for call_id, _, _ in calls if call_id is not None]
        if ids:
            extra["tool_call_ids"] = ids
        self.tools.update((call_id, name) for call_id, name, _ in calls if call_id is not None)
        return Message(
            content=text,
            role=role,
            speaker=str(speaker) if speaker else None,
            session=str(record["session"]) if record.get("session") else self.session,
            created_at=when,
            metadata=extra,
            origin=where,
        )


def _calls(record: Mapping[str, Any], where: str) -> list[tuple[str | None, str, str]]:
    """A message's tool calls: (call id, tool name, ``called NAME(ARGUMENTS)``) each."""
    calls = record.get("tool_calls")
    if calls is None and record.get("function_call") is not None:
        calls = [{"function": record["function_call"]}]  # the API's older form
    if calls is None:
        return []
    if not isinstance(calls, list):
        raise ValidationError("tool_calls", calls, reason=f"{where}: 'tool_calls' is a list")
    found = []
    for call in calls:
        if not isinstance(call, Mapping):
            raise ValidationError("tool_calls", call, reason=f"{where}: {_CALL}")
        function = call.get("function")
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            raise ValidationError("tool_calls", call, reason=f"{where}: {_CALL}")
        name = function["name"]
        said = f"called {name}({_arguments(function.get('arguments'))})"
        found.append((call["id"] if isinstance(call.get("id"), str) else None, name, said))
    return found


def _arguments(value: object) -> str:
    """A call's arguments, compact: OpenAI sends them as a JSON string."""
    if value is None:
        return ""
    parsed = value
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except (ValueError, RecursionError):
            return value  # not JSON: as the model wrote it
    try:
        return json.dumps(parsed, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return str(value)


def _text(content: object, where: str) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts
        return "\n".join(
            str(part.get("text", "")) for part in content if isinstance(part, Mapping)
        ).strip()
    raise ValidationError("content", content, reason=f"{where}: message content must be text")
