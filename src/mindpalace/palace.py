"""The ``Palace`` facade: what a program, the CLI and the servers call.

Orchestration only: validate, pick the scope, call the store and the recall
stages, shape the result. No SQL lives here. The facade's writes (remember,
remember_many, forget, restore, update) are a mixin of their own
(palace_writes.py); here are the palace's construction and views, the
engine's parts and the features, reading, conversations, maintenance and
backup.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from mindpalace import backup, importing, listing, reading, telemetry, transcripts
from mindpalace.config import Settings
from mindpalace.conversations import Message
from mindpalace.doctor import DoctorReport, examine
from mindpalace.embed.base import Embedder
from mindpalace.embed.texts import Progress
from mindpalace.engine import Clock, Engine, utcnow
from mindpalace.errors import ConfigError, NotFoundError, ValidationError
from mindpalace.family import Family
from mindpalace.graph.extract import Extractor
from mindpalace.graphview import GraphView
from mindpalace.importing import ImportSummary
from mindpalace.models import (
    Category,
    HitList,
    Memory,
    MemoryKind,
    MemoryType,
    MessageMatch,
    Scope,
    Source,
    Stats,
    StoreKind,
    Visibility,
)
from mindpalace.palace_writes import PalaceWrites
from mindpalace.personal import Personal, SearchResults
from mindpalace.recall_request import RecallRequest
from mindpalace.retention import Retention
from mindpalace.retrieval import pipeline
from mindpalace.retrieval.indexing import SemanticIndex
from mindpalace.retrieval.time import stored as stored_times
from mindpalace.scoping import build_scope
from mindpalace.seat import Seat
from mindpalace.signals import Signals
from mindpalace.skills import ContextBlock, Skills
from mindpalace.store import ImportReport, Signal, Store
from mindpalace.timeline import Timeline
from mindpalace.validation import (
    EXPORT_FORMAT,
    check_id,
    check_limit,
    check_names,
)

__all__ = ["EXPORT_FORMAT", "Palace"]

MAX_LIST_LIMIT = 10_000


class Palace(PalaceWrites):
    """A memory palace as one agent sees it: remember things, recall the few
    that matter.

    A palace is a scope (agent, groups, channel) over an ``Engine`` (store,
    model, warm indexes). ``Palace(path)`` opens an engine of its own;
    ``palace.for_agent(...)`` and ``Palace(engine=...)`` are further views of
    one engine, made in microseconds, so one process serves many agents with
    one model and one set of indexes.

    Example:
        >>> with Palace("memories.db") as palace:  # doctest: +SKIP
        ...     palace.remember("We chose SQLite because many processes share one file",
        ...                     category="decision", tags=["storage"])
        ...     hits = palace.recall("why sqlite", limit=5)

    Args:
        target: a SQLite file path, ``sqlite:///PATH`` or ``:memory:``; the
            per-user default (``MINDPALACE_DB``) when omitted.
        agent_id: the agent this palace acts as (``MINDPALACE_AGENT_ID``, else
            ``default``).
        groups: the groups that agent belongs to (it sees their group memories).
        channel: the peer channel calls are made through, if any.
        management: act unscoped, seeing and changing every agent's memories
            (for backups and administration; never for an agent's own calls).
        peer: act for one peer (``mindpalace.scoping``): needs ``channel``,
            sees it plus what is explicitly shared (``MINDPALACE_PEER``).
        settings: limits; read from the environment when omitted.
        store: an already open backend to use instead of ``target``.
        embedder: the embedding model; when omitted, the one ``settings``
            name (the bundled local model by default; ``none`` for keyword
            search only).
        recall_options: constants of the recall pipeline.
        clock: the time source (tests pass a fixed clock).
        extractor: extra entity extraction beside the rules (e.g.
            ``graph.llm.LLMExtractor``); from ``MINDPALACE_EXTRACT_*`` when omitted.
        engine: an open engine to view instead of opening one; then only the
            scope arguments may be given.

    Raises:
        ConfigError: ``engine`` together with engine arguments.
        ValidationError: a bad name, or a peer-facing palace without a channel.
    """

    def __init__(
        self,
        target: str | Path | None = None,
        *,
        agent_id: str | None = None,
        groups: Iterable[str] = (),
        channel: str | None = None,
        management: bool = False,
        peer: bool | None = None,
        settings: Settings | None = None,
        store: Store | None = None,
        embedder: Embedder | None = None,
        recall_options: pipeline.RecallOptions | None = None,
        clock: Clock = utcnow,
        extractor: Extractor | None = None,
        engine: Engine | None = None,
    ) -> None:
        if engine is None:
            engine = Engine(
                target,
                settings=settings,
                store=store,
                embedder=embedder,
                recall_options=recall_options,
                clock=clock,
                extractor=extractor,
            )
            self._owns_engine = True
        else:
            given = {
                "target": target,
                "settings": settings,
                "store": store,
                "embedder": embedder,
                "recall_options": recall_options,
                "extractor": extractor,
                "clock": None if clock is utcnow else clock,
            }
            extra = sorted(name for name, value in given.items() if value is not None)
            if extra:
                raise ConfigError(
                    f"a palace on an existing engine takes its {', '.join(extra)} from the"
                    " engine: pass only the scope (agent_id, groups, channel, management, peer)"
                )
            self._owns_engine = False
        self.engine = engine
        try:
            self.scope: Scope = build_scope(
                agent_id or engine.settings.agent_id,
                groups=groups,
                channel=channel,
                management=management,
                peer=engine.settings.peer if peer is None else peer,
            )
        except BaseException:
            # A rejected scope leaves no open engine behind (its store, its
            # background threads still writing beside the palace's file).
            if self._owns_engine:
                engine.close()
            raise
        # What the operations run in: this engine, this scope.
        self.seat: Seat = Seat(engine, self.scope)
        # The engine's constants; a view may try others (benchmarks, ablations).
        self.recall_options: pipeline.RecallOptions = engine.recall_options

    @classmethod
    def open(cls, target: str | Path | None = None, **options: Any) -> Palace:
        """Open a palace by path or URL (same keyword options as ``Palace``)."""
        return cls(target, **options)

    def for_agent(
        self,
        agent_id: str,
        *,
        groups: Iterable[str] = (),
        channel: str | None = None,
        peer: bool | None = None,
    ) -> Palace:
        """The palace as ``agent_id`` sees it, sharing this palace's engine
        (store, model, warm indexes): cheap, for a server answering many agents.

        Closing the returned palace leaves the engine open; it closes with
        the palace that opened it.

        Args:
            agent_id: the agent the view acts as.
            groups: the groups that agent belongs to.
            channel: the peer channel calls are made through, if any.
            peer: act for one peer of ``channel`` (see ``Palace``); the
                settings' default (``MINDPALACE_PEER``) when omitted.

        Raises:
            ValidationError: a bad name, or a peer view without a channel.
        """
        return Palace(
            engine=self.engine, agent_id=agent_id, groups=groups, channel=channel, peer=peer
        )

    # -- what the engine holds ------------------------------------------------------

    @property
    def settings(self) -> Settings:
        """The engine's settings."""
        return self.engine.settings

    @property
    def store(self) -> Store:
        """The engine's store (every read takes a scope: pass ``palace.scope``)."""
        return self.engine.store

    @property
    def semantic(self) -> SemanticIndex:
        """The engine's semantic index (embedder, warm indexes)."""
        return self.engine.semantic

    @property
    def extractor(self) -> Extractor | None:
        """The engine's extra entity extractor, if any."""
        return self.engine.extractor

    # -- features, built on first use -----------------------------------------------

    @functools.cached_property
    def signals(self) -> Signals:
        """Recall outcomes, feedback and the learned scorer."""
        return Signals(self)

    @functools.cached_property
    def graph(self) -> GraphView:
        """The entity graph: entities, mentions, history, consolidation."""
        return GraphView(self)

    @functools.cached_property
    def skills(self) -> Skills:
        """Import, activate, get and find skills; context blocks."""
        return Skills(self)

    @functools.cached_property
    def family(self) -> Family:
        """What do I know, why did we, who owns, depends on, preflight."""
        return Family(self, graph=self.graph, skills=self.skills)

    @functools.cached_property
    def timeline(self) -> Timeline:
        """Sessions and memories over time."""
        return Timeline(self)

    @functools.cached_property
    def retention(self) -> Retention:
        """Retention rules: set, list, remove, apply."""
        return Retention(self)

    @functools.cached_property
    def personal(self) -> Personal:
        """Journal, nodes, issues, specs; search across kinds."""
        return Personal(self)

    # -- lifecycle ------------------------------------------------------------------

    def close(self) -> None:
        """Close the engine if this palace opened it (a ``for_agent`` view
        leaves it to its opener). Idempotent."""
        if self._owns_engine:
            self.engine.close()

    def __enter__(self) -> Palace:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def now(self) -> datetime:
        """The palace's clock (tests inject a fixed one)."""
        return self.engine.now()

    def __repr__(self) -> str:
        return f"Palace({self.store.location!r}, agent_id={self.scope.agent_id!r})"

    # -- reading --------------------------------------------------------------------

    def get(self, memory_id: str) -> Memory:
        """The memory with this id.

        Raises:
            NotFoundError: no such memory in this scope.
        """
        memory = self.store.get(check_id(memory_id), self.scope)
        if memory is None:
            raise NotFoundError(memory_id)
        return memory

    def recall(
        self,
        query: str,
        *,
        limit: int = 10,
        types: str | Iterable[str | MemoryType] | None = None,
        stores: str | Iterable[str | StoreKind] | None = None,
        categories: str | Iterable[str | Category] | None = None,
        tags: Iterable[str] | str | None = None,
        visibility: str | Iterable[str | Visibility] | None = None,
        include_archived: bool = False,
        created_after: datetime | str | None = None,
        created_before: datetime | str | None = None,
        expand: bool = True,
        mode: str | None = None,
        kinds: str | Iterable[str | MemoryKind] | None = None,
        projects: Iterable[str] | None = None,
        completed: bool | None = None,
        agents: Iterable[str] | str | None = None,
    ) -> HitList:
        """The memories most relevant to ``query``, best first.

        Keyword (BM25) and embedding search run side by side and are fused;
        without a usable embedder recall is keyword search alone and the
        result's ``notice`` says so. Any text (≤ 10,000 characters) is a valid
        query. Filters and the agent's scope narrow every search inside the
        store, never after ranking. Recall changes no memory (signals aside).

        Args:
            query: free text.
            limit: how many hits at most, 1-100.
            types / stores / categories / visibility: keep only these values
                (a value, a list, or a comma-separated string).
            tags: keep memories having any of these tags.
            include_archived: also search archived memories.
            created_after / created_before: creation time range [after, before).
            expand: propagate over the entity graph (hits then carry
                ``associative_context``); False ranks by the query alone.
            mode: the recall mode, a prior over categories, stores and
                types that reweights without filtering: general (default),
                decision, project, people, workflow, conversation
                (``retrieval.modes`` has the table).
            kinds: keep only these kinds (journal, node, issue, spec,
                message, memory); projects: only these projects (exact
                names); completed: only issues in this state.
            agents: keep only memories these agents own (of those the
                palace sees).

        Raises:
            ValidationError: on an invalid filter, limit or mode.
        """
        # The arguments are the request's fields, by name (tests hold them equal).
        given = {name: value for name, value in locals().items() if name != "self"}
        return reading.recall(self.seat, RecallRequest.of(**given), options=self.recall_options)

    def feedback(self, memory_id: str, *, useful: bool) -> Signal | None:
        """Judge a recalled memory useful or not (``Signals.feedback``)."""
        return self.signals.feedback(memory_id, useful=useful)

    def context(self, query: str, *, max_tokens: int = 2048) -> ContextBlock:
        """The skills and memories relevant to
        ``query`` as one prompt-ready block, source-attributed and dated, of at
        most ``max_tokens`` (256-8192) tokens of the named tokenizer."""
        return self.skills.context(query, max_tokens=max_tokens)

    def search(
        self,
        query: str,
        *,
        kinds: str | Iterable[str | MemoryKind] | None = None,
        project: str | None = None,
        limit: int = 10,
        include_archived: bool = False,
    ) -> SearchResults:
        """Search personal data (journal, nodes, issues, specs, messages,
        memories), each result attributed to its source with its date ("From
        your journal on 15 Jan 2026: ..."); kinds named in the query narrow
        it unless ``kinds`` is given. Read-only. See ``Personal.search``.

        Raises:
            ValidationError: an invalid kind, project or limit (1-100).
        """
        return self.personal.search(
            query, kinds=kinds, project=project, limit=limit, include_archived=include_archived
        )

    def memories(
        self,
        *,
        limit: int = 50,
        offset: int = 0,
        types: str | Iterable[str | MemoryType] | None = None,
        stores: str | Iterable[str | StoreKind] | None = None,
        categories: str | Iterable[str | Category] | None = None,
        tags: Iterable[str] | str | None = None,
        visibility: str | Iterable[str | Visibility] | None = None,
        sources: str | Iterable[str | Source] | None = None,
        sessions: Iterable[str] | None = None,
        include_archived: bool = False,
        include_superseded: bool = False,
        created_after: datetime | str | None = None,
        created_before: datetime | str | None = None,
        kinds: str | Iterable[str | MemoryKind] | None = None,
        projects: Iterable[str] | None = None,
        completed: bool | None = None,
        cursor: str | None = None,
        agents: Iterable[str] | str | None = None,
    ) -> list[Memory]:
        """Visible memories, newest first by (created_at, id), with the same
        filters as ``recall``.

        Page with ``cursor`` (keyset: nothing skipped or repeated when
        memories arrive between pages) rather than ``offset``: the cursor of
        the next page is ``listing.encode_cursor(page[-1])``. ``agents``
        keeps the memories those agents own; ``sessions`` those of these sessions.

        Raises:
            ValidationError: on an invalid filter, limit (1-10,000), offset
                or cursor, or both an offset and a cursor.
        """
        check_limit(limit, low=1, high=MAX_LIST_LIMIT)
        check_limit(offset, low=0, high=2**62, field="offset")
        before = None if cursor is None else listing.decode_cursor(cursor)
        if before is not None and offset:
            raise ValidationError("offset", offset, reason="page with a cursor or an offset")
        filters = listing.recall_filters(
            types=types,
            stores=stores,
            categories=categories,
            tags=tags,
            visibility=visibility,
            sources=sources,
            include_archived=include_archived,
            include_superseded=include_superseded,
            created_after=created_after,
            created_before=created_before,
            kinds=kinds,
            projects=projects,
            completed=completed,
            agents=agents,
        )
        if sessions is not None:
            filters = replace(filters, sessions=check_names(sessions, "sessions"))
        return self.store.list_memories(
            self.scope, filters, limit=limit, offset=offset, before=before
        )

    def stats(self) -> Stats:
        """Counts over what this palace's scope can see."""
        return self.store.stats(self.scope)

    # -- conversations -----------------------------------------------------------------

    @telemetry.observed_write("add_messages")
    def add_messages(
        self,
        messages: Iterable[Message],
        *,
        session: str | None = None,
        batch: int = 256,
        progress: Progress | None = None,
        dates: bool = True,
        atomic: bool = False,
    ) -> list[Memory]:
        """Remember conversation turns, in order: one memory each, category
        ``conversation``, store ``episodic``, content ``"{speaker}: {text}"``.

        Each turn is indexed with the start of the turn before it in its
        session (its first 400 characters) as keyword context, and titled
        with its date in words, so questions about the turn's time find it. Re-ingesting the
        same transcript changes nothing: a turn is identified by its session,
        its time (or, without one, its place among this call's turns of the
        session: pass timestamps when appending turns one call at a time) and
        its text
        (kept in ``metadata["turn"]``, so export and import keep it too).
        A turn over the content limit is stored as parts (metadata ``part``
        k of ``parts``, ``part_of``). Turns are written in transactions of
        ``batch``.

        Args:
            messages: the turns, oldest first.
            session: the session of turns that name none.
            batch: turns per transaction (and per embedding batch); batch k+1
                is embedded in a worker thread while batch k is written.
            progress: called with (done, total) after each batch.
            dates: add the dates a turn states, resolved against its time,
                to its keyword context ("yesterday" on 8 May 2023 is indexed
                as "when: 7 May 2023"; ``retrieval.time.temporal``).
            atomic: all or nothing: validate every turn first, then write
                them all in one transaction.

        Raises:
            ValidationError: naming the first invalid turn (its place, and
                its ``origin`` such as a file line) and how many turns were
                stored: the earlier batches stay, unless ``atomic``.
        """
        return transcripts.add_messages(
            self, messages, session=session, batch=batch, progress=progress, dates=dates,
            atomic=atomic,
        )  # fmt: skip

    def search_messages(
        self,
        phrase: str,
        *,
        limit: int = 20,
        around: int = 1,
        session: str | None = None,
    ) -> list[MessageMatch]:
        """Conversation turns containing ``phrase`` exactly (case aside),
        newest first, each with ``around`` turns before and after it.

        Raises:
            ValidationError: an empty phrase, ``limit`` outside 1-100 or
                ``around`` outside 0-10.
        """
        return transcripts.search_messages(
            self, phrase, limit=limit, around=around, session=session
        )

    def recent(self, limit: int = 20, *, session: str | None = None) -> list[Memory]:
        """The last ``limit`` conversation turns (of ``session``), oldest first.

        Raises:
            ValidationError: ``limit`` outside 1-1,000.
        """
        check_limit(limit, low=1, high=1000)
        latest = self.memories(
            limit=limit,
            categories="conversation",
            sessions=[session] if session else None,
        )
        return sorted(latest, key=lambda m: (m.created_at, m.id))

    # -- maintenance ------------------------------------------------------------------

    def reindex(self, *, progress: Progress | None = None) -> int:
        """Embed every memory with this palace's embedder and adopt its model
        (after a change of model, or to embed memories stored while the
        embedder was failing); long texts get the vectors of their parts
        too, also those written before parts were kept. Memories written
        before their stated times were kept with them get them too (recall
        reads them from the text until then), and vectors an older version
        kept in float32 are rewritten in half precision (half the space).
        Returns how many texts were embedded.

        Raises:
            EmbeddingError: when no embedder is configured or it fails.
        """
        embedded = self.semantic.reindex(progress=progress)
        stored_times.keep_all(self.engine.store)
        return embedded

    def pending_vectors(self) -> int:
        """How many texts of this palace's memories wait for their vector: a
        bulk write with a slow model stores its memories at once and leaves
        their vectors to a background upgrade, which this process, any
        process that writes in bulk or recalls repeatedly from its warm
        indexes, or ``reindex`` runs. Until then recall finds them by their
        words."""
        return self.semantic.pending_vectors()

    def wait_for_vectors(self, timeout: float | None = None) -> int:
        """Embed the texts that wait for their vector (in a background
        thread, started here if none runs) and block until they are stored,
        or until ``timeout`` seconds passed; how many still wait.

        Raises:
            EmbeddingError: the model failed (the texts keep waiting).
        """
        return self.semantic.wait_for_vectors(timeout)

    def doctor(self) -> DoctorReport:
        """Check the palace's health (what ``mindpalace doctor`` prints): the
        embedding model loads, the palace's vectors are the configured
        model's, the schema is the latest, the file is sound (SQLite's
        integrity check) or the server answers, no memory waits for its
        vector, the warm-index files are readable; and which extras are
        installed. Each problem names the command that fixes it.

        Writes nothing. Runs the model once and reads the whole file
        (``PRAGMA integrity_check``): seconds on a large palace.
        """
        return examine(self.engine)

    # -- backup -----------------------------------------------------------------------

    def export_jsonl(self, out: IO[str], *, progress: Progress | None = None) -> int:
        """Write every visible memory (archived and superseded too) as JSON lines.

        The first line is a header naming the format; each further line is one
        memory with every field, then the palace's other records. Returns the
        number of memories written.
        """
        return backup.export_jsonl(self, out, progress=progress)

    @telemetry.observed_write("import")
    def import_file(
        self,
        path: str | Path,
        *,
        format: str = "auto",
        session: str | None = None,
        sections: bool = False,
        progress: Progress | None = None,
        agent_from: str | None = None,
    ) -> ImportSummary:
        """Import a palace export, a chat export (turns, as ``add_messages``;
        ChatGPT's and Claude's as downloaded, a zip, or unzipped, a folder),
        mem0 output or Markdown notes (``sections``: a memory per section),
        in one transaction; ``format`` is detected unless named
        (``formats.FORMATS``). Text over the content limit is stored as parts.
        ``agent_from`` (mem0 only: ``user_id`` or ``agent_id``) imports each
        memory for the agent that id of it names (a palace opened with
        ``management=True`` for agents other than its own).

        Raises:
            ValidationError: a file in no known format (naming the formats),
                or the first bad entry (naming where it is); nothing is written.
            PermissionDenied: ``agent_from`` names another agent, and this
                palace is not the management view; nothing is written.
        """
        return importing.import_file(
            self,
            path,
            format=format,
            session=session,
            sections=sections,
            progress=progress,
            agent_from=agent_from,
        )

    @telemetry.observed_write("import")
    def import_jsonl(
        self, lines: Iterable[str], *, progress: Progress | None = None
    ) -> ImportReport:
        """Restore memories from ``export_jsonl`` output, in one transaction.

        Every field is kept (ids, owners, timestamps). Memories whose id is
        one of this palace's own visible memories, or whose text already
        exists in their scope, are skipped. A record whose id is taken
        outside this palace's view is imported under a new id, reported as
        inserted (``backup.import_jsonl`` says why). Every line is validated
        before anything is written. Only the palace's own agent's memories
        may be imported, unless it was opened with ``management=True``.

        Raises:
            PermissionDenied: a record belongs to another agent or channel.
            ValidationError: naming the line number of the first bad record.
        """
        return backup.import_jsonl(self, lines, progress=progress)
