"""Short names that are the same entity as full ones ("maria" as "maria
lopez"), in SQL: the first-name rule applied on write, joining and
separating by hand, and what readers need to follow the links.

The first-name rule: within one scope part (agent, visibility, group,
channel), a one-word name entity X is the same as the multi-word person
entity whose first word is X when exactly one such entity (itself linked to
none) exists in that part. It is applied when either of the two is first
written, in that write's transaction; a pair separated by hand is never
linked by the rule again (``entity_apart``). A link is one column of the
short entity (``same_as``, with ``link`` saying why): mentions stay on the
entity of the name they use, readers follow the link, and separating is
one update.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime

from mindpalace.errors import PermissionDenied, ValidationError
from mindpalace.models import EntityLink, MemoryType, Mention, Scope, Visibility
from mindpalace.store.core import Cursor, SqlCore
from mindpalace.store.fragments import in_list, scope_clause, to_epoch

__all__ = [
    "FIRST_NAME",
    "JOINED",
    "NOT_APART",
    "SameAsSql",
    "answering",
    "fulls_query",
    "own_clause",
]

FIRST_NAME = "first_name"
JOINED = "joined"

#: the columns of one scope part of ``entities``
_PART = "agent_id = ? AND visibility = ? AND group_name = ? AND channel = ?"
_LIST_HINT = "list them with `mindpalace entities` (Python: palace.graph.entities())"


#: WHERE fragment over ``entity_aliases a``: the alias is not the name of an
#: entity separated from the one it is an alias of ("maria" kept apart from
#: "maria lopez" no longer answers for it)
NOT_APART = (
    "NOT EXISTS (SELECT 1 FROM entity_apart p JOIN entities s ON s.seq = p.entity_seq"
    " WHERE p.other_seq = a.entity_seq AND s.norm = a.alias)"
)


def answering(alias: str, keys: Sequence[str]) -> tuple[str, list[object]]:
    """WHERE fragment: entity ``alias`` is the entity of one of ``keys`` to
    a reader, as itself (not linked on) or through its link to it."""
    # One IN over a union, not an OR of the two: each side is an index
    # look-up that drives the join (an OR made entity members 13x slower).
    # "+n.same_as" keeps SQLite from reading the first side by the same_as
    # index, where IS NULL matches nearly every entity (a recall's
    # co-occurrence read at 100k turns: 108 ms by it, 50 ms by the names).
    return (
        f"{alias}.seq IN (SELECT n.seq FROM entities n WHERE {in_list('n.norm', keys)}"
        " AND +n.same_as IS NULL UNION ALL SELECT n.seq FROM entities n JOIN entities r"
        f" ON r.seq = n.same_as WHERE {in_list('r.norm', keys)})",
        [*keys, *keys],
    )


def own_clause(scope: Scope, alias: str = "e") -> tuple[str, list[object]]:
    """WHERE fragment admitting the entities ``scope`` may change: its own
    agent's (a peer-facing view: of its own channel); every one unscoped."""
    if scope.unscoped:
        return "1 = 1", []
    if scope.peer:
        return f"({alias}.agent_id = ? AND {alias}.channel = ?)", [
            scope.agent_id,
            scope.channel or "",
        ]
    return f"{alias}.agent_id = ?", [scope.agent_id]


def _link_of(row: Sequence[object]) -> EntityLink:
    """An ``EntityLink`` from (name, norm, root norm, root name, link,
    mentions, agent, visibility, group, channel)."""
    return EntityLink(
        name=str(row[0]),
        norm=str(row[1]),
        same_as=str(row[2]),
        same_as_name=str(row[3]),
        link=str(row[4]),
        mentions=int(str(row[5])),
        agent_id=str(row[6]),
        visibility=Visibility(str(row[7])),
        group=str(row[8]) or None,
        channel=str(row[9]) or None,
    )


_LINK_COLUMNS = (
    "s.name, s.norm, e.norm, e.name, s.link, s.mentions, s.agent_id, s.visibility,"
    " s.group_name, s.channel"
)


def fulls_query(
    dialect: str, part: tuple[object, ...], first: str
) -> tuple[str, tuple[object, ...]]:
    """The statement (and its parameters) that reads the person entities of
    ``part`` whose first word is ``first``, by index on each backend.

    SQLite's LIKE ignores case, so no index serves it: the same prefix as a
    range of the part's key index (norms are lower case; " " is followed by
    "!"), so that a write's cost does not grow with the part's entities.
    PostgreSQL keeps LIKE, served by a pattern-order index (migration 19):
    a range under its collation need not be a prefix."""
    prefix, bounds = (
        ("norm >= ? AND norm < ?", (f"{first} ", f"{first}!"))
        if dialect == "sqlite"
        else ("norm LIKE ?", (f"{first} %",))
    )
    sql = (
        f"SELECT seq FROM entities WHERE {_PART} AND {prefix} AND type = ?"
        " AND kind = 'name' AND same_as IS NULL ORDER BY seq LIMIT 2"
    )
    return sql, (*part, *bounds, MemoryType.PERSON.value)


