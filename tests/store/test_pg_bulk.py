"""Copying a palace into PostgreSQL: indexes built once, statistics counted once.

The copy sets the text and vector indexes and the BM25 statistics triggers
aside while the rows go in (store/pg_bulk.py). Afterwards the palace must be
exactly what the write path would have made: the same indexes, live triggers,
statistics equal to a recount, and searches that use them; and a copy that
fails must leave the destination as it was.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.embed.hashing import HashingEmbedder
from mindpalace.embed.texts import vector_key
from mindpalace.errors import StorageError
from mindpalace.models import RecallFilters
from mindpalace.store import migrate
from mindpalace.store.pg_vectors import index_name
from mindpalace.store.postgres import PostgresStore
from mindpalace.store.sqlite import SQLiteStore
from mindpalace.store.transfer import copy_palace

_SCOPE = "agent_id, visibility, group_name, channel"


def _shape(store: PostgresStore) -> dict[str, Any]:
    """Indexes, trigger states and BM25 statistics, with a recount of them."""
    with store._read() as cur:
        indexes = sorted(
            (str(r[0]), str(r[1]))
            for r in store._exec(
                cur,
                "SELECT indexname, indexdef FROM pg_indexes"
                " WHERE schemaname = current_schema()"
                " AND tablename IN ('memories', 'embeddings')",
            ).fetchall()
        )
        triggers = sorted(
            (str(r[0]), str(r[1]))
            for r in store._exec(
                cur,
                "SELECT tgname, tgenabled FROM pg_trigger"
                " WHERE tgrelid = 'memories'::regclass AND NOT tgisinternal",
            ).fetchall()
        )
        stats = tuple(
            store._exec(cur, "SELECT docs, tokens FROM text_stats WHERE id = 1").fetchone()
        )
        recount = tuple(
            store._exec(cur, "SELECT COUNT(*), COALESCE(SUM(fts_len), 0) FROM memories").fetchone()
        )
        scopes = sorted(
            tuple(r)
            for r in store._exec(
                cur, f"SELECT {_SCOPE}, docs, tokens FROM text_scopes WHERE docs > 0"
            ).fetchall()
        )
        scopes_recount = sorted(
            tuple(r)
            for r in store._exec(
                cur,
                f"SELECT {_SCOPE}, COUNT(*), SUM(fts_len) FROM memories GROUP BY {_SCOPE}",
            ).fetchall()
        )
    return {
        "indexes": indexes,
        "triggers": triggers,
        "stats": stats,
        "stats_recount": recount,
        "scopes": scopes,
        "scopes_recount": scopes_recount,
    }


def _fill(palace: Palace) -> None:
    palace.remember_many(
        [
            {"content": f"Kafka broker {i} restarts after the nightly deploy", "tags": ["ops"]}
            for i in range(30)
        ]
        + [
            {"content": f"Invoice {i} for the garden project", "visibility": "shared"}
            for i in range(20)
        ]
    )
    palace.remember("Only the support channel sees this", channel="support")
    palace.remember("A group note on the falcon launch", visibility="group", group="ops")


def test_a_copy_into_postgres_ends_with_every_index_and_trigger_of_the_write_path(
    tmp_path: Path, postgres_url: str, postgres_server: Any
) -> None:
    embedder = HashingEmbedder(dimensions=48)
    settings = Settings(agent_id="ann", signals=False)
    source = tmp_path / "source.db"
    with Palace(source, agent_id="ann", settings=settings, embedder=embedder) as palace:
        _fill(palace)
    # The same palace written through PostgreSQL's write path, for reference.
    written = postgres_server.create()
    try:
        with Palace(written, agent_id="ann", settings=settings, embedder=embedder) as palace:
            _fill(palace)
        reference = PostgresStore(written)
        try:
            expected = _shape(reference)
        finally:
            reference.close()
    finally:
        postgres_server.drop(written)
    assert expected["stats"] == expected["stats_recount"]
    assert expected["scopes"] == expected["scopes_recount"]

    assert migrate(source, postgres_url).identical
    copied = PostgresStore(postgres_url)
    try:
        shape = _shape(copied)
        assert shape["indexes"] == expected["indexes"]
        assert any(name == index_name(48) for name, _ in shape["indexes"])
        assert sum("USING gin" in d for _, d in shape["indexes"]) == 2
        assert shape["triggers"] == expected["triggers"]
        assert all(state == "O" for _, state in shape["triggers"])  # enabled
        assert shape["stats"] == shape["stats_recount"] == expected["stats"]
        assert shape["scopes"] == shape["scopes_recount"] == expected["scopes"]
        palace = Palace(store=copied, agent_id="ann", settings=settings, embedder=embedder)
        hits = palace.recall("kafka broker restarts")
        assert hits and "Kafka broker" in hits[0].memory.content
        key = vector_key(embedder.config)
        query = embedder.embed_one("Invoice 7 for the garden project")
        near = copied.nearest(key, query, palace.scope, RecallFilters(), limit=3)
        assert near and palace.get(near[0]).content == "Invoice 7 for the garden project"
        # The statistics triggers run again for the next write.
        palace.remember("Written after the copy about kafka")
        after = _shape(copied)
        assert (
            after["stats"] == after["stats_recount"] == (shape["stats"][0] + 1, after["stats"][1])
        )
        assert after["scopes"] == after["scopes_recount"]
    finally:
        copied.close()


def test_a_failed_copy_leaves_the_destination_as_it_was(tmp_path: Path, postgres_url: str) -> None:
    source = SQLiteStore(tmp_path / "source.db")
    Palace(store=source, agent_id="ann", embedder=HashingEmbedder()).remember("kafka broker")
    with source._write() as cur:  # a table the destination lacks: refused mid-copy
        source._exec(cur, "CREATE TABLE stray (x INTEGER)")
    target = PostgresStore(postgres_url)
    try:
        before = _shape(target)
        with pytest.raises(StorageError, match="lacks tables"):
            copy_palace(source, target)
        assert _shape(target) == before
        assert sum("USING gin" in d for _, d in before["indexes"]) == 2
    finally:
        source.close()
        target.close()
