"""Migration 31: the vector tables key a model by a short code ("1", "2")
kept in ``palace_meta``, not by its name in every row. SQLite rewrites an
older palace's rows in place; a PostgreSQL palace that holds vectors keeps
the names (rewriting a row would re-insert it into the HNSW index). Either
way every vector is found where it was, and recall gives the same hits."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, closing
from pathlib import Path

import numpy as np
import pytest

from mindpalace.embed.hashing import HashingEmbedder
from mindpalace.errors import StorageError
from mindpalace.store import Store, core
from mindpalace.store.migrations import latest_version
from mindpalace.store.postgres import PostgresStore
from mindpalace.store.sqlite import SQLiteStore
from mindpalace.store.transfer import copy_palace
from mindpalace.store.vector_bytes import to_blob
from mindpalace.store.vector_rows import VectorBatch

from .older_palaces import NOTES, open_palace

SMALL_KEY = "hashing/hashing-v1/32"


def _rows(store: Store, table: str = "embeddings") -> list[str]:
    """The model key of every row of a vector table."""
    assert isinstance(store, core.SqlCore)
    with store._read() as cur:
        return sorted(str(r[0]) for r in store._exec(cur, f"SELECT model FROM {table}"))


def _codes(store: Store) -> dict[str, int]:
    """``palace_meta``'s codes and counter, by key."""
    assert isinstance(store, core.SqlCore)
    with store._read() as cur:
        rows = store._exec(
            cur, "SELECT key, value FROM palace_meta WHERE key LIKE 'vector!_code%' ESCAPE '!'"
        )
        return {str(k): int(v) for k, v in rows.fetchall()}


def test_a_new_palace_keys_vectors_by_a_code(store: Store) -> None:
    palace = open_palace(store)
    first = palace.remember(NOTES[0])
    palace.remember_many([{"content": text} for text in NOTES[1:]])
    assert _rows(store) == ["1"] * len(NOTES)
    assert _codes(store) == {"vector_codes": 1, f"vector_code:{SMALL_KEY}": 1}
    assert palace.pending_vectors() == 0
    hits = palace.recall("who reviews releases", limit=3)
    assert hits.mode == "hybrid" and "dense" in hits[0].ranks
    # found by the store's own reads, which take the model's name
    assert isinstance(store, core.SqlCore)
    with store._read() as cur:
        hashes = [str(r[0]) for r in store._exec(cur, "SELECT embed_hash FROM memories")]
    assert store.missing_vectors(SMALL_KEY, hashes) == set()
    assert store.missing_vectors("hashing/hashing-v1/64", hashes) == set(hashes)
    # a hard forget takes the memory's vector with it
    palace.forget(first.id, hard=True)
    assert _rows(store) == ["1"] * (len(NOTES) - 1)


