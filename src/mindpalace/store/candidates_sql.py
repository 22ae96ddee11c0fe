"""The facts a new one may replace (supersession's first rule,
``store/supersede.py``), read inside the write's transaction: the current
memories of the writer's scope part and category that mention its names,
newest first, and what each of them mentions. ``GraphSql`` applies the
rule to them."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from mindpalace.models import NewMemory
from mindpalace.store.core import Cursor
from mindpalace.store.fragments import in_list
from mindpalace.store.same_as_sql import SameAsSql
from mindpalace.store.supersede import FactCandidate

__all__ = [
    "FACT_MENTIONS",
    "FIRST_MENTIONS",
    "MEMORIES_BY_KEY",
    "RECENT_MENTIONS",
    "SHARE_MENTIONS",
    "CandidatesSql",
    "ReadFacts",
    "first_page",
    "next_page",
]

#: how many of a name's newest mentions a write looks at for facts it replaces
RECENT_MENTIONS = 2000
#: the most mentions of one name a write's first page reads; each later
#: page (read only while the name's older mentions may still be among the
#: candidates a write keeps) is 4x larger
FIRST_MENTIONS = 64
#: the fewest it reads (``first_page``)
SHARE_MENTIONS = 4
#: keys per statement when reading memories by key
_CHUNK = 500
# Larger than any key: a name's first page starts at its newest mention.
_AFTER_EVERY_KEY = 2**62
#: what a write compares of the memories its names' mentions point to, by
#: primary key alone (the condition filled in: ``seq IN (...)``)
MEMORIES_BY_KEY = (
    "SELECT seq, created_at, id, agent_id, visibility, group_name, channel, category,"
    " superseded_by IS NOT NULL OR archived <> 0 FROM memories WHERE {}"
)
#: a name's newest mentions by memories that may be replaced (the partial
#: index ``mentions_fact`` lists them), written before a key, at most the
#: number filled in
FACT_MENTIONS = (
    "SELECT entity_seq, memory_seq FROM mentions WHERE entity_seq = ? AND fact = 1"
    " AND memory_seq < ? ORDER BY memory_seq DESC LIMIT {}"
)


def first_page(limit: int, names: int) -> int:
    """How many of each name's newest mentions a write reads first: its
    share of the ``limit`` candidates the write keeps (between
    ``SHARE_MENTIONS`` and ``FIRST_MENTIONS``). Each memory read is looked
    up (whether it is current, its category, its time); a real chat turn
    written as a fact names a dozen things, and pages of 16 each looked up
    200 memories a write where 50 are kept. The pages that follow read a
    name on only while its older mentions may still be kept, so the
    candidates do not depend on the size of the first."""
    share = -(-limit // max(names, 1))
    return max(1, min(FIRST_MENTIONS, max(SHARE_MENTIONS, share)))


def next_page(page: int, short: int, names: int) -> int:
    """The next page of the names read on: 4x the last while the write
    has its ``limit`` candidates (``short`` <= 0: a name is read on only
    while its older mentions may still be kept; a run of closed facts
    takes few pages); while it is ``short`` of them, at most twice the
    names' share of what is missing (a write 3 short among 7 names now
    reads 4 more of each, where it read 24)."""
    if short <= 0:
        return page * 4
    return max(SHARE_MENTIONS, min(page * 4, -(-2 * short // max(names, 1))))


@dataclass(slots=True)
class ReadFacts:
    """What the writes of one batch (one transaction) have read of the
    memories their names point to, by key: a batch's facts name the same
    people and things, and four in five of the memories each write looked
    up had been looked up by an earlier write of its batch (writing real
    chat turns as facts into 100,000). ``rows``: what ``MEMORIES_BY_KEY``
    reads; ``texts``: id, content and content hash. A memory's text,
    scope and category do not change inside the transaction; whether it is
    current does when the batch closes or revives one, and then
    ``forget`` drops what was read of it."""

    rows: dict[int, tuple[float, str, tuple[str, ...], bool]] = field(default_factory=dict)
    texts: dict[int, tuple[str, str, str]] = field(default_factory=dict)

    def forget(self, memory_ids: Collection[str]) -> None:
        """Drop what was read of whether ``memory_ids`` are current (a
        write of the batch closed or revived them)."""
        gone = [seq for seq, row in self.rows.items() if row[1] in memory_ids]
        for seq in gone:
            del self.rows[seq]


class CandidatesSql(SameAsSql):
    """Reads the candidates of supersession's first rule."""

    def _fact_candidates(
        self,
        cur: Cursor,
        norms: Sequence[str],
        new: NewMemory,
        *,
        limit: int = 50,
        read: ReadFacts | None = None,
    ) -> list[FactCandidate]:
        """Current (unsuperseded, unarchived) memories of exactly ``new``'s
        scope and category that mention any of ``norms``, newest first, with
        which of ``norms`` each mentions: what ``new`` may replace. Of each
        name, only the newest ``RECENT_MENTIONS`` mentions by memories of a
        category that may be replaced (``FACT_CATEGORIES``: the mentions'
        ``fact`` mark and its partial index; chat turns and notes that name
        the same people are not read) are looked at, so a write's cost stops
        growing with how often a name was mentioned before (a name in every
        tenth memory of a 100k palace made this 60% of a write); an older
        fact is still ordered below its replacement at recall
        (``retrieval/currency.py``). If ``FACT_CATEGORIES`` grows, a
        migration marks the mentions of the added category. ``read``: what
        the earlier writes of the batch read (kept there for the later
        ones)."""
        if read is None:
            read = ReadFacts()
        if not norms:
            return []
        # A memory mentions entities of its own scope only (``_link_mentions``).
        part = (new.agent_id, new.visibility.value, new.group or "", new.channel or "")
        entities = {
            int(seq): str(norm)
            for seq, norm in self._exec(
                cur,
                "SELECT seq, norm FROM entities WHERE agent_id = ? AND visibility = ?"
                f" AND group_name = ? AND channel = ? AND {in_list('norm', norms)}",
                (*part, *norms),
            ).fetchall()
        }
        if not entities:
            return []
        wanted = (*part, new.category.value)
        looked, names_of = self._newest_current(cur, list(entities), wanted, limit, read)
        current = [(*seen, seq) for seq, seen in looked.items() if seen is not None]
        current.sort(reverse=True)  # newest first: created_at, then id, descending
        # Cut on keys alone (each fact's names count); only the chosen facts'
        # texts are read.
        rows = [(e, seq) for _, _, seq in current for e in sorted(names_of[seq])][: limit * 4]
        named: dict[int, set[str]] = {}
        for entity_seq, memory_seq in rows:
            if int(memory_seq) in named or len(named) < limit:
                named.setdefault(int(memory_seq), set()).add(entities[int(entity_seq)])
        if not named:
            return []
        texts = read.texts
        unread = [seq for seq in named if seq not in texts]
        if unread:
            for seq, memory_id, content, content_hash in self._exec(
                cur,
                "SELECT seq, id, content, content_hash FROM memories"
                f" WHERE {in_list('seq', unread)}",
                unread,
            ).fetchall():
                texts[int(seq)] = (str(memory_id), str(content), str(content_hash))
        # Newest first, as ordered above (dicts keep the order of insertion).
        return [FactCandidate(*texts[seq], norms) for seq, norms in named.items() if seq in texts]

    def _newest_current(
        self,
        cur: Cursor,
        entities: list[int],
        wanted: tuple[str, ...],
        limit: int,
        read: ReadFacts,
    ) -> tuple[dict[int, tuple[float, str] | None], dict[int, list[int]]]:
        """Which memories the ``entities``' newest mentions by facts point
        to are current memories of ``wanted`` (the ``_look_up`` record),
        and the entities each of them mentions, read until the ``limit``
        newest current ones are known.

        Each name's mentions are read newest first (the partial index lists
        them in order), a page at a time, and the memories they point to
        are looked up by primary key (a join of the two let PostgreSQL, its
        statistics stale in a long transaction, scan every memory of the
        part for each mention: seconds a write). Look-ups go newest first
        over all names: a key read is looked up once no name's unread
        mentions can be newer (it is at or above every open name's last
        key read), and only until ``limit`` current ones are found; that
        ``limit``-th newest is the floor, below which nothing is looked up,
        and a name is read on only while its last key read is above it.
        Where facts are written in date order, the candidates kept are
        those of reading every page."""
        names_of: dict[int, list[int]] = {}
        looked: dict[int, tuple[float, str] | None] = {}  # seq: (created, id) if current
        taken = dict.fromkeys(entities, 0)
        before = dict.fromkeys(entities, _AFTER_EVERY_KEY)
        open_ = set(entities)  # names whose older mentions may follow
        unlooked: set[int] = set()  # read, above the floor, not looked up
        newest: list[int] = []  # current ones' keys, newest first
        pending, page = list(entities), first_page(limit, len(entities))
        floor = -1  # the ``limit``-th newest current one's key, once found
        while True:
            if pending:
                sizes = {e: min(page, RECENT_MENTIONS - taken[e]) for e in pending}
                pages = " UNION ALL ".join(
                    f"SELECT * FROM ({FACT_MENTIONS.format(sizes[e])}) AS n{i}"
                    for i, e in enumerate(pending)
                )
                params = [v for e in pending for v in (e, before[e])]
                got: dict[int, list[int]] = {e: [] for e in pending}
                for entity_seq, memory_seq in self._exec(cur, pages, params).fetchall():
                    got[int(entity_seq)].append(int(memory_seq))
                for e in pending:
                    for memory_seq in got[e]:
                        names_of.setdefault(memory_seq, []).append(e)
                        if memory_seq > floor and memory_seq not in looked:
                            unlooked.add(memory_seq)
                    taken[e] += len(got[e])
                    if got[e]:
                        before[e] = got[e][-1]
                    if len(got[e]) < sizes[e] or taken[e] >= RECENT_MENTIONS:
                        open_.discard(e)
            # Keys at or above every open name's last key read come in order.
            frontier = max((before[e] for e in open_), default=-1)
            settled = sorted((m for m in unlooked if m >= frontier), reverse=True)
            done = 0
            while done < len(settled) and len(newest) < limit:
                chunk = settled[done : done + max(SHARE_MENTIONS, limit - len(newest))]
                self._look_up(cur, chunk, looked, wanted, read)
                unlooked.difference_update(chunk)
                done += len(chunk)
                newest = sorted(
                    (seq for seq, seen in looked.items() if seen is not None), reverse=True
                )
            if len(newest) >= limit:
                floor = newest[limit - 1]
                unlooked = {m for m in unlooked if m > floor}
            pending = [e for e in entities if e in open_ and before[e] > floor]
            if not pending:
                break
            page = next_page(page, limit - len(newest), len(pending))
        # Every name is read down to the floor: what is left above it is in order.
        if unlooked:
            self._look_up(cur, sorted(unlooked, reverse=True), looked, wanted, read)
        return looked, names_of

    def _look_up(
        self,
        cur: Cursor,
        seqs: Sequence[int],
        looked: dict[int, tuple[float, str] | None],
        wanted: tuple[str, ...],
        read: ReadFacts,
    ) -> None:
        """Record in ``looked`` which of ``seqs`` (not looked up before) are
        current memories of ``wanted`` (part and category): their creation
        time and id, else None. By key alone, the rest compared here: any
        other condition in the statement may lead a planner to another
        index (SQLite chose one over the writer's part: a scan per chunk).
        What the batch read before (``read``) is not read again."""
        keys = sorted({seq for seq in seqs if seq not in looked})
        rows = read.rows
        unread = [seq for seq in keys if seq not in rows]
        for i in range(0, len(unread), _CHUNK):
            chunk = unread[i : i + _CHUNK]
            for seq, at, memory_id, *row, closed in self._exec(
                cur, MEMORIES_BY_KEY.format(in_list("seq", chunk)), chunk
            ).fetchall():
                rows[int(seq)] = (float(at), str(memory_id), tuple(row), bool(closed))
        for seq in keys:
            found = rows.get(seq)
            current = found is not None and not found[3] and found[2] == wanted
            looked[seq] = (found[0], found[1]) if current and found is not None else None
