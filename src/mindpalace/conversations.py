"""Conversation messages: the value, and readers for the formats users have.

Formats (``read_messages``):

``jsonl``
    One JSON object a line: ``content`` (or ``text``), and optionally
    ``role``, ``speaker`` (or ``name``), ``session``, ``timestamp`` (or
    ``created_at``; ISO 8601).
``openai``
    A JSON list of chat messages ``{"role", "content", "name"?}``, or an
    object with such a list under ``messages``; content may be a list of
    parts, whose ``text`` parts are joined.
``locomo``
    A LoCoMo conversation file: ``session_N`` turn lists with
    ``session_N_date_time``; a shared photo's caption is kept in the text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from mindpalace.errors import ValidationError
from mindpalace.validation import json_lines, parse_datetime, parse_json, utf8_lines

__all__ = ["FORMATS", "Message", "read_messages", "spoken_date"]

FORMATS = ("auto", "jsonl", "openai", "locomo")


@dataclass(frozen=True, slots=True)
class Message:
    """One turn of a conversation."""

    content: str
    role: str = "user"
    speaker: str | None = None
    session: str | None = None
    created_at: datetime | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    # Where the turn was read from ("chat.jsonl line 7"), for error messages:
    # not part of the turn (not compared, not stored).
    origin: str | None = field(default=None, compare=False)

    @property
    def who(self) -> str:
        """The name shown before the text: the speaker, else the role."""
        return self.speaker or self.role


def spoken_date(moment: datetime) -> str:
    """``1:47 pm on 18 May, 2023``: how people write a time, so that dates in
    questions match it as words."""
    hour = moment.hour % 12 or 12
    half = "am" if moment.hour < 12 else "pm"
    return f"{hour}:{moment.minute:02d} {half} on {moment.day} {moment:%B}, {moment.year}"


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts
        return "\n".join(
            str(part.get("text", "")) for part in content if isinstance(part, Mapping)
        ).strip()
    raise ValidationError("content", content, reason="message content must be text")


def _message(record: Mapping[str, Any], where: str, session: str | None) -> Message:
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
        content=_text(content),
        role=role,
        speaker=str(speaker) if speaker else None,
        session=str(record["session"]) if record.get("session") else session,
        created_at=when,
        metadata=extra,
        origin=where,
    )


_KNOWN = frozenset(
    {"content", "text", "role", "speaker", "name", "session", "timestamp", "created_at"}
)


def _locomo(data: Mapping[str, Any], name: str, file: str) -> Iterator[Message]:
    numbers = sorted(int(m.group(1)) for key in data if (m := re.fullmatch(r"session_(\d+)", key)))
    for number in numbers:
        raw_date = str(data.get(f"session_{number}_date_time", ""))
        try:
            when = datetime.strptime(raw_date.strip(), "%I:%M %p on %d %B, %Y")
        except ValueError:
            raise ValidationError(
                "session_date", raw_date, reason=f"session {number} has no readable date"
            ) from None
        when = when.replace(tzinfo=timezone.utc)
        turns = data[f"session_{number}"]
        for index, turn in enumerate(turns if isinstance(turns, list) else [turns]):
            where = f"{file} session_{number}[{index}]"
            if not isinstance(turn, Mapping) or "text" not in turn or "speaker" not in turn:
                raise ValidationError(
                    "message", turn, reason=f"{where}: a turn is an object with text and speaker"
                )
            text = str(turn["text"])
            if turn.get("blip_caption"):
                text += f" [shared a photo: {turn['blip_caption']}]"
            yield Message(
                content=text,
                role="user",
                speaker=str(turn["speaker"]),
                session=f"{name}:{number}",
                created_at=when,
                metadata={"dia_id": turn.get("dia_id"), "session_number": number},
                origin=where,
            )


def read_messages(
    path: Path | str, *, format: str = "auto", session: str | None = None
) -> list[Message]:
    """Read a file of messages.

    Args:
        path: the file.
        format: one of ``FORMATS``; ``auto`` guesses from the content.
        session: the session of messages that name none (default: the
            file's name; a LoCoMo file's sessions are ``name:N``).

    Raises:
        ValidationError: an unknown format or a malformed file (naming where).
    """
    if format not in FORMATS:
        raise ValidationError("format", format, valid=FORMATS)
    source = Path(path)
    with source.open("rb") as raw:
        text = "".join(utf8_lines(raw, source.name))
    if format == "auto":
        stripped = text.lstrip()
        if stripped.startswith("{") and '"session_1"' in text and '"speaker_a"' in text:
            format = "locomo"
        elif stripped.startswith("[") or (
            stripped.startswith("{") and '"messages"' in text and "\n{" not in stripped
        ):
            format = "openai"
        else:
            format = "jsonl"
    if format == "jsonl":
        return [
            _message(record, f"{source.name} line {number}", session or source.stem)
            for number, record in json_lines(text.splitlines(), source=source.name)
        ]
    data = parse_json(text, str(source), "file")
    if format == "locomo":
        if not isinstance(data, Mapping):
            raise ValidationError("file", str(source), reason="a LoCoMo file is a JSON object")
        return list(_locomo(data, session or source.stem, source.name))
    items = data.get("messages") if isinstance(data, Mapping) else data
    if not isinstance(items, list):
        raise ValidationError(
            "file",
            str(source),
            reason="an openai file is a list of messages (or {messages: [...]})",
        )
    default = session or source.stem
    return [_message(item, f"{source.name} message {i}", default) for i, item in enumerate(items)]
