"""The LongMemEval benchmark's metrics (LongMemEval's own definitions) on
hand-made rankings, and a smoke run that skips without the data."""

from __future__ import annotations

import math
from datetime import datetime, timezone

import pytest

from bench.longmemeval import (
    CONFIGS,
    LmeQuestion,
    LmeSession,
    LmeTurn,
    data_file,
    folds,
    load,
    ndcg,
    question_metrics,
    retrieval_metrics,
    run,
    session_metrics,
    stratified,
    summarise,
    turn_metrics,
)


def test_dcg_counts_the_first_two_ranks_fully() -> None:
    # LongMemEval's DCG: rel_1 + sum_{i>=2} rel_i / log2(i)
    assert ndcg([False, True, True], 2, 10) == pytest.approx((1 + 1 / math.log2(3)) / 2)
    assert ndcg([True, True], 2, 10) == 1.0
    assert ndcg([False, False, True], 1, 10) == pytest.approx(1 / math.log2(3))
    # beyond k nothing counts; no relevant document: 0
    assert ndcg([False, True], 1, 1) == 0.0
    assert ndcg([True], 0, 10) == 0.0


def test_recall_any_and_all() -> None:
    ranked = ["a", "x", "b", "y", "z", "c"]
    m = retrieval_metrics(ranked, frozenset({"a", "b", "c"}), 3, 5)
    assert m == {
        "recall_any@5": 1.0,
        "recall_all@5": 0.0,
        "ndcg@5": pytest.approx((1 + 1 / math.log2(3)) / (1 + 1 + 1 / math.log2(3))),
    }
    assert retrieval_metrics(ranked, frozenset({"q"}), 1, 5)["recall_any@5"] == 0.0
    assert turn_metrics(ranked, frozenset({"a", "c"}))["recall_all@10"] == 1.0
    assert turn_metrics(ranked, frozenset({"a", "c"}))["recall_all@5"] == 0.0


def test_session_level_widens_k_to_k_distinct_sessions() -> None:
    # turns of sessions A A B C C D E: the first 5 distinct sessions end at E
    ranked = ["A", "A", "B", "C", "C", "D", "E", "F"]
    m = session_metrics(ranked, frozenset({"E"}), answer_turns=1)
    assert m["recall_all@5"] == 1.0
    # every turn of an answer session is relevant: two of A's turns ranked first
    m = session_metrics(["A", "A", "B"], frozenset({"A"}), answer_turns=4)
    assert m["recall_all@5"] == 1.0
    assert m["ndcg@5"] == pytest.approx(2 / (1 + 1 + 1 / math.log2(3) + 1 / math.log2(4)))
    # fewer sessions than k in the ranking: k stops at its end
    assert session_metrics(["B"], frozenset({"A"}), answer_turns=1)["recall_any@10"] == 0.0


def _question() -> LmeQuestion:
    when = datetime(2023, 5, 20, tzinfo=timezone.utc)
    s1 = LmeSession(
        "s1",
        when,
        (
            LmeTurn("s1:0", "user", "I adopted a cat named Miso last week", True),
            LmeTurn("s1:1", "assistant", "Congratulations on adopting Miso!", False),
        ),
    )
    s2 = LmeSession(
        "answer_s2",
        when,
        (
            LmeTurn("answer_s2:0", "user", "Miso now eats salmon kibble", True),
            LmeTurn("answer_s2:1", "assistant", "Salmon is a good choice.", False),
            LmeTurn("answer_s2:2", "user", "Thanks", False),
        ),
    )
    return LmeQuestion(
        "q1",
        "multi-session",
        "What does my cat eat?",
        when,
        (s1, s2),
        frozenset({"s1", "answer_s2"}),
    )


