"""Recall in the database (``MINDPALACE_INDEX=database``): the rows the
store finds are the visible ones nearest the query, with exact cosines;
recall through them answers as the in-process recall does; a process in
that mode loads no vectors; the setting is checked."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.conversations import Message
from mindpalace.embed import HashingEmbedder
from mindpalace.errors import ConfigError, StorageError
from mindpalace.models import Category, NewMemory, RecallFilters, Scope, Visibility
from mindpalace.retrieval import instore
from mindpalace.retrieval.indexing import SemanticIndex
from mindpalace.retrieval.options import RecallOptions
from mindpalace.store import pg_dense
from mindpalace.store.base import VectorBatch
from mindpalace.store.fragments import filter_clause, scope_clause
from mindpalace.store.postgres import PostgresStore
from mindpalace.store.sqlite import SQLiteStore

T0 = datetime(2026, 3, 1, tzinfo=timezone.utc)
DIMS = 16
KEY = f"test/unit/{DIMS}"
ANY = RecallFilters()
AGENTS = ("ann", "bob", "cy")


def _unit(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=DIMS).astype(np.float32)
    return v / np.linalg.norm(v)


@pytest.fixture
def pg(postgres_url: str) -> Iterator[PostgresStore]:
    """120 memories of three agents (every fourth shared, every fifth a
    decision), in sessions of six, each with a vector of ``KEY``."""
    store = PostgresStore(postgres_url, busy_timeout=10, max_connections=2)
    for i in range(120):
        agent = AGENTS[i % 3]
        new = NewMemory(
            content=f"memory {i}",
            content_hash=f"c{i}",
            agent_id=agent,
            embed_hash=f"h{i}",
            visibility=Visibility.SHARED if i % 4 == 0 else Visibility.ISOLATED,
            category=Category.DECISION if i % 5 == 0 else Category.FACT,
            session=f"s{i // 6}",
        )
        store.add(
            new,
            memory_id=f"m{i:03d}",
            now=T0 + timedelta(minutes=i),
            scope=Scope(agent_id=agent),
            vectors=VectorBatch(KEY, {f"h{i}": _unit(i).tobytes()}),
        )
    yield store
    store.close()


def _truth(store: PostgresStore, scope: Scope, filters: RecallFilters) -> dict[str, float]:
    """Every visible memory's cosine to the query, from the stored bytes."""
    with store._read() as cur:
        s_sql, s_params = scope_clause(scope)
        f_sql, f_params = filter_clause(filters)
        rows = store._exec(
            cur,
            "SELECT m.id, e.vector FROM memories m JOIN embeddings e"
            f" ON e.model = ? AND e.text_hash = m.embed_hash WHERE {s_sql} AND {f_sql}",
            [store._stored_key(KEY), *s_params, *f_params],  # the model's code
        ).fetchall()
    query = _unit(999)
    return {str(r[0]): float(np.frombuffer(r[1], dtype=np.float32) @ query) for r in rows}


@pytest.mark.parametrize("walk", [False, True], ids=["exact", "hnsw"])
@pytest.mark.parametrize(
    "filters", [ANY, RecallFilters(categories=(Category.DECISION,))], ids=["all", "decisions"]
)
def test_nearest_rows_are_visible_and_scored_exactly(
    pg: PostgresStore, monkeypatch: pytest.MonkeyPatch, walk: bool, filters: RecallFilters
) -> None:
    if walk:  # every scope walks the HNSW index
        monkeypatch.setattr(pg_dense, "EXACT_ROWS", 0)
    else:  # every scope has its rows scored exactly
        monkeypatch.setattr(pg_dense, "EXACT_FACTOR", 1e9)
    scope = Scope(agent_id="ann")
    truth = _truth(pg, scope, filters)
    found = pg.dense_rows(KEY, _unit(999), scope, filters, nearest=10)
    assert found is not None
    ids = [str(i) for i in found.table.ids]
    assert set(ids) <= set(truth)  # nothing the scope may not see, nothing filtered out
    # A narrow scope has every visible row scored and returned; the walk
    # returns the nearest asked for.
    assert found.complete is not walk
    assert len(ids) == (min(10, len(truth)) if walk else len(truth))
    for key, sim in zip(ids, found.sims.tolist(), strict=True):
        assert sim == pytest.approx(truth[key], abs=1e-5)
    best = sorted(truth, key=lambda k: -truth[k])[:10]
    assert len(set(ids) & set(best)) >= (10 if not walk else 9)
    assert found.low is not None
    if walk:  # the farthest rows' estimate: never below the true minimum
        assert found.low >= min(truth.values()) - 1e-5
    else:
        assert found.low == pytest.approx(min(truth.values()), abs=1e-5)
    assert list(found.table.seq) == sorted(found.table.seq)  # write order


