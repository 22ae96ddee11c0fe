"""The reads of one recall, merged: what its query alone decides
(``query_facts``), the graph around its seeds (``seed_graph``), and the
memories it ranks (``hydrate``).

Recall used to ask the store about ten times, each read its own round trip
(a statement each, or one per word). Here each step of the pipeline is one
call, and where statements can be merged they are: which of a query's words
occur is one statement (a ``LIMIT 1`` probe per word, joined by ``UNION
ALL``), and the constraints the query names are one statement that resolves
the names (and aliases) inside it. Scope is applied inside every statement,
as in every read of the store; nothing is filtered afterwards, and no read
is made or skipped because of what other scopes hold (recall no longer asks
whether any memory of the palace is a constraint before looking for the
query's).
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence

from mindpalace.models import Memory, RecallFilters, Scope
from mindpalace.store.core import Cursor, SqlCore
from mindpalace.store.fragments import (
    SELECT_MEMORY,
    filter_clause,
    in_list,
    row_to_memory,
    scope_clause,
)
from mindpalace.store.recall_rows import Hydration, QueryFacts, QueryReads, SeedGraph
from mindpalace.store.roles import GraphRows, MemoryRows, TextIndex
from mindpalace.store.roles_palace import SignalRows
from mindpalace.store.same_as_sql import NOT_APART

__all__ = ["Hydration", "QueryFacts", "QueryReads", "RecallSql", "SeedGraph"]


#: the most entities whose co-occurring entities one recall follows (``seed_graph``)
FOLLOWED = 24


class RecallSql(SqlCore, MemoryRows, TextIndex, GraphRows, SignalRows):
    """``query_facts``, ``seed_graph`` and ``hydrate`` of the ``Store``
    protocol, over the single-purpose reads the other mixins (ReadsSql,
    GraphSql, SignalStore) and the backend's text search define; and
    ``terms_present``, the word probe of ``query_facts`` on its own.

    It names the roles whose reads it composes rather than declaring them
    again: their signatures are written once, in roles.py, and mypy checks
    the methods here against them. The roles come after every mixin in a
    backend's method order (after ``SqlCore``), so a definition always wins.
    """

    # -- the merged reads ----------------------------------------------------------

    def query_facts(self, reads: QueryReads, scope: Scope, filters: RecallFilters) -> QueryFacts:
        """Everything ``reads`` asks for, each part as its single-purpose
        method answers it; nothing but the salient words when fewer than
        ``reads.min_salient`` of them occur."""
        with self._read() as cur:
            present = self._present(
                cur, reads.salient, scope, include_archived=filters.include_archived
            )
            if len(present) < reads.min_salient:
                return QueryFacts(present=present, complete=False)
            constraints = (
                self._named_constraints(cur, reads.names, scope, filters, reads.constraint_limit)
                if reads.names
                else ()
            )
        keyword = (
            self.search_text(reads.keyword, scope, filters, limit=reads.keyword_limit)
            if reads.keyword
            else []
        )
        substring = (
            self.search_substring(reads.substring, scope, filters, limit=reads.substring_limit)
            if reads.substring
            else []
        )
        events = tuple(
            tuple(self.search_text(terms, scope, RecallFilters(), limit=reads.event_limit))
            for terms in reads.events
        )
        return QueryFacts(
            present=present,
            keyword=tuple(keyword),
            substring=tuple(substring),
            events=events,
            allowed=frozenset(self.ids_matching(scope, filters)) if reads.allowed else None,
            constraints=constraints,
        )

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
        """The seeds' entities (with ``members``, who mentions them), then the
        co-occurring entities of those worth following, at most ``FOLLOWED``
        (and who mentions those)."""
        entities = self.entities_of(memory_ids, scope) if memory_ids else {}
        norms = sorted({e.norm for found in entities.values() for e in found})
        found = (
            self.entity_members(norms, scope, filters, max_degree=max_degree) if members else None
        )
        if not neighbours or not norms:
            return SeedGraph(entities, {}, found)
        if found is not None:
            counts: Mapping[str, int] | None = {n: found[n][0] for n in norms if n in found}
        else:
            counts = degrees(norms) if degrees is not None else None
        follow = norms
        if counts is not None:
            # A hub's or a lone mention's neighbours are not wanted, and a
            # hub's edges are the costliest to read.
            follow = [n for n in norms if 2 <= counts.get(n, 0) <= max_degree]
            # The rarest names say most about the seeds; a fixed number of
            # them bounds the work (the same on a busy machine as on a quiet one).
            follow = sorted(follow, key=lambda n: (counts.get(n, 0), n))
        follow = sorted(follow[:FOLLOWED])
        co = self.co_occurring(follow, scope, per_entity=neighbours) if follow else {}
        if found is not None:
            far = sorted({other for pairs in co.values() for other, _ in pairs} - set(norms))
            found = {**found, **self.entity_members(far, scope, filters, max_degree=max_degree)}
        return SeedGraph(entities, co, found)

    def hydrate(
        self, memory_ids: Sequence[str], scope: Scope, *, feedback_on: Sequence[str] = ()
    ) -> Hydration:
        """The visible memories among ``memory_ids`` and the scope's own
        judgments of those of ``feedback_on``."""
        memories = self.get_many(memory_ids, scope) if memory_ids else {}
        if not feedback_on:
            return Hydration(memories)
        counts = self.feedback_counts(feedback_on, agent_id=scope.agent_id, channel=scope.channel)
        return Hydration(memories, counts)

    # -- the word probe alone (``Store.terms_present``) ------------------------------

    def terms_present(
        self, terms: Sequence[str], scope: Scope, *, include_archived: bool = False
    ) -> set[str]:
        """Which of ``terms`` occur in some live (or, with ``include_archived``,
        any) memory ``scope`` may see."""
        with self._read() as cur:
            return set(self._present(cur, terms, scope, include_archived=include_archived))

    # -- statements ----------------------------------------------------------------

    @abc.abstractmethod
    def _present(
        self, cur: Cursor, terms: Sequence[str], scope: Scope, *, include_archived: bool
    ) -> frozenset[str]:
        """Which of ``terms`` some live (or any, with ``include_archived``)
        memory ``scope`` may see contains, read with the caller's cursor:
        the backend's text index answers (pg_text.py, sqlite_text.py)."""

    def _named_constraints(
        self,
        cur: Cursor,
        names: Sequence[str],
        scope: Scope,
        filters: RecallFilters,
        limit: int,
    ) -> tuple[tuple[Memory, str], ...]:
        """Visible constraint memories (under ``filters``) mentioning an
        entity one of ``names`` names, itself or as an alias, in one
        statement: newest first, each once, with the first such entity key
        (``limit`` mentions are read at most)."""
        s_sql, s_params = scope_clause(scope)
        n_sql, n_params = scope_clause(scope, "n")
        f_sql, f_params = filter_clause(filters)
        named = in_list("n.norm", names)
        aliased = in_list("a.alias", names)
        key, n_key = "COALESCE(er.norm, e.norm)", "COALESCE(nr.norm, n.norm)"
        n_root = "LEFT JOIN entities nr ON nr.seq = n.same_as"
        rows = self._exec(
            cur,
            # Constraints are few (a partial index lists them): they drive
            # the join (CROSS JOIN fixes SQLite's order), not every memory
            # the scope sees (145 ms at 100k memories when SQLite chose that).
            # Entities are read as the entity a linked name is the same as.
            f"SELECT {key}, {SELECT_MEMORY} FROM memories k CROSS JOIN memories m"
            " CROSS JOIN mentions x CROSS JOIN entities e"
            " LEFT JOIN entities er ON er.seq = e.same_as"
            " WHERE k.is_constraint = 1 AND m.seq = k.seq AND x.memory_seq = m.seq"
            f" AND e.seq = x.entity_seq AND {s_sql} AND {f_sql}"
            f" AND {key} IN (SELECT {n_key} FROM entities n {n_root} WHERE {named} AND {n_sql}"
            f" UNION SELECT {n_key} FROM entity_aliases a JOIN entities n ON n.seq = a.entity_seq"
            f" {n_root} WHERE {aliased} AND {n_sql} AND {NOT_APART})"
            f" ORDER BY m.created_at DESC, m.id DESC, {key} LIMIT ?",
            [*s_params, *f_params, *names, *n_params, *names, *n_params, limit],
        ).fetchall()
        out: dict[str, tuple[Memory, str]] = {}
        for row in rows:
            memory = row_to_memory(row[1:])
            out.setdefault(memory.id, (memory, str(row[0])))
        return tuple(out.values())
