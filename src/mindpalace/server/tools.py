"""The operations both servers expose: one function per tool over ``Palace``.

Each tool is a plain function whose first argument is the caller's
``Palace`` (already scoped to the caller's agent) and whose other arguments
are keyword-only, typed and described with ``Annotated[..., Field(...)]``.
The MCP server and the REST API are generated from ``OPERATIONS``: the
signature becomes the tool's JSON schema and the REST body (or query), the
docstring the tool's description, ``describe_error`` the one error mapping.

Adding a tool is two steps: write the function here, and list it in
``OPERATIONS`` with its REST method and path. Nothing else changes (the
tests ask for one sample call in ``tests/server/samples.py``). For example,
once the facade has skills::

    def activate_skills(
        palace: Palace,
        *,
        query: Query,
        limit: Annotated[int, Field(description="How many skills, 1-20.")] = 5,
    ) -> dict[str, Any]:
        \"\"\"The description the model reads: what it does, when to call it.\"\"\"
        return {"skills": [s.to_dict() for s in palace.skills.activate(query, limit=limit)]}

    Operation(activate_skills, "POST", "/v1/skills/activate"),  # in OPERATIONS

Results are JSON objects built by ``shaping`` (``hits_json`` for anything
that returns recall hits, so every search has one shape).

A tool with a ``channel`` argument runs on the caller's
peer-facing palace of that channel: the transports resolve it before the
call (``PalacePool.for_agent(agent, channel=...)`` over HTTP,
``through_channel`` over stdio), and the tool checks it got that palace.

Enumerated values are typed ``str`` with the valid options in the schema
(``_enum``), so a bad value reaches ``Palace`` and comes back as a
``ValidationError`` naming the valid options (HTTP 400) rather
than as a generic schema failure.
"""

from __future__ import annotations

import enum
import functools
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, create_model

from mindpalace import listing
from mindpalace.errors import (
    BusyError,
    EmbeddingMismatch,
    MindPalaceError,
    NotFoundError,
    PermissionDenied,
    ValidationError,
)
from mindpalace.family import DIRECTIONS
from mindpalace.models import Category, MemoryKind, MemoryType, Source, StoreKind, Visibility
from mindpalace.palace import Palace
from mindpalace.retrieval.modes import MODES
from mindpalace.server.shaping import (
    answer_json,
    hits_json,
    memory_json,
    message_json,
    search_json,
)
from mindpalace.validation import check_limit

__all__ = [
    "CHANNEL",
    "OPERATIONS",
    "Operation",
    "Problem",
    "arguments_model",
    "check_argument_names",
    "describe_error",
    "parameters",
    "through_channel",
    "wire_names",
]

SEARCH_LIMIT = 20  # limit 1-20, as the tools document
LIST_LIMIT = 100


def _enum(cls: type[enum.Enum]) -> WithJsonSchema:
    return WithJsonSchema({"type": "string", "enum": [m.value for m in cls]})


TypeName = Annotated[str, _enum(MemoryType)]
StoreName = Annotated[str, _enum(StoreKind)]
CategoryName = Annotated[str, _enum(Category)]
SourceName = Annotated[str, _enum(Source)]
VisibilityName = Annotated[str, _enum(Visibility)]
ModeName = Annotated[str, WithJsonSchema({"type": "string", "enum": list(MODES)})]
DirectionName = Annotated[str, WithJsonSchema({"type": "string", "enum": list(DIRECTIONS)})]
Entity = Annotated[
    str, Field(description="The thing asked about, by name (e.g. 'Billing', 'the Checkout API').")
]
KindName = Annotated[str, _enum(MemoryKind)]

Query = Annotated[str, Field(description="What to look for, in plain words.")]
MemoryId = Annotated[
    str, Field(description="A memory id as returned by other tools (memoryId, mem_...).")
]
CHANNEL = "channel"
Channel = Annotated[
    str | None,
    Field(
        description="Act through one peer channel (e.g. 'peer-coach:511'): see that channel's "
        "memories plus what is explicitly shared, as that peer may. Omit for your own view."
    ),
]
Tags = Annotated[
    list[str] | None, Field(description="Keep only memories having any of these tags.")
]