def test_rows_by_id_and_session_stay_in_scope(pg: PostgresStore) -> None:
    scope = Scope(agent_id="bob")
    truth = _truth(pg, scope, ANY)
    # m000 is ann's but shared; m003 is ann's and isolated: not bob's to see.
    found = pg.dense_rows(
        KEY, _unit(999), scope, ANY, ids=["m000", "m003", "m001"], sessions=["s2"]
    )
    assert found is not None and found.low is None
    ids = [str(i) for i in found.table.ids]
    session_rows = {f"m{i:03d}" for i in range(12, 18)} & set(truth)
    assert set(ids) == {"m000", "m001"} | session_rows
    for key, sim in zip(ids, found.sims.tolist(), strict=True):
        assert sim == pytest.approx(truth[key], abs=1e-5)


@pytest.mark.parametrize("walk", [False, True], ids=["exact", "hnsw"])
def test_the_nearest_rows_read_ahead_and_the_matches_after_are_one_read(
    pg: PostgresStore, monkeypatch: pytest.MonkeyPatch, walk: bool
) -> None:
    """The pipeline reads the nearest rows on a thread of their own while
    the keyword search runs, and the keyword matches' cosines after: the
    same rows, cosines and lowest cosine as one read of both."""
    if walk:
        monkeypatch.setattr(pg_dense, "EXACT_ROWS", 0)
    else:
        monkeypatch.setattr(pg_dense, "EXACT_FACTOR", 1e9)
    scope = Scope(agent_id="ann")
    truth = _truth(pg, scope, ANY)
    query = _unit(999)
    options = replace(RecallOptions(), ann_candidates=5)
    # Matches far from the query (so not among the nearest), one near, and
    # one the scope may not see.
    farthest = sorted(truth, key=lambda k: truth[k])[:3]
    ids = [*farthest, max(truth, key=lambda k: truth[k]), "m001"]
    together = pg.dense_rows(KEY, query, scope, ANY, nearest=5, ids=ids)
    ahead = instore.nearest_ahead(pg, KEY, query, scope=scope, filters=ANY, options=options)
    split = instore._with_named(
        pg, KEY, query, scope=scope, filters=ANY, walked=ahead.result(timeout=30), ids=ids
    )
    assert together is not None and split is not None
    assert list(split.table.seq) == list(together.table.seq)
    assert [str(i) for i in split.table.ids] == [str(i) for i in together.table.ids]
    assert split.sims.tolist() == together.sims.tolist()
    assert split.low == together.low
    assert split.complete is together.complete is (not walk)
    assert set(farthest) <= {str(i) for i in split.table.ids}
    assert "m001" not in {str(i) for i in split.table.ids}  # bob's, isolated
    if walk:  # the walk's low is an estimate: a match below it lowers it
        high = replace(ahead.result(), low=1.0)
        lowered = instore._with_named(
            pg, KEY, query, scope=scope, filters=ANY, walked=high, ids=ids
        )
        assert lowered is not None and lowered.low is not None
        assert lowered.low == pytest.approx(min(truth[k] for k in ids if k in truth), abs=1e-5)


