"""Conversation turns as memories: bulk ingest and exact phrase search
(``Palace.add_messages`` and ``Palace.search_messages`` delegate here)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING

from mindpalace.conversations import Message, spoken_date
from mindpalace.errors import ValidationError
from mindpalace.models import Category, Memory, MessageMatch, RecallFilters, StoreKind
from mindpalace.retrieval.indexing import Progress
from mindpalace.retrieval.temporal import find_times
from mindpalace.validation import check_limit, check_query

if TYPE_CHECKING:
    from mindpalace.palace import Palace

__all__ = ["add_messages", "date_context", "search_messages"]

MAX_MATCHES = 100
MAX_TRANSCRIPT = 10_000


def add_messages(
    self: Palace,
    messages: Iterable[Message],
    *,
    session: str | None,
    batch: int,
    progress: Progress | None,
    dates: bool = True,
) -> list[Memory]:
    """See ``Palace.add_messages``."""
    turns = list(messages)
    previous: dict[str | None, str] = {}
    counted: dict[str | None, int] = {}
    stored: list[Memory] = []
    for start in range(0, len(turns), batch):
        records = []
        for message in turns[start : start + batch]:
            which = message.session or session
            if which is not None and which not in previous:
                # Its text is copied into this (isolated) turn: only from a
                # turn every reader of this one may read (our own, here).
                last = self.memories(
                    limit=1, sessions=[which], categories="conversation", visibility="isolated"
                )
                if last and (last[0].agent_id, last[0].channel) == self._own:
                    previous[which] = last[0].content
            when = message.created_at or self.now()
            # What makes a turn this turn: its session and time, or, with
            # no timestamp, its place among this call's turns of the session
            # (so a transcript file re-ingested adds nothing).
            place = counted.get(which, 0)
            counted[which] = place + 1
            turn = (
                f"{which}|{message.created_at.isoformat()}"
                if message.created_at
                else f"{which}|#{place}"
            )
            content = f"{message.who}: {message.content.strip()}"
            context = [previous[which]] if which is not None and which in previous else []
            if dates:
                context += date_context(message.content, when)
            records.append(
                {
                    "content": content,
                    "title": spoken_date(when),
                    "context": "\n".join(context) or None,
                    "session": which,
                    "category": Category.CONVERSATION,
                    "store": StoreKind.EPISODIC,
                    "created_at": when,
                    "metadata": {
                        "role": message.role,
                        "speaker": message.who,
                        **dict(message.metadata),
                        "turn": turn,
                    },
                    "identity": turn,
                }
            )
            if which is not None:
                previous[which] = content
        stored += self.remember_many(records)
        if progress is not None:
            progress(min(start + batch, len(turns)), len(turns))
    return stored


def date_context(text: str, when: datetime) -> list[str]:
    """The dates a turn states, resolved against its time, as a keyword
    context line: "I went yesterday" said on 8 May 2023 gives
    ``["when: 7 May 2023"]``, so a question naming that date finds it."""
    labels = dict.fromkeys(m.label for m in find_times(text, when))
    return [f"when: {'; '.join(labels)}"] if labels else []


def search_messages(
    self: Palace, phrase: str, *, limit: int, around: int, session: str | None
) -> list[MessageMatch]:
    """See ``Palace.search_messages``."""
    if not check_query(phrase, "phrase").strip():
        raise ValidationError("phrase", phrase, reason="phrase must not be empty")
    check_limit(limit, low=1, high=MAX_MATCHES)
    check_limit(around, low=0, high=10, field="around")
    filters = RecallFilters(
        categories=(Category.CONVERSATION,),
        sessions=(session,) if session else (),
    )
    found = self.store.search_substring([phrase.strip()], self.scope, filters, limit=limit)
    transcripts: dict[str | None, list[Memory]] = {}
    matches = []
    for memory in found:
        if memory.session is None or around == 0:
            matches.append(MessageMatch(memory))
            continue
        if memory.session not in transcripts:
            turns = self.memories(
                limit=MAX_TRANSCRIPT, sessions=[memory.session], categories="conversation"
            )
            transcripts[memory.session] = sorted(turns, key=lambda m: (m.created_at, m.id))
        turns = transcripts[memory.session]
        at = next(i for i, m in enumerate(turns) if m.id == memory.id)
        matches.append(
            MessageMatch(
                memory,
                before=tuple(turns[max(0, at - around) : at]),
                after=tuple(turns[at + 1 : at + 1 + around]),
            )
        )
    return matches
