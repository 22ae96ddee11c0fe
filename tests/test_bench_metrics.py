"""The quality benchmark's metrics and LoCoMo loader (the data is read in
place and may be absent: those tests skip)."""

from __future__ import annotations

import math

import pytest

from bench.locomo import data_dir, load, turn_metrics


def test_turn_metrics_by_hand() -> None:
    ranked = ["D1:1", "D2:5", "D1:7", "D3:2"]
    m = turn_metrics(ranked, frozenset({"D2:5", "D3:2"}))
    assert m["hit@1"] == 0.0 and m["hit@5"] == 1.0
    assert m["recall@5"] == 1.0 and m["recall_all@10"] == 1.0
    assert m["mrr"] == 0.5
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    ideal = 1 + 1 / math.log2(3)
    assert m["ndcg@10"] == pytest.approx(dcg / ideal)
    # sessions in order D1, D2, D3: the first is not relevant
    assert m["session_hit@1"] == 0.0
    assert m["session_ndcg@5"] == pytest.approx((1 / math.log2(3) + 1 / math.log2(4)) / ideal)


def test_turn_metrics_nothing_found() -> None:
    m = turn_metrics([], frozenset({"D1:1"}))
    assert m["hit@10"] == 0.0 and m["mrr"] == 0.0 and m["session_hit@1"] == 0.0


@pytest.mark.skipif(
    not data_dir().is_dir(),
    reason=f"LoCoMo development split not found at {data_dir()} (set MINDPALACE_LOCOMO)",
)
def test_loader_reads_the_development_split() -> None:
    conversations = load()
    assert len(conversations) == 6
    questions = sum(len(c.questions) for c in conversations)
    assert 880 <= questions <= 885  # categories 1-4 with usable evidence
    for conversation in conversations:
        ids = {t.dia_id for t in conversation.turns}
        assert all(q.evidence <= ids for q in conversation.questions)
        assert all(t.text.startswith(f"{t.speaker}: ") for t in conversation.turns)
