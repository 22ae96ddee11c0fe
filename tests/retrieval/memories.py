"""A bare memory for the retrieval tests that rank hits without a store."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from mindpalace.models import Category, Memory, MemoryType, Source, StoreKind, Visibility

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def memory(
    key: str, session: str | None, *, content: str = "", metadata: Mapping[str, Any] | None = None
) -> Memory:
    """A conversation memory ``key`` (its id, hash and, unless given, its
    content) in ``session``, written at ``T0``."""
    return Memory(
        id=key,
        content=content or key,
        content_hash=key,
        agent_id="ann",
        title=None,
        context=None,
        session=session,
        type=MemoryType.UNKNOWN,
        store=StoreKind.EPISODIC,
        category=Category.CONVERSATION,
        tags=(),
        source=Source.MANUAL,
        visibility=Visibility.ISOLATED,
        group=None,
        channel=None,
        created_at=T0,
        updated_at=T0,
        last_accessed_at=None,
        valid_from=None,
        valid_to=None,
        superseded_by=None,
        strength=1.0,
        confidence=1.0,
        access_count=0,
        archived=False,
        constraint=False,
        metadata=dict(metadata or {}),
    )
