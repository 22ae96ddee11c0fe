"""``palace.graph``: the entity graph as the palace's scope sees it.

Entities are linked when memories are written (``Palace.remember``); this
view lists them, shows what a memory mentions, follows supersession
history, and runs consolidation.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

import numpy as np

from mindpalace.errors import NotFoundError, ValidationError
from mindpalace.graph.consolidate import (
    EDGE_DECAY_PER_DAY,
    EDGE_FLOOR,
    GRACE_DAYS,
    MEMORY_DECAY_PER_DAY,
    MEMORY_FLOOR,
    ConsolidationReport,
    decayed,
    hebbian,
    near_duplicates,
)
from mindpalace.graph.extract import normalise_name
from mindpalace.models import (
    Category,
    Entity,
    EntityLink,
    Memory,
    MemoryType,
    RecallFilters,
    Scope,
)
from mindpalace.retrieval.dense import DenseIndex
from mindpalace.store.roles import MemoryRows
from mindpalace.store.roles_palace import Upkeep
from mindpalace.store.upkeep_sql import ConsolidationPlan, partition_key
from mindpalace.validation import check_id, check_limit, check_query, parse_many

if TYPE_CHECKING:
    from mindpalace.view import View

__all__ = ["Edge", "GraphView", "Neighbourhood"]

MAX_NEIGHBOURS = 50


@dataclass(frozen=True, slots=True)
class Edge:
    """A co-occurrence edge from an entity to a neighbour: the neighbour's
    key, name and type, the edge's weight, and the memories behind it (that
    mention both), newest first."""

    norm: str
    name: str
    type: MemoryType
    weight: float
    memories: tuple[Memory, ...]


@dataclass(frozen=True, slots=True)
class Neighbourhood:
    """An entity (one row per scope that has its key) and its strongest
    neighbours, strongest first."""

    norm: str
    entities: tuple[Entity, ...]
    edges: tuple[Edge, ...]


class GraphView:
    """The entity graph of one palace, through its scope."""

    def __init__(self, palace: View) -> None:
        self._palace = palace

    def entities(
        self,
        query: str | None = None,
        *,
        types: str | Iterable[str | MemoryType] | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> list[Entity]:
        """Visible entities, most mentioned first.

        Args:
            query: keep entities whose name or an alias contains this text.
            types: keep these taxonomy types (person, project, system, tool,
                concept, skill, task, unknown).
            limit: 1-1,000.
            offset: skip this many.

        Raises:
            ValidationError: on a bad query (over 10,000 characters), type, limit
                or offset.
        """
        check_limit(limit, low=1, high=1000)
        check_limit(offset, low=0, high=2**62, field="offset")
        return self._palace.engine.store.entities(
            self._palace.scope,
            query=None if query is None else check_query(query) or None,
            types=parse_many(MemoryType, types, "type"),
            limit=limit,
            offset=offset,
        )

    def join_entities(self, short: str, full: str) -> list[EntityLink]:
        """Make the entity named ``short`` the same as the one named ``full``,
        by hand, in each scope of this palace's agent that has both: readers
        then treat them as one (the short name is listed with the full one).
        Undone by ``separate_entity``; nothing else moves.

        Args:
            short: the entity to link, by its name or key, any case.
            full: the entity it is the same as.

        Returns:
            The links made.

        Raises:
            ValidationError: a name no visible entity has (``entities()``
                lists them), the same name twice, or names never in one scope.
            PermissionDenied: the names are another agent's entities.
        """
        palace = self._palace
        return palace.engine.store.join_entities(
            _keys(short, "short"), _keys(full, "full"), palace.scope, palace.now()
        )

    def separate_entity(self, name: str) -> list[EntityLink]:
        """Undo the links of the entity named ``name``: its own link to a
        fuller name ("Maria" from "Maria Lopez"), or, for a full name, those
        of the short names linked to it. The first-name rule never links a
        separated pair again; ``join_entities`` can.

        Returns:
            The links undone, as they were.

        Raises:
            ValidationError: a name no visible entity has (``entities()``
                lists them), or one not linked.
            PermissionDenied: the name is another agent's entity.
        """
        palace = self._palace
        return palace.engine.store.separate_entity(_keys(name, "name"), palace.scope, palace.now())

    def mentions(self, memory_id: str) -> list[Entity]:
        """The entities a memory mentions.

        Raises:
            NotFoundError: no such memory in this scope.
        """
        memory = self._palace.get(memory_id)
        return self._palace.engine.store.entities_of([memory.id], self._palace.scope).get(
            memory.id, []
        )

    def neighbourhood(self, name: str, *, limit: int = 12, per_edge: int = 5) -> Neighbourhood:
        """An entity and its ``limit`` strongest co-occurrence neighbours,
        each with up to ``per_edge`` of the memories behind the edge.

        Args:
            name: the entity's key (``Entity.norm``) or name, any case.
            limit: neighbours at most, 1-50.
            per_edge: memories per edge at most, 1-50.

        Raises:
            ValidationError: a bad name or limit.
            NotFoundError: no entity of that name in this scope.
        """
        check_limit(limit, low=1, high=MAX_NEIGHBOURS)
        check_limit(per_edge, low=1, high=MAX_NEIGHBOURS, field="per_edge")
        given = check_query(name)
        keys = [k for k in dict.fromkeys((given, normalise_name(given))) if k]
        store = self._palace.engine.store
        scope = self._palace.scope
        rows = store.entities_named(keys, scope) if keys else []
        norm = next((k for k in keys if any(e.norm == k for e in rows)), None)
        if norm is None:
            raise NotFoundError(name)
        found = [e for e in rows if e.norm == norm]
        near = store.co_occurring([norm], scope, per_entity=limit).get(norm, [])
        keys = [key for key, _ in near]
        named: dict[str, Entity] = {}
        for row in store.entities_named(keys, scope):
            named.setdefault(row.norm, row)
        behind = store.co_mentions(norm, keys, scope, per_edge=per_edge)
        wanted = sorted({i for ids in behind.values() for i in ids})
        memories = store.get_many(wanted, scope)
        edges = []
        for key, weight in near:
            neighbour = named.get(key)
            edges.append(
                Edge(
                    norm=key,
                    name=neighbour.name if neighbour else key,
                    type=neighbour.type if neighbour else MemoryType.UNKNOWN,
                    weight=weight,
                    memories=tuple(memories[i] for i in behind.get(key, []) if i in memories),
                )
            )
        return Neighbourhood(norm=norm, entities=tuple(found), edges=tuple(edges))

    def history(self, memory_id: str) -> list[Memory]:
        """The memory's supersession chain, oldest first: the facts it
        replaced, itself, and what replaced it.

        Raises:
            ValidationError: an id that is not a non-empty string.
            NotFoundError: no such memory in this scope.
        """
        chain = self._palace.engine.store.history(check_id(memory_id), self._palace.scope)
        if not chain:
            raise NotFoundError(memory_id)
        return chain

    def consolidate(self, *, dry_run: bool = False) -> ConsolidationReport:
        """Strengthen, decay and merge what this palace may both see and
        change, one partition (an agent's memories in one channel) at a time;
        never across partitions. Running it twice in a row changes nothing
        the second time.

        - An ordinary palace consolidates its agent's unchannelled memories
          and, when it has a channel, its agent's memories of that channel.
        - A peer-facing palace consolidates only its agent's memories of its
          own channel: not the agent's unchannelled notes (which it does not
          see) nor the shared ones (which it sees but does not write).
        - A palace opened with ``management=True`` consolidates every
          partition.

        The report names only memories and edges of those partitions, and
        counts only their signals.

        - Hebbian: edges between the entities of memories marked useful for
          the same recall (``feedback`` signals) move toward 1, once per signal.
        - Decay, per whole day since the agent's last consolidation: memory
          strength of memories unused for 30 days, and edge weights not
          strengthened for 30 days (constraints and ``metadata.pinned`` exempt).
        - Near-duplicates (cosine >= 0.95 and word overlap >= 0.6, same scope,
          not conversation turns nor constraints) merge into the older memory,
          which keeps the merged ids in ``metadata.merged_from``; the newer is
          archived and linked (``merged``).

        Args:
            dry_run: report what would change and write nothing.
        """
        palace = self._palace
        store = palace.engine.store
        now = palace.now()
        report = ConsolidationReport()
        dense = palace.engine.semantic.dense() if palace.engine.semantic.available else None
        for agent, channel in _partitions(store, palace.scope):
            plan, part = _plan(store, dense, agent, channel, now)
            report.days = max(report.days, part.days)
            report.strengthened += part.strengthened
            report.decayed_memories += part.decayed_memories
            report.merged += part.merged
            report.signals_used += part.signals_used
            if not dry_run:
                report.decayed_edges += store.apply_consolidation(plan, now)
        return report


def _keys(name: str, field: str) -> tuple[str, list[str]]:
    """``name`` as given and the entity keys it may be (as typed, normalised)."""
    check_query(name, field)
    keys = [k for k in dict.fromkeys((name.casefold().strip(), normalise_name(name))) if k]
    if not keys:
        raise ValidationError(
            field, name, reason=f"{field}: an entity name is required (`mindpalace entities`)"
        )
    return name, keys


class _Consolidating(Upkeep, MemoryRows, Protocol):
    """What consolidating a partition reads and writes: its candidates,
    feedback and edges (upkeep), and the texts of possible duplicates."""


def _partitions(store: Upkeep, scope: Scope) -> list[tuple[str, str]]:
    """The (agent, channel) partitions ``scope`` may see and change."""
    if scope.unscoped:
        return store.partitions()
    if scope.peer:  # it writes only into its channel, and build_scope gave it one
        return [(scope.agent_id, scope.channel)] if scope.channel else []
    return [(scope.agent_id, c) for c in ("", scope.channel) if c is not None]


def _plan(
    store: _Consolidating, dense: DenseIndex | None, agent: str, channel: str, now: datetime
) -> tuple[ConsolidationPlan, ConsolidationReport]:
    report = ConsolidationReport()
    day = int(now.timestamp() // 86400)
    last_day = store.meta(partition_key("consolidated_day", agent, channel))
    days = 0 if last_day is None else max(0, day - last_day)
    report.days = days
    grace = now.timestamp() - GRACE_DAYS * 86400
    strengths = []
    if days:
        for memory in store.decay_candidates(agent, channel):
            if memory.exempt or memory.last_used >= grace:
                continue
            new = decayed(memory.strength, days, MEMORY_DECAY_PER_DAY, MEMORY_FLOOR)
            if new != memory.strength:
                strengths.append((memory.id, new))
                report.decayed_memories.append(
                    {"id": memory.id, "from": round(memory.strength, 6), "to": round(new, 6)}
                )
    watermark = store.meta(partition_key("consolidated_signal", agent, channel)) or 0
    pairs, last_signal, report.signals_used = store.feedback_pairs(agent, watermark, channel)
    strengthen: dict[tuple[int, int], float] = {}
    for a, b in pairs:
        for src, dst, weight in store.edge_weights_between(a, b):
            current = strengthen.get((src, dst), weight)
            strengthen[(src, dst)] = hebbian(current)
    for (src, dst), weight in sorted(strengthen.items()):
        report.strengthened.append({"src": src, "dst": dst, "to": round(weight, 6)})
    merges = _duplicates(store, dense, agent, channel) if dense is not None else []
    report.merged = [{"kept": k, "merged": m, "cosine": round(c, 4)} for k, m, c in merges]
    plan = ConsolidationPlan(
        agent_id=agent,
        channel=channel,
        day=day,
        strengths=strengths,
        edge_factor=EDGE_DECAY_PER_DAY**days if days else 1.0,
        edge_floor=EDGE_FLOOR,
        stale_before=grace,
        strengthen=[(s, d, w) for (s, d), w in sorted(strengthen.items())],
        merges=[(k, m) for k, m, _ in merges],
        signal_watermark=last_signal if last_signal > watermark else None,
    )
    return plan, report


def _duplicates(
    store: MemoryRows, dense: DenseIndex, agent: str, channel: str
) -> list[tuple[str, str, float]]:
    table = dense.table
    mask = dense.mask(Scope.management(), RecallFilters()) & dense.embedded
    for column, names, value in (
        (table.agent, table.agent_names, agent),
        (table.channel, table.channel_names, channel),
    ):
        mask &= column == names.index(value) if value in names else False
    skip = {Category.CONVERSATION.value}
    mask &= ~np.isin(table.category, [i for i, n in enumerate(table.category_names) if n in skip])
    rows = np.flatnonzero(mask)
    if len(rows) < 2:
        return []
    ids = [str(table.ids[r]) for r in rows]
    groups = [f"{table.visibility[r]}|{table.group[r]}|{table.channel[r]}" for r in rows.tolist()]
    cache: dict[int, str] = {}
    constraints: set[str] = set()

    def text_of(i: int) -> str:
        if i not in cache:
            found = store.get_many([ids[i]], Scope.management())
            memory = found.get(ids[i])
            cache[i] = memory.content if memory else ""
            if memory is not None and memory.constraint:
                constraints.add(memory.id)
        return cache[i]

    pairs = near_duplicates(text_of, groups, dense.vectors_of(rows))
    return [
        (ids[k], ids[m], c)
        for k, m, c in pairs
        if ids[k] not in constraints and ids[m] not in constraints
    ]