# -- channels -----------------------------------------------------------------------


def through_channel(palace: Palace, channel: str | None) -> Palace:
    """The palace a call with ``channel`` acts through (stdio; over HTTP the
    pool keeps one per agent and channel): ``palace`` itself without a
    channel, else a peer-facing palace of the same agent, store and index.

    Raises:
        ValidationError: a peer-facing palace asked for another channel (a
            peer never widens), or an invalid channel name.
    """
    if channel is None or channel == palace.scope.channel:
        return palace
    if palace.scope.peer:
        raise ValidationError(
            "channel", channel, reason=f"this peer acts through {palace.scope.channel!r} only"
        )
    return palace.for_agent(
        palace.scope.agent_id, groups=palace.scope.groups, channel=channel, peer=True
    )


def _on_channel(palace: Palace, channel: str | None) -> None:
    """A tool's ``channel`` selects its palace before the call (the
    transports resolve it); refuse a palace of another channel."""
    if channel is not None and palace.scope.channel != channel:
        raise ValidationError(
            "channel",
            channel,
            reason=f"the call was resolved to channel {palace.scope.channel!r}, not {channel!r}",
        )


# -- tools --------------------------------------------------------------------------


def memory_store(
    palace: Palace,
    *,
    content: Annotated[str, Field(description="The memory itself, one self-contained note.")],
    title: Annotated[str | None, Field(description="Optional one-line title.")] = None,
    type: Annotated[
        TypeName, Field(description="What the memory is about (entity taxonomy).")
    ] = "unknown",
    store: Annotated[
        StoreName,
        Field(
            description="Memory store: semantic for facts, episodic for events, "
            "procedural for how-tos, prospective for plans, sensory for raw input."
        ),
    ] = "semantic",
    category: Annotated[CategoryName, Field(description="What kind of statement it is.")] = "fact",
    tags: Annotated[list[str] | None, Field(description="Short topic tags.")] = None,
    source: Annotated[SourceName, Field(description="Who or what wrote it.")] = "manual",
    visibility: Annotated[
        VisibilityName,
        Field(description="isolated: only you; shared: every agent; group: agents of `group`."),
    ] = "isolated",
    group: Annotated[str | None, Field(description="The group, with visibility group.")] = None,
    constraint: Annotated[
        bool, Field(description="A rule that recall must always surface when relevant.")
    ] = False,
    confidence: Annotated[float, Field(description="How certain you are, 0-1.")] = 1.0,
    session: Annotated[
        str | None, Field(description="The conversation or episode it belongs to.")
    ] = None,
    kind: Annotated[
        KindName | None,
        Field(
            description="Personal-data kind: memory (default), journal, node (title = its "
            "name), issue, spec, message."
        ),
    ] = None,
    project: Annotated[
        str | None, Field(description="The project it belongs to (issues and specs).")
    ] = None,
    completed: Annotated[
        bool | None, Field(description="An issue's state (kind issue only; default open).")
    ] = None,
) -> dict[str, Any]:
    """Remember something for later: a fact, decision, lesson, rule, goal,
    workflow or event. Store one self-contained note per call. Storing the
    same text again returns the existing memory (strengthened) instead of a
    copy. Returns the stored memory with its memoryId."""
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
    type: Annotated[
        list[TypeName] | None,
        Field(description="Keep only memories of these types (e.g. ['skill'])."),
    ] = None,
    limit: Annotated[int, Field(description="How many memories at most, 1-20.")] = 10,
    expand: Annotated[
        bool,
        Field(
            description="Also bring in memories linked through the entity graph (each hit's "
            "associativeContext lists them with the path that reached them)."
        ),
    ] = True,
) -> dict[str, Any]:
    """Search stored memories by meaning and keywords, best first. Use it
    before answering questions about past facts, decisions or people. An
    empty list means nothing relevant is stored. Returns {memories:
    [{memoryId, store, category, title, content, strength, confidence, tags,
    score}], injectionBlock}: paste injectionBlock into a prompt as context."""
    check_limit(limit, low=1, high=SEARCH_LIMIT)
    return hits_json(palace.recall(query, limit=limit, types=type, expand=expand))


