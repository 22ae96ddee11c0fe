"""Conversation turns as memories: bulk ingest and exact phrase search
(``Palace.add_messages`` and ``Palace.search_messages`` delegate here)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from mindpalace import writing
from mindpalace.conversations import Message, spoken_date
from mindpalace.embed.texts import Progress, embed_text
from mindpalace.errors import ValidationError
from mindpalace.models import (
    Category,
    Memory,
    MessageMatch,
    NewMemory,
    RecallFilters,
    StoreKind,
)
from mindpalace.retrieval.time import stored as stored_times
from mindpalace.retrieval.time.intervals import TimeMention
from mindpalace.retrieval.time.temporal import find_times
from mindpalace.splitting import Part, parts_within
from mindpalace.store.base import AddResult, VectorBatch
from mindpalace.validation import check_identifier, check_limit, check_query

if TYPE_CHECKING:
    from mindpalace.view import View

__all__ = [
    "CONTEXT_CHARS",
    "add_messages",
    "add_turns",
    "date_context",
    "previous_context",
    "search_messages",
]

MAX_MATCHES = 100
MAX_TRANSCRIPT = 10_000
# A turn split into parts leaves each part at least this much room for text
# besides "{speaker}: " (a speaker's name longer than the limit allows is
# refused, not cut into parts of a few characters).
_MIN_PART = 1000

#: How much of the turn before a conversation turn is indexed with it as
#: keyword context: its first characters (a question asked, what a reply
#: answers), not a whole long message whose words would then find the next
#: turn too. On LoCoMo the previous turn lifts keyword hit@10 from 0.670 to
#: 0.783, and its first 400 characters keep that (most turns are shorter);
#: on LongMemEval_S, where replies run to thousands of characters, the whole
#: turn costs keyword recall_all@10 0.733 -> 0.652 and 400 characters bring
#: it back to 0.706 (BENCHMARKS.md). Migration 11 cuts stored contexts the
#: same way (``store/migrations.py``).
CONTEXT_CHARS = 400
#: What is trimmed from the end of that cut (migration 11 trims the same).
_SPACES = " \t\n\r\x0b\x0c"


def add_messages(
    view: View,
    messages: Iterable[Message],
    *,
    session: str | None,
    batch: int,
    progress: Progress | None,
    dates: bool = True,
    atomic: bool = False,
) -> list[Memory]:
    """See ``Palace.add_messages``."""
    added = add_turns(
        view,
        messages,
        session=session,
        batch=batch,
        progress=progress,
        dates=dates,
        atomic=atomic,
    )
    return [result.memory for result in added]


def add_turns(
    view: View,
    messages: Iterable[Message],
    *,
    session: str | None,
    batch: int,
    progress: Progress | None,
    dates: bool = True,
    atomic: bool = False,
) -> list[AddResult]:
    """``add_messages``, telling for each memory whether it is new.

    A pipeline of three stages over batches of turns: while one worker
    thread embeds batch k, this thread prepares batch k+1 (context,
    validation) and then writes batch k-1, each batch in one transaction.
    The model runs in onnxruntime without the GIL, so on two cores the
    encoder and the Python work overlap instead of taking turns.
    ``atomic`` validates every turn first, then embeds them batch by batch
    and writes them in one transaction. A turn longer than the content
    limit is stored as parts (``_TurnRecords``).
    """
    turns = list(messages)
    records = _TurnRecords(view, session=session, dates=dates)
    if atomic:
        try:
            news = _prepare(view, records, turns, 0, len(turns))
        except ValidationError as exc:
            raise ValidationError(exc.field, exc.value, reason=f"{exc}; {_kept(0)}") from None
        vectors = view.engine.semantic.vectors_in_batches(
            [embed_text(n.title, n.content) for n in news], batch=batch, progress=progress
        )
        return writing.write_results(view.seat, news, vectors)
    stored: list[AddResult] = []
    pending: tuple[list[NewMemory], Future[VectorBatch | None], int] | None = None
    defer = view.engine.semantic.defers(len(turns))

    def write(job: tuple[list[NewMemory], Future[VectorBatch | None], int]) -> None:
        news, vectors, done = job
        stored.extend(writing.write_results(view.seat, news, vectors.result()))
        if progress is not None:
            progress(done, len(turns))

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="mindpalace-embed") as worker:
        for start in range(0, len(turns), batch):
            chunk = turns[start : start + batch]
            try:
                news = _prepare(view, records, chunk, start, len(turns))
                embed = view.engine.semantic.plan_vectors(
                    [embed_text(n.title, n.content) for n in news], defer=defer
                )
            except BaseException as exc:
                if pending is not None:  # earlier batches stay, as documented
                    write(pending)
                if isinstance(exc, ValidationError):
                    raise ValidationError(
                        exc.field, exc.value, reason=f"{exc}; {_kept(len(stored))}"
                    ) from None
                raise
            job = (news, worker.submit(embed), start + len(chunk))
            if pending is not None:
                write(pending)  # while the worker embeds this batch
            pending = job
        if pending is not None:
            write(pending)
    return stored


def _kept(count: int) -> str:
    """What a failed ingest left written, for its error message."""
    if not count:
        return "no turn was stored"
    return f"{count} turns before it were stored (its batch and later ones were not)"


def _prepare(
    view: View, records: _TurnRecords, turns: list[Message], start: int, total: int
) -> list[NewMemory]:
    """``turns`` (which begin at index ``start`` of ``total``) validated into
    new memories; an error names the turn by its place and its origin."""

    def name(index: int) -> str:
        origin = getattr(turns[index], "origin", None)  # not a Message: says so itself
        return f"turn {start + index + 1} of {total}" + (f" ({origin})" if origin else "")

    batch: list[dict[str, Any]] = []
    kept: list[str] = []  # each record's stated times (``retrieval/time/stored.py``)
    owners: list[int] = []  # the turn of each record (a long turn gives several)
    for index, message in enumerate(turns):
        try:
            parts = records.next(message)
        except ValidationError as exc:
            raise ValidationError(exc.field, exc.value, reason=f"{name(index)}: {exc}") from None
        batch += [record for record, _ in parts]
        kept += [times for _, times in parts]
        owners += [index] * len(parts)
    news = writing.prepare_many(view.seat, batch, name=lambda i: name(owners[i]))
    # The times were read with the date context: the write need not read them again.
    return [replace(new, stated_times=times) for new, times in zip(news, kept, strict=True)]


class _TurnRecords:
    """Turns to remember_many records, in order: each turn's context is the
    turn before it in its session (read from the palace for the first one).

    A turn longer than the content limit becomes parts (``splitting``): the
    same session, time and title, each ``"{speaker}: "`` and a piece of the
    text, cut at a paragraph or sentence where one is near. Each part's
    metadata says ``part`` k of ``parts`` n and ``part_of`` (the turn's
    identity, the same for all its parts) and ``gap`` (the whitespace the
    cut removed), so the text reads back whole with ``splitting.join_parts``.
    """

    def __init__(self, palace: View, *, session: str | None, dates: bool) -> None:
        self._palace = palace
        self._session = session
        self._dates = dates
        self._limit = palace.engine.settings.max_content_chars
        self._previous: dict[str | None, str] = {}
        self._counted: dict[str | None, int] = {}

    def next(self, message: Message) -> list[tuple[dict[str, Any], str]]:
        """The records of ``message`` (one, or its parts), each with the
        kept form of the times its content states."""
        palace = self._palace
        message = _checked(message)
        which = message.session or self._session
        if which is not None and which not in self._previous:
            # Its text is copied into this (isolated) turn: only from a
            # turn every reader of this one may read (our own, here).
            last = palace.memories(
                limit=1, sessions=[which], categories="conversation", visibility="isolated"
            )
            if last and (last[0].agent_id, last[0].channel) == (
                palace.scope.agent_id,
                palace.scope.channel,
            ):
                self._previous[which] = last[0].content
        when = message.created_at or palace.now()
        # What makes a turn this turn: its session (its conversation's id,
        # when the session is a name for people) and time, or, with
        # no timestamp, its place among this call's turns of the session
        # (so a transcript file re-ingested adds nothing).
        place = self._counted.get(which, 0)
        self._counted[which] = place + 1
        key = message.conversation_id or which
        turn = (
            f"{key}|{message.created_at.isoformat()}" if message.created_at else f"{key}|#{place}"
        )
        prefix = f"{message.who}: "
        text = message.content.strip()
        room = self._limit - len(prefix)
        if len(prefix) + len(text) <= self._limit or room < _MIN_PART:
            # (A turn that fits; or a name too long to leave room for parts,
            # which validation refuses with the content limit's message.)
            pieces = [Part(text)]
        else:
            pieces = parts_within(text, room, what="the turn")
        records = []
        for number, piece in enumerate(pieces, start=1):
            content = prefix + piece.text
            said, kept = _times(content, len(prefix), when, dates=self._dates)
            metadata: dict[str, Any] = {
                "role": message.role,
                "speaker": message.who,
                **dict(message.metadata),
                "turn": turn,
            }
            identity = turn
            if len(pieces) > 1:
                identity = f"{turn}|part {number}/{len(pieces)}"
                metadata.update(
                    turn=identity, part=number, parts=len(pieces), part_of=turn, gap=piece.gap
                )
            records.append(
                (
                    {
                        "content": content,
                        "title": spoken_date(when),
                        "context": self._context(which, said),
                        "session": which,
                        "category": Category.CONVERSATION,
                        "store": StoreKind.EPISODIC,
                        "created_at": when,
                        "metadata": metadata,
                        "identity": identity,
                    },
                    kept,
                )
            )
            if which is not None:
                self._previous[which] = content
        return records

    def _context(self, which: str | None, said: list[TimeMention]) -> str | None:
        """The start of the turn before (``previous_context``, cut to fit)
        and the dates the turn's text states (``said``)."""
        dates = _date_line(said) if self._dates else []
        room = self._limit - sum(len(line) + 1 for line in dates)
        before = self._previous.get(which) if which is not None else None
        cut = previous_context(before) if before else ""
        lines = ([cut[:room]] if cut and room > 0 else []) + dates
        return "\n".join(lines) or None


