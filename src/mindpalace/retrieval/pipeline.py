"""The recall pipeline: sparse + dense -> fusion -> session support -> gating
-> ranking.

The store is asked for keyword candidates (scope and filters applied inside
it) and for the memories finally chosen (scope applied again). Dense scores
come from the warm ``DenseIndex`` under a scope-and-filter mask. Fusion and
the later stages are arithmetic over score arrays (``fusion.py`` and
``stages.py`` hold the formulas).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

import numpy as np
import numpy.typing as npt

from mindpalace.models import Hit, HitList, Memory, RecallFilters, Scope
from mindpalace.retrieval import scorer as learned
from mindpalace.retrieval import stages, timestage
from mindpalace.retrieval.anchors import TextSearch
from mindpalace.retrieval.dense import DenseIndex, DenseView
from mindpalace.retrieval.fusion import rrf
from mindpalace.retrieval.graphstage import Expansion, constraints_for, expand, redundant
from mindpalace.retrieval.keyword import top_rows
from mindpalace.retrieval.sparse import query_terms, salient_terms
from mindpalace.store.base import Store, TextMatch

__all__ = ["NOTHING_RELEVANT", "TEXT_ONLY_NOTICE", "RecallOptions", "recall", "warm_text_search"]

TEXT_ONLY_NOTICE = "Using text search (semantic search is not available)."
NOTHING_RELEVANT = "Nothing relevant is stored: the query names {terms}, which no memory mentions."


@dataclass(frozen=True, slots=True)
class RecallOptions:
    """Constants of the pipeline, chosen on the LoCoMo development split with
    leave-one-conversation-out checks (BENCHMARKS.md holds the ablations).

    Attributes:
        candidates: how many keyword candidates the store returns.
        fusion: ``"weighted"`` (normalised scores, weighted sum) or ``"rrf"``.
        sparse_weight / dense_weight: list weights in fusion (0 drops a list).
        rrf_k: the RRF constant.
        neighbour_weight: share of the better adjacent memory's score (same
            session) a memory receives.
        session_weight: share of its session's mean top score a memory receives.
        session_top: how many of a session's best memories that mean covers.
        unknown_entity_gate: answer nothing when the query names things no
            visible memory mentions.
        dense_floor: a memory with no keyword match needs at least this
            cosine similarity to be a candidate at all.
        prior_weights: how far strength, confidence and recency (in that
            order) may lower a relevance score (``stages.prior``).
        floor: final scores below this are dropped.
        expand: run graph propagation (seed 004's ``expand``).
        graph_seeds: how many of the best fused candidates seed propagation.
        graph_weight: share of a propagated score added to a memory's relevance.
        graph_hops: 1 (seed -> entity -> memory) or 2 (through a co-occurring entity).
        graph_max_degree: entities mentioned by more visible memories are hubs,
            not traversed.
        graph_budget_ms: past this, the second hop is skipped.
        redundancy: a memory only the graph brought in is dropped when its
            embedding is this close (cosine) to a hit already chosen.
        time_window_weight: share of relevance added to a memory whose time
            falls in a time the query names ("last week", "in May 2023";
            ``timestage``); 0 turns it off.
        time_when_weight: share added to a memory that states a time when
            the query asks when; 0 turns it off.
        time_pool: how many of the best candidates the time prior looks at.
        ann_candidates: in a palace with an HNSW graph (``ann.py``), how
            many nearest rows it proposes for exact scoring (weighted
            fusion only); 0 scores every row exactly.
    """

    candidates: int = 200
    fusion: str = "weighted"
    sparse_weight: float = 0.4
    dense_weight: float = 0.6
    rrf_k: float = 60.0
    neighbour_weight: float = 0.3
    session_weight: float = 0.5
    session_top: int = 3
    unknown_entity_gate: bool = True
    dense_floor: float = 0.3
    floor: float = 0.0
    prior_weights: tuple[float, float, float] = (0.15, 0.10, 0.10)
    expand: bool = True
    graph_seeds: int = 5
    graph_weight: float = 0.15
    graph_hops: int = 2
    graph_max_degree: int = 50
    graph_budget_ms: float = 25.0
    redundancy: float = 0.95
    time_window_weight: float = 0.2
    time_when_weight: float = 0.3
    time_pool: int = 50
    ann_candidates: int = 400


def recall(
    store: Store,
    *,
    query: str,
    scope: Scope,
    filters: RecallFilters,
    limit: int,
    now: datetime,
    query_vector: npt.NDArray[np.float32] | None,
    dense_index: DenseIndex | None,
    options: RecallOptions,
    scorer: learned.ScorerWeights | None = None,
) -> HitList:
    """Run the pipeline; without a query vector it is keyword search alone.
    With a learned ``scorer``, the best ``scorer.DEPTH`` candidates (``limit``
    when larger) are re-ranked by it before the list is cut to ``limit``."""
    mode = "text" if query_vector is None or dense_index is None else "hybrid"
    notice = TEXT_ONLY_NOTICE if mode == "text" else None
    passed: tuple[str, ...] = ()
    if options.unknown_entity_gate:
        salient = salient_terms(query)
        passed = (f"unknown-entity: named {', '.join(salient)}",) if salient else ()
        if salient:
            present = store.terms_present(salient, scope, include_archived=filters.include_archived)
            absent = [t for t in salient if t not in present]
            if len(absent) * 2 > len(salient):
                names = ", ".join(repr(t) for t in absent)
                return HitList([], mode=mode, notice=NOTHING_RELEVANT.format(terms=names))

    clock = _Stopwatch()
    wanted, limit = limit, limit if scorer is None else max(limit, learned.DEPTH)
    when = timestage.read_query(query, now)
    terms = query_terms(query)
    pool = max(options.candidates, limit)
    warm = mode == "hybrid" and dense_index is not None and dense_index.keyword is not None
    # With a warm keyword index the hybrid path scores keywords in memory.
    text_matches = [] if warm else store.search_text(terms, scope, filters, limit=pool)
    clock.lap("sparse")
    if mode == "text":
        substring = store.search_substring(
            [t for t in terms if len(t) >= 3], scope, filters, limit=limit
        )
        hits = _text_only(
            store,
            text_matches,
            substring,
            scope=scope,
            when=when,
            now=now,
            limit=limit,
            options=options,
            notice=notice,
        )
    else:
        assert query_vector is not None and dense_index is not None
        hits = _hybrid(
            store,
            text_matches,
            terms=terms if warm else None,
            query_vector=query_vector,
            dense_index=dense_index,
            scope=scope,
            filters=filters,
            when=when,
            now=now,
            limit=limit,
            options=options,
            clock=clock,
        )
    if scorer is not None:
        hits = learned.rescore(store, hits, scorer, scope=scope, now=now, limit=wanted)
        clock.lap("scorer")
    limit = wanted
    if passed:
        hits[:] = [replace(hit, gates=passed + hit.gates) for hit in hits]
    _add_constraints(store, hits, query=query, scope=scope, filters=filters, now=now, limit=limit)
    clock.lap("constraints")
    hits.timings = clock.laps
    return hits


class _Stopwatch:
    """Milliseconds per stage, lap by lap."""

    def __init__(self) -> None:
        self.laps: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.laps[stage] = self.laps.get(stage, 0.0) + (now - self._last) * 1000
        self._last = now


def _add_constraints(
    store: Store,
    hits: HitList,
    *,
    query: str,
    scope: Scope,
    filters: RecallFilters,
    now: datetime,
    limit: int,
) -> None:
    """Constraint memories whose entities the query names are always returned:
    appended, or in place of the lowest hits that are not constraints, never
    of the best hit."""
    present = {hit.memory.id for hit in hits}
    for memory, key in constraints_for(store, query, scope, filters):
        if memory.id in present:
            continue
        hit = Hit(
            memory=memory,
            score=0.0,
            confidence=stages.confidence(memory, now),
            ranks={"constraint": 1},
            stage_scores={"final": 0.0},
            gates=(f"constraint: the query names {key!r}",),
        )
        if len(hits) < limit:
            hits.append(hit)
        else:
            replaceable = [i for i in range(1, len(hits)) if not hits[i].memory.constraint]
            if not replaceable:
                break
            hits[replaceable[-1]] = hit
        present.add(memory.id)


def _text_only(
    store: Store,
    matches: list[TextMatch],
    substring: list[Memory],
    *,
    scope: Scope,
    when: timestage.TimeQuery,
    now: datetime,
    limit: int,
    options: RecallOptions,
    notice: str | None,
) -> HitList:
    best = max((m.bm25 for m in matches), default=0.0)
    # The time prior, as in hybrid recall, over the keyword matches.
    timed, boosts = timestage.apply(
        store,
        [(m.bm25 / best if best > 0 else 0.0, m.memory.id, None) for m in matches],
        {m.memory.id: m.memory for m in matches},
        scope=scope,
        query=when,
        pool=max(options.time_pool, limit),
        window_weight=options.time_window_weight,
        when_weight=options.time_when_weight,
    )
    lifted = {key: value for value, key, _ in timed}
    scored = []
    for rank, match in enumerate(matches, start=1):
        relevance = lifted[match.memory.id]
        factor = stages.prior(match.memory, now, options.prior_weights)
        scored.append((relevance * factor, rank, match, relevance, factor))
    scored.sort(key=lambda item: (-item[0], item[1]))
    hits: list[Hit] = []
    for score, rank, match, relevance, factor in scored[:limit]:
        if score < options.floor:
            continue
        hit = Hit(
            memory=match.memory,
            score=min(1.0, score),
            confidence=stages.confidence(match.memory, now),
            ranks={"bm25": rank, "final": len(hits) + 1},
            stage_scores={
                "keyword": match.bm25 / best if best > 0 else 0.0,
                "relevance": relevance,
                "prior": factor,
                "final": score,
            },
        )
        hits.append(timestage.mark(hit, boosts))
    # Substring matches the index missed (partial words), newest first,
    # below every full-text match.
    seen = {hit.memory.id for hit in hits}
    extra = [m for m in substring if m.id not in seen]
    for rank, memory in enumerate(extra, start=1):
        if len(hits) >= limit:
            break
        score = 0.2 * (1.0 - (rank - 1) / (len(extra) + 1))
        hits.append(
            Hit(
                memory=memory,
                score=score,
                confidence=stages.confidence(memory, now),
                ranks={"substring": rank, "final": len(hits) + 1},
                stage_scores={"final": score},
            )
        )
    return HitList(hits, mode="text", notice=notice)


def _hybrid(
    store: Store,
    text_matches: list[TextMatch],
    *,
    terms: list[str] | None,
    query_vector: npt.NDArray[np.float32],
    dense_index: DenseIndex,
    scope: Scope,
    filters: RecallFilters,
    when: timestage.TimeQuery,
    now: datetime,
    limit: int,
    options: RecallOptions,
    clock: _Stopwatch,
) -> HitList:
    # Tags and an issue's state are not columns of the dense index: the
    # store names the memories that pass them.
    narrow = filters.tags or filters.completed is not None
    allowed = store.ids_matching(scope, filters) if narrow else None
    mask = dense_index.mask(scope, filters, allowed)
    bm25, loose, memories, sparse_rank = _keyword_rows(
        text_matches,
        terms,
        dense_index,
        scope=scope,
        mask=mask,
        pool=max(options.candidates, limit),
    )
    clock.lap("sparse")
    # Rows without a vector (their embedding failed) take part by keywords only.
    dense_mask = mask & dense_index.embedded
    view = DenseView(
        dense_index,
        query_vector,
        dense_mask,
        candidates=options.ann_candidates if options.fusion == "weighted" else 0,
        extra=np.flatnonzero(bm25 > 0),
        external=(
            (lambda k: store.nearest(dense_index.model, query_vector, scope, filters, limit=k))
            if dense_index.store_ann
            else None
        ),
    )
    sims = view.sims
    clock.lap("dense")

    scale = 0.0
    if options.fusion == "rrf":
        fused_rows, fused_loose = _rrf_arrays(
            bm25, loose, sims, dense_mask, options, pool=max(options.candidates, limit)
        )
    else:
        best_bm25 = max(float(bm25.max(initial=0.0)), max(loose.values(), default=0.0))
        scale = 1.0 / best_bm25 if best_bm25 > 0 else 0.0
        fused_loose = {key: options.sparse_weight * scale * v for key, v in loose.items()}
    if view.partial:
        fused_rows, eligible = _fuse_scored(
            view, bm25, mask, dense_mask, dense_index, scale=scale, limit=limit, options=options
        )
    else:
        if options.fusion != "rrf":
            dense_norm = stages.range_normalise(sims, dense_mask)
            fused_rows = options.sparse_weight * scale * bm25 + options.dense_weight * dense_norm
        # Normalisation used every visible row; candidacy needs keyword
        # evidence or a cosine above the floor.
        eligible = mask & ((bm25 > 0) | (dense_index.embedded & (sims >= options.dense_floor)))
        fused_rows = np.where(mask, fused_rows, -np.inf)

    support = _session_support(fused_rows, eligible, dense_index, limit=limit, options=options)
    # A context neighbour below the floor stays only if its session lifts it.
    candidates: list[tuple[float, str, int | None]] = [
        (float(fused_rows[row]) + value, str(dense_index.table.ids[row]), row)
        for row, value in support.items()
        if eligible[row] or value > 0
    ]
    candidates += [(value, key, None) for key, value in fused_loose.items()]
    clock.lap("fusion")
    expansion = Expansion(candidates)
    if options.expand:
        expansion = expand(
            store,
            candidates,
            scope=scope,
            filters=filters,
            dense_index=dense_index,
            seeds=options.graph_seeds,
            weight=options.graph_weight,
            hops=options.graph_hops,
            max_degree=options.graph_max_degree,
            budget_ms=options.graph_budget_ms,
            visible=mask,
        )
        candidates = expansion.candidates
    view.fill(np.array([row for _, _, row in candidates if row is not None], dtype=np.int64))
    clock.lap("graph")
    candidates, boosts = timestage.apply(
        store,
        candidates,
        memories,
        scope=scope,
        query=when,
        pool=max(options.time_pool, limit),
        window_weight=options.time_window_weight,
        when_weight=options.time_when_weight,
        search=warm_text_search(store, dense_index, scope) if terms is not None else None,
    )
    clock.lap("time")
    candidates.sort(key=lambda item: (-item[0], item[1]))
    wanted = [key for _, key, _ in candidates[: limit * 2 + 10] if key not in memories]
    memories.update(store.get_many(wanted, scope))
    hits = _build_hits(
        candidates,
        memories=memories,
        sparse_rank=sparse_rank,
        bm25=bm25,
        loose=loose,
        sims=sims,
        # Dense ranks count the rows scored (all of them unless the graph
        # proposed candidates: then the best are among them).
        mask=dense_mask if view.known is None else dense_mask & view.known,
        fused_rows=fused_rows,
        support=support,
        expansion=expansion,
        dense_index=dense_index,
        now=now,
        limit=limit,
        options=options,
    )
    if boosts:
        hits[:] = [timestage.mark(hit, boosts) for hit in hits]
    clock.lap("rank")
    return hits


def warm_text_search(store: Store, dense_index: DenseIndex, scope: Scope) -> TextSearch | None:
    """Keyword search for event anchors over the warm keyword index, with the
    store's ``search_text`` scoring (FTS5's BM25, per-scope idf; no filters
    but the default ones), over every row rather than the union of each
    term's best rows: the store's counts the scope with a scan after every
    write."""
    keyword = dense_index.keyword
    if keyword is None:
        return None

    def search(terms: Sequence[str], limit: int) -> list[TextMatch]:
        table = dense_index.table
        scored = keyword.scores(terms, dense_index.scope_mask(scope))
        visible = dense_index.mask(scope, RecallFilters())
        rows = top_rows(scored, visible, created_at=table.created_at, ids=table.ids, limit=limit)
        keys = [str(table.ids[row]) for row in rows]
        found = store.get_many(keys, scope)
        return [
            TextMatch(found[key], float(scored[row]))
            for key, row in zip(keys, rows, strict=True)
            if key in found
        ]

    return search


def _keyword_rows(
    text_matches: list[TextMatch],
    terms: list[str] | None,
    dense_index: DenseIndex,
    *,
    scope: Scope,
    mask: npt.NDArray[np.bool_],
    pool: int,
) -> tuple[npt.NDArray[np.float64], dict[str, float], dict[str, Memory], dict[str, int]]:
    """Keyword scores over the index's rows: from its warm keyword index
    when ``terms`` are given, else from the store's ``text_matches``
    (memories the index lacks kept aside as ``loose``). Also the memories
    already read and each found memory's keyword rank (1 is the best)."""
    bm25 = np.zeros(len(dense_index), dtype=np.float64)
    loose: dict[str, float] = {}
    memories: dict[str, Memory] = {}
    sparse_rank: dict[str, int] = {}
    if terms is not None and dense_index.keyword is not None:
        scored = dense_index.keyword.scores(terms, dense_index.scope_mask(scope))
        table = dense_index.table
        best = top_rows(scored, mask, created_at=table.created_at, ids=table.ids, limit=pool)
        for rank, best_row in enumerate(best, start=1):
            bm25[best_row] = scored[best_row]
            sparse_rank[str(table.ids[best_row])] = rank
        return bm25, loose, memories, sparse_rank
    for rank, match in enumerate(text_matches, start=1):
        memories[match.memory.id] = match.memory
        sparse_rank[match.memory.id] = rank
        row = dense_index.row_of(match.memory.id)
        if row is not None and mask[row]:
            bm25[row] = match.bm25
        else:
            loose[match.memory.id] = match.bm25
    return bm25, loose, memories, sparse_rank


