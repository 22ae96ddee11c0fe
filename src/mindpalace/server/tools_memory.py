"""The memory tools: store, search, and reading and changing one memory.

Each tool is a plain function whose first argument is the caller's
``Palace`` and whose other arguments are keyword-only, typed with the
aliases of ``schema`` (which give the JSON schema its enums and ranges) and
described with ``Field``. The docstring is the description a model reads:
what the tool does and when to call it, tersely.
"""

from __future__ import annotations

from typing import Annotated, Any, cast

from pydantic import Field, Strict

from mindpalace import listing, reading, writing
from mindpalace.draft import Changes
from mindpalace.models import Category, MemoryKind, MemoryType, Source, StoreKind, Visibility
from mindpalace.palace import Palace
from mindpalace.recall_request import RECALL_FIELDS, RecallRequest
from mindpalace.selection import SELECTION_KINDS, parse_selection
from mindpalace.server import shapes
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
    choice,
    described,
    listed,
)
from mindpalace.server.shaping import hits_json, memory_json, stats_json

__all__ = [
    "memory_erase",
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

Types = Annotated[
    list[TypeName] | None,
    listed,
    Field(description=described("Only memories of these types.", MemoryType)),
]
Stores = Annotated[
    list[StoreName] | None,
    listed,
    Field(description=described("Only memories of these stores.", StoreKind)),
]
Categories = Annotated[
    list[CategoryName] | None,
    listed,
    Field(description=described("Only memories of these categories.", Category)),
]
Kinds = Annotated[
    list[KindName] | None,
    listed,
    Field(description=described("Only memories of these kinds.", MemoryKind)),
]
IncludeArchived = Annotated[
    bool, Field(description="Also return archived (forgotten, not deleted) memories.")
]
When = Annotated[
    str | None, Field(description="ISO 8601 date or time, e.g. 2026-03-02T09:30+01:00.")
]


def memory_store(
    palace: Palace,
    *,
    content: Annotated[
        str, Field(description="The note: one self-contained statement, readable on its own.")
    ],
    title: Annotated[str | None, Field(description="A one-line title.")] = None,
    type: Annotated[TypeName, Field(description=described("What it is about.", MemoryType))] = (
        "unknown"
    ),
    store: Annotated[
        StoreName, Field(description=described("Which memory system keeps it.", StoreKind))
    ] = "semantic",
    category: Annotated[
        CategoryName, Field(description=described("What kind of statement it is.", Category))
    ] = "fact",
    tags: Annotated[
        list[str] | None, listed, Field(description="Topic tags, lower-case words.")
    ] = None,
    source: Annotated[
        SourceName, Field(description=described("Who or what wrote it.", Source))
    ] = "manual",
    visibility: Annotated[
        VisibilityName, Field(description=described("Who may read it.", Visibility))
    ] = "isolated",
    group: Annotated[
        str | None, Field(description="The group whose agents may read it (visibility group).")
    ] = None,
    constraint: Annotated[
        bool, Field(description="true: a rule that every recall shows, whatever the query.")
    ] = False,
    confidence: Annotated[
        float, Range(0, 1), Field(description="How sure you are it is true, 0-1.")
    ] = 1.0,
    session: Annotated[
        str | None, Field(description="The conversation or episode it belongs to.")
    ] = None,
    kind: Annotated[
        KindName | None,
        Field(description=described("Personal-data kind; omitted: memory.", MemoryKind)),
    ] = None,
    project: Annotated[
        str | None, Field(description="The project an issue or spec belongs to.")
    ] = None,
    completed: Annotated[
        bool | None, Field(description="For an issue: true when done, false when open.")
    ] = None,
) -> shapes.MemoryResult:
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
    mode: Annotated[
        ModeName, Field(description=described("Which memories to prefer.", "mode"))
    ] = "general",
    types: Types = None,
    stores: Stores = None,
    categories: Categories = None,
    tags: Tags = None,
    limit: Annotated[
        int, Range(1, SEARCH_LIMIT), Field(description="Memories to return, at most.")
    ] = 10,
    expand: Annotated[
        bool, Field(description="Also add memories linked through shared entities.")
    ] = True,
    include_archived: IncludeArchived = False,
    channel: Channel = None,
) -> shapes.HitList:
    """Search memories by meaning and keywords, best first. Each has score
    (relevance to the query) and confidence (trust in the memory itself), both
    0-1; an empty list means nothing relevant is stored."""
    # The arguments but the channel are the request's fields, by name.
    given = {name: value for name, value in locals().items() if name in RECALL_FIELDS}
    on_channel(palace, channel)
    return hits_json(reading.recall(palace.seat, RecallRequest.of(**given)))


