"""The store's roles: role-sized protocols a function asks for instead of
the whole ``Store`` (base.py composes them all).

This module holds what remembering and recall use: the open palace itself
(``Handle``), its memories (``MemoryRows``), their text index
(``TextIndex``), their vectors (``VectorRows``) and the entity graph
(``GraphRows``); roles_palace.py holds the rest (skills, signals, exchange,
upkeep). Each method belongs to exactly one role (tests/test_store_roles.py).

Scope is a mandatory argument of every read: a backend applies it inside the
query, so a memory outside the caller's scope can never be returned, counted
or ranked. Every write is one transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Protocol

import numpy as np
import numpy.typing as npt

from mindpalace.models import (
    EmbeddingConfig,
    Entity,
    EntityLink,
    Memory,
    MemoryType,
    NewMemory,
    RecallFilters,
    Scope,
)
from mindpalace.store.graph_rows import RelationRow
from mindpalace.store.inspect_rows import DayCount, SessionSummary
from mindpalace.store.memory_rows import AddResult
from mindpalace.store.recall_rows import Hydration, QueryFacts, QueryReads, SeedGraph, TextMatch
from mindpalace.store.vector_rows import (
    Counters,
    DenseRows,
    FlagChange,
    VectorBatch,
    VectorCheck,
    VectorTable,
    Waiting,
)

__all__ = ["GraphRows", "Handle", "MemoryRows", "NameKeys", "TextIndex", "VectorRows"]

#: a name as given and the entity keys it may be
NameKeys = tuple[str, Sequence[str]]


class Handle(Protocol):
    """The open palace itself: where it lives, its schema and size, the
    counters that tell a cache it is stale, and closing it."""

    @property
    def location(self) -> str:
        """Where the data lives (a file path or a URL without password)."""
        ...

    def schema_version(self) -> int:
        """The latest migration applied."""
        ...

    def hash_chars(self) -> int:
        """How many hex digits of a text's SHA-256 the palace keys it by
        (``validation.content_hash``, ``embed.texts.text_hash``)."""
        ...

    def size(self) -> int:
        """How many memories the palace holds, every scope's (for choosing
        where recall runs; cheap where the store keeps the count)."""
        ...

    def disk_bytes(self) -> int:
        """The bytes the palace takes in storage: a SQLite file's pages and
        its write-ahead log; a PostgreSQL database's size."""
        ...

    def generation(self) -> int:
        """A number that changes whenever anything is written (cache invalidation)."""
        ...

    def change_counters(self) -> Counters:
        """The palace's change counters (``Counters``)."""
        ...

    def flag_changes(self, after: int) -> list[FlagChange]:
        """Each row archived, restored or superseded since the ``flags``
        counter was ``after``, with its flags now, by seq."""
        ...

    def close(self) -> None:
        """Release connections. Idempotent."""
        ...


