"""One walk through a chat export's conversations, for every export reader.

A chat export (``chatgpt``, ``claude``) is a list of conversations (or one),
each holding messages. What every such reader does is here, once: number
the conversations from 1 for error messages, name each conversation's
session (``base.SessionNames``: ``"{title} ({short id})"``, the id made up
from the file's name and the conversation's number when it has none), turn
each kept message into a turn of that session with its role, time and
message id, put the conversation's id and title in its first turn's
metadata only, and count what was left out as ignored.

What differs between exports is the reader's (``ExportReader``): where a
conversation keeps its id, title and messages, which branch of an edited
conversation is kept, and what of a message is said (role, text, time) or
left out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from mindpalace.conversations import Message
from mindpalace.formats.base import SessionNames, mapping

__all__ = ["ExportReader", "Said", "Thread", "walk_conversations"]


@dataclass(frozen=True, slots=True)
class Thread:
    """A conversation as its export's reader found it.

    Attributes:
        id: the conversation's own id (None: it has none; the walk makes one
            up from the file's name and the conversation's number).
        title: its title, if any.
        messages: the messages of the branch kept, oldest first, each with
            where it is in the file (``"conversations.json conversation 2
            message 5"``), for error messages.
        total: how many messages it holds in all (what is not kept of them
            is counted as ignored).
        started: the conversation's own time, in the export's form, for a
            message without one (the reader reads it).
    """

    id: str | None
    title: str | None
    messages: Sequence[tuple[str, Mapping[str, Any]]]
    total: int
    started: object = None


@dataclass(frozen=True, slots=True)
class Said:
    """What a kept message said: its role (user, assistant), its text, its
    time, and its id in the export."""

    role: str
    text: str
    when: datetime | None
    message_id: str


class ExportReader(Protocol):
    """What one export format tells the walk."""

    def thread(self, conversation: Mapping[str, Any], where: str) -> Thread:
        """The conversation's id, title and kept messages.

        Raises:
            ValidationError: a conversation not of the format's shape,
                naming ``where``.
        """
        ...

    def said(self, message: Mapping[str, Any], where: str, started: object) -> Said | None:
        """What ``message`` said, or None when the format leaves it out
        (another speaker, a system prompt, no text).

        Raises:
            ValidationError: a message not of the format's shape, naming
                ``where``.
        """
        ...


def walk_conversations(
    data: Any, reader: ExportReader, *, name: str, file: str
) -> tuple[list[Message], int]:
    """The turns of a parsed export, conversation by conversation, and how
    many messages were left out.

    Args:
        data: the parsed JSON: a list of conversations, or one.
        reader: what the export's format says of its conversations.
        name: the file's name, for the ids of conversations without one.
        file: the file as error messages name it.

    Raises:
        ValidationError: a conversation that is not an object, or what the
            reader refuses, naming where in the file.
    """
    conversations = data if isinstance(data, list) else [data]
    turns: list[Message] = []
    ignored = 0
    names = SessionNames()
    for number, raw in enumerate(conversations, start=1):
        where = f"{file} conversation {number}"
        thread = reader.thread(mapping(raw, where, "a conversation"), where)
        conversation_id = thread.id or f"{name}:{number}"
        session = names.name(conversation_id, thread.title, whole=thread.id is None)
        kept = 0
        for at, message in thread.messages:
            said = reader.said(message, at, thread.started)
            if said is None:
                continue
            metadata: dict[str, Any] = {"message_id": said.message_id}
            if not kept:  # the conversation's id and title once, on its first turn
                metadata["conversation_id"] = conversation_id
                if thread.title:
                    metadata["conversation_title"] = thread.title
            turns.append(
                Message(
                    content=said.text,
                    role=said.role,
                    session=session,
                    created_at=said.when,
                    metadata=metadata,
                    conversation_id=conversation_id,
                    origin=at,
                )
            )
            kept += 1
        ignored += thread.total - kept
    return turns, ignored
