"""The store's roles around the memories: skills, signals, exchange and
upkeep (roles.py holds the others and says what a role is)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from mindpalace.models import (
    Erasable,
    Memory,
    Mention,
    RecallFilters,
    RelationMention,
    Scope,
    Stats,
)
from mindpalace.receipts import ErasureTally, Receipt, Sweep
from mindpalace.retention_rules import RetentionRule
from mindpalace.store.exchange_rows import ImportReport, PalaceRecords
from mindpalace.store.memory_rows import Signal
from mindpalace.store.skill_rows import (
    SkillLink,
    SkillOwner,
    SkillRow,
    SkillUsage,
    SkillWrite,
    UsageSignal,
)
from mindpalace.store.upkeep_rows import ConsolidationPlan, DecayCandidate, TimesToKeep
from mindpalace.store.vector_rows import VectorBatch

__all__ = ["Exchange", "SignalRows", "SkillRows", "Upkeep"]


class SkillRows(Protocol):
    """Skills: their rows, correlation links, usage, and the writes of both."""

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


class SignalRows(Protocol):
    """The signals table (writes, recalls, feedback) and the learned scorer
    weights drawn from it; never the memories themselves."""

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

    def memory_signals(
        self, memory_id: str, *, agent_id: str | None, limit: int = 50
    ) -> list[Signal]:
        """Signals about one memory, newest first (only ``agent_id``'s unless None)."""
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


class Exchange(Protocol):
    """Export and import of whole memories with every record about them."""

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


class Upkeep(Protocol):
    """Palace-wide care: meta values, counts, consolidation and decay,
    retention rules, and erasure."""

    def meta(self, key: str) -> int | None:
        """A palace_meta counter, or None."""
        ...

    def keep_meta(self, values: Mapping[str, int]) -> dict[str, int]:
        """Store the values whose keys are not stored yet; what is stored after."""
        ...

    def put_meta(self, key: str, value: int, *, drop_below: tuple[str, int] | None = None) -> None:
        """Store a value; optionally drop a prefix's values under a limit."""
        ...

    def stats(self, scope: Scope) -> Stats:
        """Counts over what ``scope`` can see."""
        ...

    def times_to_keep(self, form: str, *, after_seq: int, limit: int) -> list[TimesToKeep]:
        """Up to ``limit`` memories past ``after_seq`` (by seq, every
        scope's) whose kept stated times do not start with ``form`` (none
        kept, or another reader's)."""
        ...

    def keep_times(self, kept: Sequence[tuple[TimesToKeep, str]]) -> None:
        """Store each memory's stated times (its kept form), in one
        transaction; not where its text changed since it was read."""
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

    def erasable(
        self,
        scope: Scope,
        filters: RecallFilters,
        *,
        channel: str | None = None,
        entity: str | None = None,
    ) -> list[Erasable]:
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
