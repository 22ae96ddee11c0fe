"""Typed relations between entities (``graph.relations``) in SQL.

A relation row ties two entities of one memory's scope to the memory that
states it (``memory_seq``), so it lives and dies with that memory: a hard
delete cascades, and reads admit a relation only through a live memory the
caller may see (the memory's scope clause, and the entities' own, as every
graph read applies them). A superseded or archived memory answers nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from mindpalace.models import RecallFilters, RelationMention, Scope
from mindpalace.store.core import SqlCore
from mindpalace.store.fragments import (
    SELECT_MEMORY,
    filter_clause,
    in_list,
    row_to_memory,
    scope_clause,
)
from mindpalace.store.graph_rows import RelationRow
from mindpalace.store.link_rows import LinkWrites
from mindpalace.store.same_as_sql import answering

__all__ = ["RelationRow", "RelationsSql"]


class RelationsSql(SqlCore):
    """Writing relations inside a memory's transaction, and reading them."""

    def _link_relations(
        self,
        memory_id: str,
        entity_seqs: Mapping[str, int],
        relations: Sequence[RelationMention],
        writes: LinkWrites,
    ) -> None:
        """Collect in ``writes`` the ``relations`` of the memory ``memory_id``
        between the entities its mentions resolved to (``entity_seqs``:
        mention key -> entity); ``GraphSql._write_links`` writes them."""
        for relation in relations:
            src = entity_seqs.get(relation.subject)
            dst = entity_seqs.get(relation.object)
            if src is None or dst is None or src == dst:
                continue
            writes.relations.append((memory_id, src, dst, relation.kind, relation.sentence[:1000]))

    def relations(
        self,
        norms: Sequence[str],
        scope: Scope,
        *,
        kinds: Sequence[str],
        side: str = "object",
        limit: int = 200,
    ) -> list[RelationRow]:
        """Relations of ``kinds`` whose ``side`` ("subject" or "object") is
        one of the entity keys ``norms``, stated by live (current,
        unarchived) memories the scope sees, newest first."""
        if not norms or not kinds:
            return []
        # Each end is read as the entity its name is the same as, if linked.
        n_sql, n_params = answering("a0" if side == "subject" else "b0", norms)
        m_sql, m_params = scope_clause(scope, "m")
        a_sql, a_params = scope_clause(scope, "a")
        b_sql, b_params = scope_clause(scope, "b")
        f_sql, f_params = filter_clause(RecallFilters())
        with self._read() as cur:
            rows = self._exec(
                cur,
                f"SELECT r.kind, a.norm, a.name, b.norm, b.name, r.sentence, {SELECT_MEMORY}"
                " FROM entity_relations r JOIN memories m ON m.seq = r.memory_seq"
                " JOIN entities a0 ON a0.seq = r.src_seq JOIN entities b0 ON b0.seq = r.dst_seq"
                " JOIN entities a ON a.seq = COALESCE(a0.same_as, a0.seq)"
                " JOIN entities b ON b.seq = COALESCE(b0.same_as, b0.seq)"
                f" WHERE {n_sql} AND {in_list('r.kind', kinds)}"
                f" AND {m_sql} AND {a_sql} AND {b_sql} AND {f_sql}"
                " ORDER BY m.created_at DESC, m.id, a.norm, b.norm LIMIT ?",
                [*n_params, *kinds, *m_params, *a_params, *b_params, *f_params, limit],
            ).fetchall()
        return [
            RelationRow(
                kind=str(row[0]),
                subject=str(row[1]),
                subject_name=str(row[2]),
                object=str(row[3]),
                object_name=str(row[4]),
                sentence=str(row[5]),
                memory=row_to_memory(row[6:]),
            )
            for row in rows
        ]
