"""The graph's rows keep their times to the second (entities and their
co-occurrence edges: an integral time takes half the bytes in a SQLite
record), while a memory keeps its own to the microsecond; on both backends."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.store import Store

AT = datetime(2026, 11, 27, 9, 15, 30, 250_000, tzinfo=timezone.utc)


def test_entities_and_edges_keep_whole_seconds(store: Store) -> None:
    now = [AT]
    palace = Palace(
        store=store,
        agent_id="ann",
        settings=Settings(agent_id="ann", embedder="none", signals=False),
        clock=lambda: now[0],
    )
    palace.remember("Kenji Sato owns the billing service. Maria Lopez reviews it on Friday.")
    now[0] = AT + timedelta(seconds=10.7)
    palace.remember_many([{"content": "Maria Lopez reviews the billing service with Kenji Sato."}])
    palace.graph.consolidate()
    with store._read() as cur:  # type: ignore[attr-defined]
        entities = store._exec(cur, "SELECT created_at, updated_at FROM entities").fetchall()  # type: ignore[attr-defined]
        edges = store._exec(cur, "SELECT updated_at FROM entity_edges").fetchall()  # type: ignore[attr-defined]
        memories = store._exec(cur, "SELECT created_at FROM memories").fetchall()  # type: ignore[attr-defined]
    assert entities and edges
    times = [t for row in entities for t in row] + [row[0] for row in edges]
    assert all(float(t) == int(t) for t in times)
    assert {int(t) for t in times} <= {int(AT.timestamp()), int(AT.timestamp() + 10.7)}
    assert int(AT.timestamp() + 10.7) in {int(t) for t in times}  # the later write moved them
    assert sorted(float(row[0]) % 1 for row in memories) == pytest.approx([0.25, 0.95], abs=1e-6)
