"""A scope's rows counted by partition (``KeywordIndex.scope_parts``): the
same counts and the same scores, bit for bit, as counting every row."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mindpalace.retrieval.keyword import KeywordIndex

# Word i is drawn with weight 1 / (i + 1): a few words in most rows, most in few.
WORDS = [f"w{i}x" for i in range(60)]
WEIGHTS = [1.0 / (i + 1) for i in range(len(WORDS))]


def _rows(count: int, seed: int) -> list[tuple[str | None, str, str | None, str]]:
    rng = random.Random(seed)

    def text(low: int, high: int) -> str:
        return " ".join(rng.choices(WORDS, WEIGHTS, k=rng.randint(low, high)))

    return [
        (text(1, 3) if rng.random() < 0.3 else None, text(2, 30), None, "[]") for _ in range(count)
    ]


def _index(count: int, seed: int, chunks: int) -> tuple[KeywordIndex, np.ndarray]:
    rows = _rows(count, seed)
    scopes = np.array([random.Random(seed + i).randrange(5) for i in range(count)], np.int64)
    cut = [0, *sorted(random.Random(seed).sample(range(1, count), chunks - 1)), count]
    index = KeywordIndex(rows[: cut[1]], scopes=scopes[: cut[1]])
    for lo, hi in itertools.pairwise(cut[1:]):
        index = index.extended(rows[lo:hi], scopes[lo:hi])
    return index, scopes


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    count=st.integers(2, 400),
    chunks=st.integers(1, 3),
    query=st.lists(st.sampled_from([*WORDS[:12], *WORDS[-6:], "absent"]), min_size=1, max_size=6),
    seen=st.sets(st.integers(0, 4)),
)
def test_counts_by_partition_score_as_counting_the_rows(
    *, seed: int, count: int, chunks: int, query: list[str], seen: set[int]
) -> None:
    index, scopes = _index(count, seed, min(chunks, count))
    visible = np.isin(scopes, sorted(seen))
    full = index.scores(query, visible)
    parts = index.scope_parts(visible)
    assert np.array_equal(index.scores(query, visible, parts=parts), full)  # bit for bit
    only = visible & (np.random.default_rng(seed).random(count) < 0.3)
    got = index.scores(query, visible, parts=parts, only=only)
    assert np.array_equal(got[only], full[only]) and not got[~only].any()


@pytest.mark.parametrize("chunks", [1, 2, 4])
def test_scope_parts_count_as_the_rows_do(chunks: int) -> None:
    index, scopes = _index(300, 11, chunks)
    for seen in ([0], [1, 3], [0, 1, 2, 3, 4], []):
        visible = np.isin(scopes, seen)
        parts = index.scope_parts(visible)
        assert parts.seen == int(visible.sum())
        assert parts.tokens == index.tokens_of(visible)
        assert np.array_equal(np.isin(index.row_parts, parts.allowed), visible)
    split = np.isin(scopes, [1])
    split[np.flatnonzero(split)[0]] = False
    with pytest.raises(ValueError, match="whole scope partitions"):
        index.scope_parts(split)


def test_partition_counts_kept_up_as_rows_arrive() -> None:
    """Counts an index has computed are carried into the indexes that
    extend it (new partitions too), equal to counting afresh."""
    rows = _rows(300, 4)
    scopes = np.array([i % 3 for i in range(200)] + [3 + i % 2 for i in range(100)], np.int64)
    index = KeywordIndex(rows[:200], scopes=scopes[:200])
    index.scope_parts(np.ones(200, dtype=bool))  # computed here, then carried
    index = index.extended(rows[200:250], scopes[200:250]).extended(rows[250:], scopes[250:])
    fresh = KeywordIndex(rows, scopes=scopes)
    for seen in ([0], [2, 3], [4], [0, 1, 2, 3, 4]):
        visible = np.isin(scopes, seen)
        assert index._stats is not None
        carried, counted = index.scope_parts(visible), fresh.scope_parts(visible)
        assert (carried.seen, carried.tokens) == (counted.seen, counted.tokens)
        assert np.array_equal(np.isin(index.row_parts, carried.allowed), visible)
