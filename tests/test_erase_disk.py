"""Nothing readable left: after an erasure and its cleanup (which runs in
the background once the erasure committed: the receipt says "pending", the
erasure log "done" when it finished), no byte of the palace's files
(SQLite: the database, its WAL and shared memory, the warm indexes saved
beside it) holds the erased text, in any form the index keeps it; on
PostgreSQL no table holds it and the touched tables hold no dead tuples.
"""

from __future__ import annotations

import secrets
import string
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import psycopg
import pytest

from mindpalace import Palace, Selection
from mindpalace.config import Settings
from mindpalace.retrieval import warm_cache
from mindpalace.store import words
from mindpalace.store.postgres import ERASED_TABLES


def _secret() -> str:
    """24 random letters, mixed case, so the lower-case and stemmed forms differ."""
    letters = "".join(secrets.choice(string.ascii_letters) for _ in range(22))
    return "Qx" + letters


def _forms(secret: str) -> list[bytes]:
    """The secret as written, folded, and as the keyword indexes store it."""
    forms = {secret, secret.lower(), *words.terms(secret)}
    return sorted(f.encode("utf-8") for f in forms)


def _files(folder: Path) -> Iterator[Path]:
    return (p for p in sorted(folder.rglob("*")) if p.is_file())


def _holding(folder: Path, secret: str) -> list[str]:
    """The files under ``folder`` that hold a form of ``secret``."""
    forms = _forms(secret)
    return [
        str(p.relative_to(folder))
        for p in _files(folder)
        if any(form in p.read_bytes() for form in forms)
    ]


def _fill(palace: Palace, secret: str) -> str:
    """A secret in two versions of one memory, in the words of others, and
    in a conversation turn's successor's context; the newest version's id."""
    for n in range(30):
        palace.remember(f"Unrelated note number {n} about the garden and the weather")
    old = palace.remember(f"The vault word is {secret} for the north door", tags=["vault"])
    new = palace.update(old.id, content=f"The vault word is now {secret}, north door")
    palace.recall(f"vault word {secret}")
    palace.feedback(new.id, useful=True)
    index = palace.engine.semantic.wait_for_warm()
    assert index is not None
    assert warm_cache.save_text(palace.store, index)  # the warm file beside it
    return new.id


def cleaned_up(palace: Palace, *, within: float = 60.0) -> None:
    """Wait until the erasure log says every erasure's cleanup is done."""
    deadline = time.monotonic() + within
    while True:
        receipts = palace.erasures()
        if receipts and all(r.cleanup == "done" for r in receipts):
            return
        assert time.monotonic() < deadline, [r.cleanup for r in receipts]
        time.sleep(0.02)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    place = tmp_path / "palace"
    place.mkdir()
    return place


def _open(folder: Path, agent: str = "alice") -> Palace:
    return Palace(folder / "memories.db", agent_id=agent, settings=Settings(agent_id=agent))


@pytest.mark.parametrize("how", ["hard forget of the newest version", "erase of the agent"])
def test_no_byte_of_the_erased_text_is_left_in_the_files(folder: Path, how: str) -> None:
    secret = _secret()
    palace = _open(folder)
    try:
        newest = _fill(palace, secret)
        _open_bob = palace.for_agent("bob")
        _open_bob.remember("Bob keeps his own notes about the garden")
        held = _holding(folder, secret)
        assert "memories.db-warm/text.bin" in held  # the scan sees what is there
        assert any(name.startswith("memories.db") and "warm" not in name for name in held)
        if how.startswith("hard"):
            palace.forget(newest, hard=True)
        else:
            assert palace.erase(Selection.agent(), confirm=True).cleanup == "pending"
        cleaned_up(palace)
        assert _holding(folder, secret) == []  # open: WAL truncated, pages zeroed
        wal = folder / "memories.db-wal"
        # Truncated; then the cleanup wrote its own mark (a page or two).
        assert not wal.exists() or wal.stat().st_size < 3 * 4096
        assert palace.store.integrity_check() == "ok"  # type: ignore[attr-defined]
    finally:
        palace.close()
    assert _holding(folder, secret) == []
    with _open(folder, "bob") as bob:  # the palace still works
        assert [m.content for m in bob.memories()] == ["Bob keeps his own notes about the garden"]


def test_secure_delete_is_on_for_every_connection(folder: Path) -> None:
    with _open(folder) as palace:
        assert palace.store._conn.execute("PRAGMA secure_delete").fetchone()[0] == 1  # type: ignore[attr-defined]


def test_a_stale_warm_index_is_never_saved_after_an_erasure(folder: Path) -> None:
    with _open(folder) as palace:
        memory = palace.remember("Saved warm words are gone after an erasure")
        index = palace.engine.semantic.wait_for_warm()
        assert index is not None
        palace.forget(memory.id, hard=True)
        assert not warm_cache.save_text(palace.store, index)
        assert not (folder / "memories.db-warm" / "text.bin").exists()


def test_postgres_keeps_no_trace_in_tables_or_dead_tuples(postgres_url: str) -> None:
    url = postgres_url
    with Palace(url, agent_id="alice", settings=Settings(agent_id="alice")) as palace:
        _erase_on_postgres(palace, url)


