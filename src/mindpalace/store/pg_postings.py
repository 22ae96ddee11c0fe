"""PostgreSQL's keyword search over postings: each query word's rows read
from one index in order, scored without reading a memory row.

``pg_text.py``'s search scores every visible row holding a query word from
the row itself (its tsvector unnested, its weights summed): at a million
memories a common word is in hundreds of thousands of rows and a search
took seconds. Here each row's lexemes are also kept as postings, one row
per (scope partition's lexeme key, memory) in ``text_postings``, with the
column-weighted count ``f`` and the row's length, kept by a trigger in the
writing transaction. The primary key (key, memory) includes both, so a
word's postings in one partition are one range of one index, read without
touching the table, and a row's own postings are found by their keys when
it changes or goes.

A search (``PostingsSearch.search_text``) is two statements:

1. the caller's partitions (as ``pg_text.py``), each query lexeme's key in
   each, and each key's count of postings (kept by the same trigger in
   ``text_key_counts``): the scope's idf and mean length, exactly as the
   exhaustive search's;
2. every posting of those keys, scored as BM25 and summed per row (a hash
   aggregate over postings, not rows), the best scores' rows joined to
   ``memories`` for the scope and filters, in the exhaustive search's
   order (score, then newest, then id); a word cut (below) first finds its
   floor, the write key its newest postings start from.

So the ranking is the exhaustive search's, row for row (``bench.pgkeyword``
measures both on one palace).

A partition the filters' agents or visibilities leave out counts for the
idf and the mean length, but its postings are not read (a write looking
for the memory it restates asks for its own agent's and visibility's).

One exception bounds the work: of a word with more than ``WORD_DEPTH``
postings in the partitions read (a common word of a large palace, whose
idf is low) only the newest ``WORD_DEPTH`` count; its older rows score 0
for it.
``Ranking.cut`` says how many words were so cut, and ``Ranking.unread``
the most any row's score may lack for them (each cut word's weight times
``k1 + 1``, the most its factor can be). With no word cut the result is
exact.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mindpalace.models import RecallFilters, Scope
from mindpalace.store.base import TextMatch
from mindpalace.store.core import Cursor
from mindpalace.store.fragments import SELECT_MEMORY, filter_clause, row_to_memory, scope_clause
from mindpalace.store.fts5_bm25 import K1, B
from mindpalace.store.pg_text import SCOPE_COLUMNS, ScopeKeyTextSearch

__all__ = [
    "FILL_KEY_COUNTS",
    "FILL_POSTINGS",
    "KEY_COUNTS_SCHEMA",
    "POSTINGS_SCHEMA",
    "PostingsSearch",
    "Ranking",
]

#: the most postings of one word a search reads, newest first (more are cut)
WORD_DEPTH = 50_000
#: the fewest best sums a search checks against the scope and filters first
FIRST_TOP = 256
#: a word with more visible postings than this is read only at the rows
#: the rarer words found, when that cannot change the result (``_PRUNED``):
#: the words the search would otherwise cut. From 20,000 the rarer words'
#: rows are so many that probing them cost more than reading (at a million:
#: 170-330 ms a search against 100); from 50,000 the cut words' floors and
#: reads go (docs/benchmarks/29-common-words-at-the-rarer-words-rows.md)
PRUNE_POSTINGS = WORD_DEPTH

_WEIGHT_CASE = "CASE w WHEN 'A' THEN 1.5 WHEN 'B' THEN 1.0 WHEN 'C' THEN 0.5 ELSE 1.0 END"

# The postings' trigger ends early for an update that changes neither the
# row's partition nor its words.
_UNCHANGED = """\
        IF TG_OP = 'UPDATE'
            AND (OLD.agent_id, OLD.visibility, OLD.group_name, OLD.channel, OLD.fts_len)
            IS NOT DISTINCT FROM (NEW.agent_id, NEW.visibility, NEW.group_name, NEW.channel,
                                  NEW.fts_len)
            AND OLD.fts IS NOT DISTINCT FROM NEW.fts
        THEN
            RETURN NULL;
        END IF;
