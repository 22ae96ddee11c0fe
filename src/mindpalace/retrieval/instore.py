"""Recall in the database: the rows one recall ranks, read from the store.

In the database mode (``Settings.index``) a process keeps no copy of the
palace: each hybrid recall asks the store for the rows it may rank, with
the query's cosine to each computed where the vectors are
(``Store.dense_rows``), and builds a small ``DenseIndex`` of just those
rows. The stages after it (fusion, session support, the graph, ranking)
are the in-process ones, unchanged; only the rows differ, and they are the
rows an approximate in-process search scores too:

1. the ``ann_candidates`` nearest visible rows and every keyword match
   (already read by ``Store.query_facts``), with the lowest visible cosine
   for range normalisation;
2. fused as usual, the sessions of the best eligible rows (``Depths.session``)
   are read whole, as session support reads them in process (unless the
   first read held every visible row already: a scope that sees few rows
   has them all scored exactly, as in process).

The nearest rows do not depend on the keyword matches: the pipeline asks
for them (``nearest_ahead``) before the keyword search and the store
walks its vector index on another connection meanwhile; the matches'
cosines are read after, by id. One client's recall then waits for the
slower of the two reads instead of both (at a million memories on
PostgreSQL each is about half of a recall).

Two reads, then the same arithmetic. The keyword scores are the store's own
BM25 (per-scope idf, in SQL); the graph stage reads entity members from
the store (no warm mention index).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from mindpalace.models import RecallFilters, Scope
from mindpalace.retrieval import hybrid
from mindpalace.retrieval.dense import DenseIndex, DenseView
from mindpalace.retrieval.options import Depths, RecallOptions
from mindpalace.store.base import DenseRows, TextMatch
from mindpalace.store.roles import VectorRows

__all__ = ["Found", "candidates", "nearest_ahead"]


@dataclass(frozen=True, slots=True)
class Found:
    """The rows one recall ranks, as an index, and the query's cosines to them."""

    index: DenseIndex
    sims: npt.NDArray[np.float32]
    low: float | None

    def view(self) -> DenseView:
        """The cosines as the pipeline reads them (every row scored)."""
        return DenseView.scored(self.index, self.sims, self.low)


def _found(rows: DenseRows, model: str, low: float | None) -> Found:
    return Found(DenseIndex(rows.table, generation=0, model=model), rows.sims, low)


def nearest_ahead(
    store: VectorRows,
    model: str,
    query: npt.NDArray[np.float32],
    *,
    scope: Scope,
    filters: RecallFilters,
    options: RecallOptions,
) -> Future[DenseRows | None]:
    """The ``ann_candidates`` nearest rows of ``query`` the caller may see,
    read on a thread of their own (the store reads on a connection of its
    own) while the caller goes on; ``candidates`` takes the result. A
    thread per read, not a pool: nothing outlives the read, and a process
    that forks keeps no pool whose threads it lost."""
    future: Future[DenseRows | None] = Future()

    def read() -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            rows = store.dense_rows(
                model, query, scope, filters, nearest=max(options.ann_candidates, 1)
            )
        except BaseException as exc:  # handed to the caller, raised there
            future.set_exception(exc)
        else:
            future.set_result(rows)

    threading.Thread(target=read, name="mindpalace-nearest", daemon=True).start()
    return future


def candidates(
    store: VectorRows,
    model: str,
    query: npt.NDArray[np.float32],
    *,
    scope: Scope,
    filters: RecallFilters,
    keyword: Sequence[TextMatch],
    allowed: frozenset[str] | None,
    options: RecallOptions,
    depths: Depths,
    nearest: Future[DenseRows | None] | None = None,
) -> Found | None:
    """The rows a hybrid recall of ``query`` ranks, read from ``store``
    (its nearest rows, the ``keyword`` matches, and the sessions of the
    best of them, whole); None when the store cannot search these vectors.
    ``nearest``, when given, is the nearest rows' read begun before
    (``nearest_ahead``): only the matches are read here."""
    ids = [match.memory.id for match in keyword]
    if nearest is None:
        first = store.dense_rows(
            model, query, scope, filters, nearest=max(options.ann_candidates, 1), ids=ids
        )
    else:
        first = _with_named(
            store, model, query, scope=scope, filters=filters, walked=nearest.result(), ids=ids
        )
    if first is None:
        return None
    found = _found(first, model, first.low)
    shown = hybrid.visible(found.index, scope, filters, allowed)
    fused = hybrid.fuse(
        hybrid.stored_keywords(found.index, keyword, shown),
        found.view(),
        shown,
        found.index,
        options=options,
        depths=depths,
    )
    sessions = hybrid.best_sessions(fused, found.index, depth=depths.session)
    if first.complete or not sessions:
        return found
    more = store.dense_rows(model, query, scope, filters, sessions=sessions)
    if more is None:
        return found
    return _found(_merged(first, more), model, first.low)


def _with_named(
    store: VectorRows,
    model: str,
    query: npt.NDArray[np.float32],
    *,
    scope: Scope,
    filters: RecallFilters,
    walked: DenseRows | None,
    ids: Sequence[str],
) -> DenseRows | None:
    """The ``walked`` nearest rows and the visible rows among ``ids``, as one
    read of both gives them: the same rows, cosines and lowest cosine. Rows
    read whole (``complete``) hold every match already; of the others only
    the matches the walk did not meet are read."""
    if walked is None or walked.complete:
        return walked
    met = set(walked.table.ids.tolist())
    unmet = [i for i in ids if i not in met]
    if not unmet:
        return walked
    named = store.dense_rows(model, query, scope, filters, ids=unmet)
    if named is None:
        return walked
    merged = _merged(walked, named)
    # The lowest cosine counts the matches' own, as a read of both does.
    seen = named.sims[named.table.embedded] if len(named.table.embedded) else named.sims[:0]
    low = walked.low
    if seen.size:
        low = float(seen.min()) if low is None else min(low, float(seen.min()))
    return replace(merged, low=low)


def _merged(first: DenseRows, more: DenseRows) -> DenseRows:
    """``first``'s rows and those of ``more`` it lacks, in write order (a
    session's rows must keep their turn order)."""
    new = np.flatnonzero(~np.isin(more.table.seq, first.table.seq))
    table = first.table.extend(more.table.take(new))
    sims = np.concatenate((first.sims, more.sims[new]))
    order = np.argsort(table.seq, kind="stable")
    return DenseRows(table.take(order), sims[order], first.low)
