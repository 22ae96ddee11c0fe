"""ChatGPT's data export (``chatgpt``): its ``conversations.json``.

A list of conversations (or one conversation), each a tree of nodes under
``mapping``: ``{id: {"message": {...} | null, "parent": id | null,
"children": [ids]}}``. Every edited question and regenerated answer is a
branch; the conversation as its owner last saw it is the path from
``current_node`` up to the root, and that branch is what we keep, oldest
turn first (without a usable ``current_node``: the latest child at each
step).

Each kept message is a turn of the session ``"{title} ({short id})"``
(``base.SessionNames``; the conversation's id without a title), at the
message's ``create_time`` (else the conversation's), with ``role`` user or
assistant, and the message's id in its metadata; the conversation's whole
title and id are in the metadata of its first turn only (a session has no
record of its own to keep them in, and a copy on every turn made a 0.26 MB
export a 61 MB palace). Left out, and counted as ignored: messages of other
branches; system and tool messages (instructions, browsing results, code
output: ChatGPT shows none of them as said); messages hidden from the
conversation (custom instructions); an assistant's messages addressed to a
tool (``recipient`` other than ``all``); content that is not prose
(``code`` sent to a tool, reasoning traces); and messages with no text
left. In a message's ``parts``, text is kept, a picture becomes
``[image]``, a voice message its transcript. Conversations are numbered
from 1 in error messages.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from mindpalace.conversations import Message
from mindpalace.errors import ValidationError
from mindpalace.formats.base import epoch, mapping, text_or_none
from mindpalace.formats.walk import Said, Thread, walk_conversations

__all__ = ["looks_like_chatgpt", "read_chatgpt"]

# Tuples, not sets: a hostile export's values may be unhashable (lists).
_ROLES = ("user", "assistant")
_PROSE = ("text", "multimodal_text")


def looks_like_chatgpt(data: object) -> bool:
    """Whether a whole JSON document is a ChatGPT export."""
    first = data[0] if isinstance(data, list) and data else data
    return isinstance(first, Mapping) and isinstance(first.get("mapping"), Mapping)


def read_chatgpt(data: Any, *, name: str, file: str) -> tuple[list[Message], int]:
    """The turns of a parsed ChatGPT export, conversation by conversation,
    and how many messages were left out."""
    return walk_conversations(data, _ChatGPT(), name=name, file=file)


class _ChatGPT:
    """What a ChatGPT export tells the walk (``walk.ExportReader``): a
    conversation's messages are the nodes of its kept branch."""

    def thread(self, conversation: Mapping[str, Any], where: str) -> Thread:
        nodes = conversation.get("mapping")
        if not isinstance(nodes, Mapping):
            raise ValidationError(
                "mapping", None, reason=f"{where}: a conversation has a 'mapping' of its messages"
            )
        own_id = text_or_none(conversation.get("conversation_id")) or text_or_none(
            conversation.get("id")
        )
        started = epoch(conversation.get("create_time"), where)
        branch = _branch(nodes, conversation.get("current_node"), where)
        return Thread(
            id=own_id,
            title=text_or_none(conversation.get("title")),
            messages=[(f"{where} node {node_id}", nodes[node_id]) for node_id in branch],
            total=sum(1 for node in nodes.values() if _has_message(node)),
            started=started,
        )

    def said(self, message: Mapping[str, Any], where: str, started: object) -> Said | None:
        return _said(message, where, started if isinstance(started, datetime) else None)


def _has_message(node: object) -> bool:
    return isinstance(node, Mapping) and isinstance(node.get("message"), Mapping)


def _is_node(key: object, nodes: Mapping[str, Any]) -> bool:
    return isinstance(key, str) and key in nodes


def _branch(nodes: Mapping[str, Any], current: object, where: str) -> list[str]:
    """The ids from the root to ``current`` (or to the latest leaf)."""
    if _is_node(current, nodes):
        path: list[str] = []
        seen: set[str] = set()
        at: object = current
        while isinstance(at, str) and _is_node(at, nodes) and at not in seen:
            seen.add(at)
            path.append(at)
            at = mapping(nodes[at], f"{where} node {at}", "a node").get("parent")
        return path[::-1]
    roots = [
        key
        for key, node in nodes.items()
        if not _is_node(mapping(node, f"{where} node {key}", "a node").get("parent"), nodes)
    ]
    path = []
    seen = set()
    at = roots[0] if roots else None
    while isinstance(at, str) and at in nodes and at not in seen:
        seen.add(at)
        path.append(at)
        children = nodes[at].get("children")
        at = children[-1] if isinstance(children, list) and children else None
    return path


def _said(node: Mapping[str, Any], where: str, started: datetime | None) -> Said | None:
    """What a node's message said (None for a message left out)."""
    message = node.get("message")
    if not isinstance(message, Mapping):
        return None  # the root, or a node whose message was deleted
    author = message.get("author")
    role = author.get("role") if isinstance(author, Mapping) else None
    if role not in _ROLES:
        return None
    meta = message.get("metadata")
    if isinstance(meta, Mapping) and meta.get("is_visually_hidden_from_conversation"):
        return None
    if message.get("recipient", "all") not in ("all", None):
        return None  # a call to a tool
    content = message.get("content")
    if not isinstance(content, Mapping) or content.get("content_type") not in _PROSE:
        return None
    text = _parts(content.get("parts"), where)
    if not text:
        return None
    return Said(
        role=str(role),
        text=text,
        when=epoch(message.get("create_time"), where) or started,
        message_id=str(message.get("id") or node.get("id") or ""),
    )


def _parts(parts: object, where: str) -> str:
    """The text of a message's ``parts``: strings as they are, a picture as
    ``[image]``, a voice message's transcript; other parts are dropped."""
    if not isinstance(parts, Sequence) or isinstance(parts, str):
        raise ValidationError(
            "parts", None, reason=f"{where}: a message's content has a list of 'parts'"
        )
    texts = []
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, Mapping):
            kind = part.get("content_type")
            if kind == "image_asset_pointer":
                texts.append("[image]")
            elif isinstance(part.get("text"), str):  # audio_transcription, text parts
                texts.append(part["text"])
    return "\n\n".join(t.strip() for t in texts if t.strip())
