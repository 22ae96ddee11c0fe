"""Retention rules in SQL: the ``retention_rules`` table (migration 15).

One row per combination of agent, store, category and type (``''`` where a
rule does not narrow: every agent, any store...); setting a combination
again changes its days in place. The rows hold names and numbers only.
"""

from __future__ import annotations

from typing import Any

from mindpalace.models import Category, MemoryType, StoreKind
from mindpalace.retention_rules import RetentionRule
from mindpalace.store.core import SqlCore
from mindpalace.store.fragments import from_epoch, to_epoch

__all__ = ["RetentionSql"]

_COLUMNS = "id, days, agent_id, store, category, type, set_by, set_at"
_RETENTION_RUN = "retention_ran_at"


def _rule(row: Any) -> RetentionRule:
    rule_id, days, agent, store, category, kind, set_by, set_at = row
    when = from_epoch(set_at)
    assert when is not None
    return RetentionRule(
        id=str(rule_id),
        days=int(days),
        agent_id=agent or None,
        store=StoreKind(store) if store else None,
        category=Category(category) if category else None,
        type=MemoryType(kind) if kind else None,
        set_by=str(set_by),
        set_at=when,
    )


class RetentionSql(SqlCore):
    """The retention part of ``SqlStore``."""

    def retention_rules(self, agent_id: str | None = None) -> list[RetentionRule]:
        """The rules reaching ``agent_id``'s memories (its own and those of
        every agent), or every rule (None), oldest first."""
        where, params = ("1 = 1", []) if agent_id is None else ("agent_id IN (?, '')", [agent_id])
        with self._read() as cur:
            rows = self._exec(
                cur,
                f"SELECT {_COLUMNS} FROM retention_rules WHERE {where} ORDER BY set_at, id",
                params,
            ).fetchall()
        return [_rule(r) for r in rows]

    def set_retention_rule(self, rule: RetentionRule) -> RetentionRule:
        """Store ``rule``, or change the days of the rule naming the same
        agent, store, category and type (which keeps its id); the stored rule."""
        key = (
            rule.agent_id or "",
            "" if rule.store is None else rule.store.value,
            "" if rule.category is None else rule.category.value,
            "" if rule.type is None else rule.type.value,
        )
        with self._write() as cur:
            found = self._exec(
                cur,
                "SELECT id FROM retention_rules"
                " WHERE agent_id = ? AND store = ? AND category = ? AND type = ?",
                key,
            ).fetchone()
            rule_id = rule.id if found is None else str(found[0])
            if found is not None:
                self._exec(cur, "DELETE FROM retention_rules WHERE id = ?", (rule_id,))
            self._exec(
                cur,
                f"INSERT INTO retention_rules ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (rule_id, rule.days, *key, rule.set_by, to_epoch(rule.set_at)),
            )
            row = self._exec(
                cur, f"SELECT {_COLUMNS} FROM retention_rules WHERE id = ?", (rule_id,)
            ).fetchone()
        return _rule(row)

    def remove_retention_rule(self, rule_id: str) -> bool:
        """Delete the rule; False if there is none of that id."""
        with self._write() as cur:
            gone = self._exec(cur, "DELETE FROM retention_rules WHERE id = ?", (rule_id,))
            return bool(gone.rowcount)

    def retention_ran_at(self) -> int | None:
        """When retention last ran over the whole palace (epoch seconds), or None."""
        with self._read() as cur:
            row = self._exec(
                cur, "SELECT value FROM palace_meta WHERE key = ?", (_RETENTION_RUN,)
            ).fetchone()
        return None if row is None else int(row[0])

    def claim_retention_run(self, now: int, every: int) -> bool:
        """Record a whole-palace run at ``now`` (epoch seconds) unless one
        was recorded less than ``every`` seconds before: True when this
        caller should run (so processes sharing the palace take turns)."""
        with self._write() as cur:
            row = self._exec(
                cur, "SELECT value FROM palace_meta WHERE key = ?", (_RETENTION_RUN,)
            ).fetchone()
            if row is not None and now - int(row[0]) < every:
                return False
            self._exec(cur, "DELETE FROM palace_meta WHERE key = ?", (_RETENTION_RUN,))
            self._exec(
                cur, "INSERT INTO palace_meta (key, value) VALUES (?, ?)", (_RETENTION_RUN, now)
            )
        return True
