"""The entity graph in SQL: linking mentions on write, and the reads that
propagation, supersession and consolidation need.

Entities belong to the scope of the memories that mention them (agent,
visibility, group, channel): a write links only inside its own scope, and
every read applies the caller's scope to the entities or memories it
touches, so no traversal can step into a scope the caller cannot see.
Entities of different visible scopes that share a normalised name are one
node to the reader (matched by ``norm``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import combinations

from mindpalace.ids import IdGenerator
from mindpalace.models import (
    Entity,
    EntityLink,
    Memory,
    MemoryType,
    Mention,
    NewMemory,
    RecallFilters,
    Scope,
    Visibility,
)
from mindpalace.store.candidates_sql import CandidatesSql, ReadFacts
from mindpalace.store.core import Cursor
from mindpalace.store.fragments import (
    SELECT_MEMORY,
    filter_clause,
    graph_time,
    in_list,
    row_to_memory,
    scope_clause,
    to_epoch,
)
from mindpalace.store.graph_rows import heaviest
from mindpalace.store.link_rows import EntityLookup, LinkWrites
from mindpalace.store.same_as_sql import NOT_APART, answering
from mindpalace.store.supersede import (
    FACT_CATEGORIES,
    may_replace,
    replaced_facts,
)

__all__ = [
    "EDGE_STEP",
    "MAX_EDGE_MENTIONS",
    "EntityRef",
    "GraphSql",
]

# A new co-occurrence edge starts at this weight; each further co-occurrence
# moves it this share of the way to 1 (consolidation strengthens and decays).
EDGE_STEP = 0.25
# Only a memory's first mentions make edges: 12 names give 66 pairs at most.
MAX_EDGE_MENTIONS = 12
# Entities whose members one statement lists (each probe carries the scope's
# and the filters' parameters).
_MEMBER_PROBES = 50

_ENTITY_COLUMNS = (
    "e.id, e.name, e.norm, e.type, e.kind, e.mentions, e.agent_id, e.visibility,"
    " e.group_name, e.channel, (SELECT r.norm FROM entities r WHERE r.seq = e.same_as)"
)
# A mention's entity as readers see it: the entity its name is the same as,
# if linked (``same_as_sql``), else its own (``x`` the mention).
_ROOT_OF_MENTION = (
    "JOIN entities e0 ON e0.seq = x.entity_seq"
    " JOIN entities e ON e.seq = COALESCE(e0.same_as, e0.seq)"
)


@dataclass(frozen=True, slots=True)
class EntityRef:
    """An entity as a reader sees it: its key, display name and type."""

    norm: str
    name: str
    type: MemoryType


def _entity(
    row: Sequence[object], aliases: tuple[str, ...] = (), linked: Sequence[EntityLink] = ()
) -> Entity:
    mentions = int(str(row[5])) + sum(link.mentions for link in linked)
    return Entity(
        id=str(row[0]),
        name=str(row[1]),
        norm=str(row[2]),
        type=MemoryType(str(row[3])),
        kind=str(row[4]),
        mentions=mentions,
        agent_id=str(row[6]),
        visibility=Visibility(str(row[7])),
        group=str(row[8]) or None,
        channel=str(row[9]) or None,
        aliases=aliases,
        linked=tuple(linked),
        same_as=None if row[10] is None else str(row[10]),
    )


class GraphSql(CandidatesSql):
    """Entity linking and graph reads, written once for every backend."""

    _entity_ids = IdGenerator("ent_")
    # (scope, per_entity, key) -> (generation, neighbours): see co_occurring
    _edge_cache: dict[tuple[Scope, int, str], tuple[int, tuple[tuple[str, float], ...]]]

    # -- writing (inside the caller's transaction) ----------------------------------

    def _entity_lookup(self, cur: Cursor, mentions: Iterable[Mention]) -> EntityLookup:
        """Every entity (and alias) of any scope that ``mentions`` may resolve
        to, in two queries: a batch links against it instead of asking once
        per mention, which costs a round trip each on a server."""
        lookup = EntityLookup()
        norms = sorted({m.norm for m in mentions})
        for i in range(0, len(norms), 500):
            chunk = norms[i : i + 500]
            for row in self._exec(
                cur,
                "SELECT seq, type, agent_id, visibility, group_name, channel, norm"
                f" FROM entities WHERE {in_list('norm', chunk)}",
                chunk,
            ).fetchall():
                lookup.add(tuple(row[2:6]), str(row[6]), int(row[0]), str(row[1]))
            for row in self._exec(
                cur,
                "SELECT e.seq, e.type, e.agent_id, e.visibility, e.group_name, e.channel, a.alias,"
                " e.norm FROM entity_aliases a JOIN entities e ON e.seq = a.entity_seq"
                f" WHERE {in_list('a.alias', chunk)}",
                chunk,
            ).fetchall():
                lookup.add_alias(
                    tuple(row[2:6]), str(row[6]), int(row[0]), str(row[1]), str(row[7])
                )
        return lookup

    def _link_mentions(
        self,
        cur: Cursor,
        memory: Memory,
        seq: int | None,
        mentions: Sequence[Mention],
        now: datetime,
        *,
        lookup: EntityLookup | None = None,
        writes: LinkWrites | None = None,
    ) -> dict[str, int]:
        """Resolve ``mentions`` to entities of the memory's scope (creating
        what is new), record them, and strengthen co-occurrence edges;
        returns the entity each mention key resolved to. ``lookup`` (from
        ``_entity_lookup`` over every mention of a batch, in this
        transaction) saves the per-call lookup queries; with ``writes``, the
        mention, count and edge rows are collected there for
        ``_write_links`` (one statement each for a whole batch) instead of
        written now, and ``seq`` (the memory's key) may be None while the
        memory's row waits to be written too. New entities are written at
        once (their keys are needed)."""
        resolved: dict[str, int] = {}
        if not mentions:
            return resolved
        if lookup is None:
            lookup = self._entity_lookup(cur, mentions)
        pending = LinkWrites(graph_time(now)) if writes is None else writes
        if seq is not None:
            pending.seqs[memory.id] = seq
        part = (memory.agent_id, memory.visibility.value, memory.group or "", memory.channel or "")
        at = graph_time(now)
        linked: list[int] = []
        for mention in mentions:
            entity_seq = lookup.find(part, mention.norm)
            if entity_seq is not None and lookup.first_name_of(part, mention):
                entity_seq = None
            if entity_seq is None:
                row = self._exec(
                    cur,
                    "INSERT INTO entities (id, agent_id, visibility, group_name, channel, name,"
                    " norm, type, kind, mentions, created_at, updated_at)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?) RETURNING seq",
                    (
                        self._entity_ids.next(now),
                        *part,
                        mention.surface,
                        mention.norm,
                        mention.type.value,
                        mention.kind,
                        at,
                        at,
                    ),
                ).fetchone()
                entity_seq = int(row[0])
                lookup.add(part, mention.norm, entity_seq, mention.type.value)
                self._exec_many(
                    cur,
                    "INSERT INTO entity_aliases (entity_seq, alias) VALUES (?, ?)"
                    " ON CONFLICT (alias, entity_seq) DO NOTHING",
                    [(entity_seq, alias) for alias in mention.aliases],
                )
                for alias in mention.aliases:
                    lookup.add_alias(part, alias, entity_seq, mention.type.value, mention.norm)
                self._first_name_rule(cur, part, entity_seq, mention)
            resolved[mention.norm] = entity_seq
            if entity_seq in linked:
                continue
            linked.append(entity_seq)
            # Evidence of a type settles an unknown one; a known type stays.
            if (
                mention.type is not MemoryType.UNKNOWN
                and lookup.types[entity_seq] == MemoryType.UNKNOWN.value
            ):
                lookup.types[entity_seq] = mention.type.value
            pending.counted(entity_seq, lookup.types[entity_seq])
            fact = int(memory.category in FACT_CATEGORIES)
            pending.mentions.append((memory.id, entity_seq, mention.surface, fact))
        pending.edges += combinations(sorted(linked[:MAX_EDGE_MENTIONS]), 2)
        if writes is None:
            self._write_links(cur, pending)
        return resolved

    def _write_links(self, cur: Cursor, writes: LinkWrites) -> None:
        """Write the rows ``writes`` collected, one statement each, and empty
        it. What is stored is what writing each memory's rows in turn
        stores: counts add up, and an edge met several times is
        strengthened once per meeting, in order (the same float steps)."""
        at = writes.at
        self._exec_many(
            cur,
            "UPDATE entities SET mentions = mentions + ?, updated_at = ?, type = ? WHERE seq = ?",
            [(n, at, writes.types[e], e) for e, n in writes.counts.items()],
        )
        self._exec_many(
            cur,
            "INSERT INTO mentions (memory_seq, entity_seq, surface, fact) VALUES (?, ?, ?, ?)",
            [(writes.seqs[m], e, surface, fact) for m, e, surface, fact in writes.mentions],
        )
        self._exec_many(
            cur,
            "INSERT INTO entity_edges (src_seq, dst_seq, count, weight, updated_at)"
            " VALUES (?, ?, 1, ?, ?) ON CONFLICT (src_seq, dst_seq) DO UPDATE SET"
            " count = entity_edges.count + 1,"
            " weight = entity_edges.weight + (1.0 - entity_edges.weight) * ?,"
            " updated_at = ?",
            [(a, b, EDGE_STEP, at, EDGE_STEP, at) for a, b in writes.edges],
        )
        self._exec_many(
            cur,
            "INSERT INTO entity_relations (memory_seq, src_seq, dst_seq, kind, sentence)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT (memory_seq, src_seq, dst_seq, kind)"
            " DO NOTHING",
            [(writes.seqs[m], *rest) for m, *rest in writes.relations],
        )
        writes.clear()
        self._settle(cur)  # a read may follow (the facts a memory replaces)

    def _supersede(
        self, cur: Cursor, memory: Memory, seq: int, ids: Iterable[str], now: datetime
    ) -> int:
        """Close the current facts ``ids`` of the memory's own scope in favour
        of ``memory``; returns how many were closed (history is kept)."""
        closed = 0
        at = to_epoch(memory.valid_from or now)
        for old_id in ids:
            row = self._exec(
                cur,
                "SELECT seq FROM memories WHERE id = ? AND agent_id = ? AND visibility = ?"
                " AND group_name = ? AND channel = ? AND superseded_by IS NULL AND id <> ?",
                (
                    old_id,
                    memory.agent_id,
                    memory.visibility.value,
                    memory.group or "",
                    memory.channel or "",
                    memory.id,
                ),
            ).fetchone()
            if row is None:  # gone, or replaced meanwhile by another writer
                continue
            self._exec(
                cur,
                "UPDATE memories SET superseded_by = ?, valid_to = COALESCE(valid_to, ?),"
                " updated_at = ? WHERE seq = ?",
                (memory.id, at, to_epoch(now), row[0]),
            )
            self._exec(
                cur,
                "INSERT INTO memory_links (src_seq, dst_seq, kind, weight, created_at, updated_at)"
                " VALUES (?, ?, 'supersedes', 1.0, ?, ?)"
                " ON CONFLICT (src_seq, dst_seq, kind) DO NOTHING",
                (seq, row[0], to_epoch(now), to_epoch(now)),
            )
            closed += 1
        return closed

    def _mentioned_entities(self, cur: Cursor, memory_id: str) -> list[int]:
        rows = self._exec(
            cur,
            "SELECT x.entity_seq FROM mentions x JOIN memories m ON m.seq = x.memory_seq"
            " WHERE m.id = ?",
            (memory_id,),
        ).fetchall()
        return [int(r[0]) for r in rows]

    def _drop_orphan_entities(self, cur: Cursor, seqs: Sequence[int]) -> None:
        """After a hard delete: an entity no memory mentions any more goes too
        (its name came from the deleted text); others lose one mention."""
        for seq in seqs:
            left = self._exec(
                cur, "SELECT COUNT(*) FROM mentions WHERE entity_seq = ?", (seq,)
            ).fetchone()
            if int(left[0]) == 0:
                self._exec(cur, "DELETE FROM entities WHERE seq = ?", (seq,))
            else:
                self._exec(
                    cur, "UPDATE entities SET mentions = ? WHERE seq = ?", (int(left[0]), seq)
                )

    # -- reading --------------------------------------------------------------------

    def entities(
        self,
        scope: Scope,
        *,
        query: str | None = None,
        types: Sequence[MemoryType] = (),
        limit: int = 50,
        offset: int = 0,
    ) -> list[Entity]:
        """Visible entities, most mentioned first; ``query`` matches names
        and aliases by substring (case-insensitive)."""
        s_sql, s_params = scope_clause(scope, "e")
        # A short name linked to a fuller one is listed with it (``linked``),
        # its mentions counted there.
        where = [s_sql, "e.same_as IS NULL"]
        params: list[object] = [*s_params]
        if types:
            where.append(in_list("e.type", types))
            params += [t.value for t in types]
        if query:
            needle = f"%{query.casefold().strip()}%"
            where.append(
                "(e.norm LIKE ? OR EXISTS (SELECT 1 FROM entity_aliases a"
                " WHERE a.entity_seq = e.seq AND a.alias LIKE ?) OR EXISTS (SELECT 1"
                " FROM entities s WHERE s.same_as = e.seq AND s.norm LIKE ?))"
            )
            params += [needle, needle, needle]
        total = (
            "e.mentions + COALESCE((SELECT SUM(s.mentions) FROM entities s"
            " WHERE s.same_as = e.seq), 0)"
        )
        with self._read() as cur:
            rows = self._exec(
                cur,
                f"SELECT {_ENTITY_COLUMNS}, e.seq, {total} AS total FROM entities e"
                f" WHERE {' AND '.join(where)}"
                " ORDER BY total DESC, e.norm, e.seq LIMIT ? OFFSET ?",
                [*params, limit, offset],
            ).fetchall()
            seqs = [int(r[11]) for r in rows]
            aliases = self._aliases(cur, seqs)
            linked = self._linked_to(cur, seqs)
        return [_entity(r, aliases.get(int(r[11]), ()), linked.get(int(r[11]), ())) for r in rows]

    def _aliases(self, cur: Cursor, seqs: Sequence[int]) -> dict[int, tuple[str, ...]]:
        out: dict[int, list[str]] = defaultdict(list)
        for i in range(0, len(seqs), 500):
            chunk = list(seqs[i : i + 500])
            for seq, alias in self._exec(
                cur,
                "SELECT entity_seq, alias FROM entity_aliases WHERE "
                + in_list("entity_seq", chunk)
                + " ORDER BY alias",
                chunk,
            ).fetchall():
                out[int(seq)].append(str(alias))
        return {k: tuple(v) for k, v in out.items()}

    def entities_of(self, memory_ids: Sequence[str], scope: Scope) -> dict[str, list[Entity]]:
        """The entities each visible memory of ``memory_ids`` mentions."""
        s_sql, s_params = scope_clause(scope)
        out: dict[str, list[Entity]] = defaultdict(list)
        with self._read() as cur:
            for i in range(0, len(memory_ids), 500):
                chunk = list(memory_ids[i : i + 500])
                rows = self._exec(
                    cur,
                    f"SELECT DISTINCT m.id, {_ENTITY_COLUMNS}, e.seq FROM mentions x"
                    f" JOIN memories m ON m.seq = x.memory_seq {_ROOT_OF_MENTION}"
                    f" WHERE {in_list('m.id', chunk)} AND {s_sql} ORDER BY m.id, e.seq",
                    [*chunk, *s_params],
                ).fetchall()
                for row in rows:
                    out[str(row[0])].append(_entity(row[1:12]))
        return dict(out)

    def resolve_names(self, norms: Sequence[str], scope: Scope) -> dict[str, set[str]]:
        """For each name, the visible entity keys it names (itself, or the
        entities it is an alias of)."""
        if not norms:
            return {}
        s_sql, s_params = scope_clause(scope, "e")
        out: dict[str, set[str]] = defaultdict(set)
        with self._read() as cur:
            for norm, key in self._exec(
                cur,
                "SELECT DISTINCT e.norm, COALESCE(r.norm, e.norm) FROM entities e"
                " LEFT JOIN entities r ON r.seq = e.same_as"
                f" WHERE {in_list('e.norm', norms)} AND {s_sql}",
                [*norms, *s_params],
            ).fetchall():
                out[str(norm)].add(str(key))
            for alias, norm in self._aliased(cur, norms, scope):
                out[alias].add(norm)
        return dict(out)

    def _aliased(self, cur: Cursor, norms: Sequence[str], scope: Scope) -> list[tuple[str, str]]:
        """(alias, entity key) of each visible entity that answers to one of
        ``norms`` as an alias (the key of the entity it is the same as, if
        linked), unless kept apart from the entity of that name."""
        s_sql, s_params = scope_clause(scope, "e")
        rows = self._exec(
            cur,
            "SELECT DISTINCT a.alias, COALESCE(r.norm, e.norm) FROM entity_aliases a"
            " JOIN entities e ON e.seq = a.entity_seq LEFT JOIN entities r ON r.seq = e.same_as"
            f" WHERE {in_list('a.alias', norms)} AND {s_sql} AND {NOT_APART}",
            [*norms, *s_params],
        ).fetchall()
        return [(str(alias), str(norm)) for alias, norm in rows]

    def entity_members(
        self,
        norms: Sequence[str],
        scope: Scope,
        filters: RecallFilters,
        *,
        max_degree: int,
    ) -> dict[str, tuple[int, list[str]]]:
        """For each entity key: how many visible memories (under ``filters``)
        mention it, and their ids when that is at most ``max_degree`` (a hub's
        members are not listed: they carry no information).

        A hub's degree is reported as ``max_degree + 1``: counting every
        mention of a speaker named in thousands of memories cost most of a
        recall at 100k memories, and nothing downstream needs more than
        "above the cap" (``retrieval/propagate.py`` skips hubs).
        """
        if not norms:
            return {}
        wanted = list(dict.fromkeys(norms))
        found: dict[str, list[str]] = defaultdict(list)
        with self._read() as cur:
            # An entity lives in the scope of the memories mentioning it, so
            # the visible entities of each key are found first (itself, and
            # the short names linked to it): other scopes' entities of the
            # same name, and their mentions, are never read.
            e_sql, e_params = scope_clause(scope, "e")
            a_sql, a_params = answering("e", wanted)
            seqs: dict[str, list[int]] = defaultdict(list)
            for norm, seq in self._exec(
                cur,
                "SELECT COALESCE(er.norm, e.norm), e.seq FROM entities e"
                f" LEFT JOIN entities er ON er.seq = e.same_as WHERE {a_sql} AND {e_sql}",
                [*a_params, *e_params],
            ).fetchall():
                seqs[str(norm)].append(int(seq))
            probes = [(norm, sorted(seqs[norm])) for norm in wanted if seqs.get(norm)]
            limit = max_degree + 1
            again = self._list_members(cur, probes, scope, filters, limit=limit, found=found)
            # A memory mentioning two of a name's entities comes once from
            # each where a statement does not drop repeats: a name whose rows
            # reached the limit with fewer distinct memories is asked again,
            # with room for every entity's rows.
            for norm, entities in again:
                found.pop(norm, None)
                self._list_members(
                    cur,
                    [(norm, entities)],
                    scope,
                    filters,
                    limit=limit * len(entities),
                    found=found,
                )
        out: dict[str, tuple[int, list[str]]] = {}
        for norm in wanted:
            ids = list(dict.fromkeys(found.get(norm, ())))[:limit]
            if not ids:
                continue
            if len(ids) > max_degree:
                out[norm] = (max_degree + 1, [])
            else:
                out[norm] = (len(ids), sorted(ids))
        return out

    def _list_members(
        self,
        cur: Cursor,
        probes: Sequence[tuple[str, list[int]]],
        scope: Scope,
        filters: RecallFilters,
        *,
        limit: int,
        found: dict[str, list[str]],
    ) -> list[tuple[str, list[int]]]:
        """Add to ``found`` each probe's (name, entity keys) visible members
        under ``filters``, ``limit`` rows at most each; the probes whose rows
        reached ``limit`` with repeats among them (fewer distinct memories)."""
        rows: dict[str, list[str]] = defaultdict(list)
        for start in range(0, len(probes), _MEMBER_PROBES):
            chunk = probes[start : start + _MEMBER_PROBES]
            sql, params = self._members_statement(
                [entities for _, entities in chunk], scope, filters, limit
            )
            for probe, memory_id in self._exec(cur, sql, params).fetchall():
                rows[chunk[int(probe)][0]].append(str(memory_id))
        again: list[tuple[str, list[int]]] = []
        for norm, entities in probes:
            ids = rows.get(norm, [])
            found[norm].extend(ids)
            if len(ids) >= limit and len(entities) > 1 and len(set(ids)) < limit:
                again.append((norm, entities))
        return again

    def _members_statement(
        self, probes: Sequence[Sequence[int]], scope: Scope, filters: RecallFilters, limit: int
    ) -> tuple[str, list[object]]:
        """One statement listing, for each probe (the entity keys of one
        name), the visible memories under ``filters`` that mention any of
        them, at most ``limit`` rows each: (probe number, memory id) rows, a
        memory repeated at most once per entity key. Here a UNION ALL of one
        subquery per probe, each with its own LIMIT, that drops repeats
        (SQLite does so as the rows come, so a hub stops at ``limit``);
        PostgreSQL's store plans one subquery for all (``pg_graph.py``)."""
        s_sql, s_params = scope_clause(scope)
        f_sql, f_params = filter_clause(filters)
        parts: list[str] = []
        params: list[object] = []
        for n, entities in enumerate(probes):
            parts.append(
                f"SELECT {n} AS probe, p{n}.id FROM (SELECT DISTINCT m.id FROM mentions x"
                " JOIN memories m ON m.seq = x.memory_seq"
                f" WHERE {in_list('x.entity_seq', entities)} AND {s_sql} AND {f_sql}"
                f" LIMIT ?) AS p{n}"
            )
            params += [*entities, *s_params, *f_params, limit]
        return " UNION ALL ".join(parts), params

    def load_mentions(
        self, *, after_seq: int = 0, upto_seq: int | None = None
    ) -> list[tuple[str, int]]:
        """(entity key, memory seq) of every mention of memories written after
        ``after_seq`` (up to ``upto_seq``), unscoped: the warm mention index
        applies scope itself."""
        upto = "" if upto_seq is None else " AND x.memory_seq <= ?"
        params = (after_seq,) if upto_seq is None else (after_seq, upto_seq)
        with self._read() as cur:
            rows = self._exec(
                cur,
                "SELECT DISTINCT e.norm, x.memory_seq FROM mentions x"
                " JOIN entities e ON e.seq = x.entity_seq WHERE x.memory_seq > ?" + upto,
                params,
            ).fetchall()
        return [(str(norm), int(seq)) for norm, seq in rows]

    def co_occurring(
        self, norms: Sequence[str], scope: Scope, *, per_entity: int = 10
    ) -> dict[str, list[tuple[str, float]]]:
        """The strongest co-occurrence neighbours of each entity key, inside
        the visible scopes (an edge joins two entities of one scope).

        Answers are cached per (scope, key) until the next write: recall asks
        for the neighbours of every seed entity, and a hub-like entity's
        edges cost milliseconds to read. ``generation`` is read on every
        call, so other processes' writes invalidate the cache too.
        """
        if not norms:
            return {}
        generation = self.generation()
        try:
            cache = self._edge_cache
        except AttributeError:
            cache = {}
            self._edge_cache = cache
        out: dict[str, list[tuple[str, float]]] = {}
        missing: list[str] = []
        for norm in dict.fromkeys(norms):
            hit = cache.get((scope, per_entity, norm))
            if hit is not None and hit[0] == generation:
                if hit[1]:
                    out[norm] = list(hit[1])
            else:
                missing.append(norm)
        if missing:
            fresh = self._co_occurring(missing, scope, per_entity=per_entity)
            if len(cache) > 20_000:
                cache.clear()
            for norm in missing:
                found = fresh.get(norm, [])
                cache[(scope, per_entity, norm)] = (generation, tuple(found))
                if found:
                    out[norm] = found
        return out

    def _co_occurring(
        self, norms: Sequence[str], scope: Scope, *, per_entity: int
    ) -> dict[str, list[tuple[str, float]]]:
        s_sql, s_params = scope_clause(scope, "a")
        a_sql, a_params = answering("a", norms)
        with self._read() as cur:
            # The visible entities of these keys, each read as the entity its
            # name is the same as, if linked.
            near = {
                int(seq): str(key)
                for seq, key in self._exec(
                    cur,
                    "SELECT a.seq, COALESCE(ar.norm, a.norm) FROM entities a"
                    f" LEFT JOIN entities ar ON ar.seq = a.same_as WHERE {a_sql} AND {s_sql}",
                    [*a_params, *s_params],
                ).fetchall()
            }
            # Their edges, stored once per pair: both directions. Only the
            # heaviest are named (a busy entity has thousands of edges).
            edges: dict[str, list[tuple[float, int]]] = defaultdict(list)
            seqs = sorted(near)
            for i in range(0, len(seqs), 400):
                chunk = seqs[i : i + 400]
                for a, b, weight in self._exec(
                    cur,
                    f"SELECT src_seq, dst_seq, weight FROM entity_edges"
                    f" WHERE {in_list('src_seq', chunk)} UNION ALL"
                    f" SELECT dst_seq, src_seq, weight FROM entity_edges"
                    f" WHERE {in_list('dst_seq', chunk)}",
                    [*chunk, *chunk],
                ).fetchall():
                    edges[near[int(a)]].append((-float(weight), int(b)))
            return heaviest(edges, per_entity, lambda wanted: self._roots(cur, wanted))

    def _roots(self, cur: Cursor, seqs: Sequence[int]) -> dict[int, str]:
        """Each entity's key as a reader reads it: the key of the entity its
        name is the same as, if linked, else its own."""
        out: dict[int, str] = {}
        for i in range(0, len(seqs), 400):
            chunk = list(seqs[i : i + 400])
            out.update(
                (int(seq), str(key))
                for seq, key in self._exec(
                    cur,
                    "SELECT b.seq, COALESCE(br.norm, b.norm) FROM entities b"
                    f" LEFT JOIN entities br ON br.seq = b.same_as WHERE {in_list('b.seq', chunk)}",
                    chunk,
                ).fetchall()
            )
        return out

    def _replaced_facts(
        self, cur: Cursor, new: NewMemory, scope: Scope, read: ReadFacts | None = None
    ) -> list[str]:
        """Ids of the current facts of ``new``'s own scope that it replaces
        (store/supersede.py states the rule), read in the write transaction
        so that every fact committed before it, or written before it in its
        batch, is a candidate. ``scope`` is the writer's: which entities its
        names resolve to; ``read``: what the batch's earlier writes read."""
        if not may_replace(new):
            return []
        names = sorted(
            {m.norm for m in new.mentions} | {a for m in new.mentions for a in m.aliases}
        )
        # A name is an entity key itself, or an alias of other entities' keys.
        keys = sorted(set(names) | {norm for _, norm in self._aliased(cur, names, scope)})
        candidates = self._fact_candidates(cur, keys, new, read=read)
        # The entities the new memory's names resolve to count as its names too.
        return replaced_facts(new, candidates, extra_names=set(keys))

    def has_constraints(self) -> bool:
        """Whether any memory is a constraint (the partial index answers)."""
        with self._read() as cur:
            return (
                self._exec(cur, "SELECT 1 FROM memories WHERE is_constraint = 1 LIMIT 1").fetchone()
                is not None
            )

    def constraints_mentioning(
        self, norms: Sequence[str], scope: Scope, filters: RecallFilters, *, limit: int = 20
    ) -> dict[str, list[Memory]]:
        """Visible constraint memories mentioning each of ``norms``, newest first."""
        if not norms:
            return {}
        s_sql, s_params = scope_clause(scope)
        f_sql, f_params = filter_clause(filters)
        a_sql, a_params = answering("e", norms)
        out: dict[str, list[Memory]] = defaultdict(list)
        with self._read() as cur:
            # Constraints are few (a partial index lists them): find them
            # first, so the join starts from them, not from every visible
            # memory (145 ms at 100k memories when the planner chose that).
            seqs = [
                int(r[0])
                for r in self._exec(
                    cur, "SELECT seq FROM memories WHERE is_constraint = 1 LIMIT 501"
                ).fetchall()
            ]
            if not seqs:
                return {}
            among = f" AND {in_list('m.seq', seqs)}" if len(seqs) <= 500 else ""
            rows = self._exec(
                cur,
                f"SELECT COALESCE(r.norm, e.norm), {SELECT_MEMORY} FROM memories m"
                " JOIN mentions x ON x.memory_seq = m.seq JOIN entities e ON e.seq = x.entity_seq"
                " LEFT JOIN entities r ON r.seq = e.same_as"
                f" WHERE m.is_constraint = 1{among} AND {a_sql} AND {s_sql}"
                f" AND {f_sql} ORDER BY m.created_at DESC, m.id DESC LIMIT ?",
                [*(seqs if among else []), *a_params, *s_params, *f_params, limit],
            ).fetchall()
        for row in rows:
            out[str(row[0])].append(row_to_memory(row[1:]))
        return dict(out)

    def history(self, memory_id: str, scope: Scope) -> list[Memory]:
        """The supersession chain through ``memory_id``, oldest first (only
        its visible links)."""
        s_sql, s_params = scope_clause(scope)
        chain: dict[str, Memory] = {}
        with self._read() as cur:

            def fetch(where: str, value: str) -> list[Memory]:
                rows = self._exec(
                    cur,
                    f"SELECT {SELECT_MEMORY} FROM memories m WHERE {where} AND {s_sql}",
                    [value, *s_params],
                ).fetchall()
                return [row_to_memory(r) for r in rows]

            start = fetch("m.id = ?", memory_id)
            if not start:
                return []
            todo = [start[0]]
            while todo:
                memory = todo.pop()
                if memory.id in chain:
                    continue
                chain[memory.id] = memory
                if memory.superseded_by:
                    todo += fetch("m.id = ?", memory.superseded_by)
                todo += fetch("m.superseded_by = ?", memory.id)
        return sorted(chain.values(), key=lambda m: (m.created_at, m.id))
