"""Skills in SQL: the ``skills`` rows that name skill memories, their
correlation links, and the usage signals activation and lookup leave.

A skill is a memory (type ``skill``, store ``procedural``) plus a ``skills``
row (its name, unique in its owner's scope, and the digest of its parsed
definition). Correlations are ``memory_links`` between skill memories:
``correlates`` (from the files: explicit links, shared tags and tools; the
import owns them) and ``coactivated`` (learned from usage: consolidation owns
them). Usage goes to ``signals`` so activation never rewrites a memory.
"""

from __future__ import annotations

import abc
import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from mindpalace.models import Memory, Scope
from mindpalace.store.base import VectorBatch
from mindpalace.store.core import Cursor, SqlCore
from mindpalace.store.fragments import (
    SELECT_MEMORY,
    from_epoch,
    in_list,
    row_to_memory,
    scope_clause,
    to_epoch,
)
from mindpalace.store.skill_rows import (
    SkillLink,
    SkillOwner,
    SkillRow,
    SkillUsage,
    SkillWrite,
    UsageSignal,
)
from mindpalace.store.waiting_sql import forget_checked_vectors

__all__ = ["COACTIVATED", "CORRELATES", "SkillsSql"]

CORRELATES = "correlates"  # from the skill files; rewritten by every import
COACTIVATED = "coactivated"  # learned from co-activation; only consolidation writes it


_OWNER = "s.agent_id = ? AND s.visibility = ? AND s.group_name = ? AND s.channel = ?"
_SELECT_SKILL = f"{SELECT_MEMORY}, s.name, s.digest, s.origin"


def _row_to_skill(row: Sequence[Any]) -> SkillRow:
    return SkillRow(
        memory=row_to_memory(row[:-3]),
        name=str(row[-3]),
        digest=str(row[-2]),
        origin=row[-1],
    )