class MemoryRows(Protocol):
    """The memories: writing, reading, listing, revising, archiving and
    deleting them, and their versions."""

    def add(
        self,
        new: NewMemory,
        *,
        memory_id: str,
        now: datetime,
        scope: Scope,
        vectors: VectorBatch | None = None,
        signals: bool = False,
    ) -> AddResult:
        """Write ``new`` (and ``vectors``) unless its content hash already exists
        in its scope.

        When it exists, the existing memory is returned with its strength
        bumped (and un-archived); no second row is written. With ``signals``,
        a ``store`` signal (write source) is recorded in the same transaction.

        The write rules run inside that transaction, after every write
        committed before it, as the writer's ``scope`` sees them: an issue
        without a number (``ISSUE_NUMBER`` in its metadata) is numbered 1 +
        the highest number among the visible issues of its project (archived
        and superseded included), and the current facts of the memory's own
        scope that it restates with a new value (store/supersede.py) are
        closed in its favour (``superseded_by``, history kept).
        """
        ...

    def add_many(
        self,
        items: Sequence[tuple[NewMemory, str]],
        *,
        now: datetime,
        scope: Scope,
        vectors: VectorBatch | None = None,
        signals: bool = False,
    ) -> list[AddResult]:
        """``add`` for (memory, id) pairs in one transaction: all or nothing.
        The write rules see the batch's earlier memories too: its issues of
        one project are numbered 1, 2, 3... after the project's last, and a
        fact may replace one written before it in the batch."""
        ...

    def get(self, memory_id: str, scope: Scope) -> Memory | None:
        """The memory with this id if ``scope`` may see it."""
        ...

    def get_many(self, memory_ids: Sequence[str], scope: Scope) -> dict[str, Memory]:
        """The memories among ``memory_ids`` that ``scope`` may see, by id."""
        ...

    def hydrate(
        self, memory_ids: Sequence[str], scope: Scope, *, feedback_on: Sequence[str] = ()
    ) -> Hydration:
        """``get_many``, and the (useful, not useful) feedback the scope's
        agent gave through its channel on each of ``feedback_on``
        (``feedback_counts``), in one call."""
        ...

    def ids_matching(self, scope: Scope, filters: RecallFilters) -> set[str]:
        """Ids of every memory ``scope`` may see that matches ``filters``."""
        ...

    def list_memories(
        self,
        scope: Scope,
        filters: RecallFilters,
        *,
        limit: int,
        offset: int = 0,
        before: tuple[datetime, str] | None = None,
    ) -> list[Memory]:
        """Visible memories matching ``filters``, newest first by (created_at,
        id); ``before`` skips to those after that pair in this order (keyset
        paging: stable while memories are added)."""
        ...

    def iter_memories(self, scope: Scope, *, batch: int = 500) -> Iterator[Memory]:
        """Every visible memory (archived and superseded included), oldest first."""
        ...

    def history(self, memory_id: str, scope: Scope) -> list[Memory]:
        """The visible supersession chain through a memory, oldest first."""
        ...

    def projects(self, scope: Scope) -> list[tuple[str, int]]:
        """The projects of the live memories ``scope`` may see, with how many
        memories each has, by name."""
        ...

    def sessions(
        self, scope: Scope, *, limit: int, before: tuple[datetime, str] | None = None
    ) -> list[SessionSummary]:
        """Sessions of the live memories ``scope`` sees, latest activity
        first; ``before`` continues after that (last_at, session) pair."""
        ...

    def day_counts(self, scope: Scope) -> list[DayCount]:
        """Live memories ``scope`` sees, counted by creation day, category and store."""
        ...

    def revise(
        self,
        old_id: str,
        new: NewMemory,
        *,
        memory_id: str,
        owner: str | None,
        now: datetime,
        scope: Scope,
        vectors: VectorBatch | None = None,
    ) -> Memory | None:
        """Write ``new`` as ``memory_id``, the next version of ``old_id``, in
        one transaction: entities linked and the write rules applied as in
        ``add`` (no de-duplication bump), then the old row closed as
        supersession closes it (``superseded_by`` the new id, ``valid_to``
        set if open, a ``supersedes`` link). An archived memory's new version
        is archived too. None when ``old_id`` is gone or not ``owner``'s.

        Raises:
            ValidationError: ``old_id`` was replaced already (naming the
                replacement), or another memory of the new version's scope
                holds the same text.
        """
        ...

    def archive(self, memory_id: str, *, owner: str | None, now: datetime) -> bool:
        """Soft-delete: mark archived. False if no such memory owned by ``owner``
        (``None``: any owner, for management calls)."""
        ...

    def restore(self, memory_id: str, *, owner: str | None, now: datetime) -> bool:
        """Un-archive a memory. False if no archived memory owned by ``owner``
        (``None``: any owner, for management calls) has that id."""
        ...

    def set_completed(
        self, memory_id: str, completed: bool, *, owner: str | None, now: datetime
    ) -> bool:
        """Set an issue's state. False if no such issue owned by ``owner``
        (``None``: any owner)."""
        ...

    def delete(self, memory_id: str, *, owner: str | None) -> bool:
        """Hard-delete the row and every record derived from it (as
        ``erase``, without a receipt). False if no such memory owned by
        ``owner`` (``None``: any owner)."""
        ...


