"""Session diversity in the final ranking (``ranking.diversified``)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mindpalace.retrieval.ranking import diversified

from .memories import memory as _memory


def test_a_second_session_climbs_over_the_first_ones_neighbours() -> None:
    memories = {
        "a1": _memory("a1", "A"),
        "a2": _memory("a2", "A"),
        "a3": _memory("a3", "A"),
        "b1": _memory("b1", "B"),
        "n": _memory("n", None),
    }
    order = [
        (1.0, 1.0, "a1", 0),
        (0.9, 0.9, "a2", 1),
        (0.85, 0.85, "a3", 2),
        (0.8, 0.8, "b1", 3),
        (0.7, 0.7, "n", None),
    ]
    out = diversified(order, memories, 0.8)
    assert [key for _, _, key, _ in out] == ["a1", "b1", "a2", "n", "a3"]
    # values are discounted by 0.8 per memory of the session above
    assert dict((key, v) for v, _, key, _ in out) == pytest.approx(
        {"a1": 1.0, "b1": 0.8, "a2": 0.72, "n": 0.7, "a3": 0.85 * 0.64}
    )
    # relevance and rows travel with their memory
    assert {key: (relevance, row) for _, relevance, key, row in out} == {
        key: (relevance, row) for _, relevance, key, row in order
    }
    # a factor of 1 keeps the order
    assert [k for _, _, k, _ in diversified(order, memories, 1.0)] == [k for _, _, k, _ in order]


@given(
    st.lists(st.tuples(st.floats(0.0, 1.0), st.sampled_from(["A", "B", "C", None])), max_size=30),
    st.floats(0.1, 1.0),
)
def test_diversity_keeps_every_memory_and_orders_by_discounted_value(
    items: list[tuple[float, str | None]], factor: float
) -> None:
    memories = {f"m{i}": _memory(f"m{i}", s) for i, (_, s) in enumerate(items)}
    order = sorted(
        ((v, v, f"m{i}", i) for i, (v, _) in enumerate(items)), key=lambda x: (-x[0], x[2])
    )
    out = diversified(order, memories, factor)
    assert sorted(k for _, _, k, _ in out) == sorted(memories)
    values = [v for v, _, _, _ in out]
    assert values == sorted(values, reverse=True)
    for value, relevance, key, _ in out:
        above = [k for _, _, k, _ in out[: [x[2] for x in out].index(key)]]
        session = memories[key].session
        same = sum(1 for k in above if session is not None and memories[k].session == session)
        assert value == pytest.approx(relevance * factor**same)
