"""The warm dense index follows the palace: appends without a reload,
patches the flags of archived and superseded rows, rebuilds when rows
change otherwise, and sees other processes' writes."""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.conftest import Clock

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.embed import HashingEmbedder
from mindpalace.retrieval import dense
from mindpalace.store.base import Store

MakePalace = Callable[..., Palace]


def _dense_ids(palace: Palace, query: str) -> list[str]:
    return [h.memory.id for h in palace.recall(query, limit=20) if "dense" in h.ranks]


def test_new_memories_are_appended_not_reloaded(make_palace: MakePalace) -> None:
    palace = make_palace(embedder=HashingEmbedder())
    first = palace.remember("the kafka cluster has three brokers")
    assert _dense_ids(palace, "kafka brokers") == [first.id]
    index = palace.semantic.dense()
    assert index is not None and len(index) == 1
    second = palace.remember("kafka brokers restart every night")
    grown = palace.semantic.dense()
    assert grown is not None and len(grown) == 2
    assert grown.epoch == index.epoch  # appended, not rebuilt
    assert grown.table.matrix.shape == (2, 256)
    assert set(_dense_ids(palace, "kafka brokers")) == {first.id, second.id}


def test_archive_patches_flags_and_delete_rebuilds(make_palace: MakePalace) -> None:
    palace = make_palace(embedder=HashingEmbedder())
    keep = palace.remember("postgres vacuum runs weekly")
    gone = palace.remember("postgres replicas lag at night")
    palace.recall("postgres")
    before = palace.semantic.dense()
    assert before is not None
    palace.forget(gone.id)
    after = palace.semantic.dense()
    # an archive changes a flag: patched in place of a reload
    assert after is not None and after.epoch == before.epoch and after.flags > before.flags
    assert after.table.seq is before.table.seq
    assert _dense_ids(palace, "postgres replicas") == [keep.id]
    palace.forget(keep.id, hard=True)  # a delete changes the rows: reloaded
    deleted = palace.semantic.dense()
    assert deleted is not None and deleted.epoch != after.epoch
    assert _dense_ids(palace, "postgres") == []


def _shape(palace: Palace, query: str) -> list[tuple[str, float]]:
    return [(h.memory.id, round(h.score, 6)) for h in palace.recall(query, limit=10)]


QUERIES = ["apollo status", "postgres replicas", "kafka brokers restart", "billing owner"]


def test_flag_changes_answer_as_a_reload(store: Store, clock: Clock) -> None:
    """Archive, restore, update and supersession patch a warm index's flags;
    it then answers exactly as an index loaded afresh, and the store tells
    which rows changed (``flag_changes``) without a change of epoch."""
    settings = Settings(signals=False)

    def make() -> Palace:
        return Palace(store=store, settings=settings, clock=clock, embedder=HashingEmbedder())

    palace = make()
    replicas, kafka, billing, green = palace.remember_many(
        [
            {"content": "postgres replicas lag at night"},
            {"content": "kafka brokers restart nightly"},
            {"content": "the billing owner is Tomas"},
            {"content": "Apollo status is green"},
        ]
    )
    palace.recall("warm up")
    assert palace.semantic.wait_for_warm() is not None
    start = store.change_counters()
    base = palace.semantic.dense()
    assert base is not None and base.keyword is not None
    palace.forget(replicas.id)
    red = palace.remember("Apollo status is red")  # replaces the green status
    assert palace.get(green.id).superseded_by == red.id
    updated = palace.update(billing.id, content="the billing owner is Maria")
    palace.forget(kafka.id)
    palace.restore(kafka.id)
    counters = store.change_counters()
    assert counters.epoch == start.epoch and counters.flags > start.flags
    changed = {c.seq: c for c in store.flag_changes(start.flags)}
    flags = {(c.archived, c.superseded) for c in changed.values()}
    assert {(True, False), (False, True), (False, False)} <= flags
    assert store.flag_changes(counters.flags) == []
    warm = palace.semantic.dense()
    # patched and appended to, not reloaded (a reload follows the epoch)
    assert warm is not None and warm.epoch == base.epoch and warm.flags == counters.flags
    assert warm.keyword is not None and len(warm) == len(base) + 2
    patched = {q: _shape(palace, q) for q in QUERIES}
    assert updated.id in [i for i, _ in patched["billing owner"]]
    assert billing.id not in [i for i, _ in patched["billing owner"]]
    assert replicas.id not in [i for i, _ in patched["postgres replicas"]]
    assert green.id not in [i for i, _ in patched["apollo status"]]
    assert kafka.id in [i for i, _ in patched["kafka brokers restart"]]
    fresh = make()  # a process that loads the palace as it is now
    fresh.recall("warm up")
    fresh.semantic.wait_for_warm()
    assert {q: _shape(fresh, q) for q in QUERIES} == patched