"""

POSTINGS_SCHEMA = [
    """
    CREATE TABLE text_postings (
        key BIGINT NOT NULL, seq BIGINT NOT NULL, f REAL NOT NULL, len INTEGER NOT NULL,
        PRIMARY KEY (key, seq) INCLUDE (f, len)
    )
    """,
    # One row's postings: per key (two lexemes meet in one key only by a
    # 64-bit hash collision, as in pg_text.py), the weighted count.
    f"""
    CREATE FUNCTION mp_text_postings_of(
        agent TEXT, vis TEXT, grp TEXT, chan TEXT, fts tsvector
    ) RETURNS TABLE (key BIGINT, f REAL)
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
        SELECT k.key, SUM(k.f)::REAL
        FROM (
            SELECT mp_text_key(agent, vis, grp, chan, u.lexeme) AS key,
                   COALESCE((SELECT SUM({_WEIGHT_CASE}) FROM unnest(u.weights) AS w), 0) AS f
            FROM unnest(COALESCE(fts, ''::tsvector)) AS u
        ) AS k
        GROUP BY k.key
    $$
    """,
    # Kept in the writing transaction. A column trigger does not see columns
    # a BEFORE trigger sets (fts), so it fires on the text columns too. A
    # row's old postings are found by their keys (the index's first column).
    f"""
    CREATE FUNCTION mp_text_postings() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
{_UNCHANGED}        IF TG_OP IN ('UPDATE', 'DELETE') THEN
            DELETE FROM text_postings
            WHERE key = ANY (mp_text_keys(OLD.agent_id, OLD.visibility, OLD.group_name,
                                          OLD.channel, OLD.fts))
              AND seq = OLD.seq;
        END IF;
        IF TG_OP IN ('UPDATE', 'INSERT') THEN
            INSERT INTO text_postings (key, seq, f, len)
            SELECT p.key, NEW.seq, p.f, NEW.fts_len
            FROM mp_text_postings_of(NEW.agent_id, NEW.visibility, NEW.group_name,
                                     NEW.channel, NEW.fts) AS p;
        END IF;
        RETURN NULL;
    END
    $$
    """,
    f"""
    CREATE TRIGGER memories_text_postings
        AFTER INSERT OR DELETE OR UPDATE OF {SCOPE_COLUMNS}, title, content, context, tags
        ON memories FOR EACH ROW EXECUTE FUNCTION mp_text_postings()
    """,
]

#: every row's postings, for a palace migrated or copied in bulk (in key
#: order: the index is built as it is filled, page after page)
FILL_POSTINGS = """
INSERT INTO text_postings (key, seq, f, len)
SELECT p.key, m.seq, p.f, m.fts_len
FROM memories m,
     mp_text_postings_of(m.agent_id, m.visibility, m.group_name, m.channel, m.fts) AS p