def memory_get(palace: Palace, *, memory_id: MemoryId) -> shapes.MemoryResult:
    """Read one memory in full by its memory_id."""
    return {"memory": memory_json(palace.get(memory_id))}


def memory_forget(
    palace: Palace,
    *,
    memory_id: MemoryId,
    hard: Annotated[
        bool, Field(description="true: delete it and its history; false: archive it.")
    ] = False,
) -> shapes.Forgotten:
    """Forget a memory you own that is wrong or obsolete: archive it (hidden
    from search, kept) or, with hard, delete it."""
    memory = palace.forget(memory_id, hard=hard)
    return {"forgotten": memory.id, "hard": hard}


def memory_update(
    palace: Palace,
    *,
    memory_id: MemoryId,
    content: Annotated[str | None, Field(description="The new text.")] = None,
    title: Annotated[str | None, Field(description='The new title; "" removes it.')] = None,
    tags: Annotated[
        list[str] | None, listed, Field(description="The new tags; [] removes them.")
    ] = None,
    category: Annotated[
        CategoryName | None, Field(description=described("The new category.", Category))
    ] = None,
    type: Annotated[
        TypeName | None, Field(description=described("The new type.", MemoryType))
    ] = None,
    store: Annotated[
        StoreName | None, Field(description=described("The new store.", StoreKind))
    ] = None,
    visibility: Annotated[
        VisibilityName | None, Field(description=described("The new visibility.", Visibility))
    ] = None,
    group: Annotated[
        str | None, Field(description="The group whose agents may read it (visibility group).")
    ] = None,
    valid_from: Annotated[
        When, Field(description='When it became true (ISO 8601); "" removes it.')
    ] = None,
    valid_to: Annotated[
        When, Field(description='When it stopped being true (ISO 8601); "" removes it.')
    ] = None,
    metadata: Annotated[
        dict[str, Any] | None, Field(description="Your own JSON fields; {} removes them.")
    ] = None,
) -> shapes.Updated:
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
    session: Annotated[
        str | None, Field(description="Only memories of this conversation session.")
    ] = None,
    created_after: Annotated[
        When, Field(description="Only memories created at or after this ISO 8601 date or time.")
    ] = None,
    created_before: Annotated[
        When, Field(description="Only memories created before this ISO 8601 date or time.")
    ] = None,
    include_archived: IncludeArchived = False,
    include_superseded: Annotated[
        bool, Field(description="Also return older versions that a correction replaced.")
    ] = False,
    limit: Annotated[int, Range(1, LIST_LIMIT), Field(description="Memories per page.")] = 50,
    cursor: Annotated[
        str | None, Field(description="The next_cursor of the page before; omitted: the first.")
    ] = None,
) -> shapes.MemoryPage:
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
    more = len(found) > limit
    return {
        "memories": [memory_json(m) for m in page],
        "next_cursor": listing.encode_cursor(page[-1]) if more else None,
    }


def memory_stats(palace: Palace) -> shapes.StatsResult:
    """Counts of the memories you can see, by type, store, category and agent."""
    return {"stats": stats_json(palace.stats())}


def memory_feedback(
    palace: Palace,
    *,
    memory_id: MemoryId,
    useful: Annotated[bool, Field(description="true: it helped the task; false: it did not.")],
) -> shapes.Feedback:
    """Say whether a recalled memory was useful: a signal for ranking and for
    linking memories useful together. Changes no memory."""
    signal = palace.feedback(memory_id, useful=useful)
    return {"recorded": signal is not None, "memory_id": memory_id, "useful": useful}


def memory_erase(
    palace: Palace,
    *,
    kind: Annotated[
        str,
        choice(SELECTION_KINDS),
        Field(description=described("What to erase.", "selection")),
    ],
    value: Annotated[
        str | None, Field(description="The memory_id, channel, session or entity name.")
    ] = None,
    types: Types = None,
    stores: Stores = None,
    categories: Categories = None,
    created_before: Annotated[When, Field(description="Created before (ISO 8601).")] = None,
    # Strict: only a JSON true erases ("yes" or 1 is refused, not taken for true).
    confirm: Annotated[bool, Strict(), Field(description="Erase; without it a dry run.")] = False,
) -> shapes.Erased:
    """Erase for good memories you own, every older version and everything
    derived from them. A dry run (counts only) unless confirm. Returns the
    receipt: counts by record kind and a digest of the ids, never content."""
    selection = parse_selection(
        kind,
        value,
        types=types,
        categories=categories,
        stores=stores,
        created_before=created_before,
    )
    receipt = palace.erase(selection, confirm=confirm).to_dict()
    return {"receipt": cast(shapes.Receipt, {k: v for k, v in receipt.items() if v is not None})}
