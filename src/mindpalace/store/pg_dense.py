"""Dense search inside PostgreSQL, for recall in the database (``index`` database).

Recall's in-process mode loads every vector of a palace into each server
process. In the database mode nothing is loaded: each recall asks the
server for the rows it will rank, with the query's cosine to each computed
where the vectors live (``dense_rows``):

- the ``nearest`` rows the caller may see, by cosine: a scope that sees few
  rows (``EXACT_ROWS`` or fewer, from the per-scope counts ``pg_text.py``
  keeps) has every one of its rows scored exactly, which costs less than an
  HNSW walk that must skip the rows it may not see; a wider one walks
  pgvector's HNSW index with the iterative scan (``relaxed_order``), scope
  and filters inside the query, and ef_search as the in-process graph's;
- the lowest cosine over the visible rows (range normalisation needs it):
  exact when every visible row was scored, else the nearest rows of the
  negated query, from the same index;
- any rows named by id (keyword matches) or by session (session support
  reads whole sessions), with their cosines.

The rows come back as a ``VectorTable`` without vectors (the matrix has no
columns) and the cosines beside it. Everything runs as one read
transaction of two statements sent together (pipeline mode): the settings
of the HNSW walk, then the query.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt

from mindpalace.models import RecallFilters, Scope
from mindpalace.store.base import DenseRows, VectorTable
from mindpalace.store.core import Cursor
from mindpalace.store.fragments import filter_clause, scope_clause
from mindpalace.store.pg_text import ScopeKeyTextSearch
from mindpalace.store.pg_vectors import MAX_DIMENSIONS, PgVector, ef_search

__all__ = ["EXACT_FACTOR", "EXACT_ROWS", "SESSION_ROWS", "DatabaseDense"]

#: a scope that sees more rows than this walks the HNSW index
EXACT_ROWS = 20_000
#: scale of the exact scan's break-even point (``DatabaseDense._exact``)
EXACT_FACTOR = 2.0
#: nearest rows of the negated query asked for the range's low end
_FARTHEST = 8
#: the most rows of whole sessions one ``dense_rows`` reads (the best
#: sessions' first): session support needs the sessions near the top of the
#: list, and every row read costs an index probe and a distance
SESSION_ROWS = 2_000
#: the most rows one ``dense_rows`` returns
_MAX_ROWS = 20_000

# The columns of VectorTable.from_rows, the vector left out (NULL), then the
# cosine: pgvector's negative inner product, negated (the vectors are unit
# length, so it is the cosine the in-process index computes as a product).
_COLUMNS = (
    "m.id, m.agent_id, m.visibility, m.group_name, m.channel, m.archived,"
    " m.superseded_by IS NOT NULL, m.type, m.store, m.category, m.created_at,"
    " NULL, COALESCE(m.session_id, ''), m.source, m.seq, m.kind, m.project,"
    " length(m.content)"
)


class DatabaseDense(ScopeKeyTextSearch):
    """``dense_rows`` over pgvector (mixed in before ``PostgresStore``'s SqlStore)."""

    def dense_rows(
        self,
        model: str,
        query: npt.NDArray[np.float32],
        scope: Scope,
        filters: RecallFilters,
        *,
        nearest: int = 0,
        ids: Sequence[str] = (),
        sessions: Sequence[str] = (),
    ) -> DenseRows | None:
        """The ``nearest`` visible rows matching ``filters`` by cosine to
        ``query`` (with the lowest visible cosine), the visible rows among
        ``ids`` and of ``sessions`` (best first, ``SESSION_ROWS`` at most),
        in write order, each with its cosine
        (-1 without a vector); None where vectors of this size have no index."""
        dims = int(query.shape[0])
        if not 1 <= dims <= MAX_DIMENSIONS:
            return None
        s_sql, s_params = scope_clause(scope)
        f_sql, f_params = filter_clause(filters)
        vector = PgVector.of(query)
        model = self._stored_key(model)  # what the rows carry (``_vector_key``)
        exact = nearest > 0 and self._exact(scope, nearest)
        # A row's cosine, looked up by its own text hash: one index probe
        # per row, which for the few hundred rows of a recall costs less
        # than the hash join over every embedding the planner would choose.
        cosine = (
            "(SELECT -(e.vec <#> ?::vector) FROM embeddings e"
            " WHERE e.model = ? AND e.text_hash = m.embed_hash)"
        )
        head = ""
        head_params: list[Any] = []
        far: tuple[str, list[Any]] | None = None
        parts: list[str] = []
        part_params: list[Any] = []
        if nearest > 0 and exact:
            # Every visible row scored once, and every one returned (few):
            # whole sessions are among them, and the lowest is exact.
            head = (
                f"WITH near AS MATERIALIZED (SELECT m.seq, {cosine} AS sim"
                f" FROM memories m WHERE {s_sql} AND {f_sql}),"
                " low AS (SELECT MIN(sim) AS low FROM near)"
            )
            head_params = [vector, model, *s_params, *f_params]
        elif nearest > 0:
            # ORDER BY the index's own expression, and the partial index's
            # predicate restated, so the planner walks the HNSW index. A
            # row's score is its product with the query, as everywhere: a
            # vector kept in half precision is unit length to about 1e-4
            # only, so the walk's cosine distance is not quite it. The
            # farthest rows (the negated query's nearest) are a second,
            # shallower walk.
            walk = (
                "SELECT m.seq, -(e.vec <#> ?::vector) AS sim"
                " FROM embeddings e JOIN memories m ON m.embed_hash = e.text_hash"
                f" WHERE e.model = ? AND vector_dims(e.vec) = {dims} AND {s_sql} AND {f_sql}"
                f" ORDER BY e.vec::vector({dims}) <=> ?::vector({dims}) LIMIT ?"
            )
            head = f"WITH near AS MATERIALIZED ({walk})"
            scoped = [model, *s_params, *f_params]
            head_params = [vector, *scoped, vector, nearest]
            far = (walk, [vector, *scoped, PgVector.of(-query), _FARTHEST])
        if head:
            parts.append("SELECT seq FROM near")
        if ids:
            parts.append("SELECT m.seq FROM memories m WHERE m.id = ANY (?)")
            part_params.append(list(ids))
        if sessions:  # best sessions first, at most SESSION_ROWS rows
            parts.append(
                "SELECT seq FROM (SELECT m.seq FROM memories m WHERE m.session_id = ANY (?)"
                f" AND {s_sql} AND {f_sql} ORDER BY array_position(?::TEXT[], m.session_id),"
                f" m.seq LIMIT {SESSION_ROWS}) AS s"
            )
            part_params += [list(sessions), *s_params, *f_params, list(sessions)]
        if not parts:
            return DenseRows(VectorTable.from_rows([]), np.empty(0, dtype=np.float32), None)
        if head:  # the nearest rows' cosines were computed on the way
            sim = f"COALESCE(n.sim, {cosine})"
            low = "NULL" if far else "(SELECT low FROM low)"
            source = "memories m LEFT JOIN near n ON n.seq = m.seq"
        else:
            sim, low, source = cosine, "NULL", "memories m"
        sql = (
            f"{head} SELECT {_COLUMNS}, {sim} AS sim, {low} AS low FROM {source}"
            f" WHERE m.seq IN ({' UNION '.join(parts)}) AND {s_sql} AND {f_sql}"
            f" ORDER BY m.seq LIMIT {_MAX_ROWS}"
        )
        ordered = [*head_params, vector, model, *part_params, *s_params, *f_params]
        rows, farthest = self._dense_read(sql, ordered, walk=nearest, far=far)
        table = VectorTable.from_rows([r[:-2] for r in rows])
        sims = np.array([-1.0 if r[-2] is None else float(r[-2]) for r in rows], dtype=np.float32)
        embedded = np.array([r[-2] is not None for r in rows], dtype=bool)
        found_low = next((float(r[-1]) for r in rows if r[-1] is not None), None)
        if farthest:
            found_low = min(float(r[1]) for r in farthest)
        if nearest > 0 and rows and embedded.any():
            seen = float(sims[embedded].min())
            found_low = seen if found_low is None else min(found_low, seen)
        return DenseRows(_with_embedded(table, embedded), sims, found_low, complete=exact)

    def size(self) -> int:
        """Memories in the palace, from the count the write triggers keep."""
        with self._read() as cur:
            row = self._exec(cur, "SELECT docs FROM text_stats WHERE id = 1").fetchone()
        return int(row[0] or 0)

    def _dense_read(
        self,
        sql: str,
        params: Sequence[Any],
        *,
        walk: int,
        far: tuple[str, Sequence[Any]] | None,
    ) -> tuple[list[Any], list[Any]]:
        """The rows of ``sql``, and of the ``far`` walk when given: both
        HNSW walks run under the iterative scan, the first with an
        ef_search of at least ``walk``, the second a shallow one, the
        statements sent together (one round trip)."""
        if far is None:
            with self._read() as cur:
                rows: list[Any] = self._exec(cur, sql, params).fetchall()
            return rows, []
        with self._read() as main, main.connection.transaction():
            conn = main.connection
            farthest = conn.cursor()
            with conn.pipeline():
                _set_walk(main, walk)
                self._exec(main, sql, params)
                _set_walk(farthest, _FARTHEST)
                self._exec(farthest, *far)
            return list(main.fetchall()), list(farthest.fetchall())

    def _exact(self, scope: Scope, nearest: int) -> bool:
        """Whether scoring every row ``scope`` sees costs less than walking
        the HNSW index for ``nearest`` of them.

        The walk meets rows in index order and keeps those the scope sees,
        so it reads about ``nearest * total / seen`` rows; scoring every
        visible row reads ``seen``. Both cost about the same per row (an
        index probe and a distance), so the exact scan wins while ``seen``
        is below about ``sqrt(nearest * total)``, times ``EXACT_FACTOR``
        (measured: BENCHMARKS.md, "Recall in the database"), and never
        beyond ``EXACT_ROWS``.
        """
        with self._read() as cur:
            total, seen = self._sizes(cur, scope)
        if seen <= 0:
            return True
        return seen <= min(EXACT_ROWS, EXACT_FACTOR * math.sqrt(nearest * max(total, seen)))


def _set_walk(cur: Cursor, walk: int) -> None:
    # Local to the read's transaction (set_config's third argument).
    cur.execute(
        "SELECT set_config('hnsw.ef_search', %s, true),"
        " set_config('hnsw.iterative_scan', 'relaxed_order', true)",
        (str(ef_search(walk)),),
    )


def _with_embedded(table: VectorTable, embedded: npt.NDArray[np.bool_]) -> VectorTable:
    return replace(table, embedded=embedded)
