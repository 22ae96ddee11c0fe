"""The per-scope statistics of SQLite's keyword search, cached per generation.

BM25 in mindpalace counts what it counts over the rows the caller may see:
idf's N and n and the mean length ``avgdl``. FTS5 computes all three over
its whole index, every agent's memories included, so another agent's
private memories (or their erasure) would move this one's scores, and an
agent planting probe memories could learn from the order of its own hits
whether a word occurs in memories it may not read. ``sqlite_text.py``
re-scores FTS5's answers with the scope's figures; this class keeps the
ones that cost a scan, until the next write.
"""

from __future__ import annotations

from mindpalace.models import Scope
from mindpalace.store.fragments import scope_clause
from mindpalace.store.fts5_bm25 import fts5_idf
from mindpalace.store.sql import SqlStore

__all__ = ["ScopedTextSearch", "fts5_idf"]


class ScopedTextSearch(SqlStore):
    """Per-scope row counts (and, for the backend to fill, mean lengths) for
    ``search_text``; mixed in before a backend's SqlStore."""

    _sizes: dict[Scope, tuple[int, int, int]]
    _lengths: dict[Scope, tuple[int, float]]

    def _collection_sizes(self, scope: Scope) -> tuple[int, int, int]:
        """(generation, rows in the index, rows ``scope`` sees), cached until
        the next write: counting a scope is a scan, and recall needs it every
        time. ``generation`` is read from the store on every search, so
        writes by other processes invalidate the cache too."""
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

    def _size_cache(self) -> dict[Scope, tuple[int, int, int]]:
        try:
            return self._sizes
        except AttributeError:
            self._sizes = {}
            return self._sizes

    def _length_cache(self) -> dict[Scope, tuple[int, float]]:
        try:
            return self._lengths
        except AttributeError:
            self._lengths = {}
            return self._lengths
