"""The hybrid stages over a dense index's rows, each a function from one
value to the next: the rows a recall may see (``Visible``), keyword
evidence (``KeywordScores``), its fusion with the dense cosines
(``Fused``), and session support, which makes the candidate list
(``Candidates``). No store reads: what they need was read before
(``Store.query_facts``) or is in the warm index. The formulas are in
``fusion.py`` and ``stages.py``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mindpalace.models import Memory, RecallFilters, Scope
from mindpalace.retrieval import stages
from mindpalace.retrieval.dense import DenseIndex, DenseView
from mindpalace.retrieval.fusion import rrf
from mindpalace.retrieval.keyword import top_scored
from mindpalace.retrieval.options import Depths, RecallOptions
from mindpalace.retrieval.time.intervals import Interval
from mindpalace.store.base import TextMatch
from mindpalace.store.fragments import to_epoch

__all__ = [
    "Candidate",
    "Candidates",
    "Fused",
    "KeywordScores",
    "Visible",
    "best_sessions",
    "fuse",
    "in_windows",
    "stored_keywords",
    "supported",
    "visible",
    "warm_keywords",
    "warm_matches",
]

Candidate = tuple[float, str, int | None]  # (value, memory id, dense row or None)
Mask = npt.NDArray[np.bool_]
Floats = npt.NDArray[np.float64]
Rows = npt.NDArray[np.int64]

# At most this many rows of the best sessions are scored when dense search
# was approximate (``_session_rows``).
_SESSION_ROWS = 20_000

# A keyword match among at most one row in this many is scored over those
# rows alone (``warm_matches``).
FEW_ROWS = 4


@dataclass(frozen=True, slots=True)
class Visible:
    """The index rows a recall may rank: ``rows`` the scope may see that
    match the filters, and ``embedded``, those of them with a vector."""

    rows: Mask
    embedded: Mask


def visible(
    index: DenseIndex, scope: Scope, filters: RecallFilters, allowed: frozenset[str] | None
) -> Visible:
    """The rows of ``index`` that ``scope`` and ``filters`` admit (and,
    for filters the index cannot apply, ``allowed`` names)."""
    rows = index.mask(scope, filters, allowed)
    return Visible(rows, rows & index.embedded)


@dataclass(frozen=True, slots=True)
class KeywordScores:
    """A recall's keyword evidence.

    Attributes:
        found: the rows with a score, ascending.
        values: their raw BM25 (each row not in ``found`` scores 0: no
            match, or not visible), kept for these rows alone: an array of
            every row would cost a pass over a million at a million.
        size: the rows of the index.
        loose: raw BM25 of matched memories the index has no visible row for.
        rank: the keyword rank of every matched memory (1 is the best).
        matched: the memories read with the matches (the store's search).
    """

    found: Rows
    values: Floats
    size: int
    loose: Mapping[str, float]
    rank: Mapping[str, int]
    matched: Mapping[str, Memory]

    @property
    def best(self) -> float:
        """The best raw score of any match."""
        high = float(self.values.max(initial=0.0))
        return max(high, max(self.loose.values(), default=0.0))

    def at(self, rows: Rows) -> Floats:
        """The raw BM25 of each of ``rows``."""
        if not self.found.shape[0]:
            return np.zeros(rows.shape[0], dtype=np.float64)
        place = np.minimum(np.searchsorted(self.found, rows), self.found.shape[0] - 1)
        return np.where(self.found[place] == rows, self.values[place], 0.0)

    def of(self, row: int) -> float:
        """The raw BM25 of one row."""
        return float(self.at(np.array([row], dtype=np.int64))[0])

    def every(self) -> Floats:
        """The raw BM25 of every row, as one array (for a pass over them all)."""
        out = np.zeros(self.size, dtype=np.float64)
        out[self.found] = self.values
        return out


def _scores(
    size: int,
    scored: Mapping[int, float],
    loose: Mapping[str, float],
    rank: Mapping[str, int],
    matched: Mapping[str, Memory],
) -> KeywordScores:
    found = np.array(sorted(row for row, value in scored.items() if value > 0), dtype=np.int64)
    values = np.array([scored[row] for row in found.tolist()], dtype=np.float64)
    return KeywordScores(found, values, size, loose, rank, matched)


def warm_keywords(
    index: DenseIndex, terms: Sequence[str], scope: Scope, shown: Visible, *, depth: int
) -> KeywordScores:
    """Keyword evidence from the index's warm keyword index: the ``depth``
    best visible rows."""
    assert index.keyword is not None
    best, scored = index.keyword_best(terms, scope, shown.rows, depth)
    ids = index.table.ids
    rank = {str(ids[row]): place for place, row in enumerate(best, start=1)}
    return _scores(len(index), scored, {}, rank, {})


def stored_keywords(
    index: DenseIndex, matches: Sequence[TextMatch], shown: Visible
) -> KeywordScores:
    """Keyword evidence from the store's search (``matches``, best first);
    memories the index has no visible row for are kept aside as ``loose``."""
    scored: dict[int, float] = {}
    loose: dict[str, float] = {}
    rank: dict[str, int] = {}
    matched: dict[str, Memory] = {}
    for place, match in enumerate(matches, start=1):
        matched[match.memory.id] = match.memory
        rank[match.memory.id] = place
        row = index.row_of(match.memory.id)
        if row is not None and shown.rows[row]:
            scored[row] = match.bm25
        else:
            loose[match.memory.id] = match.bm25
    return _scores(len(index), scored, loose, rank, matched)


def warm_matches(
    index: DenseIndex,
    scope: Scope,
    terms: Sequence[str],
    limit: int,
    filters: RecallFilters | None = None,
) -> list[tuple[str, float]]:
    """(memory id, score) of the ``limit`` best keyword matches of ``terms``
    among the rows ``scope`` sees under ``filters`` (the default ones when
    None), from the warm keyword index: the store's ``search_text`` scoring
    (FTS5's BM25, per-scope idf), over every row rather than the union of
    each term's best rows."""
    assert index.keyword is not None
    table = index.table
    shown = index.mask(scope, filters or RecallFilters())
    # Few rows to choose among (a category, a scope part): score only them.
    few = int(np.count_nonzero(shown)) * FEW_ROWS < len(table)
    scored = index.keyword_scores(terms, scope, shown if few else None)
    best = top_scored(scored, shown, created_at=table.created_at, ids=table.ids, limit=limit)
    return [(str(table.ids[row]), score) for row, score in best]


@dataclass(frozen=True, slots=True)
class Fused:
    """Keyword and dense evidence fused over the rows.

    Attributes:
        keyword: the keyword evidence.
        view: the query's cosines (rows scored later are filled in).
        shown: the rows the recall may rank.
        rows: the fused score of each row (0 where not visible: ``shown``
            says which rows are).
        eligible: rows that are candidates by themselves: keyword evidence,
            or a cosine at the floor or above.
        loose: fused scores of the keyword matches without a visible row.
        chosen: the eligible rows, ascending (kept as found: finding them
            again would take a pass over every row's flag).
    """

    keyword: KeywordScores
    view: DenseView
    shown: Visible
    rows: Floats
    eligible: Mask
    loose: Mapping[str, float]
    chosen: Rows

    @property
    def ranked_dense(self) -> Mask:
        """The rows dense ranks count: those scored (all of them, unless
        an approximate search proposed candidates: then the best are
        among them)."""
        known = self.view.known
        return self.shown.embedded if known is None else self.shown.embedded & known


def fuse(
    keyword: KeywordScores,
    view: DenseView,
    shown: Visible,
    index: DenseIndex,
    *,
    options: RecallOptions,
    depths: Depths,
) -> Fused:
    """Weighted fusion of range-normalised scores, or RRF (``options.fusion``)."""
    loose = keyword.loose
    sims = view.sims
    scale = 0.0
    if options.fusion == "rrf":
        rows, fused_loose = _rrf_arrays(
            keyword, sims, shown.embedded, options, depth=depths.keyword
        )
    else:
        best = keyword.best
        scale = 1.0 / best if best > 0 else 0.0
        fused_loose = {key: options.sparse_weight * scale * v for key, v in loose.items()}
    if view.partial:
        rows, eligible, chosen = _fuse_scored(
            view, keyword, shown, index, scale=scale, depth=depths.session, options=options
        )
    else:
        bm25 = keyword.every()
        if options.fusion != "rrf":
            dense_norm = stages.range_normalise(sims, shown.embedded)
            rows = options.sparse_weight * scale * bm25 + options.dense_weight * dense_norm
        # Normalisation used every visible row; candidacy needs keyword
        # evidence or a cosine above the floor.
        eligible = shown.rows & ((bm25 > 0) | (index.embedded & (sims >= options.dense_floor)))
        rows = np.where(shown.rows, rows, 0.0)
        chosen = np.flatnonzero(eligible)
    return Fused(keyword, view, shown, rows, eligible, fused_loose, chosen)


@dataclass(frozen=True, slots=True)
class Candidates:
    """The candidate list (fused value plus session support, memory id,
    row) and the session support each row received."""

    items: list[Candidate]
    support: Mapping[int, float]


def supported(
    fused: Fused, index: DenseIndex, *, options: RecallOptions, depths: Depths
) -> Candidates:
    """Session support of the best eligible rows and their same-session
    neighbours; a neighbour below the relevance floor stays a candidate
    only if its session lifts it. The loose matches join as they are."""
    support = _session_support(fused, index, depth=depths.session, options=options)
    items: list[Candidate] = [
        (float(fused.rows[row]) + value, str(index.table.ids[row]), row)
        for row, value in support.items()
        if fused.eligible[row] or value > 0
    ]
    items += [(value, key, None) for key, value in fused.loose.items()]
    return Candidates(items, support)


#: how many memories written in the windows a query names join its
#: candidates, of each kind (written on its own, a conversation turn): the
#: best by cosine of those not already candidates
WINDOW_CANDIDATES = 10
#: ... when the windows hold at most this many memories the caller may see
#: (a window that holds more says too little to bring any in)
WINDOW_ROWS = 2_000
#: ... each counting at least as the candidate at this quantile of the
#: values of those found by words or meaning (0: the weakest)
WINDOW_QUANTILE = 0.75


def in_windows(
    fused: Fused, index: DenseIndex, windows: Sequence[Interval], taken: Candidates
) -> tuple[Candidates, list[Candidate]]:
    """``taken`` with the memories written within one of the closed
    ``windows`` a query names counted as fair candidates, and those of them
    it lacks (no keyword match, a cosine under the floor: "what went wrong
    last week" shares no word with "the analyser showed error E-14").

    Each memory of the window counts at least as the candidate at
    ``WINDOW_QUANTILE`` of the others (the upper quartile): written when the
    query asks about, it is as likely an answer as a fair match of its
    words. Of those not taken, the ``WINDOW_CANDIDATES`` nearest the query
    of those written on their own and as many of the conversation turns
    join (a busy chat that week does not crowd out the one fact written
    then). The time prior then lifts them like any memory of the window.

    Returns:
        The candidates (``taken``'s, raised where written in the window, and
        the new ones), and the new ones alone.
    """
    closed = [w for w in windows if w.closed]
    if not closed:
        return taken, []
    created = index.table.created_at
    inside = np.zeros(len(index), dtype=bool)
    for window in closed:
        inside |= (created >= (to_epoch(window.start) or 0.0)) & (
            created < (to_epoch(window.end) or 0.0)
        )
    inside &= fused.shown.rows
    if not 0 < int(np.count_nonzero(inside)) <= WINDOW_ROWS:
        return taken, []
    # A cosine at the bottom of the range (or under the proposals of an
    # approximate search, where it was never scored) fuses to 0, which no
    # time prior lifts; the weakest candidate's value left a window's memory
    # under keyword matches of other weeks (the everyday palaces,
    # BENCHMARKS.md).
    found = sorted(value for value, _, _ in taken.items if value > 0)
    base = found[min(len(found) - 1, int(WINDOW_QUANTILE * len(found)))] if found else 0.0
    items: list[Candidate] = []
    for value, key, row in taken.items:
        written_then = row is not None and bool(inside[row])
        if row is not None:
            inside[row] = False
        items.append((max(value, base) if written_then else value, key, row))
    rows = np.flatnonzero(inside)
    fused.view.fill(rows[index.embedded[rows]])  # scored where only some rows were
    near = np.where(index.embedded[rows], fused.view.sims[rows], -1.0)
    turn = index.sessions.in_session[rows]
    chosen: list[int] = []
    for kind in (~turn, turn):
        ranked = rows[kind][np.argsort(-near[kind], kind="stable")]
        chosen += ranked[:WINDOW_CANDIDATES].tolist()
    values = fused.rows[chosen].tolist()  # finite: every row here is visible
    added: list[Candidate] = [
        (max(float(v), base), str(index.table.ids[row]), int(row))
        for v, row in zip(values, chosen, strict=True)
    ]
    return Candidates([*items, *added], taken.support), added


def best_sessions(fused: Fused, index: DenseIndex, *, depth: int) -> list[str]:
    """The sessions of the ``depth`` best eligible rows, best first: those
    session support reads whole."""
    table = index.table
    found: dict[str, None] = {}
    for row in _session_top(fused.rows, fused.chosen, depth):
        if index.sessions.in_session[row]:
            found.setdefault(str(table.session_names[int(table.session[row])]))
    return list(found)


def _fuse_scored(
    view: DenseView,
    keyword: KeywordScores,
    shown: Visible,
    index: DenseIndex,
    *,
    scale: float,
    depth: int,
    options: RecallOptions,
) -> tuple[Floats, Mask, Rows]:
    """Weighted fusion when only some rows were scored (``view.partial``):
    the same formula as over every row, evaluated on the scored rows; an
    unscored visible row has no keyword match and a cosine below the best
    proposals', so it fuses to 0 and is not a candidate. The whole sessions
    of the best rows are then scored too, since session support reads them.
    Returns the fused rows, the eligible ones' flags and those rows."""
    sims = view.sims
    mask, dense_mask = shown.rows, shown.embedded
    # Zero where not visible too (``mask`` says which): no pass over every row.
    fused_rows = np.zeros(mask.shape[0], dtype=np.float64)
    eligible = np.zeros(mask.shape[0], dtype=bool)
    scored = view.scored_rows()
    seen = scored[dense_mask[scored]]
    high = float(sims[seen].max()) if seen.shape[0] else 0.0
    low = min(view.low if view.low is not None else high, high)

    def fuse_rows(rows: Rows) -> Rows:
        rows = rows[mask[rows]]
        if high > low:
            dense = np.clip((sims[rows] - low) / (high - low), 0.0, 1.0)
        else:
            dense = np.ones(rows.shape[0])
        dense = np.where(dense_mask[rows], dense, 0.0)
        bm25 = keyword.at(rows)
        fused_rows[rows] = options.sparse_weight * scale * bm25 + (options.dense_weight * dense)
        flags = (bm25 > 0) | (index.embedded[rows] & (sims[rows] >= options.dense_floor))
        eligible[rows] = flags
        return rows[flags]

    first = np.sort(fuse_rows(scored))
    # Rows ``fill`` scores are ones not scored before: the two sets are apart.
    more = fuse_rows(view.fill(_session_rows(fused_rows, first, index, depth)))
    chosen = np.sort(np.concatenate((first, more))) if more.shape[0] else first
    return fused_rows, eligible, chosen


def _session_top(fused_rows: Floats, chosen: Rows, depth: int) -> list[int]:
    """The ``depth`` best of the ``chosen`` (eligible, ascending) rows, which
    session support starts from."""
    k = min(depth, chosen.shape[0])
    if k <= 0:
        return []
    if chosen.shape[0] > k:
        chosen = chosen[np.argpartition(-fused_rows[chosen], k - 1)[:k]]
    kept: list[int] = chosen.tolist()
    return kept


def _session_rows(fused_rows: Floats, chosen: Rows, index: DenseIndex, depth: int) -> Rows:
    """Every row of the sessions of the best eligible rows (``chosen``; at
    most ``_SESSION_ROWS``, best sessions first)."""
    layout = index.sessions
    parts: list[Rows] = []
    starts: set[int] = set()
    total = 0
    for row in _session_top(fused_rows, chosen, depth):
        if not layout.in_session[row]:
            continue
        key = layout.key(row)
        if key in starts:
            continue
        starts.add(key)
        part, _ = layout.members(row)
        total += part.shape[0]
        if total > _SESSION_ROWS:
            break
        parts.append(part)
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)


def _session_support(
    fused: Fused, index: DenseIndex, *, depth: int, options: RecallOptions
) -> dict[int, float]:
    """Session support of the best eligible rows and of their same-session
    neighbours, which may climb on a strong memory next to them even below
    the relevance floor (they are its context)."""
    chosen: set[int] = set()
    top = _session_top(fused.rows, fused.chosen, depth)
    visible = fused.shown.rows
    for row, _, neighbours in stages.visible_neighbours(visible, top, index.sessions):
        chosen.add(row)  # with the nearest visible turn each side
        chosen.update(neighbours)
    return stages.session_support(
        fused.rows,
        visible,
        sorted(chosen),
        index.sessions,
        neighbour_weight=options.neighbour_weight,
        session_weight=options.session_weight,
        session_top=options.session_top,
        lengths=index.table.length,
        self_contained=options.self_contained,
    )


def _rrf_arrays(
    keyword: KeywordScores,
    sims: npt.NDArray[np.float32],
    mask: Mask,
    options: RecallOptions,
    *,
    depth: int,
) -> tuple[Floats, dict[str, float]]:
    """RRF over the top ``depth`` of each list, as arrays over the dense rows."""
    count = keyword.size
    sparse_items: list[tuple[tuple[str, int | str], float]] = [
        (("r", r), v) for r, v in zip(keyword.found.tolist(), keyword.values.tolist(), strict=True)
    ]
    sparse_items += [(("l", key), value) for key, value in keyword.loose.items()]
    sparse_items.sort(key=lambda item: -item[1])
    sparse_order = [key for key, _ in sparse_items]
    masked = np.where(mask, sims, -np.inf)
    dense_top = np.argsort(-masked, kind="stable")[: max(depth, 1)]
    dense_order: list[tuple[str, int | str]] = [
        ("r", int(r)) for r in dense_top if np.isfinite(masked[r])
    ]
    fused = dict(
        rrf(
            [sparse_order, dense_order],
            k=options.rrf_k,
            weights=[options.sparse_weight, options.dense_weight],
        )
    )
    scale = (options.sparse_weight + options.dense_weight) / (options.rrf_k + 1)
    out = np.zeros(count, dtype=np.float64)
    loose_out: dict[str, float] = {}
    for (kind, key), value in fused.items():
        if kind == "r":
            out[int(key)] = value / scale
        else:
            loose_out[str(key)] = value / scale
    return out, loose_out