def _build_hits(
    candidates: list[tuple[float, str, int | None]],
    *,
    memories: Mapping[str, Memory],
    sparse_rank: Mapping[str, int],
    bm25: npt.NDArray[np.float64],
    loose: Mapping[str, float],
    sims: npt.NDArray[np.float32],
    mask: npt.NDArray[np.bool_],
    fused_rows: npt.NDArray[np.float64],
    support: Mapping[int, float],
    expansion: Expansion,
    dense_index: DenseIndex,
    now: datetime,
    limit: int,
    options: RecallOptions,
) -> HitList:
    # A perfect keyword and embedding match scores 1; session support can
    # push a score past that, where it is capped (the order still uses it).
    ceiling = options.sparse_weight + options.dense_weight
    # Explain shows keyword scores relative to the best visible match, never
    # raw BM25: its idf and length statistics cover the whole index, every
    # agent's memories included, so raw values would leak their counts.
    best = max(float(bm25.max(initial=0.0)), max(loose.values(), default=0.0))
    dense_rank = stages.ranks_of(sims, mask)
    # Priors need the memory: re-rank the hydrated head of the list.
    ranked = [
        (value * stages.prior(memories[key], now, options.prior_weights), value, key, row)
        for value, key, row in candidates
        if key in memories and value >= options.floor  # else deleted, or another scope
    ]
    ranked.sort(key=lambda item: (-item[0], item[2]))
    hits: list[Hit] = []
    chosen_rows: list[int] = []
    reached = expansion.reached
    for value, relevance, key, row in ranked:
        if len(hits) >= limit:
            break
        memory = memories[key]
        embedded = row is not None and bool(dense_index.embedded[row])
        cosine = float(sims[row]) if row is not None and embedded else -1.0
        by_graph_only = (
            key in reached
            and key not in sparse_rank
            and cosine < options.dense_floor
            and (row is None or support.get(row, 0.0) <= 0)
        )
        if by_graph_only and redundant(row, chosen_rows, dense_index, options.redundancy):
            continue  # information gain: says what a chosen hit already says
        ranks = {"final": len(hits) + 1}
        scores = {
            "final": value,
            "relevance": relevance,
            "prior": value / relevance if relevance else 1.0,
        }
        if key in sparse_rank:
            ranks["bm25"] = sparse_rank[key]
            raw = bm25[row] if row is not None and bm25[row] > 0 else loose.get(key, 0.0)
            scores["keyword"] = float(raw) / best if best > 0 else 0.0
        gate = "relevance-floor: keyword match"
        if by_graph_only:
            path = " -> ".join(reached[key].path)
            gate = f"graph: reached via {path}"
        elif key not in sparse_rank and row is not None:
            gate = (
                f"relevance-floor: cosine {cosine:.2f} >= {options.dense_floor}"
                if cosine >= options.dense_floor
                else "session-context: next to a relevant memory"
            )
        if key in reached:
            scores["graph"] = reached[key].score
        if row is not None:
            scores["fused"] = float(fused_rows[row])
            scores["session_support"] = support.get(row, 0.0)
        if row is not None and embedded:
            chosen_rows.append(row)
            ranks["dense"] = int(dense_rank(row))
            scores["dense"] = cosine
        hits.append(
            Hit(
                memory=memory,
                score=stages.squash(value, ceiling),
                confidence=stages.confidence(memory, now),
                ranks=ranks,
                stage_scores=scores,
                gates=(gate,),
                associative_context=tuple(expansion.associations.get(key, ())),
            )
        )
    return HitList(hits, mode="hybrid")


