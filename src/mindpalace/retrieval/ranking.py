"""The last stage of recall: candidates, read in full, become ranked hits
(relevance times the memory's priors), each saying how it was found.

``hybrid_hits`` takes one value (``Ranked``: the candidates after every
earlier stage and what those stages computed) and returns the hits;
``text_hits`` does the same for keyword search alone. Pure functions: the
memories were read before (``Store.hydrate``).
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from mindpalace.models import Hit, HitList, Link, Memory
from mindpalace.retrieval import stages
from mindpalace.retrieval.dense import DenseIndex
from mindpalace.retrieval.graphstage import Expansion, redundant
from mindpalace.retrieval.hybrid import Candidate, Fused
from mindpalace.retrieval.options import RecallOptions
from mindpalace.retrieval.time.prior import TimeBoost, Timed, mark
from mindpalace.store.base import TextMatch

__all__ = ["Ranked", "diversified", "hybrid_hits", "reasons", "snippet", "text_hits"]

# A hit the graph added at least this share of the value to was lifted by
# it, and says why (``Hit.reached_via``), as one the graph alone brought does.
LIFTED = 0.2
# How many characters of a linked memory's text a reason quotes.
SNIPPET = 80


@dataclass(frozen=True, slots=True)
class Ranked:
    """What hybrid ranking reads.

    Attributes:
        candidates: (value, memory id, row), after the time prior.
        memories: the candidates read in full: only they are ranked (the
            others are too far down the list, out of scope, or deleted).
        fused: the keyword and dense evidence and its fusion.
        support: session support by row.
        expansion: what graph propagation reached.
        boosts: the time prior's factors, by memory id.
        feedback: the caller's own (useful, not useful) judgments of the
            memories, when the learned scorer is to re-rank them.
    """

    candidates: Sequence[Candidate]
    memories: Mapping[str, Memory]
    fused: Fused
    support: Mapping[int, float]
    expansion: Expansion
    boosts: Mapping[str, TimeBoost] = field(default_factory=dict)
    feedback: Mapping[str, tuple[int, int]] = field(default_factory=dict)


def hybrid_hits(
    ranked: Ranked, index: DenseIndex, *, now: datetime, options: RecallOptions, limit: int
) -> HitList:
    """The ``limit`` best candidates by relevance times priors, as hits;
    a memory only the graph brought in is left out when it repeats a hit
    already chosen (``graphstage.redundant``)."""
    fused = ranked.fused
    keyword, sims = fused.keyword, fused.view.sims
    support, expansion = ranked.support, ranked.expansion
    # Past the ceiling a score is capped (the order still uses the value).
    ceiling = options.relevance_ceiling
    # Explain shows keyword scores relative to the best visible match, never
    # raw BM25: its idf and length statistics cover the whole index, every
    # agent's memories included, so raw values would leak their counts.
    best = keyword.best
    dense_rank = stages.ranks_of(sims, fused.ranked_dense)
    # Priors need the memory: re-rank the hydrated head of the list.
    memories = ranked.memories
    order = [
        (value * stages.prior(memories[key], now, options.prior_weights), value, key, row)
        for value, key, row in ranked.candidates
        if key in memories and value >= options.floor
    ]
    order.sort(key=lambda item: (-item[0], item[2]))
    if options.session_diversity < 1.0:
        order = diversified(order, memories, options.session_diversity)
    hits: list[Hit] = []
    chosen_rows: list[int] = []
    reached = expansion.reached
    for value, relevance, key, row in order:
        if len(hits) >= limit:
            break
        memory = memories[key]
        embedded = row is not None and bool(index.embedded[row])
        cosine = float(sims[row]) if row is not None and embedded else -1.0
        by_graph_only = (
            key in reached
            and key not in keyword.rank
            and cosine < options.dense_floor
            and (row is None or support.get(row, 0.0) <= 0)
        )
        if by_graph_only and redundant(row, chosen_rows, index, options.redundancy):
            continue  # information gain: says what a chosen hit already says
        ranks = {"final": len(hits) + 1}
        scores = {
            "final": value,
            "ceiling": ceiling,
            "relevance": relevance,
            "prior": value / relevance if relevance else 1.0,
        }
        if key in keyword.rank:
            ranks["bm25"] = keyword.rank[key]
            own = keyword.of(row) if row is not None else 0.0
            raw = own if own > 0 else keyword.loose.get(key, 0.0)
            scores["keyword"] = float(raw) / best if best > 0 else 0.0
        gate = "relevance-floor: keyword match"
        if by_graph_only:
            path = " -> ".join(reached[key].path)
            gate = f"graph: reached via {path}"
        elif key not in keyword.rank and row is not None:
            timed = support.get(row, 0.0) <= 0 and key in ranked.boosts
            gate = _unmatched_gate(cosine, options.dense_floor, timed=timed)
        if key in reached:
            scores["graph"] = reached[key].score
        if row is not None:
            scores["fused"] = float(fused.rows[row])
            scores["session_support"] = support.get(row, 0.0)
        if row is not None and embedded:
            chosen_rows.append(row)
            ranks["dense"] = int(dense_rank(row))
            scores["dense"] = cosine
        hit = Hit(
            memory=memory,
            score=stages.squash(value, ceiling),
            confidence=stages.confidence(memory, now),
            ranks=ranks,
            stage_scores=scores,
            gates=(gate,),
            associative_context=tuple(expansion.associations.get(key, ())),
            reached_via=(
                reasons(expansion, key, memories)
                if by_graph_only or expansion.lift.get(key, 0.0) >= LIFTED
                else ()
            ),
        )
        hits.append(mark(hit, ranked.boosts))
    return HitList(hits, mode="hybrid")


def _unmatched_gate(cosine: float, floor: float, *, timed: bool) -> str:
    """Why a memory no keyword matched is a hit: its cosine, the window the
    query names it was written in (``timed``), or its session's support."""
    if cosine >= floor:
        return f"relevance-floor: cosine {cosine:.2f} >= {floor}"
    if timed:
        return "time-window: written in a window the query names"
    return "session-context: next to a relevant memory"