class TextIndex(Protocol):
    """The memories' full-text index, and the text a warm keyword index is
    built from; ``query_facts`` is recall's merged read of it."""

    #: whether recall should build its warm keyword index at once, in the
    #: caller's thread, rather than in the background from a process's
    #: second recall on, answering from the store meanwhile (where the
    #: store's own text search is slow, or ranks differently from the warm
    #: index)
    warm_at_once: bool

    def search_text(
        self, terms: Sequence[str], scope: Scope, filters: RecallFilters, *, limit: int
    ) -> list[TextMatch]:
        """BM25 full-text search for any of ``terms`` (already normalised words).

        Ties are broken by newest first, then id, so the order is deterministic.
        """
        ...

    def search_substring(
        self, terms: Sequence[str], scope: Scope, filters: RecallFilters, *, limit: int
    ) -> list[Memory]:
        """Memories containing any of ``terms`` as a substring, newest first."""
        ...

    def terms_present(
        self, terms: Sequence[str], scope: Scope, *, include_archived: bool = False
    ) -> set[str]:
        """Which of ``terms`` (words, matched as the text index matches them)
        occur in some live memory ``scope`` may see."""
        ...

    def query_facts(self, reads: QueryReads, scope: Scope, filters: RecallFilters) -> QueryFacts:
        """Everything ``reads`` asks for in one call: salient words present,
        keyword, substring and event matches, ids matching ``filters``,
        constraints the query names; each as the single-purpose method
        would answer it (scope inside every statement)."""
        ...

    def load_texts(
        self, *, upto_seq: int, after_seq: int = 0
    ) -> list[tuple[int, str | None, str, str | None, str]]:
        """(seq, title, content, context, tags) of every memory written after
        ``after_seq`` up to ``upto_seq``, in write order, unscoped: for a warm
        index that applies scope itself."""
        ...