def _fuse_scored(
    view: DenseView,
    bm25: npt.NDArray[np.float64],
    mask: npt.NDArray[np.bool_],
    dense_mask: npt.NDArray[np.bool_],
    dense_index: DenseIndex,
    *,
    scale: float,
    limit: int,
    options: RecallOptions,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
    """Weighted fusion when only some rows were scored (``view.partial``):
    the same formula as over every row, evaluated on the scored rows; an
    unscored visible row has no keyword match and a cosine below the best
    proposals', so it fuses to 0 and is not a candidate. The whole sessions
    of the best rows are then scored too, since session support reads them."""
    sims, known = view.sims, view.known
    assert known is not None
    fused_rows = np.where(mask, 0.0, -np.inf)
    eligible = np.zeros(mask.shape[0], dtype=bool)
    scored = np.flatnonzero(known)
    visible = scored[dense_mask[scored]]
    high = float(sims[visible].max()) if visible.shape[0] else 0.0
    low = min(view.low if view.low is not None else high, high)

    def fuse(rows: npt.NDArray[np.int64]) -> None:
        rows = rows[mask[rows]]
        if high > low:
            dense = np.clip((sims[rows] - low) / (high - low), 0.0, 1.0)
        else:
            dense = np.ones(rows.shape[0])
        dense = np.where(dense_mask[rows], dense, 0.0)
        fused_rows[rows] = options.sparse_weight * scale * bm25[rows] + (
            options.dense_weight * dense
        )
        eligible[rows] = (bm25[rows] > 0) | (
            dense_index.embedded[rows] & (sims[rows] >= options.dense_floor)
        )

    fuse(scored)
    fuse(view.fill(_session_rows(fused_rows, eligible, dense_index, limit)))
    return fused_rows, eligible


def _session_top(
    fused_rows: npt.NDArray[np.float64], eligible: npt.NDArray[np.bool_], limit: int
) -> list[int]:
    """The best eligible rows, which session support starts from."""
    chosen = np.flatnonzero(eligible)
    k = min(max(limit * 5, 100), chosen.shape[0])
    if k <= 0:
        return []
    if chosen.shape[0] > k:
        chosen = chosen[np.argpartition(-fused_rows[chosen], k - 1)[:k]]
    kept: list[int] = chosen[np.isfinite(fused_rows[chosen])].tolist()
    return kept


def _session_rows(
    fused_rows: npt.NDArray[np.float64],
    eligible: npt.NDArray[np.bool_],
    dense_index: DenseIndex,
    limit: int,
) -> npt.NDArray[np.int64]:
    """Every row of the sessions of the best eligible rows (at most
    ``_SESSION_ROWS``, best sessions first)."""
    parts: list[npt.NDArray[np.int64]] = []
    starts: set[int] = set()
    total = 0
    for row in _session_top(fused_rows, eligible, limit):
        start = int(dense_index.group_start[row])
        if not dense_index.in_session[row] or start in starts:
            continue
        starts.add(start)
        part = dense_index.order[start : int(dense_index.group_end[row])]
        total += part.shape[0]
        if total > _SESSION_ROWS:
            break
        parts.append(part)
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)