ORDER BY p.key, m.seq
"""
POSTINGS_SCHEMA.append(FILL_POSTINGS)
POSTINGS_SCHEMA.append("ANALYZE text_postings")

# Schema 26: each key's postings counted as they are written, so a search
# reads a word's document count in one row instead of counting its postings
# on the index (a common word of a million memories: 15-35 ms a search, 76
# ms for a write's look for the memory it restates). A key whose count
# reaches 0 loses its row: a key is a hash of a partition's word, so a
# row left for an erased word would let one test guesses against it.
#: every key's count from the postings (a migration, a bulk copy)
FILL_KEY_COUNTS = """
INSERT INTO text_key_counts (key, n)
SELECT key, COUNT(*) FROM text_postings GROUP BY key ORDER BY key
"""
KEY_COUNTS_SCHEMA = [
    "CREATE TABLE text_key_counts (key BIGINT PRIMARY KEY, n BIGINT NOT NULL)",
    f"""
    CREATE OR REPLACE FUNCTION mp_text_postings() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
        old_keys BIGINT[];
    BEGIN
{_UNCHANGED}        IF TG_OP IN ('UPDATE', 'DELETE') THEN
            old_keys := mp_text_keys(OLD.agent_id, OLD.visibility, OLD.group_name,
                                     OLD.channel, OLD.fts);
            WITH gone AS (
                DELETE FROM text_postings WHERE key = ANY (old_keys) AND seq = OLD.seq
                RETURNING key
            )
            UPDATE text_key_counts c SET n = c.n - 1 FROM gone WHERE c.key = gone.key;
            DELETE FROM text_key_counts WHERE key = ANY (old_keys) AND n <= 0;
        END IF;
        IF TG_OP IN ('UPDATE', 'INSERT') THEN
            WITH added AS (
                INSERT INTO text_postings (key, seq, f, len)
                SELECT p.key, NEW.seq, p.f, NEW.fts_len
                FROM mp_text_postings_of(NEW.agent_id, NEW.visibility, NEW.group_name,
                                         NEW.channel, NEW.fts) AS p
                RETURNING key
            )
            INSERT INTO text_key_counts (key, n)
            SELECT key, 1 FROM added ORDER BY key
            ON CONFLICT (key) DO UPDATE SET n = text_key_counts.n + 1;
        END IF;
        RETURN NULL;
    END
    $$
    """,
    FILL_KEY_COUNTS,
    "ANALYZE text_key_counts",
]

# Each (query lexeme, visible partition) key with its postings count, the
# lexeme's place among the query's and how often the query names it, and
# the visible rows and tokens (as pg_text.py's search). Parameters: the
# scope (text_scopes), the terms.
_LISTS = """
WITH p AS MATERIALIZED (
    SELECT row_number() OVER (ORDER BY p.agent_id, p.visibility, p.group_name, p.channel) AS part,
           p.agent_id, p.visibility, p.group_name, p.channel, p.docs, p.tokens
    FROM text_scopes p WHERE {scope_p} AND p.docs > 0
),
q AS MATERIALIZED (
    SELECT t.ord, l.lexeme
    FROM unnest(?::TEXT[]) WITH ORDINALITY AS t(term, ord),
         unnest(tsvector_to_array(to_tsvector('mp_english', t.term))) AS l(lexeme)
),
k AS MATERIALIZED (
    SELECT l.lexeme, MIN(l.ord) AS first, COUNT(*) AS mult, p.part, p.agent_id, p.visibility,
           mp_text_key(p.agent_id, p.visibility, p.group_name, p.channel, l.lexeme) AS key
    FROM q AS l, p GROUP BY l.lexeme, p.part, p.agent_id, p.visibility, p.group_name, p.channel
)
SELECT k.lexeme, k.first, k.mult, k.part, k.key,
       COALESCE((SELECT x.n FROM text_key_counts x WHERE x.key = k.key), 0) AS n,
       s.seen, s.tokens, k.agent_id, k.visibility
FROM k, (SELECT SUM(p.docs) AS seen, SUM(p.tokens) AS tokens FROM p) AS s
ORDER BY k.first, k.lexeme, k.part
"""

# A cut word's floor: the write key of its ``depth``-th newest posting in
# the caller's partitions (format: one branch per key; parameters: each
# key, then the offset ``depth - 1``).
_FLOOR = "SELECT seq FROM ({branches}) AS u ORDER BY seq DESC OFFSET ? LIMIT 1"
_FLOOR_BRANCH = "SELECT t.seq FROM text_postings t WHERE t.key = ?"


def _term(weight: str) -> str:
    """A posting's BM25 share (``t.f``, ``t.len``) for a word of weight
    ``weight`` (the mean length is the parameter)."""
    return (
        f"{weight} * t.f * {K1 + 1} / (t.f + {K1} * ({1 - B} + {B} * t.len / ?::DOUBLE PRECISION))"
    )


def _best_of(source: str) -> str:
    """The statement's end over ``source`` (seq, score): of the best sums
    (at least ``top``, and every row tied with the last), the best
    ``limit`` rows the scope and filters admit, in the exhaustive search's
    order, as arrays of seqs and scores (format: ``scope_m``, ``filters``;
    parameters: top, then the scope's and filters', then limit)."""
    return f"""
edge AS MATERIALIZED (
    SELECT MIN(s.score) AS score FROM (
        SELECT x.score FROM {source} x ORDER BY x.score DESC LIMIT ?
    ) AS s
),
best AS MATERIALIZED (
    SELECT s.seq, s.score, m.created_at, m.id
    FROM {source} AS s JOIN memories m ON m.seq = s.seq
    WHERE s.score >= (SELECT edge.score FROM edge) AND {{scope_m}} AND {{filters}}
    ORDER BY s.score DESC, m.created_at DESC, m.id DESC LIMIT ?
)
SELECT (SELECT array_agg(b.seq ORDER BY b.score DESC, b.created_at DESC, b.id DESC) FROM best b),
       (SELECT array_agg(b.score ORDER BY b.score DESC, b.created_at DESC, b.id DESC) FROM best b),