def test_writes_of_another_palace_are_seen(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    settings = Settings(embedder="hashing")
    with Palace(path, settings=settings) as reader, Palace(path, settings=settings) as writer:
        writer.remember("the release train leaves on thursday")
        assert len(reader.recall("release train")) == 1
        late = writer.remember("release notes go to the wiki")
        assert late.id in _dense_ids(reader, "release notes wiki")
        writer.forget(late.id)
        assert late.id not in _dense_ids(reader, "release notes wiki")


@pytest.mark.parametrize("rows", [0, 1, 7, 4096, 60_000])
def test_few_rows_product_is_the_matrix_product(rows: int) -> None:
    rng = np.random.default_rng(rows)
    matrix = rng.standard_normal((rows, 64)).astype(np.float32)
    vector = rng.standard_normal(64).astype(np.float32)
    got = dense.few_rows_product(matrix, vector)
    assert got.shape == (rows,)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, matrix @ vector, rtol=1e-5, atol=1e-5)


def test_few_rows_product_runs_on_one_blas_thread() -> None:
    from threadpoolctl import threadpool_info

    seen: list[list[int]] = []

    class Spy(np.ndarray):  # records the BLAS thread count while multiplied
        def __matmul__(self, other: object) -> object:
            seen.append(
                [int(i["num_threads"]) for i in threadpool_info() if i["user_api"] == "blas"]
            )
            return np.asarray(self) @ other

    matrix = np.ones((10, 4), dtype=np.float32).view(Spy)
    assert (
        np.asarray(dense.few_rows_product(matrix, np.ones(4, dtype=np.float32))).tolist()
        == [4.0] * 10
    )
    assert seen and all(n == 1 for n in seen[0])


@given(
    st.lists(st.integers(0, 11), min_size=0, max_size=200),
    st.sets(st.integers(0, 11), max_size=12),
)
@settings(max_examples=200, deadline=None)
def test_member_of_a_coded_column_is_isin(values: list[int], wanted: set[int]) -> None:
    """A filter on a coded column (a category, an agent...) keeps the rows
    ``np.isin`` keeps, whether it compares each wanted value or not."""
    names = tuple(f"name{i}" for i in range(12))
    column = np.array(values, dtype=np.int32)
    kept = dense._member(column, names, {names[i] for i in wanted})
    assert kept.dtype == np.bool_
    assert np.array_equal(kept, np.isin(column, sorted(wanted)))


def test_two_threads_taking_the_first_sample_of_an_index_both_get_its_vectors(
    make_palace: MakePalace,
) -> None:
    """Recalls on several threads share an index: one that asks for the
    lowest cosine while another is still reading the sample's vectors gets
    the same answer, not an empty matrix (a server's threads at a million
    memories, where that read is slow)."""
    palace = make_palace(embedder=HashingEmbedder())
    palace.remember_many([{"content": f"kafka broker {i} restarts nightly"} for i in range(30)])
    index = palace.semantic.dense()
    assert index is not None
    query = HashingEmbedder().embed_one("kafka brokers")
    allowed = np.ones(len(index), dtype=bool)
    expected = copy.copy(index)._low(query, allowed)  # a copy: its own sample
    reading, release = threading.Event(), threading.Event()
    real = index.vectors_of

    def slow(rows: Any) -> Any:
        if not reading.is_set():  # the first reader of the sample waits inside
            reading.set()
            release.wait(10)
        return real(rows)

    index.vectors_of = slow  # type: ignore[method-assign]
    first: list[float] = []
    thread = threading.Thread(target=lambda: first.append(index._low(query, allowed)))
    thread.start()
    assert reading.wait(10)
    try:
        assert index._low(query, allowed) == expected
    finally:
        release.set()
        thread.join(10)
    assert first == [expected]
