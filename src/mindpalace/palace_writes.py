"""The writes of the ``Palace`` facade: remember, remember_many, forget,
restore, update, and erase with its log.

``PalaceWrites`` is a mixin of ``Palace`` (palace.py) written against the
``View`` protocol alone (each method takes ``self: View``). Each write is
one line: the keyword arguments become a ``Draft`` or ``Changes`` value
(draft.py), validated on construction, and the module function of
writing.py (or erasure.py) runs it in the palace's seat. Orchestration
only, as in the rest of the facade: no SQL.
Each write is observed (``telemetry.observed_write``): a span when
OpenTelemetry is installed, and its count and time in the engine's metrics.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from mindpalace import erasure, telemetry, writing
from mindpalace.draft import KEEP, Changes, Draft, Keep
from mindpalace.models import (
    Category,
    Memory,
    MemoryKind,
    MemoryType,
    Source,
    StoreKind,
    Visibility,
)
from mindpalace.receipts import Receipt
from mindpalace.selection import Selection
from mindpalace.validation import check_limit
from mindpalace.view import View

__all__ = ["PalaceWrites"]


class PalaceWrites:
    """``Palace``'s writes (see ``Palace`` for the scope they write in)."""

    @telemetry.observed_write("remember")
    def remember(
        self: View,
        content: str,
        *,
        title: str | None = None,
        context: str | None = None,
        session: str | None = None,
        type: str | MemoryType = MemoryType.UNKNOWN,
        store: str | StoreKind = StoreKind.SEMANTIC,
        category: str | Category = Category.FACT,
        tags: Iterable[str] | str | None = None,
        source: str | Source = Source.MANUAL,
        visibility: str | Visibility = Visibility.ISOLATED,
        group: str | None = None,
        channel: str | None = None,
        constraint: bool = False,
        confidence: float = 1.0,
        valid_from: datetime | str | None = None,
        valid_to: datetime | str | None = None,
        created_at: datetime | str | None = None,
        metadata: Mapping[str, Any] | None = None,
        kind: str | MemoryKind | None = None,
        project: str | None = None,
        completed: bool | None = None,
    ) -> Memory:
        """Store a memory, or return the existing one with the same text.

        The same normalised text remembered twice in one scope (agent,
        visibility, group, channel) returns the first memory with its strength
        bumped; no second row is written. The memory is embedded in the same
        call (only text never embedded before); if the embedder fails the
        memory is still stored and ``reindex`` embeds it later.

        Args:
            content: the memory itself (non-empty, at most
                ``settings.max_content_chars`` characters).
            title: optional one-line title.
            context: text that helps find the memory without being part of it
                (e.g. the message before a conversation turn); indexed for
                keyword search only.
            session: the conversation session (or other episode) the memory
                belongs to; neighbours in a session support each other in recall.
            type: entity taxonomy: person, project, system, tool, concept,
                skill, task, unknown (default).
            store: sensory, episodic, semantic (default), procedural, prospective.
            category: decision, lesson, person, rule, event, fact (default),
                goal, workflow, conversation.
            tags: a list or a comma-separated string.
            source: manual (default), skill, pipeline, import.
            visibility: isolated (default, this agent only), shared (every
                agent), group (agents of ``group``).
            group: the group, required exactly when visibility is group.
            channel: the peer channel; defaults to the palace's channel.
            constraint: a rule that recall always surfaces when relevant.
            confidence: how certain the writer is, 0-1.
            valid_from: when the fact became true (ISO 8601 or datetime).
            valid_to: when it stopped being true.
            created_at: when it happened, for memories written after the fact
                (imports of old conversations); now by default.
            metadata: extra JSON-serialisable fields, at most 16 KiB as JSON
                (``validation.MAX_METADATA_BYTES``).
            kind: memory (default; message for category conversation), journal,
                node (title = name), issue, spec, message (``palace.personal``).
            project: its project; completed: an issue's state (default open;
                an issue is numbered after its project's last one).

        Returns:
            The stored memory.

        Raises:
            ValidationError: on any invalid argument; nothing is written.
            EmbeddingMismatch: the palace's vectors come from another model.
        """
        draft = Draft.of(
            content,
            title=title,
            context=context,
            session=session,
            type=type,
            store=store,
            category=category,
            tags=tags,
            source=source,
            visibility=visibility,
            group=group,
            channel=channel,
            constraint=constraint,
            confidence=confidence,
            valid_from=valid_from,
            valid_to=valid_to,
            created_at=created_at,
            metadata=metadata,
            kind=kind,
            project=project,
            completed=completed,
        )
        return writing.remember(self.seat, draft)

    @telemetry.observed_write("remember_many")
    def remember_many(self: View, records: Iterable[Draft | Mapping[str, Any]]) -> list[Memory]:
        """Remember many memories at once: validated first, embedded in
        batches, written in one transaction (all or nothing). With a slow
        model, a bulk write (256 texts or more) is written at once and its
        vectors come after it, from a background upgrade
        (``Palace.wait_for_vectors``); ``MINDPALACE_BULK_EMBED=inline``
        embeds first.

        Args:
            records: drafts, or mappings of ``remember``'s arguments
                (``content`` required), plus optionally ``identity``: a
                string that, with the text, identifies the memory for
                de-duplication (``Draft``).

        Returns:
            The stored memories, in input order (an existing memory where the
            text was already there).

        Raises:
            ValidationError: naming the index of the first invalid record.
        """
        return writing.remember_many(self.seat, records)

    @telemetry.observed_write("forget")
    def forget(self: View, memory_id: str, *, hard: bool = False) -> Memory:
        """Archive a memory (kept, hidden from recall), or erase it with ``hard``.

        A hard forget erases the memory and every older version of it (what
        it replaced by an update or a supersession, duplicates merged into
        it), and every record derived from them, in one transaction, as
        ``erase(Selection.memory(memory_id), confirm=True)`` does; newer
        versions stay. Its receipt goes to the erasure log (``erasures``).

        Returns:
            The memory as it was before.

        Raises:
            NotFoundError: no such memory in this scope.
            PermissionDenied: another agent's memory, or (through a
                peer-facing view) one outside the view's channel
                (``scoping.check_change``), for it or any older version.
        """
        if hard:
            return erasure.forget_hard(self.seat, memory_id)
        return writing.forget(self.seat, memory_id)

    def erase(self: View, selection: Selection, *, confirm: bool = False) -> Receipt:
        """Erase every memory of ``selection`` this palace may change, every
        older version of each, and every record derived from them: vectors,
        text index entries, entity mentions (entities and edges left with
        none), relations, links, skill rows, signals and feedback about
        them, context copies in other conversation turns; for an agent or a
        channel also its signals (recall queries too) and learned-scorer
        weights. Then what is left on disk goes (SQLite's WAL, PostgreSQL's
        dead tuples, the warm indexes saved beside the palace).

        Without ``confirm`` nothing is written: the receipt says what would
        go. With it, the erasure is one transaction that also writes the
        receipt to the erasure log (``erasures``).

        Args:
            selection: built once at the edge: ``Selection.agent()``,
                ``.channel(name)``, ``.session(id)``, ``.entity(name)``,
                ``.memory(id)``, ``.matching(types=..., categories=...,
                stores=..., created_before=...)``, or ``parse_selection``.
            confirm: erase (default: a dry run).

        Returns:
            The receipt: counts by kind of record, the selection, the time
            and a SHA-256 over the sorted ids; never erased text. ``id`` is
            None for a dry run.

        Raises:
            ValidationError: not a ``Selection``; a peer-facing view naming
                another channel.
            NotFoundError: a ``memory`` selection this scope does not see.
            PermissionDenied: a memory of the selection this view may not
                change (``scoping.check_change``); nothing is erased.
        """
        if confirm is not True:  # a dry run writes nothing; erase refuses a non-bool
            return erasure.erase(self.seat, selection, confirm=confirm)
        with telemetry.write(self.engine.metrics, "erase") as trace:
            receipt = erasure.erase(self.seat, selection, confirm=True)
            trace.count(memories=receipt.counts.memories)
        return receipt

    def erasures(self: View, *, limit: int = 100) -> list[Receipt]:
        """The erasure log: receipts of this palace's agent's erasures (of
        its channel, for a peer-facing view; every one, for the management
        view), newest first.

        Raises:
            ValidationError: ``limit`` outside 1-10,000.
        """
        check_limit(limit, low=1, high=10_000)
        return self.engine.store.erasures(self.scope, limit=limit)

    @telemetry.observed_write("restore")
    def restore(self: View, memory_id: str) -> Memory:
        """Bring back a memory ``forget`` archived (recall finds it again).

        Raises:
            NotFoundError: no such memory in this scope.
            PermissionDenied: another agent's memory, or (through a
                peer-facing view) one outside the view's channel
                (``scoping.check_change``).
        """
        return writing.restore(self.seat, memory_id)

    @telemetry.observed_write("update")
    def update(
        self: View,
        memory_id: str,
        *,
        content: str | Keep = KEEP,
        title: str | Keep | None = KEEP,
        tags: Iterable[str] | str | Keep | None = KEEP,
        category: str | Category | Keep = KEEP,
        type: str | MemoryType | Keep = KEEP,
        store: str | StoreKind | Keep = KEEP,
        visibility: str | Visibility | Keep = KEEP,
        group: str | Keep | None = KEEP,
        valid_from: datetime | str | Keep | None = KEEP,
        valid_to: datetime | str | Keep | None = KEEP,
        metadata: Mapping[str, Any] | Keep | None = KEEP,
    ) -> Memory:
        """Change a memory you own; the fields not given are kept (None
        clears title, group, validity, metadata and tags).

        The change is a new version, written as supersession writes one: a
        new memory with a **new id** (re-embedded, its entities re-linked,
        its creation time kept), and the old row kept, closed, with
        ``superseded_by`` the new id (``graph.history`` lists both). Use the
        returned memory's id from now on; ``get(memory_id)`` still returns
        the old version. An update that changes nothing writes nothing and
        returns the memory as it is (same id). Changing ``visibility`` away
        from group drops the group.

        Raises:
            ValidationError: an invalid value (naming the valid ones), a
                memory already replaced (naming its replacement), or another
                memory of the scope with the new text; nothing is written.
            NotFoundError: no such memory in this scope.
            PermissionDenied: another agent's memory, or (through a
                peer-facing view) one outside the view's channel
                (``scoping.check_change``).
        """
        changes = Changes.of(
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
        return writing.change(self.seat, memory_id, changes)