def _pg_holding(url: str, secret: str) -> list[str]:
    """The tables of the palace at ``url`` that hold a form of ``secret``."""
    with psycopg.connect(url, autocommit=True) as conn:
        tables = [
            str(r[0])
            for r in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
            ).fetchall()
        ]
        found = []
        for table in tables:
            for form in _forms(secret):
                row = conn.execute(
                    f"SELECT COUNT(*) FROM {table} t WHERE t::text LIKE %s",
                    (f"%{form.decode()}%",),
                ).fetchone()
                if row and row[0]:
                    found.append(table)
        return sorted(set(found))


def _erase_on_postgres(palace: Palace, url: str) -> None:
    secret = _secret()
    old = palace.remember(f"The vault word is {secret} for the north door", tags=["vault"])
    newest = palace.update(old.id, content=f"The vault word is now {secret}, north door")
    palace.recall(f"vault word {secret}")
    palace.feedback(newest.id, useful=True)

    def holding() -> list[str]:
        return _pg_holding(url, secret)

    assert "memories" in holding()
    palace.forget(newest.id, hard=True)
    cleaned_up(palace)
    assert holding() == []
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pgstattuple")
        for table in ERASED_TABLES:
            dead = conn.execute("SELECT dead_tuple_count FROM pgstattuple(%s)", (table,)).fetchone()
            assert dead is not None and dead[0] == 0, table


# -- retention ---------------------------------------------------------------------

_LONG_AGO = datetime(2020, 1, 1, tzinfo=timezone.utc)


def _old_secrets(palace: Palace, secret: str) -> str:
    """An old chat turn and an old note (two versions) holding ``secret``,
    recalled and judged, beside fresh memories; the newest version's id."""
    for n in range(10):
        palace.remember(f"Fresh note number {n} about the garden", store="episodic")
    palace.remember(
        f"Ann: the gate code is {secret}",
        store="episodic",
        category="conversation",
        session="s-1",
        created_at=_LONG_AGO,
    )
    old = palace.remember(f"The vault word is {secret}", store="episodic", created_at=_LONG_AGO)
    newer = palace.update(old.id, content=f"The vault word is still {secret}")
    palace.recall(f"vault word {secret}")
    palace.feedback(newer.id, useful=True)
    return newer.id


def test_no_byte_is_left_after_a_retention_run(folder: Path) -> None:
    secret = _secret()
    with _open(folder) as palace:
        newest = _old_secrets(palace, secret)
        # An update is a new version written now: age it, as time would.
        with palace.store._write() as cur:  # type: ignore[attr-defined]
            palace.store._exec(  # type: ignore[attr-defined]
                cur, "UPDATE memories SET created_at = ? WHERE id = ?", (1577836800.0, newest)
            )
        index = palace.engine.semantic.wait_for_warm()
        assert index is not None and warm_cache.save_text(palace.store, index)
        assert "memories.db-warm/text.bin" in _holding(folder, secret)
        palace.retention.set(30, store="episodic")
        receipt = palace.retention.apply(confirm=True)
        assert receipt.counts.memories == 3  # the turn and both versions of the note
        cleaned_up(palace)
        assert _holding(folder, secret) == []  # open: WAL truncated, pages zeroed
        assert len(palace.memories()) == 10
    assert _holding(folder, secret) == []


def test_postgres_keeps_no_trace_after_a_retention_run(postgres_url: str) -> None:
    secret = _secret()
    with Palace(postgres_url, agent_id="alice", settings=Settings(agent_id="alice")) as palace:
        newest = _old_secrets(palace, secret)
        with palace.store._write() as cur:  # type: ignore[attr-defined]
            palace.store._exec(  # type: ignore[attr-defined]
                cur, "UPDATE memories SET created_at = ? WHERE id = ?", (1577836800.0, newest)
            )
        assert "memories" in _pg_holding(postgres_url, secret)
        palace.retention.set(30, store="episodic")
        assert palace.retention.apply(confirm=True).counts.memories == 3
        cleaned_up(palace)
        assert _pg_holding(postgres_url, secret) == []


def test_the_log_and_doctor_say_when_the_cleanup_is_done(folder: Path) -> None:
    with _open(folder) as palace:
        palace.remember("A note to erase")
        receipt = palace.erase(Selection.agent(), confirm=True)
        assert receipt.cleanup == "pending" and receipt.to_dict()["cleanup"] == "pending"
        cleaned_up(palace)
        found = {c.name: c for c in palace.doctor().checks}["erasure_cleanup"]
        assert found.ok and found.detail == "done after every erasure"
        # As if the process that erased had stopped before its cleanup ran.
        with palace.store._write() as cur:  # type: ignore[attr-defined]
            cur.execute("UPDATE palace_meta SET value = 1 WHERE key = 'erasure_cleanup_from'")
        assert [r.cleanup for r in palace.erasures()] == ["pending"]
        found = {c.name: c for c in palace.doctor().checks}["erasure_cleanup"]
        assert found.ok and "1 erasures' cleanup pending" in found.detail
        palace.remember("Another note")
        palace.erase(Selection.agent(), confirm=True)  # cleans up after both
        cleaned_up(palace)
        assert [r.cleanup for r in palace.erasures()] == ["done", "done"]
