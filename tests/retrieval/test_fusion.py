"""Invariants of the fusion functions (hypothesis)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mindpalace.retrieval.fusion import minmax, rrf, weighted_sum

keys = st.integers(min_value=0, max_value=40)
ranking = st.lists(keys, unique=True, max_size=20)
scored = st.dictionaries(keys, st.floats(min_value=-5, max_value=5), max_size=20)


@given(st.lists(ranking, min_size=1, max_size=4))
def test_rrf_covers_union_sorted_and_bounded(rankings: list[list[int]]) -> None:
    fused = rrf(rankings, k=60)
    assert {k for k, _ in fused} == {k for r in rankings for k in r}
    scores = [s for _, s in fused]
    assert scores == sorted(scores, reverse=True)
    assert all(0 < s <= len(rankings) / 61 for s in scores)


@given(ranking)
def test_rrf_of_one_list_keeps_its_order(r: list[int]) -> None:
    assert [k for k, _ in rrf([r])] == r


@given(ranking, ranking)
def test_rrf_is_symmetric(a: list[int], b: list[int]) -> None:
    assert dict(rrf([a, b])) == pytest.approx(dict(rrf([b, a])))


@given(st.lists(ranking, min_size=2, max_size=3))
def test_rrf_item_first_everywhere_wins(rankings: list[list[int]]) -> None:
    top = 999
    fused = rrf([[top, *r] for r in rankings])
    assert fused[0][0] == top


def test_rrf_weights_and_errors() -> None:
    assert rrf([[1, 2], [2, 1]], weights=[1.0, 0.0])[0][0] == 1
    with pytest.raises(ValueError, match="weights"):
        rrf([[1]], weights=[1.0, 2.0])
    with pytest.raises(ValueError, match="non-negative"):
        rrf([[1]], weights=[-1.0])
    with pytest.raises(ValueError, match="positive"):
        rrf([[1]], k=0)


@given(scored)
def test_minmax_maps_into_unit_interval_and_keeps_order(s: dict[int, float]) -> None:
    m = minmax(s)
    assert set(m) == set(s)
    assert all(0.0 <= v <= 1.0 for v in m.values())
    if s:
        assert max(m.values()) == 1.0
    for a, low in s.items():
        for b, high in s.items():
            if low < high:
                assert m[a] <= m[b]


@given(st.lists(scored, min_size=1, max_size=3))
def test_weighted_sum_union_and_sorted(lists: list[dict[int, float]]) -> None:
    normalised = [minmax(x) for x in lists]
    fused = weighted_sum(normalised, weights=[0.5] * len(lists))
    assert {k for k, _ in fused} == {k for x in lists for k in x}
    values = [v for _, v in fused]
    assert values == sorted(values, reverse=True)
    assert all(0.0 <= v <= 0.5 * len(lists) + 1e-9 for v in values)


def test_weighted_sum_ties_break_by_first_appearance() -> None:
    assert [k for k, _ in weighted_sum([{"a": 1.0, "b": 0.5}, {"b": 0.5, "a": 0.0}])] == ["a", "b"]
    assert [k for k, _ in weighted_sum([{"x": 1.0}, {"y": 1.0}])] == ["x", "y"]
