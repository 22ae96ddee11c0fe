"""Appending rows to the warm index (``DenseIndex.extended``) does the work
of the new rows: a new version writes past the end of the one it extends
and shares its columns' memory (``appending.py``), while the older version
answers exactly as it did. Checked by what is shared and what is answered,
not by timing: each new version's arrays share memory with the version
before (no column of the old rows is copied), every version answers as an
index built from scratch over its rows does, and two versions made from the
same one do not disturb each other."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from mindpalace.embed import HashingEmbedder
from mindpalace.models import RecallFilters, Scope
from mindpalace.retrieval.dense import DenseIndex
from mindpalace.retrieval.mentions import MentionIndex
from mindpalace.retrieval.stages import session_support, visible_neighbours
from mindpalace.store.vector_rows import CODED_COLUMNS as CODED
from mindpalace.store.vector_rows import PLAIN_COLUMNS as PLAIN
from mindpalace.store.vector_rows import FlagChange, VectorTable

ROWS = 20_000
WORDS = (
    "deploy rollback audit invoices kafka postgres migration freeze review queue latency "
    "dashboards incident postmortem budget hiring roadmap garden weather vault north door"
).split()
ENTITIES = ["kafka", "postgres", "alice", "bob", "vault", "garden"]
QUERIES = [["kafka", "latenc"], ["budget", "hire", "roadmap"], ["vault", "door"], ["zebra"]]
SCOPES = [Scope(agent_id="alice"), Scope(agent_id="bob"), Scope.management()]
EMBEDDER = HashingEmbedder(dimensions=64)


def _rows(start: int, count: int, seed: int) -> tuple[list[tuple[Any, ...]], list[tuple[str, int]]]:
    """``count`` rows from seq ``start + 1`` (``VectorTable.from_rows``'s
    columns, texts included) and their mentions (entity key, seq)."""
    rng = random.Random(seed)
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))) for _ in range(count)]
    vectors = EMBEDDER.embed(texts)
    rows: list[tuple[Any, ...]] = []
    mentions: list[tuple[str, int]] = []
    for offset, text in enumerate(texts):
        seq = start + offset + 1
        session = "" if rng.random() < 0.2 else f"s{rng.randrange(max(1, (start + count) // 10))}"
        rows.append(
            (
                f"m{seq:06d}",
                rng.choice(["alice", "bob", f"agent{seq % 50}"]),
                rng.choice(["isolated", "shared"]),
                "",
                "",
                rng.random() < 0.05,
                rng.random() < 0.05,
                "unknown",
                "semantic",
                rng.choice(["fact", "conversation"]),
                float(seq),
                vectors[offset].tobytes() if rng.random() < 0.98 else None,
                session,
                "manual",
                seq,
                "memory",
                rng.choice(["", "apollo"]),
                len(text),
                None,
                text,
                None,
                "[]",
            )
        )
        mentions += [(e, seq) for e in ENTITIES if e in text or rng.random() < 0.01]
    return rows, mentions


def _more(index: DenseIndex, count: int, seed: int) -> tuple[VectorTable, list[tuple[str, int]]]:
    rows, mentions = _rows(index.last_seq, count, seed)
    return VectorTable.from_rows(rows), mentions


def _fresh(
    rows: list[tuple[Any, ...]], mentions: list[tuple[str, int]], *, compact_rows: int
) -> DenseIndex:
    table = VectorTable.from_rows(rows)
    return DenseIndex(
        table,
        generation=0,
        mentions=MentionIndex.build(mentions, table.seq),
        compact_rows=compact_rows,
    )


def _answers(index: DenseIndex) -> dict[str, Any]:
    """What recall reads of an index, in plain values."""
    query = EMBEDDER.embed_query("kafka latency at the north door")
    out: dict[str, Any] = {"rows": len(index), "cosines": _bits(index.scores(query))}
    for scope in SCOPES:
        visible = index.mask(scope, RecallFilters())
        out[f"mask {scope.agent_id}"] = _bits(visible)
        assert index.keyword is not None and index.mentions is not None
        for terms in QUERIES:
            out[f"bm25 {scope.agent_id} {terms}"] = _bits(index.keyword_scores(terms, scope))
        members = index.mentions.members(ENTITIES, visible, index.table.ids, max_degree=10**6)
        out[f"mentions {scope.agent_id}"] = members
    layout = index.sessions
    out["sessions"] = [
        (layout.members(row)[0].tolist(), layout.members(row)[1])
        if layout.in_session[row]
        else None
        for row in range(0, len(index), 7)
    ]
    out["in_session"] = _bits(layout.in_session)
    shown = index.mask(SCOPES[0], RecallFilters())
    fused = np.where(shown, index.scores(query), 0.0)
    picked = [*range(0, len(index), 11), *range(max(0, len(index) - 60), len(index))]
    out["neighbours"] = [
        (row, key >= 0, near) for row, key, near in visible_neighbours(shown, picked, layout)
    ]
    out["support"] = session_support(
        fused.astype(np.float64),
        shown,
        picked,
        layout,
        neighbour_weight=0.3,
        session_weight=0.2,
        session_top=3,
        lengths=index.table.length,
        self_contained=40,
    )
    out["row_of"] = [index.row_of(f"m{seq:06d}") for seq in range(1, len(index) + 40, 13)]
    t = index.table
    out["ids"] = t.ids.tolist()
    for column in PLAIN:
        if column not in ("ids", "matrix"):
            out[column] = _bits(getattr(t, column))
    for column in CODED:  # an appended name's code follows the others', not its sort order
        names = np.array(getattr(t, f"{column}_names"), dtype=object)
        out[column] = names[getattr(t, column)].tolist()
    out["vectors"] = _bits(index.vectors_of(np.arange(len(index))))
    return out


def _bits(array: Any) -> tuple[str, tuple[int, ...], bytes]:
    """An array as its type, shape and bytes (equal: the same bits)."""
    array = np.ascontiguousarray(array)
    return array.dtype.str, array.shape, array.tobytes()


def _shared(old: DenseIndex, new: DenseIndex) -> list[str]:
    """The arrays of ``new`` that do not share memory with ``old``'s."""
    pairs: dict[str, tuple[Any, Any]] = {
        column: (getattr(old.table, column), getattr(new.table, column))
        for column in (*PLAIN, *CODED)
        if column != "matrix" or old.compact is None
    }
    assert old.keyword is not None and new.keyword is not None
    pairs["lengths"] = (old.keyword.lengths, new.keyword.lengths)
    pairs["row_parts"] = (old.keyword.row_parts, new.keyword.row_parts)
    pairs["in_session"] = (old.sessions.in_session, new.sessions.in_session)
    if old.compact is not None and new.compact is not None:
        for name in ("floats", "codes", "scales"):
            pairs[name] = (
                getattr(old.compact.parts[-1], name),
                getattr(new.compact.parts[-1], name),
            )
    return [name for name, (a, b) in pairs.items() if not np.shares_memory(a, b)]


