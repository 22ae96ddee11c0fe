"""PostgreSQL's statement for the members of entities (``GraphSql.entity_members``).

The shared form is a UNION ALL of one subquery per name; PostgreSQL plans
every one of them on every call (the store prepares no statements), and
with fifty names planning took longer than running it: 31 of 54 ms a
recall at 20,000 memories. Here the names' entity keys travel as two
arrays (probe number, entity key) and one LATERAL subquery, planned once
for all of them, lists each probe's members with its own LIMIT.
"""

from __future__ import annotations

from collections.abc import Sequence

from mindpalace.models import RecallFilters, Scope
from mindpalace.store.fragments import filter_clause, scope_clause

__all__ = ["PgGraphReads"]


class PgGraphReads:
    """``_members_statement`` for PostgreSQL (mixed into ``PostgresStore``)."""

    def _members_statement(
        self, probes: Sequence[Sequence[int]], scope: Scope, filters: RecallFilters, limit: int
    ) -> tuple[str, list[object]]:
        """(probe number, memory id) rows: each probe's visible memories
        under ``filters`` that mention any of its entity keys, at most
        ``limit`` rows each (``GraphSql._members_statement``).

        Repeats are not dropped here: PostgreSQL drops them by sorting or
        hashing every row first, which read each of a busy name's thousands
        of mentions to list its first 51 (0.4 s of a recall at a million
        memories); ``GraphSql.entity_members`` drops them, and asks again
        for a name whose repeats left it short."""
        s_sql, s_params = scope_clause(scope)
        f_sql, f_params = filter_clause(filters)
        numbers = [n for n, entities in enumerate(probes) for _ in entities]
        keys = [seq for entities in probes for seq in entities]
        sql = (
            "SELECT w.probe, p.id FROM (SELECT DISTINCT u.probe FROM unnest(?::INT[], ?::BIGINT[])"
            " AS u(probe, seq)) AS w CROSS JOIN LATERAL (SELECT m.id FROM mentions x"
            " JOIN memories m ON m.seq = x.memory_seq"
            " WHERE x.entity_seq IN (SELECT v.seq FROM unnest(?::INT[], ?::BIGINT[])"
            " AS v(probe, seq) WHERE v.probe = w.probe)"
            f" AND {s_sql} AND {f_sql} LIMIT ?) AS p"
        )
        return sql, [numbers, keys, numbers, keys, *s_params, *f_params, limit]
