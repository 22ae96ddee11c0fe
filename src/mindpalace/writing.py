"""Remembering through a view: validate records into ``NewMemory`` values,
then write them in one transaction (``Palace.remember`` / ``remember_many``
and conversation ingest share these steps)."""

from __future__ import annotations

import enum
import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from mindpalace.embed.texts import embed_text, text_hash
from mindpalace.errors import NotFoundError, ValidationError, shown
from mindpalace.graph.relations import extract_graph
from mindpalace.models import (
    ISSUE_NUMBER,
    Category,
    Memory,
    MemoryKind,
    MemoryType,
    NewMemory,
    Source,
    StoreKind,
    Visibility,
    parse_enum,
)
from mindpalace.scoping import check_change, write_channel, write_owner
from mindpalace.store.base import AddResult, VectorBatch
from mindpalace.validation import (
    check_content,
    check_context,
    check_identifier,
    check_kind,
    check_metadata,
    check_tags,
    check_title,
    check_unit,
    content_hash,
    parse_datetime,
)
from mindpalace.view import View

__all__ = [
    "KEEP",
    "RECORD_FIELDS",
    "UPDATE_FIELDS",
    "Keep",
    "new_memory",
    "prepare_many",
    "remember_one",
    "update_one",
    "write_many",
    "write_results",
]


def new_memory(
    view: View,
    content: object,
    *,
    title: object = None,
    context: object = None,
    session: object = None,
    type: object = MemoryType.UNKNOWN,
    store: object = StoreKind.SEMANTIC,
    category: object = Category.FACT,
    tags: Iterable[str] | str | None = None,
    source: object = Source.MANUAL,
    visibility: object = Visibility.ISOLATED,
    group: object = None,
    channel: object = None,
    constraint: object = False,
    confidence: object = 1.0,
    valid_from: object = None,
    valid_to: object = None,
    created_at: object = None,
    metadata: object = None,
    identity: str | None = None,
    kind: object = None,
    project: object = None,
    completed: object = None,
) -> NewMemory:
    """One validated memory for ``view``'s agent (``Palace.remember`` names
    the fields); ``identity`` is what besides the text makes two records one
    memory (a conversation turn's session and time).

    Raises:
        ValidationError: on any invalid field.
    """
    engine = view.engine
    text = check_content(content, max_chars=engine.settings.max_content_chars)
    vis = parse_enum(Visibility, visibility, "visibility")
    group_name = check_identifier(group, "group", optional=True)
    if vis is Visibility.GROUP and group_name is None:
        raise ValidationError("group", group, reason="visibility 'group' needs a group name")
    if vis is not Visibility.GROUP and group_name is not None:
        raise ValidationError(
            "group",
            group,
            reason=f"group is only meaningful with visibility 'group', not {vis.value!r}",
        )
    start = parse_datetime(valid_from, "valid_from")
    end = parse_datetime(valid_to, "valid_to")
    if start is not None and end is not None and end < start:
        raise ValidationError("valid_to", valid_to, reason="valid_to is before valid_from")
    clean_title = check_title(title)
    mentions, relations = extract_graph([clean_title, text], engine.extractor)
    category_ = parse_enum(Category, category, "category")
    kind_, project_, completed_ = check_kind(
        kind, category=category_, project=project, completed=completed
    )
    return NewMemory(
        content=text,
        # A conversation turn is the same memory only at the same place
        # and time: "thanks!" said twice is two turns.
        content_hash=content_hash(f"{identity}\x1f{text}" if identity else text),
        agent_id=view.scope.agent_id,
        title=clean_title,
        context=check_context(context, max_chars=engine.settings.max_content_chars),
        session=check_identifier(session, "session", optional=True),
        embed_hash=text_hash(embed_text(clean_title, text)),
        type=parse_enum(MemoryType, type, "type"),
        store=parse_enum(StoreKind, store, "store"),
        category=category_,
        tags=check_tags(tags),
        source=parse_enum(Source, source, "source"),
        visibility=vis,
        group=group_name,
        channel=write_channel(view.scope, channel),
        valid_from=start,
        valid_to=end,
        created_at=parse_datetime(created_at, "created_at"),
        confidence=check_unit(confidence, "confidence"),
        constraint=bool(constraint),
        metadata=check_metadata(metadata),
        mentions=mentions,
        relations=relations,
        kind=kind_,
        project=project_,
        completed=completed_,
    )


