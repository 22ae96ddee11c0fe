"""The storage protocol every backend implements.

Scope is a mandatory argument of every read: a backend applies it inside the
query, so a memory outside the caller's scope can never be returned, counted
or ranked. Every write is one transaction.

The values the protocol's methods take and return beyond the models live in
the ``*_rows.py`` modules beside it (vectors in vector_rows.py), so that the
protocol and the SQL that implements it both import them; this module
re-exports those that callers name.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit, urlunsplit

import numpy as np
import numpy.typing as npt

from mindpalace.models import (
    EmbeddingConfig,
    Entity,
    EntityLink,
    Memory,
    MemoryType,
    Mention,
    NewMemory,
    RecallFilters,
    RelationMention,
    Scope,
    Stats,
)
from mindpalace.receipts import ErasureTally, Receipt, Sweep
from mindpalace.retention_rules import RetentionRule
from mindpalace.store.exchange_rows import PalaceRecords
from mindpalace.store.inspect_rows import DayCount, SessionSummary
from mindpalace.store.recall_rows import Hydration, QueryFacts, QueryReads, SeedGraph, TextMatch
from mindpalace.store.skill_rows import (
    SkillLink,
    SkillOwner,
    SkillRow,
    SkillUsage,
    SkillWrite,
    UsageSignal,
)
from mindpalace.store.vector_rows import DenseRows, VectorBatch, VectorTable

if TYPE_CHECKING:  # these modules import this module's value types
    from mindpalace.store.relations_sql import RelationRow
    from mindpalace.store.upkeep_sql import ConsolidationPlan, DecayCandidate

#: how the URL of a palace on a PostgreSQL server begins
SERVER_SCHEMES = ("postgresql://", "postgres://")


__all__ = [
    "SERVER_SCHEMES",
    "AddResult",
    "DenseRows",
    "ImportReport",
    "Signal",
    "Store",
    "TextMatch",
    "VectorBatch",
    "VectorTable",
    "redact_url",
]


def redact_url(url: str) -> str:
    """``url`` without its password, for messages and ``location``."""
    parts = urlsplit(url)
    if not parts.password:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    user = (parts.username or "") + ":***"
    return urlunsplit(parts._replace(netloc=f"{user}@{netloc[-1]}"))


@dataclass(frozen=True, slots=True)
class AddResult:
    """What ``Store.add`` did: the stored memory, and whether it is new."""

    memory: Memory
    created: bool


@dataclass(frozen=True, slots=True)
class ImportReport:
    """Outcome of an import: rows written and rows already present."""

    inserted: int
    skipped: int


@dataclass(frozen=True, slots=True)
class Signal:
    """One event of the signals table, kept apart from the memories so that
    reading never changes them.

    ``kind`` is ``store`` (a write and its source), ``recall`` (a query and
    what it returned), or ``feedback`` (a hit judged useful or not).
    ``data`` holds the kind's features as JSON-ready values. ``seq`` is 0
    until stored.
    """

    kind: str
    agent_id: str
    at: datetime
    channel: str | None = None
    memory_id: str | None = None
    query: str | None = None
    data: Mapping[str, Any] = field(default_factory=dict)
    seq: int = 0


#: a name as given and the entity keys it may be
NameKeys = tuple[str, Sequence[str]]


class Store(Protocol):
    """A palace's storage: memories, their text index, and their scope rules."""

    #: whether recall should build its warm keyword index at once, in the
    #: caller's thread, rather than in the background from a process's
    #: second recall on, answering from the store meanwhile (where the
    #: store's own text search is slow, or ranks differently from the warm
    #: index)
    warm_at_once: bool
    #: whether the store keeps its own nearest-neighbour index of vectors
    #: (``nearest``), which recall then uses instead of an in-process graph
    ann_in_store: bool
    #: whether the store can find a recall's rows itself (``dense_rows``),
    #: so that a process need keep no copy of the palace (database mode)
    dense_in_store: bool

    @property
    def location(self) -> str:
        """Where the data lives (a file path or a URL without password)."""
        ...

    def schema_version(self) -> int:
        """The latest migration applied."""
        ...

    def size(self) -> int:
        """How many memories the palace holds, every scope's (for choosing
        where recall runs; cheap where the store keeps the count)."""
        ...

    def disk_bytes(self) -> int:
        """The bytes the palace takes in storage: a SQLite file's pages and
        its write-ahead log; a PostgreSQL database's size."""
        ...

    def close(self) -> None:
        """Release connections. Idempotent."""
        ...

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

    def assign_vectors(self, assignments: Mapping[str, str], vectors: VectorBatch) -> None:
        """Store ``vectors`` and point memories (id -> text hash) at them, in one transaction."""
        ...

    def set_embedding_config(
        self, config: EmbeddingConfig, *, drop_vectors_except: str | None = None
    ) -> None:
        """Record the model the palace's vectors come from; with
        ``drop_vectors_except``, delete every vector stored under another key."""
        ...

    def embedding_config(self) -> EmbeddingConfig | None:
        """The recorded model, if any."""
        ...

    def missing_vectors(self, model: str, text_hashes: Iterable[str]) -> set[str]:
        """Which of ``text_hashes`` have no stored vector for ``model``."""
        ...

    def part_vectors(self, model: str, text_hashes: Iterable[str]) -> dict[str, bytes]:
        """The vectors of the parts of those of ``text_hashes`` that have
        them under ``model`` (``VectorBatch.parts``' form)."""
        ...

    def memory_vectors(self, model: str, memory_ids: Sequence[str]) -> dict[str, bytes]:
        """The ``model`` vectors (float32 bytes) of those of ``memory_ids``
        that have one, by memory id; unscoped: for ids the caller found
        through a scoped read."""
        ...

    def pending_vectors(
        self, model: str, *, after_seq: int = 0, limit: int
    ) -> list[tuple[int, str, str | None, str]]:
        """Up to ``limit`` memories written after ``after_seq`` that wait to
        have their text embedded by ``model`` (``embed_hash`` set, no vector
        stored under it), in write order: (seq, text hash, title, content)."""
        ...

    def count_pending_vectors(self, model: str) -> int:
        """How many distinct texts ``pending_vectors`` would still return."""
        ...

    def count_unembedded(self) -> int:
        """How many memories (every scope's) name no text to embed: written
        while the model was unavailable or failed, for ``reindex`` to embed."""
        ...

    def add_vectors(self, vectors: VectorBatch) -> None:
        """Store vectors for memories already written (their ``embed_hash``
        names them), in one transaction that bumps the ``vectors`` counter
        (not the generation: no memory changed)."""
        ...

    def generation(self) -> int:
        """A number that changes whenever anything is written (cache invalidation)."""
        ...

    def change_counters(self) -> tuple[int, int, int]:
        """(generation, epoch, vectors): the epoch changes only when existing
        rows change; ``vectors`` when vectors are added for memories already
        written (``add_vectors``)."""
        ...

    def load_vectors(self, model: str, *, after_seq: int = 0, texts: bool = False) -> VectorTable:
        """Every memory written after ``after_seq``, in write order, with its
        vector for ``model`` (a zero row and ``embedded`` false when it has
        none), its scope and filter columns and, with ``texts``, its indexed
        text."""
        ...

    def get_many(self, memory_ids: Sequence[str], scope: Scope) -> dict[str, Memory]:
        """The memories among ``memory_ids`` that ``scope`` may see, by id."""
        ...

    def search_substring(
        self, terms: Sequence[str], scope: Scope, filters: RecallFilters, *, limit: int
    ) -> list[Memory]:
        """Memories containing any of ``terms`` as a substring, newest first."""
        ...

    # -- recall's reads, merged (store/recall_sql.py) ---------------------------------

    def query_facts(self, reads: QueryReads, scope: Scope, filters: RecallFilters) -> QueryFacts:
        """Everything ``reads`` asks for in one call: salient words present,
        keyword, substring and event matches, ids matching ``filters``,
        constraints the query names; each as the single-purpose method
        would answer it (scope inside every statement)."""
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

    def hydrate(
        self, memory_ids: Sequence[str], scope: Scope, *, feedback_on: Sequence[str] = ()
    ) -> Hydration:
        """``get_many``, and the (useful, not useful) feedback the scope's
        agent gave through its channel on each of ``feedback_on``
        (``feedback_counts``), in one call."""
        ...

    def terms_present(
        self, terms: Sequence[str], scope: Scope, *, include_archived: bool = False
    ) -> set[str]:
        """Which of ``terms`` (words, matched as the text index matches them)
        occur in some live memory ``scope`` may see."""
        ...

    def ids_matching(self, scope: Scope, filters: RecallFilters) -> set[str]:
        """Ids of every memory ``scope`` may see that matches ``filters``."""
        ...

    def get(self, memory_id: str, scope: Scope) -> Memory | None:
        """The memory with this id if ``scope`` may see it."""
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

    def projects(self, scope: Scope) -> list[tuple[str, int]]:
        """The projects of the live memories ``scope`` may see, with how many
        memories each has, by name."""
        ...

    def search_text(
        self, terms: Sequence[str], scope: Scope, filters: RecallFilters, *, limit: int
    ) -> list[TextMatch]:
        """BM25 full-text search for any of ``terms`` (already normalised words).

        Ties are broken by newest first, then id, so the order is deterministic.
        """
        ...

    def archive(self, memory_id: str, *, owner: str | None, now: datetime) -> bool:
        """Soft-delete: mark archived. False if no such memory owned by ``owner``
        (``None``: any owner, for management calls)."""
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

    # -- erasure (store/erase_sql.py) -------------------------------------------------

    def erasable(
        self,
        scope: Scope,
        filters: RecallFilters,
        *,
        channel: str | None = None,
        entity: str | None = None,
    ) -> list[Memory]:
        """The memories ``scope`` may change matching ``filters``, of
        ``channel`` and mentioning the entity (normalised name or alias)
        ``entity``, in write order."""
        ...

    def versions(self, memory_ids: Collection[str], scope: Scope) -> list[Memory]:
        """The older versions (replaced, merged) of ``memory_ids`` that
        ``scope`` may change, transitively, oldest first."""
        ...

    def erasure_tally(
        self, memory_ids: Sequence[str], *, sweep: Sweep | None, text_hashes: Collection[str]
    ) -> ErasureTally:
        """What ``erase`` would remove, without writing."""
        ...

    def erase(
        self,
        memory_ids: Sequence[str],
        *,
        sweep: Sweep | None,
        text_hashes: Collection[str],
        receipt: Receipt | None,
    ) -> ErasureTally:
        """Delete the memories and every record derived from them, in one
        transaction that records ``receipt``; what was removed."""
        ...

    def scrub(self) -> bool:
        """After an erasure: clean what the backend keeps on disk of deleted
        rows (SQLite's WAL, PostgreSQL's dead tuples); False if it could not."""
        ...

    def erasures(self, scope: Scope, *, limit: int = 100) -> list[Receipt]:
        """The erasure receipts of ``scope``'s agent, newest first."""
        ...

    # -- retention rules (store/retention_sql.py) -------------------------------------

    def retention_rules(self, agent_id: str | None = None) -> list[RetentionRule]:
        """The rules reaching ``agent_id``'s memories, or every rule (None)."""
        ...

    def set_retention_rule(self, rule: RetentionRule) -> RetentionRule:
        """Store a rule (or change the days of the one naming the same things)."""
        ...

    def remove_retention_rule(self, rule_id: str) -> bool:
        """Delete a rule; False if there is none of that id."""
        ...

    def retention_ran_at(self) -> int | None:
        """When retention last ran over the whole palace (epoch seconds)."""
        ...

    def claim_retention_run(self, now: int, every: int) -> bool:
        """Record a whole-palace run unless one ran within ``every`` seconds."""
        ...

    def stats(self, scope: Scope) -> Stats:
        """Counts over what ``scope`` can see."""
        ...

    def iter_memories(self, scope: Scope, *, batch: int = 500) -> Iterator[Memory]:
        """Every visible memory (archived and superseded included), oldest first."""
        ...

    # -- the entity graph (store/graph_sql.py) ---------------------------------------

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

    def load_texts(
        self, *, upto_seq: int, after_seq: int = 0
    ) -> list[tuple[int, str | None, str, str | None, str]]:
        """(seq, title, content, context, tags) of every memory written after
        ``after_seq`` up to ``upto_seq``, in write order, unscoped: for a warm
        index that applies scope itself."""
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

    def load_mentions(
        self, *, after_seq: int = 0, upto_seq: int | None = None
    ) -> list[tuple[str, int]]:
        """(entity key, memory seq) of every mention of memories written after
        ``after_seq`` (up to ``upto_seq``; every later one when None),
        unscoped: for a warm index that applies scope itself."""
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

    def history(self, memory_id: str, scope: Scope) -> list[Memory]:
        """The visible supersession chain through a memory, oldest first."""
        ...

    # -- consolidation (store/upkeep_sql.py) ------------------------------------------

    def meta(self, key: str) -> int | None:
        """A palace_meta counter, or None."""
        ...

    # -- palace-wide values (store/meta_sql.py) -------------------------------------

    def keep_meta(self, values: Mapping[str, int]) -> dict[str, int]:
        """Store the values whose keys are not stored yet; what is stored after."""
        ...

    def put_meta(self, key: str, value: int, *, drop_below: tuple[str, int] | None = None) -> None:
        """Store a value; optionally drop a prefix's values under a limit."""
        ...

    def agents(self) -> list[str]:
        """Every agent that owns a memory."""
        ...

    def partitions(self) -> list[tuple[str, str]]:
        """Every (agent, channel) that holds a memory; channel "" for none."""
        ...

    def decay_candidates(self, agent_id: str, channel: str = "") -> list[DecayCandidate]:
        """The partition's current memories, with what decay looks at."""
        ...

    def feedback_pairs(
        self, agent_id: str, after_seq: int, channel: str = ""
    ) -> tuple[list[tuple[str, str]], int, int]:
        """The partition's memory pairs its agent marked useful for one recall
        after a signal; the last seq and how many signals were read."""
        ...

    def edge_weights_between(self, a: str, b: str) -> list[tuple[int, int, float]]:
        """Same-scope entity pairs of two memories and their edge weights."""
        ...

    def apply_consolidation(self, plan: ConsolidationPlan, now: datetime) -> int:
        """Write a consolidation plan in one transaction; returns edges decayed."""
        ...

    def import_memories(
        self,
        memories: Iterable[Memory],
        *,
        scope: Scope,
        new_id: Callable[[], str],
        embed_hashes: Mapping[str, str] | None = None,
        vectors: VectorBatch | None = None,
        mentions: Mapping[str, Sequence[Mention]] | None = None,
        relations: Mapping[str, Sequence[RelationMention]] | None = None,
        records: PalaceRecords | None = None,
        now: datetime | None = None,
    ) -> ImportReport:
        """Write complete memories as they are (ids and timestamps kept), in one
        transaction. A memory whose id is one of ``scope``'s own visible
        memories (any stored id, for a management scope), or whose scoped
        content hash exists, is skipped; one whose id is stored but outside
        that is inserted under ``new_id()``, exactly as an unknown id would be.
        ``embed_hashes`` maps memory ids to the hash of their embedded text;
        ``mentions`` to the entities to link them to; ``relations`` to the
        typed relations they state between those entities; ``records`` are
        the export's other records, written for the memories inserted."""
        ...

    def export_records(self, scope: Scope, memory_ids: Collection[str]) -> PalaceRecords:
        """Every record besides memories about ``memory_ids`` (the memories
        ``scope`` exports) and the scope's agent's signals and scorer weights;
        every row for a management scope."""
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

    def record_signals(self, signals: Sequence[Signal], *, wait: bool = True) -> None:
        """Append signals in one transaction. Never touches memories, and does
        not count as a change of the palace (caches stay warm). Without
        ``wait`` a busy palace raises ``BusyError`` at once instead of making
        the caller queue for the write lock."""
        ...

    def iter_signals(
        self,
        *,
        kinds: Sequence[str] = (),
        agent_id: str | None,
        channel: str | None = None,
    ) -> Iterator[Signal]:
        """Signals in the order recorded: of ``kinds`` (all when empty), of
        ``agent_id`` (``None``: every agent, for management calls) and, when
        given, of ``channel`` only."""
        ...

    def feedback_counts(
        self, memory_ids: Sequence[str], *, agent_id: str, channel: str | None
    ) -> dict[str, tuple[int, int]]:
        """(useful, not useful) feedback on each memory by one agent through
        one channel (memories never judged are left out)."""
        ...

    def save_scorer(
        self, *, agent_id: str, channel: str | None, data: Mapping[str, Any], at: datetime
    ) -> None:
        """Replace the learned scorer weights of one agent and channel."""
        ...

    def load_scorer(self, *, agent_id: str, channel: str | None) -> dict[str, Any] | None:
        """The learned scorer weights of one agent and channel, or None."""
        ...

    # -- skills (store/skills_sql.py) ---------------------------------------------

    def skills(
        self,
        scope: Scope,
        *,
        owner: SkillOwner | None = None,
        include_archived: bool = False,
    ) -> list[SkillRow]:
        """Skills ``scope`` may see (only ``owner``'s when given), by name."""
        ...

    def skill_links(
        self,
        scope: Scope,
        *,
        sources: Sequence[str] | None = None,
        owner: SkillOwner | None = None,
    ) -> list[SkillLink]:
        """Correlation links between live skills ``scope`` may see (leaving
        ``sources``, a list of memory ids, when given)."""
        ...

    def skill_usage(self, memory_ids: Sequence[str]) -> dict[str, SkillUsage]:
        """Activation and lookup counts per skill memory id."""
        ...

    def usage_signals(
        self, kind: str, *, after_seq: int = 0, agent_id: str | None = None, limit: int = 10_000
    ) -> list[UsageSignal]:
        """Signals of ``kind`` recorded after ``after_seq``, oldest first."""
        ...

    def write_skills(
        self,
        owner: SkillOwner,
        writes: Sequence[SkillWrite],
        *,
        correlations: Mapping[tuple[str, str], float],
        now: datetime,
        vectors: VectorBatch | None = None,
    ) -> list[Memory]:
        """Insert or update skills by name in ``owner``'s scope and set the
        owner's ``correlates`` links to exactly ``correlations``, in one transaction."""
        ...

    def strengthen_links(
        self,
        increments: Mapping[tuple[str, str], int],
        *,
        rate: float,
        watermark_key: str,
        watermark: int,
        now: datetime,
    ) -> int:
        """Strengthen ``coactivated`` links (memory id pairs) and record the
        consolidation watermark, in one transaction."""
        ...

    # -- the inspector (store/inspect_sql.py) -----------------------------------------

    def restore(self, memory_id: str, *, owner: str | None, now: datetime) -> bool:
        """Un-archive a memory. False if no archived memory owned by ``owner``
        (``None``: any owner, for management calls) has that id."""
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

    def memory_signals(
        self, memory_id: str, *, agent_id: str | None, limit: int = 50
    ) -> list[Signal]:
        """Signals about one memory, newest first (only ``agent_id``'s unless None)."""
        ...

    def entities_named(self, norms: Sequence[str], scope: Scope) -> list[Entity]:
        """Visible entities whose key is one of ``norms``."""
        ...

    def co_mentions(
        self, norm: str, others: Sequence[str], scope: Scope, *, per_edge: int, scan: int = 5000
    ) -> dict[str, list[str]]:
        """Per key of ``others``: ids of visible live memories mentioning it
        and ``norm``, newest first, at most ``per_edge``."""
        ...
