"""The everyday-palace benchmark: its data files are sound and meet the
minimums, its metrics and BM25 are right on hand-made cases, and the
harness runs end to end on one palace with the static model."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from bench.everyday import (
    CONFIGS,
    DEFAULT_NAME,
    TYPES,
    Bm25,
    Question,
    load,
    markdown,
    measure_palace,
    palace_files,
    question_metrics,
    split_files,
    summarise,
    validate,
)
from mindpalace.config import Settings
from mindpalace.embed import from_settings

FILES = palace_files()


def test_palaces_split_by_file() -> None:
    assert len(FILES) >= 16
    dev, held = split_files(FILES, "dev"), split_files(FILES, "heldout")
    assert [f.stem[:2] for f in dev] == ["01", "02", "03", "04", "05", "06"]
    assert [f.stem[:2] for f in held][:10] == [f"{n:02d}" for n in range(7, 17)]
    assert dev + held == FILES == split_files(FILES, "all")


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_palace_file_is_sound(path: Path) -> None:
    assert validate(load(path)) == []


def test_totals_meet_the_minimums() -> None:
    palaces = [load(f) for f in FILES]
    questions = [q for p in palaces for q in p.questions]
    ids = Counter(q.id for q in questions)
    assert [i for i, n in ids.items() if n > 1] == []
    kinds = Counter(q.type for q in questions)
    assert set(kinds) <= set(TYPES)
    assert len(questions) >= 670
    assert kinds["never_mentioned"] >= 55
    assert kinds["time_window"] >= 70
    assert sum(bool(q.stale) for q in questions) >= 25


def test_validate_names_what_is_wrong() -> None:
    palace = load(FILES[0])
    bad = Question("x1", "decision_latest", "Who?", ("no_such_key",))
    broken = replace(palace, questions=(*palace.questions, bad, palace.questions[0]))
    errors = validate(broken)
    assert any("unknown key no_such_key" in e for e in errors)
    assert any("decision_latest without stale" in e for e in errors)
    assert any(f"question id {palace.questions[0].id} used 2 times" in e for e in errors)


def test_bm25_follows_its_formula() -> None:
    docs = {"a": "river boats river", "b": "boats in the shed", "c": "coffee"}
    bm25 = Bm25(docs)
    # "river": n = 1 of N = 3; doc a has f = 2, |D| = 3, avgdl = (3 + 2 + 1) / 3
    idf = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))
    norm = 1.2 * (1 - 0.75 + 0.75 * 3 / 2)
    assert bm25.score("the river")["a"] == pytest.approx(idf * 2 * 2.2 / (2 + norm))
    assert [k for k, _ in bm25.rank("boats")] == ["b", "a"]  # the shorter document first
    assert bm25.rank("the of") == []  # stopwords only: nothing matches


def test_question_metrics_on_hand_made_rankings() -> None:
    q = Question("q", "decision_latest", "?", ("new",), ("old",))
    ranked = [{"key": k, "relevance": 0.9} for k in ("x", "old", "new")]
    m = question_metrics(q, ranked)
    assert (m["rank"], m["hit1"], m["hit5"], m["rr"]) == (3, 0.0, 1.0, pytest.approx(1 / 3))
    assert m["stale_first"] is True
    assert question_metrics(q, ranked[2:])["stale_first"] is False
    multi = Question("m", "multi_evidence", "?", ("a", "b"))
    both = [{"key": k, "relevance": 0.5} for k in ("a", "x", "b")]
    assert question_metrics(multi, both)["recall_all5"] == 1.0
    assert question_metrics(multi, both[:2])["recall_all5"] == 0.0
    never = Question("n", "never_mentioned", "?", ())
    low = question_metrics(never, [{"key": "x", "relevance": 0.3}])
    assert (low["empty"], low["below_floor"], low["top_relevance"]) == (False, True, 0.3)
    assert question_metrics(never, [])["empty"] is True


def test_one_palace_end_to_end(tmp_path: Path) -> None:
    palace = load(FILES[0])
    embedder = from_settings(Settings(embedder="static"))
    assert embedder is not None
    rows = measure_palace(palace, embedder, CONFIGS, scratch=tmp_path)
    assert [r["id"] for r in rows] == [q.id for q in palace.questions]
    summary = summarise(rows, CONFIGS)
    for config in CONFIGS:
        figures = summary[config.name]["all"]
        for key in ("hit@1", "hit@5", "mrr", "recall_all@5", "abstain_empty"):
            assert 0.0 <= figures[key] <= 1.0, (config.name, key)
        assert 0 <= figures["stale_first"] <= figures["stale_questions"] > 0
    default = summary[DEFAULT_NAME]["all"]
    assert 0.0 <= default["abstain_below_floor"] <= 1.0
    assert default["hit@5"] > 0  # the palace was written and is found
    table = markdown(summary, "test", len(rows))
    assert "| default |" in table and "never_mentioned" in table
