"""Remembering through a view: validate records into ``NewMemory`` values,
then write them in one transaction (``Palace.remember`` / ``remember_many``
and conversation ingest share these steps)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from mindpalace.errors import ValidationError, shown
from mindpalace.graph.relations import extract_graph
from mindpalace.models import (
    Category,
    Memory,
    MemoryType,
    NewMemory,
    Source,
    StoreKind,
    Visibility,
    parse_enum,
)
from mindpalace.retrieval.indexing import embed_text, text_hash
from mindpalace.scoping import write_channel
from mindpalace.store.base import VectorBatch
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

__all__ = ["RECORD_FIELDS", "new_memory", "prepare_many", "remember_one", "write_many"]


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
    if not news:
        return []
    engine = view.engine
    now = engine.now()
    if vectors is None:
        news = [replace(n, embed_hash=None) for n in news]
    items = [(n, engine.ids.next(now)) for n in news]
    added = engine.store.add_many(
        items, now=now, scope=view.scope, vectors=vectors, signals=engine.settings.signals
    )
    return [r.memory for r in added]


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