def reasons(expansion: Expansion, key: str, memories: Mapping[str, Memory]) -> tuple[Link, ...]:
    """Why the graph reached ``key``: its best paths through no hub, each
    with the start of the linked memory's text (when it was read)."""
    return tuple(
        Link(
            reach.seed,
            reach.score,
            reach.path,
            snippet(memories[reach.seed]) if reach.seed in memories else None,
        )
        for reach in expansion.reasons.get(key, ())
    )


def snippet(memory: Memory, width: int = SNIPPET) -> str:
    """The start of a memory's text on one line (its content: a title may
    be a date, as a message's is)."""
    line = " ".join(memory.content.split())
    return line if len(line) <= width else line[: width - 1].rstrip() + "…"


def diversified(
    order: Sequence[tuple[float, float, str, int | None]],
    memories: Mapping[str, Memory],
    factor: float,
) -> list[tuple[float, float, str, int | None]]:
    """``order`` (value, relevance, memory id, row; best first) re-ranked so
    that evidence spread over sessions is not crowded out by one session:
    a memory's value is multiplied by ``factor`` for every memory of its
    session already placed above it (a greedy pass; memories in no session
    are never discounted). Ties keep the memory id order."""
    placed: dict[str, int] = {}
    heap = [(-value, key, i) for i, (value, _, key, _) in enumerate(order)]
    heapq.heapify(heap)
    out: list[tuple[float, float, str, int | None]] = []
    seen: dict[int, int] = {}  # item -> the session count its heap value assumed
    while heap:
        negative, key, i = heapq.heappop(heap)
        value, relevance, _, row = order[i]
        session = memories[key].session
        count = placed.get(session, 0) if session is not None else 0
        if count != seen.get(i, 0):
            seen[i] = count  # stale: its session gained a memory above it
            heapq.heappush(heap, (-value * factor**count, key, i))
            continue
        out.append((-negative, relevance, key, row))
        if session is not None:
            placed[session] = count + 1
    return out


def text_hits(
    matches: Sequence[TextMatch],
    substring: Sequence[Memory],
    timed: Timed,
    *,
    now: datetime,
    options: RecallOptions,
    limit: int,
    notice: str | None,
) -> HitList:
    """Keyword search alone: the full-text ``matches`` by relevance (after
    the time prior, ``timed``) times priors, then ``substring`` matches the
    index missed (partial words), newest first, below every full-text match."""
    best = max((m.bm25 for m in matches), default=0.0)
    lifted = {key: value for value, key, _ in timed.candidates}
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
        hits.append(mark(hit, timed.boosts))
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
