"""Skill activation: the pure stages (fusion, propagation, gating), the
graph weights, and ranking quality on the sample library with the bundled
model (the bar: hit@5 >= 0.90 on the labelled tasks)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.skills import LIBRARY, load_queries, mean, metrics
from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.errors import ValidationError
from mindpalace.skills import ActivateOptions, SkillDefinition
from mindpalace.skills.activate import Activation, Evidence, fuse, gate, propagate
from mindpalace.skills.graph import coactivation_counts, combine, declared_correlations

OPTIONS = ActivateOptions()

# -- pure stages -------------------------------------------------------------------------


def test_fuse_is_rrf_scaled_to_one() -> None:
    fused = fuse(["a", "b", "c"], [("a", 0.9), ("c", 0.5), ("d", 0.4)], options=OPTIONS)
    assert [e.key for e in fused] == ["a", "c", "b", "d"]
    assert fused[0].fused == pytest.approx(1.0)  # first in both lists
    k = OPTIONS.rrf_k
    best = 2 / (k + 1)
    assert fused[1].fused == pytest.approx((1 / (k + 3) + 1 / (k + 2)) / best)
    assert (fused[1].sparse_rank, fused[1].dense_rank, fused[1].cosine) == (3, 2, 0.5)
    assert fused[2].cosine is None and fused[3].sparse_rank is None


def test_propagation_is_one_hop_and_degree_normalised() -> None:
    seeds = [Evidence("a", 1.0, 1, 1, 0.8), Evidence("b", 0.5, 2, 2, 0.5)]
    edges = {"a": {"x": 1.0, "y": 0.5, "z": 0.5, "a": 1.0}, "b": {"x": 1.0}, "x": {"far": 1.0}}
    out = {a.key: a for a in propagate(seeds, edges, options=OPTIONS)}
    spread = OPTIONS.spread
    expected_x = 1.0 * 1.0 * spread / math.sqrt(3) + 0.5 * 1.0 * spread
    assert out["x"].propagated == pytest.approx(expected_x)
    assert out["y"].propagated == pytest.approx(0.5 * spread / math.sqrt(3))
    assert "far" not in out  # one hop only
    assert out["a"].propagated == 0.0  # no self-loop
    assert dict(out["x"].links) == {"a": 1.0, "b": 1.0}
    assert {k for k, _ in out["a"].links} == {"x", "y", "z"}
    assert out["x"].score == pytest.approx(expected_x)  # no direct evidence: gain only
    off = propagate(seeds, edges, options=replace(OPTIONS, spread=0.0))
    assert [a.key for a in off] == ["a", "b"]


@given(
    fused=st.lists(st.floats(0, 1), min_size=1, max_size=8),
    weights=st.lists(st.floats(0, 1), min_size=1, max_size=8),
)
def test_scores_stay_in_unit_range(fused: list[float], weights: list[float]) -> None:
    candidates = [
        Evidence(f"c{i}", f, 1, 1, 0.5) for i, f in enumerate(sorted(fused, reverse=True))
    ]
    edges = {c.key: {f"n{j}": w for j, w in enumerate(weights)} for c in candidates}
    for activation in propagate(candidates, edges, options=OPTIONS):
        assert 0.0 <= activation.score <= 1.0
        assert activation.score >= activation.evidence.fused - 1e-12


def test_gate() -> None:
    def act(
        key: str, fused: float, *, rank: int | None, cosine: float | None, gain: float = 0.0
    ) -> Activation:
        evidence = Evidence(key, fused, rank, 1 if cosine is not None else None, cosine)
        return Activation(evidence, fused + gain, gain)

    weak = [act("a", 0.9, rank=1, cosine=0.05), act("b", 0.5, rank=None, cosine=0.2)]
    assert gate(weak, options=OPTIONS) == []  # a keyword match the embedding contradicts
    text_only = [act("a", 0.9, rank=1, cosine=None)]
    assert [a.key for a in gate(text_only, options=OPTIONS)] == ["a"]
    mixed = [
        act("a", 0.9, rank=1, cosine=0.5),
        act("b", 0.5, rank=None, cosine=0.1),  # no evidence of its own
        act("c", 0.4, rank=None, cosine=0.1, gain=0.2),  # reached through the graph
        act("d", 0.1, rank=2, cosine=0.3),  # below the relative floor
    ]
    assert [a.key for a in gate(mixed, options=OPTIONS)] == ["a", "c"]


def test_declared_correlations_and_coactivation() -> None:
    skills = [
        SkillDefinition("a", "A", tags=("x", "y"), tools=("t",), links=(("b", None), ("zz", 0.5))),
        SkillDefinition("b", "B", tags=("q",)),
        SkillDefinition("c", "C", tags=("x", "y"), tools=("T",)),
        SkillDefinition("d", "D", tags=("x", "p", "q", "r", "s", "u")),
    ]
    weights = declared_correlations(skills)
    assert weights[("a", "b")] == weights[("b", "a")] == 0.8  # explicit default, both ways
    assert weights[("a", "c")] == pytest.approx(0.6)  # same tags and tool (case folded)
    assert ("a", "d") not in weights  # 1 shared of 8: below the floor
    assert not any("zz" in pair for pair in weights)  # unknown target
    counts = coactivation_counts([["a", "b", "c", "d"], ["b", "a"]], top=3)
    assert counts[("a", "b")] == counts[("b", "a")] == 2
    assert counts[("a", "c")] == 1 and ("a", "d") not in counts
    assert combine(0.5, 0.5) == pytest.approx(0.75) and combine(0.3, 0.0) == pytest.approx(0.3)


# -- on the sample library, with the bundled model -----------------------------------------


@pytest.fixture(scope="module")
def library_palace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Palace]:
    path = tmp_path_factory.mktemp("skills") / "palace.db"
    palace = Palace(path, settings=Settings(embedder="local"))
    palace.skills.import_path(LIBRARY)
    yield palace
    palace.close()


@pytest.mark.parametrize(
    ("task", "expected"),
    [
        (
            "schedule a post for later with a watermarked video",
            {"schedule-post", "watermark-media"},
        ),
        ("draft fan reply messages for a creator's inbox", {"fan-replies"}),
        ("rebuild taxonomy graph after bulk tag ingest", {"taxonomy-rebuild"}),
        ("roll out a schema change to postgres with zero downtime", {"database-migration"}),
    ],
)
def test_activation_finds_the_skill(library_palace: Palace, task: str, expected: set[str]) -> None:
    hits = library_palace.skills.activate(task, limit=5)
    assert expected & {h.name for h in hits[:5]}
    assert hits == sorted(hits, key=lambda h: -h.score)
    for hit in hits:
        assert 0 < hit.score <= 1 and hit.memory_id.startswith("mem_")
        assert set(hit.to_dict()) >= {"name", "score", "tags", "associative_context"}


def test_propagation_brings_associative_context(library_palace: Palace) -> None:
    hits = library_palace.skills.activate("watermark a video for a post", limit=10)
    top = hits[0]
    assert top.associative_context
    linked = {c.name for c in top.associative_context}
    assert linked & {"schedule-post", "media-validation", "watermark-media"}


def test_off_topic_tasks_activate_nothing(library_palace: Palace) -> None:
    for task in ("bake sourdough bread", "how tall is Mount Everest", ""):
        assert library_palace.skills.activate(task) == []


def test_limits(library_palace: Palace) -> None:
    assert len(library_palace.skills.activate("debug a failing build", limit=2)) <= 2
    with pytest.raises(ValidationError, match="limit"):
        library_palace.skills.activate("x", limit=0)
    with pytest.raises(ValidationError, match="query"):
        library_palace.skills.activate(42)  # type: ignore[arg-type]


def test_labelled_queries_meet_the_bar(library_palace: Palace) -> None:
    queries = [q for q in load_queries() if q.expected]
    assert len(queries) >= 60
    rows = [
        metrics([h.name for h in library_palace.skills.activate(q.text, limit=10)], q.expected)
        for q in queries
    ]
    result = mean(rows)
    assert result["hit@5"] >= 0.90, result
    assert result["mrr"] >= 0.75, result


def test_bench_metrics_by_hand() -> None:
    assert metrics(["a", "b", "c"], frozenset({"c"})) == {
        "hit@1": 0.0,
        "hit@5": 1.0,
        "mrr": pytest.approx(1 / 3),
    }
    assert metrics([], frozenset({"c"}))["mrr"] == 0.0
    assert Path(LIBRARY).is_dir()