class SkillsSql(SqlCore):
    """The skills part of ``SqlStore``."""

    # Provided by SqlStore (memories): the row writer and vector writer.
    @abc.abstractmethod
    def _insert(self, cur: Cursor, memory: Memory, embed_hash: str | None) -> int: ...

    @abc.abstractmethod
    def _put_vectors(self, cur: Cursor, vectors: VectorBatch | None) -> None: ...

    # -- reads --------------------------------------------------------------------

    def skills(
        self,
        scope: Scope,
        *,
        owner: SkillOwner | None = None,
        include_archived: bool = False,
    ) -> list[SkillRow]:
        """Skills ``scope`` may see (only ``owner``'s when given), by name."""
        s_sql, params = scope_clause(scope)
        sql = (
            f"SELECT {_SELECT_SKILL} FROM skills s JOIN memories m ON m.seq = s.memory_seq"
            f" WHERE {s_sql}"
        )
        if not include_archived:
            sql += " AND m.archived = 0"
        if owner is not None:
            sql += f" AND {_OWNER}"
            params += owner.params()
        with self._read() as cur:
            rows = self._exec(cur, sql + " ORDER BY s.name, m.seq", params).fetchall()
        return [_row_to_skill(r) for r in rows]

    def skill_links(
        self,
        scope: Scope,
        *,
        sources: Sequence[str] | None = None,
        owner: SkillOwner | None = None,
    ) -> list[SkillLink]:
        """Correlation links (both kinds) between live skills ``scope`` may see;
        only those leaving ``sources`` (memory ids), only within ``owner``'s scope."""
        s_sql, params = scope_clause(scope)
        visible = (
            "SELECT m.seq, m.id, s.name FROM skills s JOIN memories m ON m.seq = s.memory_seq"
            f" WHERE {s_sql} AND m.archived = 0"
        )
        if owner is not None:
            visible += f" AND {_OWNER}"
            params += owner.params()
        sql = (
            f"WITH visible AS ({visible})"
            " SELECT a.id, a.name, b.id, b.name, l.kind, l.weight FROM memory_links l"
            " JOIN visible a ON a.seq = l.src_seq JOIN visible b ON b.seq = l.dst_seq"
            " WHERE l.kind IN (?, ?)"
        )
        params += [CORRELATES, COACTIVATED]
        if sources is not None:
            if not sources:
                return []
            sql += " AND " + in_list("a.id", sources)
            params += list(sources)
        with self._read() as cur:
            rows = self._exec(cur, sql + " ORDER BY a.name, b.name, l.kind", params).fetchall()
        return [
            SkillLink(str(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4]), float(r[5]))
            for r in rows
        ]

    def skill_usage(self, memory_ids: Sequence[str]) -> dict[str, SkillUsage]:
        """Activation and lookup counts per skill memory id."""
        out: dict[str, SkillUsage] = {}
        if not memory_ids:
            return out
        with self._read() as cur:
            rows = self._exec(
                cur,
                "SELECT memory_id, kind, COUNT(*), MAX(at) FROM signals"
                f" WHERE kind IN (?, ?) AND {in_list('memory_id', memory_ids)}"
                " GROUP BY memory_id, kind",
                ["skill_activated", "skill_get", *memory_ids],
            ).fetchall()
        for memory_id, kind, count, last in rows:
            usage = out.get(memory_id, SkillUsage())
            when = from_epoch(last)
            latest = max((t for t in (usage.last_used, when) if t is not None), default=None)
            out[memory_id] = SkillUsage(
                activations=usage.activations + (count if kind == "skill_activated" else 0),
                gets=usage.gets + (count if kind == "skill_get" else 0),
                last_used=latest,
            )
        return out

    def usage_signals(
        self, kind: str, *, after_seq: int = 0, agent_id: str | None = None, limit: int = 10_000
    ) -> list[UsageSignal]:
        """Signals of ``kind`` recorded after ``after_seq`` (of ``agent_id``), oldest first."""
        sql = "SELECT seq, kind, agent_id, at, memory_id, query, data FROM signals"
        sql += " WHERE kind = ? AND seq > ?"
        params: list[Any] = [kind, after_seq]
        if agent_id is not None:
            sql += " AND agent_id = ?"
            params.append(agent_id)
        with self._read() as cur:
            rows = self._exec(cur, sql + " ORDER BY seq LIMIT ?", [*params, limit]).fetchall()
        out = []
        for seq, kind_, agent, at, memory_id, query, data in rows:
            when = from_epoch(at)
            assert when is not None
            out.append(
                UsageSignal(int(seq), kind_, agent, when, memory_id, query, json.loads(data))
            )
        return out

    # -- writes -------------------------------------------------------------------

    def write_skills(
        self,
        owner: SkillOwner,
        writes: Sequence[SkillWrite],
        *,
        correlations: Mapping[tuple[str, str], float],
        now: datetime,
        vectors: VectorBatch | None = None,
    ) -> list[Memory]:
        """Insert or update skills by name in ``owner``'s scope, then make the
        owner's ``correlates`` links exactly ``correlations`` ((source name,
        target name) -> weight; names without a skill are ignored), all in one
        transaction. Returns the written skills' memories, in order."""
        written: list[Memory] = []
        self._ensure_vector_key(vectors)
        with self._mutate(structural=True) as cur:
            self._put_vectors(cur, vectors)
            for write in writes:
                written.append(self._write_skill(cur, owner, write, now, vectors))
            self._set_correlations(cur, owner, correlations, now)
        return written

    def _write_skill(
        self,
        cur: Cursor,
        owner: SkillOwner,
        write: SkillWrite,
        now: datetime,
        vectors: VectorBatch | None,
    ) -> Memory:
        new = write.memory
        row = self._exec(
            cur,
            f"SELECT s.memory_seq, m.id FROM skills s JOIN memories m ON m.seq = s.memory_seq"
            f" WHERE {_OWNER} AND s.name = ?",
            [*owner.params(), write.name],
        ).fetchone()
        if row is None:
            memory = new.stored(write.memory_id, now)
            self._insert(cur, memory, new.embed_hash)
            seq = self._exec(
                cur, "SELECT seq FROM memories WHERE id = ?", (write.memory_id,)
            ).fetchone()[0]
            self._exec(
                cur,
                "INSERT INTO skills (memory_seq, agent_id, visibility, group_name, channel,"
                " name, digest, origin) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [seq, *owner.params(), write.name, write.digest, write.origin],
            )
            memory_id = write.memory_id
        else:
            seq, memory_id = row
            self._exec(
                cur,
                "UPDATE memories SET content = ?, content_hash = ?, title = ?, context = ?,"
                " embed_hash = ?, type = ?, store = ?, category = ?, tags = ?, source = ?,"
                " metadata = ?, stated_times = ?, updated_at = ?, archived = 0 WHERE seq = ?",
                (
                    new.content,
                    new.content_hash,
                    new.title,
                    new.context,
                    new.embed_hash,
                    new.type.value,
                    new.store.value,
                    new.category.value,
                    json.dumps(list(new.tags), ensure_ascii=False),
                    new.source.value,
                    json.dumps(dict(new.metadata), ensure_ascii=False, sort_keys=True),
                    new.stated_times,
                    to_epoch(now),
                    seq,
                ),
            )
            if new.embed_hash is not None and (
                vectors is None
                or not self._exec(
                    cur,
                    "SELECT 1 FROM embeddings WHERE model = ? AND text_hash = ?",
                    (self._vector_key(cur, vectors.model), new.embed_hash),
                ).fetchone()
            ):
                # An old memory's new text may wait for its vector: a pass
                # over the waiting texts must read the old memories again.
                forget_checked_vectors(self, cur)
            self._exec(cur, "DELETE FROM memory_tags WHERE memory_seq = ?", (seq,))
            for tag in new.tags:
                self._exec(
                    cur, "INSERT INTO memory_tags (memory_seq, tag) VALUES (?, ?)", (seq, tag)
                )
            self._exec(
                cur,
                "UPDATE skills SET digest = ?, origin = ? WHERE memory_seq = ?",
                (write.digest, write.origin, seq),
            )
        found = self._exec(
            cur, f"SELECT {SELECT_MEMORY} FROM memories m WHERE m.id = ?", (memory_id,)
        ).fetchone()
        return row_to_memory(found)

    def _set_correlations(
        self,
        cur: Cursor,
        owner: SkillOwner,
        wanted: Mapping[tuple[str, str], float],
        now: datetime,
    ) -> None:
        seq_of = {
            str(name): int(seq)
            for seq, name in self._exec(
                cur, f"SELECT s.memory_seq, s.name FROM skills s WHERE {_OWNER}", owner.params()
            ).fetchall()
        }
        name_of = {seq: name for name, seq in seq_of.items()}
        existing: dict[tuple[str, str], float] = {}
        for src, dst, weight in self._exec(
            cur,
            "SELECT l.src_seq, l.dst_seq, l.weight FROM memory_links l"
            " JOIN skills s ON s.memory_seq = l.src_seq"
            f" WHERE l.kind = ? AND {_OWNER}",
            [CORRELATES, *owner.params()],
        ).fetchall():
            if dst in name_of:
                existing[(name_of[src], name_of[dst])] = float(weight)
        stamp = to_epoch(now)
        for pair in existing:
            if pair not in wanted:
                self._exec(
                    cur,
                    "DELETE FROM memory_links WHERE src_seq = ? AND dst_seq = ? AND kind = ?",
                    (seq_of[pair[0]], seq_of[pair[1]], CORRELATES),
                )
        for (src, dst), weight in sorted(wanted.items()):
            if src not in seq_of or dst not in seq_of or existing.get((src, dst)) == weight:
                continue
            if (src, dst) in existing:
                self._exec(
                    cur,
                    "UPDATE memory_links SET weight = ?, updated_at = ?"
                    " WHERE src_seq = ? AND dst_seq = ? AND kind = ?",
                    (weight, stamp, seq_of[src], seq_of[dst], CORRELATES),
                )
            else:
                self._exec(
                    cur,
                    "INSERT INTO memory_links (src_seq, dst_seq, kind, weight, created_at,"
                    " updated_at) VALUES (?, ?, ?, ?, ?, ?)",
                    (seq_of[src], seq_of[dst], CORRELATES, weight, stamp, stamp),
                )

    def strengthen_links(
        self,
        increments: Mapping[tuple[str, str], int],
        *,
        rate: float,
        watermark_key: str,
        watermark: int,
        now: datetime,
    ) -> int:
        """Hebbian strengthening of ``coactivated`` links between skill
        memories (id pairs): each co-activation moves the weight ``rate`` of
        the way to 1. Records ``watermark`` under ``watermark_key`` in the same
        transaction, so no signal is counted twice. Returns links changed."""
        changed = 0
        stamp = to_epoch(now)
        with self._write() as cur:
            for (src_id, dst_id), count in sorted(increments.items()):
                seqs = dict(
                    self._exec(
                        cur,
                        "SELECT id, seq FROM memories WHERE id IN (?, ?)",
                        (src_id, dst_id),
                    ).fetchall()
                )
                if src_id not in seqs or dst_id not in seqs:
                    continue  # deleted since it was used
                src, dst = seqs[src_id], seqs[dst_id]
                row = self._exec(
                    cur,
                    "SELECT weight FROM memory_links WHERE src_seq = ? AND dst_seq = ?"
                    " AND kind = ?",
                    (src, dst, COACTIVATED),
                ).fetchone()
                before = 0.0 if row is None else float(row[0])
                after = 1.0 - (1.0 - before) * (1.0 - rate) ** count
                if row is None:
                    self._exec(
                        cur,
                        "INSERT INTO memory_links (src_seq, dst_seq, kind, weight, created_at,"
                        " updated_at) VALUES (?, ?, ?, ?, ?, ?)",
                        (src, dst, COACTIVATED, after, stamp, stamp),
                    )
                else:
                    self._exec(
                        cur,
                        "UPDATE memory_links SET weight = ?, updated_at = ?"
                        " WHERE src_seq = ? AND dst_seq = ? AND kind = ?",
                        (after, stamp, src, dst, COACTIVATED),
                    )
                changed += 1
            self._exec(cur, "DELETE FROM palace_meta WHERE key = ?", (watermark_key,))
            self._exec(
                cur,
                "INSERT INTO palace_meta (key, value) VALUES (?, ?)",
                (watermark_key, watermark),
            )
        return changed
