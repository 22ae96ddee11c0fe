"""The recall pipeline, a straight line of values::

    query ─ Asked ─ Store.query_facts ─ QueryFacts        (gate, keywords, constraints, ...)
      hybrid: Visible ─ KeywordScores ─ DenseView ─ Fused ─ Candidates
              ─ Expansion (Store.seed_graph) ─ Ranked (Store.hydrate, time prior) ─ HitList
      text:   keyword matches ─ Timed (time prior) ─ HitList
    ─ re-ranker (hybrid) ─ learned scorer ─ constraints ─ HitList

In the database mode (``in_store``: no warm index in this process) the
hybrid line starts from the rows the store finds (``instore.candidates``:
its nearest rows and the keyword matches, then the best sessions whole),
and runs the same stages over them.

The store is read three times in a hybrid recall, each read with the
caller's scope inside it: first everything the query alone decides
(``query_facts``: which of its names occur, for the unknown-entity gate;
keyword candidates when no warm index has them; the constraints it names;
...), then the entity graph around the best candidates (``seed_graph``),
then the memories to rank, read in full (``hydrate``). Dense scores come
from the warm ``DenseIndex`` under a scope-and-filter mask; every other
stage is arithmetic over the values before it (``hybrid.py``, ``stages.py``,
``time/prior.py``, ``ranking.py``).

The caller's ``limit`` is the final cut; how deep each stage works is
``Depths``, computed once (``options.py``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Protocol

import numpy as np
import numpy.typing as npt

from mindpalace import telemetry
from mindpalace.embed.texts import embed_text, text_hash
from mindpalace.models import Hit, HitList, Memory, RecallFilters, Scope
from mindpalace.retrieval import (
    answered,
    currency,
    hybrid,
    identity,
    instore,
    parts,
    ranking,
    reranker,
    stages,
)
from mindpalace.retrieval import scorer as learned
from mindpalace.retrieval.dense import DenseIndex, DenseView
from mindpalace.retrieval.graphstage import Expansion, expand, query_names
from mindpalace.retrieval.options import Depths, RecallOptions
from mindpalace.retrieval.sparse import gate_terms, query_terms
from mindpalace.retrieval.time import prior
from mindpalace.retrieval.time.anchors import SEARCH_LIMIT, EventPhrase, TextSearch, best_anchor
from mindpalace.store.base import TextMatch
from mindpalace.store.recall_sql import QueryFacts, QueryReads
from mindpalace.store.roles import GraphRows, Handle, MemoryRows, TextIndex, VectorRows
from mindpalace.store.roles_palace import SignalRows

__all__ = [
    "NOTHING_RELEVANT",
    "TEXT_ONLY_NOTICE",
    "RecallOptions",
    "RecallReads",
    "recall",
    "warm_text_search",
]

TEXT_ONLY_NOTICE = "Using text search (semantic search is not available)."
NOTHING_RELEVANT = "Nothing relevant is stored: the query names {terms}, which no memory mentions."


class RecallReads(Handle, MemoryRows, TextIndex, VectorRows, GraphRows, SignalRows, Protocol):
    """The store's roles one recall reads: the key length of its texts
    (handle), the query's facts (text index),
    the dense rows or nearest ids and parts' vectors (vectors), the graph
    around the seeds, the memories ranked, and the caller's feedback for
    the learned scorer (signals)."""


@dataclass(frozen=True, slots=True)
class Asked:
    """What recall reads from the query text alone.

    Attributes:
        text: the query.
        terms: its keyword search terms.
        salient: the words it names things by, for the unknown-entity gate
            (empty when the gate is off).
        names: the names it may use for entities (their constraints surface).
        time: the times it names or asks about.
        events: the events it dates things by that the time prior looks up.
    """

    text: str
    terms: tuple[str, ...]
    salient: tuple[str, ...]
    names: tuple[str, ...]
    time: prior.TimeQuery
    events: tuple[EventPhrase, ...]

    @classmethod
    def of(cls, query: str, now: datetime, options: RecallOptions) -> Asked:
        """Parse ``query`` (relative times against ``now``)."""
        when = prior.read_query(query, now)
        # Events only ever give windows: without a window weight they are
        # not looked up (``prior.settle``).
        looked_up = when.active and bool(options.time_window_weight)
        return cls(
            text=query,
            terms=tuple(query_terms(query)),
            salient=tuple(gate_terms(query)) if options.unknown_entity_gate else (),
            names=tuple(query_names(query)),
            time=when,
            events=when.events if looked_up else (),
        )

    def timed(self, options: RecallOptions) -> bool:
        """Whether the time prior may run (before its events are looked up)."""
        return self.time.active and bool(options.time_window_weight or options.time_when_weight)


@dataclass(frozen=True, slots=True)
class Setting:
    """What every stage of one recall shares: who asks, under which
    filters and clock, how deep each stage works, with which constants, and
    the warm dense index (None: keyword search alone)."""

    scope: Scope
    filters: RecallFilters
    now: datetime
    depths: Depths
    options: RecallOptions
    index: DenseIndex | None
    #: the vectors' key when the store finds the dense candidates
    #: (database mode: ``index`` is then built per recall)
    in_store: str | None = None

    @property
    def hybrid(self) -> bool:
        """Whether keyword and dense evidence are fused (else keywords alone)."""
        return self.index is not None or self.in_store is not None


def recall(
    store: RecallReads,
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
    in_store: str | None = None,
) -> HitList:
    """Run the pipeline; without a query vector it is keyword search alone.
    With a learned ``scorer``, the best ``scorer.DEPTH`` candidates (``limit``
    when larger) are re-ranked by it before the list is cut to ``limit``.
    With ``in_store`` (the vectors' key) and no ``dense_index``, the store
    finds the rows to rank (database mode)."""
    clock = _Stopwatch()
    # The re-ranker orders hybrid recalls only (its features are the stages').
    forest = reranker.default_forest() if options.rerank and query_vector is not None else None
    rescored = max(
        learned.DEPTH if scorer is not None else 0, forest.window if forest is not None else 0
    )
    asked = Asked.of(query, now, options)
    # Replaced memories are read unless the caller asked for them: a
    # question about an earlier time is answered by what held then, any
    # other by what holds now, in the place of what it replaced.
    replaced = _replaced(asked, filters)
    at = Setting(
        scope=scope,
        filters=replace(filters, include_superseded=True),
        now=now,
        depths=Depths.of(limit, options, rescored=rescored),
        options=options,
        index=dense_index if query_vector is not None else None,
        in_store=in_store if query_vector is not None and dense_index is None else None,
    )
    nearest = None
    if at.in_store is not None and query_vector is not None:
        # The nearest rows do not wait for the keyword search (instore.py).
        nearest = instore.nearest_ahead(
            store, at.in_store, query_vector, scope=scope, filters=at.filters, options=options
        )
    facts = store.query_facts(_reads(asked, at), scope, at.filters)
    clock.lap(
        "reads",
        terms=len(asked.terms),
        keyword_matches=len(facts.keyword),
        constraints=len(facts.constraints),
    )
    if not facts.complete:
        absent = ", ".join(repr(t) for t in asked.salient if t not in facts.present)
        mode = "hybrid" if at.hybrid else "text"
        return HitList([], mode=mode, notice=NOTHING_RELEVANT.format(terms=absent))
    found = None
    if at.in_store is not None and query_vector is not None:
        found = instore.candidates(
            store,
            at.in_store,
            query_vector,
            scope=scope,
            filters=at.filters,
            keyword=facts.keyword,
            allowed=facts.allowed,
            options=options,
            depths=at.depths,
            nearest=nearest,
        )
        at = replace(at, index=found.index if found is not None else None)
        clock.lap("candidates")
    if at.index is None or query_vector is None:
        hits = _text(asked, facts, at)
        clock.lap("sparse", hits=len(hits))
        if scorer is not None:
            hits = learned.rescore(store, hits, scorer, scope=scope, now=now, limit=limit)
            clock.lap("scorer", hits=len(hits))
    else:
        ranked = _hybrid(
            store, asked, facts, query_vector, at, clock=clock, judged=bool(scorer), found=found
        )
        hits = ranking.hybrid_hits(
            ranked, at.index, now=now, options=options, limit=at.depths.ranked
        )
        clock.lap("rank", hits=len(hits))
        if forest is not None:
            hits = with_parts(store, hits, at.index.model, query_vector, forest.window)
            hits = reranker.reranked(hits, forest, query)
            clock.lap("rerank", hits=len(hits))
        hits = _in_order(hits, query, at.index, options)
        if scorer is not None:
            hits = learned.rescored(hits, scorer, now=now, limit=limit, judgments=ranked.feedback)
            clock.lap("scorer", hits=len(hits))
    hits = _current(store, hits, at, replaced, asked)
    if len(hits) > limit:  # ranked deeper for the re-ranker or the scorer
        cut = HitList(hits[:limit], mode=hits.mode, notice=hits.notice)
        cut.timings = hits.timings
        hits = cut
    hits = _gated(hits, asked, looked_back=replaced == "then")
    hits = _with_constraints(hits, facts.constraints, now=now, limit=limit)
    clock.lap("constraints", hits=len(hits))
    if options.answer_support and at.index is not None and query_vector is not None:
        hits = answered.judged(query, hits, at.index.model)
        clock.lap("support", hits=len(hits))
    hits.timings = clock.laps
    return hits


def _in_order(hits: HitList, query: str, index: DenseIndex, options: RecallOptions) -> HitList:
    """The orders over the ranked hits that no stage scores: the newer of
    two statements of one subject first (``currency``), and the memory
    introducing the person a question asks about (``identity``)."""
    same_subject = currency.same_subject_cosine(index.model)
    if options.newer_first and same_subject is not None:
        changed = currency.changed_cosine(index.model) if currency.asks_current(query) else None
        hits = currency.newer_first(
            hits,
            _vectors_of(index),
            cosine=same_subject,
            changed=changed,
            stated=currency.stated_cosine(index.model),
        )
    if options.introduction_first:
        hits = identity.introduction_first(hits, query)
    return hits


def with_parts(
    store: RecallReads, hits: HitList, model: str, query: npt.NDArray[np.float32], window: int
) -> HitList:
    """``hits`` whose first ``window`` carry the best cosine of ``query`` to
    a part of their text (``parts.with_parts``), read from the store under
    ``model`` (the vectors' key)."""
    chars = store.hash_chars()
    keys = [
        text_hash(embed_text(hit.memory.title, hit.memory.content), chars) for hit in hits[:window]
    ]
    if not keys:
        return hits
    return parts.with_parts(hits, store.part_vectors(model, keys), keys, query)


def _replaced(asked: Asked, filters: RecallFilters) -> str:
    """What recall does with replaced memories: ``"asked"`` (the caller
    asked for them: they are hits like any), ``"then"`` (the question asks
    about an earlier time: so too, and explain says they were replaced) or
    ``"now"`` (each gives its place to the memory that replaced it)."""
    if filters.include_superseded:
        return "asked"
    return "then" if asked.time.looks_back else "now"


#: how many replacements a chain of versions is followed through
_CHAIN = 8


def _current(store: MemoryRows, hits: HitList, at: Setting, replaced: str, asked: Asked) -> HitList:
    """``hits`` as ``replaced`` says: each replaced memory's place given to
    the memory that holds now (``"now"``: ``currency.carried_forward``), or,
    for a question about what held before a change, each replaced memory
    placed above what replaced it (``currency.older_first``)."""
    if replaced == "then" and asked.time.asks_before:
        return currency.older_first(hits)
    if replaced != "now":
        return hits
    current: dict[str, Memory] = {}
    waiting = {h.memory.id: h.memory.superseded_by for h in hits if h.memory.superseded_by}
    for _ in range(_CHAIN):
        if not waiting:
            break
        found = store.get_many(sorted(set(waiting.values())), at.scope)
        later: dict[str, str] = {}
        for old, by in waiting.items():
            memory = found.get(by)
            if memory is None or memory.archived:
                continue
            if memory.superseded_by is None:
                current[old] = memory
            else:
                later[old] = memory.superseded_by
        waiting = later
    return currency.carried_forward(
        hits, current, confidence=lambda memory: stages.confidence(memory, at.now)
    )


def _gated(hits: HitList, asked: Asked, *, looked_back: bool) -> HitList:
    """``hits`` with the gates of the whole query (explain): the names the
    unknown-entity gate found, and, for a question about an earlier time,
    which hits have been replaced since."""
    passed = f"unknown-entity: named {', '.join(asked.salient)}" if asked.salient else None
    if passed is None and not looked_back:
        return hits
    out = []
    for hit in hits:
        gates = hit.gates if passed is None else (passed, *hit.gates)
        if looked_back and hit.memory.superseded_by is not None:
            by = hit.memory.superseded_by
            gates = (*gates, f"replaced by {by}: the question asks about an earlier time")
        out.append(replace(hit, gates=gates))
    hits[:] = out
    return hits


def _vectors_of(index: DenseIndex) -> Callable[[str], npt.NDArray[np.float32] | None]:
    """A memory's vector in ``index``, None when it has none there."""

    def vector_of(memory_id: str) -> npt.NDArray[np.float32] | None:
        row = index.row_of(memory_id)
        if row is None or not index.embedded[row]:
            return None
        vector: npt.NDArray[np.float32] = index.vectors_of([row])[0]
        return vector

    return vector_of


def _reads(asked: Asked, at: Setting) -> QueryReads:
    """What the query alone decides recall reads from the store."""
    warm = at.index is not None and at.index.keyword is not None
    hybrid = at.hybrid
    return QueryReads(
        salient=asked.salient,
        # The gate answers nothing when more than half the names are unknown.
        min_salient=(len(asked.salient) + 1) // 2,
        # With a warm keyword index the hybrid path scores keywords in memory.
        keyword=() if warm else asked.terms,
        keyword_limit=at.depths.keyword,
        # Keyword search alone also looks for partial words.
        substring=tuple(t for t in asked.terms if len(t) >= 3) if not hybrid else (),
        substring_limit=at.depths.ranked,
        events=() if warm else tuple(event.terms for event in asked.events),
        event_limit=SEARCH_LIMIT,
        # Tags and an issue's state are not columns of the dense index: the
        # store names the memories that pass them.
        allowed=hybrid and bool(at.filters.tags or at.filters.completed is not None),
        names=asked.names,
    )


class _Stopwatch:
    """Milliseconds per stage, lap by lap; with telemetry on, also a span
    per stage carrying the stage's counts (``telemetry.stage_spans``)."""

    def __init__(self) -> None:
        self.laps: dict[str, float] = {}
        self._spans = telemetry.stage_spans()
        self._last = time.perf_counter_ns()

    def lap(self, stage: str, **counts: int) -> None:
        now = time.perf_counter_ns()
        self.laps[stage] = self.laps.get(stage, 0.0) + (now - self._last) / 1e6
        if self._spans is not None:
            self._spans.stage(stage, self._last, now, counts)
        self._last = now


def _settled(
    asked: Asked, matches: Sequence[Sequence[TextMatch]], options: RecallOptions
) -> prior.TimeQuery:
    """The time prior's query, its events anchored by their keyword
    ``matches`` (one list per event of ``asked.events``)."""
    found = (best_anchor(e, m) for e, m in zip(asked.events, matches, strict=True))
    return prior.settle(
        asked.time,
        [a for a in found if a is not None],
        window_weight=options.time_window_weight,
        when_weight=options.time_when_weight,
    )


def _text(asked: Asked, facts: QueryFacts, at: Setting) -> HitList:
    """Keyword search alone, with the time prior over its matches."""
    options = at.options
    matches = facts.keyword
    best = max((m.bm25 for m in matches), default=0.0)
    timed = prior.lift(
        [(m.bm25 / best if best > 0 else 0.0, m.memory.id, None) for m in matches],
        {m.memory.id: m.memory for m in matches},
        _settled(asked, facts.events, options),
        pool=at.depths.time,
        window_weight=options.time_window_weight,
        when_weight=options.time_when_weight,
        outside=options.time_outside_factor,
    )
    return ranking.text_hits(
        matches,
        facts.substring,
        timed,
        now=at.now,
        options=options,
        limit=at.depths.ranked,
        notice=TEXT_ONLY_NOTICE,
    )


def _hybrid(
    store: RecallReads,
    asked: Asked,
    facts: QueryFacts,
    query_vector: npt.NDArray[np.float32],
    at: Setting,
    *,
    clock: _Stopwatch,
    judged: bool,
    found: instore.Found | None = None,
) -> ranking.Ranked:
    """Keyword and dense evidence, fused, supported by sessions, spread
    over the graph, read in full and lifted by the time prior: what the
    hits are ranked from (``judged``: with the caller's feedback on them;
    ``found``: the rows the store found, in database mode)."""
    index, options, depths = at.index, at.options, at.depths
    assert index is not None
    shown = hybrid.visible(index, at.scope, at.filters, facts.allowed)
    keyword = (
        hybrid.warm_keywords(index, asked.terms, at.scope, shown, depth=depths.keyword)
        if index.keyword is not None
        else hybrid.stored_keywords(index, facts.keyword, shown)
    )
    clock.lap("sparse", keyword_matches=len(keyword.rank))
    view = (
        found.view()
        if found is not None
        else DenseView(
            index,
            query_vector,
            shown.embedded,  # rows without a vector take part by keywords only
            candidates=options.ann_candidates if options.fusion == "weighted" else 0,
            extra=keyword.found,
            external=(
                (lambda k: store.nearest(index.model, query_vector, at.scope, at.filters, limit=k))
                if index.store_ann
                else None
            ),
        )
    )
    clock.lap("dense")
    fused = hybrid.fuse(keyword, view, shown, index, options=options, depths=depths)
    candidates = hybrid.supported(fused, index, options=options, depths=depths)
    windowed: list[hybrid.Candidate] = []
    if asked.timed(options) and options.time_window_weight:
        candidates, windowed = hybrid.in_windows(fused, index, asked.time.windows, candidates)
    clock.lap("fusion", candidates=len(candidates.items))
    expansion = Expansion(candidates.items)
    if options.expand:
        expansion = expand(
            store,
            candidates.items,
            scope=at.scope,
            filters=at.filters,
            dense_index=index,
            seeds=options.graph_seeds,
            weight=options.graph_weight,
            hops=options.graph_hops,
            max_degree=options.graph_max_degree,
            visible=shown.rows,
        )
    rows = [row for _, _, row in expansion.candidates if row is not None]
    view.fill(np.array(rows, dtype=np.int64))
    clock.lap("graph", candidates=len(expansion.candidates), reached=len(expansion.reached))
    unread = ranking.Ranked(expansion.candidates, {}, fused, candidates.support, expansion)
    return _read(
        store,
        asked,
        facts,
        unread,
        at,
        clock=clock,
        judged=judged,
        windowed=[key for _, key, _ in windowed],
    )


def _read(
    store: MemoryRows,
    asked: Asked,
    facts: QueryFacts,
    ranked: ranking.Ranked,
    at: Setting,
    *,
    clock: _Stopwatch,
    judged: bool,
    windowed: Sequence[str] = (),
) -> ranking.Ranked:
    """``ranked`` with its best candidates read in full, in one
    ``Store.hydrate`` (those the time prior may look at, the keyword
    matches of the events it dates things by, and with ``judged`` the
    caller's feedback on them), then lifted by the time prior."""
    index, options, depths = at.index, at.options, at.depths
    assert index is not None
    ordered = sorted(ranked.candidates, key=lambda item: (-item[0], item[1]))
    matched = ranked.fused.keyword.matched
    head = [key for _, key, _ in ordered[: depths.read(timed=asked.timed(options))]]
    head += [key for key in windowed if key not in head]
    warm = index.keyword is not None
    event_rows = (
        [hybrid.warm_matches(index, at.scope, event.terms, SEARCH_LIMIT) for event in asked.events]
        if warm
        else []
    )
    wanted = [
        key
        for key in dict.fromkeys([*head, *(key for rows in event_rows for key, _ in rows)])
        if key not in matched
    ]
    read = store.hydrate(wanted, at.scope, feedback_on=[*matched, *head] if judged else ())
    clock.lap("hydrate", read=len(read.memories))
    known: dict[str, Memory] = {**matched, **read.memories}
    query = _settled(
        asked,
        (
            [[TextMatch(known[k], v) for k, v in rows if k in known] for rows in event_rows]
            if warm
            else facts.events
        ),
        options,
    )
    timed = prior.lift(
        ordered,
        known,
        query,
        pool=depths.time,
        also=windowed,
        window_weight=options.time_window_weight,
        when_weight=options.time_when_weight,
        outside=options.time_outside_factor,
    )
    final = sorted(timed.candidates, key=lambda item: (-item[0], item[1]))
    best = [key for _, key, _ in final[: depths.hydrate]]
    feedback = dict(read.feedback)
    # The prior lowers no memory below those past its pool, but a negative
    # weight may let others up among the best: read them.
    missing = [key for key in best if key not in matched and key not in wanted]
    if missing:
        more = store.hydrate(missing, at.scope, feedback_on=missing if judged else ())
        known.update(more.memories)
        feedback.update(more.feedback)
    # Ranked: the keyword matches, the best after the prior, and those the
    # prior looked at; not whatever else was read on the way.
    looked = [key for _, key, _ in ordered[: depths.time]] + list(windowed) if query.active else []
    chosen = {*matched, *best, *looked}
    clock.lap("time", candidates=len(final))
    return replace(
        ranked,
        candidates=final,
        memories={key: memory for key, memory in known.items() if key in chosen},
        boosts=timed.boosts,
        feedback=feedback,
    )


def _with_constraints(
    hits: HitList, constraints: Sequence[tuple[Memory, str]], *, now: datetime, limit: int
) -> HitList:
    """Constraint memories whose entities the query names are always returned:
    appended, or in place of the lowest hits that are not constraints, never
    of the best hit."""
    out = list(hits)
    present = {hit.memory.id for hit in out}
    for memory, key in constraints:
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
        if len(out) < limit:
            out.append(hit)
        else:
            replaceable = [i for i in range(1, len(out)) if not out[i].memory.constraint]
            if not replaceable:
                break
            out[replaceable[-1]] = hit
        present.add(memory.id)
    result = HitList(out, mode=hits.mode, notice=hits.notice)
    result.timings = hits.timings
    return result


def warm_text_search(store: MemoryRows, dense_index: DenseIndex, scope: Scope) -> TextSearch | None:
    """Keyword search for event anchors over the warm keyword index, with the
    store's ``search_text`` scoring (``hybrid.warm_matches``); the matches
    are read with ``get_many``. None without a warm keyword index."""
    if dense_index.keyword is None:
        return None

    def search(terms: Sequence[str], limit: int) -> list[TextMatch]:
        rows = hybrid.warm_matches(dense_index, scope, terms, limit)
        found = store.get_many([key for key, _ in rows], scope)
        return [TextMatch(found[key], score) for key, score in rows if key in found]

    return search
