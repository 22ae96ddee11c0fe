"""A writer on PostgreSQL waits for the palace's write lock ``busy_timeout``
seconds, then fails, unless an erasure holds it: erasing an agent of a
million memories holds it for minutes in one transaction, and a writer
waits through it instead of failing."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest

from mindpalace import BusyError, Palace
from mindpalace.config import Settings
from mindpalace.store.postgres import PostgresStore

_TIMEOUT = 0.3


@pytest.mark.parametrize("erasing", [True, False], ids=["erasure", "another writer"])
def test_a_writer_waits_through_an_erasure_not_through_another_writer(
    postgres_url: str, erasing: bool
) -> None:
    store = PostgresStore(postgres_url, busy_timeout=_TIMEOUT)
    try:
        palace = Palace(
            store=store, agent_id="ann", settings=Settings(agent_id="ann", embedder="none")
        )
        palace.remember("written before")
        holder = psycopg.connect(postgres_url)  # a transaction holding the palace
        holder.execute("SELECT pg_advisory_xact_lock(%s)", (PostgresStore._WRITE_LOCK,))
        if erasing:
            holder.execute("SELECT pg_advisory_xact_lock(%s)", (PostgresStore._ERASING_LOCK,))
        outcome: dict[str, object] = {}

        def write() -> None:
            start = time.monotonic()
            try:
                palace.remember("written while the palace was held")
                outcome["written"] = time.monotonic() - start
            except BusyError as exc:
                outcome["error"] = exc

        writer = threading.Thread(target=write)
        writer.start()
        writer.join(4 * _TIMEOUT)  # the holder keeps the lock past the timeout
        holder.commit()
        holder.close()
        writer.join(30)
        assert not writer.is_alive()
        if erasing:
            assert "error" not in outcome
            assert float(outcome["written"]) >= 4 * _TIMEOUT  # type: ignore[arg-type]
            assert len(palace.memories(limit=10)) == 2
        else:
            assert isinstance(outcome.get("error"), BusyError)
            assert len(palace.memories(limit=10)) == 1
    finally:
        store.close()


def test_an_erasure_marks_its_transaction_for_waiting_writers(postgres_url: str) -> None:
    """While an erasure's transaction runs (held here at its receipt's
    insert by a lock on the erasure log), its mark is seen by writers."""
    store = PostgresStore(postgres_url)
    try:
        palace = Palace(
            store=store, agent_id="ann", settings=Settings(agent_id="ann", embedder="none")
        )
        memory = palace.remember("a note to erase")
        holder = psycopg.connect(postgres_url)
        holder.execute("LOCK TABLE erasures IN EXCLUSIVE MODE")
        forgetting = threading.Thread(
            target=palace.forget, args=(memory.id,), kwargs={"hard": True}
        )
        forgetting.start()
        seen = False
        with psycopg.connect(postgres_url, autocommit=True) as probe:
            deadline = time.monotonic() + 30
            while not seen and time.monotonic() < deadline:
                row = probe.execute(
                    "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory'"
                    " AND granted AND objid = %s)",
                    (PostgresStore._ERASING_LOCK,),
                ).fetchone()
                seen = bool(row and row[0])
        holder.commit()
        holder.close()
        forgetting.join(30)
        assert seen and not forgetting.is_alive()
        assert palace.memories(limit=10) == []
    finally:
        store.close()
