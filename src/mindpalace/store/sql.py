"""SQL shared by every backend: the ``SqlStore`` that implements the ``Store``
protocol, and the writes of memories.

``SqlStore`` implements the protocol over a DB-API connection, on ``SqlCore``
(core.py), from mixins that each own one part of it: the reads of memories
(reads_sql.py), vectors (vectors_sql.py), the entity graph, relations,
consolidation, skills, signals, export records, recall's merged reads and the
inspector's (their ``*_sql.py`` modules). What stays here is what writes
memories: add (de-duplication, issue numbers, supersession, entity links, all
in the write's transaction), revise, archive, complete and import; erasure
(delete) is erase_sql.py's.
The queries are written once, for every backend.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any

from mindpalace.errors import ValidationError
from mindpalace.models import (
    ISSUE_NUMBER,
    Memory,
    MemoryKind,
    Mention,
    NewMemory,
    RelationMention,
    Scope,
    issue_number,
)
from mindpalace.store.base import AddResult, ImportReport
from mindpalace.store.candidates_sql import ReadFacts
from mindpalace.store.core import Cursor
from mindpalace.store.erase_sql import EraseSql
from mindpalace.store.exchange_rows import PalaceRecords
from mindpalace.store.exchange_sql import ExchangeSql
from mindpalace.store.fragments import (
    MEMORY_COLUMNS,
    SELECT_MEMORY,
    graph_time,
    in_list,
    memory_row,
    row_to_memory,
    scope_clause,
    to_epoch,
)
from mindpalace.store.graph_sql import GraphSql
from mindpalace.store.inspect_sql import InspectSql
from mindpalace.store.link_rows import EntityLookup, LinkWrites
from mindpalace.store.meta_sql import MetaSql
from mindpalace.store.reads_sql import ReadsSql
from mindpalace.store.recall_sql import RecallSql
from mindpalace.store.relations_sql import RelationsSql
from mindpalace.store.retention_sql import RetentionSql
from mindpalace.store.signals_sql import SignalStore
from mindpalace.store.skills_sql import SkillsSql
from mindpalace.store.supersede import may_replace
from mindpalace.store.upkeep_sql import UpkeepSql
from mindpalace.store.vector_rows import VectorBatch
from mindpalace.store.vectors_sql import VectorsSql

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


# Rows of memories one INSERT writes: a few dozen keep every statement far
# below any backend's limit on parameters (SQLite's was 999 before 3.32).
_ROWS_A_STATEMENT = 30


class _Waiting:
    """Memory rows of a batch not written yet (``SqlStore._insert_waiting``)."""

    def __init__(self) -> None:
        self.rows: list[tuple[Memory, str | None]] = []
        self.ids: set[str] = set()

    def add(self, memory: Memory, embed_hash: str | None) -> None:
        self.rows.append((memory, embed_hash))
        self.ids.add(memory.id)

    def clear(self) -> None:
        self.rows.clear()
        self.ids.clear()

    def __bool__(self) -> bool:
        return bool(self.rows)


class SqlStore(
    EraseSql,
    RetentionSql,
    ReadsSql,
    VectorsSql,
    GraphSql,
    RelationsSql,
    UpkeepSql,
    MetaSql,
    SkillsSql,
    SignalStore,
    ExchangeSql,
    RecallSql,
    InspectSql,
):
    """The ``Store`` protocol over SQL; subclasses bring connection and dialect.

    Each mixin defines one part; the roles a mixin names as bases (roles.py)
    come after every mixin in the method order, so a definition always wins.
    """

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

    def _insert_waiting(self, cur: Cursor, waiting: _Waiting, links: LinkWrites) -> None:
        """Insert the rows ``waiting`` holds, in order, a few dozen to a
        statement (one statement's keyword index work is flushed once, not
        once a row), record their keys in ``links``, and empty it. The keys
        are what inserting them one by one gives: assigned in order."""
        columns = ", ".join((*MEMORY_COLUMNS, "embed_hash"))
        marks = "(" + ", ".join("?" for _ in range(len(MEMORY_COLUMNS) + 1)) + ")"
        rows = waiting.rows
        for i in range(0, len(rows), _ROWS_A_STATEMENT):
            chunk = rows[i : i + _ROWS_A_STATEMENT]
            found = self._exec(
                cur,
                f"INSERT INTO memories ({columns}) VALUES {', '.join([marks] * len(chunk))}"
                " RETURNING seq, id",
                [v for memory, embed_hash in chunk for v in (*memory_row(memory), embed_hash)],
            ).fetchall()
            links.seqs.update((str(r[1]), int(r[0])) for r in found)
        self._exec_many(
            cur,
            "INSERT INTO memory_tags (memory_seq, tag) VALUES (?, ?)",
            [(links.seqs[m.id], tag) for m, _ in rows for tag in m.tags],
        )
        waiting.clear()
        # What calls this reads next (a duplicate's row, the facts a memory
        # replaces): in a pipeline, a read straight after unread writes may
        # get one of their replies.
        self._settle(cur)

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
        self._ensure_vector_key(vectors)
        with self._mutate() as cur, self._bulk(cur):
            self._put_vectors(cur, vectors)
            lookup = self._entity_lookup(cur, [m for new, _ in items for m in new.mentions])
            known = self._existing(cur, [new for new, _ in items])
            numbers: dict[str, int] = {}
            links = LinkWrites(graph_time(now))
            waiting = _Waiting()
            read = ReadFacts()
            written = [
                self._add_in(
                    cur,
                    new,
                    memory_id,
                    now,
                    scope,
                    lookup=lookup,
                    known=known,
                    numbers=numbers,
                    links=links,
                    waiting=waiting,
                    read=read,
                )
                for new, memory_id in items
            ]
            self._insert_waiting(cur, waiting, links)
            self._write_links(cur, links)  # settles: every write is answered
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
        links: LinkWrites,
        waiting: _Waiting | None = None,
        read: ReadFacts | None = None,
    ) -> tuple[str, bool]:
        """Write one memory of a batch; its id and whether it was created.
        Its mention, edge and relation rows go to ``links``, and (with
        ``waiting``) its row to ``waiting``: the caller writes both after the
        batch (``_insert_waiting``, then ``_write_links``). What reads the
        batch's earlier rows (a duplicate of one, an issue's number,
        supersession) writes what waits first; ``read``: what the batch's
        supersession checks read of older memories, kept for its later
        writes."""
        existing = known.get(_dedup_key(new))
        if waiting and (
            existing in waiting.ids or new.kind is MemoryKind.ISSUE or may_replace(new)
        ):
            self._insert_waiting(cur, waiting, links)
        if existing is not None:
            row = self._exec(cur, "SELECT archived FROM memories WHERE id = ?", (existing,))
            revived = bool(row.fetchone()[0])
            self._exec(
                cur,
                "UPDATE memories SET strength = strength + (1.0 - strength) * ?,"
                " updated_at = ?, archived = 0 WHERE id = ?",
                (_STRENGTH_BUMP, to_epoch(now), existing),
            )
            if revived:  # an existing row's flag changed: copies patch it
                self._flagged(cur, "id = ?", (existing,))
                if read is not None:
                    read.forget({existing})
            return existing, False
        new = self._numbered(cur, new, scope, numbers)
        if links and may_replace(new):
            # Supersession reads the mentions of the memories written
            # before this one, those of its own batch included.
            self._write_links(cur, links)
        replaced = self._replaced_facts(cur, new, scope, read)
        # What the write operation found it says in other words (rule 2).
        replaced += [old for old in new.restates if old not in replaced]
        memory = new.stored(memory_id, now)
        seq: int | None = None
        if waiting is None or replaced:  # supersession links the row: it is written now
            seq = self._insert(cur, memory, new.embed_hash)
        else:
            waiting.add(memory, new.embed_hash)
        known[_dedup_key(memory)] = memory_id
        entities = self._link_mentions(
            cur, memory, seq, new.mentions, now, lookup=lookup, writes=links
        )
        self._link_relations(memory_id, entities, new.relations, links)
        if seq is not None and replaced and self._supersede(cur, memory, seq, replaced, now):
            # Closing facts changes a flag of existing rows: copies patch it.
            self._flagged(cur, "superseded_by = ?", (memory_id,))
            if read is not None:
                read.forget(set(replaced))
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
        self._ensure_vector_key(vectors)
        with self._mutate() as cur:  # the old row's flag changes (``_flagged``)
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
            links = LinkWrites(graph_time(now))
            self._add_in(
                cur, new, memory_id, now, scope, lookup=lookup, known={}, numbers={}, links=links
            )
            self._write_links(cur, links)
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
            self._flagged(cur, "seq = ? OR id = ?", (seq, memory_id))
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
        with self._mutate() as cur:
            changed = int(self._exec(cur, sql, params).rowcount) > 0
            if changed:  # a flag of an existing row: copies patch it
                self._flagged(cur, "id = ?", (memory_id,))
            return changed

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
        """Delete the row and every record derived from it, as ``erase``
        does (its older versions stay); False when absent, or not ``owner``'s."""
        sql = "SELECT id FROM memories WHERE id = ?"
        params: list[Any] = [memory_id]
        if owner is not None:
            sql += " AND agent_id = ?"
            params.append(owner)
        with self._read() as cur:
            if self._exec(cur, sql, params).fetchone() is None:
                return False
        return self.erase([memory_id], sweep=None, text_hashes=(), receipt=None).memories > 0

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
        channel) is answered as an unknown id is: when the palace holds
        anything outside the scope (``ExchangeSql._holds_outside``), every
        memory a scoped import inserts gets ``new_id()``, whether its id is
        stored or not (other records of the batch that name it follow), so
        nothing the import does or stores tells whether a hidden memory has
        an id; the stored one is neither changed nor shown."""
        hashes = embed_hashes or {}
        found = mentions or {}
        stated = relations or {}
        when = now or datetime.now(timezone.utc)
        inserted = skipped = 0
        self._ensure_vector_key(vectors)
        with self._mutate() as cur, self._bulk(cur):
            self._put_vectors(cur, vectors)
            # Read inside the transaction: the caller's iterable may be a
            # stream, and its whole import is one write either way.
            batch = list(memories)
            lookup = self._entity_lookup(cur, [m for ms in found.values() for m in ms])
            known = self._existing(cur, batch)
            stored = set(self._get_all(cur, [m.id for m in batch]))
            own = self._own_visible(cur, sorted(stored), scope)
            renew = self._holds_outside(cur, scope)
            fresh = stored - own if not renew else dict.fromkeys(m.id for m in batch).keys() - own
            renamed = {key: new_id() for key in sorted(fresh)}
            seen: set[str] = set()
            resolved: dict[str, str] = {}  # id in the batch -> id stored
            links = LinkWrites(graph_time(when))
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
                    cur, memory, seq, found.get(record.id, ()), when, lookup=lookup, writes=links
                )
                self._link_relations(memory.id, entities, stated.get(record.id, ()), links)
                inserted += 1
            self._write_links(cur, links)
            if records is not None:
                self._import_records(
                    cur, records, resolved=resolved, inserted=seen, now=when, renew=renew
                )
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
