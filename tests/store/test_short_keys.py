"""Migration 30: a palace keys its texts (a memory's content hash, a
vector's key) by the first 32 hex digits of their SHA-256. SQLite cuts an
older palace's keys in place; a PostgreSQL palace that holds rows keeps its
64 (rewriting a vector row would re-insert it into the HNSW index) and
writes at that length. Either way the same text is the same memory and the
same vector, before and after."""

from __future__ import annotations

import hashlib
import io
import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager, closing
from pathlib import Path
from typing import Any

import pytest

from mindpalace.store import Store, core
from mindpalace.store.migrations import latest_version
from mindpalace.store.postgres import PostgresStore
from mindpalace.store.sqlite import SQLiteStore
from mindpalace.store.transfer import copy_palace

from .older_palaces import NOTES, open_palace


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _keys(store: Store) -> dict[str, set[int]]:
    """The lengths of every stored key, by column."""
    assert isinstance(store, core.SqlCore)
    with store._read() as cur:
        rows: dict[str, Any] = {
            "content_hash": "SELECT DISTINCT length(content_hash) FROM memories",
            "embed_hash": "SELECT DISTINCT length(embed_hash) FROM memories",
            "text_hash": "SELECT DISTINCT length(text_hash) FROM embeddings",
        }
        return {
            column: {int(r[0]) for r in store._exec(cur, sql).fetchall() if r[0] is not None}
            for column, sql in rows.items()
        }


def _vectors(store: Store) -> int:
    assert isinstance(store, core.SqlCore)
    with store._read() as cur:
        return int(store._exec(cur, "SELECT COUNT(*) FROM embeddings").fetchone()[0])


def _file_keys(path: Path) -> tuple[dict[str, str], list[tuple[str, bytes]]]:
    """Each memory's content hash by id, and every (key, vector) pair, read
    from the file itself."""
    with closing(sqlite3.connect(path)) as db:
        hashes = dict(db.execute("SELECT id, content_hash FROM memories").fetchall())
        vectors = sorted(db.execute("SELECT text_hash, vector FROM embeddings").fetchall())
    return hashes, vectors


@pytest.fixture
def schema_29(
    opened_before: Callable[[int], AbstractContextManager[None]],
) -> Callable[[], AbstractContextManager[None]]:
    """A context inside which SQLite palaces are opened as schema 29 left them."""
    return lambda: opened_before(30)


def test_a_new_palace_keys_texts_by_32_digits(store: Store) -> None:
    palace = open_palace(store)
    first = palace.remember(NOTES[0])
    # the same text written again: the same memory and vector
    assert palace.remember(NOTES[0]).id == first.id
    assert store.hash_chars() == 32
    assert first.content_hash == _digest(NOTES[0].casefold())[:32]
    palace.remember_many([{"content": text} for text in NOTES[1:]])
    assert _keys(store) == {"content_hash": {32}, "embed_hash": {32}, "text_hash": {32}}
    assert _vectors(store) == len(NOTES)
    assert palace.pending_vectors() == 0
    # a hard forget takes the memory's vector with it, found by its key
    palace.forget(first.id, hard=True)
    assert _vectors(store) == len(NOTES) - 1


