"""Date awareness on LoCoMo: ingest speed with and without resolving dates,
and the time prior's weights, fitted with leave-one-conversation-out.

    python -m bench.dates

One recall per question with the time prior off returns the first 100 hits
with their final scores; the prior is a factor on those scores (it runs
after fusion, session support and the graph), so each weight pair is scored
by re-sorting them, not by recalling again. ``bench.quality`` then checks
the chosen default with real recalls.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path

from bench.locomo import Conversation, data_dir, load, turn_metrics
from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.conversations import read_messages
from mindpalace.embed import from_settings
from mindpalace.retrieval.pipeline import RecallOptions
from mindpalace.retrieval.timestage import read_query, stated_times, time_prior

GRID = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5)
OFF = replace(RecallOptions(), time_window_weight=0.0, time_when_weight=0.0)


@dataclass(frozen=True, slots=True)
class Scored:
    dia_id: str
    final: float
    in_window: bool
    states_time: bool


@dataclass(frozen=True, slots=True)
class Asked:
    conversation: str
    category: int
    evidence: frozenset[str]
    hits: tuple[Scored, ...]


def _ingest(conversations: Sequence[Conversation], scratch: Path) -> dict[str, Palace]:
    embedder = from_settings(Settings())
    palaces: dict[str, Palace] = {}
    speed: dict[bool, list[float]] = {True: [], False: []}
    # Alternate the two ingests conversation by conversation so machine load
    # falls on both alike.
    for conversation in conversations:
        messages = read_messages(data_dir() / f"{conversation.name}.json", format="locomo")
        after = conversation.turns[-1].when + timedelta(days=1)
        for dates in (False, True):
            p = Palace(
                scratch / f"{conversation.name}-{dates}.db",
                embedder=embedder,
                clock=lambda after=after: after,
            )
            start = time.perf_counter()
            p.add_messages(messages, dates=dates)
            speed[dates].append(len(messages) / (time.perf_counter() - start))
            if dates:
                palaces[conversation.name] = p
            else:
                p.close()
    for dates, rates in speed.items():
        print(
            f"ingest {'with' if dates else 'without'} dates: median {statistics.median(rates):.0f}"
            f" turns/s over {len(rates)} conversations ({', '.join(f'{r:.0f}' for r in rates)})"
        )
    return palaces


def collect(conversations: Sequence[Conversation], scratch: Path) -> list[Asked]:
    palaces = _ingest(conversations, scratch)
    asked = []
    for conversation in conversations:
        palace = palaces[conversation.name]
        palace.recall_options = OFF
        for question in conversation.questions:
            query = read_query(question.text, palace.now())
            hits = palace.recall(question.text, limit=100)
            scored = []
            for hit in hits:
                memory = hit.memory
                stated = stated_times(memory)
                window = time_prior(
                    memory.created_at, stated, replace(query, asks_when=False),
                    window_weight=1.0, when_weight=0.0,
                )  # fmt: skip
                scored.append(
                    Scored(
                        memory.metadata["dia_id"],
                        hit.stage_scores["final"],
                        window is not None,
                        query.asks_when and bool(stated),
                    )
                )
            asked.append(
                Asked(conversation.name, question.category, question.evidence, tuple(scored))
            )
        palace.close()
    return asked


def score(asked: Sequence[Asked], window: float, when: float) -> list[dict[str, float]]:
    rows = []
    for a in asked:
        ranked = sorted(
            a.hits,
            key=lambda s: -s.final * (1 + window * s.in_window + when * s.states_time),
        )
        metrics = turn_metrics([s.dia_id for s in ranked], a.evidence)
        metrics["category"] = a.category
        rows.append(metrics)
    return rows


def _mean(rows: Sequence[dict[str, float]], key: str, category: int | None = None) -> float:
    chosen = [r[key] for r in rows if category is None or r["category"] == category]
    return statistics.fmean(chosen) if chosen else 0.0


def main() -> int:
    if not data_dir().is_dir():
        print(f"LoCoMo data not found at {data_dir()}", file=sys.stderr)
        return 2
    conversations = load()
    with tempfile.TemporaryDirectory() as scratch:
        asked = collect(conversations, Path(scratch))
    print()
    print("| window | when | hit@10 | R@10 | MRR | sess H@1 | cat 2 hit@10 | cat 2 R@10 |")
    print("|---|---|---|---|---|---|---|---|")
    for window in GRID:
        for when in GRID:
            rows = score(asked, window, when)
            cells = [
                _mean(rows, "hit@10"),
                _mean(rows, "recall@10"),
                _mean(rows, "mrr"),
                _mean(rows, "session_hit@1"),
                _mean(rows, "hit@10", 2),
                _mean(rows, "recall@10", 2),
            ]
            print(f"| {window} | {when} | " + " | ".join(f"{c:.4f}" for c in cells) + " |")
    # Leave one conversation out: weights chosen on five (mean recall@10 +
    # session Hit@1 over all categories), scored on the sixth.
    print()
    print("| held-out conversation | chosen on the other five (window, when) |")
    print("|---|---|")
    held: list[dict[str, float]] = []
    names = [c.name for c in conversations]
    pairs = [(w, h) for w in GRID for h in GRID]
    for name in names:
        train = [a for a in asked if a.conversation != name]
        test = [a for a in asked if a.conversation == name]

        def objective(pair: tuple[float, float], train: list[Asked] = train) -> float:
            rows = score(train, *pair)
            return _mean(rows, "recall@10") + _mean(rows, "session_hit@1")

        best = max(pairs, key=objective)
        held += score(test, *best)
        print(f"| {name} | {best[0]}, {best[1]} |")
    print()
    for label, rows in (("Pooled held-out", held), ("Prior off", score(asked, 0.0, 0.0))):
        print(
            f"{label} ({len(rows)} questions): hit@10 {_mean(rows, 'hit@10'):.4f},"
            f" R@10 {_mean(rows, 'recall@10'):.4f},"
            f" session Hit@1 {_mean(rows, 'session_hit@1'):.4f},"
            f" cat 2 R@10 {_mean(rows, 'recall@10', 2):.4f},"
            f" cat 2 hit@10 {_mean(rows, 'hit@10', 2):.4f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
