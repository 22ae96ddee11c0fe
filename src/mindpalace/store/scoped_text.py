"""The per-scope statistics of SQLite's keyword search, summed over its partitions.

BM25 in mindpalace counts what it counts over the rows the caller may see:
idf's N and n and the mean length ``avgdl``. FTS5 computes all three over
its whole index, every agent's memories included, so another agent's
private memories (or their erasure) would move this one's scores, and an
agent planting probe memories could learn from the order of its own hits
whether a word occurs in memories it may not read. ``sqlite_text.py``
re-scores FTS5's answers with the scope's figures; this class reads them
from each text partition's counts (kept on write): counting them was a
scan of every row the caller sees, two seconds at a million, at a
process's first search and after every write.
"""

from __future__ import annotations

from mindpalace.models import Scope
from mindpalace.store.core import Cursor
from mindpalace.store.fragments import scope_clause
from mindpalace.store.fts5_bm25 import fts5_idf
from mindpalace.store.sql import SqlStore

__all__ = ["ScopedTextSearch", "fts5_idf"]


class ScopedTextSearch(SqlStore):
    """The rows and tokens ``scope`` sees, and the rows of the whole index,
    for ``search_text``: sums over the text partitions' counts, which the
    triggers keep (``sqlite_text.PARTITION_COUNTS_SCHEMA``); mixed in before
    a backend's SqlStore."""

    def _scope_figures(self, cur: Cursor, scope: Scope) -> tuple[int, int, int]:
        """(rows in the index, rows ``scope`` sees, their tokens), read with
        the caller's cursor just before what it reads next."""
        s_sql, s_params = scope_clause(scope)
        total = self._exec(cur, "SELECT COALESCE(SUM(row_count), 0) FROM memories_fts_parts")
        rows = int(total.fetchone()[0])
        seen, tokens = self._exec(
            cur,
            "SELECT COALESCE(SUM(row_count), 0), COALESCE(SUM(token_count), 0)"
            f" FROM memories_fts_parts m WHERE {s_sql}",
            s_params,
        ).fetchone()
        return rows, int(seen), int(tokens)