def test_an_older_sqlite_palace_is_cut_to_32_digits_and_recalls_the_same(
    tmp_path: Path, schema_29: Callable[[], AbstractContextManager[None]]
) -> None:
    path = tmp_path / "old.db"
    with schema_29(), open_palace(path) as palace:
        written = [palace.remember(text) for text in NOTES]
        # a new version of the same text: the closed one keeps its text
        # under "<hash>~<its id>"
        closed = written[3]
        written[3] = palace.update(closed.id, tags=["billing"])
        assert palace.get(closed.id).content_hash == f"{closed.content_hash}~{closed.id}"
        hits_before = [(h.memory.id, h.score) for h in palace.recall("Maria Lopez", limit=5)]
        assert _keys(palace.engine.store) == {
            "content_hash": {64, 64 + 1 + len(closed.id)},
            "embed_hash": {64},
            "text_hash": {64},
        }
    before, vectors_before = _file_keys(path)

    with open_palace(path) as palace:
        store = palace.engine.store
        assert store.schema_version() == latest_version()
        assert store.hash_chars() == 32
        assert _keys(store) == {
            "content_hash": {32, 32 + 1 + len(closed.id)},
            "embed_hash": {32},
            "text_hash": {32},
        }
        # every key is the first half of the one it had (a closed version's
        # id kept after it); every vector stays
        after, vectors = _file_keys(path)
        assert after == {key: value[:32] + value[64:] for key, value in before.items()}
        assert after[closed.id] == f"{closed.content_hash[:32]}~{closed.id}"
        assert vectors == sorted((key[:32], blob) for key, blob in vectors_before)
        assert [(h.memory.id, h.score) for h in palace.recall("Maria Lopez", limit=5)] == (
            hits_before
        )
        # a text written again is the memory it was, and needs no new vector
        assert palace.remember(NOTES[1]).id == written[1].id
        assert _vectors(store) == len(NOTES)
        assert palace.pending_vectors() == 0
        palace.forget(written[2].id, hard=True)
        assert _vectors(store) == len(NOTES) - 1


def test_a_postgres_palace_with_rows_keeps_its_64_digits(
    older_pg_palace: Callable[[int], tuple[str, PostgresStore]],
) -> None:
    url, old = older_pg_palace(30)
    with open_palace(old) as palace:
        written = palace.remember(NOTES[0])
    empty_url, empty = older_pg_palace(30)
    empty.close()

    store = PostgresStore(url)
    try:
        assert store.schema_version() == latest_version()
        assert store.hash_chars() == 64
        palace = open_palace(store)
        assert palace.remember(NOTES[0]).id == written.id  # the same text, the same memory
        palace.remember(NOTES[1])
        assert _keys(store) == {"content_hash": {64}, "embed_hash": {64}, "text_hash": {64}}
        assert _vectors(store) == 2
        assert palace.pending_vectors() == 0
    finally:
        store.close()
    # a palace that held nothing takes the short keys
    fresh = PostgresStore(empty_url)
    try:
        assert fresh.hash_chars() == 32
    finally:
        fresh.close()


def test_a_copy_carries_the_key_length_of_its_rows(
    older_pg_palace: Callable[[int], tuple[str, PostgresStore]], tmp_path: Path
) -> None:
    url, old = older_pg_palace(30)
    with open_palace(old) as palace:
        written = [palace.remember(text) for text in NOTES]
    source = PostgresStore(url)
    destination = SQLiteStore(tmp_path / "copy.db")
    try:
        assert (source.hash_chars(), destination.hash_chars()) == (64, 32)
        copy_palace(source, destination)
        assert destination.hash_chars() == 64
        reopened = SQLiteStore(tmp_path / "copy.db")
        assert reopened.hash_chars() == 64  # recorded, not only remembered
        reopened.close()
        palace = open_palace(destination)
        assert palace.remember(NOTES[3]).id == written[3].id
        assert _vectors(destination) == len(NOTES)
    finally:
        source.close()
        destination.close()


def test_an_export_of_longer_keys_imports_at_the_palace_length(
    tmp_path: Path, schema_29: Callable[[], AbstractContextManager[None]]
) -> None:
    with schema_29(), open_palace(tmp_path / "old.db") as palace:
        palace.remember_many([{"content": text} for text in NOTES])
        out = io.StringIO()
        palace.export_jsonl(out)
    assert f'"content_hash": "{_digest(NOTES[0].casefold())}"' in out.getvalue()
    with open_palace(tmp_path / "new.db") as palace:
        palace.import_jsonl(out.getvalue().splitlines())
        assert _keys(palace.engine.store)["content_hash"] == {32}
        count = len(palace.memories(limit=100))
        palace.remember(NOTES[2])  # the imported memory, not a second one
        assert len(palace.memories(limit=100)) == count == len(NOTES)
