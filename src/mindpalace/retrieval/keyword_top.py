"""The best keyword matches without scoring every row a common word holds.

At a million memories a query's words hold a few hundred thousand
postings in the rows a scope sees ("project" alone 190,000), and scoring
each took most of a recall's keyword stage; yet only the ``limit`` best
rows are kept. ``best_rows`` finds the same rows with the same scores
while reading the common words' postings only for rows a rarer word
already matched (the MaxScore strategy of Turtle and Flood, "Query
evaluation: strategies and optimizations", 1995):

1. Each term's share of a row's score is at most ``idf * (k1 + 1) *
   tf_max / (tf_max + k1 (1 - b))``: its largest count, in a row of no
   length. Terms are taken rarest (highest bound) first; each one's rows
   join the candidates, and their partial scores (the terms taken so far)
   give a floor: the ``limit``-th best partial score among the candidates
   the caller may see. Every candidate's full score is at least its partial
   one, so ``limit`` visible rows score at least the floor.
2. Once the bounds of the terms not taken sum to less than the floor, a
   row none of the taken terms holds scores less than ``limit`` rows
   already do: it can be neither among the best nor tied with the last.
3. The candidates are scored in full, every term in the query's order,
   the common ones read only at the candidates' rows: each score is the
   float ``KeywordIndex.scores`` gives, and ``ordered_rows`` orders them as
   ``top_rows`` orders a full array.

Few postings (``PRUNE_POSTINGS``) are scored as before, every row.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from mindpalace.retrieval.keyword import (
    KeywordIndex,
    Occurrences,
    ScopeParts,
    ordered_rows,
    top_scored,
)
from mindpalace.store.fts5_bm25 import K1

__all__ = ["PRUNE_POSTINGS", "best_rows"]

#: below this many postings in all, every row a query word holds is scored
PRUNE_POSTINGS = 50_000
#: a bound's relative slack for the rounding of the scores it bounds
_SLACK = 1e-9

Mask = npt.NDArray[np.bool_]
Floats = npt.NDArray[np.float64]
Rows = npt.NDArray[np.int64]


class _Scratch(threading.local):
    """Per thread, a float and a flag per row, all zero between uses (each
    use clears what it set): a fresh array of a million rows would cost
    more to allocate and fault in than the rows the search reads."""

    def __init__(self) -> None:
        self.sums: Floats = np.zeros(0, dtype=np.float64)
        self.taken: Mask = np.zeros(0, dtype=bool)

    def sized(self, rows: int) -> tuple[Floats, Mask]:
        if self.sums.shape[0] < rows:
            size = max(rows, self.sums.shape[0] * 5 // 4)
            self.sums = np.zeros(size, dtype=np.float64)
            self.taken = np.zeros(size, dtype=bool)
        return self.sums, self.taken


_SCRATCH = _Scratch()


def best_rows(
    index: KeywordIndex,
    query_words: Sequence[str],
    visible: Mask,
    *,
    parts: ScopeParts | None,
    shown: Mask,
    created_at: npt.NDArray[np.float64],
    ids: npt.NDArray[np.object_],
    limit: int,
    prune_from: int = PRUNE_POSTINGS,
) -> tuple[list[int], dict[int, float]]:
    """``top_rows`` of ``index.scores(query_words, visible, parts=parts)``
    among the ``shown`` rows, with each chosen row's score: the same rows,
    order and floats, without scoring every posting of a common word.

    Args:
        prune_from: the postings in all from which the common words are
            read at the candidates' rows only.
    """
    found = index.occurrences(query_words, visible, parts=parts)
    postings = sum(int(term.rows.shape[0]) for term in found.terms)
    if postings < prune_from or limit <= 0:
        scored = index.scores_of(found)
        best = top_scored(scored, shown, created_at=created_at, ids=ids, limit=limit)
        return [row for row, _ in best], dict(best)
    sums, taken = _SCRATCH.sized(len(index))
    union: list[Rows] = []
    try:
        chosen, values = _scored(found, shown, limit, sums=sums, taken=taken, union=union)
    finally:
        if union:
            every = np.concatenate(union)
            sums[every] = 0.0
            taken[every] = False
    best = ordered_rows(chosen, values, created_at=created_at, ids=ids, limit=limit)
    return [row for row, _ in best], dict(best)


def _scored(
    found: Occurrences,
    shown: Mask,
    limit: int,
    *,
    sums: Floats,
    taken: Mask,
    union: list[Rows],
) -> tuple[Rows, Floats]:
    """The visible candidates with a positive score, and their scores
    (``sums`` and ``taken`` zero on entry; the rows set are added to
    ``union``, which the caller clears)."""
    # One bound per distinct term, counted once per occurrence (a word
    # the query says twice in two forms adds its share twice).
    bounds: dict[str, float] = {}
    first: dict[str, int] = {}
    for at, term in enumerate(found.terms):
        top = float(term.tf.max())
        share = term.idf * (K1 + 1.0) * top / (top + found.floor)
        bounds[term.phrase] = bounds.get(term.phrase, 0.0) + share
        first.setdefault(term.phrase, at)
    order = sorted(bounds, key=lambda p: (-bounds[p], found.terms[first[p]].rows.shape[0]))
    rest = sum(bounds.values())
    floor = 0.0
    # The shares of the terms taken, per occurrence: the full sums reuse them.
    weighed: dict[int, Floats] = {}
    for step, phrase in enumerate(order):
        if rest * (1.0 + _SLACK) + _SLACK < floor * (1.0 - _SLACK):
            break
        rest -= bounds[phrase]
        for at, term in enumerate(found.terms):
            if term.phrase == phrase:
                weighed[at] = found.weigh(term, term.rows, term.tf)
                sums[term.rows] += weighed[at]
        rows = found.terms[first[phrase]].rows
        fresh = rows[~taken[rows]]
        taken[fresh] = True
        union.append(fresh)
        if step + 1 < len(order):  # the floor decides whether another term is read
            every = np.concatenate(union)
            partial = sums[every[shown[every]]]
            if partial.shape[0] >= limit:
                kth = partial.shape[0] - limit
                floor = float(np.partition(partial, kth)[kth])
    every = np.concatenate(union)
    sums[every] = 0.0
    # In full, term by term in the query's order: ``scores``'s sums.
    for at, term in enumerate(found.terms):
        known = weighed.get(at)
        if known is not None:
            sums[term.rows] += known
            continue
        kept = taken[term.rows]
        rows, tf = term.rows[kept], term.tf[kept]
        sums[rows] += found.weigh(term, rows, tf)
    chosen = every[shown[every]]
    values = sums[chosen]
    positive = values > 0
    return chosen[positive], values[positive]
