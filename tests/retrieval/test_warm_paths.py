"""Recall through the warm in-memory indexes (keyword postings, entity
mentions) answers exactly as recall through the store's SQL does, under
every scope; and PostgreSQL, whose own full text stems differently, ranks
exactly as SQLite once warm."""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import pytest

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.embed import HashingEmbedder
from mindpalace.models import HitList
from mindpalace.store.sqlite import SQLiteStore

PEOPLE = ["Ana Ruiz", "Ben Okafor", "Carla Diaz", "Project Falcon", "the Billing service"]
TOPICS = (
    "deploy rollback audit invoices kafka postgres migration freeze review queue "
    "latency dashboards incident postmortem budget hiring roadmap"
).split()
AGENTS = [("ann", ("ops",)), ("bob", ("ops",)), ("cy", ("sales",))]
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)
QUERIES = [
    "what did we decide about the Billing service deploy",
    "Ana Ruiz invoices audit",
    "kafka latency incident",
    "Project Falcon roadmap review",
    "postgres migration rollback plan",
    "hiring budget",
    "Carla Diaz",
]


def _records(seed: int = 3) -> list[tuple[str, dict[str, object]]]:
    rng = random.Random(seed)
    out = []
    for i in range(120):
        agent = AGENTS[i % len(AGENTS)][0]
        words = " ".join(rng.choice(TOPICS) for _ in range(rng.randint(4, 14)))
        who = rng.choice(PEOPLE)
        visibility = rng.choice(["isolated", "isolated", "shared", "group"])
        fields: dict[str, object] = {
            "content": f"{who} said {words}.",
            "visibility": visibility,
            "tags": rng.sample(TOPICS, rng.randint(0, 2)),
        }
        if visibility == "group":
            fields["group"] = dict(AGENTS)[agent][0]
        if i % 4 == 0:
            fields["session"] = f"s{i // 12}"
        out.append((agent, fields))
    return out


def _fill(make: Callable[[str, tuple[str, ...]], Palace]) -> dict[str, Palace]:
    palaces = {agent: make(agent, groups) for agent, groups in AGENTS}
    by_agent: dict[str, list[dict[str, object]]] = {}
    for agent, fields in _records():
        by_agent.setdefault(agent, []).append(fields)
    for agent, records in by_agent.items():
        palaces[agent].remember_many(records)
    return palaces


def _shape(hits: HitList) -> list[tuple[str, float, tuple[str, ...]]]:
    return [(h.memory.content, round(h.score, 6), h.gates) for h in hits]


def _cold(palace: Palace) -> None:
    """Drop the warm keyword and mention indexes: recall asks the store."""
    index = palace.semantic.dense()
    assert index is not None and index.keyword is not None and index.mentions is not None
    index.keyword = None
    index.mentions = None


def test_warm_indexes_answer_as_the_store_does(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "warm.db")
    embedder = HashingEmbedder()

    def make(agent: str, groups: tuple[str, ...]) -> Palace:
        settings = Settings(agent_id=agent, signals=False)
        # One fixed "now": the recency prior moves with the clock, and on a
        # real one the two passes' scores differed in the tenth digit, which
        # rounding to six decimals sometimes showed.
        return Palace(
            store=store,
            agent_id=agent,
            groups=groups,
            settings=settings,
            embedder=embedder,
            clock=lambda: NOW,
        )

    palaces = _fill(make)
    for palace in palaces.values():
        # A process's first recall on SQLite asks FTS5; the second starts
        # building the warm indexes in the background.
        first = palace.semantic.dense()
        assert first is not None and first.keyword is None and first.mentions is None
        second = palace.semantic.wait_for_warm()
        assert second is not None and second.keyword is not None and second.mentions is not None
    warm = {
        (agent, query): _shape(palace.recall(query, limit=10))
        for agent, palace in palaces.items()
        for query in QUERIES
    }
    assert any(warm.values())
    for palace in palaces.values():
        _cold(palace)
    cold = {
        (agent, query): _shape(palace.recall(query, limit=10))
        for agent, palace in palaces.items()
        for query in QUERIES
    }
    assert warm == cold
    store.close()


def test_postgres_ranks_as_sqlite_when_warm(
    backend: str, make_palace: Callable[..., Palace], tmp_path: Path
) -> None:
    if backend != "postgres":
        pytest.skip("compares PostgreSQL with SQLite; runs once, on the postgres store")
    embedder = HashingEmbedder()
    lite_store = SQLiteStore(tmp_path / "lite.db")

    def on_postgres(agent: str, groups: tuple[str, ...]) -> Palace:
        settings = Settings(agent_id=agent, signals=False)
        return make_palace(agent, groups=groups, settings=settings, embedder=embedder)

    def on_sqlite(agent: str, groups: tuple[str, ...]) -> Palace:
        settings = Settings(agent_id=agent, signals=False)
        return Palace(
            store=lite_store, agent_id=agent, groups=groups, settings=settings, embedder=embedder
        )

    pg, lite = _fill(on_postgres), _fill(on_sqlite)
    for agent, _ in AGENTS:
        for query in QUERIES:
            a = _shape(pg[agent].recall(query, limit=10))
            b = _shape(lite[agent].recall(query, limit=10))
            # Same memories in the same order; scores agree but for the
            # recency prior (the two palaces were written seconds apart).
            assert [c for c, _, _ in a] == [c for c, _, _ in b], (agent, query)
            assert [s for _, s, _ in a] == pytest.approx([s for _, s, _ in b], abs=1e-4)
    lite_store.close()


def test_warm_indexes_follow_writes_and_archives(tmp_path: Path) -> None:
    """Rows written after the warm indexes were built are searchable at once;
    an archive (an epoch change) rebuilds them."""
    store = SQLiteStore(tmp_path / "follow.db")
    palace = Palace(store=store, settings=Settings(signals=False), embedder=HashingEmbedder())
    palace.remember("the kafka brokers restart nightly")
    palace.semantic.wait_for_warm()
    later = palace.remember("Zanzibar gateway timeouts after the postgres upgrade")
    hits = palace.recall("zanzibar gateway timeouts")
    assert hits[0].memory.id == later.id
    index = palace.semantic.dense()
    assert index is not None and index.keyword is not None and len(index.keyword) == 2
    assert index.mentions is not None
    palace.forget(later.id)
    assert all(h.memory.id != later.id for h in palace.recall("zanzibar gateway timeouts"))
    store.close()
