"""Reads an inspector needs beside recall, and restoring a forgotten memory.

Sessions with their turn counts and time span, memories counted by day,
the signals about one memory, the memories behind an entity graph edge,
entities by exact key. Every read takes the caller's scope and applies it
inside the SQL, as every other store read does.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from mindpalace.models import Entity, Scope
from mindpalace.store.base import Signal
from mindpalace.store.core import SqlCore
from mindpalace.store.fragments import from_epoch, in_list, scope_clause, to_epoch
from mindpalace.store.graph_sql import _ENTITY_COLUMNS, _entity
from mindpalace.store.inspect_rows import DayCount, SessionSummary

__all__ = ["InspectSql"]

_DAY = 86_400
_LIVE = "m.archived = 0 AND m.superseded_by IS NULL"


class InspectSql(SqlCore):
    """The inspector's part of the ``Store`` protocol."""

    def restore(self, memory_id: str, *, owner: str | None, now: datetime) -> bool:
        """Bring an archived memory back; False when no archived memory of
        ``owner`` (``None``: any owner) has that id."""
        sql = "UPDATE memories SET archived = 0, updated_at = ? WHERE id = ? AND archived = 1"
        params: list[Any] = [to_epoch(now), memory_id]
        if owner is not None:
            sql += " AND agent_id = ?"
            params.append(owner)
        with self._mutate() as cur:
            changed = int(self._exec(cur, sql, params).rowcount) > 0
            if changed:  # a flag of an existing row: copies patch it
                self._flagged(cur, "id = ?", (memory_id,))
            return changed

    def sessions(
        self,
        scope: Scope,
        *,
        limit: int,
        before: tuple[datetime, str] | None = None,
    ) -> list[SessionSummary]:
        """Sessions of the live memories ``scope`` sees, latest activity
        first (by last creation time, then name); ``before`` continues after
        that (last_at, session) pair (keyset paging)."""
        s_sql, s_params = scope_clause(scope)
        having, h_params = "", []
        if before is not None:
            at = to_epoch(before[0])
            having = " HAVING MAX(m.created_at) < ? OR (MAX(m.created_at) = ? AND m.session_id < ?)"
            h_params = [at, at, before[1]]
        with self._read() as cur:
            rows = self._exec(
                cur,
                "SELECT m.session_id, COUNT(*), MIN(m.created_at), MAX(m.created_at)"
                f" FROM memories m WHERE {s_sql} AND {_LIVE} AND m.session_id IS NOT NULL"
                f" AND m.session_id <> '' GROUP BY m.session_id{having}"
                " ORDER BY MAX(m.created_at) DESC, m.session_id DESC LIMIT ?",
                [*s_params, *h_params, limit],
            ).fetchall()
        out = []
        for session, turns, first, last in rows:
            first_at, last_at = from_epoch(first), from_epoch(last)
            assert first_at is not None and last_at is not None
            out.append(SessionSummary(str(session), int(turns), first_at, last_at))
        return out

    def day_counts(self, scope: Scope) -> list[DayCount]:
        """Live memories ``scope`` sees, counted by creation day (UTC),
        category and store, oldest day first."""
        s_sql, s_params = scope_clause(scope)
        # The floor of the seconds, divided as integers: the same day number
        # on every backend (a float cast rounds on one and truncates on
        # another). Literals, not parameters: the GROUP BY repeats it.
        whole = "CAST(m.created_at AS BIGINT)"
        day = f"({whole} - CASE WHEN {whole} > m.created_at THEN 1 ELSE 0 END) / {_DAY}"
        with self._read() as cur:
            rows = self._exec(
                cur,
                f"SELECT {day}, m.category, m.store, COUNT(*) FROM memories m"
                f" WHERE {s_sql} AND {_LIVE} GROUP BY {day}, m.category, m.store",
                s_params,
            ).fetchall()
        out = [
            DayCount(
                datetime.fromtimestamp(int(number) * _DAY, tz=timezone.utc).date(),
                str(category),
                str(store),
                int(count),
            )
            for number, category, store, count in rows
        ]
        out.sort(key=lambda c: (c.day, c.category, c.store))
        return out

    def memory_signals(
        self, memory_id: str, *, agent_id: str | None, limit: int = 50
    ) -> list[Signal]:
        """The signals recorded about one memory (its writes, fetches and
        the feedback on it), newest first; only ``agent_id``'s unless None."""
        where = "memory_id = ?"
        params: list[Any] = [memory_id]
        if agent_id is not None:
            where += " AND agent_id = ?"
            params.append(agent_id)
        with self._read() as cur:
            rows = self._exec(
                cur,
                "SELECT seq, at, kind, agent_id, channel, query, data FROM signals"
                f" WHERE {where} ORDER BY seq DESC LIMIT ?",
                [*params, limit],
            ).fetchall()
        out = []
        for seq, at, kind, agent, channel, query, data in rows:
            when = from_epoch(at)
            assert when is not None
            out.append(
                Signal(
                    kind=str(kind),
                    agent_id=str(agent),
                    at=when,
                    channel=channel or None,
                    memory_id=memory_id,
                    query=query,
                    data=json.loads(data),
                    seq=int(seq),
                )
            )
        return out

    def entities_named(self, norms: Sequence[str], scope: Scope) -> list[Entity]:
        """The visible entities whose key is one of ``norms`` (one per scope
        that has it), most mentioned first."""
        if not norms:
            return []
        s_sql, s_params = scope_clause(scope, "e")
        with self._read() as cur:
            rows = self._exec(
                cur,
                f"SELECT {_ENTITY_COLUMNS} FROM entities e WHERE {in_list('e.norm', norms)}"
                f" AND {s_sql} ORDER BY e.mentions DESC, e.seq",
                [*norms, *s_params],
            ).fetchall()
        return [_entity(row) for row in rows]

    def co_mentions(
        self, norm: str, others: Sequence[str], scope: Scope, *, per_edge: int, scan: int = 5000
    ) -> dict[str, list[str]]:
        """For each key of ``others``: ids of the live memories ``scope`` sees
        that mention both it and ``norm`` (the memories behind the edge),
        newest first, at most ``per_edge``. Reads the newest ``scan`` such
        pairs at most, so a hub costs a bounded amount."""
        if not others:
            return {}
        s_sql, s_params = scope_clause(scope)
        with self._read() as cur:
            rows = self._exec(
                cur,
                "SELECT eb.norm, m.id FROM entities ea"
                " JOIN mentions xa ON xa.entity_seq = ea.seq"
                " JOIN mentions xb ON xb.memory_seq = xa.memory_seq"
                " JOIN entities eb ON eb.seq = xb.entity_seq"
                " JOIN memories m ON m.seq = xa.memory_seq"
                f" WHERE ea.norm = ? AND {in_list('eb.norm', others)} AND {s_sql} AND {_LIVE}"
                " ORDER BY m.created_at DESC, m.id DESC LIMIT ?",
                [norm, *others, *s_params, scan],
            ).fetchall()
        found: dict[str, list[str]] = defaultdict(list)
        for other, memory_id in rows:
            ids = found[str(other)]
            if len(ids) < per_edge and memory_id not in ids:
                ids.append(str(memory_id))
        return dict(found)
