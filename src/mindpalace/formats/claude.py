"""Claude's data export (``claude``): its ``conversations.json``.

A list of conversations (or one), each with ``uuid``, ``name``,
``created_at`` and ``chat_messages``: ``{"uuid", "sender": "human" |
"assistant", "text", "content": [blocks], "created_at", "attachments",
"files"}``. A message's text is its ``text`` blocks (else its ``text``
field); a pasted or attached document's extracted text follows it under
``[attached NAME]``, and a file without text is named the same way.

Each message is a turn of the session ``"{name} ({short uuid})"``
(``base.SessionNames``; the conversation's uuid when it has no name), with
role user (human) or assistant, at its ``created_at``, with the message's
uuid in its metadata, and the conversation's name and uuid in its first
turn's metadata only (as ``chatgpt`` keeps them). Where messages name
their parent (``parent_message_uuid``), only the branch leading to
``current_leaf_message_uuid`` (else to the last message) is kept. Left out,
and counted as ignored: messages of other branches, of other senders
(a ``system`` one included, as every importer leaves system prompts out),
and messages with no text (tool calls and results, reasoning).
Conversations and messages are numbered from 1 in error messages.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mindpalace.conversations import Message
from mindpalace.errors import ValidationError
from mindpalace.formats.base import SessionNames, mapping, text_or_none
from mindpalace.validation import parse_datetime

__all__ = ["looks_like_claude", "read_claude"]

_ROLES = {"human": "user", "user": "user", "assistant": "assistant"}


def looks_like_claude(data: object) -> bool:
    """Whether a whole JSON document is a Claude export."""
    first = data[0] if isinstance(data, list) and data else data
    return isinstance(first, Mapping) and isinstance(first.get("chat_messages"), list)


def read_claude(data: Any, *, name: str, file: str) -> tuple[list[Message], int]:
    """The turns of a parsed Claude export, conversation by conversation,
    and how many messages were left out."""
    conversations = data if isinstance(data, list) else [data]
    turns: list[Message] = []
    ignored = 0
    names = SessionNames()
    for number, raw in enumerate(conversations, start=1):
        where = f"{file} conversation {number}"
        conversation = mapping(raw, where, "a conversation")
        messages = conversation.get("chat_messages")
        if not isinstance(messages, list):
            raise ValidationError(
                "chat_messages", None, reason=f"{where}: a conversation has 'chat_messages'"
            )
        items = [mapping(m, f"{where} message {i}", "a message") for i, m in enumerate(messages, 1)]
        own_id = text_or_none(conversation.get("uuid"))
        title = text_or_none(conversation.get("name"))
        conversation_id = own_id or f"{name}:{number}"
        session = names.name(conversation_id, title, whole=own_id is None)
        started = conversation.get("created_at")
        branch = _branch(items, conversation.get("current_leaf_message_uuid"))
        kept = 0
        for position in branch:
            turn = _turn(
                items[position],
                f"{where} message {position + 1}",
                started,
                (session, conversation_id, title),
                first=not kept,
            )
            if turn is not None:
                turns.append(turn)
                kept += 1
        ignored += len(items) - kept
    return turns, ignored


def _branch(items: list[Mapping[str, Any]], leaf: object) -> list[int]:
    """Positions of the messages to keep, in order: all of them, unless they
    name their parents; then the path to ``leaf`` (else to the last one)."""
    if not any("parent_message_uuid" in m for m in items):
        return list(range(len(items)))
    where = {m["uuid"]: i for i, m in enumerate(items) if isinstance(m.get("uuid"), str)}
    at = where.get(leaf) if isinstance(leaf, str) else None
    if at is None:
        at = len(items) - 1 if items else None
    path: set[int] = set()  # a set: a chain of n messages is read in O(n), a loop ends it
    while at is not None and at not in path:
        path.add(at)
        parent = items[at].get("parent_message_uuid")
        at = where.get(parent) if isinstance(parent, str) else None
    return sorted(path)


def _turn(
    message: Mapping[str, Any],
    where: str,
    started: object,
    conversation: tuple[str, str, str | None],
    first: bool,
) -> Message | None:
    """The turn of a message (None for one left out), in the ``conversation``
    (session, id, title), the first turn kept of it or not."""
    role = _ROLES.get(str(message.get("sender")))
    if role is None:
        return None
    text = _text(message, where)
    if not text:
        return None
    stamp = message.get("created_at") or started
    try:
        when = parse_datetime(stamp, "created_at")
    except ValidationError as exc:
        raise ValidationError("created_at", stamp, reason=f"{where}: {exc}") from None
    metadata: dict[str, Any] = {"message_id": str(message.get("uuid") or "")}
    session, conversation_id, title = conversation
    if first:  # the conversation's id and name once, on its first turn
        metadata["conversation_id"] = conversation_id
        if title:
            metadata["conversation_title"] = title
    return Message(
        content=text,
        role=role,
        session=session,
        created_at=when,
        metadata=metadata,
        conversation_id=conversation_id,
        origin=where,
    )


def _text(message: Mapping[str, Any], where: str) -> str:
    blocks = message.get("content")
    texts: list[str] = []
    if isinstance(blocks, Sequence) and not isinstance(blocks, str):
        texts = [
            block["text"]
            for block in blocks
            if isinstance(block, Mapping)
            and block.get("type") == "text"
            and isinstance(block.get("text"), str)
        ]
    elif blocks is not None:
        raise ValidationError("content", None, reason=f"{where}: 'content' is a list of blocks")
    if not any(t.strip() for t in texts) and isinstance(message.get("text"), str):
        texts = [message["text"]]
    named: set[str] = set()  # a document may be listed under both keys
    for key in ("attachments", "files"):
        files = message.get(key)
        for item in files if isinstance(files, list) else ():
            if not isinstance(item, Mapping):
                continue
            label = f"[attached {item.get('file_name') or 'a file'}]"
            if label in named:
                continue
            named.add(label)
            extracted = item.get("extracted_content")
            if isinstance(extracted, str) and extracted.strip():
                texts.append(f"{label}\n{extracted.strip()}")
            else:
                texts.append(label)
    return "\n\n".join(t.strip() for t in texts if t.strip())
