"""Does the learned scorer help? LoCoMo development split, one command::

    python -m bench.scorer                 # about 5 minutes on 2 cores
    python -m bench.scorer --json out.json

An agent's feedback is simulated: it recalls a question (limit 10, the
default) and judges every hit it was shown, useful when the hit is one of
the question's evidence turns, not useful otherwise. The scorer is trained
on those judgments and tested on questions whose feedback it never saw:

* **leave one conversation out**: train on the judgments of five
  conversations' questions (pooled), test on the sixth conversation, in a
  palace with no feedback at all;
* **within a conversation, by question**: questions split in two halves
  (even / odd position); the agent judges one half's recalls in its palace,
  ``palace.signals.train()`` trains on them, and the other half is asked in
  that palace with ``MINDPALACE_SCORER=on``; then the halves swap. Here the
  agent's earlier judgments of a memory are features too.

Every test question is asked twice in the same run, scorer off and on
(limit 100, as in bench/quality.py); the scorer re-ranks the pipeline's best
100 candidates. The learning curve and the regularisation rows re-rank the
same held-out recalls offline with ``scorer.rerank`` (what recall does with
the weights: no judgments exist in a held-out conversation).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bench.locomo import Conversation, Question, data_dir, load, turn_metrics
from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.embed import from_settings
from mindpalace.embed.base import Embedder
from mindpalace.formats import read_messages
from mindpalace.models import Hit
from mindpalace.retrieval import scorer as learned
from mindpalace.signals import training_examples

DEPTH = 100  # hits fetched per test question
SHOWN = 10  # hits the simulated agent sees and judges
AGENT = "agent"
METRICS = ("hit@1", "hit@5", "hit@10", "mrr", "session_hit@1")


def _ranked(hits: Sequence[Hit]) -> list[str]:
    return [str(h.memory.metadata["dia_id"]) for h in hits]


def _mean(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.fmean(r[key] for r in rows) for key in METRICS}


def _paired(off: Sequence[dict[str, float]], on: Sequence[dict[str, float]]) -> dict[str, Any]:
    """Per-question differences, on minus off: questions better / worse at
    hit@1 and hit@10, and a 95% bootstrap interval of the MRR difference."""
    out: dict[str, Any] = {}
    for key in ("hit@1", "hit@10"):
        out[f"{key} better"] = sum(b[key] > a[key] for a, b in zip(off, on, strict=True))
        out[f"{key} worse"] = sum(b[key] < a[key] for a, b in zip(off, on, strict=True))
    diffs = [b["mrr"] - a["mrr"] for a, b in zip(off, on, strict=True)]
    rng = random.Random(11)
    means = sorted(statistics.fmean(rng.choices(diffs, k=len(diffs))) for _ in range(2000))
    out["mrr diff"] = statistics.fmean(diffs)
    out["mrr 95% interval"] = (means[50], means[1949])
    return out


class Bench:
    def __init__(self, scratch: Path, conversations: Sequence[Conversation]) -> None:
        self.scratch = scratch
        self.conversations = conversations
        self.embedder: Embedder = from_settings(Settings(embedder="local"))
        self.base: dict[str, Path] = {}

    def ingest(self) -> None:
        """One clean palace file per conversation, copied for each use."""
        for conversation in self.conversations:
            path = self.scratch / f"{conversation.name}.db"
            start = time.perf_counter()
            with self.palace(path) as palace:
                palace.add_messages(
                    read_messages(data_dir() / f"{conversation.name}.json", format="locomo")
                )
            self.base[conversation.name] = path
            print(
                f"  ingested {conversation.name} in {time.perf_counter() - start:.1f} s",
                file=sys.stderr,
            )

    def palace(self, path: Path, *, scorer: bool = False) -> Palace:
        settings = Settings(agent_id=AGENT, embedder="local", scorer=scorer)
        return Palace(path, settings=settings, embedder=self.embedder)

    def copy(self, conversation: Conversation, label: str) -> Path:
        path = self.scratch / f"{conversation.name}-{label}.db"
        shutil.copyfile(self.base[conversation.name], path)
        return path

    @staticmethod
    def judge(palace: Palace, questions: Sequence[Question]) -> int:
        """The simulated agent: recall each question, judge every hit shown."""
        judged = 0
        for question in questions:
            for hit in palace.recall(question.text, limit=SHOWN):
                useful = hit.memory.metadata["dia_id"] in question.evidence
                palace.feedback(hit.memory.id, useful=useful)
                judged += 1
        return judged


def run(conversations: Sequence[Conversation]) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as scratch:
        bench = Bench(Path(scratch), conversations)
        bench.ingest()
        examples = within(bench, results)
        held = loco(bench, results, examples)
        offline(conversations, results, examples, held)
    return results


Examples = dict[str, list[learned.Example]]
Held = dict[str, list[tuple[Question, list[Hit]]]]


def within(bench: Bench, results: dict[str, Any]) -> Examples:
    """Two folds per conversation by question parity, through the palace's
    own ``signals.train()`` and ``MINDPALACE_SCORER=on``."""
    off_rows: list[dict[str, float]] = []
    on_rows: list[dict[str, float]] = []
    examples: Examples = defaultdict(list)
    reports = []
    for conversation in bench.conversations:
        halves = (conversation.questions[0::2], conversation.questions[1::2])
        for fold, (train_qs, test_qs) in enumerate((halves, halves[::-1])):
            path = bench.copy(conversation, f"within{fold}")
            with bench.palace(path) as palace:
                bench.judge(palace, train_qs)
                # Recall numbers restart in every palace: keep the groups apart.
                examples[conversation.name] += [
                    replace(e, group=f"{conversation.name}/{fold}/{e.group}")
                    for e in training_examples(palace.signals.pairs())
                ]
                reports.append(palace.signals.train())
            with bench.palace(path) as off, bench.palace(path, scorer=True) as on:
                for question in test_qs:
                    base = off.recall(question.text, limit=DEPTH)
                    scored = on.recall(question.text, limit=DEPTH)
                    off_rows.append(turn_metrics(_ranked(base), question.evidence))
                    on_rows.append(turn_metrics(_ranked(scored), question.evidence))
        print(f"  within {conversation.name}: done", file=sys.stderr)
    results["within"] = {
        "off": _mean(off_rows),
        "on": _mean(on_rows),
        "paired": _paired(off_rows, on_rows),
        "questions": len(on_rows),
        "judged_per_fold": statistics.median(r.judged for r in reports),
        "trained_folds": sum(r.trained for r in reports),
        "folds": len(reports),
    }
    return examples


def loco(bench: Bench, results: dict[str, Any], examples: Examples) -> Held:
    """Train on five conversations' judgments, test on the sixth (a palace
    with no feedback), the weights stored as the agent's."""
    off_rows: list[dict[str, float]] = []
    on_rows: list[dict[str, float]] = []
    held: Held = {}
    fold_weights: dict[str, learned.ScorerWeights] = {}
    for conversation in bench.conversations:
        pooled = [e for name, ex in examples.items() if name != conversation.name for e in ex]
        weights = learned.train(pooled)
        assert weights is not None
        fold_weights[conversation.name] = weights
        path = bench.copy(conversation, "loco")
        with bench.palace(path) as palace:
            palace.store.save_scorer(
                agent_id=AGENT, channel=None, data=weights.to_dict(), at=palace.now()
            )
        held[conversation.name] = []
        with bench.palace(path) as off, bench.palace(path, scorer=True) as on:
            for question in conversation.questions:
                base = off.recall(question.text, limit=DEPTH)
                scored = on.recall(question.text, limit=DEPTH)
                held[conversation.name].append((question, list(base)))
                off_rows.append(turn_metrics(_ranked(base), question.evidence))
                on_rows.append(turn_metrics(_ranked(scored), question.evidence))
        print(f"  loco {conversation.name}: done", file=sys.stderr)
    results["loco"] = {
        "off": _mean(off_rows),
        "on": _mean(on_rows),
        "paired": _paired(off_rows, on_rows),
        "questions": len(on_rows),
        "weights": {k: w.to_dict()["weights"] for k, w in fold_weights.items()},
    }
    return held


