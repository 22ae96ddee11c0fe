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
from mindpalace.formats.base import mapping, text_or_none
from mindpalace.formats.walk import Said, Thread, walk_conversations
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
    return walk_conversations(data, _Claude(), name=name, file=file)


class _Claude:
    """What a Claude export tells the walk (``walk.ExportReader``)."""

    def thread(self, conversation: Mapping[str, Any], where: str) -> Thread:
        messages = conversation.get("chat_messages")
        if not isinstance(messages, list):
            raise ValidationError(
                "chat_messages", None, reason=f"{where}: a conversation has 'chat_messages'"
            )
        items = [mapping(m, f"{where} message {i}", "a message") for i, m in enumerate(messages, 1)]
        branch = _branch(items, conversation.get("current_leaf_message_uuid"))
        return Thread(
            id=text_or_none(conversation.get("uuid")),
            title=text_or_none(conversation.get("name")),
            messages=[(f"{where} message {at + 1}", items[at]) for at in branch],
            total=len(items),
            started=conversation.get("created_at"),
        )

    def said(self, message: Mapping[str, Any], where: str, started: object) -> Said | None:
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
        return Said(role=role, text=text, when=when, message_id=str(message.get("uuid") or ""))


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