def _checked(message: Message) -> Message:
    """``message``, if its fields have the types ``Message`` declares (a
    caller may build one from anything).

    Raises:
        ValidationError: naming the field of the wrong type.
    """
    if not isinstance(message, Message):
        raise ValidationError(
            "messages",
            message,
            reason=f"a turn must be a Message (mindpalace.Message), not {type(message).__name__}",
        )
    for name in ("content", "role", "speaker"):
        value = getattr(message, name)
        if not isinstance(value, str) and not (name == "speaker" and value is None):
            raise ValidationError(name, value, reason=f"a turn's {name} must be a string")
    if not isinstance(message.metadata, Mapping):
        raise ValidationError(
            "metadata", message.metadata, reason="a turn's metadata must be a mapping"
        )
    check_identifier(message.session, "session", optional=True)
    if message.conversation_id is not None and not isinstance(message.conversation_id, str):
        raise ValidationError(
            "conversation_id",
            message.conversation_id,
            reason="a turn's conversation_id must be a string",
        )
    if message.created_at is not None and not isinstance(message.created_at, datetime):
        raise ValidationError(
            "created_at", message.created_at, reason="a turn's created_at must be a datetime"
        )
    return message


def previous_context(previous: str) -> str:
    """The part of the turn before a turn that is indexed with it:
    its first ``CONTEXT_CHARS`` characters, without trailing spaces."""
    return previous[:CONTEXT_CHARS].rstrip(_SPACES)