class SameAsSql(SqlCore):
    """Links between short and full names of one entity, for every backend."""

    # -- the rule, inside the write transaction ------------------------------------

    def _first_name_rule(
        self, cur: Cursor, part: tuple[object, ...], seq: int, mention: Mention
    ) -> None:
        """Apply the first-name rule to the entity ``seq`` just written for
        ``mention``."""
        norm, kind, type_ = mention.norm, mention.kind, mention.type.value
        if kind != "name":
            return
        words = norm.split()
        if len(words) == 1 and norm.isalpha():
            fulls = self._fulls(cur, part, norm)
            if len(fulls) == 1:
                self._set_link(cur, seq, fulls[0], FIRST_NAME)
            return
        if len(words) < 2 or type_ != MemoryType.PERSON.value or not words[0].isalpha():
            return
        row = self._exec(
            cur,
            f"SELECT s.seq FROM entities s WHERE {_PART.replace('agent_id', 's.agent_id')}"
            " AND s.norm = ? AND s.kind = 'name' AND s.same_as IS NULL"
            " AND NOT EXISTS (SELECT 1 FROM entities o WHERE o.same_as = s.seq)"
            " AND NOT EXISTS (SELECT 1 FROM entity_apart p"
            " WHERE p.entity_seq = s.seq AND p.other_seq = ?)",
            (*part, words[0], seq),
        ).fetchone()
        if row is not None and self._fulls(cur, part, words[0]) == [seq]:
            self._set_link(cur, int(row[0]), seq, FIRST_NAME)

    def _fulls(self, cur: Cursor, part: tuple[object, ...], first: str) -> list[int]:
        """The multi-word person entities of ``part`` whose first word is
        ``first`` and that are linked to none (two at most: more is ambiguity too)."""
        sql, params = fulls_query(self.dialect.name, part, first)
        return [int(r[0]) for r in self._exec(cur, sql, params).fetchall()]

    def _set_link(self, cur: Cursor, short: int, full: int, link: str) -> None:
        self._exec(
            cur, "UPDATE entities SET same_as = ?, link = ? WHERE seq = ?", (full, link, short)
        )

    # -- by hand ---------------------------------------------------------------------

    def join_entities(
        self,
        short: tuple[str, Sequence[str]],
        full: tuple[str, Sequence[str]],
        scope: Scope,
        now: datetime,
    ) -> list[EntityLink]:
        """Make the entity named ``short`` the same as the one named ``full``
        (each: the name as given, and the keys it may be) in every scope
        part ``scope`` may change that has both (the pair is no longer kept
        apart); returns the links made.

        Raises:
            ValidationError: a name no visible entity has, the same name
                twice, or two names never found in one scope part.
            PermissionDenied: the names are another agent's entities.
        """
        if set(short[1]) & set(full[1]):
            raise ValidationError(
                "full", full[0], reason=f"cannot join {short[0]!r} to itself; give two names"
            )
        with self._mutate() as cur:
            shorts = self._own_named(cur, short, scope, "join")
            fulls = self._own_named(cur, full, scope, "join")
            by_part = {part: seq for seq, part, _ in fulls}
            made: list[int] = []
            for seq, part, _ in shorts:
                full_seq = by_part.get(part)
                if full_seq is None:
                    continue
                # A link is one step: to the full entity's own target, if it has one.
                root = next((t for s, p, t in fulls if s == full_seq), None) or full_seq
                if root == seq:  # the full name is linked to the short one: turn it round
                    self._exec(
                        cur,
                        "UPDATE entities SET same_as = NULL, link = '' WHERE seq = ?",
                        (full_seq,),
                    )
                    root = full_seq
                self._exec(
                    cur,
                    "UPDATE entities SET same_as = ? WHERE same_as = ?",
                    (root, seq),
                )
                self._set_link(cur, seq, root, JOINED)
                self._exec(
                    cur,
                    "DELETE FROM entity_apart WHERE (entity_seq = ? AND other_seq = ?)"
                    " OR (entity_seq = ? AND other_seq = ?)",
                    (seq, root, root, seq),
                )
                self._touch(cur, seq, now)
                made.append(seq)
            if not made:
                raise ValidationError(
                    "full",
                    full[0],
                    reason=f"no scope of yours has entities named both {short[0]!r} and"
                    f" {full[0]!r}; {_LIST_HINT}",
                )
            return self._links_of(cur, made)

    def separate_entity(
        self, name: tuple[str, Sequence[str]], scope: Scope, now: datetime
    ) -> list[EntityLink]:
        """Undo the links of the entity named ``name`` in every scope part
        ``scope`` may change: its own link to a fuller name, or the links of
        the short names linked to it. The first-name rule never links a
        separated pair again. Returns the links undone, as they were.

        Raises:
            ValidationError: a name no visible entity has, or one not linked.
            PermissionDenied: the name is another agent's entity.
        """
        with self._mutate() as cur:
            named = self._own_named(cur, name, scope, "separate")
            seqs = [seq for seq, _, _ in named]
            rows = self._exec(
                cur,
                f"SELECT s.seq FROM entities s WHERE s.same_as IS NOT NULL"
                f" AND ({in_list('s.seq', seqs)} OR {in_list('s.same_as', seqs)}) ORDER BY s.seq",
                [*seqs, *seqs],
            ).fetchall()
            linked = [int(r[0]) for r in rows]
            if not linked:
                raise ValidationError(
                    "name",
                    name[0],
                    reason=f"entity {name[0]!r} is not linked to another name;"
                    " `mindpalace entities` lists the links (linked, same_as)",
                )
            undone = self._links_of(cur, linked)
            for seq in linked:
                row = self._exec(
                    cur, "SELECT same_as FROM entities WHERE seq = ?", (seq,)
                ).fetchone()
                self._exec(
                    cur,
                    "INSERT INTO entity_apart (entity_seq, other_seq) VALUES (?, ?)"
                    " ON CONFLICT (entity_seq, other_seq) DO NOTHING",
                    (seq, int(row[0])),
                )
                self._exec(
                    cur, "UPDATE entities SET same_as = NULL, link = '' WHERE seq = ?", (seq,)
                )
                self._touch(cur, seq, now)
            return undone

    def _touch(self, cur: Cursor, seq: int, now: datetime) -> None:
        self._exec(cur, "UPDATE entities SET updated_at = ? WHERE seq = ?", (to_epoch(now), seq))

    def _own_named(
        self, cur: Cursor, named: tuple[str, Sequence[str]], scope: Scope, action: str
    ) -> list[tuple[int, tuple[object, ...], int | None]]:
        """(seq, scope part, same_as) of the entities ``named`` names (the
        name as given, and the keys it may be) that ``scope`` may change.

        Raises:
            ValidationError: no visible entity has that name.
            PermissionDenied: only other agents' entities have it.
        """
        name, keys = named[0], sorted(set(named[1]))
        if not keys:
            raise ValidationError("name", name, reason=f"an entity name is required; {_LIST_HINT}")
        s_sql, s_params = scope_clause(scope, "e")
        o_sql, o_params = own_clause(scope, "e")
        rows = self._exec(
            cur,
            "SELECT e.seq, e.agent_id, e.visibility, e.group_name, e.channel, e.same_as,"
            f" {o_sql} FROM entities e WHERE {in_list('e.norm', keys)} AND {s_sql}"
            " ORDER BY e.seq",
            [*o_params, *keys, *s_params],
        ).fetchall()
        if not rows:
            raise ValidationError(
                "name", name, reason=f"no entity named {name!r} in your scope; {_LIST_HINT}"
            )
        own = [r for r in rows if bool(r[6])]
        if not own:
            raise PermissionDenied(
                name,
                str(rows[0][1]),
                action=action,
                thing="entity",
                reason=f"it belongs to agent {rows[0][1]!r}; an agent changes only its own"
                " scope's entities",
            )
        return [(int(r[0]), tuple(r[1:5]), None if r[5] is None else int(r[5])) for r in own]

    # -- reading ---------------------------------------------------------------------

    def _links_of(self, cur: Cursor, seqs: Sequence[int]) -> list[EntityLink]:
        """The links of the short entities ``seqs`` (linked ones only)."""
        if not seqs:
            return []
        rows = self._exec(
            cur,
            f"SELECT {_LINK_COLUMNS} FROM entities s JOIN entities e ON e.seq = s.same_as"
            f" WHERE {in_list('s.seq', seqs)} ORDER BY s.seq",
            list(seqs),
        ).fetchall()
        return [_link_of(r) for r in rows]

    def _linked_to(self, cur: Cursor, seqs: Sequence[int]) -> dict[int, list[EntityLink]]:
        """For each entity of ``seqs``: the short entities linked to it."""
        out: dict[int, list[EntityLink]] = defaultdict(list)
        for i in range(0, len(seqs), 500):
            chunk = list(seqs[i : i + 500])
            for row in self._exec(
                cur,
                f"SELECT e.seq, {_LINK_COLUMNS} FROM entities s JOIN entities e"
                f" ON e.seq = s.same_as WHERE {in_list('s.same_as', chunk)} ORDER BY s.norm",
                chunk,
            ).fetchall():
                out[int(row[0])].append(_link_of(row[1:]))
        return out

    def linked_names(self, norms: Sequence[str], scope: Scope) -> dict[str, list[str]]:
        """For each entity key of ``norms``: the keys of the visible short
        entities linked to an entity of that key (what a reader counts as
        that entity too)."""
        if not norms:
            return {}
        s_sql, s_params = scope_clause(scope, "s")
        out: dict[str, list[str]] = defaultdict(list)
        with self._read() as cur:
            for norm, short in self._exec(
                cur,
                "SELECT DISTINCT e.norm, s.norm FROM entities e JOIN entities s"
                f" ON s.same_as = e.seq WHERE {in_list('e.norm', norms)} AND {s_sql}"
                " ORDER BY e.norm, s.norm",
                [*norms, *s_params],
            ).fetchall():
                out[str(norm)].append(str(short))
        return dict(out)