def offline(
    conversations: Sequence[Conversation],
    results: dict[str, Any],
    examples: Examples,
    held: Held,
) -> None:
    """Learning curve and regularisation: the held-out recalls of the
    leave-one-conversation-out split re-ranked with weights trained on less
    data or another ``l2``."""

    def measure(
        label: str, *, judged: int | None = None, l2: float = learned.L2, depth: int = DEPTH
    ) -> None:
        rows: list[dict[str, float]] = []
        now = datetime.now(timezone.utc)  # recall's clock, as in the real path
        for conversation in conversations:
            pooled = [e for n, ex in examples.items() if n != conversation.name for e in ex]
            if judged is not None:
                pooled = _first_recalls(pooled, judged)
            weights = learned.train(pooled, l2=l2, force=True) or learned.COLD_START
            for question, base in held[conversation.name]:
                head = learned.rerank(base[:depth], weights, now=now, limit=depth)
                reranked = head + base[depth:]
                rows.append(turn_metrics(_ranked(reranked), question.evidence))
        results.setdefault("offline", {})[label] = _mean(rows)

    measure("cold start (no training)", judged=0)
    for judged in (25, 50, 100, 200, 400, 1000, 2000):
        measure(f"first {judged} judged hits", judged=judged)
    for l2 in (0.1, 1.0, 10.0, 100.0):
        measure(f"all judged hits, l2 {l2:g}", l2=l2)
    # The judged hits were the first SHOWN of each recall: how deep to re-rank.
    for depth in (5, 10, 20, 50):
        measure(f"all judged hits, re-rank the best {depth} only", depth=depth)


