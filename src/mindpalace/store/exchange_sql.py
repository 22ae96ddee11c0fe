"""Reading and writing a palace's records besides its memories, for export
and import (``backup``): skills, memory links, the entity graph, signals,
scorer weights, the erasure log, the embedding configuration
(store/exchange_rows.py).

An export of a scope holds only records about the memories it exports (and
the signals and scorer weights of the scope's own agent); a management
export holds every row. An import writes records about the memories it
inserted, inside the memories' own transaction (``SqlStore.import_memories``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping
from datetime import datetime
from typing import Any

from mindpalace.ids import IdGenerator
from mindpalace.models import Scope
from mindpalace.store.core import Cursor, SqlCore
from mindpalace.store.exchange_rows import (
    EdgeRecord,
    EmbeddingRecord,
    EntityLinkRecord,
    EntityRecord,
    ErasureRecord,
    LinkRecord,
    MentionRecord,
    PalaceRecords,
    RelationRecord,
    ScorerRecord,
    SignalRecord,
    SkillRecord,
)
from mindpalace.store.fragments import in_list, scope_clause
from mindpalace.store.graph_sql import GraphSql
from mindpalace.store.supersede import FACT_CATEGORIES

#: the categories whose mentions are marked ``fact`` (candidates_sql._fact_candidates)
_FACT_VALUES = tuple(c.value for c in FACT_CATEGORIES)

__all__ = ["ExchangeSql"]

_ENTITY_COLUMNS = (
    "id, agent_id, visibility, group_name, channel, name, norm, type, kind, mentions,"
    " created_at, updated_at"
)


def _channels(scope: Scope) -> set[str]:
    """The signal and scorer channels a scope's export holds."""
    if scope.peer:
        return {scope.channel or ""}
    return {"", scope.channel or ""}


