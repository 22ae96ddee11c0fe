"""The recall family beyond memory_search, conversation turns and personal data.

Topic overviews, decision archaeology, ownership and dependency answers,
preflight, the last conversation turns, exact message search, and search
across the user's personal data. Conventions as in ``tools_memory``.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from mindpalace.models import MemoryKind
from mindpalace.palace import Palace
from mindpalace.server import shapes
from mindpalace.server.channels import Channel, on_channel
from mindpalace.server.schema import DirectionName, KindName, Query, Range, described, listed
from mindpalace.server.shaping import answer_json, memory_json, message_json, search_json

__all__ = [
    "depends_on",
    "personal_search",
    "preflight",
    "recent",
    "search_messages",
    "what_do_i_know",
    "who_owns",
    "why_did_we",
]

Entity = Annotated[
    str, Field(description="The person, system or thing asked about, by name (e.g. 'Billing').")
]
Session = Annotated[str | None, Field(description="Only turns of this conversation session.")]


def what_do_i_know(
    palace: Palace,
    *,
    topic: Annotated[str, Field(description="The topic, in plain words.")],
    limit: Annotated[int, Range(1, 100), Field(description="Memories in all, at most.")] = 25,
    per_group: Annotated[
        int, Range(1, 20), Field(description="Memories per category, at most.")
    ] = 5,
    channel: Channel = None,
) -> shapes.Answer:
    """Everything stored about a topic, grouped by category (facts, decisions,
    lessons, workflows, goals, then the rest), de-duplicated, best first.
    Returns {groups: [{name, memories}], hint}."""
    on_channel(palace, channel)
    return answer_json(palace.family.what_do_i_know(topic, limit=limit, per_group=per_group))


def why_did_we(
    palace: Palace,
    *,
    query: Annotated[str, Field(description="The decision, e.g. 'choose Convex'.")],
    limit: Annotated[int, Range(1, 50), Field(description="Linked memories, at most.")] = 10,
    channel: Channel = None,
) -> shapes.Answer:
    """Why a decision was made: the decision, what it superseded, and the
    lessons, events and messages linked to it, in time order, each with its
    relation and via. Returns {groups, hint}."""
    on_channel(palace, channel)
    return answer_json(palace.family.why_did_we(query, limit=limit))


def who_owns(
    palace: Palace,
    *,
    entity: Entity,
    limit: Annotated[int, Range(1, 50), Field(description="Owners, at most.")] = 10,
    channel: Channel = None,
) -> shapes.Answer:
    """Who owns, maintains, leads or manages something, as current memories
    state it, one group per owner citing those memories. Returns {groups, hint}."""
    on_channel(palace, channel)
    return answer_json(palace.family.who_owns(entity, limit=limit))


def depends_on(
    palace: Palace,
    *,
    entity: Entity,
    direction: Annotated[
        DirectionName,
        Field(description=described("Which way to follow.", "direction")),
    ] = "dependents",
    limit: Annotated[int, Range(1, 50), Field(description="Answers, at most.")] = 10,
    channel: Channel = None,
) -> shapes.Answer:
    """Dependencies as current memories state them ("the API depends on
    Redis"), each answer citing those memories. Returns {groups, hint}."""
    on_channel(palace, channel)
    return answer_json(palace.family.depends_on(entity, direction=direction, limit=limit))


def preflight(
    palace: Palace,
    *,
    action: Annotated[str, Field(description="What you are about to do, in plain words.")],
    limit: Annotated[int, Range(1, 20), Field(description="Memories per group, at most.")] = 5,
    channel: Channel = None,
) -> shapes.Answer:
    """Call before acting: the constraints and rules that apply, decisions,
    lessons, workflows, skills and recent events about the action, grouped.
    Returns {groups, hint}."""
    on_channel(palace, channel)
    return answer_json(palace.family.preflight(action, limit=limit))


def recent(
    palace: Palace,
    *,
    limit: Annotated[
        int, Range(1, 1000), Field(description="Turns to return, the last ones.")
    ] = 20,
    session: Session = None,
) -> shapes.Messages:
    """The last conversation turns, oldest first, for continuity ("what did we
    just discuss?"); not ranked by relevance."""
    return {"messages": [memory_json(m) for m in palace.recent(limit, session=session)]}


def search_messages(
    palace: Palace,
    *,
    phrase: Annotated[str, Field(description="The exact words (case aside).")],
    limit: Annotated[int, Range(1, 100), Field(description="Matching turns, at most.")] = 20,
    around: Annotated[
        int, Range(0, 10), Field(description="Turns shown before and after each match.")
    ] = 1,
    session: Session = None,
) -> shapes.MessageMatches:
    """Conversation turns containing an exact phrase, newest first, with the
    turns around each. For wording you remember; memory_search for meaning."""
    matches = palace.search_messages(phrase, limit=limit, around=around, session=session)
    return {"messages": [message_json(m) for m in matches]}


def personal_search(
    palace: Palace,
    *,
    query: Query,
    kinds: Annotated[
        list[KindName] | None,
        listed,
        Field(
            description=described(
                "Only these kinds; omitted: as the query says ('my journal entries about X');"
                " []: all.",
                MemoryKind,
            )
        ),
    ] = None,
    project: Annotated[
        str | None, Field(description="Only this project's issues and specs.")
    ] = None,
    limit: Annotated[int, Range(1, 20), Field(description="Results, at most.")] = 10,
    include_archived: Annotated[
        bool, Field(description="Also return archived ones (e.g. completed issues put away).")
    ] = False,
) -> shapes.PersonalResults:
    """Search the user's journal, knowledge nodes, project issues, specs and
    messages ("find...", "what did I say about..."). Each result has its kind,
    date and an attribution line to show ("From your journal on 15 Jan 2026:
    ..."). Empty: a hint and suggestions. Returns {results, ...}."""
    results = palace.search(
        query, kinds=kinds, project=project, limit=limit, include_archived=include_archived
    )
    return search_json(results)
