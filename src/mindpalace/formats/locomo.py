"""LoCoMo conversation files (``locomo``): ``session_N`` turn lists, each
dated by ``session_N_date_time``; a shared photo's caption is kept in the
turn's text. A file's sessions are ``NAME:N``; turns are numbered from 1
in error messages."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from datetime import datetime, timezone
from typing import Any

from mindpalace.conversations import Message
from mindpalace.errors import ValidationError

__all__ = ["looks_like_locomo", "read_locomo"]

_SESSION = re.compile(r"session_(\d+)")


def looks_like_locomo(data: object) -> bool:
    """Whether a whole JSON document is a LoCoMo conversation."""
    return isinstance(data, Mapping) and "session_1" in data and "speaker_a" in data


def read_locomo(data: Any, *, name: str, file: str) -> list[Message]:
    """The turns of a parsed LoCoMo file, sessions in order."""
    if not isinstance(data, Mapping):
        raise ValidationError("file", file, reason="a LoCoMo file is a JSON object")
    return list(_turns(data, name, file))


def _turns(data: Mapping[str, Any], name: str, file: str) -> Iterator[Message]:
    numbers = sorted(int(m.group(1)) for key in data if (m := _SESSION.fullmatch(key)))
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
        for index, turn in enumerate(turns if isinstance(turns, list) else [turns], start=1):
            where = f"{file} session_{number} turn {index}"
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
