"""The re-ranker: its features, its trees, and its place in recall."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mindpalace import Palace
from mindpalace.conversations import Message
from mindpalace.models import Hit, HitList
from mindpalace.retrieval import reranker
from mindpalace.retrieval.reranker import FEATURES, Forest

from .memories import memory

COLUMN = {name: i for i, name in enumerate(FEATURES)}


def _hit(key: str, session: str | None, fused: float, **more: Any) -> Hit:
    scores = {"final": fused, "fused": fused, "dense": fused / 2, "session_support": 0.0}
    content, speaker = more.pop("content", ""), more.pop("speaker", "")
    said = {"speaker": speaker} if speaker else None
    return Hit(
        memory=memory(key, session, content=content, metadata=said),
        score=more.pop("score", fused),
        ranks={"final": 1, "dense": 1},
        stage_scores={**scores, **more},
    )


# A forest of two trees: the first splits on "assistant" (0: +1, 1: -1),
# the second on "length" at 0.5 (at most: 0, above: +0.25).
FOREST: dict[str, Any] = {
    "features": list(FEATURES),
    "window": 3,
    "trees": [
        {
            "feature": [COLUMN["assistant"], -1, -1],
            "threshold": [0.5, 0, 0],
            "left": [1, 0, 0],
            "right": [2, 0, 0],
            "value": [0, 1.0, -1.0],
        },
        {
            "feature": [COLUMN["length"], -1, -1],
            "threshold": [0.5, 0, 0],
            "left": [1, 0, 0],
            "right": [2, 0, 0],
            "value": [0, 0.0, 0.25],
        },
    ],
}


def test_features_see_the_whole_window() -> None:
    hits = [
        _hit("a1", "A", 1.0, keyword=1.0),
        _hit("a2", "A", 0.5),
        _hit("b1", "B", 0.8, speaker="assistant", time=1.3),
        _hit("n", None, 0.2, graph=0.4),
    ]
    x = reranker.features(hits)
    assert x.shape == (4, len(FEATURES))
    column = {name: x[:, i].tolist() for i, name in enumerate(FEATURES)}
    assert column["place"] == pytest.approx([1, 1 / math.sqrt(2), 1 / math.sqrt(3), 0.5])
    assert column["fused_relative"] == pytest.approx([1.0, 0.5, 0.8, 0.2])
    assert column["keyword_matched"] == [1.0, 0.0, 0.0, 0.0]
    assert column["dense_gap"] == pytest.approx([0.0, -0.25, -0.1, -0.4])
    # a2 has a1 of its session above it; sessions count within the window.
    assert column["in_session"] == [1.0, 0.5, 1.0, 1.0]
    assert column["session_count"] == pytest.approx([math.log(2), math.log(2), 0.0, 0.0])
    assert column["session_best"] == pytest.approx([1.0, 1.0, 0.8, 0.2])
    assert column["session_first"] == [1.0, 0.0, 1.0, 1.0]
    assert column["assistant"] == [0.0, 0.0, 1.0, 0.0]
    assert column["time"] == pytest.approx([0.0, 0.0, math.log(1.3), 0.0])
    assert column["graph"] == [0.0, 0.0, 0.0, 0.4]
    assert column["dense_place"] == pytest.approx([1 / 11] * 4)
    assert column["keyword_place"] == [0.0] * 4
    assert reranker.features([]).shape == (0, len(FEATURES))


def test_features_know_who_the_query_names() -> None:
    hits = [
        _hit("c1", "A", 1.0, speaker="Caroline"),
        _hit("m1", "A", 0.9, speaker="Melanie"),
        _hit("u1", "B", 0.8, speaker="user"),
        _hit("x", "B", 0.7, speaker="Mary Ann Evans"),
        _hit("n", None, 0.6),
    ]
    column = {
        name: reranker.features(hits, query)[:, COLUMN[name]].tolist()
        for name, query in (
            ("speaker_named", "What did Caroline tell the user about evans?"),
            ("other_named", "What did Caroline tell the user about evans?"),
        )
    }
    # a role is nobody's name; any word of a name counts, in any case
    assert column["speaker_named"] == [1.0, 0.0, 0.0, 1.0, 0.0]
    assert column["other_named"] == [1.0, 1.0, 1.0, 1.0, 1.0]
    only = reranker.features(hits, "When did caroline go?")
    assert only[:, COLUMN["speaker_named"]].tolist() == [1.0, 0.0, 0.0, 0.0, 0.0]
    assert only[:, COLUMN["other_named"]].tolist() == [0.0, 1.0, 1.0, 1.0, 1.0]
    silent = reranker.features(hits)  # no query: nobody named
    assert silent[:, COLUMN["speaker_named"]].tolist() == [0.0] * 5
    assert silent[:, COLUMN["other_named"]].tolist() == [0.0] * 5


def test_forest_follows_each_tree_to_its_leaf() -> None:
    forest = Forest.from_dict(FOREST)
    x = np.zeros((4, len(FEATURES)))
    x[:, COLUMN["assistant"]] = [0, 1, 0, 1]
    x[:, COLUMN["length"]] = [0.4, 0.4, 0.6, 0.5]
    assert forest.predict(x).tolist() == pytest.approx([1.0, -1.0, 1.25, -1.0])
    assert forest.depth == 1
    assert forest.predict(np.zeros((0, len(FEATURES)))).shape == (0,)


def test_forest_rejects_other_features() -> None:
    with pytest.raises(ValueError, match=r"refit it with python -m bench\.rerank_fit"):
        Forest.from_dict({**FOREST, "features": ["place", "final"]})
    bad = json.loads(json.dumps(FOREST))
    bad["trees"][0]["feature"][0] = len(FEATURES)
    with pytest.raises(ValueError, match="feature it does not have"):
        Forest.from_dict(bad)


def test_reranked_orders_the_window_and_keeps_the_scores_in_order() -> None:
    forest = Forest.from_dict(FOREST)
    long_text = "x" * 200  # log1p(200) / 8 > 0.5: the second tree adds 0.25
    hits = HitList(
        [
            _hit("agent", "A", 1.0, speaker="assistant", score=0.9),
            _hit("user", "A", 0.9, score=0.7),
            _hit("long", "B", 0.8, content=long_text, score=0.6),
            _hit("past", "C", 0.1, score=0.5),  # beyond the window of 3
        ],
        mode="hybrid",
        notice="n",
    )
    hits.timings = {"rank": 1.0}
    out = reranker.reranked(hits, forest)
    assert [h.memory.id for h in out] == ["long", "user", "agent", "past"]
    assert [h.score for h in out] == [0.9, 0.7, 0.6, 0.5]  # the same scores, in order
    assert [h.ranks["pipeline"] for h in out[:3]] == [3, 2, 1]
    assert [h.ranks["final"] for h in out[:3]] == [1, 2, 3]
    assert out[0].stage_scores["rerank"] == pytest.approx(1.25)
    # The ranking values are handed out in order too; each keeps its own.
    assert [h.stage_scores["final"] for h in out] == [1.0, 0.9, 0.8, 0.1]
    assert [h.stage_scores["pipeline"] for h in out[:3]] == [0.8, 0.9, 1.0]
    assert out[3] is hits[3]
    assert (out.mode, out.notice, out.timings) == ("hybrid", "n", {"rank": 1.0})
    assert reranker.reranked(HitList(hits[:1]), forest) == hits[:1]


def test_the_shipped_forest_loads_and_scores_every_row() -> None:
    forest = reranker.default_forest()
    assert forest.window >= 10 and forest.roots.size > 0
    rng = np.random.default_rng(0)
    values = forest.predict(rng.normal(size=(50, len(FEATURES))))
    assert values.shape == (50,) and np.isfinite(values).all()


def test_the_trees_equal_the_library_that_fits_them(tmp_path: Path) -> None:
    lightgbm = pytest.importorskip("lightgbm", reason="lightgbm fits the re-ranker")
    from bench import rerank_fit

    rng = np.random.default_rng(1)
    x = rng.normal(size=(600, len(FEATURES)))
    y = (x[:, 0] + 0.5 * x[:, 5] - x[:, 12] + rng.normal(scale=0.5, size=600) > 0.8).astype(float)
    data = lightgbm.Dataset(x, y, group=[30] * 20)
    booster = lightgbm.train({**rerank_fit.PARAMS, "min_data_in_leaf": 5}, data, num_boost_round=20)
    forest = Forest.from_dict(rerank_fit.to_forest(booster))
    probe = rng.normal(size=(200, len(FEATURES)))
    assert forest.predict(probe) == pytest.approx(booster.predict(probe), abs=1e-9)


def test_recall_reorders_its_window_and_can_be_turned_off(palace: Palace) -> None:
    for day in range(6):
        palace.add_messages(
            [
                Message(f"I planted tomatoes and basil on day {day}.", role="user"),
                Message(f"Tomatoes like sun; water basil (day {day}). " * 8, role="assistant"),
            ],
            session=f"s{day}",
        )
    on = palace.recall("what did I plant in the garden?", limit=12)
    assert "rerank" in on.timings
    # The window is ranked deeper than a small limit, and then cut to it.
    few = palace.recall("what did I plant in the garden?", limit=3)
    assert [h.memory.id for h in few] == [h.memory.id for h in on[:3]]
    assert all("rerank" in h.stage_scores and "pipeline" in h.ranks for h in on)
    assert [h.score for h in on] == sorted((h.score for h in on), reverse=True)
    palace.recall_options = replace(palace.recall_options, rerank=False)
    off = palace.recall("what did I plant in the garden?", limit=12)
    assert "rerank" not in off.timings
    assert not any("rerank" in h.stage_scores for h in off)
    assert {h.memory.id for h in on} == {h.memory.id for h in off}
    assert [h.memory.id for h in on] == [off[h.ranks["pipeline"] - 1].memory.id for h in on]


def test_the_shipped_forest_never_lowers_a_memory_for_more_evidence() -> None:
    """More evidence from a stage (a higher fused, keyword, cosine, support,
    graph or time score, a better place) never lowers the forest's value."""
    from bench.rerank_fit import RISING

    forest = reranker.default_forest()
    rng = np.random.default_rng(2)
    rows = rng.normal(size=(300, len(FEATURES)))
    base = forest.predict(rows)
    for name in RISING:
        more = rows.copy()
        more[:, COLUMN[name]] += rng.uniform(0.01, 2.0, size=300)
        assert (forest.predict(more) >= base - 1e-9).all(), name