def personal_search(
    palace: Palace,
    *,
    query: Query,
    kinds: Annotated[
        list[KindName] | None,
        Field(
            description='Search only these kinds; omit to let the query choose ("my journal '
            'entries about X" searches the journal), [] for every kind.'
        ),
    ] = None,
    project: Annotated[
        str | None, Field(description="Search only this project (case-insensitive).")
    ] = None,
    limit: Annotated[int, Field(description="How many results at most, 1-20.")] = 10,
) -> dict[str, Any]:
    """Search the user's personal data: journal entries, knowledge nodes,
    project issues, specifications, conversation messages and memories. Use
    it for "find...", "what did I say about...", "do I have anything on...".
    Each result has its kind, date and an attribution line to show the user
    ("From your journal on 15 Jan 2026: ..."). Ranked by relevance; without
    semantic search, newest first with a notice. An empty result has a hint
    and suggested queries. Read-only."""
    check_limit(limit, low=1, high=SEARCH_LIMIT)
    return search_json(palace.search(query, kinds=kinds, project=project, limit=limit))


def recall(
    palace: Palace,
    *,
    query: Query,
    stores: Annotated[
        list[StoreName] | None, Field(description="Keep only memories of these stores.")
    ] = None,
    categories: Annotated[
        list[CategoryName] | None, Field(description="Keep only memories of these categories.")
    ] = None,
    tags: Tags = None,
    limit: Annotated[int, Field(description="How many memories at most, 1-20.")] = 10,
    include_archived: Annotated[
        bool, Field(alias="includeArchived", description="Also search archived memories.")
    ] = False,
    mode: Annotated[
        ModeName,
        Field(
            description="Recall mode, a preference (not a filter): general (all kinds "
            "equally), decision (decisions and lessons), project (goals, workflows, facts), "
            "people (persons and relationships), workflow (procedural rules and patterns), "
            "conversation (recent conversation turns)."
        ),
    ] = "general",
    include_associations: Annotated[
        bool,
        Field(
            alias="includeAssociations",
            description="Also bring in memories linked through the entity graph "
            "(listed in each memory's associativeContext).",
        ),
    ] = True,
    channel: Channel = None,
) -> dict[str, Any]:
    """Recall the memories most relevant to a topic, filtered by store,
    category or tags, ranked with a mode's preferences (mode=decision for
    past choices, people for teammates, workflow for how-tos...). Use it to
    build context before a task ("what have we decided about the
    database?"). Returns {memories: [...], injectionBlock} with each
    memory's relevance score (0-1) and confidence (0-1); an empty list comes
    with a hint."""
    _on_channel(palace, channel)
    check_limit(limit, low=1, high=SEARCH_LIMIT)
    hits = palace.recall(
        query,
        limit=limit,
        stores=stores,
        categories=categories,
        tags=tags,
        include_archived=include_archived,
        mode=mode,
        expand=include_associations,
    )
    return hits_json(hits)


def what_do_i_know(
    palace: Palace,
    *,
    topic: Annotated[str, Field(description="The topic to scan, in plain words.")],
    limit: Annotated[int, Field(description="How many memories in all, 1-100.")] = 25,
    channel: Channel = None,
) -> dict[str, Any]:
    """A broad overview of everything stored about a topic, grouped by
    category (facts, decisions, lessons, workflows, goals, then the rest),
    de-duplicated, each group best first. Use it for "what do I know about
    X?" rather than a single question. Returns {groups: [{name, memories}],
    memories, injectionBlock, hint}."""
    _on_channel(palace, channel)
    return answer_json(palace.family.what_do_i_know(topic, limit=limit))


