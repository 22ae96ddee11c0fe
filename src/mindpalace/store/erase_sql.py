"""Erasure in SQL: the memories a selection reaches, their older versions,
and the removal of the rows and of every record derived from them, in one
transaction, with its receipt (``Palace.erase``, ``Palace.forget(hard=True)``).

The tables an erasure touches (migrations.py has them all):

- ``memories``: the rows; with them, by cascade, ``memory_tags``,
  ``mentions``, ``memory_links``, ``skills`` and ``entity_relations``, and
  by trigger the text index (SQLite's ``memories_fts*`` tables; on
  PostgreSQL the row's own ``tsvector``, ``text_stats``, ``text_scopes``);
- ``entities`` no remaining memory mentions (``entity_aliases`` and their
  ``entity_edges`` by cascade), and the counts of the others; the
  co-occurrence edges only the erased memories supported;
- ``embeddings`` and ``part_vectors`` of the erased texts that no remaining
  memory shares (PostgreSQL's ``vec`` column and HNSW index with them);
- ``signals`` about an erased memory, recalls that returned one (their
  query likely quotes it), and every signal of an erased agent or channel;
- ``scorer_weights`` of an erased agent or channel;
- the ``context`` of conversation turns that held the start of an erased
  turn of their session;
- ``erasures``: the receipt, written in the same transaction.

What is left on disk after the transaction is the backend's to clean
(``scrub``, run in the background after the commit: SQLite merges its text
indexes and checkpoints and truncates its WAL, PostgreSQL vacuums). Until
a cleanup that began after an erasure's commit is done, the erasure's
receipt says its cleanup is pending: ``palace_meta`` keeps the log's first
such receipt (``erasure_cleanup_from``; 0 or absent: none).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Collection, Iterator, Sequence
from dataclasses import replace
from typing import Any

from mindpalace.models import Erasable, Memory, RecallFilters, Scope
from mindpalace.receipts import CLEANUP_DONE, CLEANUP_PENDING, ErasureTally, Receipt, Sweep
from mindpalace.store.core import Cursor, SqlCore
from mindpalace.store.erase_plan import (
    ErasePlan,
    co_mentions,
    contexts_cut,
    returned,
)
from mindpalace.store.fragments import (
    SELECT_MEMORY,
    filter_clause,
    from_epoch,
    in_list,
    row_to_memory,
    to_epoch,
)
from mindpalace.store.same_as_sql import NOT_APART

__all__ = ["EDGES_OF_PAIRS", "LOOKUPS", "MODELS", "EraseSql"]

_CHUNK = 500
# Up to this many erased ids, recall signals are narrowed in SQL first.
_LIKE_IDS = 50
# Links that make a memory an older version of another: ``supersedes``
# (src replaced dst) and ``merged`` (dst, a duplicate, was merged into src).
_VERSION_LINKS = ("supersedes", "merged")
_VECTOR_TABLES = ("embeddings", "part_vectors")
# palace_meta: the seq of the first receipt whose disk cleanup is pending.
_CLEANUP_FROM = "erasure_cleanup_from"

# The statements an erasure of many memories runs once per chunk of keys
# (``{}``: the chunk's placeholders): each must find its rows by index, not
# scan a table per chunk (tests/store/test_erase_plans.py EXPLAINs them on
# both backends). In the write transaction: all but ``superseded``.
LOOKUPS: dict[str, str] = {
    "erased": "SELECT seq, id, agent_id, channel, session_id, content, embed_hash"
    " FROM memories WHERE id IN ({}) ORDER BY seq",
    "superseded": f"SELECT {SELECT_MEMORY} FROM memories m WHERE m.superseded_by IN ({{}})",
    "tags": "SELECT COUNT(*) FROM memory_tags WHERE memory_seq IN ({})",
    "relations": "SELECT COUNT(*) FROM entity_relations WHERE memory_seq IN ({})",
    "skills": "SELECT COUNT(*) FROM skills WHERE memory_seq IN ({})",
    "links_from": "SELECT src_seq, dst_seq, kind FROM memory_links WHERE src_seq IN ({})",
    "links_to": "SELECT src_seq, dst_seq, kind FROM memory_links WHERE dst_seq IN ({})",
    "mentions": "SELECT memory_seq, entity_seq FROM mentions WHERE memory_seq IN ({})",
    "signals": "SELECT seq FROM signals WHERE memory_id IN ({})",
    "shared_vectors": "SELECT embed_hash, seq FROM memories WHERE embed_hash IN ({})",
    "delete": "DELETE FROM memories WHERE seq IN ({})",
}


# The co-occurrence edges of given (src, dst) pairs ({}: the pairs' rows).
EDGES_OF_PAIRS = (
    "SELECT e.src_seq, e.dst_seq, e.count FROM {} AS p"
    " JOIN entity_edges e ON e.src_seq = p.a AND e.dst_seq = p.b"
)

# The models a vector table holds, one step of its key (model, text_hash)
# from each to the next.
MODELS = (
    "WITH RECURSIVE k(model) AS (SELECT MIN(model) FROM {table} UNION ALL"
    " SELECT (SELECT MIN(t.model) FROM {table} t WHERE t.model > k.model)"
    " FROM k WHERE k.model IS NOT NULL) SELECT model FROM k WHERE model IS NOT NULL"
)


def _chunks(values: Sequence[Any]) -> Iterator[list[Any]]:
    for i in range(0, len(values), _CHUNK):
        yield list(values[i : i + _CHUNK])


def change_clause(scope: Scope, alias: str = "m") -> tuple[str, list[Any]]:
    """WHERE fragment admitting the memories ``scope`` may change
    (``scoping.check_change``): any, for the management view; its agent's
    of its channel, for a peer-facing view; else its agent's, any channel."""
    if scope.unscoped:
        return "1 = 1", []
    if scope.peer:
        return f"{alias}.agent_id = ? AND {alias}.channel = ?", [
            scope.agent_id,
            scope.channel or "",
        ]
    return f"{alias}.agent_id = ?", [scope.agent_id]


