"""Forgetting for good: ``erase(seat, selection)``, behind ``Palace.erase``
and ``Palace.forget(hard=True)``.

Like the other operations (``writing.remember(seat, draft)``,
``reading.recall(seat, request)``), an erasure runs in a seat with a value
built at the edge: a ``Selection``. It reaches the memories of the
selection that the seat may change, and every older version of each (the
memories it replaced by an update or a supersession, and the duplicates
merged into it): forgetting the current version of a fact forgets what it
said before too. A newer version is a statement of its own and stays;
forget it to forget both.
Each memory passes ``scoping.check_change`` (``erase``, or ``forget`` for a
hard forget) before anything is written; one refusal refuses the whole.

The store removes the rows and every record derived from them in one
transaction that also writes the receipt (store/erase_sql.py lists the
tables). The warm indexes saved beside a SQLite palace are removed at once
(the next process builds them again). What else is left on disk goes after
the call returns, in the background (erase_cleanup.py): SQLite's text
indexes are merged and its WAL checkpointed and truncated (its pages are
zeroed on delete: ``secure_delete``), PostgreSQL's touched tables are
vacuumed. The receipt says ``cleanup: "pending"``; the erasure log says
"done" once that finished.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from mindpalace.embed.texts import embed_text, text_hash
from mindpalace.errors import NotFoundError, ValidationError
from mindpalace.graph.extract import normalise_name
from mindpalace.models import Erasable, Memory, RecallFilters, Scope
from mindpalace.receipts import CLEANUP_PENDING, ErasureTally, Receipt, Sweep, ids_digest
from mindpalace.retrieval import warm_cache
from mindpalace.scoping import check_change
from mindpalace.seat import Seat
from mindpalace.selection import Selection
from mindpalace.validation import check_id

__all__ = ["erase", "erase_memories", "forget_hard"]


def _everything(**narrowing: object) -> RecallFilters:
    return RecallFilters(include_archived=True, include_superseded=True, **narrowing)  # type: ignore[arg-type]


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


def _chosen(seat: Seat, selection: Selection, action: str) -> list[Erasable]:
    """The memories ``selection`` names that ``seat`` may change."""
    scope, store = seat.scope, seat.engine.store
    kind, value = selection.kind, selection.value or ""
    if kind == "memory":
        memory = _visible(seat, value)
        check_change(scope, memory, action)
        return [Erasable.of(memory)]
    if kind == "agent":
        return store.erasable(scope, _everything(agents=(scope.agent_id,)))
    if kind == "channel":
        if scope.peer and value != scope.channel:
            raise ValidationError(
                "channel",
                value,
                valid=[scope.channel or ""],
                reason="a peer-facing view erases only its own channel",
            )
        return store.erasable(scope, _everything(), channel=value)
    if kind == "session":
        return store.erasable(scope, _everything(sessions=(value,)))
    if kind == "entity":
        norm = normalise_name(value)
        if not norm:
            raise ValidationError("name", value, reason="the entity's name has no letters")
        return store.erasable(scope, _everything(), entity=norm)
    return store.erasable(
        scope,
        _everything(
            types=selection.types,
            categories=selection.categories,
            stores=selection.stores,
            created_before=selection.created_before,
        ),
    )


def _sweep(scope: Scope, selection: Selection) -> Sweep | None:
    """The signals and scorer weights an agent's or a channel's erasure
    takes along (those of a view's own agent, or, through the management
    view, a channel's of every agent)."""
    if selection.kind == "agent":
        return Sweep(scope.agent_id, scope.channel if scope.peer else None)
    if selection.kind == "channel":
        return Sweep(None if scope.unscoped else scope.agent_id, selection.value)
    return None


def erase(
    seat: Seat, selection: Selection, *, confirm: bool = False, action: str = "erase"
) -> Receipt:
    """Erase what ``selection`` names that ``seat`` may change (see
    ``Palace.erase``); ``action`` is what ``check_change`` is asked."""
    if not isinstance(selection, Selection):
        raise ValidationError(
            "selection",
            selection,
            reason="build one with Selection.agent(), .channel(name), .session(id),"
            " .entity(name), .memory(id), .matching(...) or parse_selection",
        )
    if not isinstance(confirm, bool):
        raise ValidationError("confirm", confirm, valid=["true", "false"])
    chosen = _chosen(seat, selection, action)
    return erase_memories(
        seat,
        chosen,
        selection.to_dict(),
        confirm=confirm,
        action=action,
        sweep=_sweep(seat.scope, selection),
        closed=_closed(seat.scope, selection),
    )


def _closed(scope: Scope, selection: Selection) -> bool:
    """Whether ``selection`` reaches every memory ``scope`` may change, so
    that no older version of one is left outside it: an agent's own
    memories (of its channel, for a peer-facing view), and a peer-facing
    view's own channel. (The management view may change any memory, so a
    version of an agent's memory may be another agent's.)"""
    if scope.unscoped:
        return False
    return selection.kind == "agent" or (scope.peer and selection.kind == "channel")


def erase_memories(
    seat: Seat,
    chosen: Sequence[Erasable],
    selection: Mapping[str, Any],
    *,
    confirm: bool,
    action: str = "erase",
    sweep: Sweep | None = None,
    closed: bool = False,
) -> Receipt:
    """Erase ``chosen`` (memories ``seat`` sees) and their older versions,
    each passing ``check_change``; the receipt names ``selection``. A dry
    run unless ``confirm``. ``closed``: ``chosen`` holds every memory the
    seat may change, so their older versions are not looked for (at a
    million memories that look is a read per 500 of them)."""
    scope, engine = seat.scope, seat.engine
    older = [] if closed else engine.store.versions([m.id for m in chosen], scope)
    memories = [*chosen, *map(Erasable.of, older)]
    for memory in memories:
        check_change(scope, memory, action)
    ids = [m.id for m in memories]
    chars = engine.store.hash_chars()
    hashes = {text_hash(embed_text(m.title, m.content), chars) for m in memories}
    receipt = Receipt(
        selection=selection,
        counts=ErasureTally(versions=len(older)),
        digest=ids_digest(ids),
        at=seat.now(),
        agent_id=scope.agent_id,
        channel=scope.channel,
    )
    if not confirm:
        tally = engine.store.erasure_tally(ids, sweep=sweep, text_hashes=hashes)
        return replace(receipt, counts=replace(tally, versions=len(older)))
    # A receipt's id is an id of the engine's, so unique and ordered as theirs.
    receipt = replace(receipt, id="era_" + engine.ids.next(receipt.at).partition("_")[2])
    tally = engine.store.erase(ids, sweep=sweep, text_hashes=hashes, receipt=receipt)
    _scrub(seat)
    return replace(receipt, counts=tally, cleanup=CLEANUP_PENDING)


def forget_hard(seat: Seat, memory_id: str) -> Memory:
    """See ``Palace.forget``: the memory and its older versions, erased."""
    memory = _visible(seat, memory_id)
    check_change(seat.scope, memory, "forget")
    receipt = erase(seat, Selection.memory(memory.id), confirm=True, action="forget")
    if receipt.counts.memories == 0:  # deleted by someone else in between
        raise NotFoundError(memory_id)
    return memory


def _scrub(seat: Seat) -> None:
    """What is left of the erased rows goes: the warm indexes' files and
    cached queries now, the rest on disk in the background (the module's
    docstring)."""
    engine = seat.engine
    warm_cache.discard(engine.store)
    engine.semantic.forget_queries()
    engine.cleanup.request()
