"""Keyset paging of ``Palace.memories``: the opaque cursor of a listing.

A listing runs newest first by (created_at, id); a cursor names the last
memory of a page, and the next page starts after it. Unlike an offset, it
neither skips nor repeats memories when new ones arrive between pages.

The cursor is the last (created_at, id) pair, base64url-encoded, with a
checksum, so that an edited or truncated cursor is refused (a
``ValidationError``, HTTP 400) rather than silently paging from elsewhere. It
is not a secret and grants nothing: every page is read through the caller's
scope, so a forged position only lists what the caller may see anyway.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Iterable
from datetime import datetime, timezone

from mindpalace.errors import ValidationError
from mindpalace.models import (
    Category,
    Memory,
    MemoryKind,
    MemoryType,
    RecallFilters,
    Source,
    StoreKind,
    Visibility,
)
from mindpalace.validation import (
    check_agent_id,
    check_names,
    check_tags,
    parse_datetime,
    parse_many,
)

__all__ = [
    "check_agents",
    "decode_cursor",
    "encode_cursor",
    "encode_position",
    "recall_filters",
]

_VERSION = 1
_CHECK = 8  # bytes of sha256 kept as the checksum


def _check(payload: bytes) -> bytes:
    return hashlib.sha256(b"mindpalace-cursor\x00" + payload).digest()[:_CHECK]


def encode_cursor(memory: Memory) -> str:
    """The cursor of a page ending with ``memory``."""
    return encode_position(memory.created_at, memory.id)


def encode_position(at: datetime, key: str) -> str:
    """The cursor of a page ending at the (time, key) pair of a listing
    (``decode_cursor`` gives the pair back)."""
    payload = json.dumps([_VERSION, at.timestamp(), key], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(_check(payload) + payload).decode().rstrip("=")


def decode_cursor(cursor: object) -> tuple[datetime, str]:
    """The (created_at, id) a cursor names.

    Raises:
        ValidationError: not a cursor this listing gave out.
    """
    bad = ValidationError(
        "cursor", cursor, reason="not a cursor of this listing: pass next_cursor as given"
    )
    if not isinstance(cursor, str) or not cursor or len(cursor) > 512:
        raise bad
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    except (binascii.Error, ValueError):
        raise bad from None
    check, payload = raw[:_CHECK], raw[_CHECK:]
    if len(check) != _CHECK or check != _check(payload):
        raise bad
    try:
        version, at, memory_id = json.loads(payload)
        when = datetime.fromtimestamp(float(at), tz=timezone.utc)
    except (ValueError, TypeError, OverflowError, OSError):
        raise bad from None
    if version != _VERSION or not isinstance(memory_id, str):
        raise bad
    return when, memory_id


def check_agents(agents: Iterable[str] | str | None) -> tuple[str, ...]:
    """Agent ids to filter by owner: one id, a comma-separated string or a list.

    Raises:
        ValidationError: an entry that is not a valid agent id.
    """
    if agents is None:
        return ()
    items = agents.split(",") if isinstance(agents, str) else agents
    if not isinstance(items, Iterable):
        raise ValidationError("agents", agents, reason="agents must be a list of agent ids")
    found: dict[str, None] = {}
    for item in items:
        if isinstance(item, str) and not item.strip():
            continue  # "a,,b" and a trailing comma name no agent
        found.setdefault(check_agent_id(item.strip() if isinstance(item, str) else item, "agents"))
    return tuple(found)


def recall_filters(
    *,
    types: object,
    stores: object,
    categories: object,
    tags: Iterable[str] | str | None,
    visibility: object,
    sources: object = None,
    include_archived: bool,
    include_superseded: bool = False,
    created_after: datetime | str | None,
    created_before: datetime | str | None,
    kinds: object = None,
    projects: Iterable[str] | None = None,
    completed: bool | None = None,
    agents: Iterable[str] | str | None = None,
) -> RecallFilters:
    """The filters of a listing or recall, validated (``Palace.recall``
    documents them).

    Raises:
        ValidationError: naming the invalid filter and its valid values.
    """
    if completed is not None and not isinstance(completed, bool):
        raise ValidationError("completed", completed, valid=["true", "false"])
    return RecallFilters(
        types=parse_many(MemoryType, types, "type"),
        stores=parse_many(StoreKind, stores, "store"),
        categories=parse_many(Category, categories, "category"),
        visibilities=parse_many(Visibility, visibility, "visibility"),
        sources=parse_many(Source, sources, "source"),
        tags=check_tags(tags),
        include_archived=bool(include_archived),
        include_superseded=bool(include_superseded),
        created_after=parse_datetime(created_after, "created_after"),
        created_before=parse_datetime(created_before, "created_before"),
        kinds=parse_many(MemoryKind, kinds, "kind"),
        projects=check_names(projects, "project"),
        completed=completed,
        agents=check_agents(agents),
    )
