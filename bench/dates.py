"""Date awareness on LoCoMo: ingest speed with and without resolving dates,
and the time prior's weights, fitted with leave-one-conversation-out.

    python -m bench.dates             # weights grid (no event anchors), ingest speed
    python -m bench.dates --anchors   # the default prior with and without event anchors

One recall per question with the time prior off returns the first 100 hits
with their final scores; the prior is a factor on those scores (it runs
after fusion, session support and the graph), so each weight pair is scored
by re-sorting them, not by recalling again. ``bench.quality`` then checks
the chosen default with real recalls. With ``--anchors`` each hit is also
checked against the windows of the events the question dates things by
("after the charity race"), looked up in that conversation's palace as
recall looks them up (``retrieval.time.prior.anchor``), so both rows come from the
same hits.
"""

from __future__ import annotations

import argparse
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
from mindpalace.embed import from_settings
from mindpalace.formats import read_messages
from mindpalace.retrieval.pipeline import RecallOptions
from mindpalace.retrieval.time.prior import anchor, read_query, stated_times, time_prior

GRID = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5)
OFF = replace(RecallOptions(), time_window_weight=0.0, time_when_weight=0.0)


@dataclass(frozen=True, slots=True)
class Scored:
    dia_id: str
    final: float
    in_window: bool
    states_time: bool
    in_anchored: bool  # in a window the query names, event anchors included


@dataclass(frozen=True, slots=True)
class Asked:
    conversation: str
    category: int
    evidence: frozenset[str]
    hits: tuple[Scored, ...]
    events: int = 0  # events the question dates things by
    anchors: int = 0  # of them, found in the palace


def _ingest(
    conversations: Sequence[Conversation], scratch: Path, *, speed_check: bool = True
) -> dict[str, Palace]:
    embedder = from_settings(Settings())
    palaces: dict[str, Palace] = {}
    speed: dict[bool, list[float]] = {True: [], False: []}
    # Alternate the two ingests conversation by conversation so machine load
    # falls on both alike.
    for conversation in conversations:
        messages = read_messages(data_dir() / f"{conversation.name}.json", format="locomo")
        after = conversation.turns[-1].when + timedelta(days=1)
        for dates in (False, True) if speed_check else (True,):
            p = Palace(
                scratch / f"{conversation.name}-{dates}.db",
                embedder=embedder,
                clock=lambda after=after: after,
            )
            start = time.perf_counter()
            p.add_messages(messages, dates=dates)
            speed[dates].append(len(messages) / (time.perf_counter() - start))
            p.wait_for_vectors()  # a slow model's bulk write is embedded after it
            if dates:
                palaces[conversation.name] = p
            else:
                p.close()
    for dates, rates in speed.items():
        if not rates:
            continue
        print(
            f"ingest {'with' if dates else 'without'} dates: median {statistics.median(rates):.0f}"
            f" turns/s over {len(rates)} conversations ({', '.join(f'{r:.0f}' for r in rates)})"
        )
    return palaces


def collect(
    conversations: Sequence[Conversation], scratch: Path, *, speed_check: bool = True
) -> list[Asked]:
    palaces = _ingest(conversations, scratch, speed_check=speed_check)
    asked = []
    for conversation in conversations:
        palace = palaces[conversation.name]
        palace.recall_options = OFF
        for question in conversation.questions:
            query = read_query(question.text, palace.now())
            dated = replace(query, events=())  # the prior before event anchors
            anchored = anchor(palace.store, query, scope=palace.scope)
            hits = palace.recall(question.text, limit=100)
            scored = []
            for hit in hits:
                memory = hit.memory
                stated = stated_times(memory)
                in_window, in_anchored = (
                    time_prior(
                        memory.created_at, stated, replace(q, asks_when=False),
                        window_weight=1.0, when_weight=0.0,
                    ) is not None
                    for q in (dated, anchored)
                )  # fmt: skip
                scored.append(
                    Scored(
                        memory.metadata["dia_id"],
                        hit.stage_scores["final"],
                        in_window,
                        query.asks_when and bool(stated),
                        in_anchored,
                    )
                )
            asked.append(
                Asked(
                    conversation.name,
                    question.category,
                    question.evidence,
                    tuple(scored),
                    events=len(query.events),
                    anchors=len(anchored.windows) - len(dated.windows),
                )
            )
        palace.close()
    return asked


def score(
    asked: Sequence[Asked], window: float, when: float, *, anchors: bool = False
) -> list[dict[str, float]]:
    rows = []
    for a in asked:
        ranked = sorted(
            a.hits,
            key=lambda s: (
                -s.final
                * (1 + window * (s.in_anchored if anchors else s.in_window) + when * s.states_time)
            ),
        )
        metrics = turn_metrics([s.dia_id for s in ranked], a.evidence)
        metrics["category"] = a.category
        rows.append(metrics)
    return rows


def _mean(rows: Sequence[dict[str, float]], key: str, category: int | None = None) -> float:
    chosen = [r[key] for r in rows if category is None or r["category"] == category]
    return statistics.fmean(chosen) if chosen else 0.0


def anchors_table(asked: Sequence[Asked]) -> str:
    """The default prior with and without event anchors, from the same hits."""
    defaults = RecallOptions()
    weights = (defaults.time_window_weight, defaults.time_when_weight)
    metrics: list[tuple[str, int | None]] = [
        ("hit@10", None),
        ("recall@10", None),
        ("mrr", None),
        ("session_hit@1", None),
    ]
    metrics += [("hit@10", c) for c in (1, 2, 3, 4)] + [("recall@10", 2)]
    head = ["hit@10", "R@10", "MRR", "sess H@1"]
    head += [f"cat {c} hit@10" for c in (1, 2, 3, 4)] + ["cat 2 R@10"]
    lines = ["| time prior | " + " | ".join(head) + " |", "|---" * (len(head) + 1) + "|"]
    for label, anchors in (("without event anchors", False), ("with event anchors", True)):
        rows = score(asked, *weights, anchors=anchors)
        cells = " | ".join(f"{_mean(rows, key, cat):.4f}" for key, cat in metrics)
        lines.append(f"| {label} | {cells} |")
    with_events = [a for a in asked if a.events]
    found = [a for a in with_events if a.anchors]
    lines.append("")
    lines.append(
        f"{len(with_events)} of {len(asked)} questions date something by an event"
        f" ({sum(a.category == 2 for a in with_events)} of category 2);"
        f" an anchor was found for {len(found)}."
    )
    if found:
        for label, anchors in (("without", False), ("with", True)):
            rows = score(found, *weights, anchors=anchors)
            lines.append(
                f"Those {len(found)}, {label} anchors: hit@10 {_mean(rows, 'hit@10'):.4f},"
                f" R@10 {_mean(rows, 'recall@10'):.4f}, MRR {_mean(rows, 'mrr'):.4f}"
            )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--anchors",
        action="store_true",
        help="only compare the default prior with and without event anchors",
    )
    args = parser.parse_args(argv)
    if not data_dir().is_dir():
        print(f"LoCoMo data not found at {data_dir()}", file=sys.stderr)
        return 2
    conversations = load()
    if args.anchors:
        with tempfile.TemporaryDirectory() as scratch:
            asked = collect(conversations, Path(scratch), speed_check=False)
        print(anchors_table(asked))
        return 0
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