def _first_recalls(examples: Sequence[learned.Example], judged: int) -> list[learned.Example]:
    """The examples of whole recalls, in a fixed shuffled order, until
    ``judged`` judged hits (what an agent would have after that much use)."""
    groups: dict[str, list[learned.Example]] = defaultdict(list)
    for example in examples:
        groups[example.group].append(example)
    order = sorted(groups)
    random.Random(7).shuffle(order)
    out: list[learned.Example] = []
    for key in order:
        if len(out) >= judged:
            break
        out += groups[key]
    return out


def markdown(results: dict[str, Any]) -> str:
    head = "| split | scorer | hit@1 | hit@5 | hit@10 | MRR | session H@1 |"
    lines = [head, "|---|---|---|---|---|---|---|"]
    for split, title in (("loco", "leave one conversation out"), ("within", "within, by question")):
        for state in ("off", "on"):
            row = results[split][state]
            cells = " | ".join(f"{row[k]:.3f}" for k in METRICS)
            lines.append(f"| {title} ({results[split]['questions']} q) | {state} | {cells} |")
    lines += ["", "| split | hit@1 better / worse | hit@10 better / worse | MRR diff [95%] |"]
    lines.append("|---|---|---|---|")
    for split in ("loco", "within"):
        p = results[split]["paired"]
        low, high = p["mrr 95% interval"]
        lines.append(
            f"| {split} | {p['hit@1 better']} / {p['hit@1 worse']}"
            f" | {p['hit@10 better']} / {p['hit@10 worse']}"
            f" | {p['mrr diff']:+.4f} [{low:+.4f}, {high:+.4f}] |"
        )
    lines += ["", "| offline re-rank of the held-out recalls | " + " | ".join(METRICS) + " |"]
    lines.append("|---" * (len(METRICS) + 1) + "|")
    for label, row in results.get("offline", {}).items():
        lines.append(f"| {label} | " + " | ".join(f"{row[k]:.3f}" for k in METRICS) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    if not data_dir().is_dir():
        print(f"LoCoMo data not found at {data_dir()}; set MINDPALACE_LOCOMO", file=sys.stderr)
        return 2
    results = run(load())
    print(markdown(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
