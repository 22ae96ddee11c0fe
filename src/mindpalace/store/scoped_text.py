"""Keyword search whose BM25 statistics count only what the caller may see.

Shared by every backend whose ``Dialect.text_query`` scores with BM25 (FTS5
on SQLite, the BM25-in-SQL of PostgreSQL).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from mindpalace.models import RecallFilters, Scope
from mindpalace.store.base import TextMatch
from mindpalace.store.fragments import filter_clause, scope_clause
from mindpalace.store.sql import SqlStore

__all__ = ["ScopedTextSearch"]


def _fts5_idf(total: int, hits: int) -> float:
    """FTS5's idf (fts5_aux.c ``fts5Bm25Function``): log((N - n + 0.5) / (n + 0.5)),
    floored at 1e-6."""
    idf = math.log(max(total - hits + 0.5, 1e-9) / (hits + 0.5)) if total else 0.0
    return idf if idf > 0 else 1e-6


class ScopedTextSearch(SqlStore):
    """``search_text`` with per-scope idf (mixed in before a backend's SqlStore)."""

    _sizes: dict[Scope, tuple[int, int, int]]

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
        total, seen = self._collection_sizes(scope)
        if seen == total:  # the scope sees every row: its idf is the index's
            return super().search_text(terms, scope, filters, limit=limit)
        s_sql, s_params = scope_clause(scope)
        f_sql, f_params = filter_clause(filters)
        scores: dict[str, float] = {}
        created: dict[str, float] = {}
        with self._read() as cur:
            for term in terms:
                q = self.dialect.text_query([term])
                index_hits, scope_hits = self._exec(
                    cur,
                    f"SELECT COUNT(*), COALESCE(SUM(CASE WHEN {s_sql} THEN 1 ELSE 0 END), 0)"
                    f" FROM {q.source} WHERE {q.where}",
                    [*s_params, *q.params],
                ).fetchone()
                if not scope_hits:
                    continue
                # Sizes are cached per generation; a write racing this read
                # may have added matches since: never count fewer rows than hits.
                weight = _fts5_idf(max(seen, int(scope_hits)), int(scope_hits)) / _fts5_idf(
                    max(total, int(index_hits)), int(index_hits)
                )
                rows = self._exec(
                    cur,
                    f"SELECT m.id, {q.score} AS score, m.created_at FROM {q.source}"
                    f" WHERE {q.where} AND {s_sql} AND {f_sql} ORDER BY score DESC LIMIT ?",
                    [*q.params, *s_params, *f_params, limit],
                ).fetchall()
                for memory_id, score, at in rows:
                    scores[memory_id] = scores.get(memory_id, 0.0) + float(score) * weight
                    created[memory_id] = float(at)
        # The SQL's order: best first, then newest, then id descending.
        ranked = sorted(scores, reverse=True)
        ranked.sort(key=lambda key: (-scores[key], -created[key]))
        found = self.get_many(ranked[:limit], scope)
        return [TextMatch(found[key], scores[key]) for key in ranked[:limit] if key in found]

    def _collection_sizes(self, scope: Scope) -> tuple[int, int]:
        """(rows in the index, rows ``scope`` sees), cached until the next write:
        counting a scope is a scan, and recall needs it every time."""
        generation = self.generation()
        cached = self._size_cache().get(scope)
        if cached is not None and cached[0] == generation:
            return cached[1], cached[2]
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
        return total, seen

    def _size_cache(self) -> dict[Scope, tuple[int, int, int]]:
        try:
            return self._sizes
        except AttributeError:
            self._sizes = {}
            return self._sizes
