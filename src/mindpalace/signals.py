"""Signals: write sources, recall outcomes and feedback, as training data
for a scorer.

Recall stays read-only: nothing here touches a memory row. Every signal goes
to the store's separate signals table, and ``MINDPALACE_SIGNALS=off``
(``Settings.signals``) switches recording off entirely.

A *training pair* is one judged hit: the query of the last recall (by the
same agent, through the same channel) that returned the memory before the
feedback, the rank and score it had there, the memory's write source, and
the label (useful or not), and the hit's features then
(``retrieval.scorer.HIT_FEATURES``, recorded with each recall).

``train()`` fits the agent's learned scorer to its own pairs (never another
agent's or channel's) and stores the weights; recall uses them when
``MINDPALACE_SCORER=on`` (``retrieval/scorer.py`` holds the model).
"""

from __future__ import annotations

import bisect
import json
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import IO, TYPE_CHECKING, Any

from mindpalace.errors import BusyError, ValidationError
from mindpalace.models import HitList, Scope
from mindpalace.retrieval import scorer as learned
from mindpalace.scoping import check_change
from mindpalace.seat import Seat
from mindpalace.store.base import Signal
from mindpalace.validation import check_limit

if TYPE_CHECKING:
    from mindpalace.view import View

__all__ = [
    "Signals",
    "TrainingPair",
    "TrainingReport",
    "active_scorer",
    "record_recall",
    "scorer_weights",
    "training_examples",
]