def why_did_we(
    palace: Palace,
    *,
    query: Annotated[str, Field(description="The decision asked about, e.g. 'choose Convex'.")],
    limit: Annotated[int, Field(description="How many linked memories at most, 1-50.")] = 10,
    channel: Channel = None,
) -> dict[str, Any]:
    """Trace why a decision was made: the decision, what it superseded,
    and the lessons, events and messages linked to it, in time order, each
    with its relation to the decision. Returns {groups: [{name: timeline,
    memories: [{..., relation, via}]}], memories, injectionBlock, hint}."""
    _on_channel(palace, channel)
    return answer_json(palace.family.why_did_we(query, limit=limit))


def who_owns(
    palace: Palace,
    *,
    entity: Entity,
    limit: Annotated[int, Field(description="How many owners at most, 1-50.")] = 10,
    channel: Channel = None,
) -> dict[str, Any]:
    """Who owns, maintains, leads or manages something, from what current
    memories state ("Alice owns the Billing service"); each answer cites the
    memories that say so, superseded statements excluded. Returns {groups:
    [{name: owner, memories: [{..., relation}]}], memories, injectionBlock}."""
    _on_channel(palace, channel)
    return answer_json(palace.family.who_owns(entity, limit=limit))


def depends_on(
    palace: Palace,
    *,
    entity: Entity,
    direction: Annotated[
        DirectionName,
        Field(
            description="dependents: what depends on the entity; dependencies: what the "
            "entity depends on."
        ),
    ] = "dependents",
    limit: Annotated[int, Field(description="How many answers at most, 1-50.")] = 10,
    channel: Channel = None,
) -> dict[str, Any]:
    """Dependency tracing from what current memories state ("the API
    depends on Redis"): what depends on an entity, or what it depends on.
    Each answer cites the memories that say so. Returns {groups: [{name,
    memories}], memories, injectionBlock, hint}."""
    _on_channel(palace, channel)
    return answer_json(palace.family.depends_on(entity, direction=direction, limit=limit))


def preflight(
    palace: Palace,
    *,
    action: Annotated[str, Field(description="What you are about to do, in plain words.")],
    limit: Annotated[int, Field(description="How many memories per group, 1-20.")] = 5,
    channel: Channel = None,
) -> dict[str, Any]:
    """Call before acting: the constraints and rules that apply, relevant
    decisions and lessons, workflows, skills and recent related events,
    grouped, with an injectionBlock to paste into the prompt."""
    _on_channel(palace, channel)
    return answer_json(palace.family.preflight(action, limit=limit))


def recent(
    palace: Palace,
    *,
    n: Annotated[int, Field(description="How many turns, 1-1000.")] = 20,
    session: Annotated[str | None, Field(description="Only this conversation session.")] = None,
) -> dict[str, Any]:
    """The most recent conversation turns, oldest first, for continuity
    ("what did we just discuss?"). Not ranked by relevance."""
    return {"messages": [memory_json(m) for m in palace.recent(n, session=session)]}


def search_messages(
    palace: Palace,
    *,
    phrase: Annotated[str, Field(description="The exact phrase to find (case-insensitive).")],
    limit: Annotated[int, Field(description="How many matches at most, 1-100.")] = 20,
    around: Annotated[int, Field(description="Turns of context on each side, 0-10.")] = 1,
    session: Annotated[str | None, Field(description="Only this conversation session.")] = None,
) -> dict[str, Any]:
    """Find conversation turns containing an exact phrase, newest first,
    each with the turns around it. Use it when you remember the wording but
    not the context; use recall for meaning."""
    matches = palace.search_messages(phrase, limit=limit, around=around, session=session)
    return {"messages": [message_json(m) for m in matches]}


def memory_get(
    palace: Palace, *, memory_id: Annotated[MemoryId, Field(alias="memoryId")]
) -> dict[str, Any]:
    """Read one memory in full by its memoryId."""
    return {"memory": memory_json(palace.get(memory_id))}


def memory_forget(
    palace: Palace,
    *,
    memory_id: Annotated[MemoryId, Field(alias="memoryId")],
    hard: Annotated[
        bool,
        Field(
            description="Delete permanently instead of archiving (archived memories "
            "are hidden from recall but kept)."
        ),
    ] = False,
) -> dict[str, Any]:
    """Forget a memory you own: archive it (default) or delete it with hard.
    Use it when a memory is wrong or obsolete."""
    memory = palace.forget(memory_id, hard=hard)
    return {"forgotten": memory.id, "hard": hard}


