"""The single-purpose reads of memories: by id, by filters (newest first,
keyset paging), by keyword (BM25) or substring, the projects and counts a
scope sees, and every memory in write order.

Every read takes the caller's scope and applies it inside the SQL, with the
filters beside it; nothing is filtered afterwards. Recall merges these reads
where it can (recall_sql.py); the writes of memories are ``SqlStore``'s own
(sql.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from mindpalace.models import Memory, RecallFilters, Scope, Stats
from mindpalace.store.core import SqlCore
from mindpalace.store.fragments import (
    SELECT_MEMORY,
    escape_like,
    filter_clause,
    row_to_memory,
    scope_clause,
    to_epoch,
)

__all__ = ["ReadsSql"]


class ReadsSql(SqlCore):
    """The memory reads of ``SqlStore``, each scoped inside its statement."""

    def get_many(self, memory_ids: Sequence[str], scope: Scope) -> dict[str, Memory]:
        """The visible memories among ``memory_ids``, by id."""
        s_sql, s_params = scope_clause(scope)
        found: dict[str, Memory] = {}
        with self._read() as cur:
            for i in range(0, len(memory_ids), 500):
                chunk = list(memory_ids[i : i + 500])
                # The wanted ids drive the join (CROSS JOIN fixes SQLite's
                # order): without it SQLite may walk every row the scope
                # admits through its indexes, 50x slower at 10k memories.
                wanted = ", ".join("(?)" for _ in chunk)
                rows = self._exec(
                    cur,
                    f"SELECT {SELECT_MEMORY} FROM (VALUES {wanted}) AS w"
                    f" CROSS JOIN memories m WHERE m.id = w.column1 AND {s_sql}",
                    [*chunk, *s_params],
                ).fetchall()
                for row in rows:
                    memory = row_to_memory(row)
                    found[memory.id] = memory
        return found

    def search_substring(
        self, terms: Sequence[str], scope: Scope, filters: RecallFilters, *, limit: int
    ) -> list[Memory]:
        """Memories whose title or content contains any of ``terms`` as a
        substring (case-insensitive), newest first: the text fallback's net
        for partial words the full-text index does not match."""
        if not terms:
            return []
        s_sql, s_params = scope_clause(scope)
        f_sql, f_params = filter_clause(filters)
        likes: list[str] = []
        params: list[Any] = []
        for term in terms:
            pattern = "%" + escape_like(term.lower()) + "%"
            lower = self.dialect.lower
            likes.append(
                f"{lower}(m.content) LIKE ? ESCAPE '!'"
                f" OR {lower}(COALESCE(m.title, '')) LIKE ? ESCAPE '!'"
            )
            params += [pattern, pattern]
        with self._read() as cur:
            rows = self._exec(
                cur,
                f"SELECT {SELECT_MEMORY} FROM memories m WHERE ({' OR '.join(likes)})"
                f" AND {s_sql} AND {f_sql} ORDER BY m.created_at DESC, m.id DESC LIMIT ?",
                [*params, *s_params, *f_params, limit],
            ).fetchall()
        return [row_to_memory(r) for r in rows]

    def ids_matching(self, scope: Scope, filters: RecallFilters) -> set[str]:
        """Ids of every visible memory matching ``filters``."""
        s_sql, s_params = scope_clause(scope)
        f_sql, f_params = filter_clause(filters)
        with self._read() as cur:
            rows = self._exec(
                cur,
                f"SELECT m.id FROM memories m WHERE {s_sql} AND {f_sql}",
                [*s_params, *f_params],
            ).fetchall()
        return {str(r[0]) for r in rows}

    def get(self, memory_id: str, scope: Scope) -> Memory | None:
        """The memory if ``scope`` may see it."""
        where, params = scope_clause(scope)
        with self._read() as cur:
            row = self._exec(
                cur,
                f"SELECT {SELECT_MEMORY} FROM memories m WHERE m.id = ? AND {where}",
                [memory_id, *params],
            ).fetchone()
        return None if row is None else row_to_memory(row)

    def list_memories(
        self,
        scope: Scope,
        filters: RecallFilters,
        *,
        limit: int,
        offset: int = 0,
        before: tuple[datetime, str] | None = None,
    ) -> list[Memory]:
        """Visible memories matching ``filters``, newest first (by creation
        time, then id); with ``before``, only those after that (created_at,
        id) in this order (keyset paging)."""
        s_sql, s_params = scope_clause(scope)
        f_sql, f_params = filter_clause(filters)
        k_sql, k_params = "", []
        if before is not None:
            k_sql = " AND (m.created_at < ? OR (m.created_at = ? AND m.id < ?))"
            k_params = [to_epoch(before[0]), to_epoch(before[0]), before[1]]
        with self._read() as cur:
            rows = self._exec(
                cur,
                f"SELECT {SELECT_MEMORY} FROM memories m WHERE {s_sql} AND {f_sql}{k_sql}"
                " ORDER BY m.created_at DESC, m.id DESC LIMIT ? OFFSET ?",
                [*s_params, *f_params, *k_params, limit, offset],
            ).fetchall()
        return [row_to_memory(r) for r in rows]

    def projects(self, scope: Scope) -> list[tuple[str, int]]:
        """The projects of the live memories ``scope`` may see, with how many
        memories each has, by name."""
        s_sql, s_params = scope_clause(scope)
        with self._read() as cur:
            rows = self._exec(
                cur,
                f"SELECT m.project, COUNT(*) FROM memories m WHERE {s_sql} AND m.project <> ''"
                " AND m.archived = 0 GROUP BY m.project ORDER BY m.project",
                s_params,
            ).fetchall()
        return [(str(name), int(count)) for name, count in rows]

    def stats(self, scope: Scope) -> Stats:
        """Counts over what ``scope`` can see."""
        s_sql, s_params = scope_clause(scope)
        with self._read() as cur:
            rows = self._exec(
                cur,
                "SELECT m.type, m.store, m.category, m.agent_id, m.archived,"
                " m.superseded_by IS NOT NULL, COUNT(*)"
                f" FROM memories m WHERE {s_sql}"
                " GROUP BY m.type, m.store, m.category, m.agent_id, m.archived,"
                " m.superseded_by IS NOT NULL",
                s_params,
            ).fetchall()
        by_type: Counter[str] = Counter()
        by_store: Counter[str] = Counter()
        by_category: Counter[str] = Counter()
        by_agent: Counter[str] = Counter()
        total = archived = superseded = 0
        for type_, store, category, agent, is_archived, is_superseded, count in rows:
            total += count
            if is_archived:
                archived += count
            if is_superseded:
                superseded += count
            if is_archived or is_superseded:
                continue
            by_type[type_] += count
            by_store[store] += count
            by_category[category] += count
            by_agent[agent] += count
        return Stats(
            memories=total,
            archived=archived,
            superseded=superseded,
            by_type=dict(sorted(by_type.items())),
            by_store=dict(sorted(by_store.items())),
            by_category=dict(sorted(by_category.items())),
            by_agent=dict(sorted(by_agent.items())),
            schema_version=self.schema_version(),
            path=self.location,
        )

    def iter_memories(self, scope: Scope, *, batch: int = 500) -> Iterator[Memory]:
        """Every visible memory, oldest first, fetched in keyset pages."""
        s_sql, s_params = scope_clause(scope)
        last = 0
        while True:
            with self._read() as cur:
                rows = self._exec(
                    cur,
                    f"SELECT m.seq, {SELECT_MEMORY} FROM memories m WHERE m.seq > ? AND {s_sql}"
                    " ORDER BY m.seq LIMIT ?",
                    [last, *s_params, batch],
                ).fetchall()
            if not rows:
                return
            for row in rows:
                yield row_to_memory(row[1:])
            last = int(rows[-1][0])