def date_context(text: str, when: datetime) -> list[str]:
    """The dates a turn states, resolved against its time, as a keyword
    context line: "I went yesterday" said on 8 May 2023 gives
    ``["when: 7 May 2023"]``, so a question naming that date finds it."""
    return _date_line(find_times(text, when))


def _date_line(said: list[TimeMention]) -> list[str]:
    labels = dict.fromkeys(m.label for m in said)
    return [f"when: {'; '.join(labels)}"] if labels else []


def _times(
    content: str, start: int, when: datetime, *, dates: bool = True
) -> tuple[list[TimeMention], str]:
    """The times the turn's text (``content`` from ``start``, after the
    speaker's name) states, resolved against ``when`` for its date context,
    and the kept form of those ``content`` states (``stored_times.written``).

    One reading serves both where ``when`` is UTC, as the kept form
    resolves against UTC: the mentions in the text are those of the content
    past the name (the same dates on every turn of LoCoMo and LongMemEval_S,
    121,000 texts). A turn timed in another zone is read twice, so each
    keeps its own reference. Without a date context (``dates`` False) only
    the kept form is read.
    """
    found = find_times(content, stored_times.reference(when))
    if not dates:
        return [], stored_times.encode(found)
    if when.utcoffset():
        said = find_times(content[start:], when)
    else:
        said = [m for m in found if m.start >= start]
    return said, stored_times.encode(found)


def search_messages(
    view: View, phrase: str, *, limit: int, around: int, session: str | None
) -> list[MessageMatch]:
    """See ``Palace.search_messages``."""
    text = check_query(phrase, "phrase").strip()
    if not text:
        raise ValidationError("phrase", phrase, reason="phrase must not be empty")
    check_limit(limit, low=1, high=MAX_MATCHES)
    check_limit(around, low=0, high=10, field="around")
    which = check_identifier(session, "session", optional=True)
    filters = RecallFilters(
        categories=(Category.CONVERSATION,),
        sessions=(which,) if which else (),
    )
    found = view.engine.store.search_substring([text], view.scope, filters, limit=limit)
    transcripts: dict[str | None, list[Memory]] = {}
    matches = []
    for memory in found:
        if memory.session is None or around == 0:
            matches.append(MessageMatch(memory))
            continue
        if memory.session not in transcripts:
            turns = view.memories(
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