_SESSION_ROWS = 20_000


def _session_support(
    fused_rows: npt.NDArray[np.float64],
    eligible: npt.NDArray[np.bool_],
    dense_index: DenseIndex,
    *,
    limit: int,
    options: RecallOptions,
) -> dict[int, float]:
    """Session support of the best eligible rows and of their same-session
    neighbours, which may climb on a strong memory next to them even below
    the relevance floor (they are its context)."""
    chosen: set[int] = set()
    places = stages.visible_neighbours(
        fused_rows,
        _session_top(fused_rows, eligible, limit),
        order=dense_index.order,
        position=dense_index.position,
        group_start=dense_index.group_start,
        group_end=dense_index.group_end,
        in_session=dense_index.in_session,
    )
    for row, _, neighbours in places:  # with the nearest visible turn each side
        chosen.add(row)
        chosen.update(neighbours)
    return stages.session_support(
        fused_rows,
        sorted(chosen),
        order=dense_index.order,
        position=dense_index.position,
        group_start=dense_index.group_start,
        group_end=dense_index.group_end,
        in_session=dense_index.in_session,
        neighbour_weight=options.neighbour_weight,
        session_weight=options.session_weight,
        session_top=options.session_top,
    )


def _rrf_arrays(
    bm25: npt.NDArray[np.float64],
    loose: Mapping[str, float],
    sims: npt.NDArray[np.float32],
    mask: npt.NDArray[np.bool_],
    options: RecallOptions,
    *,
    pool: int,
) -> tuple[npt.NDArray[np.float64], dict[str, float]]:
    """RRF over the top ``pool`` of each list, as arrays over the dense rows."""
    rows = bm25.shape[0]
    sparse_items: list[tuple[tuple[str, int | str], float]] = [
        (("r", int(r)), float(bm25[r])) for r in np.flatnonzero(bm25 > 0)
    ]
    sparse_items += [(("l", key), value) for key, value in loose.items()]
    sparse_items.sort(key=lambda item: -item[1])
    sparse_order = [key for key, _ in sparse_items]
    masked = np.where(mask, sims, -np.inf)
    dense_top = np.argsort(-masked, kind="stable")[: max(pool, 1)]
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
    out = np.zeros(rows, dtype=np.float64)
    loose_out: dict[str, float] = {}
    for (kind, key), value in fused.items():
        if kind == "r":
            out[int(key)] = value / scale
        else:
            loose_out[str(key)] = value / scale
    return out, loose_out