def memory_update(
    palace: Palace,
    *,
    memory_id: Annotated[MemoryId, Field(alias="memoryId")],
    content: Annotated[str | None, Field(description="The new text.")] = None,
    title: Annotated[str | None, Field(description='The new title ("" removes it).')] = None,
    tags: Annotated[list[str] | None, Field(description="The new tags ([] removes them).")] = None,
    category: Annotated[CategoryName | None, Field(description="The new category.")] = None,
    type: Annotated[TypeName | None, Field(description="The new type.")] = None,
    store: Annotated[StoreName | None, Field(description="The new store.")] = None,
    visibility: Annotated[
        VisibilityName | None, Field(description="The new visibility (isolated, shared, group).")
    ] = None,
    group: Annotated[str | None, Field(description="The group, with visibility group.")] = None,
    valid_from: Annotated[
        str | None, Field(alias="validFrom", description='ISO 8601; "" removes it.')
    ] = None,
    valid_to: Annotated[
        str | None, Field(alias="validTo", description='ISO 8601; "" removes it.')
    ] = None,
    metadata: Annotated[
        dict[str, Any] | None, Field(description="The new metadata ({} removes it).")
    ] = None,
) -> dict[str, Any]:
    """Correct a memory you own: change its text, title, tags, category,
    type, store, visibility, validity or metadata; omitted fields are kept.
    The change is a new version with a NEW memoryId (use it from now on);
    the old version stays in the history, superseded by the new one. A
    change that changes nothing returns the memory as it is (updated:
    false). Returns {memory, previousId, updated}."""
    given: dict[str, object] = {
        "content": content,
        "title": title,
        "tags": tags,
        "category": category,
        "type": type,
        "store": store,
        "visibility": visibility,
        "group": group,
        "valid_from": valid_from,
        "valid_to": valid_to,
        "metadata": metadata,
    }
    clearable = {"title", "group", "valid_from", "valid_to"}
    changes = {
        name: None if value == "" and name in clearable else value
        for name, value in given.items()
        if value is not None
    }
    memory = palace.update(memory_id, **changes)  # type: ignore[arg-type]
    updated = memory.id != memory_id
    return {"memory": memory_json(memory), "previousId": memory_id, "updated": updated}


def memory_list(
    palace: Palace,
    *,
    type: Annotated[list[TypeName] | None, Field(description="Only these types.")] = None,
    store: Annotated[list[StoreName] | None, Field(description="Only these stores.")] = None,
    category: Annotated[
        list[CategoryName] | None, Field(description="Only these categories.")
    ] = None,
    tags: Tags = None,
    kind: Annotated[list[KindName] | None, Field(description="Only these kinds.")] = None,
    session: Annotated[str | None, Field(description="Only this session.")] = None,
    created_after: Annotated[
        str | None, Field(alias="createdAfter", description="Created at or after (ISO 8601).")
    ] = None,
    created_before: Annotated[
        str | None, Field(alias="createdBefore", description="Created before (ISO 8601).")
    ] = None,
    include_archived: Annotated[
        bool, Field(alias="includeArchived", description="Also archived memories.")
    ] = False,
    include_superseded: Annotated[
        bool, Field(alias="includeSuperseded", description="Also replaced versions.")
    ] = False,
    limit: Annotated[int, Field(description="How many memories per page, 1-100.")] = 50,
    cursor: Annotated[
        str | None, Field(description="The previous page's nextCursor; omit for the first.")
    ] = None,
) -> dict[str, Any]:
    """List the memories you can see, newest first, filtered, a page at a
    time: pass the answer's nextCursor back as cursor for the next page
    (null when there is none). Returns {memories, nextCursor}."""
    check_limit(limit, low=1, high=LIST_LIMIT)
    found = palace.memories(
        limit=limit + 1,
        types=type,
        stores=store,
        categories=category,
        tags=tags,
        kinds=kind,
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
        "nextCursor": listing.encode_cursor(page[-1]) if more else None,
    }