def test_question_metrics_by_hand() -> None:
    q = _question()
    session_of = {t.turn_id: s.session_id for s in q.sessions for t in s.turns}
    m = question_metrics(q, ["answer_s2:0", "answer_s2:1", "s1:0"], session_of=session_of)
    assert m["turn_recall_all@5"] == 1.0
    assert m["turn_ndcg@5"] == pytest.approx((1 + 1 / math.log2(3)) / 2)
    assert m["session_recall_all@5"] == 1.0
    # five turns in the two answer sessions; the three ranked are all relevant
    ideal = 1 + 1 + 1 / math.log2(3) + 1 / math.log2(4) + 1 / math.log2(5)
    assert m["session_ndcg@5"] == pytest.approx((1 + 1 + 1 / math.log2(3)) / ideal)
    assert q.evidence == {"s1:0", "answer_s2:0"}


def test_stratified_subset_is_fixed_and_spans_types() -> None:
    q = _question()
    others = [
        LmeQuestion(f"q{i}", t, "x", q.when, q.sessions, q.answer_sessions)
        for i, t in enumerate(["knowledge-update"] * 3 + ["multi-session"] * 3)
    ]
    first = stratified(others, 2)
    assert {x.question_type for x in first} == {"knowledge-update", "multi-session"}
    assert [x.question_id for x in stratified(others, 2)] == [x.question_id for x in first]
    assert len(stratified(others, 100)) == 6


def test_a_run_over_a_hand_made_question() -> None:
    rows = run([_question()], CONFIGS)
    summary = summarise(rows, CONFIGS)
    assert summary["bm25 (bare turns)"]["all"]["turn_recall_any@5"] == 1.0
    assert summary["default"]["questions"] == 1
    # the product's ranking holds the palace's turns, identified by their ids
    assert set(rows[0]["rankings"]["default"]) <= {t.turn_id for t in _question().turns()}


def test_the_palaces_model_is_chosen() -> None:
    dense = [c for c in CONFIGS if c.name == "dense (bare turns)"]
    ranked = {
        name: run([_question()], dense, embedder=name)[0]["rankings"]["dense (bare turns)"]
        for name in ("static", "hashing")
    }
    # the same turns, ordered by each model's own cosines
    assert sorted(ranked["static"]) == sorted(ranked["hashing"])
    assert ranked["static"] != ranked["hashing"]


@pytest.mark.skipif(
    not data_file().is_file(),
    reason=f"LongMemEval_S development half not found at {data_file()}"
    " (set MINDPALACE_LONGMEMEVAL)",
)
def test_folds_pick_on_one_half_and_score_the_other() -> None:
    # "a" wins on odd questions, "b" on even ones, by a margin each way.
    rows = [
        {
            "metrics": {
                name: {"turn_recall_all@10": value, "turn_ndcg@10": value}
                for name, value in (("a", 1.0 if i % 2 else 0.0), ("b", 0.0 if i % 2 else 0.9))
            }
        }
        for i in range(40)
    ]
    picked, held = folds(rows, ["a", "b"], repeats=5)
    assert sum(picked.values()) == 10
    # Whatever a half picks, the other half scores it honestly: never above
    # the better configuration's own mean (0.5), far from the 0.95 that the
    # better of the two per question would give.
    assert 0.3 < held["turn_recall_all@10"] <= 0.5 + 1e-9
    same = [
        {
            "metrics": {
                "a": {"turn_recall_all@10": 1.0, "turn_ndcg@10": 0.5},
                "b": {"turn_recall_all@10": 0.0, "turn_ndcg@10": 0.0},
            }
        }
    ] * 10
    picked, held = folds(same, ["a", "b"], repeats=3)
    assert picked == {"a": 6} and held == {"turn_recall_all@10": 1.0, "turn_ndcg@10": 0.5}


def test_smoke_on_the_development_half() -> None:
    questions = load()
    assert len(questions) == 238
    scored = [q for q in questions if not q.abstention and q.evidence]
    assert len(scored) == 221
    for q in scored:
        sessions = {s.session_id for s in q.sessions}
        assert q.answer_sessions <= sessions
    rows = run(
        stratified(scored, 1), [c for c in CONFIGS if c.name in ("bm25 (bare turns)", "default")]
    )
    assert len(rows) == 1 and set(rows[0]["metrics"]) == {"bm25 (bare turns)", "default"}
