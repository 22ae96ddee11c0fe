"""Keyword search whose BM25 statistics count only what the caller may see.

Shared by every backend whose ``Dialect.text_query`` scores with BM25 (FTS5
on SQLite, the BM25-in-SQL of PostgreSQL).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from mindpalace.models import RecallFilters, Scope
from mindpalace.store.base import TextMatch
from mindpalace.store.core import Cursor
from mindpalace.store.fragments import filter_clause, scope_clause
from mindpalace.store.sql import SqlStore

__all__ = ["ScopedTextSearch", "fts5_idf"]


def fts5_idf(total: int, hits: int) -> float:
    """FTS5's idf (fts5_aux.c ``fts5Bm25Function``): log((N - n + 0.5) / (n + 0.5)),
    floored at 1e-6."""
    idf = math.log(max(total - hits + 0.5, 1e-9) / (hits + 0.5)) if total else 0.0
    return idf if idf > 0 else 1e-6


class ScopedTextSearch(SqlStore):
    """``search_text`` with per-scope idf (mixed in before a backend's SqlStore)."""

    _sizes: dict[Scope, tuple[int, int, int]]
    _counts: dict[tuple[Scope, str], tuple[int, int, int]]

    def search_text(
        self, terms: Sequence[str], scope: Scope, filters: RecallFilters, *, limit: int
    ) -> list[TextMatch]:
        """BM25 whose idf counts only what ``scope`` may see.

        FTS5 computes idf over the whole index, every agent's memories
        included, so another agent's private memories would move this one's
        scores, and an agent planting probe memories could learn from the
        order of its own hits whether a word occurs in memories it may not
        read. FTS5's BM25 is a sum over query terms of ``idf(t) * f(t, d)``,
        so each term is searched alone and its score re-weighted by
        ``idf_scope(t) / idf_index(t)``. What remains global is the average
        document length inside ``f``: one aggregate number, no word of any
        memory. Where the scope sees every row (one agent) the two idfs are
        equal and FTS5's single query runs as it is.
        """
        if scope.unscoped or len(terms) < 1:
            return super().search_text(terms, scope, filters, limit=limit)
        generation, total, seen = self._collection_sizes(scope)
        if seen == total:  # the scope sees every row: its idf is the index's
            return super().search_text(terms, scope, filters, limit=limit)
        scores: dict[str, float] = {}
        created: dict[str, float] = {}
        with self._read() as cur:
            for term in terms:
                index_hits, scope_hits = self._term_counts(cur, term, scope, generation)
                if not scope_hits:
                    continue
                # Sizes are cached per generation; a write racing this read
                # may have added matches since: never count fewer rows than hits.
                weight = fts5_idf(max(seen, scope_hits), scope_hits) / fts5_idf(
                    max(total, index_hits), index_hits
                )
                for memory_id, score, at in self._term_top(cur, term, scope, filters, limit):
                    scores[memory_id] = scores.get(memory_id, 0.0) + float(score) * weight
                    created[memory_id] = float(at)
        # The SQL's order: best first, then newest, then id descending.
        ranked = sorted(scores, reverse=True)
        ranked.sort(key=lambda key: (-scores[key], -created[key]))
        found = self.get_many(ranked[:limit], scope)
        return [TextMatch(found[key], scores[key]) for key in ranked[:limit] if key in found]

    def _term_counts(
        self, cur: Cursor, term: str, scope: Scope, generation: int
    ) -> tuple[int, int]:
        """(rows of the index matching ``term``, those ``scope`` sees).

        Counting joins every match to its row (tens of milliseconds for a
        common word at 100k memories), so the counts are cached until the
        next write: ``generation`` is read from the store on every search,
        so writes by other processes invalidate the cache too.
        """
        cache = self._count_cache()
        key = (scope, term)
        hit = cache.get(key)
        if hit is not None and hit[0] == generation:
            return hit[1], hit[2]
        q = self.dialect.text_query([term])
        s_sql, s_params = scope_clause(scope)
        index_hits, scope_hits = self._exec(
            cur,
            f"SELECT COUNT(*), COALESCE(SUM(CASE WHEN {s_sql} THEN 1 ELSE 0 END), 0)"
            f" FROM {q.source} WHERE {q.where}",
            [*s_params, *q.params],
        ).fetchone()
        if len(cache) >= 4096:
            cache.clear()
        cache[key] = (generation, int(index_hits), int(scope_hits))
        return int(index_hits), int(scope_hits)

    def _term_top(
        self, cur: Cursor, term: str, scope: Scope, filters: RecallFilters, limit: int
    ) -> list[tuple[str, float, float]]:
        """The ``limit`` best visible matches of one term: (id, score, created_at).

        Where the backend can rank inside its text index alone, the best
        ``window`` matches are ranked first and only they are joined to
        their rows for scope and filters; the window grows until ``limit``
        visible rows are found or it covers every match, so the result is
        the same as joining every match first (ties at the window's edge
        aside, which the joined query breaks arbitrarily too).
        """
        s_sql, s_params = scope_clause(scope)
        f_sql, f_params = filter_clause(filters)
        ranked = self.dialect.ranked_text_query([term])
        if ranked is None:
            q = self.dialect.text_query([term])
            rows = self._exec(
                cur,
                f"SELECT m.id, {q.score} AS score, m.created_at FROM {q.source}"
                f" WHERE {q.where} AND {s_sql} AND {f_sql} ORDER BY score DESC LIMIT ?",
                [*q.params, *s_params, *f_params, limit],
            ).fetchall()
            return [(str(r[0]), float(r[1]), float(r[2])) for r in rows]
        window = max(limit * 4, 256)
        while True:
            rows = self._exec(
                cur,
                f"SELECT m.id, f.score, m.created_at, f.seq FROM {ranked.source} f"
                f" JOIN memories m ON m.seq = f.seq WHERE {s_sql} AND {f_sql}"
                " ORDER BY f.score DESC LIMIT ?",
                [*ranked.params, window, *s_params, *f_params, limit],
            ).fetchall()
            if len(rows) >= limit:
                break
            inner = self._exec(
                cur,
                f"SELECT COUNT(*) FROM {ranked.source} f",
                [*ranked.params, window],
            ).fetchone()[0]
            if int(inner) < window:  # the window held every match
                break
            window *= 8
        return [(str(r[0]), float(r[1]), float(r[2])) for r in rows]

    def _collection_sizes(self, scope: Scope) -> tuple[int, int, int]:
        """(generation, rows in the index, rows ``scope`` sees), cached until
        the next write: counting a scope is a scan, and recall needs it every time."""
        generation = self.generation()
        cached = self._size_cache().get(scope)
        if cached is not None and cached[0] == generation:
            return generation, cached[1], cached[2]
        s_sql, s_params = scope_clause(scope)
        with self._read() as cur:
            total = int(self._exec(cur, "SELECT COUNT(*) FROM memories").fetchone()[0])
            seen = int(
                self._exec(
                    cur, f"SELECT COUNT(*) FROM memories m WHERE {s_sql}", s_params
                ).fetchone()[0]
            )
        sizes = self._size_cache()
        if len(sizes) >= 256:
            sizes.clear()
        sizes[scope] = (generation, total, seen)
        return generation, total, seen

    def _count_cache(self) -> dict[tuple[Scope, str], tuple[int, int, int]]:
        try:
            return self._counts
        except AttributeError:
            self._counts = {}
            return self._counts

    def _size_cache(self) -> dict[Scope, tuple[int, int, int]]:
        try:
            return self._sizes
        except AttributeError:
            self._sizes = {}
            return self._sizes
