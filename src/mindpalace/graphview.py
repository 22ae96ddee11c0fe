"""``palace.graph``: the entity graph as the palace's scope sees it.

Entities are linked when memories are written (``Palace.remember``); this
view lists them, shows what a memory mentions, follows supersession
history, and runs consolidation.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING

import numpy as np

from mindpalace.errors import NotFoundError
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
from mindpalace.graph.supersede import FACT_CATEGORIES, replaced_facts
from mindpalace.models import Category, Entity, Memory, MemoryType, NewMemory, RecallFilters, Scope
from mindpalace.retrieval.dense import DenseIndex
from mindpalace.store.base import Store
from mindpalace.store.upkeep_sql import ConsolidationPlan
from mindpalace.validation import check_id, check_limit, check_query, parse_many

if TYPE_CHECKING:
    from mindpalace.view import View

__all__ = ["GraphView", "superseded_by_new"]


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

    def mentions(self, memory_id: str) -> list[Entity]:
        """The entities a memory mentions.

        Raises:
            NotFoundError: no such memory in this scope.
        """
        memory = self._palace.get(memory_id)
        return self._palace.engine.store.entities_of([memory.id], self._palace.scope).get(
            memory.id, []
        )

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
        """Strengthen, decay and merge, for this palace's agent (for every
        agent, one at a time, when opened with ``management=True``); never
        across scopes. Running it twice in a row changes nothing the second
        time.

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
        agents = store.agents() if palace.scope.unscoped else [palace.scope.agent_id]
        report = ConsolidationReport()
        dense = palace.engine.semantic.dense() if palace.engine.semantic.available else None
        for agent in agents:
            plan, part = _plan(store, dense, agent, now)
            report.days = max(report.days, part.days)
            report.strengthened += part.strengthened
            report.decayed_memories += part.decayed_memories
            report.merged += part.merged
            report.signals_used += part.signals_used
            if not dry_run:
                report.decayed_edges += store.apply_consolidation(plan, now)
        return report


def _plan(
    store: Store, dense: DenseIndex | None, agent: str, now: datetime
) -> tuple[ConsolidationPlan, ConsolidationReport]:
    report = ConsolidationReport()
    day = int(now.timestamp() // 86400)
    last_day = store.meta(f"consolidated_day:{agent}")
    days = 0 if last_day is None else max(0, day - last_day)
    report.days = days
    grace = now.timestamp() - GRACE_DAYS * 86400
    strengths = []
    if days:
        for memory in store.decay_candidates(agent):
            if memory.exempt or memory.last_used >= grace:
                continue
            new = decayed(memory.strength, days, MEMORY_DECAY_PER_DAY, MEMORY_FLOOR)
            if new != memory.strength:
                strengths.append((memory.id, new))
                report.decayed_memories.append(
                    {"id": memory.id, "from": round(memory.strength, 6), "to": round(new, 6)}
                )
    watermark = store.meta(f"consolidated_signal:{agent}") or 0
    pairs, last_signal = store.feedback_pairs(agent, watermark)
    report.signals_used = last_signal - watermark
    strengthen: dict[tuple[int, int], float] = {}
    for a, b in pairs:
        for src, dst, weight in store.edge_weights_between(a, b):
            current = strengthen.get((src, dst), weight)
            strengthen[(src, dst)] = hebbian(current)
    for (src, dst), weight in sorted(strengthen.items()):
        report.strengthened.append({"src": src, "dst": dst, "to": round(weight, 6)})
    merges = _duplicates(store, dense, agent) if dense is not None else []
    report.merged = [{"kept": k, "merged": m, "cosine": round(c, 4)} for k, m, c in merges]
    plan = ConsolidationPlan(
        agent_id=agent,
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


def _duplicates(store: Store, dense: DenseIndex, agent: str) -> list[tuple[str, str, float]]:
    table = dense.table
    scope = Scope(agent_id=agent)
    mask = dense.mask(scope, RecallFilters()) & dense.embedded
    mask &= table.agent == table.agent_names.index(agent) if agent in table.agent_names else False
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

    pairs = near_duplicates(text_of, groups, table.matrix[rows])
    return [
        (ids[k], ids[m], c)
        for k, m, c in pairs
        if ids[k] not in constraints and ids[m] not in constraints
    ]


def superseded_by_new(store: Store, scope: Scope, new: NewMemory) -> tuple[str, ...]:
    """Ids of the current facts of ``new``'s own scope that it replaces
    (graph/supersede.py states the rule)."""
    if new.category not in FACT_CATEGORIES or not new.mentions:
        return ()
    names = sorted({m.norm for m in new.mentions} | {a for m in new.mentions for a in m.aliases})
    resolved = store.resolve_names(names, scope)
    keys = sorted(set(names) | {k for found in resolved.values() for k in found})
    candidates = store.fact_candidates(
        keys,
        agent_id=new.agent_id,
        visibility=new.visibility,
        group=new.group,
        channel=new.channel,
        category=new.category.value,
    )
    # The entities the new memory's names resolve to count as its names too.
    return tuple(replaced_facts(new, candidates, extra_names=set(keys)))