"""


# Every posting of the query's keys at or above its word's floor (0 for a
# word not cut), scored as BM25 and summed per row; of the best sums (at
# least ``top``, and every row tied with the last), the best ``limit`` rows
# the scope and filters admit, in the exhaustive search's order; how many
# rows were scored and kept. Parameters: keys, their word's weight and
# floor; the mean length; top; scope and filter parameters; limit.
_SCORE = f"""
WITH k AS MATERIALIZED (
    SELECT * FROM unnest(?::BIGINT[], ?::DOUBLE PRECISION[], ?::BIGINT[])
        AS k(key, weight, floor)
),
scored AS MATERIALIZED (
    SELECT t.seq, SUM({_term("k.weight")}) AS score
    FROM k CROSS JOIN LATERAL (
        SELECT t.seq, t.f, t.len FROM text_postings t WHERE t.key = k.key AND t.seq >= k.floor
    ) AS t
    GROUP BY t.seq
),{_best_of("scored")}       (SELECT COUNT(*) FROM scored),
       (SELECT COUNT(*) FROM scored WHERE scored.score >= (SELECT edge.score FROM edge))
"""


# The search of a query with common words (more than ``PRUNE_POSTINGS``
# postings), read as the in-process index reads them (keyword_top.py): the
# rarer words' postings are summed for every row; the ``top``-th best of
# those partial sums is a floor (``low``). A common word adds less than its
# weight times ``k1 + 1`` to any row, so a row whose partial sum plus the
# common words' bound is at most the floor scores below it, as does a row
# none of the rarer words holds when that bound is at most the floor: such
# rows cannot be among the best ``top``. The rest (``cand``) have the common
# words' postings probed at their own partition's key, by the primary key,
# instead of every posting of those words read. The last column says
# whether the bound held (else the caller sums every posting). Parameters: the rare
# keys, their weight and partition; the common keys, their weight and
# partition; the mean length (twice); top; the bound (twice); scope and
# filter parameters; limit.
_PRUNED = f"""
WITH r AS MATERIALIZED (
    SELECT * FROM unnest(?::BIGINT[], ?::DOUBLE PRECISION[], ?::INT[]) AS r(key, weight, part)
),
c AS MATERIALIZED (
    SELECT * FROM unnest(?::BIGINT[], ?::DOUBLE PRECISION[], ?::INT[]) AS c(key, weight, part)
),
partial AS MATERIALIZED (
    SELECT t.seq, MIN(r.part) AS part, SUM({_term("r.weight")}) AS score
    FROM r CROSS JOIN LATERAL (
        SELECT t.seq, t.f, t.len FROM text_postings t WHERE t.key = r.key
    ) AS t
    GROUP BY t.seq
),
low AS MATERIALIZED (
    SELECT (SELECT p.score FROM partial p ORDER BY p.score DESC OFFSET ? LIMIT 1) AS score
),
cand AS MATERIALIZED (
    SELECT p.seq, p.part, p.score FROM partial p, low
    WHERE low.score IS NOT NULL AND ?::DOUBLE PRECISION <= low.score
      AND p.score + ?::DOUBLE PRECISION > low.score
),
full_score AS MATERIALIZED (
    SELECT d.seq, d.score + COALESCE((
        SELECT SUM({_term("c.weight")})
        FROM c JOIN text_postings t ON t.key = c.key AND t.seq = d.seq
        WHERE c.part = d.part
    ), 0) AS score
    FROM cand d
),{_best_of("full_score")}       (SELECT COUNT(*) FROM partial) + (SELECT COUNT(*) FROM cand),
       (SELECT COUNT(*) FROM cand) > 0
