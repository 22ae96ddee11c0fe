"""pgvector on PostgreSQL: every write path fills ``vec``, the HNSW index
follows the recorded model, ``nearest`` sees only what scope and filters
admit, and recall through it answers as exact recall does."""

from __future__ import annotations

import io
import random
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import psycopg
import pytest

from bench.pgserver import ThrowawayPostgres, database_url
from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.conversations import Message
from mindpalace.embed import HashingEmbedder
from mindpalace.embed.texts import vector_key
from mindpalace.models import (
    Category,
    EmbeddingConfig,
    HitList,
    MemoryKind,
    NewMemory,
    RecallFilters,
    Scope,
    Visibility,
)
from mindpalace.retrieval import dense
from mindpalace.retrieval.pipeline import RecallOptions
from mindpalace.store import core, migrate, vector_bytes
from mindpalace.store.base import VectorBatch
from mindpalace.store.migrations import MIGRATIONS, Migration
from mindpalace.store.pg_vectors import MAX_DIMENSIONS, index_name
from mindpalace.store.postgres import PostgresStore
from mindpalace.store.sqlite import SQLiteStore
from mindpalace.store.transfer import copy_palace
from mindpalace.store.vector_bytes import from_blob, to_blob

T0 = datetime(2026, 3, 1, tzinfo=timezone.utc)
DIMS = 16
KEY = f"test/unit/{DIMS}"
ANY = RecallFilters()


@pytest.fixture
def pg(postgres_url: str) -> Iterator[PostgresStore]:
    store = PostgresStore(postgres_url, busy_timeout=10)
    yield store
    store.close()


def _unit(seed: int, dims: int = DIMS) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=dims).astype(np.float32)
    return v / np.linalg.norm(v)


def _add(store: PostgresStore, memory_id: str, seed: int, **fields: object) -> np.ndarray:
    """A memory with a vector of ``KEY`` (its id is its text)."""
    vector = _unit(seed)
    new = NewMemory(
        content=memory_id,
        content_hash=f"c_{memory_id}",
        agent_id=str(fields.pop("agent_id", "owner")),
        embed_hash=f"h_{memory_id}",
        **fields,  # type: ignore[arg-type]
    )
    store.add(
        new,
        memory_id=memory_id,
        now=T0 + timedelta(minutes=seed),
        scope=Scope(agent_id=new.agent_id),
        vectors=VectorBatch(KEY, {f"h_{memory_id}": vector.tobytes()}),
    )
    return vector


def _vec_state(store: PostgresStore) -> tuple[int, int, list[str]]:
    """(embeddings, those whose ``vec`` is missing or differs from the
    bytes, the HNSW indexes of ``embeddings``)."""
    with store._read() as cur:
        total, bad = cur.execute(
            "SELECT COUNT(*), COUNT(*) FILTER (WHERE vec IS NULL OR vec <> mp_vector(vector))"
            " FROM embeddings"
        ).fetchone()
        names = cur.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'embeddings'"
            " AND indexdef LIKE '%USING hnsw%' ORDER BY indexname"
        ).fetchall()
    return int(total), int(bad), [str(n[0]) for n in names]


# -- the column and its index ---------------------------------------------------------------


def test_decoding_in_sql_is_exact(pg: PostgresStore) -> None:
    values = np.array([0.0, -0.0, 1e-40, -3.5e-39, 1.0, -2.5, 3.4e38, 1.1754944e-38], np.float32)
    with pg._read() as cur:
        text = cur.execute("SELECT mp_vector(%s)::text", (values.tobytes(),)).fetchone()[0]
    decoded = np.array(text.strip("[]").split(","), dtype=np.float32)
    assert decoded.tobytes() == values.tobytes()