def activate_skills(
    palace: Palace,
    *,
    query: Annotated[str, Field(description="The task at hand, in free text.")],
    limit: Annotated[int, Field(description="How many skills at most, 1-50.")] = 5,
) -> dict[str, Any]:
    """Call at the start of any non-trivial task: the stored skills
    (procedures, gotchas, tool conventions) most relevant to it, ranked, each
    with name, score, tags and associative_context (related skills). Then
    call get_skill for the full steps of the one you use."""
    return {"skills": [hit.to_dict() for hit in palace.skills.activate(query, limit=limit)]}


def get_skill(
    palace: Palace,
    *,
    name: Annotated[str, Field(description="The skill's name, e.g. watermark-media.")],
) -> dict[str, Any]:
    """The full definition of one skill: description, level-2 sections
    (steps, parameters, examples), tools, tags and correlated skills with
    weights. An unknown name is an error listing the closest names."""
    return {"skill": palace.skills.get(name).to_dict()}


def find_skills(
    palace: Palace,
    *,
    tags: Annotated[str, Field(description="Comma-separated tags, e.g. 'media,watermark'.")],
    limit: Annotated[int, Field(description="How many skills at most, 1-1000.")] = 20,
) -> dict[str, Any]:
    """Skills ranked by how many of the given tags they carry: use it when
    you know the domain but not the task."""
    return {"skills": [m.to_dict() for m in palace.skills.find(tags, limit=limit)]}


def memory_recall(
    palace: Palace,
    *,
    query: Query,
    max_tokens: Annotated[
        int, Field(description="Token budget of the returned context, 256-8192.")
    ] = 2048,
) -> dict[str, Any]:
    """A prompt-ready context block for a task: the relevant skills' most
    useful sections and the relevant memories, each attributed and dated,
    framed as informational, within max_tokens (the tokenizer is named)."""
    return {"context": palace.context(query, max_tokens=max_tokens).to_dict()}


def memory_feedback(
    palace: Palace,
    *,
    memory_id: Annotated[MemoryId, Field(alias="memoryId")],
    useful: Annotated[bool, Field(description="Whether the recalled memory helped.")],
) -> dict[str, Any]:
    """Tell mindpalace whether a recalled memory was useful: a training
    signal for ranking and for consolidation (memories useful together get
    linked more strongly). Changes no memory."""
    signal = palace.feedback(memory_id, useful=useful)
    return {"recorded": signal is not None, "memoryId": memory_id, "useful": useful}


def memory_stats(palace: Palace) -> dict[str, Any]:
    """Counts of the memories you can see, by type, store, category and agent."""
    stats = palace.stats().to_dict()
    del stats["path"]  # where the server keeps its data is none of a caller's business
    return {"stats": stats}


# -- the registry -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Operation:
    """One tool: its function, and where the REST API serves it.

    Attributes:
        run: the tool function (``Palace`` first, then keyword arguments).
        method: the REST method; GET and DELETE take arguments from the query
            string, POST and PATCH from a JSON body.
        path: the REST path; ``{name}`` segments are arguments too.
        status: the REST status of a success.
        read_only: the tool changes nothing (an MCP tool annotation).
    """

    run: Callable[..., dict[str, Any]]
    method: str
    path: str
    status: int = 200
    read_only: bool = True

    @property
    def name(self) -> str:
        """The MCP tool name: the function's name."""
        return self.run.__name__

    @property
    def description(self) -> str:
        """What the tool does, for a model deciding whether to call it."""
        return " ".join((self.run.__doc__ or "").split())