class ExchangeSql(SqlCore):
    """The export/import part of ``SqlStore`` for everything but memories."""

    _receipt_ids = IdGenerator("era_")

    def _holds_outside(self, cur: Cursor, scope: Scope) -> bool:
        """Whether the palace holds a memory, entity or erasure receipt that is
        not ``scope``'s own to see (another agent's, or its own of another
        channel). A scoped import into such a palace gives what it writes
        new ids, whatever ids the file names: keeping an id only when no
        hidden row has it would tell the importer which ids hidden rows
        have. Into a palace holding nothing else (and for the management
        view, which sees everything) ids are kept, so a backup restores as
        it was."""
        if scope.unscoped:
            return False
        channels = sorted(_channels(scope))
        for table, alias in (("memories", "m"), ("entities", "e")):
            where, params = scope_clause(scope, alias)
            if self._exec(
                cur,
                f"SELECT 1 FROM {table} {alias} WHERE {alias}.agent_id <> ?"
                f" OR NOT COALESCE(({where}), FALSE) LIMIT 1",
                [scope.agent_id, *params],
            ).fetchone():
                return True
        return bool(
            self._exec(
                cur,
                f"SELECT 1 FROM erasures r WHERE r.agent_id <> ?"
                f" OR NOT ({in_list('r.channel', channels)}) LIMIT 1",
                [scope.agent_id, *channels],
            ).fetchone()
        )

    # -- export -----------------------------------------------------------------------

    def export_records(self, scope: Scope, memory_ids: Collection[str]) -> PalaceRecords:
        """Every record about the memories ``memory_ids`` (those ``scope``
        exports), in a stable order; all rows for a management scope."""
        ids = set(memory_ids)
        with self._read() as cur:
            skills = tuple(
                SkillRecord(str(r[0]), str(r[1]), str(r[2]), r[3])
                for r in self._exec(
                    cur,
                    "SELECT m.id, s.name, s.digest, s.origin FROM skills s"
                    " JOIN memories m ON m.seq = s.memory_seq ORDER BY m.seq",
                ).fetchall()
                if r[0] in ids
            )
            links = tuple(
                LinkRecord(str(r[0]), str(r[1]), str(r[2]), float(r[3]), float(r[4]), float(r[5]))
                for r in self._exec(
                    cur,
                    "SELECT a.id, b.id, l.kind, l.weight, l.created_at, l.updated_at"
                    " FROM memory_links l JOIN memories a ON a.seq = l.src_seq"
                    " JOIN memories b ON b.seq = l.dst_seq ORDER BY a.seq, b.seq, l.kind",
                ).fetchall()
                if r[0] in ids and r[1] in ids
            )
            mentions = tuple(
                MentionRecord(str(r[0]), str(r[1]), str(r[2]), int(r[3]))
                for r in self._exec(
                    cur,
                    "SELECT m.id, e.id, x.surface, x.count FROM mentions x"
                    " JOIN memories m ON m.seq = x.memory_seq"
                    " JOIN entities e ON e.seq = x.entity_seq ORDER BY m.seq, e.seq",
                ).fetchall()
                if r[0] in ids
            )
            mentioned = {m.entity_id for m in mentions}
            aliases: dict[str, list[str]] = {}
            for entity_id, alias in self._exec(
                cur,
                "SELECT e.id, a.alias FROM entity_aliases a JOIN entities e ON e.seq = a.entity_seq"
                " ORDER BY a.alias",
            ).fetchall():
                aliases.setdefault(str(entity_id), []).append(str(alias))
            entities = tuple(
                EntityRecord(
                    id=str(r[0]),
                    agent_id=str(r[1]),
                    visibility=str(r[2]),
                    group_name=str(r[3]),
                    channel=str(r[4]),
                    name=str(r[5]),
                    norm=str(r[6]),
                    type=str(r[7]),
                    kind=str(r[8]),
                    mentions=int(r[9]),
                    created_at=float(r[10]),
                    updated_at=float(r[11]),
                    aliases=tuple(aliases.get(str(r[0]), ())),
                )
                for r in self._exec(
                    cur, f"SELECT {_ENTITY_COLUMNS} FROM entities ORDER BY seq"
                ).fetchall()
                if scope.unscoped or r[0] in mentioned
            )
            kept = {e.id for e in entities}
            edges = tuple(
                EdgeRecord(str(r[0]), str(r[1]), int(r[2]), float(r[3]), float(r[4]))
                for r in self._exec(
                    cur,
                    "SELECT a.id, b.id, g.count, g.weight, g.updated_at FROM entity_edges g"
                    " JOIN entities a ON a.seq = g.src_seq JOIN entities b ON b.seq = g.dst_seq"
                    " ORDER BY a.seq, b.seq",
                ).fetchall()
                if r[0] in kept and r[1] in kept
            )
            entity_links = tuple(
                EntityLinkRecord(str(r[0]), str(r[1]), str(r[2]))
                for r in self._exec(
                    cur,
                    "SELECT s.id, e.id, s.link FROM entities s JOIN entities e"
                    " ON e.seq = s.same_as UNION ALL SELECT s.id, e.id, 'apart'"
                    " FROM entity_apart p JOIN entities s ON s.seq = p.entity_seq"
                    " JOIN entities e ON e.seq = p.other_seq ORDER BY 1, 2, 3",
                ).fetchall()
                if r[0] in kept and r[1] in kept
            )
            relations = tuple(
                RelationRecord(*(str(v) for v in r))
                for r in self._exec(
                    cur,
                    "SELECT m.id, a.id, b.id, r.kind, r.sentence FROM entity_relations r"
                    " JOIN memories m ON m.seq = r.memory_seq"
                    " JOIN entities a ON a.seq = r.src_seq JOIN entities b ON b.seq = r.dst_seq"
                    " ORDER BY m.seq, a.seq, b.seq, r.kind",
                ).fetchall()
                if r[0] in ids and r[1] in kept and r[2] in kept
            )
            signals = tuple(self._export_signals(cur, scope, ids))
            scorers = tuple(
                ScorerRecord(str(r[0]), str(r[1]), float(r[2]), json.loads(r[3]))
                for r in self._exec(
                    cur,
                    "SELECT agent_id, channel, trained_at, data FROM scorer_weights"
                    " ORDER BY agent_id, channel",
                ).fetchall()
                if scope.unscoped or (r[0] == scope.agent_id and r[1] in _channels(scope))
            )
            erasures = tuple(
                ErasureRecord(
                    str(r[0]),
                    float(r[1]),
                    str(r[2]),
                    str(r[3]),
                    json.loads(r[4]),
                    json.loads(r[5]),
                    str(r[6]),
                )
                for r in self._exec(
                    cur,
                    "SELECT id, at, agent_id, channel, selection, counts, digest FROM erasures"
                    " ORDER BY seq",
                ).fetchall()
                if scope.unscoped or (r[2] == scope.agent_id and r[3] in _channels(scope))
            )
            embedding = tuple(
                EmbeddingRecord(str(r[0]), str(r[1]), int(r[2]))
                for r in self._exec(
                    cur, "SELECT provider, model, dimensions FROM embedding_config"
                ).fetchall()
            )
        return PalaceRecords(
            skills=skills,
            links=links,
            entities=entities,
            mentions=mentions,
            edges=edges,
            entity_links=entity_links,
            relations=relations,
            signals=signals,
            scorers=scorers,
            erasures=erasures,
            embedding=embedding,
        )

    def _export_signals(self, cur: Cursor, scope: Scope, ids: set[str]) -> list[SignalRecord]:
        sql = "SELECT at, kind, agent_id, channel, memory_id, query, data FROM signals"
        params: list[Any] = []
        if not scope.unscoped:
            sql += " WHERE agent_id = ?"
            params.append(scope.agent_id)
        rows = self._exec(cur, sql + " ORDER BY seq", params).fetchall()
        return [
            SignalRecord(
                float(at), str(kind), str(agent), str(chan), memory_id, query, json.loads(data)
            )
            for at, kind, agent, chan, memory_id, query, data in rows
            if scope.unscoped
            or (chan in _channels(scope) and (memory_id is None or memory_id in ids))
        ]

    # -- import (inside the caller's transaction) ------------------------------------

    def _import_records(
        self,
        cur: Cursor,
        records: PalaceRecords,
        *,
        resolved: Mapping[str, str],
        inserted: Collection[str],
        now: datetime,
        renew: bool = False,
    ) -> None:
        """Write ``records`` about the memories this import inserted
        (``inserted``: their ids in the file; ``resolved``: file id -> stored
        id, for every memory of the file). What is already stored stays.
        ``renew``: entities and erasure receipts written get new ids
        (``_holds_outside``)."""
        seq_of = self._memory_seqs(cur, sorted(set(resolved.values())))

        def seq(memory_id: str | None) -> int | None:
            stored = resolved.get(memory_id or "")
            return None if stored is None else seq_of.get(stored)

        for skill in records.skills:
            at = seq(skill.memory_id)
            if skill.memory_id in inserted and at is not None:
                self._exec(
                    cur,
                    "INSERT INTO skills (memory_seq, agent_id, visibility, group_name, channel,"
                    " name, digest, origin) SELECT seq, agent_id, visibility, group_name,"
                    " channel, ?, ?, ? FROM memories WHERE seq = ? ON CONFLICT DO NOTHING",
                    (skill.name, skill.digest, skill.origin, at),
                )
        for link in records.links:
            src, dst = seq(link.src), seq(link.dst)
            if src is None or dst is None or not {link.src, link.dst} & set(inserted):
                continue
            self._exec(
                cur,
                "INSERT INTO memory_links (src_seq, dst_seq, kind, weight, created_at,"
                " updated_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (src, dst, link.kind, link.weight, link.created_at, link.updated_at),
            )
        self._import_graph(cur, records, seq=seq, inserted=inserted, now=now, renew=renew)
        for signal in records.signals:
            self._import_signal(
                cur,
                signal,
                memory_id=resolved.get(signal.memory_id or ""),
                new=signal.memory_id in inserted,
            )
        for config in records.embedding:  # the importer's own model (backup checks)
            self._exec(
                cur,
                "INSERT INTO embedding_config (id, provider, model, dimensions)"
                " VALUES (1, ?, ?, ?) ON CONFLICT DO NOTHING",
                (config.provider, config.model, config.dimensions),
            )
        for scorer in records.scorers:
            self._exec(
                cur,
                "INSERT INTO scorer_weights (agent_id, channel, trained_at, data)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (agent_id, channel) DO UPDATE SET"
                " trained_at = excluded.trained_at, data = excluded.data"
                " WHERE excluded.trained_at > scorer_weights.trained_at",
                (
                    scorer.agent_id,
                    scorer.channel,
                    scorer.trained_at,
                    json.dumps(dict(scorer.data), sort_keys=True),
                ),
            )

        for receipt in records.erasures:
            receipt_id = receipt.id
            if renew:
                # Present means: the importer's own receipt of that id, or
                # of the same erasure (its time and digest).
                if self._exec(
                    cur,
                    "SELECT 1 FROM erasures WHERE agent_id = ? AND channel = ?"
                    " AND (id = ? OR (at = ? AND digest = ?))",
                    (receipt.agent_id, receipt.channel, receipt.id, receipt.at, receipt.digest),
                ).fetchone():
                    continue
                receipt_id = self._receipt_ids.next(now)
            self._exec(
                cur,
                "INSERT INTO erasures (id, at, agent_id, channel, selection, counts, digest)"
                " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
                (
                    receipt_id,
                    receipt.at,
                    receipt.agent_id,
                    receipt.channel,
                    json.dumps(dict(receipt.selection), ensure_ascii=False, sort_keys=True),
                    json.dumps(dict(receipt.counts), sort_keys=True),
                    receipt.digest,
                ),
            )

    def _memory_seqs(self, cur: Cursor, memory_ids: list[str]) -> dict[str, int]:
        out: dict[str, int] = {}
        for i in range(0, len(memory_ids), 500):
            chunk = memory_ids[i : i + 500]
            for memory_id, seq in self._exec(
                cur, f"SELECT id, seq FROM memories WHERE {in_list('id', chunk)}", chunk
            ).fetchall():
                out[str(memory_id)] = int(seq)
        return out

    def _import_signal(
        self, cur: Cursor, signal: SignalRecord, *, memory_id: str | None, new: bool
    ) -> None:
        """A signal about a memory comes with that memory (so an import run
        twice records nothing twice); one about none unless already stored."""
        if signal.memory_id is not None and not new:
            return
        row = (
            signal.at,
            signal.kind,
            signal.agent_id,
            signal.channel,
            memory_id,
            signal.query,
            json.dumps(dict(signal.data), ensure_ascii=False, sort_keys=True),
        )
        if (
            signal.memory_id is None
            and self._exec(
                cur,
                "SELECT 1 FROM signals WHERE at = ? AND kind = ? AND agent_id = ? AND channel = ?"
                " AND memory_id IS NULL AND data = ?",
                (*row[:4], row[6]),
            ).fetchone()
        ):
            return
        self._exec(
            cur,
            "INSERT INTO signals (at, kind, agent_id, channel, memory_id, query, data)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            row,
        )

    def _import_graph(
        self,
        cur: Cursor,
        records: PalaceRecords,
        *,
        seq: Callable[[str | None], int | None],
        inserted: Collection[str],
        now: datetime,
        renew: bool,
    ) -> None:
        """Entities (an entity of the same scope and name already stored is
        used as it is; one written gets a new id when its id is taken, or
        with ``renew``), then the inserted memories' mentions and relations,
        and the co-occurrence edges between entities this import created."""
        entity_seq: dict[str, int] = {}
        created: set[str] = set()
        for entity in records.entities:
            part = (entity.agent_id, entity.visibility, entity.group_name, entity.channel)
            row = self._exec(
                cur,
                "SELECT seq FROM entities WHERE agent_id = ? AND visibility = ?"
                " AND group_name = ? AND channel = ? AND norm = ?",
                (*part, entity.norm),
            ).fetchone()
            if row is not None:
                entity_seq[entity.id] = int(row[0])
                continue
            taken = (
                renew
                or self._exec(cur, "SELECT 1 FROM entities WHERE id = ?", (entity.id,)).fetchone()
            )
            key = GraphSql._entity_ids.next(now) if taken else entity.id
            row = self._exec(
                cur,
                f"INSERT INTO entities ({_ENTITY_COLUMNS})"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq",
                (
                    key,
                    *part,
                    entity.name,
                    entity.norm,
                    entity.type,
                    entity.kind,
                    entity.mentions,
                    entity.created_at,
                    entity.updated_at,
                ),
            ).fetchone()
            entity_seq[entity.id] = int(row[0])
            created.add(entity.id)
            self._exec_many(
                cur,
                "INSERT INTO entity_aliases (entity_seq, alias) VALUES (?, ?)"
                " ON CONFLICT DO NOTHING",
                [(int(row[0]), alias) for alias in entity.aliases],
            )
        added: dict[int, int] = {}
        for mention in records.mentions:
            at, target = seq(mention.memory_id), entity_seq.get(mention.entity_id)
            if mention.memory_id not in inserted or at is None or target is None:
                continue
            self._exec(
                cur,
                "INSERT INTO mentions (memory_seq, entity_seq, surface, count, fact)"
                f" SELECT seq, ?, ?, ?, CASE WHEN {in_list('category', _FACT_VALUES)}"
                " THEN 1 ELSE 0 END FROM memories WHERE seq = ? ON CONFLICT DO NOTHING",
                (target, mention.surface, mention.count, *_FACT_VALUES, at),
            )
            if mention.entity_id not in created:
                added[target] = added.get(target, 0) + 1
        for target, count in sorted(added.items()):
            self._exec(
                cur, "UPDATE entities SET mentions = mentions + ? WHERE seq = ?", (count, target)
            )
        for edge in records.edges:
            src, dst = entity_seq.get(edge.src), entity_seq.get(edge.dst)
            if src is None or dst is None or not {edge.src, edge.dst} & created:
                continue
            self._exec(
                cur,
                "INSERT INTO entity_edges (src_seq, dst_seq, count, weight, updated_at)"
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (src, dst, edge.count, edge.weight, edge.updated_at),
            )
        for link in records.entity_links:
            # A link (or a pair kept apart) of entities this import wrote.
            short, other = entity_seq.get(link.entity), entity_seq.get(link.other)
            if short is None or other is None or link.entity not in created:
                continue
            if link.link == "apart":
                self._exec(
                    cur,
                    "INSERT INTO entity_apart (entity_seq, other_seq) VALUES (?, ?)"
                    " ON CONFLICT DO NOTHING",
                    (short, other),
                )
            else:
                self._exec(
                    cur,
                    "UPDATE entities SET same_as = ?, link = ? WHERE seq = ?",
                    (other, link.link, short),
                )
        for relation in records.relations:
            at = seq(relation.memory_id)
            src, dst = entity_seq.get(relation.src), entity_seq.get(relation.dst)
            if relation.memory_id not in inserted or at is None or src is None or dst is None:
                continue
            self._exec(
                cur,
                "INSERT INTO entity_relations (memory_seq, src_seq, dst_seq, kind, sentence)"
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (at, src, dst, relation.kind, relation.sentence),
            )