class VectorRows(Protocol):
    """The memories' vectors: the model they come from, those stored and
    those still to compute, and the nearest-neighbour reads a store can do
    itself."""

    #: whether the store keeps its own nearest-neighbour index of vectors
    #: (``nearest``), which recall then uses instead of an in-process graph
    ann_in_store: bool

    #: whether the store can find a recall's rows itself (``dense_rows``),
    #: so that a process need keep no copy of the palace (database mode)
    dense_in_store: bool

    def embedding_config(self) -> EmbeddingConfig | None:
        """The recorded model, if any."""
        ...

    def set_embedding_config(
        self, config: EmbeddingConfig, *, drop_vectors_except: str | None = None
    ) -> None:
        """Record the model the palace's vectors come from; with
        ``drop_vectors_except``, delete every vector stored under another key."""
        ...

    def add_vectors(self, vectors: VectorBatch) -> None:
        """Store vectors for memories already written (their ``embed_hash``
        names them), in one transaction that bumps the ``vectors`` counter
        (not the generation: no memory changed)."""
        ...

    def assign_vectors(self, assignments: Mapping[str, str], vectors: VectorBatch) -> None:
        """Store ``vectors`` and point memories (id -> text hash) at them, in one transaction."""
        ...

    def missing_vectors(self, model: str, text_hashes: Iterable[str]) -> set[str]:
        """Which of ``text_hashes`` have no stored vector for ``model``."""
        ...

    def wide_vectors(self, model: str, *, limit: int) -> int:
        """How many of the first ``limit`` ``model`` vectors (the oldest)
        are kept in float32, an older mindpalace's form."""
        ...

    def halve_vectors(self, model: str) -> int:
        """Rewrite the ``model`` vectors kept in float32 in half precision
        (``vector_bytes``); how many."""
        ...

    def part_vectors(self, model: str, text_hashes: Iterable[str]) -> dict[str, bytes]:
        """The vectors of the parts of those of ``text_hashes`` that have
        them under ``model`` (``VectorBatch.parts``' form)."""
        ...

    def memory_vectors(self, model: str, memory_ids: Sequence[str]) -> dict[str, bytes]:
        """The ``model`` vectors (stored bytes, ``vector_bytes``) of those of ``memory_ids``
        that have one, by memory id; unscoped: for ids the caller found
        through a scoped read."""
        ...

    def checked_vectors(self, model: str) -> VectorCheck:
        """Where a pass over the texts waiting for ``model`` may start:
        every memory up to its ``after_seq`` had its vector when the last
        pass ended (``mark_checked_vectors``)."""
        ...

    def pending_vectors(self, model: str, *, after_seq: int = 0, limit: int) -> Waiting:
        """Up to ``limit`` memories written after ``after_seq`` that wait to
        have their text embedded by ``model`` (``embed_hash`` set, no vector
        stored under it), in write order: (seq, text hash, title, content);
        and the newest memory the same read saw."""
        ...

    def mark_checked_vectors(self, model: str, check: VectorCheck, newest: tuple[int, str]) -> bool:
        """Record that every memory up to ``newest`` (seq, id) has its
        ``model`` vector, as a pass that began at ``check`` found; False
        (nothing recorded) where a memory's text changed in place since."""
        ...

    def count_pending_vectors(self, model: str) -> int:
        """How many distinct texts ``pending_vectors`` would still return."""
        ...

    def count_unembedded(self) -> int:
        """How many memories (every scope's) name no text to embed: written
        while the model was unavailable or failed, for ``reindex`` to embed."""
        ...

    def load_vectors(
        self, model: str, *, after_seq: int = 0, texts: bool = False, floats: bool = True
    ) -> VectorTable:
        """Every memory written after ``after_seq``, in write order, with its
        vector for ``model`` (a zero row and ``embedded`` false when it has
        none), its scope and filter columns and, with ``texts``, its indexed
        text. Without ``floats`` no vector is read: the matrix has no
        columns, ``embedded`` still says which rows have one, and
        ``memory_vectors`` reads those of the rows wanted."""
        ...

    def dense_rows(
        self,
        model: str,
        query: npt.NDArray[np.float32],
        scope: Scope,
        filters: RecallFilters,
        *,
        nearest: int = 0,
        ids: Sequence[str] = (),
        sessions: Sequence[str] = (),
    ) -> DenseRows | None:
        """Recall in the database: the ``nearest`` visible memories matching
        ``filters`` by cosine to ``query`` (with the lowest cosine over every
        such memory), the visible ones among ``ids`` and of ``sessions``,
        each with its cosine, computed where the vectors are; None where
        the store cannot (no vector index of this size, or none at all)."""
        ...

    def nearest(
        self,
        model: str,
        query: npt.NDArray[np.float32],
        scope: Scope,
        filters: RecallFilters,
        *,
        limit: int,
    ) -> list[str] | None:
        """Ids of the ``limit`` visible memories matching ``filters`` whose
        ``model`` vectors are nearest ``query`` (cosine), best first, from the
        store's approximate index; None when the store has none."""
        ...