OPERATIONS: tuple[Operation, ...] = (
    Operation(memory_store, "POST", "/v1/memories", status=201, read_only=False),
    Operation(memory_search, "POST", "/v1/search"),
    Operation(recall, "POST", "/v1/recall"),
    Operation(what_do_i_know, "POST", "/v1/what-do-i-know"),
    Operation(why_did_we, "POST", "/v1/why-did-we"),
    Operation(who_owns, "GET", "/v1/owners"),
    Operation(depends_on, "GET", "/v1/dependencies"),
    Operation(preflight, "POST", "/v1/preflight"),
    Operation(personal_search, "POST", "/v1/personal/search"),
    Operation(recent, "GET", "/v1/recent"),
    Operation(search_messages, "POST", "/v1/messages/search"),
    Operation(memory_get, "GET", "/v1/memories/{memoryId}"),
    Operation(memory_forget, "DELETE", "/v1/memories/{memoryId}", read_only=False),
    Operation(memory_update, "PATCH", "/v1/memories/{memoryId}", read_only=False),
    Operation(memory_list, "GET", "/v1/memories"),
    Operation(memory_stats, "GET", "/v1/stats"),
    Operation(activate_skills, "POST", "/v1/skills/activate"),
    Operation(get_skill, "GET", "/v1/skills/{name}"),
    Operation(find_skills, "GET", "/v1/skills"),
    Operation(memory_recall, "POST", "/v1/context"),
    Operation(memory_feedback, "POST", "/v1/feedback", read_only=False),
)


def parameters(op: Operation) -> list[inspect.Parameter]:
    """The tool's arguments: its function's parameters after the palace,
    with annotations evaluated."""
    signature = inspect.signature(op.run, eval_str=True)
    return list(signature.parameters.values())[1:]


@functools.cache
def arguments_model(op: Operation) -> type[BaseModel]:
    """A pydantic model of the tool's arguments (wire names, unknown names
    refused): the REST API validates with it and publishes its schema."""
    fields: dict[str, Any] = {
        p.name: (p.annotation, ... if p.default is inspect.Parameter.empty else p.default)
        for p in parameters(op)
    }
    model: type[BaseModel] = create_model(
        f"{op.name}_arguments", __config__=ConfigDict(extra="forbid"), **fields
    )
    return model


@functools.cache
def wire_names(op: Operation) -> dict[str, str]:
    """Argument name on the wire (seed spelling, e.g. ``includeArchived``)
    -> the function's parameter name."""
    return {field.alias or name: name for name, field in arguments_model(op).model_fields.items()}


def check_argument_names(op: Operation, names: Iterable[str]) -> None:
    """Refuse argument names the tool does not take, as the REST argument
    model does (``extra="forbid"``): a misspelt option must not be dropped
    silently.

    Raises:
        ValidationError: naming the unknown arguments and the valid ones.
    """
    valid = wire_names(op)
    unknown = [name for name in names if name not in valid]
    if unknown:
        listed = ", ".join(repr(name) for name in unknown)
        plural = "s" if len(unknown) > 1 else ""
        raise ValidationError(
            "arguments",
            unknown[0],
            valid=valid,
            reason=f"unknown argument{plural} {listed} for {op.name}",
        )


# -- errors -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Problem:
    """An error as both transports report it.

    Attributes:
        status: the HTTP status.
        code: a stable machine-readable name.
        message: a sentence for the caller; for invalid input it names the
            valid options.
        field: the offending argument, for invalid input.
        valid: the accepted values, when the set is finite.
    """

    status: int
    code: str
    message: str
    field: str | None = None
    valid: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The JSON error body."""
        out: dict[str, Any] = {"error": self.code, "message": self.message}
        if self.field is not None:
            out["field"] = self.field
        if self.valid:
            out["valid"] = list(self.valid)
        return out


def describe_error(exc: MindPalaceError) -> Problem:
    """The one mapping of library errors to what a client sees."""
    if isinstance(exc, ValidationError):
        return Problem(400, "invalid_argument", str(exc), field=exc.field, valid=exc.valid)
    if isinstance(exc, NotFoundError):
        return Problem(404, "not_found", str(exc))
    if isinstance(exc, PermissionDenied):
        return Problem(403, "forbidden", str(exc))
    if isinstance(exc, EmbeddingMismatch):
        return Problem(409, "reindex_needed", str(exc))
    if isinstance(exc, BusyError):
        return Problem(503, "busy", str(exc))
    return Problem(500, "internal", str(exc))
