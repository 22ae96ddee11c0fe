"""Conversation messages: the value a turn is (``Message``), and how a
turn's time is written in words (``spoken_date``). The readers for the
formats users have are in ``mindpalace.formats``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

__all__ = ["Message", "clock_time", "spoken_date", "zone_name"]


@dataclass(frozen=True, slots=True)
class Message:
    """One turn of a conversation."""

    content: str
    role: str = "user"
    speaker: str | None = None
    session: str | None = None
    created_at: datetime | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    #: The id of the conversation the turn belongs to, where its session is
    #: a name for people instead (an export's ``"{title} ({short id})"``):
    #: a turn is the same turn by this id and its time, so a conversation
    #: renamed and imported again adds nothing. None: the session is the id.
    conversation_id: str | None = None
    # Where the turn was read from ("chat.jsonl line 7"), for error messages:
    # not part of the turn (not compared, not stored).
    origin: str | None = field(default=None, compare=False)

    @property
    def who(self) -> str:
        """The name shown before the text: the speaker, else the role."""
        return self.speaker or self.role


def spoken_date(moment: datetime) -> str:
    """``1:47 pm on 18 May, 2023 (UTC+01:00)``: how people write a time, so
    that dates in questions match it as words, in the writer's own zone
    (the offset the time came with), which it names unless it is UTC (a
    time without a zone is UTC everywhere the product shows one, and every
    imported turn stays as it was embedded)."""
    hour = moment.hour % 12 or 12
    half = "am" if moment.hour < 12 else "pm"
    text = f"{hour}:{moment.minute:02d} {half} on {moment.day} {moment:%B}, {moment.year}"
    zone = zone_name(moment)
    return f"{text} ({zone})" if zone and zone != "UTC" else text


def zone_name(moment: datetime) -> str:
    """``UTC``, ``UTC+01:00``, ``UTC-05:30``; "" for a time with no zone."""
    offset = moment.utcoffset()
    if offset is None:
        return ""
    if not offset:
        return "UTC"
    minutes = int(offset.total_seconds()) // 60
    sign = "+" if minutes > 0 else "-"
    return f"UTC{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def clock_time(moment: datetime) -> str:
    """``2026-03-02 08:30 UTC``: a time as people read it, with its zone."""
    zone = zone_name(moment)
    return f"{moment:%Y-%m-%d %H:%M}" + (f" {zone}" if zone else "")