# A record of remember_many: new_memory's fields (remember's arguments, plus
# ``identity``).
RECORD_FIELDS = frozenset(inspect.signature(new_memory).parameters) - {"view"}


def _record_name(index: int) -> str:
    return f"record {index}"


def prepare_many(
    view: View,
    records: Iterable[Mapping[str, Any]],
    *,
    name: Callable[[int], str] = _record_name,
) -> list[NewMemory]:
    """Validate ``records``, touching nothing (issue numbers and
    supersession are decided inside the write's transaction).

    Raises:
        ValidationError: naming the first invalid record: ``name(index)``
            ("record 3" unless the caller knows better, such as a file line).
    """
    news: list[NewMemory] = []
    for index, record in enumerate(records):
        if not isinstance(record, Mapping) or "content" not in record:
            raise ValidationError(
                "records", index, reason=f"{name(index)} must be a mapping with 'content'"
            )
        fields = dict(record)
        unknown = sorted(shown(k) if not isinstance(k, str) else k for k in fields)
        unknown = [k for k in unknown if k not in RECORD_FIELDS]
        if unknown:
            raise ValidationError(
                "records",
                unknown[0],
                valid=sorted(RECORD_FIELDS),
                reason=f"{name(index)} has unknown field {unknown[0]!r}",
            )
        try:
            news.append(new_memory(view, **fields))
        except ValidationError as exc:
            raise ValidationError(exc.field, exc.value, reason=f"{name(index)}: {exc}") from None
    return news


def write_many(view: View, news: list[NewMemory], vectors: VectorBatch | None) -> list[Memory]:
    """Write ``news`` and their ``vectors`` (None: not embedded; reindex
    will, later) in one transaction; the stored memories, in order."""
    return [r.memory for r in write_results(view, news, vectors)]


def write_results(
    view: View, news: list[NewMemory], vectors: VectorBatch | None
) -> list[AddResult]:
    """``write_many``, telling for each memory whether it is new (an import
    reports how many were there already)."""
    if not news:
        return []
    engine = view.engine
    now = engine.now()
    if vectors is None:
        news = [replace(n, embed_hash=None) for n in news]
    items = [(n, engine.ids.next(now)) for n in news]
    results = engine.store.add_many(
        items, now=now, scope=view.scope, vectors=vectors, signals=engine.settings.signals
    )
    engine.semantic.written(vectors)
    return results


def remember_one(view: View, new: NewMemory) -> Memory:
    """Embed and write one validated memory (``Palace.remember``)."""
    engine = view.engine
    now = engine.now()
    vectors = engine.semantic.vectors_for([embed_text(new.title, new.content)])
    if vectors is None:  # not embedded: reindex will
        new = replace(new, embed_hash=None)
    return engine.store.add(
        new,
        memory_id=engine.ids.next(now),
        now=now,
        scope=view.scope,
        vectors=vectors,
        signals=engine.settings.signals,
    ).memory


class Keep(enum.Enum):
    """The default of ``Palace.update``'s fields: keep the stored value."""

    KEEP = "keep"


KEEP = Keep.KEEP

# What an update may change (``Palace.update``'s fields).
UPDATE_FIELDS = (
    "content",
    "title",
    "tags",
    "category",
    "type",
    "store",
    "visibility",
    "group",
    "valid_from",
    "valid_to",
    "metadata",
)


