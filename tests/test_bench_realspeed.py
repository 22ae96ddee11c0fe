"""The real-text speed corpus: LongMemEval turns, each once, sessions in
date order; and a small run through the real palace (skips without the data)."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timezone
from pathlib import Path

import pytest

from bench import realspeed, timecost
from bench.longmemeval import LmeQuestion, LmeSession, LmeTurn, data_file


def _session(sid: str, day: int, *texts: str) -> LmeSession:
    return LmeSession(
        sid,
        datetime(2023, 5, day, tzinfo=timezone.utc),
        tuple(
            LmeTurn(f"{sid}:{i}", "user" if i % 2 == 0 else "assistant", t, False)
            for i, t in enumerate(texts)
        ),
    )


def _question(qid: str, *sessions: LmeSession) -> LmeQuestion:
    return LmeQuestion(
        qid,
        "multi-session",
        "what?",
        datetime(2023, 6, 1, tzinfo=timezone.utc),
        sessions,
        frozenset(),
    )


def test_turns_are_distinct_in_date_order_and_cut_at_the_size() -> None:
    late = _session("b", 9, "late one", "late two")
    early = _session("a", 2, "hello", "hi there", "hello", "  ")
    questions = [_question("q1", late, early), _question("q2", early, _session("c", 5, "hello"))]
    messages = realspeed.turns(questions, 100)
    # "hello" twice in session a is one turn; in session c it is another;
    # the blank turn is dropped; sessions by date: a (2nd), c (5th), b (9th).
    assert [(m.session, m.content, m.role) for m in messages] == [
        ("a", "hello", "user"),
        ("a", "hi there", "assistant"),
        ("c", "hello", "user"),
        ("b", "late one", "user"),
        ("b", "late two", "assistant"),
    ]
    assert all(m.created_at is not None for m in messages)
    assert messages[0].created_at == early.when
    assert [m.content for m in realspeed.turns(questions, 3)] == ["hello", "hi there", "hello"]


@pytest.mark.skipif(not data_file().exists(), reason=f"LongMemEval data absent ({data_file()})")
def test_a_small_real_palace_is_measured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(realspeed, "CACHE", tmp_path)
    built = realspeed.build(300, "static", log=lambda _: None)
    assert built["turns"] == 300 and built["ingest_per_s"] > 0
    assert realspeed.palace_path(300, "static").exists()
    result = realspeed.measure(realspeed.palace_path(300, "static"), "static", 0.0, 12)
    assert result["recall"]["n"] == 12
    assert {"dense", "sparse", "time"} <= set(result["stages_p50"])
    assert result["first_open_recall_ms"] > 0


@pytest.mark.skipif(not data_file().exists(), reason=f"LongMemEval data absent ({data_file()})")
def test_the_time_stage_is_measured_both_ways_with_the_same_hits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(realspeed, "CACHE", tmp_path)
    realspeed.build(300, "static", log=lambda _: None, shape="facts")
    path = realspeed.palace_path(300, "static", "facts")
    db = sqlite3.connect(path)
    with db:  # as an earlier version wrote them: the bench keeps them first
        db.execute("UPDATE memories SET stated_times = NULL WHERE seq % 2 = 0")
    db.close()
    result = timecost.measure(path, "static", 16)
    assert result["kept_first"] == 150
    assert result["same_hits"] == 16
    stage = result["time_stage"]
    assert stage["kept"]["all"]["n"] == stage["text"]["all"]["n"] == 16
    assert 0 < stage["kept"]["timed"]["n"] < 16  # some questions name a time
