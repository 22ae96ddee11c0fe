"""The warm dense index follows the palace: appends without a reload,
rebuilds when existing rows change, and sees other processes' writes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.embed import HashingEmbedder
from mindpalace.retrieval import dense

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


def test_archive_and_delete_rebuild(make_palace: MakePalace) -> None:
    palace = make_palace(embedder=HashingEmbedder())
    keep = palace.remember("postgres vacuum runs weekly")
    gone = palace.remember("postgres replicas lag at night")
    palace.recall("postgres")
    before = palace.semantic.dense()
    assert before is not None
    palace.forget(gone.id)
    after = palace.semantic.dense()
    assert after is not None and after.epoch != before.epoch
    assert _dense_ids(palace, "postgres replicas") == [keep.id]
    palace.forget(keep.id, hard=True)
    assert _dense_ids(palace, "postgres") == []


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
