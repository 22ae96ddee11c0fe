"""LoCoMo development split: loading (read in place, never copied) and the
retrieval metrics of BENCHMARKS.md.

The data is CC BY-NC and lives outside the repository, in
``../shared/data/locomo/`` beside the checkout (or ``$MINDPALACE_LOCOMO``).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

__all__ = [
    "Conversation",
    "Question",
    "Turn",
    "data_dir",
    "load",
    "turn_metrics",
]

_EVIDENCE = re.compile(r"D(\d+):(\d+)")


def data_dir() -> Path:
    """Where the split is expected."""
    override = os.environ.get("MINDPALACE_LOCOMO")
    if override:
        return Path(override)
    return Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo"


@dataclass(frozen=True, slots=True)
class Turn:
    dia_id: str
    session: int
    index: int  # position within its session
    when: datetime
    date_text: str
    speaker: str
    text: str  # the memory: "{speaker}: {text}" + photo caption


@dataclass(frozen=True, slots=True)
class Question:
    text: str
    category: int
    evidence: frozenset[str]


@dataclass(frozen=True, slots=True)
class Conversation:
    name: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]


def _when(text: str) -> datetime:
    parsed = datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y")
    return parsed.replace(tzinfo=timezone.utc)


def _evidence(raw: Sequence[str]) -> frozenset[str]:
    # A few ids are malformed ("D8:6; D9:17"); take every well-formed id in them.
    found = set()
    for item in raw:
        for session, turn in _EVIDENCE.findall(item):
            found.add(f"D{int(session)}:{int(turn)}")
    return frozenset(found)


def load(directory: Path | None = None) -> list[Conversation]:
    """Every conversation; questions of categories 1-4 with evidence."""
    root = directory or data_dir()
    conversations = []
    for path in sorted(root.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        sessions = sorted(
            int(m.group(1)) for key in data if (m := re.fullmatch(r"session_(\d+)", key))
        )
        turns = []
        for session in sessions:
            date_text = data.get(f"session_{session}_date_time", "")
            when = _when(date_text)
            for index, raw in enumerate(data[f"session_{session}"]):
                text = f"{raw['speaker']}: {raw['text']}"
                if raw.get("blip_caption"):
                    text += f" [shared a photo: {raw['blip_caption']}]"
                turns.append(
                    Turn(raw["dia_id"], session, index, when, date_text, raw["speaker"], text)
                )
        known = {t.dia_id for t in turns}
        questions = []
        for qa in data["qa"]:
            if qa.get("category") not in (1, 2, 3, 4):
                continue
            evidence = _evidence(qa.get("evidence", [])) & known
            if evidence:
                questions.append(Question(qa["question"], int(qa["category"]), evidence))
        conversations.append(Conversation(path.stem, tuple(turns), tuple(questions)))
    return conversations


def _session(dia_id: str) -> str:
    return dia_id.split(":", 1)[0]


def _ndcg(relevant: Sequence[bool], ideal: int, k: int) -> float:
    dcg = sum(1.0 / math.log2(i + 2) for i, rel in enumerate(relevant[:k]) if rel)
    best = sum(1.0 / math.log2(i + 2) for i in range(min(ideal, k)))
    return dcg / best if best else 0.0


def turn_metrics(ranked: Sequence[str], evidence: frozenset[str]) -> dict[str, float]:
    """Turn- and session-level metrics of one ranked list of dia ids."""
    rel = [d in evidence for d in ranked]
    out: dict[str, float] = {}
    for k in (1, 5, 10, 20):
        out[f"hit@{k}"] = float(any(rel[:k]))
    for k in (5, 10, 20):
        out[f"recall@{k}"] = sum(rel[:k]) / len(evidence)
    out["recall_all@10"] = float(sum(rel[:10]) == len(evidence))
    first = next((i for i, r in enumerate(rel) if r), None)
    out["mrr"] = 0.0 if first is None else 1.0 / (first + 1)
    out["ndcg@10"] = _ndcg(rel, len(evidence), 10)
    sessions: list[str] = []
    for dia_id in ranked:
        s = _session(dia_id)
        if s not in sessions:
            sessions.append(s)
    wanted = {_session(d) for d in evidence}
    srel = [s in wanted for s in sessions]
    out["session_hit@1"] = float(bool(srel[:1] and srel[0]))
    out["session_ndcg@5"] = _ndcg(srel, len(wanted), 5)
    return out


def iter_pairs(
    conversations: Sequence[Conversation],
) -> Iterator[tuple[Conversation, Conversation]]:
    """Each conversation with the next one (cyclically): own, foreign."""
    for i, conversation in enumerate(conversations):
        yield conversation, conversations[(i + 1) % len(conversations)]
