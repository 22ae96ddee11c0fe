"""The stored form of a vector: half precision with a tag byte, float32 read
as before, and a palace that ranks the same after it is reopened."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.embed import HashingEmbedder
from mindpalace.store.postgres import PostgresStore
from mindpalace.store.vector_bytes import (
    HALF,
    blob_dimensions,
    from_blob,
    from_blobs,
    to_blob,
    to_blobs,
)
from mindpalace.store.vector_rows import VectorTable


def _unit_rows(rows: int, dims: int, seed: int = 3) -> np.ndarray:
    matrix = np.random.default_rng(seed).standard_normal((rows, dims)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def test_a_vector_is_kept_in_half_the_bytes() -> None:
    matrix = _unit_rows(5, 384)
    blobs = to_blobs(matrix)
    assert [len(b) for b in blobs] == [769] * 5  # 384 float16 values and the tag
    assert all(b.endswith(HALF) for b in blobs)
    assert blob_dimensions(blobs[0]) == 384
    back = from_blobs(blobs, 384)
    assert back.dtype == np.float32
    assert np.array_equal(back, matrix.astype(np.float16).astype(np.float32))
    assert np.array_equal(from_blob(blobs[2]), back[2])
    # A unit vector's cosine moves by far less than the gaps a ranking reads.
    assert float(np.abs(back @ matrix[0] - matrix @ matrix[0]).max()) < 1e-3


def test_rounding_twice_changes_nothing() -> None:
    # What a process ranks by is what it stored: decoding and storing again
    # gives the same bytes.
    blobs = to_blobs(_unit_rows(4, 64))
    assert to_blobs(from_blobs(blobs, 64)) == blobs


def test_float32_blobs_of_older_palaces_are_read_exactly() -> None:
    matrix = _unit_rows(3, 16)
    old = [row.tobytes() for row in matrix]
    assert blob_dimensions(old[0]) == 16
    assert np.array_equal(from_blobs(old, 16), matrix)
    assert np.array_equal(from_blob(old[1]), matrix[1])
    # Both forms in one table (a palace written across the upgrade).
    mixed = [old[0], to_blob(matrix[1]), old[2]]
    got = from_blobs(mixed, 16)
    assert np.array_equal(got[[0, 2]], matrix[[0, 2]])
    assert np.array_equal(got[1], matrix[1].astype(np.float16).astype(np.float32))


def test_values_past_half_precision_stay_float32() -> None:
    wide = np.array([[1.0, 70000.0, -2.0], [0.5, 0.25, 0.125]], dtype=np.float32)
    blobs = to_blobs(wide)
    assert len(blobs[0]) == 12 and np.array_equal(from_blob(blobs[0]), wide[0])
    assert len(blobs[1]) == 7 and np.array_equal(from_blob(blobs[1]), wide[1])
    assert np.array_equal(from_blobs(blobs, 3), wide)


@pytest.mark.parametrize(
    ("blob", "message"),
    [
        (b"\x00" * 6, "neither float16 nor float32"),
        (b"\x00" * 7, "neither float16 nor float32"),  # odd, but no tag
    ],
)
def test_bytes_of_neither_form_are_refused(blob: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        blob_dimensions(blob)
    with pytest.raises(ValueError, match=message):
        from_blob(blob)


def test_a_blob_of_another_width_is_refused() -> None:
    blobs = [to_blob(np.ones(4, np.float32)), np.ones(3, np.float32).tobytes()]
    with pytest.raises(ValueError, match="3 values among 4"):
        from_blobs(blobs, 4)
    with pytest.raises(ValueError, match="a matrix of rows"):
        to_blobs(np.ones(4, np.float32))


def test_a_table_with_rows_not_embedded_reads_the_others() -> None:
    vector = np.array([0.5, -0.25, 1.0, 0.0], dtype=np.float32)

    def row(seq: int, blob: bytes | None) -> tuple[object, ...]:
        return (f"m{seq}", "a", "private", "", "", 0, 0, "fact", "semantic", "general", 0.0,
                blob, "", "manual", seq, "memory", "", 10)  # fmt: skip

    table = VectorTable.from_rows([row(1, None), row(2, to_blob(vector)), row(3, None)])
    assert table.embedded.tolist() == [False, True, False]
    assert table.matrix.shape == (3, 4)
    assert np.array_equal(table.matrix[1], vector)
    assert not table.matrix[[0, 2]].any()


def _hits(palace: Palace, queries: list[str]) -> list[list[tuple[str, float]]]:
    return [[(h.memory.id, round(h.score, 6)) for h in palace.recall(q, limit=5)] for q in queries]


def test_a_reopened_palace_ranks_as_the_process_that_wrote_it(tmp_path: Path) -> None:
    path = tmp_path / "palace.db"
    settings = Settings(agent_id="ann", signals=False)
    texts = [
        "the billing service moved to Postgres in October",
        "Kenji joined the platform team on 2 November",
        "we deploy on Thursdays after the standup",
        "the cache layer uses Redis with a one hour expiry",
        "Maria owns the design files for the onboarding flow",
        "invoices are audited every quarter by finance",
    ]
    queries = ["who owns the design files", "where does billing keep its data", "cache expiry"]
    embedder = HashingEmbedder(dimensions=64)
    with Palace(path, agent_id="ann", settings=settings, embedder=embedder) as palace:
        palace.remember_many([{"content": t} for t in texts])
        written = _hits(palace, queries)
    with sqlite3.connect(path) as conn:
        sizes = {int(n) for (n,) in conn.execute("SELECT length(vector) FROM embeddings")}
    assert sizes == {2 * 64 + 1}
    warm = path.with_name(path.name + "-warm")
    shutil.rmtree(warm, ignore_errors=True)  # read from the palace's rows, not warm files
    with Palace(path, agent_id="ann", settings=settings, embedder=embedder) as palace:
        assert _hits(palace, queries) == written
    # A palace whose vectors were written in float32 (before half precision)
    # of the same values ranks the same.
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT model, text_hash, vector FROM embeddings").fetchall()
        conn.executemany(
            "UPDATE embeddings SET vector = ? WHERE model = ? AND text_hash = ?",
            [(from_blob(blob).tobytes(), model, key) for model, key, blob in rows],
        )
    with sqlite3.connect(path) as conn:
        sizes = {int(n) for (n,) in conn.execute("SELECT length(vector) FROM embeddings")}
    assert sizes == {4 * 64}
    shutil.rmtree(warm, ignore_errors=True)
    with Palace(path, agent_id="ann", settings=settings, embedder=embedder) as palace:
        assert _hits(palace, queries) == written


def test_reindex_rewrites_float32_vectors_in_half_precision(
    make_palace: Callable[..., Palace],
) -> None:
    """A palace whose vectors an older version kept in float32 (and one
    value past float16's range): reindex halves them, recall ranks as
    before within float16's rounding, and on PostgreSQL the pgvector copy
    follows the bytes."""
    palace = make_palace(embedder=HashingEmbedder(dimensions=32))
    texts = [f"note {i} about the {word} rota" for i, word in enumerate(WORDS)]
    palace.remember_many([{"content": t} for t in texts])
    store = palace.engine.store
    model = palace.engine.semantic.dense().model  # type: ignore[union-attr]
    assert store.wide_vectors(model, limit=100) == 0
    with store._write() as cur:  # type: ignore[attr-defined]
        rows = store._exec(cur, "SELECT text_hash, vector FROM embeddings").fetchall()  # type: ignore[attr-defined]
        wide = [(from_blob(bytes(blob)).tobytes(), str(key)) for key, blob in rows]
        big = np.full(32, 0.01, dtype=np.float32)
        big[0] = 70_000.0  # past float16's range: stays float32
        wide[0] = (big.tobytes(), wide[0][1])
        store._exec_many(  # type: ignore[attr-defined]
            cur, "UPDATE embeddings SET vector = ? WHERE text_hash = ?", wide
        )
    assert store.wide_vectors(model, limit=100) == len(texts)
    assert store.wide_vectors(model, limit=3) == 3
    palace.reindex()
    assert store.wide_vectors(model, limit=100) == 1  # the one past float16's range
    with store._read() as cur:  # type: ignore[attr-defined]
        after = dict(
            store._exec(cur, "SELECT text_hash, vector FROM embeddings").fetchall()  # type: ignore[attr-defined]
        )
    for blob, key in wide:
        stored = bytes(after[key])
        if key == wide[0][1]:
            assert stored == blob
        else:
            assert stored == to_blob(from_blob(blob)) and len(stored) == 2 * 32 + 1
    if isinstance(store, PostgresStore):
        with store._read() as cur:
            bad = cur.execute(
                "SELECT COUNT(*) FROM embeddings WHERE vec IS NULL OR vec <> mp_vector(vector)"
            ).fetchone()[0]
        assert bad == 0
    hits = palace.recall("note 3 about the garden rota", limit=3)
    assert hits[0].memory.content == texts[3]


WORDS = ["kitchen", "laundry", "bins", "garden", "garage", "attic", "porch", "study"]
