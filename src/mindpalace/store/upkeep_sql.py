"""Consolidation's reads and its one write transaction.

Consolidation acts on one *partition* at a time: the memories (and their
entities and edges) one agent owns in one channel ("" for none). A palace
consolidates the partitions it may both see and change (graphview.py says
which); it never merges, decays or strengthens across partitions. The
decisions are made above the store (graph/consolidate.py); this applies
them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from itertools import product

from mindpalace.store.core import SqlCore
from mindpalace.store.fragments import from_epoch, graph_time, in_list, to_epoch
from mindpalace.store.upkeep_rows import ConsolidationPlan, DecayCandidate, TimesToKeep

__all__ = ["ConsolidationPlan", "DecayCandidate", "TimesToKeep", "UpkeepSql", "partition_key"]


def partition_key(name: str, agent_id: str, channel: str) -> str:
    """The palace_meta key of a partition's counter ``name``; the
    unchannelled partition keeps the key consolidation used before channels
    were partitions (``name:agent``)."""
    # \x1f cannot occur in an agent id or a channel (validation.check_identifier).
    return f"{name}:{agent_id}" if not channel else f"{name}:{agent_id}\x1f{channel}"


class UpkeepSql(SqlCore):
    """Reads and writes of consolidation, and the stated times kept."""

    def times_to_keep(self, form: str, *, after_seq: int, limit: int) -> list[TimesToKeep]:
        with self._read() as cur:
            rows = self._exec(
                cur,
                "SELECT seq, content_hash, content, created_at FROM memories"
                " WHERE seq > ? AND (stated_times IS NULL OR substr(stated_times, 1, ?) <> ?)"
                " ORDER BY seq LIMIT ?",
                (after_seq, len(form), form, limit),
            ).fetchall()
        out = []
        for seq, content_hash, content, created_at in rows:
            created = from_epoch(created_at)
            assert created is not None  # NOT NULL column
            out.append(TimesToKeep(int(seq), str(content_hash), str(content), created))
        return out

    def keep_times(self, kept: Sequence[tuple[TimesToKeep, str]]) -> None:
        if not kept:
            return
        with self._mutate() as cur:
            self._exec_many(
                cur,
                "UPDATE memories SET stated_times = ? WHERE seq = ? AND content_hash = ?",
                [(form, row.seq, row.content_hash) for row, form in kept],
            )

    def meta(self, key: str) -> int | None:
        """A palace_meta counter, or None."""
        with self._read() as cur:
            row = self._exec(cur, "SELECT value FROM palace_meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else int(row[0])

    def agents(self) -> list[str]:
        """Every agent that owns a memory."""
        with self._read() as cur:
            rows = self._exec(cur, "SELECT DISTINCT agent_id FROM memories ORDER BY agent_id")
            return [str(r[0]) for r in rows.fetchall()]

    def partitions(self) -> list[tuple[str, str]]:
        """Every (agent, channel) that holds a memory; channel "" for none."""
        with self._read() as cur:
            rows = self._exec(
                cur, "SELECT DISTINCT agent_id, channel FROM memories ORDER BY agent_id, channel"
            )
            return [(str(r[0]), str(r[1])) for r in rows.fetchall()]

    def decay_candidates(self, agent_id: str, channel: str = "") -> list[DecayCandidate]:
        """The partition's current memories (not archived, not superseded)."""
        with self._read() as cur:
            rows = self._exec(
                cur,
                "SELECT id, strength, COALESCE(last_accessed_at, created_at), is_constraint,"
                " metadata FROM memories WHERE agent_id = ? AND channel = ? AND archived = 0"
                " AND superseded_by IS NULL ORDER BY seq",
                (agent_id, channel),
            ).fetchall()
        out = []
        for memory_id, strength, used, constraint, metadata in rows:
            pinned = bool(json.loads(metadata).get("pinned")) if metadata else False
            out.append(
                DecayCandidate(
                    str(memory_id), float(strength), float(used), bool(constraint) or pinned
                )
            )
        return out

    def feedback_pairs(
        self, agent_id: str, after_seq: int, channel: str = ""
    ) -> tuple[list[tuple[str, str]], int, int]:
        """Pairs of the partition's memories that its agent marked useful for
        the same recall (feedback signals sharing a ``recall`` reference in
        their data), after signal ``after_seq``; the highest signal seq read
        and how many signals were read (only the partition's: signals on
        other memories are neither read nor counted)."""
        with self._read() as cur:
            rows = self._exec(
                cur,
                "SELECT s.seq, s.memory_id, s.data FROM signals s"
                " JOIN memories m ON m.id = s.memory_id"
                " WHERE s.kind = 'feedback' AND s.agent_id = ? AND s.seq > ?"
                " AND m.agent_id = ? AND m.channel = ? ORDER BY s.seq",
                (agent_id, after_seq, agent_id, channel),
            ).fetchall()
        last = after_seq
        useful: dict[str, list[str]] = {}
        for seq, memory_id, data in rows:
            last = max(last, int(seq))
            fields = json.loads(data) if data else {}
            recall = fields.get("recall")
            if fields.get("useful") and recall is not None and memory_id:
                useful.setdefault(str(recall), []).append(str(memory_id))
        pairs: list[tuple[str, str]] = []
        for ids in useful.values():
            unique = sorted(set(ids))
            pairs += [(a, b) for i, a in enumerate(unique) for b in unique[i + 1 :]]
        return pairs, last, len(rows)

    def edge_weights_between(self, a: str, b: str) -> list[tuple[int, int, float]]:
        """Entity pairs (one mentioned by each memory, same scope) and their
        current edge weight (0 when there is no edge yet)."""
        with self._read() as cur:
            return self._entity_pairs(cur, a, b)

    def _entity_pairs(self, cur: object, a: str, b: str) -> list[tuple[int, int, float]]:
        found = []
        rows = self._exec(
            cur,
            "SELECT m.id, e.seq, e.agent_id, e.visibility, e.group_name, e.channel"
            " FROM mentions x JOIN memories m ON m.seq = x.memory_seq"
            f" JOIN entities e ON e.seq = x.entity_seq WHERE {in_list('m.id', [a, b])}",
            (a, b),
        ).fetchall()
        left = [(int(r[1]), tuple(r[2:])) for r in rows if r[0] == a]
        right = [(int(r[1]), tuple(r[2:])) for r in rows if r[0] == b]
        for (ea, pa), (eb, pb) in product(left, right):
            if ea == eb or pa != pb:  # never across scopes
                continue
            src, dst = min(ea, eb), max(ea, eb)
            row = self._exec(
                cur,
                "SELECT weight FROM entity_edges WHERE src_seq = ? AND dst_seq = ?",
                (src, dst),
            ).fetchone()
            found.append((src, dst, 0.0 if row is None else float(row[0])))
        return sorted(set(found))

    def apply_consolidation(self, plan: ConsolidationPlan, now: datetime) -> int:
        """Write ``plan`` in one transaction; returns how many stale edges decayed."""
        at = to_epoch(now)
        decayed_edges = 0
        with self._mutate(structural=True) as cur:
            for memory_id, strength in plan.strengths:
                self._exec(
                    cur,
                    "UPDATE memories SET strength = ?"
                    " WHERE id = ? AND agent_id = ? AND channel = ?",
                    (strength, memory_id, plan.agent_id, plan.channel),
                )
            if plan.edge_factor < 1.0:
                decayed_edges = int(
                    self._exec(
                        cur,
                        "UPDATE entity_edges SET weight = CASE WHEN weight * ? < ? THEN ?"
                        " ELSE weight * ? END WHERE updated_at < ? AND weight > ?"
                        " AND src_seq IN (SELECT seq FROM entities"
                        " WHERE agent_id = ? AND channel = ?)",
                        (
                            plan.edge_factor,
                            plan.edge_floor,
                            plan.edge_floor,
                            plan.edge_factor,
                            plan.stale_before,
                            plan.edge_floor,
                            plan.agent_id,
                            plan.channel,
                        ),
                    ).rowcount
                )
            edge_at = graph_time(now)
            for a, b, new_weight in plan.strengthen:
                self._exec(
                    cur,
                    "INSERT INTO entity_edges (src_seq, dst_seq, count, weight, updated_at)"
                    " VALUES (?, ?, 0, ?, ?)"
                    " ON CONFLICT (src_seq, dst_seq) DO UPDATE SET weight = ?, updated_at = ?",
                    (a, b, new_weight, edge_at, new_weight, edge_at),
                )
            for kept, merged in plan.merges:
                self._merge(cur, kept, merged, plan, at)
            for key, value in (
                (partition_key("consolidated_day", plan.agent_id, plan.channel), plan.day),
                (
                    partition_key("consolidated_signal", plan.agent_id, plan.channel),
                    plan.signal_watermark,
                ),
            ):
                if value is None:
                    continue
                self._exec(cur, "DELETE FROM palace_meta WHERE key = ?", (key,))
                self._exec(cur, "INSERT INTO palace_meta (key, value) VALUES (?, ?)", (key, value))
        return decayed_edges

    def _merge(
        self, cur: object, kept: str, merged: str, plan: ConsolidationPlan, at: float | None
    ) -> None:
        rows = {
            str(r[0]): (int(r[1]), json.loads(r[2]), float(r[3]))
            for r in self._exec(
                cur,
                "SELECT id, seq, metadata, strength FROM memories WHERE agent_id = ?"
                f" AND channel = ? AND archived = 0 AND {in_list('id', [kept, merged])}",
                (plan.agent_id, plan.channel, kept, merged),
            ).fetchall()
        }
        if kept not in rows or merged not in rows:  # changed meanwhile
            return
        kept_seq, metadata, strength = rows[kept]
        merged_seq, merged_meta, merged_strength = rows[merged]
        sources = list(metadata.get("merged_from", []))
        sources += [merged, *merged_meta.get("merged_from", [])]
        metadata["merged_from"] = sorted(set(sources))
        self._exec(
            cur,
            "UPDATE memories SET metadata = ?, strength = ?, updated_at = ? WHERE seq = ?",
            (
                json.dumps(metadata, ensure_ascii=False, sort_keys=True),
                max(strength, merged_strength),
                at,
                kept_seq,
            ),
        )
        self._exec(
            cur, "UPDATE memories SET archived = 1, updated_at = ? WHERE seq = ?", (at, merged_seq)
        )
        self._exec(
            cur,
            "INSERT INTO memory_links (src_seq, dst_seq, kind, weight, created_at, updated_at)"
            " VALUES (?, ?, 'merged', 1.0, ?, ?) ON CONFLICT (src_seq, dst_seq, kind) DO NOTHING",
            (kept_seq, merged_seq, at, at),
        )