"""


@dataclass(slots=True)
class _Word:
    """One query lexeme: its weight (idf times how often the query names
    it, from its postings in every visible partition), its keys in the
    visible partitions the filters admit that hold it, its postings there."""

    weight: float
    keys: list[int]
    count: int
    parts: list[int]  # each key's partition (its number in ``_LISTS``)


@dataclass(frozen=True, slots=True)
class Ranking:
    """The best rows found, and what the search read to find them."""

    seqs: tuple[int, ...]
    scores: tuple[float, ...]
    read: int  # postings summed
    scored: int  # rows
    cut: int  # words read only in part (``WORD_DEPTH``)
    unread: float  # the most a row's score may lack for them

    @property
    def exact(self) -> bool:
        return self.cut == 0


def _words(listed: Sequence[Sequence[Any]], filters: RecallFilters) -> tuple[list[_Word], float]:
    """The query's words from ``_LISTS``' rows (none empty) and the
    scope's mean length. A partition the filters' agents or visibilities
    leave out counts for the words' idf, as the scope's length does, but
    none of its postings is read: no row of it could be kept."""
    seen, tokens = _int(listed[0][6]), _int(listed[0][7])
    avgdl = tokens / seen if tokens > 0 else 1.0
    agents = set(filters.agents)
    visibilities = {v.value for v in filters.visibilities}
    names: dict[str, int] = {}
    mult: list[int] = []
    keys: list[list[int]] = []
    parts: list[list[int]] = []
    hits: list[int] = []
    held: list[int] = []
    for lexeme, _first, times, part, key, count, _seen, _tokens, agent, visibility in listed:
        at = names.setdefault(str(lexeme), len(names))
        if at == len(mult):
            mult.append(_int(times))
            keys.append([])
            parts.append([])
            hits.append(0)
            held.append(0)
        hits[at] += _int(count)
        admitted = (not agents or agent in agents) and (
            not visibilities or visibility in visibilities
        )
        if _int(count) and admitted:
            keys[at].append(_int(key))
            parts[at].append(_int(part))
            held[at] += _int(count)
    words = [
        _Word(m * max(math.log((max(seen, n) - n + 0.5) / (n + 0.5)), 1e-6), k, h, p)
        for m, k, n, h, p in zip(mult, keys, hits, held, parts, strict=True)
    ]
    return words, avgdl


def _int(value: Any) -> int:
    return int(value or 0)


class PostingsSearch(ScopeKeyTextSearch):
    """``search_text`` over the postings (mixed in before
    ``ScopeKeyTextSearch``, whose search from the rows stays for comparison)."""

    def search_text(
        self, terms: Sequence[str], scope: Scope, filters: RecallFilters, *, limit: int
    ) -> list[TextMatch]:
        """The ``limit`` best visible matches by scoped BM25, scored from
        the postings of the query's words."""
        if not terms or limit <= 0:
            return []
        with self._read() as cur:
            ranking = self._rank_postings(cur, terms, scope, filters, limit=limit)
            if not ranking.seqs:
                return []
            s_sql, s_params = scope_clause(scope)
            rows = self._exec(
                cur,
                f"SELECT {SELECT_MEMORY}, m.seq FROM memories m"
                f" WHERE m.seq = ANY(?::BIGINT[]) AND {s_sql}",
                [list(ranking.seqs), *s_params],
            ).fetchall()
        by_seq = {int(r[-1]): r[:-1] for r in rows}
        return [
            TextMatch(row_to_memory(by_seq[seq]), score)
            for seq, score in zip(ranking.seqs, ranking.scores, strict=True)
            if seq in by_seq
        ]

    def _rank_postings(
        self,
        cur: Cursor,
        terms: Sequence[str],
        scope: Scope,
        filters: RecallFilters,
        *,
        limit: int,
        depth: int | None = None,
        prune: bool = True,
    ) -> Ranking:
        """The best ``limit`` rows' write keys and scores; of a word with more
        than ``depth`` visible postings (``WORD_DEPTH``), the newest count,
        unless the rarer words' rows bound the result (``_PRUNED``, exact;
        not tried without ``prune``)."""
        most = WORD_DEPTH if depth is None else depth
        p_sql, p_params = scope_clause(scope, "p")
        listed = self._exec(cur, _LISTS.format(scope_p=p_sql), [*p_params, list(terms)]).fetchall()
        if not listed:
            return Ranking((), (), 0, 0, 0, 0.0)
        words, avgdl = _words(listed, filters)
        if not any(word.count for word in words):
            return Ranking((), (), 0, 0, 0, 0.0)
        s_sql, s_params = scope_clause(scope)
        f_sql, f_params = filter_clause(filters)
        top = max(limit * 2, FIRST_TOP)
        if prune and any(word.count > PRUNE_POSTINGS for word in words):
            pruned = self._rank_pruned(
                cur,
                words,
                avgdl=avgdl,
                top=top,
                scope=(s_sql, s_params),
                filters=(f_sql, f_params),
                limit=limit,
            )
            if pruned is not None:
                return pruned
        # A cut word counts from its floor: its newest ``most`` postings.
        floors = [self._floor(cur, word.keys, most) if word.count > most else 0 for word in words]
        keys = [(key, word.weight, floor) for word, floor in zip(words, floors, strict=True)
                for key in word.keys]  # fmt: skip
        # The best sums joined to ``memories`` first: enough that filters
        # on other columns (a restatement's look asks for one category)
        # seldom leave too few, which costs a second summing.
        while True:
            seqs, scores, scored, kept = self._exec(
                cur,
                _SCORE.format(scope_m=s_sql, filters=f_sql),
                [
                    [k[0] for k in keys],
                    [k[1] for k in keys],
                    [k[2] for k in keys],
                    avgdl,
                    top,
                    *s_params,
                    *f_params,
                    limit,
                ],
            ).fetchone()
            if len(seqs or []) < limit and _int(kept) < _int(scored):
                top = _int(scored)  # the filters left too few of the best: all of them
                continue
            cut = [word for word in words if word.count > most]
            return Ranking(
                tuple(int(x) for x in seqs or []),
                tuple(float(x) for x in scores or []),
                sum(min(word.count, most) for word in words),
                _int(scored),
                len(cut),
                sum(word.weight * (K1 + 1) for word in cut),
            )

    def _rank_pruned(
        self,
        cur: Cursor,
        words: Sequence[_Word],
        *,
        avgdl: float,
        top: int,
        scope: tuple[str, list[Any]],
        filters: tuple[str, list[Any]],
        limit: int,
    ) -> Ranking | None:
        """The ranking of ``_PRUNED``, exact; None where it cannot tell: no
        rarer word, the bound above the floor, or the scope and filters
        leaving fewer than ``limit`` of the best (the caller sums every
        posting then)."""
        rare = [w for w in words if w.count <= PRUNE_POSTINGS]
        common = [w for w in words if w.count > PRUNE_POSTINGS]
        if not any(w.count for w in rare):
            return None
        # A word's share of a row's score is below weight * (k1 + 1).
        bound = sum(w.weight * (K1 + 1) for w in common)

        def columns(group: Sequence[_Word]) -> list[list[Any]]:
            flat = [(k, w.weight, p) for w in group for k, p in zip(w.keys, w.parts, strict=True)]
            return [[f[0] for f in flat], [f[1] for f in flat], [f[2] for f in flat]]

        s_sql, s_params = scope
        f_sql, f_params = filters
        seqs, scores, scored, held = self._exec(
            cur,
            _PRUNED.format(scope_m=s_sql, filters=f_sql),
            [
                *columns(rare),
                *columns(common),
                avgdl,
                top - 1,
                bound,
                bound,
                avgdl,
                top,
                *s_params,
                *f_params,
                limit,
            ],
        ).fetchone()
        if not held or len(seqs or []) < limit:
            return None  # no floor, the bound above it, or too few left by the filters
        return Ranking(
            tuple(int(x) for x in seqs or []),
            tuple(float(x) for x in scores or []),
            sum(w.count for w in rare),
            _int(scored),
            0,
            0.0,
        )

    def _floor(self, cur: Cursor, keys: Sequence[int], depth: int) -> int:
        """The write key of the ``depth``-th newest posting of ``keys`` (one
        word's, in the caller's partitions; it has more than ``depth``)."""
        branches = " UNION ALL ".join([_FLOOR_BRANCH] * len(keys))
        row = self._exec(cur, _FLOOR.format(branches=branches), [*keys, depth - 1]).fetchone()
        return int(row[0])
