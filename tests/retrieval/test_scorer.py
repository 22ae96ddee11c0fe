"""The learned scorer's pure functions: scores in 0-1, monotone in features
of positive weight, cold start = the pipeline's order, deterministic and
directed training, the enough-pairs threshold."""

from __future__ import annotations

import random
from datetime import datetime, timezone

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mindpalace.models import Category, Hit, Memory, MemoryType, Source, StoreKind, Visibility
from mindpalace.retrieval import scorer as learned

NOW = datetime(2026, 6, 1, tzinfo=timezone.utc)
unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
value = st.floats(min_value=-5.0, max_value=5.0, allow_nan=False)
features = st.dictionaries(st.sampled_from(learned.FEATURES), value, max_size=8)
weight_maps = st.dictionaries(st.sampled_from(learned.FEATURES), value, max_size=8)


def _memory(n: int, *, source: Source = Source.MANUAL, strength: float = 1.0) -> Memory:
    return Memory(
        id=f"m{n:03d}",
        content=f"memory {n}",
        content_hash=str(n),
        agent_id="ann",
        title=None,
        context=None,
        session=None,
        type=MemoryType.UNKNOWN,
        store=StoreKind.SEMANTIC,
        category=Category.FACT,
        tags=(),
        source=source,
        visibility=Visibility.ISOLATED,
        group=None,
        channel=None,
        created_at=datetime(2026, 1, 1, tzinfo=timezone.utc),
        updated_at=datetime(2026, 1, 1, tzinfo=timezone.utc),
        last_accessed_at=None,
        valid_from=None,
        valid_to=None,
        superseded_by=None,
        strength=strength,
        confidence=1.0,
        access_count=0,
        archived=False,
        constraint=False,
        metadata={},
    )


def _hit(n: int, final: float, **stages: float) -> Hit:
    return Hit(memory=_memory(n), score=min(1.0, final), stage_scores={"final": final, **stages})


@st.composite
def hit_lists(draw: st.DrawFn) -> list[Hit]:
    finals = draw(st.lists(st.floats(min_value=0.0, max_value=2.0), min_size=0, max_size=25))
    # The pipeline hands hits over best first (ties in any order).
    finals.sort(reverse=True)
    return [
        _hit(i, f, keyword=draw(unit), dense=draw(unit), session_support=draw(unit))
        for i, f in enumerate(finals)
    ]


@settings(max_examples=200)
@given(weight_maps, st.floats(min_value=-10, max_value=10), st.lists(features, max_size=20))
def test_scores_are_in_0_1(
    weights: dict[str, float], bias: float, rows: list[dict[str, float]]
) -> None:
    out = learned.score(learned.ScorerWeights(weights, bias), rows)
    assert len(out) == len(rows)
    assert all(0.0 <= v <= 1.0 for v in out)


@settings(max_examples=200)
@given(weight_maps, features, st.sampled_from(learned.FEATURES), st.floats(0.01, 3.0))
def test_monotone_in_a_feature_of_positive_weight(
    weights: dict[str, float], row: dict[str, float], name: str, delta: float
) -> None:
    weights = {**weights, name: abs(weights.get(name, 0.0)) + 0.5}
    model = learned.ScorerWeights(weights, -1.0)
    higher = {**row, name: row.get(name, 0.0) + delta}
    before, after = learned.score(model, [row, higher])
    assert after >= before
    lower_weight = learned.ScorerWeights({**weights, name: -weights[name]}, -1.0)
    before, after = learned.score(lower_weight, [row, higher])
    assert after <= before


@settings(max_examples=200)
@given(hit_lists(), st.integers(min_value=1, max_value=30))
def test_cold_start_keeps_the_pipelines_order(hits: list[Hit], limit: int) -> None:
    out = learned.rerank(hits, learned.COLD_START, now=NOW, limit=limit)
    assert [h.memory.id for h in out] == [h.memory.id for h in hits[:limit]]
    assert all(0.0 <= h.score <= 1.0 for h in out)
    assert [h.ranks["final"] for h in out] == list(range(1, len(out) + 1))


def test_rerank_follows_the_weights() -> None:
    hits = [_hit(0, 0.9, keyword=1.0), _hit(1, 0.8, keyword=0.0, dense=0.9)]
    dense_first = learned.ScorerWeights({"final": 1.0, "dense": 5.0}, 0.0)
    out = learned.rerank(hits, dense_first, now=NOW, limit=2)
    assert [h.memory.id for h in out] == ["m001", "m000"]
    assert out[0].ranks["pipeline"] == 2 and out[0].stage_scores["scorer"] == out[0].score
    # Earlier judgments are features too.
    liked = learned.ScorerWeights({"final": 1.0, "useful_before": 5.0}, 0.0)
    out = learned.rerank(hits, liked, now=NOW, limit=1, judgments={"m001": (2, 0)})
    assert [h.memory.id for h in out] == ["m001"]


