"""The cleanup after an erasure on PostgreSQL rebuilds an HNSW index that
lost a large share of its vectors (``REINDEX CONCURRENTLY``) before its
VACUUM, since pgvector's vacuum mends the graph around every deleted vector
at an insert's cost; a small erasure only vacuums. A rebuild that fails
leaves no invalid copy of the index behind once it can be dropped."""

from __future__ import annotations

import time

import psycopg
import pytest

from mindpalace import Palace, Selection
from mindpalace.embed import HashingEmbedder
from mindpalace.store import pg_vectors
from mindpalace.store.postgres import REBUILD_SHARE, PostgresStore


def _index(url: str) -> tuple[int, bool, list[str]]:
    """The HNSW index's oid and validity, and every index of ``embeddings``."""
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT c.oid, c.relname, i.indisvalid FROM pg_index i"
            " JOIN pg_class c ON c.oid = i.indexrelid"
            " WHERE i.indrelid = 'embeddings'::regclass ORDER BY c.relname"
        ).fetchall()
    hnsw = [
        (int(oid), bool(valid))
        for oid, name, valid in rows
        if name.startswith("embeddings_vec_") and "ccnew" not in name
    ]
    assert len(hnsw) == 1, rows
    return hnsw[0][0], hnsw[0][1], [str(name) for _, name, _ in rows]


def _cleaned_up(palace: Palace, within: float = 60.0) -> None:
    deadline = time.monotonic() + within
    while not all(r.cleanup == "done" for r in palace.erasures()):
        assert time.monotonic() < deadline
        time.sleep(0.02)


def test_a_large_erasure_rebuilds_the_vector_index_and_a_small_one_does_not(
    postgres_url: str,
) -> None:
    assert 0 < REBUILD_SHARE < 0.1
    with Palace(postgres_url, agent_id="ann", embedder=HashingEmbedder()) as palace:
        for n in range(100):
            session = "small" if n < 2 else "large" if n < 14 else "kept"
            palace.remember(f"note {n} on the {session} topic, item {n * 7}", session=session)
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE embeddings")  # the index counts its 100 vectors
        before, valid, _ = _index(postgres_url)
        assert valid

        # 2 of 100 vectors: below the share, the index is only vacuumed.
        assert palace.erase(Selection("session", "small"), confirm=True).counts.vectors == 2
        _cleaned_up(palace)
        assert _index(postgres_url)[0] == before

        # 12 of 98: past the share, the index is rebuilt, valid, alone.
        assert palace.erase(Selection("session", "large"), confirm=True).counts.vectors == 12
        _cleaned_up(palace)
        after, valid, names = _index(postgres_url)
        assert after != before and valid
        assert not [n for n in names if "ccnew" in n]
        # The rebuilt index serves the dense search: a kept note is found.
        hits = palace.recall("note 50 on the kept topic, item 350", limit=3)
        assert hits and "note 50 " in hits[0].memory.content


def test_a_failed_rebuild_leaves_no_invalid_copy(postgres_url: str) -> None:
    with Palace(postgres_url, agent_id="ann", embedder=HashingEmbedder()) as palace:
        for n in range(20):
            palace.remember(f"note {n} about the orchard")
    name = _index(postgres_url)[2][-1]
    assert name.startswith("embeddings_vec_")
    with (
        psycopg.connect(postgres_url, autocommit=True) as holder,
        psycopg.connect(postgres_url, autocommit=True) as conn,
    ):
        # A transaction reading the table: the rebuild waits for it past
        # lock_timeout, after PostgreSQL made its invalid copy.
        holder.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        holder.execute("SELECT COUNT(*) FROM embeddings").fetchone()
        conn.execute("SET lock_timeout = 300")
        with pytest.raises(psycopg.Error):
            pg_vectors.rebuild_index(conn, name)
        left = [n for n in _index(postgres_url)[2] if "ccnew" in n]
        holder.execute("COMMIT")
        # Dropped then if it could be, else by the next rebuild, which succeeds.
        pg_vectors.rebuild_index(conn, name)
    _, valid, names = _index(postgres_url)
    assert valid and not [n for n in names if "ccnew" in n]
    assert left in ([], [f"{name}_ccnew"])


def test_a_vacuum_tried_again_does_not_rebuild_again(postgres_url: str) -> None:
    """A cleanup whose VACUUM fails (a table held past the busy timeout)
    is tried again; the index it rebuilt first is not rebuilt again."""
    store = PostgresStore(postgres_url, busy_timeout=0.3)
    try:
        palace = Palace(store=store, agent_id="ann", embedder=HashingEmbedder())
        for n in range(40):
            palace.remember(
                f"note {n} of the {'gone' if n < 10 else 'kept'} kind",
                session=("gone" if n < 10 else "kept"),
            )
        before = _index(postgres_url)[0]
        with psycopg.connect(postgres_url) as holder:
            holder.execute("LOCK TABLE signals IN SHARE UPDATE EXCLUSIVE MODE")  # VACUUM waits
            palace.erase(Selection("session", "gone"), confirm=True)
            deadline = time.monotonic() + 60
            while _index(postgres_url)[0] == before:  # the rebuild, before the VACUUM
                assert time.monotonic() < deadline
                time.sleep(0.02)
            rebuilt = _index(postgres_url)[0]
            # Held past the busy timeout a few times: the first VACUUM fails.
            time.sleep(4 * 0.3)
            assert [r.cleanup for r in palace.erasures()] == ["pending"]
            holder.rollback()
        _cleaned_up(palace)
        assert _index(postgres_url)[0] == rebuilt
    finally:
        store.close()
