"""SQL shared by every backend: schema use, scope rules, filters, row mapping.

``SqlStore`` implements the ``Store`` protocol over a DB-API connection, on
``SqlCore`` (core.py); the queries are written once, for every backend.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any

import numpy as np
import numpy.typing as npt

from mindpalace.errors import ValidationError
from mindpalace.models import (
    ISSUE_NUMBER,
    EmbeddingConfig,
    Memory,
    MemoryKind,
    Mention,
    NewMemory,
    RecallFilters,
    RelationMention,
    Scope,
    Stats,
    issue_number,
)
from mindpalace.store.base import (
    AddResult,
    DenseRows,
    ImportReport,
    TextMatch,
    VectorBatch,
    VectorTable,
)
from mindpalace.store.core import Cursor
from mindpalace.store.exchange_rows import PalaceRecords
from mindpalace.store.exchange_sql import ExchangeSql
from mindpalace.store.fragments import (
    MEMORY_COLUMNS,
    SELECT_MEMORY,
    escape_like,
    filter_clause,
    in_list,
    memory_row,
    row_to_memory,
    scope_clause,
    to_epoch,
)
from mindpalace.store.graph_sql import EntityLookup, GraphSql
from mindpalace.store.inspect_sql import InspectSql
from mindpalace.store.recall_sql import RecallSql
from mindpalace.store.relations_sql import RelationsSql
from mindpalace.store.signals_sql import SignalStore
from mindpalace.store.skills_sql import SkillsSql
from mindpalace.store.upkeep_sql import UpkeepSql

__all__ = ["Cursor", "SqlStore"]

# Remembering the same text again moves strength a fifth of the way to 1.
_STRENGTH_BUMP = 0.2


def _dedup_key(memory: Memory | NewMemory) -> tuple[str, ...]:
    """What de-duplication compares: scope and normalised text (the
    ``memories_dedup`` index)."""
    return (
        memory.agent_id,
        memory.visibility.value,
        memory.group or "",
        memory.channel or "",
        memory.content_hash,
    )


class SqlStore(
    GraphSql, RelationsSql, UpkeepSql, SkillsSql, SignalStore, ExchangeSql, RecallSql, InspectSql
):
    """The ``Store`` protocol over SQL; subclasses bring connection and dialect."""

    def _insert(self, cur: Cursor, memory: Memory, embed_hash: str | None) -> int:
        """Insert the row and its tags; returns its ``seq``."""
        columns = ", ".join((*MEMORY_COLUMNS, "embed_hash"))
        marks = ", ".join("?" for _ in range(len(MEMORY_COLUMNS) + 1))
        row = self._exec(
            cur,
            f"INSERT INTO memories ({columns}) VALUES ({marks}) RETURNING seq",
            (*memory_row(memory), embed_hash),
        ).fetchone()
        if memory.tags:
            self._exec_many(
                cur,
                "INSERT INTO memory_tags (memory_seq, tag) VALUES (?, ?)",
                [(row[0], tag) for tag in memory.tags],
            )
        return int(row[0])

    def _put_vectors(self, cur: Cursor, vectors: VectorBatch | None) -> None:
        if vectors is None:
            return
        self._exec_many(
            cur,
            "INSERT INTO embeddings (model, text_hash, vector) VALUES (?, ?, ?)"
            " ON CONFLICT (model, text_hash) DO NOTHING",
            [(vectors.model, text_hash, blob) for text_hash, blob in vectors.vectors.items()],
        )

    def _get(self, cur: Cursor, memory_id: str) -> Memory | None:
        row = self._exec(
            cur, f"SELECT {SELECT_MEMORY} FROM memories m WHERE m.id = ?", (memory_id,)
        )
        found = row.fetchone()
        return None if found is None else row_to_memory(found)

    def add(
        self,
        new: NewMemory,
        *,
        memory_id: str,
        now: datetime,
        scope: Scope,
        vectors: VectorBatch | None = None,
        signals: bool = False,
    ) -> AddResult:
        """Write ``new``, or bump the existing memory with the same scoped hash."""
        return self.add_many(
            [(new, memory_id)], now=now, scope=scope, vectors=vectors, signals=signals
        )[0]

    def add_many(
        self,
        items: Sequence[tuple[NewMemory, str]],
        *,
        now: datetime,
        scope: Scope,
        vectors: VectorBatch | None = None,
        signals: bool = False,
    ) -> list[AddResult]:
        """``add`` for many memories in one transaction (all or nothing); with
        ``signals``, each write's source is recorded in that transaction too."""
        try:
            return self._add_many_once(items, now, scope, vectors, signals)
        except Exception as exc:
            # Two writers raced to insert the same text (possible where the
            # backend does not serialise writers): the winner's row exists now.
            if not self._is_unique_violation(exc):
                raise
            return self._add_many_once(items, now, scope, vectors, signals)

    def _add_many_once(
        self,
        items: Sequence[tuple[NewMemory, str]],
        now: datetime,
        scope: Scope,
        vectors: VectorBatch | None,
        signals: bool,
    ) -> list[AddResult]:
        # The write rules (de-duplication, issue numbers, supersession) read
        # inside this transaction: writers are serialised (SQLite's BEGIN
        # IMMEDIATE, PostgreSQL's advisory lock, each taken before the first
        # read), so each sees every write committed before it.
        with self._mutate() as cur, self._bulk(cur):
            self._put_vectors(cur, vectors)
            lookup = self._entity_lookup(cur, [m for new, _ in items for m in new.mentions])
            known = self._existing(cur, [new for new, _ in items])
            numbers: dict[str, int] = {}
            written = [
                self._add_in(
                    cur, new, memory_id, now, scope, lookup=lookup, known=known, numbers=numbers
                )
                for new, memory_id in items
            ]
            # Read back once, after every write of the batch: one query, not
            # one per memory (a round trip each on a server).
            stored = self._get_all(cur, [memory_id for memory_id, _ in written])
            results = [AddResult(stored[memory_id], created) for memory_id, created in written]
            if signals:
                for result in results:
                    self._store_signal(cur, result)
        return results

    def _existing(
        self, cur: Cursor, memories: Sequence[Memory | NewMemory]
    ) -> dict[tuple[str, ...], str]:
        """Ids of the stored memories with the scoped content hash of any of
        ``memories``, by de-duplication key (``_dedup_key``)."""
        # By scope, then hash: the unique index leads with the scope columns
        # (a lookup by hash alone scanned every memory: 150 ms at 100k).
        by_scope: dict[tuple[str, ...], set[str]] = {}
        for memory in memories:
            key = _dedup_key(memory)
            by_scope.setdefault(key[:4], set()).add(key[4])
        found: dict[tuple[str, ...], str] = {}
        for scope_key, wanted in sorted(by_scope.items()):
            hashes = sorted(wanted)
            for i in range(0, len(hashes), 500):
                chunk = hashes[i : i + 500]
                for row in self._exec(
                    cur,
                    "SELECT agent_id, visibility, group_name, channel, content_hash, id"
                    " FROM memories WHERE agent_id = ? AND visibility = ? AND group_name = ?"
                    f" AND channel = ? AND {in_list('content_hash', chunk)}",
                    [*scope_key, *chunk],
                ).fetchall():
                    found[tuple(str(v) for v in row[:5])] = str(row[5])
        return found

    def _get_all(self, cur: Cursor, memory_ids: Sequence[str]) -> dict[str, Memory]:
        """The memories ``memory_ids`` (unscoped: the writer's own batch)."""
        wanted = list(dict.fromkeys(memory_ids))
        found: dict[str, Memory] = {}
        for i in range(0, len(wanted), 500):
            chunk = wanted[i : i + 500]
            for row in self._exec(
                cur,
                f"SELECT {SELECT_MEMORY} FROM memories m WHERE {in_list('m.id', chunk)}",
                chunk,
            ).fetchall():
                memory = row_to_memory(row)
                found[memory.id] = memory
        return found

    def _add_in(
        self,
        cur: Cursor,
        new: NewMemory,
        memory_id: str,
        now: datetime,
        scope: Scope,
        *,
        lookup: EntityLookup,
        known: dict[tuple[str, ...], str],
        numbers: dict[str, int],
    ) -> tuple[str, bool]:
        """Write one memory of a batch; its id and whether it was created."""
        existing = known.get(_dedup_key(new))
        if existing is not None:
            row = self._exec(cur, "SELECT archived FROM memories WHERE id = ?", (existing,))
            if row.fetchone()[0]:  # reviving an archived memory changes an existing row
                self._exec(cur, "UPDATE palace_meta SET value = value + 1 WHERE key = 'epoch'")
            self._exec(
                cur,
                "UPDATE memories SET strength = strength + (1.0 - strength) * ?,"
                " updated_at = ?, archived = 0 WHERE id = ?",
                (_STRENGTH_BUMP, to_epoch(now), existing),
            )
            return existing, False
        new = self._numbered(cur, new, scope, numbers)
        replaced = self._replaced_facts(cur, new, scope)
        memory = new.stored(memory_id, now)
        seq = self._insert(cur, memory, new.embed_hash)
        known[_dedup_key(memory)] = memory_id
        entities = self._link_mentions(cur, memory, seq, new.mentions, now, lookup=lookup)
        self._link_relations(cur, seq, entities, new.relations)
        if replaced and self._supersede(cur, memory, seq, replaced, now):
            # Closing facts changes existing rows: warm indexes must reload.
            self._exec(cur, "UPDATE palace_meta SET value = value + 1 WHERE key = 'epoch'")
        return memory_id, True

    def revise(
        self,
        old_id: str,
        new: NewMemory,
        *,
        memory_id: str,
        owner: str | None,
        now: datetime,
        scope: Scope,
        vectors: VectorBatch | None = None,
    ) -> Memory | None:
        """Write ``new`` as the next version of ``old_id`` and close the old
        row in its favour, as supersession does; None when ``old_id`` is not
        a current memory of ``owner`` any more."""
        with self._mutate(structural=True) as cur:
            old = self._get(cur, old_id)
            if old is None or (owner is not None and old.agent_id != owner):
                return None
            if old.superseded_by is not None:
                raise ValidationError(
                    "id",
                    old_id,
                    reason=f"memory {old_id!r} was replaced by {old.superseded_by!r}: update that",
                )
            old_seq = self._exec(cur, "SELECT seq FROM memories WHERE id = ?", (old_id,))
            seq = int(old_seq.fetchone()[0])
            if _dedup_key(old) == _dedup_key(new):
                # The new version takes the text's de-duplication key; the
                # closed one keeps its text under a hash of its own.
                self._exec(
                    cur,
                    "UPDATE memories SET content_hash = ? WHERE seq = ?",
                    (f"{old.content_hash}~{old_id}", seq),
                )
            taken = self._existing(cur, [new]).get(_dedup_key(new))
            if taken is not None:
                raise ValidationError(
                    "content",
                    taken,
                    reason=f"memory {taken!r} already holds this text in that scope",
                )
            self._put_vectors(cur, vectors)
            lookup = self._entity_lookup(cur, list(new.mentions))
            self._add_in(cur, new, memory_id, now, scope, lookup=lookup, known={}, numbers={})
            at = to_epoch(now)
            self._exec(
                cur,
                "UPDATE memories SET superseded_by = ?, valid_to = COALESCE(valid_to, ?),"
                " updated_at = ? WHERE seq = ? AND superseded_by IS NULL",
                (memory_id, to_epoch(new.valid_from or now), at, seq),
            )
            self._exec(
                cur,
                "INSERT INTO memory_links (src_seq, dst_seq, kind, weight, created_at, updated_at)"
                " SELECT seq, ?, 'supersedes', 1.0, ?, ? FROM memories WHERE id = ?"
                " ON CONFLICT (src_seq, dst_seq, kind) DO NOTHING",
                (seq, at, at, memory_id),
            )
            if old.archived:
                self._exec(cur, "UPDATE memories SET archived = 1 WHERE id = ?", (memory_id,))
            return self._get(cur, memory_id)

    def _numbered(
        self, cur: Cursor, new: NewMemory, scope: Scope, numbers: dict[str, int]
    ) -> NewMemory:
        """``new``, when an issue without a number, numbered 1 + the highest
        number among the issues of its project that ``scope`` sees (archived
        and superseded included) and those its batch wrote before it
        (``numbers``: project -> last number, kept by the batch). A number
        given in its metadata is kept."""
        if new.kind is not MemoryKind.ISSUE:
            return new
        project = new.project or ""
        if ISSUE_NUMBER in new.metadata:
            given = issue_number(new.metadata)
            if given is not None and project in numbers:  # else the next read sees it
                numbers[project] = max(numbers[project], given)
            return new
        if project not in numbers:
            numbers[project] = self._last_issue_number(cur, project, scope)
        numbers[project] += 1
        return replace(new, metadata={**new.metadata, ISSUE_NUMBER: numbers[project]})

    def _last_issue_number(self, cur: Cursor, project: str, scope: Scope) -> int:
        """The highest number among the issues of ``project`` that ``scope``
        sees (0: none)."""
        s_sql, s_params = scope_clause(scope)
        rows = self._exec(
            cur,
            f"SELECT m.metadata FROM memories m WHERE m.kind = ? AND m.project = ? AND {s_sql}",
            [MemoryKind.ISSUE.value, project, *s_params],
        ).fetchall()
        return max((issue_number(json.loads(r[0])) or 0 for r in rows), default=0)

    def archive(self, memory_id: str, *, owner: str | None, now: datetime) -> bool:
        """Mark archived; False when no such memory of ``owner``."""
        sql = "UPDATE memories SET archived = 1, updated_at = ? WHERE id = ?"
        params: list[Any] = [to_epoch(now), memory_id]
        if owner is not None:
            sql += " AND agent_id = ?"
            params.append(owner)
        with self._mutate(structural=True) as cur:
            return int(self._exec(cur, sql, params).rowcount) > 0

    def set_completed(
        self, memory_id: str, completed: bool, *, owner: str | None, now: datetime
    ) -> bool:
        """Set an issue's state; False when no such issue of ``owner``."""
        sql = "UPDATE memories SET completed = ?, updated_at = ? WHERE id = ? AND kind = 'issue'"
        params: list[Any] = [int(completed), to_epoch(now), memory_id]
        if owner is not None:
            sql += " AND agent_id = ?"
            params.append(owner)
        with self._mutate() as cur:  # no indexed column changes: caches stay warm
            return int(self._exec(cur, sql, params).rowcount) > 0

    def delete(self, memory_id: str, *, owner: str | None) -> bool:
        """Delete the row (tags, text index, signals and copies of its text
        as a neighbour's context follow); False when absent."""
        sql = "DELETE FROM memories WHERE id = ?"
        params: list[Any] = [memory_id]
        if owner is not None:
            sql += " AND agent_id = ?"
            params.append(owner)
        with self._mutate(structural=True) as cur:
            gone = self._get(cur, memory_id)
            linked = self._mentioned_entities(cur, memory_id)
            deleted = int(self._exec(cur, sql, params).rowcount) > 0
            if deleted and gone is not None:
                self._forget_signals(cur, memory_id)
                self._drop_orphan_entities(cur, linked)
                # Conversation turns carry the turn before them as search
                # context: a deleted turn's text must not live on there.
                self._exec(
                    cur,
                    "UPDATE memories SET context = NULL WHERE agent_id = ? AND channel = ?"
                    " AND session_id = ? AND context = ?",
                    (gone.agent_id, gone.channel or "", gone.session, gone.content),
                )
            return deleted

    def import_memories(
        self,
        memories: Iterable[Memory],
        *,
        scope: Scope,
        new_id: Callable[[], str],
        embed_hashes: Mapping[str, str] | None = None,
        vectors: VectorBatch | None = None,
        mentions: Mapping[str, Sequence[Mention]] | None = None,
        relations: Mapping[str, Sequence[RelationMention]] | None = None,
        records: PalaceRecords | None = None,
        now: datetime | None = None,
    ) -> ImportReport:
        """Insert complete memories in one transaction, skipping those present,
        linking each to the entities it mentions and the relations it states,
        then the ``records`` about the inserted ones (skills, links, graph,
        signals, scorer weights: ``ExchangeSql._import_records``).

        Present means: an id of ``scope``'s own agent that ``scope`` sees (or
        any stored id, for a management scope), an id earlier in the batch,
        or the scoped content hash of a stored memory. A stored id that is
        not present so (another agent's memory, or one outside the scope's
        channel) is answered as an unknown id is: the memory is inserted
        under ``new_id()`` (other records of the batch that name the id in
        ``superseded_by`` follow it), and the stored one is neither changed
        nor shown."""
        hashes = embed_hashes or {}
        found = mentions or {}
        stated = relations or {}
        when = now or datetime.now(timezone.utc)
        inserted = skipped = 0
        with self._mutate() as cur, self._bulk(cur):
            self._put_vectors(cur, vectors)
            # Read inside the transaction: the caller's iterable may be a
            # stream, and its whole import is one write either way.
            batch = list(memories)
            lookup = self._entity_lookup(cur, [m for ms in found.values() for m in ms])
            known = self._existing(cur, batch)
            stored = set(self._get_all(cur, [m.id for m in batch]))
            own = self._own_visible(cur, sorted(stored), scope)
            renamed = {key: new_id() for key in sorted(stored - own)}
            seen: set[str] = set()
            resolved: dict[str, str] = {}  # id in the batch -> id stored
            for record in batch:
                if record.id in own or record.id in seen or _dedup_key(record) in known:
                    if record.id not in resolved:
                        present = record.id in own or record.id in seen
                        resolved[record.id] = record.id if present else known[_dedup_key(record)]
                    skipped += 1
                    continue
                seen.add(record.id)
                resolved[record.id] = renamed.get(record.id, record.id)
                memory = replace(
                    record,
                    id=renamed.get(record.id, record.id),
                    superseded_by=renamed.get(record.superseded_by or "", record.superseded_by),
                )
                seq = self._insert(cur, memory, hashes.get(record.id))
                known[_dedup_key(memory)] = memory.id
                entities = self._link_mentions(
                    cur, memory, seq, found.get(record.id, ()), when, lookup=lookup
                )
                self._link_relations(cur, seq, entities, stated.get(record.id, ()))
                inserted += 1
            if records is not None:
                self._import_records(cur, records, resolved=resolved, inserted=seen, now=when)
        return ImportReport(inserted=inserted, skipped=skipped)

    def _own_visible(self, cur: Cursor, memory_ids: Sequence[str], scope: Scope) -> set[str]:
        """Which of ``memory_ids`` are ``scope``'s own agent's and visible to
        it (all of them, for a management scope)."""
        if scope.unscoped:
            return set(memory_ids)
        where, params = scope_clause(scope)
        own: set[str] = set()
        for i in range(0, len(memory_ids), 500):
            chunk = list(memory_ids[i : i + 500])
            rows = self._exec(
                cur,
                f"SELECT m.id FROM memories m WHERE {in_list('m.id', chunk)}"
                f" AND m.agent_id = ? AND {where}",
                [*chunk, scope.agent_id, *params],
            ).fetchall()
            own.update(str(r[0]) for r in rows)
        return own

    def assign_vectors(self, assignments: Mapping[str, str], vectors: VectorBatch) -> None:
        """Point memories (id -> text hash) at vectors, storing the vectors, in one transaction."""
        with self._mutate(structural=True) as cur:
            self._put_vectors(cur, vectors)
            for memory_id, text_hash in assignments.items():
                self._exec(
                    cur, "UPDATE memories SET embed_hash = ? WHERE id = ?", (text_hash, memory_id)
                )

    def set_embedding_config(
        self, config: EmbeddingConfig, *, drop_vectors_except: str | None = None
    ) -> None:
        """Record which model the palace's vectors come from."""
        with self._mutate(structural=True) as cur:
            self._exec(cur, "DELETE FROM embedding_config")
            self._exec(
                cur,
                "INSERT INTO embedding_config (id, provider, model, dimensions)"
                " VALUES (1, ?, ?, ?)",
                (config.provider, config.model, config.dimensions),
            )
            if drop_vectors_except is not None:
                self._exec(cur, "DELETE FROM embeddings WHERE model <> ?", (drop_vectors_except,))

    # -- vectors ------------------------------------------------------------------

    def embedding_config(self) -> EmbeddingConfig | None:
        """The model the palace's vectors come from, if any was recorded."""
        with self._read() as cur:
            row = self._exec(
                cur, "SELECT provider, model, dimensions FROM embedding_config WHERE id = 1"
            ).fetchone()
        return None if row is None else EmbeddingConfig(str(row[0]), str(row[1]), int(row[2]))

    def missing_vectors(self, model: str, text_hashes: Iterable[str]) -> set[str]:
        """Which of ``text_hashes`` have no stored vector for ``model``."""
        wanted = list(dict.fromkeys(text_hashes))
        present: set[str] = set()
        with self._read() as cur:
            for i in range(0, len(wanted), 500):
                chunk = wanted[i : i + 500]
                rows = self._exec(
                    cur,
                    "SELECT text_hash FROM embeddings WHERE model = ? AND "
                    + in_list("text_hash", chunk),
                    [model, *chunk],
                ).fetchall()
                present.update(str(r[0]) for r in rows)
        return set(wanted) - present

    def load_texts(self, *, upto_seq: int) -> list[tuple[int, str | None, str, str | None, str]]:
        """(seq, title, content, context, tags) of every memory up to
        ``upto_seq``, in write order, unscoped (for the warm keyword index)."""
        with self._read() as cur:
            rows = self._exec(
                cur,
                "SELECT seq, title, content, context, tags FROM memories"
                " WHERE seq <= ? ORDER BY seq",
                (upto_seq,),
            ).fetchall()
        return [(int(r[0]), r[1], str(r[2]), r[3], str(r[4])) for r in rows]

    def load_vectors(self, model: str, *, after_seq: int = 0, texts: bool = False) -> VectorTable:
        """Every memory written after ``after_seq``, in write order, with its
        vector for ``model`` (NULL when it has none), the columns scope and
        filters need and, with ``texts``, the text the keyword index reads."""
        text_columns = ", m.title, m.content, m.context, m.tags" if texts else ""
        with self._read() as cur:
            rows = self._exec(
                cur,
                "SELECT m.id, m.agent_id, m.visibility, m.group_name, m.channel, m.archived,"
                " m.superseded_by IS NOT NULL, m.type, m.store, m.category, m.created_at,"
                " e.vector, COALESCE(m.session_id, ''), m.source, m.seq, m.kind, m.project,"
                " length(m.content)"
                f"{text_columns}"
                " FROM memories m"
                " LEFT JOIN embeddings e ON e.model = ? AND e.text_hash = m.embed_hash"
                " WHERE m.seq > ? ORDER BY m.seq",
                (model, after_seq),
            ).fetchall()
        return VectorTable.from_rows(rows)

    def nearest(
        self,
        model: str,
        query: npt.NDArray[np.float32],
        scope: Scope,
        filters: RecallFilters,
        *,
        limit: int,
    ) -> list[str] | None:
        """None: this store keeps no nearest-neighbour index (a backend that
        does overrides this)."""
        return None

    def dense_rows(
        self,
        model: str,
        query: npt.NDArray[np.float32],
        scope: Scope,
        filters: RecallFilters,
        *,
        nearest: int = 0,
        ids: Sequence[str] = (),
        sessions: Sequence[str] = (),
    ) -> DenseRows | None:
        """None: this store cannot search vectors itself (a backend that can
        overrides this)."""
        return None

    # -- reads --------------------------------------------------------------------

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

    def terms_present(
        self, terms: Sequence[str], scope: Scope, *, include_archived: bool = False
    ) -> set[str]:
        """Which of ``terms`` occur in some live (or, with ``include_archived``,
        any) memory ``scope`` may see."""
        with self._read() as cur:
            return set(self._present(cur, terms, scope, include_archived=include_archived))

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

    def search_text(
        self, terms: Sequence[str], scope: Scope, filters: RecallFilters, *, limit: int
    ) -> list[TextMatch]:
        """BM25 search over title, content and tags, scope and filters applied inside."""
        if not terms:
            return []
        q = self.dialect.text_query(terms)
        s_sql, s_params = scope_clause(scope)
        f_sql, f_params = filter_clause(filters)
        sql = (
            f"SELECT {SELECT_MEMORY}, {q.score} AS score FROM {q.source}"
            f" WHERE {q.where} AND {s_sql} AND {f_sql}"
            " ORDER BY score DESC, m.created_at DESC, m.id DESC LIMIT ?"
        )
        with self._read() as cur:
            rows = self._exec(cur, sql, [*q.params, *s_params, *f_params, limit]).fetchall()
        return [TextMatch(row_to_memory(r[:-1]), float(r[-1])) for r in rows]

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