def test_hit_features_read_the_stages_and_the_memory() -> None:
    hit = Hit(
        memory=_memory(1, source=Source.SKILL, strength=0.5),
        score=0.4,
        stage_scores={"final": 0.7, "keyword": 0.3, "dense": -0.2, "graph": 0.1},
    )
    named = dict(zip(learned.HIT_FEATURES, learned.hit_features(hit, NOW), strict=True))
    assert named["final"] == 0.7 and named["keyword"] == 0.3 and named["graph"] == 0.1
    assert named["dense"] == 0.0  # negative cosines carry nothing
    assert named["strength"] == 0.5 and named["source:skill"] == 1.0
    assert named["source:manual"] == 0.0 and named["category:fact"] == 1.0
    assert 0.0 < named["recency"] < 1.0


# -- training ------------------------------------------------------------------------------------


def _examples(n_recalls: int, seed: int, *, signal: str = "dense") -> list[learned.Example]:
    """Recalls where the useful hit is the one with the highest ``signal``,
    whatever its ``final``."""
    rng = random.Random(seed)
    out = []
    for r in range(n_recalls):
        for k in range(5):
            useful = k == 0
            row = {
                "final": rng.uniform(0.2, 1.0),
                signal: rng.uniform(0.6, 1.0) if useful else rng.uniform(0.0, 0.5),
                "keyword": rng.uniform(0.0, 1.0),
            }
            out.append(learned.Example(f"r{r}", row, useful, memory_id=f"m{r}-{k}"))
    return out


def test_training_learns_the_signal_that_separates_useful_hits() -> None:
    weights = learned.train(_examples(40, seed=1))
    assert weights is not None and weights.trained
    assert weights.weights["dense"] > 1.0
    assert abs(weights.weights.get("keyword", 0.0)) < weights.weights["dense"]
    assert weights.bias == learned.COLD_START.bias
    assert weights.judged == 200 and weights.comparisons == 40 * 4
    # Held-out recalls of the same kind now rank the useful hit first.
    test = _examples(30, seed=2)
    wins = 0
    for r in range(30):
        group = [e for e in test if e.group == f"r{r}"]
        scores = learned.score(weights, [e.features for e in group])
        wins += group[int(np.argmax(scores))].useful
    assert wins >= 27


@settings(max_examples=25, deadline=None)
@given(st.integers(min_value=0, max_value=10_000))
def test_training_is_deterministic(seed: int) -> None:
    examples = _examples(15, seed=seed)
    first = learned.train(examples)
    again = learned.train(list(examples))
    assert first is not None and again is not None
    assert first.to_dict() == again.to_dict()
    shuffled = list(examples)
    random.Random(seed).shuffle(shuffled)
    other = learned.train(shuffled)
    assert other is not None
    for name in learned.FEATURES:
        assert other.weights.get(name, 0.0) == pytest.approx(first.weights.get(name, 0.0), abs=1e-9)


def test_more_regularisation_stays_closer_to_the_cold_start() -> None:
    examples = _examples(20, seed=3)
    cold = learned.COLD_START.vector()
    distances = []
    for l2 in (0.1, 1.0, 10.0, 1000.0):
        weights = learned.train(examples, l2=l2)
        assert weights is not None
        distances.append(float(np.linalg.norm(weights.vector() - cold)))
    assert distances == sorted(distances, reverse=True)
    assert distances[-1] < 0.05


def test_not_enough_judgments_trains_nothing() -> None:
    few = _examples(learned.MIN_JUDGED // 5 - 1, seed=4)
    assert len(few) < learned.MIN_JUDGED
    assert not learned.enough(few) and learned.train(few) is None
    assert learned.train(few, force=True) is not None
    # Enough hits, but every one useful: nothing to compare.
    all_useful = [
        learned.Example(f"r{i}", {"final": 0.5}, True) for i in range(learned.MIN_JUDGED * 2)
    ]
    assert learned.train(all_useful) is None and learned.train(all_useful, force=True) is None


def test_weights_round_trip_and_ignore_unknown_features() -> None:
    weights = learned.train(_examples(20, seed=5), now=NOW)
    assert weights is not None
    data = weights.to_dict()
    assert learned.ScorerWeights.from_dict(data).to_dict() == data
    data["weights"]["from_a_future_version"] = 3.0
    assert "from_a_future_version" not in learned.ScorerWeights.from_dict(data).weights
    assert not learned.COLD_START.trained