@pytest.fixture(scope="module")
def base() -> tuple[list[tuple[Any, ...]], list[tuple[str, int]]]:
    return _rows(0, ROWS, seed=1)


@pytest.mark.parametrize("compact_rows", [10**9, 0], ids=["floats", "compact"])
def test_appends_share_the_old_rows_and_old_versions_answer_as_before(
    base: tuple[list[tuple[Any, ...]], list[tuple[str, int]]], compact_rows: int
) -> None:
    rows, mentions = base
    first = _fresh(rows, mentions, compact_rows=compact_rows)
    assert first.table.ids.shape == (ROWS,)  # the first load is exact-size
    versions = [first]
    every_row, every_mention = list(rows), list(mentions)
    for step, count in enumerate([1, 3, 1, 40, 1, 2]):
        more, pairs = _more(versions[-1], count, seed=10 + step)
        before = _answers(versions[-1])
        grown = versions[-1].extended(more, generation=step + 1, mentions=pairs)
        every_row += _rows(versions[-1].last_seq, count, seed=10 + step)[0]
        every_mention += pairs
        if step > 0:  # the first append moves the rows into buffers with room
            assert _shared(versions[-1], grown) == []
        # The version extended answers as before; the new one as a fresh index.
        assert _answers(versions[-1]) == before
        assert _answers(grown) == _answers(
            _fresh(every_row, every_mention, compact_rows=compact_rows)
        )
        versions.append(grown)


def test_two_versions_of_the_same_rows_keep_apart(
    base: tuple[list[tuple[Any, ...]], list[tuple[str, int]]],
) -> None:
    rows, mentions = base
    first = _fresh(rows, mentions, compact_rows=10**9)
    more, pairs = _more(first, 2, seed=5)
    one = first.extended(more, generation=1, mentions=pairs)
    one_answers = _answers(one)
    # Two versions made from ``one``: the second cannot write where the
    # first did, so it copies ``one``'s rows (and answers for its own).
    left_more, left_pairs = _more(one, 3, seed=6)
    right_more, right_pairs = _more(one, 2, seed=7)
    left = one.extended(left_more, generation=2, mentions=left_pairs)
    left_answers = _answers(left)
    right = one.extended(right_more, generation=2, mentions=right_pairs)
    assert _shared(one, left) == []
    assert _answers(one) == one_answers
    assert _answers(left) == left_answers
    extra = _rows(first.last_seq, 2, seed=5)
    right_rows = _rows(one.last_seq, 2, seed=7)
    assert _answers(right) == _answers(
        _fresh(
            rows + extra[0] + right_rows[0],
            mentions + extra[1] + right_rows[1],
            compact_rows=10**9,
        )
    )


def test_flags_patched_between_appends_stay_with_their_version(
    base: tuple[list[tuple[Any, ...]], list[tuple[str, int]]],
) -> None:
    rows, mentions = base
    first = _fresh(rows, mentions, compact_rows=10**9)
    more, pairs = _more(first, 1, seed=8)
    one = first.extended(more, generation=1, mentions=pairs)
    archived_before = one.table.archived.copy()
    flagged = one.reflagged([FlagChange(seq=3, archived=True, superseded=False)], flags=1)
    more, pairs = _more(flagged, 2, seed=9)
    two = flagged.extended(more, generation=2, mentions=pairs)
    assert bool(two.table.archived[2]) and bool(flagged.table.archived[2])
    assert np.array_equal(one.table.archived, archived_before)
    assert np.array_equal(two.table.archived[: len(one)], flagged.table.archived)