def test_decoding_half_precision_in_sql_is_exact(pg: PostgresStore) -> None:
    # Zeros of both signs, subnormals, the largest value, and values whose
    # exponent and fraction use every bit of float16.
    values = np.array(
        [0.0, -0.0, 6e-8, -3.0e-5, 6.1035156e-05, 1.0, -2.5, 65504.0, 0.33325195, -0.0999755],
        dtype=np.float16,
    )
    blob = to_blob(values.astype(np.float32))
    assert len(blob) == 2 * values.size + 1
    with pg._read() as cur:
        text = cur.execute("SELECT mp_vector(%s)::text", (blob,)).fetchone()[0]
    decoded = np.array(text.strip("[]").split(","), dtype=np.float32)
    assert decoded.tobytes() == values.astype(np.float32).tobytes()
    assert decoded.tobytes() == from_blob(blob).tobytes()


def test_the_index_follows_the_recorded_model(pg: PostgresStore) -> None:
    assert _vec_state(pg)[2] == []  # no model recorded yet
    pg.set_embedding_config(EmbeddingConfig("test", "unit", DIMS))
    assert _vec_state(pg)[2] == [index_name(DIMS)]
    pg.set_embedding_config(EmbeddingConfig("test", "other", 8), drop_vectors_except="x")
    assert _vec_state(pg)[2] == [index_name(8)]
    # Past pgvector's HNSW limit: no index, and no candidates (exact search).
    pg.set_embedding_config(EmbeddingConfig("test", "huge", MAX_DIMENSIONS + 1))
    assert _vec_state(pg)[2] == []
    huge = np.ones(MAX_DIMENSIONS + 1, dtype=np.float32)
    assert pg.nearest("test/huge/2001", huge, Scope(agent_id="a"), ANY, limit=5) is None


def test_every_write_path_fills_vec(
    postgres_url: str, postgres_server: ThrowawayPostgres, tmp_path: Path
) -> None:
    embedder = HashingEmbedder(dimensions=64)
    settings = Settings(agent_id="ann", signals=False)
    with Palace(postgres_url, agent_id="ann", settings=settings, embedder=embedder) as palace:
        palace.remember("Kafka brokers restart nightly")
        palace.remember_many([{"content": f"invoice {i} was audited"} for i in range(5)])
        palace.add_messages([Message("the deploy froze", speaker="Sam")], session="s1")
        store = palace.store
        assert isinstance(store, PostgresStore)
        assert _vec_state(store) == (7, 0, [index_name(64)])
        exported = io.StringIO()
        palace.export_jsonl(exported)
        # A re-embedding with another model: new vectors, the index follows.
        palace.semantic.embedder = HashingEmbedder(dimensions=32)
        palace.reindex()
        assert _vec_state(store) == (7, 0, [index_name(32)])
    # Import (into SQLite), migrate to PostgreSQL, copy on to PostgreSQL.
    sqlite = tmp_path / "source.db"
    with Palace(sqlite, agent_id="ann", settings=settings, embedder=embedder) as source:
        source.import_jsonl(exported.getvalue().splitlines())
    urls = [postgres_server.create() for _ in range(3)]
    try:
        assert migrate(sqlite, urls[0]).identical
        migrated, copied = PostgresStore(urls[0]), PostgresStore(urls[1])
        try:
            assert _vec_state(migrated) == (7, 0, [index_name(64)])
            reader = Palace(store=migrated, agent_id="ann", settings=settings, embedder=embedder)
            migrated.ann_in_store = True
            reader.semantic.ann_rows = 1
            assert reader.recall("kafka brokers")[0].memory.content == (
                "Kafka brokers restart nightly"
            )
            assert copy_palace(migrated, copied).identical  # vec is derived, not copied
            assert _vec_state(copied) == (7, 0, [index_name(64)])
            writer = Palace(store=copied, agent_id="ann", settings=settings, embedder=embedder)
            writer.remember("one more after the copy")
            assert _vec_state(copied) == (8, 0, [index_name(64)])
        finally:
            migrated.close()
            copied.close()
        # Import into PostgreSQL.
        with Palace(urls[2], agent_id="ann", settings=settings, embedder=embedder) as restored:
            assert restored.import_jsonl(exported.getvalue().splitlines()).inserted == 7
            store = restored.store
            assert isinstance(store, PostgresStore)
            assert _vec_state(store) == (7, 0, [index_name(64)])
    finally:
        for url in urls:
            postgres_server.drop(url)