def _sweep_clause(sweep: Sweep) -> tuple[str, list[Any]]:
    parts: list[str] = []
    params: list[Any] = []
    if sweep.agent_id is not None:
        parts.append("agent_id = ?")
        params.append(sweep.agent_id)
    if sweep.channel is not None:
        parts.append("channel = ?")
        params.append(sweep.channel)
    return (" AND ".join(parts) or "1 = 0"), params


class EraseSql(SqlCore):
    """The erasure part of ``SqlStore``."""

    # -- what a selection reaches ------------------------------------------------------

    def erasable(
        self,
        scope: Scope,
        filters: RecallFilters,
        *,
        channel: str | None = None,
        entity: str | None = None,
    ) -> list[Erasable]:
        """The memories ``scope`` may change that match ``filters`` (archived
        and superseded ones as ``filters`` says), of ``channel`` ("" for
        unchannelled) and mentioning the entity named ``entity`` (a
        normalised name or alias; with the short names linked to it, and the
        entity a linked short name is the same as), in write order."""
        c_sql, c_params = change_clause(scope)
        f_sql, f_params = filter_clause(filters)
        where, params = [c_sql, f_sql], [*c_params, *f_params]
        if channel is not None:
            where.append("m.channel = ?")
            params.append(channel)
        if entity is not None:
            # The entities of that name or alias, as readers see them (the
            # entity a linked name is the same as), then every entity that
            # is one of those or linked to one.
            named = (
                "SELECT COALESCE(n.same_as, n.seq) FROM entities n WHERE n.norm = ? OR n.seq IN"
                f" (SELECT a.entity_seq FROM entity_aliases a WHERE a.alias = ? AND {NOT_APART})"
            )
            where.append(
                "m.seq IN (SELECT x.memory_seq FROM mentions x JOIN entities e"
                f" ON e.seq = x.entity_seq WHERE e.seq IN ({named}) OR e.same_as IN ({named}))"
            )
            params += [entity, entity, entity, entity]
        with self._read() as cur:
            rows = self._exec(
                cur,
                "SELECT m.id, m.agent_id, m.channel, m.title, m.content FROM memories m"
                f" WHERE {' AND '.join(where)} ORDER BY m.seq",
                params,
            ).fetchall()
        return [Erasable(str(i), str(a), c or None, t, str(x)) for i, a, c, t, x in rows]

    def versions(self, memory_ids: Collection[str], scope: Scope) -> list[Memory]:
        """The older versions of ``memory_ids`` that ``scope`` may change,
        transitively: the memories they replaced (supersession, updates) and
        the duplicates merged into them; ``memory_ids`` themselves left out."""
        c_sql, c_params = change_clause(scope)
        seen = set(memory_ids)
        found: dict[str, Memory] = {}
        frontier = sorted(seen)
        kinds = in_list("l.kind", _VERSION_LINKS)
        with self._read() as cur:
            while frontier:
                rows: list[Any] = []
                for chunk in _chunks(frontier):
                    marks, given = self.dialect.marks(chunk)
                    rows += self._exec(
                        cur,
                        LOOKUPS["superseded"].format(marks) + f" AND {c_sql}",
                        [*given, *c_params],
                    ).fetchall()
                    rows += self._exec(
                        cur,
                        f"SELECT {SELECT_MEMORY} FROM memory_links l"
                        " JOIN memories s ON s.seq = l.src_seq JOIN memories m ON m.seq = l.dst_seq"
                        f" WHERE s.id IN ({marks}) AND {kinds} AND {c_sql}",
                        [*given, *_VERSION_LINKS, *c_params],
                    ).fetchall()
                frontier = []
                for row in rows:
                    memory = row_to_memory(row)
                    if memory.id not in seen:
                        seen.add(memory.id)
                        found[memory.id] = memory
                        frontier.append(memory.id)
        return sorted(found.values(), key=lambda m: (m.created_at, m.id))

    # -- counting and erasing -----------------------------------------------------------

    def erasure_tally(
        self, memory_ids: Sequence[str], *, sweep: Sweep | None, text_hashes: Collection[str]
    ) -> ErasureTally:
        """What ``erase`` would remove, counted without writing."""
        with self._read() as cur:
            plan = self._plan(cur, memory_ids, sweep, text_hashes)
        return self._tally(plan)

    def erase(
        self,
        memory_ids: Sequence[str],
        *,
        sweep: Sweep | None,
        text_hashes: Collection[str],
        receipt: Receipt | None,
    ) -> ErasureTally:
        """Delete the memories ``memory_ids`` and every record derived from
        them (the module's docstring lists them), every signal and scorer
        weight ``sweep`` names, and the vectors of ``text_hashes`` no
        remaining memory uses, in one transaction that also writes
        ``receipt`` (its counts those removed; ``versions`` as given)."""
        with self._mutate(structural=True) as cur:
            self._erasure_started(cur)
            plan = self._plan(cur, memory_ids, sweep, text_hashes)
            self._apply(cur, plan, sweep)
            tally = self._tally(plan)
            if receipt is not None:
                tally = replace(tally, versions=receipt.counts.versions)
                self._record_erasure(cur, receipt, tally)
        return tally

    def scrub(self) -> bool:
        """After erasures, outside their transactions (in the background,
        erase_cleanup.py): make what the deleted rows held unreadable on
        disk as far as the backend can (``_clean_disk``), then mark every
        erasure committed before it began as cleaned up; False when it
        could not finish now (those stay pending)."""
        with self._read() as cur:
            row = self._exec(cur, "SELECT MAX(seq) FROM erasures").fetchone()
        through = int(row[0] or 0) if row is not None else 0
        if not self._clean_disk():
            return False
        with self._write() as cur:
            # Erasures committed since it began wait for the next cleanup.
            self._exec(
                cur,
                "UPDATE palace_meta SET value ="
                " COALESCE((SELECT MIN(seq) FROM erasures WHERE seq > ?), 0) WHERE key = ?",
                (through, _CLEANUP_FROM),
            )
        return True

    def _clean_disk(self) -> bool:
        """The backend's cleanup of deleted rows on disk (nothing to do by
        default); False when it could not finish now."""
        return True

    def _erasure_started(self, cur: Cursor) -> None:
        """Inside an erasure's transaction, first: what the backend notes
        for writers waiting on it (nothing by default)."""

    def _erased_pending(self, cur: Cursor, *, after: int = 0) -> tuple[ErasureTally, int]:
        """What the erasures whose cleanup is pending (those logged after
        ``after`` of them) removed, summed over their receipts, and the
        newest one's place in the log (a backend's cleanup may choose by
        them)."""
        rows = self._exec(
            cur,
            "SELECT r.seq, r.counts FROM erasures r, palace_meta m"
            " WHERE m.key = ? AND m.value > 0 AND r.seq >= m.value AND r.seq > ?",
            (_CLEANUP_FROM, after),
        ).fetchall()
        total: Counter[str] = Counter()
        for _, counts in rows:
            total.update({k: int(v) for k, v in json.loads(counts).items()})
        newest = max((int(seq) for seq, _ in rows), default=after)
        return ErasureTally.from_dict(dict(total)), newest

    def _delete_memories(self, cur: Cursor, seqs: Sequence[int]) -> None:
        """Delete these memories, a chunk at a time (their triggers and
        cascades keep the rest; PostgreSQL keeps its keyword records by
        set: pg_erase.py)."""
        for chunk in _chunks(seqs):
            marks, given = self.dialect.marks(chunk)
            self._exec(cur, LOOKUPS["delete"].format(marks), given)

    def _after_erase(self, cur: Cursor) -> None:
        """Inside the erasure's transaction, once the rows are gone: the
        backend's own upkeep of what it derives (nothing by default)."""

    @staticmethod
    def _tally(plan: ErasePlan) -> ErasureTally:
        return ErasureTally(
            memories=len(plan.seqs),
            tags=plan.tags,
            vectors=plan.vectors,
            part_vectors=plan.part_vectors,
            mentions=plan.mentions,
            entities=len(plan.orphans),
            entity_edges=plan.edges_removed(),
            relations=plan.relations,
            links=plan.links,
            skills=plan.skills,
            signals=len(plan.signals),
            recall_signals=len(plan.recalls),
            scorer_weights=plan.scorers,
            contexts=len(plan.contexts),
        )

    def _count(
        self, cur: Cursor, sql: str, values: Sequence[Any], params: Sequence[Any] = ()
    ) -> int:
        """The sum of ``sql``'s ``COUNT(*)`` over chunks of ``values`` (the
        ``{}`` in ``sql`` is each chunk's placeholders, after ``params``)."""
        total = 0
        for chunk in _chunks(values):
            marks, given = self.dialect.marks(chunk)
            total += int(self._exec(cur, sql.format(marks), [*params, *given]).fetchone()[0])
        return total

    def _rows(self, cur: Cursor, sql: str, values: Sequence[Any]) -> list[Any]:
        """``sql``'s rows over chunks of ``values`` (``{}`` as in ``_count``)."""
        rows: list[Any] = []
        for chunk in _chunks(values):
            marks, given = self.dialect.marks(chunk)
            rows += self._exec(cur, sql.format(marks), given).fetchall()
        return rows

    def _plan(
        self,
        cur: Cursor,
        memory_ids: Sequence[str],
        sweep: Sweep | None,
        text_hashes: Collection[str],
    ) -> ErasePlan:
        plan = ErasePlan()
        found = self._rows(cur, LOOKUPS["erased"], sorted(set(memory_ids)))
        plan.seqs = [int(r[0]) for r in found]
        plan.ids = [str(r[1]) for r in found]
        seqs, erased = plan.seqs, set(plan.seqs)
        plan.tags = self._count(cur, LOOKUPS["tags"], seqs)
        plan.relations = self._count(cur, LOOKUPS["relations"], seqs)
        plan.skills = self._count(cur, LOOKUPS["skills"], seqs)
        links = {
            (int(a), int(b), str(k))
            for lookup in ("links_from", "links_to")
            for a, b, k in self._rows(cur, LOOKUPS[lookup], seqs)
        }
        plan.links = len(links)
        self._plan_graph(cur, plan)
        self._plan_signals(cur, plan, sweep)
        self._plan_contexts(cur, plan, found)
        hashes = {str(r[6]) for r in found if r[6]} | set(text_hashes)
        still = {
            str(h)
            for h, seq in self._rows(cur, LOOKUPS["shared_vectors"], sorted(hashes))
            if int(seq) not in erased
        }
        plan.vector_hashes = sorted(hashes - still)
        plan.vectors, plan.part_vectors = (
            sum(
                self._count(
                    cur,
                    f"SELECT COUNT(*) FROM {table} WHERE model = ? AND text_hash IN ({{}})",
                    plan.vector_hashes,
                    [model],
                )
                for model in self._models(cur, table)
            )
            for table in _VECTOR_TABLES
        )
        return plan

    def _models(self, cur: Cursor, table: str) -> list[str]:
        """The models ``table`` holds vectors of (one, or two while a
        re-embedding runs): each lookup by text hash then uses the key
        (model, text_hash), not a scan. Found by stepping the key from one
        model to the next (``SELECT DISTINCT`` read every row: 1.4 s at a
        million vectors on PostgreSQL)."""
        rows = self._exec(cur, MODELS.format(table=table)).fetchall()
        return [str(r[0]) for r in rows]

    def _plan_graph(self, cur: Cursor, plan: ErasePlan) -> None:
        """Mentions, entities left without one, edges left without support.

        Only the edges an erased memory supported are read (each pair of
        entities it mentions, probed by key), not every edge of each entity
        it mentions: a name other memories share has edges an erasure of
        part of its scope leaves alone (erasing a session of 40 memories
        read five times as long that way at 100,000 memories)."""
        pairs = [(int(m), int(e)) for m, e in self._rows(cur, LOOKUPS["mentions"], plan.seqs)]
        plan.mentions = len(pairs)
        lost = Counter(e for _, e in pairs)
        for entity, total in self._rows(
            cur,
            "SELECT entity_seq, COUNT(*) FROM mentions WHERE entity_seq IN ({})"
            " GROUP BY entity_seq",
            sorted(lost),
        ):
            plan.entities[int(entity)] = int(total) - lost[int(entity)]
        orphans = plan.orphans
        supported = co_mentions(pairs)
        # Each erased memory added one to its pairs' counts (graph_sql.py).
        plan.edges = {
            (int(a), int(b)): int(n) - supported[(int(a), int(b))]
            for a, b, n in self._pair_rows(cur, EDGES_OF_PAIRS, sorted(supported))
        }
        # An entity that goes takes its edges along. Those it shares with an
        # erased memory's other names are known now; any other (one an
        # import wrote, say) is read, once the counts say there is one.
        gone = set(orphans)
        for end, column in enumerate(("src_seq", "dst_seq")):
            known = sum(1 for pair in plan.edges if pair[end] in gone)
            sql = f"SELECT {{}} FROM entity_edges WHERE {column} IN ({{{{}}}})"
            if self._count(cur, sql.format("COUNT(*)"), orphans) == known:
                continue
            for a, b, n in self._rows(cur, sql.format("src_seq, dst_seq, count"), orphans):
                plan.edges.setdefault((int(a), int(b)), int(n))

    def _pair_rows(self, cur: Cursor, sql: str, pairs: Sequence[tuple[int, int]]) -> list[Any]:
        """``sql``'s rows over chunks of ``pairs`` (``{}``: a chunk's rows,
        ``dialect.pair_rows``)."""
        rows: list[Any] = []
        for start in range(0, len(pairs), _CHUNK // 2):
            table, given = self.dialect.pair_rows(pairs[start : start + _CHUNK // 2])
            rows += self._exec(cur, sql.format(table), given).fetchall()
        return rows

    def _plan_signals(self, cur: Cursor, plan: ErasePlan, sweep: Sweep | None) -> None:
        """Signals about the memories, of the swept scope, and recalls that
        returned an erased memory; the swept scope's scorer weights."""
        gone = {int(r[0]) for r in self._rows(cur, LOOKUPS["signals"], plan.ids)}
        if sweep is not None:
            where, params = _sweep_clause(sweep)
            gone |= {
                int(r[0])
                for r in self._exec(
                    cur, f"SELECT seq FROM signals WHERE {where}", params
                ).fetchall()
            }
            plan.scorers = int(
                self._exec(
                    cur, f"SELECT COUNT(*) FROM scorer_weights WHERE {where}", params
                ).fetchone()[0]
            )
        erased_ids = set(plan.ids)
        # A few ids: the database keeps only the recalls whose data names one
        # (LIKE, a superset: "_" matches any character); the JSON decides.
        named = sorted(erased_ids) if len(erased_ids) <= _LIKE_IDS else []
        like = " OR ".join("data LIKE ?" for _ in named)
        last = 0
        while erased_ids:  # every recall, whoever made it: shared memories are anyone's hits
            rows = self._exec(
                cur,
                "SELECT seq, data FROM signals WHERE kind = 'recall' AND seq > ?"
                + (f" AND ({like})" if like else "")
                + " ORDER BY seq LIMIT 1000",
                [last, *(f"%{i}%" for i in named)],
            ).fetchall()
            if not rows:
                break
            for seq, data in rows:
                if int(seq) not in gone and returned(str(data), erased_ids):
                    plan.recalls.append(int(seq))
            last = int(rows[-1][0])
        plan.signals = sorted(gone | set(plan.recalls))

    def _plan_contexts(self, cur: Cursor, plan: ErasePlan, found: Sequence[Any]) -> None:
        """Kept turns of an erased turn's session whose context opens with it."""
        erased = set(plan.seqs)
        texts: dict[tuple[str, str], dict[str, list[str]]] = {}
        for _, _, agent, channel, session, content, _ in found:
            if session:
                by_session = texts.setdefault((str(agent), str(channel)), {})
                by_session.setdefault(str(session), []).append(str(content))
        for (agent, channel), sessions in sorted(texts.items()):
            rows = [
                r
                for chunk in _chunks(sorted(sessions))
                for r in self._exec(
                    cur,
                    "SELECT seq, session_id, context FROM memories WHERE agent_id = ?"
                    f" AND channel = ? AND context IS NOT NULL AND {in_list('session_id', chunk)}",
                    [agent, channel, *chunk],
                ).fetchall()
            ]
            kept = [(int(s), str(k), str(c)) for s, k, c in rows if int(s) not in erased]
            plan.contexts.update(contexts_cut(kept, sessions))

    def _apply(self, cur: Cursor, plan: ErasePlan, sweep: Sweep | None) -> None:
        for chunk in _chunks(plan.signals):
            marks, given = self.dialect.marks(chunk)
            self._exec(cur, f"DELETE FROM signals WHERE seq IN ({marks})", given)
        if sweep is not None:
            where, params = _sweep_clause(sweep)
            self._exec(cur, f"DELETE FROM scorer_weights WHERE {where}", params)
        self._exec_many(
            cur,
            "UPDATE memories SET context = ? WHERE seq = ?",
            [(c, s) for s, c in sorted(plan.contexts.items())],
        )
        self._delete_memories(cur, plan.seqs)
        orphans = plan.orphans
        for chunk in _chunks(orphans):
            marks, given = self.dialect.marks(chunk)
            self._exec(cur, f"DELETE FROM entities WHERE seq IN ({marks})", given)
        self._exec_many(
            cur,
            "UPDATE entities SET mentions = ? WHERE seq = ?",
            [(n, e) for e, n in sorted(plan.entities.items()) if n > 0],
        )
        gone = set(orphans)
        self._exec_many(
            cur,
            "DELETE FROM entity_edges WHERE src_seq = ? AND dst_seq = ?",
            [(a, b) for (a, b), n in sorted(plan.edges.items()) if n <= 0 and not {a, b} & gone],
        )
        self._exec_many(
            cur,
            "UPDATE entity_edges SET count = ? WHERE src_seq = ? AND dst_seq = ?",
            [(n, a, b) for (a, b), n in sorted(plan.edges.items()) if n > 0 and not {a, b} & gone],
        )
        for table in _VECTOR_TABLES:
            for model in self._models(cur, table) if plan.vector_hashes else []:
                for chunk in _chunks(plan.vector_hashes):
                    marks, given = self.dialect.marks(chunk)
                    self._exec(
                        cur,
                        f"DELETE FROM {table} WHERE model = ? AND text_hash IN ({marks})",
                        [model, *given],
                    )
        self._after_erase(cur)

    # -- the erasure log ----------------------------------------------------------------

    def _record_erasure(self, cur: Cursor, receipt: Receipt, tally: ErasureTally) -> None:
        self._exec(
            cur,
            "INSERT INTO erasures (id, at, agent_id, channel, selection, counts, digest)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                receipt.id,
                to_epoch(receipt.at),
                receipt.agent_id,
                receipt.channel or "",
                json.dumps(dict(receipt.selection), ensure_ascii=False, sort_keys=True),
                json.dumps(tally.to_dict(), sort_keys=True),
                receipt.digest,
            ),
        )
        row = self._exec(cur, "SELECT seq FROM erasures WHERE id = ?", (receipt.id,)).fetchone()
        # The first pending receipt stays the first; none pending: this one.
        self._exec(
            cur,
            "INSERT INTO palace_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE"
            " SET value = CASE WHEN palace_meta.value > 0 THEN palace_meta.value"
            " ELSE excluded.value END",
            (_CLEANUP_FROM, int(row[0])),
        )

    def erasures(self, scope: Scope, *, limit: int = 100) -> list[Receipt]:
        """The receipts of the erasures ``scope``'s agent made (of its
        channel, for a peer-facing view; every one for the management
        view), newest first."""
        where, params = change_clause(scope, "r")
        with self._read() as cur:
            rows = self._exec(
                cur,
                "SELECT r.id, r.at, r.agent_id, r.channel, r.selection, r.counts, r.digest,"
                f" r.seq FROM erasures r WHERE {where} ORDER BY r.seq DESC LIMIT ?",
                [*params, limit],
            ).fetchall()
            mark = self._exec(
                cur, "SELECT value FROM palace_meta WHERE key = ?", (_CLEANUP_FROM,)
            ).fetchone()
        pending_from = int(mark[0]) if mark is not None else 0
        out: list[Receipt] = []
        for receipt_id, at, agent, channel, selection, counts, digest, seq in rows:
            pending = 0 < pending_from <= int(seq)
            when = from_epoch(at)
            assert when is not None
            out.append(
                Receipt(
                    id=str(receipt_id),
                    at=when,
                    agent_id=str(agent),
                    channel=channel or None,
                    selection=json.loads(selection),
                    counts=ErasureTally.from_dict(json.loads(counts)),
                    digest=str(digest),
                    cleanup=CLEANUP_PENDING if pending else CLEANUP_DONE,
                )
            )
        return out