def _next_fields(old: Memory, changes: Mapping[str, object]) -> dict[str, Any]:
    """``new_memory``'s arguments for the next version of ``old``."""
    fields: dict[str, Any] = {
        "content": old.content,
        "title": old.title,
        "tags": list(old.tags),
        "category": old.category,
        "type": old.type,
        "store": old.store,
        "visibility": old.visibility,
        "group": old.group,
        "valid_from": old.valid_from,
        "valid_to": old.valid_to,
        "metadata": dict(old.metadata),
    }
    fields.update(changes)
    if "visibility" in changes and "group" not in changes:
        vis = parse_enum(Visibility, changes["visibility"], "visibility")
        fields["group"] = old.group if vis is Visibility.GROUP else None
    if ISSUE_NUMBER in old.metadata and isinstance(fields["metadata"], Mapping):
        # An issue keeps its number whatever else its metadata becomes.
        fields["metadata"] = {ISSUE_NUMBER: old.metadata[ISSUE_NUMBER], **fields["metadata"]}
    derived = MemoryKind.MESSAGE if old.category is Category.CONVERSATION else MemoryKind.MEMORY
    fields.update(
        context=old.context,
        session=old.session,
        source=old.source,
        constraint=old.constraint,
        confidence=old.confidence,
        created_at=old.created_at,
        # A kind that followed from the category follows it again.
        kind=None if old.kind is derived else old.kind,
        project=old.project,
        completed=old.completed,
    )
    return fields


def _unchanged(old: Memory, new: NewMemory) -> bool:
    """Whether ``new`` says what ``old`` says (tags in any order)."""
    return set(old.tags) == set(new.tags) and all(
        getattr(old, name) == getattr(new, name)
        for name in (*UPDATE_FIELDS, "kind", "content_hash")
        if name != "tags"
    )


def update_one(view: View, memory_id: str, changes: Mapping[str, object]) -> Memory:
    """``Palace.update``: validate every change against the stored memory,
    then write the next version (or nothing, when nothing changes).

    Raises:
        ValidationError: an unknown field or invalid value; nothing is written.
        NotFoundError: no such memory in the view.
        PermissionDenied: ``scoping.check_change`` refuses it (another
            agent's memory, or one outside a peer-facing view's channel).
    """
    unknown = sorted(set(changes) - set(UPDATE_FIELDS))
    if unknown:
        raise ValidationError(
            "field", unknown[0], valid=UPDATE_FIELDS, reason=f"{unknown[0]!r} cannot be updated"
        )
    engine = view.engine
    if not isinstance(memory_id, str) or not memory_id:
        raise ValidationError("id", memory_id, reason="id must be a non-empty string")
    old = engine.store.get(memory_id, view.scope)
    if old is None:
        raise NotFoundError(memory_id)
    check_change(view.scope, old, "update")
    if old.superseded_by is not None:
        raise ValidationError(
            "id",
            memory_id,
            reason=f"memory {memory_id!r} was replaced by {old.superseded_by!r}: update that",
        )
    new = new_memory(view, **_next_fields(old, changes))
    # The memory stays where it is (its channel), and its text keeps its
    # identity (a conversation turn's session and time) while unchanged.
    new = replace(new, channel=old.channel, strength=old.strength)
    if new.content == old.content:
        new = replace(new, content_hash=old.content_hash)
    if _unchanged(old, new):
        return old
    now = engine.now()
    vectors = engine.semantic.vectors_for([embed_text(new.title, new.content)])
    if vectors is None:
        new = replace(new, embed_hash=None)
    written = engine.store.revise(
        memory_id,
        new,
        memory_id=engine.ids.next(now),
        owner=write_owner(view.scope),
        now=now,
        scope=view.scope,
        vectors=vectors,
    )
    if written is None:  # deleted by someone else in between
        raise NotFoundError(memory_id)
    return written


def restore_one(view: View, memory_id: str) -> Memory:
    """``Palace.restore``: un-archive a memory the view may change (one
    that is not archived is returned as it is).

    Raises:
        ValidationError: an id that is not a non-empty string.
        NotFoundError: no such memory in the view.
        PermissionDenied: ``scoping.check_change`` refuses it (another
            agent's memory, or one outside a peer-facing view's channel).
    """
    engine = view.engine
    old = view.get(memory_id)
    check_change(view.scope, old, "restore")
    if not old.archived:
        return old
    if not engine.store.restore(old.id, owner=write_owner(view.scope), now=engine.now()):
        raise NotFoundError(memory_id)  # deleted or restored by someone else in between
    return view.get(old.id)