def test_the_migration_backfills_an_old_palace(
    postgres_server: ThrowawayPostgres,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    older_migrations: Callable[[int], tuple[Migration, ...]],
) -> None:
    """A palace written before pgvector (schema 7) gets ``vec`` for every
    stored vector and the index of its model when opened."""
    name = f"{postgres_server.prefix}old"
    with psycopg.connect(postgres_server.url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")  # empty: not from the migrated template
    old_url = database_url(postgres_server.url, name)
    embedder = HashingEmbedder(dimensions=48)
    settings = Settings(agent_id="ann", signals=False)
    try:
        with monkeypatch.context() as old:
            earlier = older_migrations(8)
            old.setattr(core, "MIGRATIONS", earlier)
            old.setattr(core, "latest_version", lambda: earlier[-1].version)
            # Float32 bytes, as palaces were written then (vector_bytes.py).
            old.setattr(vector_bytes, "to_blobs", lambda m: [r.tobytes() for r in m])
            source = SQLiteStore(tmp_path / "old.db")
            with Palace(store=source, agent_id="ann", settings=settings, embedder=embedder) as p:
                p.remember_many(
                    [{"content": f"note {i} about the kafka cluster"} for i in range(30)]
                )
            source = SQLiteStore(tmp_path / "old.db")
            target = PostgresStore(old_url)
            assert target.schema_version() == earlier[-1].version
            assert copy_palace(source, target).identical
            source.close()
            target.close()
        store = PostgresStore(old_url)
        try:
            assert store.schema_version() == MIGRATIONS[-1].version
            assert _vec_state(store) == (30, 0, [index_name(48)])
            with store._read() as cur:
                sizes = cur.execute("SELECT DISTINCT length(vector) FROM embeddings").fetchall()
            assert sizes == [(4 * 48,)]
            query = embedder.embed_one("note 7 about the kafka cluster")
            key = vector_key(embedder.config)
            found = store.nearest(key, query, Scope(agent_id="ann"), ANY, limit=3)
            assert found is not None and len(found) == 3
            first = store.get(found[0], Scope(agent_id="ann"))
            assert first is not None and first.content == "note 7 about the kafka cluster"
        finally:
            store.close()
    finally:
        postgres_server.drop(old_url)


# -- nearest: scope, filters, the index ---------------------------------------------------------


SCOPED = [
    # (id, fields)
    ("iso", {}),
    ("shared", {"visibility": Visibility.SHARED}),
    ("group1", {"visibility": Visibility.GROUP, "group": "g1"}),
    ("group2", {"visibility": Visibility.GROUP, "group": "g2"}),
    ("chan", {"channel": "c1"}),
    ("chan_shared", {"channel": "c1", "visibility": Visibility.SHARED}),
    ("other_iso", {"agent_id": "other"}),
    ("other_shared", {"agent_id": "other", "visibility": Visibility.SHARED}),
    ("other_chan", {"agent_id": "other", "channel": "c1"}),
]


@pytest.mark.parametrize(
    ("scope", "visible"),
    [
        (Scope(agent_id="owner"), {"iso", "shared", "group1", "group2", "other_shared"}),
        (Scope(agent_id="stranger"), {"shared", "other_shared"}),
        (Scope(agent_id="stranger", groups=("g1",)), {"shared", "other_shared", "group1"}),
        (
            Scope(agent_id="owner", channel="c1"),
            {"iso", "shared", "group1", "group2", "other_shared", "chan", "chan_shared"},
        ),
        # A peer sees its channel and, of the rest, only what was shared.
        (
            Scope(agent_id="owner", channel="c1", peer=True),
            {"shared", "other_shared", "chan", "chan_shared"},
        ),
        (
            Scope(agent_id="owner", channel="c1", peer=True, groups=("g2",)),
            {"shared", "other_shared", "chan", "chan_shared", "group2"},
        ),
        (Scope(agent_id="owner", peer=True), set()),  # a peer without channel: nothing
        (Scope.management(), {memory_id for memory_id, _ in SCOPED}),
    ],
)
def test_nearest_returns_only_visible_rows(
    pg: PostgresStore, scope: Scope, visible: set[str]
) -> None:
    for seed, (memory_id, fields) in enumerate(SCOPED):
        _add(pg, memory_id, seed, **fields)
    for seed in range(len(SCOPED)):
        found = pg.nearest(KEY, _unit(seed), scope, ANY, limit=50)
        assert found is not None and set(found) == visible
        if visible:  # the nearest first: a row's own vector, when it is visible
            own = SCOPED[seed][0]
            assert (found[0] == own) == (own in visible)


def test_nearest_applies_filters_inside(pg: PostgresStore) -> None:
    vectors = {
        "fact": _add(pg, "fact", 1),
        "event": _add(pg, "event", 2, category=Category.EVENT),
        "tagged": _add(pg, "tagged", 3, tags=("ops",)),
        "journal": _add(pg, "journal", 4, kind=MemoryKind.JOURNAL, project="alpha"),
        "session": _add(pg, "session", 5, session="s1"),
        "gone": _add(pg, "gone", 6),
    }
    pg.archive("gone", owner="owner", now=T0)
    owner = Scope(agent_id="owner")

    def near(filters: RecallFilters) -> set[str]:
        found = pg.nearest(KEY, vectors["fact"], owner, filters, limit=50)
        assert found is not None
        return set(found)

    assert near(ANY) == set(vectors) - {"gone"}
    assert near(RecallFilters(include_archived=True)) == set(vectors)
    assert near(RecallFilters(categories=(Category.EVENT,))) == {"event"}
    assert near(RecallFilters(tags=("ops",))) == {"tagged"}
    assert near(RecallFilters(kinds=(MemoryKind.JOURNAL,), projects=("alpha",))) == {"journal"}
    assert near(RecallFilters(sessions=("s1",))) == {"session"}
    assert near(RecallFilters(created_after=T0 + timedelta(minutes=4))) == {"journal", "session"}
    # Vectors of another model are never proposed.
    assert pg.nearest("test/other/16", vectors["fact"], owner, ANY, limit=50) == []


def test_a_narrow_scope_still_gets_its_rows_through_the_index(pg: PostgresStore) -> None:
    """3,000 rows, the reader sees 1 in 30: the HNSW walk goes on past
    ef_search (iterative scan) until it has as many rows as asked."""
    pg.set_embedding_config(EmbeddingConfig("test", "unit", DIMS))
    rng = np.random.default_rng(3)
    matrix = rng.normal(size=(3000, DIMS)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    items = [
        (
            NewMemory(
                content=f"row {i}",
                content_hash=f"c{i}",
                agent_id=f"agent{i % 30}",
                embed_hash=f"h{i}",
            ),
            f"m{i}",
        )
        for i in range(3000)
    ]
    for start in range(0, 3000, 1000):
        chunk = items[start : start + 1000]
        batch = {f"h{start + j}": matrix[start + j].tobytes() for j in range(len(chunk))}
        pg.add_many(chunk, now=T0, scope=Scope.management(), vectors=VectorBatch(KEY, batch))
    with pg._read() as cur:
        cur.execute("ANALYZE")
    scope = Scope(agent_id="agent7")
    query = _unit(99)
    sql, params = pg.nearest_query(KEY, query, scope, ANY, limit=60)
    with pg._read() as cur:
        plan = "\n".join(r[0] for r in pg._exec(cur, "EXPLAIN " + sql, params).fetchall())
    assert f"Index Scan using {index_name(DIMS)}" in plan, plan
    found = pg.nearest(KEY, query, scope, ANY, limit=60)
    assert found is not None and len(found) == 60
    mine = np.arange(7, 3000, 30)
    exact = {f"m{i}" for i in mine[np.argsort(-(matrix[mine] @ query))[:60]]}
    assert all(int(m[1:]) % 30 == 7 for m in found)
    assert len(exact & set(found)) >= 57  # approximate, but hardly


# -- recall ---------------------------------------------------------------------------------


PEOPLE = ["Ana Ruiz", "Ben Okafor", "Carla Diaz", "Project Falcon", "the Billing service"]
TOPICS = (
    "deploy rollback audit invoices kafka postgres migration freeze review queue "
    "latency dashboards incident postmortem budget hiring roadmap"
).split()
AGENTS = [("ann", ("ops",)), ("bob", ("ops",)), ("cy", ("sales",))]
QUERIES = [
    "what did we decide about the Billing service deploy",
    "Ana Ruiz invoices audit",
    "kafka latency incident",
    "Project Falcon roadmap review",
    "postgres migration rollback plan",
    "hiring budget",
]


def _records(seed: int = 5, count: int = 900) -> list[tuple[str, dict[str, object]]]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        agent = AGENTS[i % len(AGENTS)][0]
        words = " ".join(rng.choice(TOPICS) for _ in range(rng.randint(4, 14)))
        visibility = rng.choice(["isolated", "isolated", "shared", "group"])
        fields: dict[str, object] = {
            "content": f"{rng.choice(PEOPLE)} said {words} (note {i}).",
            "visibility": visibility,
        }
        if visibility == "group":
            fields["group"] = dict(AGENTS)[agent][0]
        if i % 3 == 0:
            fields["session"] = f"s{i // 30}"
        out.append((agent, fields))
    return out


def _shape(hits: HitList) -> list[tuple[str, float]]:
    return [(h.memory.content, round(h.score, 5)) for h in hits]


def test_recall_through_pgvector_answers_as_exact_recall(
    pg: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """900 memories over three agents: every agent's recall is the same with
    pgvector proposing 150 candidates (of about 500 visible) as with every
    row scored exactly."""
    embedder = HashingEmbedder()
    now = datetime(2026, 3, 1, tzinfo=timezone.utc)  # both recalls at one time

    def palace(agent: str, groups: tuple[str, ...], ann_rows: int) -> Palace:
        made = Palace(
            store=pg,
            agent_id=agent,
            groups=groups,
            settings=Settings(agent_id=agent, signals=False),
            embedder=embedder,
            clock=lambda: now,
        )
        made.semantic.ann_rows = ann_rows
        return made

    by_agent: dict[str, list[dict[str, object]]] = {}
    for agent, fields in _records():
        by_agent.setdefault(agent, []).append(fields)
    for agent, groups in AGENTS:
        palace(agent, groups, 0).remember_many(by_agent[agent])
    asked: list[int] = []
    original = pg.nearest

    def counted(*args: object, **kwargs: object) -> list[str] | None:
        found = original(*args, **kwargs)  # type: ignore[arg-type]
        asked.append(len(found or ()))
        return found

    monkeypatch.setattr(pg, "nearest", counted)
    monkeypatch.setattr(pg, "ann_in_store", True)  # pgvector proposes, not the process's graph
    monkeypatch.setattr(dense, "GATHER_ROWS", 0)  # a small palace standing for a big one
    compared = 0
    for agent, groups in AGENTS:
        through_index, exact = palace(agent, groups, 1), palace(agent, groups, 0)
        through_index.recall_options = RecallOptions(ann_candidates=150)
        exact.recall_options = RecallOptions(ann_candidates=0)
        for query in QUERIES:
            expected = exact.recall(query, limit=10)
            assert _shape(through_index.recall(query, limit=10)) == _shape(expected), query
            compared += len(expected)
        index = through_index.semantic.dense()
        assert index is not None and index.store_ann and index.ann is None
    assert compared > 100
    assert len(asked) == len(QUERIES) * len(AGENTS) and all(n == 150 for n in asked)