@dataclass(frozen=True, slots=True)
class TrainingPair:
    """A (query, memory) pair with its outcome features and its label."""

    query: str
    memory_id: str
    useful: bool
    rank: int
    score: float
    mode: str
    source: str | None
    recalled_at: datetime
    judged_at: datetime
    recall: int = 0  # the recall signal's sequence number (groups pairs by recall)
    features: Mapping[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (times as ISO 8601)."""
        return {
            "query": self.query,
            "memory_id": self.memory_id,
            "useful": self.useful,
            "rank": self.rank,
            "score": self.score,
            "mode": self.mode,
            "source": self.source,
            "recalled_at": self.recalled_at.isoformat(),
            "judged_at": self.judged_at.isoformat(),
            "recall": self.recall,
            "features": dict(self.features),
        }


@dataclass(frozen=True, slots=True)
class TrainingReport:
    """What ``Signals.train`` did.

    Attributes:
        trained: whether new weights were stored.
        judged: training pairs (judged hits) of this agent and channel.
        comparisons: useful/not-useful pairs within one recall among them.
        reason: why nothing was trained, when nothing was.
        weights: the stored weights, when trained.
    """

    trained: bool
    judged: int
    comparisons: int
    reason: str | None = None
    weights: learned.ScorerWeights | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "trained": self.trained,
            "judged": self.judged,
            "comparisons": self.comparisons,
            "reason": self.reason,
            "weights": self.weights.to_dict() if self.weights else None,
        }


def record_recall(seat: Seat, query: str, hits: HitList) -> None:
    """Record what a recall in ``seat`` returned: ids, final ranks and
    scores (nothing when signals are off). Never waits for a writer: while
    another process holds the write lock the outcome is dropped, and
    counted (``engine.recalls.dropped``)."""
    engine = seat.engine
    if not engine.settings.signals:
        return
    scope = seat.scope
    at = seat.now()
    recall_id = engine.recalls.ids.next(at)
    engine.recalls.returned(scope.agent_id, scope.channel, (h.memory.id for h in hits), recall_id)
    signal = Signal(
        kind="recall",
        agent_id=scope.agent_id,
        at=at,
        channel=scope.channel,
        query=query,
        data={
            "recall": recall_id,
            "mode": hits.mode,
            "features": list(learned.HIT_FEATURES),
            "hits": [
                {
                    "id": h.memory.id,
                    "rank": rank,
                    "score": round(h.score, 6),
                    # what the scorer trains on, as it was at this recall
                    "f": [round(v, 6) for v in learned.hit_features(h, at)],
                }
                for rank, h in enumerate(hits, start=1)
            ],
        },
    )
    try:
        engine.store.record_signals([signal], wait=False)
    except BusyError:
        engine.recalls.drop()


def scorer_weights(seat: Seat) -> learned.ScorerWeights | None:
    """The seat's agent's trained scorer weights (its channel), or None."""
    scope = seat.scope
    if scope.unscoped:
        return None
    data = seat.engine.store.load_scorer(agent_id=scope.agent_id, channel=scope.channel)
    return learned.ScorerWeights.from_dict(data) if data else None


def active_scorer(seat: Seat) -> learned.ScorerWeights | None:
    """The weights a recall in ``seat`` uses: its agent's trained scorer
    when ``MINDPALACE_SCORER=on``, else None (the pipeline's order)."""
    if not seat.engine.settings.scorer:
        return None
    weights = scorer_weights(seat)
    return weights if weights is not None and weights.trained else None


class Signals:
    """The signals side of a palace (``palace.signals``)."""

    def __init__(self, palace: View) -> None:
        self._palace = palace

    @property
    def enabled(self) -> bool:
        """Whether this palace records signals (``MINDPALACE_SIGNALS``)."""
        return self._palace.engine.settings.signals

    @property
    def dropped(self) -> int:
        """Recall outcomes not recorded because the palace was busy (this
        process, every view of the engine)."""
        return self._palace.engine.recalls.dropped

    def record_recall(self, query: str, hits: HitList) -> None:
        """Record what a recall returned: ids, final ranks and scores."""
        record_recall(self._palace.seat, query, hits)

    def feedback(self, memory_id: str, *, useful: bool) -> Signal | None:
        """Record that a recalled memory helped (``useful``) or not.

        Any memory this palace can see may be judged, another agent's shared
        one too (``scoping.check_change``): the judgment is a signal of this
        palace's agent and channel, and the memory stays as it is. Returns
        the recorded signal, or None when signals are switched off.

        Raises:
            NotFoundError: no such memory in this scope.
            ValidationError: ``useful`` is not a bool.
        """
        if not isinstance(useful, bool):
            raise ValidationError("useful", useful, valid=["true", "false"])
        memory = self._palace.get(memory_id)
        check_change(self._palace.scope, memory, "feedback")
        if not self.enabled:
            return None
        scope = self._palace.scope
        signal = Signal(
            kind="feedback",
            agent_id=scope.agent_id,
            at=self._palace.now(),
            channel=scope.channel,
            memory_id=memory.id,
            data={
                "useful": useful,
                "recall": self._palace.engine.recalls.last_recall(
                    scope.agent_id, scope.channel, memory.id
                ),
            },
        )
        self._palace.engine.store.record_signals([signal])
        return signal

    def about(self, memory_id: str, *, limit: int = 50) -> list[Signal]:
        """The signals recorded about a memory this palace sees (its writes,
        fetches, and the feedback on it), newest first: this palace's agent's
        only, every agent's with management access.

        Raises:
            NotFoundError: no such memory in this scope.
            ValidationError: ``limit`` outside 1-1,000.
        """
        check_limit(limit, low=1, high=1000)
        memory = self._palace.get(memory_id)
        scope = self._palace.scope
        return self._palace.engine.store.memory_signals(
            memory.id, agent_id=None if scope.unscoped else scope.agent_id, limit=limit
        )

    def pairs(self) -> list[TrainingPair]:
        """Training pairs from this scope's signals (every agent's with
        management access), in the order the feedback was given. Only pairs
        of memories this palace can see now are returned: the same agent may
        have judged them through other groups."""
        scope = self._palace.scope
        found = list(self._pairs(scope))
        visible = self._palace.engine.store.get_many(sorted({p.memory_id for p in found}), scope)
        return [p for p in found if p.memory_id in visible]

    def _pairs(self, scope: Scope) -> Iterator[TrainingPair]:
        signals = self._palace.engine.store.iter_signals(
            kinds=("store", "recall", "feedback"),
            agent_id=None if scope.unscoped else scope.agent_id,
            channel=None if scope.unscoped else scope.channel or "",
        )
        source: dict[str, str] = {}
        last: dict[tuple[str, str | None, str], tuple[Signal, Mapping[str, Any]]] = {}
        for signal in signals:
            if signal.kind == "store" and signal.memory_id:
                source[signal.memory_id] = str(signal.data.get("source"))
            elif signal.kind == "recall":
                for hit in signal.data.get("hits", []):
                    key = (signal.agent_id, signal.channel, str(hit["id"]))
                    last[key] = (signal, hit)
            elif signal.kind == "feedback" and signal.memory_id:
                found = last.get((signal.agent_id, signal.channel, signal.memory_id))
                if found is None:  # judged without a recall: no outcome features
                    continue
                recall, hit = found
                names = recall.data.get("features", ())
                yield TrainingPair(
                    query=recall.query or "",
                    memory_id=signal.memory_id,
                    useful=bool(signal.data.get("useful")),
                    rank=int(hit["rank"]),
                    score=float(hit["score"]),
                    mode=str(recall.data.get("mode", "")),
                    source=source.get(signal.memory_id),
                    recalled_at=recall.at,
                    judged_at=signal.at,
                    recall=recall.seq,
                    features={
                        str(n): float(v) for n, v in zip(names, hit.get("f", ()), strict=False)
                    },
                )

    def export_pairs(self, out: IO[str]) -> int:
        """Write the training pairs as JSON lines; returns how many."""
        count = 0
        for pair in self.pairs():
            out.write(json.dumps(pair.to_dict(), ensure_ascii=False, sort_keys=True) + "\n")
            count += 1
        return count

    # -- the learned scorer ---------------------------------------------------------

    def train(self) -> TrainingReport:
        """Fit this agent's scorer to its own training pairs (this agent,
        this channel, memories it can see) and store the weights, replacing
        earlier ones. An explicit step: recall never trains. Below
        ``scorer.MIN_JUDGED`` judged hits or ``scorer.MIN_COMPARISONS``
        useful/not-useful comparisons nothing is stored and recall keeps the
        pipeline's order.

        Raises:
            ValidationError: the palace is opened with management access (a
                scorer belongs to one agent: open the palace as that agent).
        """
        scope = self._palace.scope
        if scope.unscoped:
            raise ValidationError(
                "scope",
                "management",
                reason="a scorer is trained for one agent: open the palace as that agent",
            )
        if not self.enabled:
            return TrainingReport(False, 0, 0, reason="signals are off (MINDPALACE_SIGNALS=off)")
        examples = training_examples(self.pairs())
        compared = len(learned.comparisons(examples))
        weights = learned.train(examples, now=self._palace.now())
        if weights is None:
            return TrainingReport(
                False,
                len(examples),
                compared,
                reason=(
                    f"not enough judgments: {len(examples)} judged hits and {compared}"
                    f" comparisons, {learned.MIN_JUDGED} and {learned.MIN_COMPARISONS} needed"
                ),
            )
        self._palace.engine.store.save_scorer(
            agent_id=scope.agent_id,
            channel=scope.channel,
            data=weights.to_dict(),
            at=self._palace.now(),
        )
        return TrainingReport(True, len(examples), compared, weights=weights)

    def weights(self) -> learned.ScorerWeights | None:
        """This agent's trained scorer weights (this channel), or None."""
        return scorer_weights(self._palace.seat)

    def active_scorer(self) -> learned.ScorerWeights | None:
        """The weights recall should use: this agent's trained scorer when
        ``MINDPALACE_SCORER=on``, else None (the pipeline's order)."""
        return active_scorer(self._palace.seat)


def training_examples(pairs: Sequence[TrainingPair]) -> list[learned.Example]:
    """Scorer examples from training pairs: each pair's recorded features
    plus how often its memory had been judged useful / not useful before
    that recall (what recall would have read then)."""
    history: dict[str, list[tuple[datetime, bool]]] = defaultdict(list)
    for pair in pairs:
        history[pair.memory_id].append((pair.judged_at, pair.useful))
    for judged in history.values():
        judged.sort(key=lambda item: item[0])
    examples = []
    for pair in pairs:
        judged = history[pair.memory_id]
        before = judged[: bisect.bisect_left([at for at, _ in judged], pair.recalled_at)]
        useful = sum(1 for _, good in before if good)
        examples.append(
            learned.Example(
                group=str(pair.recall),
                features=learned.features_of(
                    list(pair.features.values()),
                    list(pair.features),
                    useful=useful,
                    useless=len(before) - useful,
                ),
                useful=pair.useful,
                memory_id=pair.memory_id,
            )
        )
    return examples
