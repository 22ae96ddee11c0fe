"""Signals: write sources, recall outcomes and feedback, as training data
for a scorer (seed 004 E).

Recall stays read-only: nothing here touches a memory row. Every signal goes
to the store's separate signals table, and ``MINDPALACE_SIGNALS=off``
(``Settings.signals``) switches recording off entirely.

A *training pair* is one judged hit: the query of the last recall (by the
same agent, through the same channel) that returned the memory before the
feedback, the rank and score it had there, the memory's write source, and
the label (useful or not).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import IO, TYPE_CHECKING, Any

from mindpalace.errors import BusyError, ValidationError
from mindpalace.ids import IdGenerator
from mindpalace.models import HitList, Scope
from mindpalace.store.base import Signal

if TYPE_CHECKING:
    from mindpalace.palace import Palace

__all__ = ["Signals", "TrainingPair"]


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
        }


class Signals:
    """The signals side of a palace (``palace.signals``)."""

    def __init__(self, palace: Palace) -> None:
        self._palace = palace
        self.dropped = 0  # recall outcomes not recorded because the palace was busy
        self._recall_ids = IdGenerator("rcl_")
        # memory id -> the latest recall (in this process) that returned it, so
        # feedback can say which recall it judges (consolidation pairs the
        # memories judged useful for one recall).
        self._last_recall: dict[str, str] = {}

    @property
    def enabled(self) -> bool:
        """Whether this palace records signals (``MINDPALACE_SIGNALS``)."""
        return self._palace.settings.signals

    def record_recall(self, query: str, hits: HitList) -> None:
        """Record what a recall returned: ids, final ranks and scores."""
        if not self.enabled:
            return
        scope = self._palace.scope
        at = self._palace.now()
        recall_id = self._recall_ids.next(at)
        if len(self._last_recall) > 10_000:
            self._last_recall.clear()
        self._last_recall.update((h.memory.id, recall_id) for h in hits)
        signal = Signal(
            kind="recall",
            agent_id=scope.agent_id,
            at=at,
            channel=scope.channel,
            query=query,
            data={
                "recall": recall_id,
                "mode": hits.mode,
                "hits": [
                    {"id": h.memory.id, "rank": rank, "score": round(h.score, 6)}
                    for rank, h in enumerate(hits, start=1)
                ],
            },
        )
        try:
            self._palace.store.record_signals([signal], wait=False)
        except BusyError:
            # A recall never waits for a writer to record its statistics: while
            # another process holds the write lock, this outcome is dropped.
            self.dropped += 1

    def feedback(self, memory_id: str, *, useful: bool) -> Signal | None:
        """Record that a recalled memory helped (``useful``) or not.

        Only a memory this palace can see may be judged. Returns the recorded
        signal, or None when signals are switched off.

        Raises:
            NotFoundError: no such memory in this scope.
            ValidationError: ``useful`` is not a bool.
        """
        if not isinstance(useful, bool):
            raise ValidationError("useful", useful, valid=["true", "false"])
        memory = self._palace.get(memory_id)
        if not self.enabled:
            return None
        scope = self._palace.scope
        signal = Signal(
            kind="feedback",
            agent_id=scope.agent_id,
            at=self._palace._clock(),
            channel=scope.channel,
            memory_id=memory.id,
            data={"useful": useful, "recall": self._last_recall.get(memory.id)},
        )
        self._palace.store.record_signals([signal])
        return signal

    def pairs(self) -> list[TrainingPair]:
        """Training pairs from this scope's signals (every agent's with
        management access), in the order the feedback was given. Only pairs
        of memories this palace can see now are returned: the same agent may
        have judged them through other groups."""
        scope = self._palace.scope
        found = list(self._pairs(scope))
        visible = self._palace.store.get_many(sorted({p.memory_id for p in found}), scope)
        return [p for p in found if p.memory_id in visible]

    def _pairs(self, scope: Scope) -> Iterator[TrainingPair]:
        signals = self._palace.store.iter_signals(
            kinds=("store", "recall", "feedback"),
            agent_id=None if scope.unscoped else scope.agent_id,
            channel=None if scope.unscoped else scope.channel or "",
        )
        source: dict[str, str] = {}
        last: dict[tuple[str, str | None, str], tuple[Signal, int, float, str]] = {}
        for signal in signals:
            if signal.kind == "store" and signal.memory_id:
                source[signal.memory_id] = str(signal.data.get("source"))
            elif signal.kind == "recall":
                mode = str(signal.data.get("mode", ""))
                for hit in signal.data.get("hits", []):
                    key = (signal.agent_id, signal.channel, str(hit["id"]))
                    last[key] = (signal, int(hit["rank"]), float(hit["score"]), mode)
            elif signal.kind == "feedback" and signal.memory_id:
                found = last.get((signal.agent_id, signal.channel, signal.memory_id))
                if found is None:  # judged without a recall: no outcome features
                    continue
                recall, rank, score, mode = found
                yield TrainingPair(
                    query=recall.query or "",
                    memory_id=signal.memory_id,
                    useful=bool(signal.data.get("useful")),
                    rank=rank,
                    score=score,
                    mode=mode,
                    source=source.get(signal.memory_id),
                    recalled_at=recall.at,
                    judged_at=signal.at,
                )

    def export_pairs(self, out: IO[str]) -> int:
        """Write the training pairs as JSON lines; returns how many."""
        count = 0
        for pair in self.pairs():
            out.write(json.dumps(pair.to_dict(), ensure_ascii=False, sort_keys=True) + "\n")
            count += 1
        return count
