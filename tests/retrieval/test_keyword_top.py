"""The best keyword matches found without scoring every posting of a common
word are exactly those of scoring every row: the same rows, in the same
order, with the same floats; and the common words are read only at the
rows a rarer word matched."""

from __future__ import annotations

import random

import numpy as np
import pytest

from mindpalace.retrieval import keyword_top
from mindpalace.retrieval.keyword import KeywordIndex, Occurrences, top_rows
from mindpalace.retrieval.keyword_top import best_rows

# A few words most rows hold, some many do, and many that few do.
COMMON = "project team note".split()
MIDDLE = "deploy billing review queue audit".split()
RARE = [f"w{i}x" for i in range(300)]


def _corpus(count: int, seed: int) -> list[tuple[str | None, str, str | None, str]]:
    rng = random.Random(seed)

    def words(low: int, high: int) -> str:
        out = []
        for _ in range(rng.randint(low, high)):
            roll = rng.random()
            pool = COMMON if roll < 0.35 else MIDDLE if roll < 0.6 else RARE
            out.append(rng.choice(pool))
        return " ".join(out)

    return [
        (
            words(1, 3) if rng.random() < 0.3 else None,
            words(2, 30),
            words(2, 8) if rng.random() < 0.4 else None,
            '["' + rng.choice(MIDDLE) + '"]' if rng.random() < 0.3 else "[]",
        )
        for _ in range(count)
    ]


def _index(count: int, seed: int) -> tuple[KeywordIndex, np.ndarray]:
    rows = _corpus(count, seed)
    scopes = np.array([(i * 7 + i // 13) % 5 for i in range(count)], dtype=np.int64)
    first = count * 2 // 3
    index = KeywordIndex(rows[:first], scopes=scopes[:first])
    index = index.extended(rows[first:], scopes[first:])  # two segments
    return index, scopes


def _best(
    index: KeywordIndex,
    words: list[str],
    visible: np.ndarray,
    *,
    limit: int = 5,
    prune_from: int = 0,
) -> list[int]:
    """``best_rows`` over every visible row, ids by row, all written at once."""
    ids = np.array([f"m{i:05d}" for i in range(len(index))], dtype=object)
    rows, _ = best_rows(
        index,
        words,
        visible,
        parts=None,
        shown=visible,
        created_at=np.zeros(len(index)),
        ids=ids,
        limit=limit,
        prune_from=prune_from,
    )
    return rows


QUERIES = [
    ["project", "w3x"],
    ["project", "team", "note", "deploy", "w10x", "w11x"],
    ["deploy", "deploying", "deployed", "w5x"],  # three forms of one term
    ["w7x", "project"],
    ["team", "note"],  # common words alone
    ["billing", "review", "w1x", "w2x", "w4x"],
    ["absent", "project"],
]


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("limit", [1, 7, 50, 10_000])
def test_the_best_rows_and_their_floats_equal_scoring_every_row(seed: int, limit: int) -> None:
    index, scopes = _index(1_500, seed)
    ids = np.array([f"m{i:05d}" for i in range(len(index))], dtype=object)
    created = np.array([float(i // 3) for i in range(len(index))])  # ties in time too
    rng = np.random.default_rng(seed)
    for visible in (np.ones(len(index), dtype=bool), np.isin(scopes, [1, 3]), scopes == 4):
        parts = index.scope_parts(visible)
        shown = visible & (rng.random(len(index)) < 0.8)  # a filter within the scope
        for words in QUERIES:
            scored = index.scores(words, visible, parts=parts)
            want = top_rows(scored, shown, created_at=created, ids=ids, limit=limit)
            got, values = best_rows(
                index,
                words,
                visible,
                parts=parts,
                shown=shown,
                created_at=created,
                ids=ids,
                limit=limit,
                prune_from=0,
            )
            assert got == want, words
            assert values == {row: float(scored[row]) for row in want}  # bit for bit


def test_ties_at_the_edge_are_ordered_as_every_row_scored() -> None:
    # Rows of one identical text tie; the rare word lifts three of them.
    rows = [(None, "project team", None, "[]")] * 400
    rows += [(None, "project team w1x", None, "[]")] * 3
    index = KeywordIndex(rows)
    visible = np.ones(len(rows), dtype=bool)
    ids = np.array([f"m{i:04d}" for i in range(len(rows))], dtype=object)
    created = np.array([float(i % 17) for i in range(len(rows))])
    for limit in (2, 3, 4, 10, 60):
        scored = index.scores(["project", "team", "w1x"], visible)
        want = top_rows(scored, visible, created_at=created, ids=ids, limit=limit)
        got, _ = best_rows(
            index,
            ["project", "team", "w1x"],
            visible,
            parts=None,
            shown=visible,
            created_at=created,
            ids=ids,
            limit=limit,
            prune_from=0,
        )
        assert got == want


def test_a_common_word_is_read_only_at_the_candidates(monkeypatch: pytest.MonkeyPatch) -> None:
    index, _ = _index(3_000, 5)
    visible = np.ones(len(index), dtype=bool)
    weighed: dict[str, int] = {}
    real = Occurrences.weigh

    def counted(self: Occurrences, term, rows, tf):  # type: ignore[no-untyped-def]
        weighed[term.phrase] = weighed.get(term.phrase, 0) + int(rows.shape[0])
        return real(self, term, rows, tf)

    monkeypatch.setattr(Occurrences, "weigh", counted)
    common = int(index.postings("project")[0].shape[0])
    _best(index, ["project", "w3x", "w4x"], visible)
    assert common > 1_000
    assert weighed["project"] < common / 10  # read at the rare words' rows alone
    # Below the threshold's postings, every row is scored as before.
    weighed.clear()
    _best(index, ["project", "w3x", "w4x"], visible, prune_from=10**9)
    assert weighed["project"] == common


def test_the_scratch_is_left_clear_even_when_a_search_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    index, _ = _index(1_000, 9)
    visible = np.ones(len(index), dtype=bool)
    words = ["project", "w3x", "deploy"]
    want = _best(index, words, visible)
    sums, taken = keyword_top._SCRATCH.sized(len(index))
    assert not sums.any() and not taken.any()
    real = np.partition
    calls = {"n": 0}

    def failing(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 2:
            raise MemoryError("out of memory")
        return real(*args, **kwargs)

    monkeypatch.setattr(keyword_top.np, "partition", failing)
    with pytest.raises(MemoryError):
        _best(index, words, visible)
    monkeypatch.undo()
    assert calls["n"] == 2
    assert not sums.any() and not taken.any()
    assert _best(index, words, visible) == want  # and the next search is right