class GraphRows(Protocol):
    """The entity graph: entities, mentions, same-as links, co-occurrence,
    typed relations, and the constraints found through them."""

    def entities(
        self,
        scope: Scope,
        *,
        query: str | None = None,
        types: Sequence[MemoryType] = (),
        limit: int = 50,
        offset: int = 0,
    ) -> list[Entity]:
        """Visible entities, most mentioned first."""
        ...

    def entities_named(self, norms: Sequence[str], scope: Scope) -> list[Entity]:
        """Visible entities whose key is one of ``norms``."""
        ...

    def entities_of(self, memory_ids: Sequence[str], scope: Scope) -> dict[str, list[Entity]]:
        """The entities each visible memory mentions."""
        ...

    def resolve_names(self, norms: Sequence[str], scope: Scope) -> dict[str, set[str]]:
        """For each name, the visible entity keys it names (directly or as alias)."""
        ...

    def linked_names(self, norms: Sequence[str], scope: Scope) -> dict[str, list[str]]:
        """Per entity key: the keys of the visible short names linked to it."""
        ...

    def join_entities(
        self, short: NameKeys, full: NameKeys, scope: Scope, now: datetime
    ) -> list[EntityLink]:
        """Link the entity ``short`` names to the one ``full`` names (store/same_as_sql.py)."""
        ...

    def separate_entity(self, name: NameKeys, scope: Scope, now: datetime) -> list[EntityLink]:
        """Undo the links of the entity ``name`` names, for good (store/same_as_sql.py)."""
        ...

    def entity_members(
        self, norms: Sequence[str], scope: Scope, filters: RecallFilters, *, max_degree: int
    ) -> dict[str, tuple[int, list[str]]]:
        """Per entity key: visible mentioning memories' count, and ids up to ``max_degree``."""
        ...

    def co_occurring(
        self, norms: Sequence[str], scope: Scope, *, per_entity: int = 10
    ) -> dict[str, list[tuple[str, float]]]:
        """The strongest visible co-occurrence neighbours of each entity key."""
        ...

    def co_mentions(
        self, norm: str, others: Sequence[str], scope: Scope, *, per_edge: int, scan: int = 5000
    ) -> dict[str, list[str]]:
        """Per key of ``others``: ids of visible live memories mentioning it
        and ``norm``, newest first, at most ``per_edge``."""
        ...

    def seed_graph(
        self,
        memory_ids: Sequence[str],
        scope: Scope,
        filters: RecallFilters,
        *,
        neighbours: int,
        max_degree: int,
        members: bool = False,
        degrees: Callable[[Sequence[str]], Mapping[str, int]] | None = None,
    ) -> SeedGraph:
        """The entities the visible ``memory_ids`` mention and, with
        ``members``, the visible memories (under ``filters``) mentioning
        each (``entity_members``); then the ``neighbours`` strongest
        co-occurring entities (none when 0) of each entity mentioned by 2 to
        ``max_degree`` visible memories (at most ``FOLLOWED`` of them, the
        rarest first: the work is bounded by counts, never by time, so
        the same palace and query read the same graph), with their
        members. Without
        ``members``, ``degrees`` counts an entity's visible mentions (a
        caller's warm index); with neither, every entity is followed."""
        ...

    def load_mentions(
        self, *, after_seq: int = 0, upto_seq: int | None = None
    ) -> list[tuple[str, int]]:
        """(entity key, memory seq) of every mention of memories written after
        ``after_seq`` (up to ``upto_seq``; every later one when None),
        unscoped: for a warm index that applies scope itself."""
        ...

    def relations(
        self,
        norms: Sequence[str],
        scope: Scope,
        *,
        kinds: Sequence[str],
        side: str = "object",
        limit: int = 200,
    ) -> list[RelationRow]:
        """Typed relations whose ``side`` entity is one of ``norms``, stated by
        live memories the scope sees, newest first."""
        ...

    def has_constraints(self) -> bool:
        """Whether any memory (of any scope) is a constraint: recall skips
        looking for the query's constraints in a palace that has none."""
        ...

    def constraints_mentioning(
        self, norms: Sequence[str], scope: Scope, filters: RecallFilters, *, limit: int = 20
    ) -> dict[str, list[Memory]]:
        """Visible constraint memories mentioning each entity key."""
        ...
