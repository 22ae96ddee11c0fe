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

from typing import NamedTuple

from mindpalace.models import Scope
from mindpalace.store.core import Cursor
from mindpalace.store.fragments import scope_clause
from mindpalace.store.fts5_bm25 import fts5_idf
from mindpalace.store.sql import SqlStore

__all__ = ["ScopeFigures", "ScopedTextSearch", "fts5_idf"]


class ScopeFigures(NamedTuple):
    """What a scoped search counts over: the rows of the whole index, the
    partitions ``scope`` sees that hold rows (their scope columns), and
    those partitions' rows and tokens."""

    total: int
    parts: list[tuple[str, str, str, str]]
    seen: int
    tokens: int


class ScopedTextSearch(SqlStore):
    """The rows and tokens ``scope`` sees, its partitions, and the rows of
    the whole index, for ``search_text``: read from the text partitions'
    counts, which the triggers keep (``sqlite_text.PARTITION_COUNTS_SCHEMA``);
    mixed in before a backend's SqlStore."""

    def _scope_figures(self, cur: Cursor, scope: Scope) -> ScopeFigures:
        """``scope``'s figures, read with the caller's cursor just before
        what it reads next."""
        s_sql, s_params = scope_clause(scope)
        total = self._exec(cur, "SELECT COALESCE(SUM(row_count), 0) FROM memories_fts_parts")
        rows = int(total.fetchone()[0])
        parts, seen, tokens = [], 0, 0
        for agent, visibility, group, channel, count, size in self._exec(
            cur,
            "SELECT agent_id, visibility, group_name, channel, row_count, token_count"
            f" FROM memories_fts_parts m WHERE {s_sql} AND row_count > 0",
            s_params,
        ).fetchall():
            parts.append((str(agent), str(visibility), str(group), str(channel)))
            seen += int(count)
            tokens += int(size)
        return ScopeFigures(rows, parts, seen, tokens)
