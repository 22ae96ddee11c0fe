"""The constants of the recall pipeline (``RecallOptions``) and the
depths one recall works at (``Depths``).

The caller's ``limit`` is the final cut and nothing else: every stage that
looks deeper has its own named depth, computed once in ``Depths.of`` with
the reason for it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Depths", "RecallOptions"]


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
        self_contained: a memory whose content is longer than this (characters)
            receives session support scaled by this / its length, unless it
            is its session's best: a long turn carries its own context
            (``stages.session_support``); 0 turns it off.
        unknown_entity_gate: answer nothing when the query names things no
            visible memory mentions.
        dense_floor: a memory with no keyword match needs at least this
            cosine similarity to be a candidate at all.
        prior_weights: how far strength, confidence and recency (in that
            order) may lower a relevance score (``stages.prior``).
        floor: final scores below this are dropped.
        expand: run graph propagation (the tools' ``expand``).
        graph_seeds: how many of the best fused candidates seed propagation.
        graph_weight: share of a propagated score added to a memory's relevance.
        graph_hops: 1 (seed -> entity -> memory) or 2 (through a co-occurring entity).
        graph_max_degree: entities mentioned by more visible memories are hubs,
            not traversed.
        redundancy: a memory only the graph brought in is dropped when its
            embedding is this close (cosine) to a hit already chosen.
        time_window_weight: share of relevance added to a memory whose time
            falls in a time the query names ("last week", "in May 2023";
            ``time.prior``); 0 turns it off.
        time_when_weight: share added to a memory that states a time when
            the query asks when; 0 turns it off.
        time_outside_factor: multiplies the relevance of a memory written on
            its own (not a turn) whose time falls in none of the times the
            query names when one of them is closed ("last week", "in
            October"; ``time.prior``); 1 turns it off.
        time_pool: how many of the best candidates the time prior looks at.
        session_diversity: each memory of a session already ranked above a
            memory multiplies its score by this (1 turns it off), so that
            evidence spread over several sessions is not crowded out by the
            neighbours of the best one.
        ann_candidates: in a palace with an HNSW graph (``ann.py``), how
            many nearest rows it proposes for exact scoring (weighted
            fusion only); 0 scores every row exactly.
        rerank: re-order the best hits of a hybrid recall with the shipped
            re-ranker (``reranker.py``: trees over the stages' scores of the
            whole window, fitted on both benchmarks).
        newer_first: of two memories written on their own about one subject
            among the best hits, put the newer first (``currency.py``),
            unless the time prior lifted the older one more; also a newer
            one that states a change above an older one of its category
            that states none, and, for a question about now or what will
            happen, above one of any category it may replace in other words.
        introduction_first: a question asking who a named person is ("who
            is Nell?") puts first, among the best hits, the memory written
            on its own that introduces them (``identity.py``).
        answer_support: lower every hit's relevance below 0.5 when the best
            hits neither carry the question's words nor come close to it
            (``answered.py``): the palace probably does not hold the answer.
    """

    candidates: int = 200
    fusion: str = "weighted"
    sparse_weight: float = 0.4
    dense_weight: float = 0.6
    rrf_k: float = 60.0
    neighbour_weight: float = 0.3
    session_weight: float = 0.5
    session_top: int = 3
    self_contained: int = 400
    unknown_entity_gate: bool = True
    dense_floor: float = 0.3
    floor: float = 0.0
    prior_weights: tuple[float, float, float] = (0.15, 0.10, 0.10)
    expand: bool = True
    graph_seeds: int = 5
    graph_weight: float = 0.15
    graph_hops: int = 2
    graph_max_degree: int = 50
    redundancy: float = 0.95
    time_window_weight: float = 0.2
    time_when_weight: float = 0.3
    time_outside_factor: float = 0.6
    time_pool: int = 50
    session_diversity: float = 1.0
    ann_candidates: int = 400
    rerank: bool = True
    newer_first: bool = True
    introduction_first: bool = True
    answer_support: bool = True

    @property
    def relevance_ceiling(self) -> float:
        """The ranking value shown as relevance 1: a perfect keyword and
        embedding match with its context's whole support (its session's, or
        its own for a memory written alone). Session support alone cannot
        reach it, so the best hits are told apart instead of all showing
        1.00; the time prior and the graph can pass it (capped)."""
        fused = self.sparse_weight + self.dense_weight
        return fused * (1.0 + self.neighbour_weight + self.session_weight)


@dataclass(frozen=True, slots=True)
class Depths:
    """How deep each stage of one recall works (``Depths.of``).

    Attributes:
        limit: the caller's cut: at most this many hits are returned.
        ranked: how many hits the pipeline ranks before that cut.
        keyword: keyword candidates asked for.
        session: best eligible rows session support starts from.
        time: best candidates the time prior looks at.
        hydrate: best candidates read in full to be ranked with their priors.
    """

    limit: int
    ranked: int
    keyword: int
    session: int
    time: int
    hydrate: int

    @classmethod
    def of(cls, limit: int, options: RecallOptions, *, rescored: int = 0) -> Depths:
        """The depths of a recall of ``limit`` hits whose best ``rescored``
        candidates the re-ranker or a learned scorer re-orders (0: neither)."""
        # They re-order a window of their own (reranker.json's window,
        # scorer.DEPTH) before the cut, so the pipeline ranks at least that many.
        ranked = max(limit, rescored)
        return cls(
            limit=limit,
            ranked=ranked,
            # Chosen on LoCoMo (``options.candidates``); never fewer than
            # the hits ranked, or a keyword-only memory could not make the list.
            keyword=max(options.candidates, ranked),
            # Five rows per hit and at least 100: every session near the top
            # of the list is then seen, so its members can lend support.
            session=max(ranked * 5, 100),
            # Chosen on LoCoMo (``options.time_pool``); a memory the prior
            # lifts into the hits must have been looked at.
            time=max(options.time_pool, ranked),
            # Priors lower a score by a third at most (``stages.prior``), so
            # a memory far down the relevance order seldom climbs into the
            # hits: the best 2 x ranked + 10 are read and ranked with them.
            hydrate=ranked * 2 + 10,
        )

    def read(self, *, timed: bool) -> int:
        """How many of the best candidates are read in full: those the
        time prior may look at too, when it may run (``timed``)."""
        return max(self.time, self.hydrate) if timed else self.hydrate
