"""The memory tools: store, search, and reading and changing one memory.

Each tool is a plain function whose first argument is the caller's
``Palace`` and whose other arguments are keyword-only, typed with the
aliases of ``schema`` (which give the JSON schema its enums and ranges) and
described with ``Field``. The docstring is the description a model reads:
what the tool does and when to call it, tersely.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from mindpalace import listing, writing
from mindpalace.draft import Changes
from mindpalace.palace import Palace
from mindpalace.server.channels import Channel, on_channel
from mindpalace.server.schema import (
    CategoryName,
    KindName,
    MemoryId,
    ModeName,
    Query,
    Range,
    SourceName,
    StoreName,
    Tags,
    TypeName,
    VisibilityName,
    listed,
)
from mindpalace.server.shaping import hits_json, memory_json

__all__ = [
    "memory_feedback",
    "memory_forget",
    "memory_get",
    "memory_list",
    "memory_search",
    "memory_stats",
    "memory_store",
    "memory_update",
]

SEARCH_LIMIT = 20
LIST_LIMIT = 100

Types = Annotated[list[TypeName] | None, listed, Field(description="Only these types.")]
Stores = Annotated[list[StoreName] | None, listed, Field(description="Only these stores.")]
Categories = Annotated[
    list[CategoryName] | None, listed, Field(description="Only these categories.")
]
Kinds = Annotated[list[KindName] | None, listed, Field(description="Only these kinds.")]
IncludeArchived = Annotated[bool, Field(description="Include archived memories.")]
When = Annotated[str | None, Field(description="ISO 8601 date or time.")]


def memory_store(
    palace: Palace,
    *,
    content: Annotated[str, Field(description="One self-contained note.")],
    title: Annotated[str | None, Field(description="One-line title.")] = None,
    type: Annotated[TypeName, Field(description="What it is about.")] = "unknown",
    store: Annotated[StoreName, Field(description="Memory system.")] = ("semantic"),
    category: Annotated[CategoryName, Field(description="What kind of statement.")] = "fact",
    tags: Annotated[list[str] | None, listed, Field(description="Topic tags.")] = None,
    source: Annotated[SourceName, Field(description="Who wrote it.")] = "manual",
    visibility: Annotated[VisibilityName, Field(description="Who may see it.")] = "isolated",
    group: Annotated[str | None, Field(description="For visibility group.")] = None,
    constraint: Annotated[bool, Field(description="A rule recall always surfaces.")] = False,
    confidence: Annotated[float, Range(0, 1), Field(description="Your certainty.")] = 1.0,
    session: Annotated[str | None, Field(description="Its conversation or episode.")] = None,
    kind: Annotated[KindName | None, Field(description="Default memory.")] = None,
    project: Annotated[str | None, Field(description="Of an issue or spec.")] = None,
    completed: Annotated[bool | None, Field(description="An issue's state.")] = None,
) -> dict[str, Any]:
    """Remember one self-contained note (fact, decision, lesson, rule, goal,
    event). The same text again strengthens the stored one."""
    memory = palace.remember(
        content,
        title=title,
        type=type,
        store=store,
        category=category,
        tags=tags,
        source=source,
        visibility=visibility,
        group=group,
        constraint=constraint,
        confidence=confidence,
        session=session,
        kind=kind,
        project=project,
        completed=completed,
    )
    return {"memory": memory_json(memory)}


def memory_search(
    palace: Palace,
    *,
    query: Query,
    mode: Annotated[ModeName, Field(description="Which memories to prefer.")] = "general",
    types: Types = None,
    stores: Stores = None,
    categories: Categories = None,
    tags: Tags = None,
    limit: Annotated[int, Range(1, SEARCH_LIMIT), Field(description="At most.")] = 10,
    expand: Annotated[
        bool, Field(description="Add memories linked through shared entities.")
    ] = True,
    include_archived: IncludeArchived = False,
    channel: Channel = None,
) -> dict[str, Any]:
    """Search memories by meaning and keywords, best first. Each has score
    (relevance to the query) and confidence (trust in the memory itself), both
    0-1; an empty list means nothing relevant is stored."""
    on_channel(palace, channel)
    hits = palace.recall(
        query,
        limit=limit,
        mode=mode,
        types=types,
        stores=stores,
        categories=categories,
        tags=tags,
        expand=expand,
        include_archived=include_archived,
    )
    return hits_json(hits)


def memory_get(palace: Palace, *, memory_id: MemoryId) -> dict[str, Any]:
    """Read one memory in full by its memory_id."""
    return {"memory": memory_json(palace.get(memory_id))}


def memory_forget(
    palace: Palace,
    *,
    memory_id: MemoryId,
    hard: Annotated[bool, Field(description="Delete instead of archiving.")] = False,
) -> dict[str, Any]:
    """Forget a memory you own that is wrong or obsolete: archive it (hidden
    from search, kept) or, with hard, delete it."""
    memory = palace.forget(memory_id, hard=hard)
    return {"forgotten": memory.id, "hard": hard}


def memory_update(
    palace: Palace,
    *,
    memory_id: MemoryId,
    content: Annotated[str | None, Field(description="The new text.")] = None,
    title: Annotated[str | None, Field(description='"" removes it.')] = None,
    tags: Annotated[list[str] | None, listed, Field(description="[] removes them.")] = None,
    category: Annotated[CategoryName | None, Field(description="The new category.")] = None,
    type: Annotated[TypeName | None, Field(description="The new type.")] = None,
    store: Annotated[StoreName | None, Field(description="The new store.")] = None,
    visibility: Annotated[VisibilityName | None, Field(description="The new visibility.")] = None,
    group: Annotated[str | None, Field(description="With visibility group.")] = None,
    valid_from: Annotated[When, Field(description='ISO 8601; "" removes it.')] = None,
    valid_to: Annotated[When, Field(description='ISO 8601; "" removes it.')] = None,
    metadata: Annotated[dict[str, Any] | None, Field(description="{} removes it.")] = None,
) -> dict[str, Any]:
    """Correct a memory you own; omitted fields are kept. The change is a new
    version with a NEW memory_id (use it from now on); the old one stays in the
    history. Returns {memory, previous_id, updated}."""
    changes = Changes.given(
        content=content,
        title=title,
        tags=tags,
        category=category,
        type=type,
        store=store,
        visibility=visibility,
        group=group,
        valid_from=valid_from,
        valid_to=valid_to,
        metadata=metadata,
    )
    memory = writing.change(palace.seat, memory_id, changes)
    updated = memory.id != memory_id
    return {"memory": memory_json(memory), "previous_id": memory_id, "updated": updated}


def memory_list(
    palace: Palace,
    *,
    types: Types = None,
    stores: Stores = None,
    categories: Categories = None,
    tags: Tags = None,
    kinds: Kinds = None,
    session: Annotated[str | None, Field(description="Only this session.")] = None,
    created_after: Annotated[When, Field(description="Created at or after (ISO 8601).")] = None,
    created_before: Annotated[When, Field(description="Created before (ISO 8601).")] = None,
    include_archived: IncludeArchived = False,
    include_superseded: Annotated[bool, Field(description="Include replaced versions.")] = False,
    limit: Annotated[int, Range(1, LIST_LIMIT), Field(description="Per page.")] = 50,
    cursor: Annotated[str | None, Field(description="next_cursor of the page before.")] = None,
) -> dict[str, Any]:
    """List the memories you can see, newest first, a page at a time: pass
    next_cursor back as cursor (absent on the last page). Returns {memories, next_cursor}."""
    found = palace.memories(
        limit=limit + 1,
        types=types,
        stores=stores,
        categories=categories,
        tags=tags,
        kinds=kinds,
        sessions=None if session is None else [session],
        created_after=created_after,
        created_before=created_before,
        include_archived=include_archived,
        include_superseded=include_superseded,
        cursor=cursor,
    )
    page = found[:limit]
    out: dict[str, Any] = {"memories": [memory_json(m) for m in page]}
    if len(found) > limit:
        out["next_cursor"] = listing.encode_cursor(page[-1])
    return out


def memory_stats(palace: Palace) -> dict[str, Any]:
    """Counts of the memories you can see, by type, store, category and agent."""
    stats = palace.stats().to_dict()
    del stats["path"]  # where the server keeps its data is none of a caller's business
    return {"stats": stats}


def memory_feedback(
    palace: Palace,
    *,
    memory_id: MemoryId,
    useful: Annotated[bool, Field(description="Whether it helped.")],
) -> dict[str, Any]:
    """Say whether a recalled memory was useful: a signal for ranking and for
    linking memories useful together. Changes no memory."""
    signal = palace.feedback(memory_id, useful=useful)
    return {"recorded": signal is not None, "memory_id": memory_id, "useful": useful}