def test_a_failed_read_ahead_fails_the_recall(
    shared_palace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _palace(shared_palace, "ann", "database") as palace:
        real = palace.store.dense_rows

        def failing(*args: object, nearest: int = 0, **kw: object) -> object:
            if nearest:
                raise StorageError("the server went away")
            return real(*args, nearest=nearest, **kw)  # type: ignore[arg-type]

        monkeypatch.setattr(palace.store, "dense_rows", failing)
        with pytest.raises(StorageError, match="went away"):
            palace.recall("Lisbon trip budget")


def test_sqlite_has_no_database_mode(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "p.db")
    try:
        assert store.dense_rows(KEY, _unit(1), Scope(agent_id="a"), ANY, nearest=5) is None
        with pytest.raises(ConfigError) as raised:
            SemanticIndex(store, HashingEmbedder(dimensions=DIMS), index="database")
        assert raised.value.setting == "MINDPALACE_INDEX"
        assert raised.value.valid == ("auto", "process")
        auto = SemanticIndex(store, HashingEmbedder(dimensions=DIMS), database_rows=0)
        assert auto.in_database() is None
    finally:
        store.close()


def test_index_setting_names_its_valid_values() -> None:
    assert Settings.from_env({"MINDPALACE_INDEX": "Database"}).index == "database"
    assert Settings.from_env({}).index == "auto"
    with pytest.raises(ConfigError) as raised:
        Settings.from_env({"MINDPALACE_INDEX": "gpu"})
    assert raised.value.valid == ("auto", "process", "database")
    assert "MINDPALACE_INDEX" in str(raised.value) and "process" in str(raised.value)


def test_auto_chooses_the_database_from_its_size(pg: PostgresStore) -> None:
    embedder = HashingEmbedder(dimensions=DIMS)
    small = SemanticIndex(pg, embedder, database_rows=121)
    large = SemanticIndex(pg, embedder, database_rows=120)
    assert small.in_database() is None
    assert large.in_database() is not None
    # Database mode keeps no warm index: nothing to wait for.
    assert large.wait_for_warm() is None and not large.wait_for_graph()


# -- recall through the database -------------------------------------------------------------

TEXTS = [
    "Alice moved to Lisbon in spring",
    "the Lisbon office opens at nine",
    "Bob keeps the deploy scripts in the ops repo",
    "Carol reviewed the budget for the Lisbon trip",
    "the deploy froze on Friday night",
    "Alice and Carol planned the offsite agenda",
    "the budget review is due next week",
    "Bob fixed the deploy on Saturday morning",
]
QUERIES = ["Lisbon trip budget", "who fixed the deploy", "Alice offsite", "nothing about zebras"]


def _palace(url: str, agent: str, index: str) -> Palace:
    settings = Settings(agent_id=agent, index=index, signals=False)
    return Palace(
        url,
        agent_id=agent,
        settings=settings,
        embedder=HashingEmbedder(dimensions=64),
        clock=lambda: T0 + timedelta(days=30),
    )


@pytest.fixture
def shared_palace(postgres_url: str) -> str:
    for agent in ("ann", "bob"):
        with _palace(postgres_url, agent, "process") as palace:
            for n, text in enumerate(TEXTS):
                visibility = "shared" if (n + len(agent)) % 3 == 0 else "isolated"
                palace.add_messages([Message(text, speaker=agent)], session=f"{agent}-{n // 3}")
                palace.remember(f"{agent} note: {text}", visibility=visibility)
    return postgres_url


@pytest.mark.parametrize("walk", [False, True], ids=["exact", "hnsw"])
@pytest.mark.parametrize("agent", ["ann", "bob"])
def test_database_recall_answers_as_process_recall(
    shared_palace: str, agent: str, walk: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A palace small enough that the store's rows are every visible row
    (scored exactly, or walked in the HNSW index, then whole sessions
    read): the same hits, in the same order, with the same scores."""
    if walk:
        monkeypatch.setattr(pg_dense, "EXACT_ROWS", 0)
    with (
        _palace(shared_palace, agent, "process") as here,
        _palace(shared_palace, agent, "database") as there,
    ):
        assert here.semantic.in_database() is None
        assert there.semantic.in_database() is not None
        for query in QUERIES:
            a, b = here.recall(query, limit=10), there.recall(query, limit=10)
            assert (a.mode, a.notice) == (b.mode, b.notice)
            assert [h.score for h in a] == pytest.approx([h.score for h in b], abs=1e-5)
            # The same hits in the same order, but for rows whose cosines
            # tie ("ann note: X" and "bob note: X" differ only in words the
            # query lacks): numpy and pgvector sum a product in different
            # orders, a last-bit difference that may order such a pair
            # either way (the pair's scores are then each other's).
            assert {h.memory.id for h in a} == {h.memory.id for h in b}, query
            for mine, theirs in zip(a, b, strict=True):
                if mine.memory.id != theirs.memory.id:
                    assert mine.stage_scores["dense"] == pytest.approx(
                        theirs.stage_scores["dense"], abs=1e-6
                    ), query
            shown = {h.memory.agent_id for h in b if h.memory.visibility.value == "isolated"}
            assert shown <= {agent}


def test_a_database_mode_process_loads_no_vectors(
    shared_palace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Warm at once: recall, context and skills read the store per call;
    nothing loads the palace's vectors or texts into the process."""
    with _palace(shared_palace, "ann", "database") as palace:
        loads: list[str] = []
        for name in ("load_vectors", "load_texts", "load_mentions"):
            original = getattr(palace.store, name)

            def spy(
                *args: object, _name: str = name, _f: object = original, **kw: object
            ) -> object:
                loads.append(_name)
                return _f(*args, **kw)  # type: ignore[operator]

            monkeypatch.setattr(palace.store, name, spy)
        assert palace.recall("Lisbon trip budget")
        assert palace.context("who fixed the deploy").text
        palace.skills.activate("deploy scripts")
        assert loads == []


def test_database_recall_with_a_learned_scorer_and_modes(shared_palace: str) -> None:
    with (
        _palace(shared_palace, "ann", "process") as here,
        _palace(shared_palace, "ann", "database") as there,
    ):
        for mode in ("decision", "conversation"):
            a = here.recall("the deploy", limit=5, mode=mode)
            b = there.recall("the deploy", limit=5, mode=mode)
            assert [h.memory.id for h in a] == [h.memory.id for h in b]
        narrow = replace(there.recall_options, ann_candidates=2)
        there.recall_options = narrow
        assert there.recall("Lisbon", limit=3)  # few candidates: still answers
