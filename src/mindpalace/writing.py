"""The write operations over a seat: ``remember(seat, draft)``,
``remember_many``, ``change(seat, memory_id, changes)``, ``restore`` and
``forget``, and the steps they share with conversation ingest and imports
(``prepare_many``, ``write_results``).

A request arrives as a ``Draft`` or ``Changes`` value (draft.py), already
validated; here it meets the palace: the content limit of its settings,
the channel its scope writes into, the entities its extractor finds. Then
it is embedded with the engine's model and handed to the store, which
applies the write rules (dedup, supersession, numbering) in one
transaction. ``Palace`` delegates to these with its own seat.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

import numpy as np

from mindpalace.draft import DRAFT_FIELDS, UPDATE_FIELDS, Changes, Draft
from mindpalace.embed.texts import embed_text, text_hash
from mindpalace.errors import NotFoundError, ValidationError, shown
from mindpalace.graph.relations import extract_graph
from mindpalace.models import (
    ISSUE_NUMBER,
    Category,
    Memory,
    MemoryKind,
    NewMemory,
    RecallFilters,
    Visibility,
)
from mindpalace.retrieval import hybrid
from mindpalace.retrieval.currency import link_cosine
from mindpalace.retrieval.sparse import query_terms
from mindpalace.retrieval.time import stored as stored_times
from mindpalace.scoping import check_change, write_channel, write_owner
from mindpalace.seat import Seat
from mindpalace.store import vector_bytes
from mindpalace.store.base import AddResult, VectorBatch
from mindpalace.store.supersede import may_restate
from mindpalace.validation import check_content, check_context, check_id, content_hash

__all__ = [
    "change",
    "dated",
    "forget",
    "new_memory",
    "prepare_many",
    "remember",
    "remember_many",
    "restating",
    "restore",
    "write_many",
    "write_results",
]


def new_memory(seat: Seat, draft: Draft) -> NewMemory:
    """``draft`` as ``seat`` writes it: within the settings' content limit,
    owned by the seat's agent, in its channel, with the entities and
    relations its text names.

    Raises:
        ValidationError: content or context over the settings' limit; a
            peer-facing seat writing into another channel.
    """
    engine = seat.engine
    limit = engine.settings.max_content_chars
    # The draft's text is valid but for its length (checked here, once).
    text = (
        draft.content
        if len(draft.content) <= limit
        else check_content(draft.content, max_chars=limit)
    )
    context = draft.context
    if context is not None and len(context) > limit:
        check_context(context, max_chars=limit)
    mentions, relations = extract_graph([draft.title, text], engine.extractor)
    chars = engine.store.hash_chars()
    return NewMemory(
        content=text,
        # A conversation turn is the same memory only at the same place
        # and time: "thanks!" said twice is two turns.
        content_hash=content_hash(f"{draft.identity}\x1f{text}" if draft.identity else text, chars),
        agent_id=seat.scope.agent_id,
        title=draft.title,
        context=context,
        session=draft.session,
        embed_hash=text_hash(embed_text(draft.title, text), chars),
        type=draft.type,
        store=draft.store,
        category=draft.category,
        tags=draft.tags,
        source=draft.source,
        visibility=draft.visibility,
        group=draft.group,
        channel=write_channel(seat.scope, draft.channel),
        valid_from=draft.valid_from,
        valid_to=draft.valid_to,
        created_at=draft.created_at,
        confidence=draft.confidence,
        constraint=draft.constraint,
        metadata=draft.metadata,
        mentions=mentions,
        relations=relations,
        kind=draft.memory_kind,
        project=draft.project,
        completed=draft.completed,
    )


def remember(seat: Seat, draft: Draft) -> Memory:
    """Embed and write one memory (``Palace.remember`` documents it).

    Raises:
        ValidationError: as ``new_memory``; nothing is written.
        EmbeddingMismatch: the palace's vectors come from another model.
    """
    new = new_memory(seat, draft)
    engine = seat.engine
    now = engine.now()
    vectors = engine.semantic.vectors_for([embed_text(new.title, new.content)])
    if vectors is None:  # not embedded: reindex will
        new = replace(new, embed_hash=None)
    elif not vectors.pending:
        _warm_for_restating(seat, [new], vectors)
    new = restating(seat, new, vectors, now)
    return engine.store.add(
        dated(new, now),
        memory_id=engine.ids.next(now),
        now=now,
        scope=seat.scope,
        vectors=vectors,
        signals=engine.settings.signals,
    ).memory


def _record_name(index: int) -> str:
    return f"record {index}"


def prepare_many(
    seat: Seat,
    records: Iterable[Draft | Mapping[str, Any]],
    *,
    name: Callable[[int], str] = _record_name,
) -> list[NewMemory]:
    """Validate ``records`` (drafts, or mappings of ``Draft.of``'s
    arguments), touching nothing (issue numbers and supersession are
    decided inside the write's transaction).

    Raises:
        ValidationError: naming the first invalid record: ``name(index)``
            ("record 3" unless the caller knows better, such as a file line).
    """
    news: list[NewMemory] = []
    for index, record in enumerate(records):
        if not isinstance(record, Draft | Mapping) or (
            isinstance(record, Mapping) and "content" not in record
        ):
            raise ValidationError(
                "records", index, reason=f"{name(index)} must be a mapping with 'content'"
            )
        if isinstance(record, Mapping) and not all(isinstance(k, str) for k in record):
            key = shown(next(k for k in record if not isinstance(k, str)))
            raise ValidationError(
                "records",
                key,
                valid=sorted(DRAFT_FIELDS),
                reason=f"{name(index)} has unknown field {key}",
            )
        try:
            draft = record if isinstance(record, Draft) else Draft.of(**record)
            news.append(new_memory(seat, draft))
        except ValidationError as exc:
            raise ValidationError(exc.field, exc.value, reason=f"{name(index)}: {exc}") from None
    return news


def remember_many(seat: Seat, records: Iterable[Draft | Mapping[str, Any]]) -> list[Memory]:
    """Validate, embed and write ``records`` in one transaction
    (``Palace.remember_many`` documents it)."""
    news = prepare_many(seat, records)
    if not news:
        return []
    vectors = seat.engine.semantic.vectors_for([embed_text(n.title, n.content) for n in news])
    now = seat.engine.now()
    if vectors is not None and not vectors.pending:
        _warm_for_restating(seat, news, vectors)
    news = [restating(seat, n, vectors, now) for n in news]
    return write_many(seat, news, vectors)


#: how many keyword matches a replacement in other words is looked for among
RESTATE_CANDIDATES = 5
#: once a process's writes hold this many memories that may restate one
#: (all its batches counted), those written into a palace of at least
#: ``RESTATE_WARM_ROWS`` memories are looked for in the warm keyword index,
#: loaded first from the files beside the palace when this process has
#: none; with ``RESTATE_BUILD`` of them, built when no file is there. A
#: store search costs 0.3 s at 100,000 short memories and seconds at a
#: million (it scores every row holding a word of the text), a build about
#: as much as 16 of them at either size, a load a few.
RESTATE_WARM = 1
RESTATE_BUILD = 16
RESTATE_WARM_ROWS = 20_000


def _warm_for_restating(seat: Seat, news: list[NewMemory], vectors: VectorBatch) -> None:
    """Have the warm keyword index in before a batch looks for what its
    memories restate, once this process's writes have asked for enough
    such looks. The store's full-text search scores every row holding a
    word of the text (0.2 s a search in 100,000 facts), so a bulk import
    into a large palace, from a process that never recalled, made one such
    search for each memory that says something changed. Loading the saved
    index takes about a second there (``RESTATE_WARM``, ``RESTATE_BUILD``
    say when)."""
    eligible = sum(1 for n in news if may_restate(n))
    if not eligible or link_cosine(vectors.model) is None:
        return
    seat.engine.semantic.keywords_for_writes(
        eligible, load_from=RESTATE_WARM, build_from=RESTATE_BUILD, min_rows=RESTATE_WARM_ROWS
    )


def _keyword_matches(seat: Seat, words: list[str], filters: RecallFilters) -> list[Memory]:
    """The ``RESTATE_CANDIDATES`` best keyword matches of ``words`` among
    what the seat sees under ``filters``: from this process's warm keyword
    index when it holds one (milliseconds at any size), else from the store
    (the same BM25; its full-text search scores every row that has one of
    the words, which grows with the palace)."""
    index = seat.engine.semantic.current_keywords()
    if index is None:
        found = seat.engine.store.search_text(words, seat.scope, filters, limit=RESTATE_CANDIDATES)
        return [match.memory for match in found]
    rows = hybrid.warm_matches(index, seat.scope, words, RESTATE_CANDIDATES, filters)
    by_id = seat.engine.store.get_many([key for key, _ in rows], seat.scope)
    return [by_id[key] for key, _ in rows if key in by_id]


def restating(seat: Seat, new: NewMemory, vectors: VectorBatch | None, now: datetime) -> NewMemory:
    """``new`` with the current memory it replaces in other words, when
    there is one (store/supersede.py states the rule, its second): the
    best keyword match of its category in its own scope part, written
    before it, when it is also the nearest of the five best to its
    embedding, and at least the model's link cosine near. Found before the write; the store
    checks it again in the write's transaction. Memories of the same batch
    are not candidates for each other (they are not written yet)."""
    if vectors is None or vectors.pending or not may_restate(new):
        return new
    cosine = link_cosine(vectors.model)
    blob = vectors.vectors.get(new.embed_hash or "")
    words = query_terms(new.content)
    if cosine is None or blob is None or not words:
        return new
    store = seat.engine.store
    filters = RecallFilters(
        categories=(new.category,), agents=(new.agent_id,), visibilities=(new.visibility,)
    )
    written = new.created_at or now
    olders = [
        memory
        for memory in _keyword_matches(seat, words, filters)
        if memory.kind is not MemoryKind.MESSAGE
        and (memory.group or "") == (new.group or "")
        and (memory.channel or "") == (new.channel or "")
        and memory.created_at < written
        and memory.content_hash != new.content_hash
    ]
    if not olders:
        return new
    mine = vector_bytes.from_blob(blob)
    best, nearest = cosine, None
    stored = store.memory_vectors(vectors.model, [m.id for m in olders])
    for memory in olders:
        theirs = stored.get(memory.id)
        other = None if theirs is None else vector_bytes.from_blob(theirs)
        if other is None or other.shape != mine.shape:
            continue
        norms = float(np.linalg.norm(mine) * np.linalg.norm(other)) or 1.0
        similarity = float(mine @ other) / norms
        if similarity >= best:
            best, nearest = similarity, memory
    # The two signs agree: the nearest is also the best keyword match.
    if nearest is None or nearest is not olders[0]:
        return new
    return replace(new, restates=(nearest.id,))


def dated(new: NewMemory, now: datetime) -> NewMemory:
    """``new`` with the times its content states, read here once so that
    recall need not read them again (``retrieval/time/stored.py``); ``now``
    is its creation time when it names none, as the store takes it.
    Conversation ingest reads them with a turn's date context and hands
    them in kept (``transcripts``); those stand."""
    if new.stated_times is not None:
        return new
    return replace(new, stated_times=stored_times.written(new.content, new.created_at or now))


def write_many(seat: Seat, news: list[NewMemory], vectors: VectorBatch | None) -> list[Memory]:
    """Write ``news`` and their ``vectors`` (None: not embedded; reindex
    will, later) in one transaction; the stored memories, in order."""
    return [r.memory for r in write_results(seat, news, vectors)]


def write_results(
    seat: Seat, news: list[NewMemory], vectors: VectorBatch | None
) -> list[AddResult]:
    """``write_many``, telling for each memory whether it is new (an import
    reports how many were there already)."""
    if not news:
        return []
    engine = seat.engine
    now = engine.now()
    if vectors is None:
        news = [replace(n, embed_hash=None) for n in news]
    items = [(dated(n, now), engine.ids.next(now)) for n in news]
    results = engine.store.add_many(
        items, now=now, scope=seat.scope, vectors=vectors, signals=engine.settings.signals
    )
    engine.semantic.written(vectors)
    return results


def _visible(seat: Seat, memory_id: str) -> Memory:
    """The memory ``seat`` sees under this id.

    Raises:
        ValidationError: an id that is not a non-empty string.
        NotFoundError: none.
    """
    memory = seat.engine.store.get(check_id(memory_id), seat.scope)
    if memory is None:
        raise NotFoundError(memory_id)
    return memory


def _next_draft(old: Memory, changes: Changes) -> Draft:
    """The next version of ``old``: ``changes`` over what it stores."""
    given = changes.changed()
    fields: dict[str, Any] = {name: getattr(old, name) for name in UPDATE_FIELDS}
    fields.update(given)
    if "visibility" in given and "group" not in given:
        fields["group"] = old.group if fields["visibility"] is Visibility.GROUP else None
    if ISSUE_NUMBER in old.metadata:
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
    return Draft.of(**fields)


def _unchanged(old: Memory, new: NewMemory) -> bool:
    """Whether ``new`` says what ``old`` says (tags in any order)."""
    return set(old.tags) == set(new.tags) and all(
        getattr(old, name) == getattr(new, name)
        for name in (*UPDATE_FIELDS, "kind", "content_hash")
        if name != "tags"
    )


def change(seat: Seat, memory_id: str, changes: Changes) -> Memory:
    """Write the next version of a memory the seat may change, or nothing
    when nothing changes (``Palace.update`` documents it).

    Raises:
        ValidationError: an invalid id or next version; a memory already
            replaced (naming its replacement); nothing is written.
        NotFoundError: no such memory in the seat's scope.
        PermissionDenied: ``scoping.check_change`` refuses it (another
            agent's memory, or one outside a peer-facing seat's channel).
    """
    engine = seat.engine
    old = _visible(seat, memory_id)
    check_change(seat.scope, old, "update")
    if old.superseded_by is not None:
        raise ValidationError(
            "id",
            memory_id,
            reason=f"memory {memory_id!r} was replaced by {old.superseded_by!r}: update that",
        )
    new = new_memory(seat, _next_draft(old, changes))
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
        dated(new, now),
        memory_id=engine.ids.next(now),
        owner=write_owner(seat.scope),
        now=now,
        scope=seat.scope,
        vectors=vectors,
    )
    if written is None:  # deleted by someone else in between
        raise NotFoundError(memory_id)
    return written


def restore(seat: Seat, memory_id: str) -> Memory:
    """Un-archive a memory the seat may change (one that is not archived
    is returned as it is; ``Palace.restore``).

    Raises:
        ValidationError: an id that is not a non-empty string.
        NotFoundError: no such memory in the seat's scope.
        PermissionDenied: ``scoping.check_change`` refuses it (another
            agent's memory, or one outside a peer-facing seat's channel).
    """
    engine = seat.engine
    old = _visible(seat, memory_id)
    check_change(seat.scope, old, "restore")
    if not old.archived:
        return old
    if not engine.store.restore(old.id, owner=write_owner(seat.scope), now=engine.now()):
        raise NotFoundError(memory_id)  # deleted or restored by someone else in between
    return _visible(seat, old.id)


def forget(seat: Seat, memory_id: str) -> Memory:
    """Archive a memory the seat may change (``Palace.forget`` without
    ``hard``); the memory as it was before.

    Raises:
        ValidationError: an id that is not a non-empty string.
        NotFoundError: no such memory in the seat's scope.
        PermissionDenied: ``scoping.check_change`` refuses it.
    """
    memory = _visible(seat, memory_id)
    check_change(seat.scope, memory, "forget")
    archived = seat.engine.store.archive(
        memory_id, owner=write_owner(seat.scope), now=seat.engine.now()
    )
    if not archived:
        raise NotFoundError(memory_id)  # deleted by someone else in between
    return memory