def test_another_model_gets_the_next_code_and_a_reindex_keeps_only_it(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    with open_palace(path) as palace:
        for text in NOTES:
            palace.remember(text)
    wider = HashingEmbedder(dimensions=48)
    with open_palace(path, wider) as palace:
        assert palace.reindex() == len(NOTES)
        store = palace.engine.store
        assert _rows(store) == ["2"] * len(NOTES)
        assert _codes(store) == {
            "vector_codes": 2,
            f"vector_code:{SMALL_KEY}": 1,
            "vector_code:hashing/hashing-v1/48": 2,
        }
        assert palace.recall("Room Alder", limit=1)[0].memory.content == NOTES[1]
    # reopened, the codes are read from the file
    with open_palace(path, wider) as palace:
        assert palace.remember("The staging database restarts on Sundays.").id
        assert _rows(palace.engine.store) == ["2"] * (len(NOTES) + 1)


def test_a_write_without_its_models_code_is_refused(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "p.db")
    try:
        batch = VectorBatch(model="hashing/other/8", vectors={"ab" * 16: b"\x00" * 17})
        with pytest.raises(StorageError, match="code"), store._write() as cur:
            store._put_vectors(cur, batch)
        assert _rows(store) == []
        store.add_vectors(batch)  # the store's own method gives the code first
        assert _rows(store) == ["1"]
    finally:
        store.close()


def test_an_older_sqlite_palace_gets_codes_and_recalls_the_same(
    tmp_path: Path, opened_before: Callable[[int], AbstractContextManager[None]]
) -> None:
    path = tmp_path / "old.db"
    long_text = "The release checklist, step by step: " + " ".join(
        f"step {n} checks the {word} before the next one starts."
        for n, word in enumerate(
            ["build", "tests", "changelog", "migration", "backup", "canary", "metrics"] * 3
        )
    )
    with opened_before(31), open_palace(path) as palace:
        for text in [*NOTES, long_text]:
            palace.remember(text)
        hits_before = [(h.memory.id, h.score) for h in palace.recall("billing service", limit=5)]
        assert set(_rows(palace.engine.store)) == {SMALL_KEY}
        assert set(_rows(palace.engine.store, "part_vectors")) == {SMALL_KEY}
    with closing(sqlite3.connect(path)) as db:
        vectors_before = sorted(db.execute("SELECT text_hash, vector FROM embeddings").fetchall())
        parts_before = sorted(db.execute("SELECT text_hash, vectors FROM part_vectors").fetchall())

    with open_palace(path) as palace:
        store = palace.engine.store
        assert store.schema_version() == latest_version()
        assert _codes(store) == {"vector_codes": 1, f"vector_code:{SMALL_KEY}": 1}
        with closing(sqlite3.connect(path)) as db:
            rows = sorted(db.execute("SELECT model, text_hash, vector FROM embeddings").fetchall())
            parts = sorted(db.execute("SELECT model, text_hash, vectors FROM part_vectors"))
        # every vector and part vector kept, under the model's code
        assert rows == [("1", key, blob) for key, blob in vectors_before]
        assert parts == [("1", key, blob) for key, blob in parts_before]
        assert [(h.memory.id, h.score) for h in palace.recall("billing service", limit=5)] == (
            hits_before
        )
        assert palace.pending_vectors() == 0
        palace.remember("The staging database restarts on Sundays.")
        assert _rows(store) == ["1"] * (len(NOTES) + 2)


def test_a_postgres_palace_with_vectors_keeps_the_names(
    older_pg_palace: Callable[[int], tuple[str, PostgresStore]], tmp_path: Path
) -> None:
    url, old = older_pg_palace(31)
    with open_palace(old) as palace:
        written = [palace.remember(text) for text in NOTES[:2]]
    empty_url, empty = older_pg_palace(31)
    empty.close()

    store = PostgresStore(url)
    try:
        assert store.schema_version() == latest_version()
        assert _codes(store) == {}
        palace = open_palace(store)
        palace.remember(NOTES[2])
        assert _rows(store) == [SMALL_KEY] * 3
        assert palace.pending_vectors() == 0
        assert palace.recall("Room Alder", limit=1)[0].memory.id == written[1].id
        # a copy into a new SQLite palace keeps the names its rows carry
        destination = SQLiteStore(tmp_path / "copy.db")
        copy_palace(store, destination)
        assert _codes(destination) == {}
        copied = open_palace(destination)
        copied.remember(NOTES[3])
        assert _rows(destination) == [SMALL_KEY] * 4
        assert copied.pending_vectors() == 0
        destination.close()
    finally:
        store.close()
    fresh = PostgresStore(empty_url)  # a palace that held nothing takes codes
    try:
        assert _codes(fresh) == {"vector_codes": 0}
        open_palace(fresh).remember(NOTES[0])
        assert _rows(fresh) == ["1"]
    finally:
        fresh.close()


def test_a_copy_carries_the_codes(store: Store, tmp_path: Path) -> None:
    palace = open_palace(store)
    for text in NOTES:
        palace.remember(text)
    destination = SQLiteStore(tmp_path / "copy.db")
    try:
        assert isinstance(store, core.SqlCore)
        copy_palace(store, destination)
        assert _codes(destination) == _codes(store)
        copied = open_palace(destination)
        assert copied.pending_vectors() == 0
        assert copied.recall("Room Alder", limit=1)[0].memory.content == NOTES[1]
    finally:
        destination.close()


def test_a_384_dimension_vector_row_fits_five_to_a_page(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "p.db")
    try:
        palace = open_palace(store, HashingEmbedder(dimensions=384))
        palace.remember_many(
            [{"content": f"Note {n}: the {n}th build of the billing service."} for n in range(400)]
        )
        with store._read() as cur:
            try:
                leaves = store._exec(
                    cur,
                    "SELECT COUNT(*) FROM dbstat WHERE name = 'embeddings' AND pagetype = 'leaf'",
                ).fetchone()[0]
            except sqlite3.OperationalError:
                pytest.skip("this SQLite has no dbstat table to count pages with")
        # with the model's name in each row (about 840 bytes) four fit
        assert leaves <= 400 // 5 + 1
    finally:
        store.close()


def test_writers_at_once_give_each_model_one_code(backend: str, store_target: str) -> None:
    def opened() -> core.SqlCore:
        if backend == "sqlite":
            return SQLiteStore(store_target, busy_timeout=10)
        return PostgresStore(store_target, busy_timeout=10, max_connections=2)

    stores = [opened() for _ in range(4)]
    models = ["hashing/a/8", "hashing/b/8", "hashing/a/8", "hashing/b/8"]
    start = threading.Barrier(len(stores))
    blob = to_blob(np.full(8, 0.35, dtype=np.float32))
    failed: list[BaseException] = []

    def write(i: int) -> None:
        try:
            start.wait()
            batch = VectorBatch(model=models[i], vectors={f"{i:032x}": blob})
            stores[i].add_vectors(batch)
        except BaseException as exc:  # reported below
            failed.append(exc)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(len(stores))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert not failed
        codes = _codes(stores[0])
        a, b = codes["vector_code:hashing/a/8"], codes["vector_code:hashing/b/8"]
        assert a != b and codes["vector_codes"] >= max(a, b)
        # every writer stored its model's rows under that code, and each
        # process reads the same code
        assert _rows(stores[0]) == sorted([str(a), str(b)] * 2)
        for store, model in zip(stores, models, strict=True):
            assert store._stored_key(model) == str(codes[f"vector_code:{model}"])
    finally:
        for store in stores:
            store.close()
