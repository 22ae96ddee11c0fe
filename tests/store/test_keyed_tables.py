"""Migration 29: SQLite keeps mentions and co-occurrence edges in their
keys' order (WITHOUT ROWID), so the key index beside each table goes. A
palace of an older release keeps every row, recalls the same and erases
as before once this version opens it."""

from __future__ import annotations

import dataclasses
import sqlite3
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import datetime, timezone
from pathlib import Path

import pytest

from mindpalace import Palace, Selection
from mindpalace.config import Settings
from mindpalace.conversations import Message
from mindpalace.embed.hashing import HashingEmbedder
from mindpalace.store.migrations import latest_version
from mindpalace.store.sqlite import SQLiteStore

NOTES = [
    "Kenji Sato owns the billing service with Maria Lopez.",
    "Maria Lopez moved the Friday standup to Room Alder.",
    "Aisha Khan reviews every release of the billing service.",
    "Kenji Sato and Aisha Khan fixed the invoice export on Tuesday.",
    "Room Alder has the projector Maria Lopez booked.",
]


NOW = datetime(2026, 11, 27, 9, 0, tzinfo=timezone.utc)


def _palace(path: Path) -> Palace:
    # One fixed "now": the recency prior moves with a real clock.
    return Palace(
        path,
        agent_id="ann",
        settings=Settings(agent_id="ann", signals=False),
        embedder=HashingEmbedder(dimensions=32),
        clock=lambda: NOW,
    )


def _rows(path: Path) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    db = sqlite3.connect(path)
    try:
        mentions = db.execute(
            "SELECT memory_seq, entity_seq, surface, count, fact FROM mentions ORDER BY 1, 2"
        ).fetchall()
        edges = db.execute(
            "SELECT src_seq, dst_seq, count, weight, updated_at FROM entity_edges ORDER BY 1, 2"
        ).fetchall()
    finally:
        db.close()
    return mentions, edges


def _layout(path: Path) -> dict[str, str]:
    """Each table's and index's definition by name (mentions and edges)."""
    db = sqlite3.connect(path)
    try:
        return {
            name: sql or ""
            for name, sql in db.execute(
                "SELECT name, sql FROM sqlite_master WHERE tbl_name IN ('mentions', 'entity_edges')"
            )
        }
    finally:
        db.close()


def _unhashed(value: object) -> object:
    """``value`` with every memory's content hash left out."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: _unhashed(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if f.name != "content_hash"
        }
    if isinstance(value, (list, tuple)):
        return [_unhashed(v) for v in value]
    if isinstance(value, dict):
        return {k: _unhashed(v) for k, v in value.items()}
    return value


def _keyed(layout: dict[str, str]) -> None:
    assert "WITHOUT ROWID" in layout["mentions"]
    assert "WITHOUT ROWID" in layout["entity_edges"]
    assert not any(name.startswith("sqlite_autoindex") for name in layout)
    assert {"mentions_entity_memory", "mentions_fact", "entity_edges_dst"} <= set(layout)


def test_a_new_palace_keeps_mentions_and_edges_by_key(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    with _palace(path) as palace:
        palace.remember_many([{"content": text, "category": "fact"} for text in NOTES])
    _keyed(_layout(path))
    mentions, edges = _rows(path)
    assert mentions and edges
    assert any(fact == 1 for *_, fact in mentions)


@pytest.fixture
def schema_28(
    opened_before: Callable[[int], AbstractContextManager[None]],
) -> Callable[[], AbstractContextManager[None]]:
    """A context inside which palaces are opened as schema 28 left them."""
    return lambda: opened_before(29)


def test_an_older_palace_keeps_every_row_and_recalls_the_same(
    tmp_path: Path, schema_28: Callable[[], AbstractContextManager[None]]
) -> None:
    path = tmp_path / "old.db"
    with schema_28():
        with _palace(path) as palace:
            palace.remember_many([{"content": text, "category": "fact"} for text in NOTES])
            palace.add_messages([Message("Kenji Sato asked Maria Lopez about Room Alder.")])
            hits_before = [(h.memory.id, h.score) for h in palace.recall("Maria Lopez", limit=5)]
            related_before = palace.graph.neighbourhood("Kenji Sato")
        layout = _layout(path)
        assert "WITHOUT ROWID" not in layout["mentions"]
        assert "sqlite_autoindex_entity_edges_1" in layout
    rows_before = _rows(path)
    assert rows_before[0] and rows_before[1]

    SQLiteStore(path).close()  # opened by this version: migrated
    _keyed(_layout(path))
    assert _rows(path) == rows_before
    db = sqlite3.connect(path)
    try:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("PRAGMA foreign_key_check").fetchall() == []
        version = db.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0]
    finally:
        db.close()
    assert version == latest_version()

    with _palace(path) as palace:
        hits = [(h.memory.id, h.score) for h in palace.recall("Maria Lopez", limit=5)]
        assert hits == hits_before
        # the same neighbourhood; its memories' content hashes are cut to
        # 32 digits by schema 30 (tests/store/test_short_keys.py)
        assert _unhashed(palace.graph.neighbourhood("Kenji Sato")) == _unhashed(related_before)
        # deleting still cascades into both tables
        first = palace.memories(limit=100)[0]
        palace.forget(first.id, hard=True)
    mentions, _ = _rows(path)
    db = sqlite3.connect(path)
    try:
        seq = db.execute("SELECT seq FROM memories WHERE id = ?", (first.id,)).fetchone()
    finally:
        db.close()
    assert seq is None
    assert len(mentions) < len(rows_before[0])


def _copies(folder: Path, text: bytes) -> int:
    """How often ``text`` occurs in the files under ``folder``, the log
    copied into the database first."""
    for wal in folder.glob("*.db"):
        db = sqlite3.connect(wal)
        try:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            db.close()
    return sum(p.read_bytes().count(text) for p in sorted(folder.rglob("*")) if p.is_file())


def test_an_erased_name_leaves_no_copy_from_the_rebuild(
    tmp_path: Path, schema_28: Callable[[], AbstractContextManager[None]]
) -> None:
    # The rebuild copies every mention (the name as written) into a new
    # table and drops the old one: the old pages must not keep the name
    # for an erasure to miss.
    folder = tmp_path / "palace"
    folder.mkdir()
    path = folder / "old.db"
    name = "Zebulon Quartermaine"
    with schema_28(), _palace(path) as palace:
        palace.remember_many([{"content": text, "category": "fact"} for text in NOTES])
        # enough mentions to fill pages of their own
        palace.remember_many(
            [
                {"content": f"{name} keeps spare key {n} with Maria Lopez in Room {n}."}
                for n in range(300)
            ]
        )
        secret = palace.remember(f"{name} keeps the spare keys with Maria Lopez.")
    copies = _copies(folder, name.encode())
    assert copies > 0
    SQLiteStore(path).close()  # migrated
    # the dropped tables' pages were zeroed: no more copies than before
    assert _copies(folder, name.encode()) <= copies
    with _palace(path) as palace:
        assert [e.name for e in palace.graph.entities() if e.name == name] == [name]
        receipt = palace.erase(Selection.entity(name), confirm=True)
        assert receipt.counts
        deadline = time.monotonic() + 60
        while not all(r.cleanup == "done" for r in palace.erasures()):
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert secret.id not in {m.id for m in palace.memories(limit=100)}
    forms = [name.encode(), name.lower().encode(), b"zebulon", b"quartermaine"]
    holding = [
        p.name
        for p in sorted(folder.rglob("*"))
        if p.is_file() and any(f in p.read_bytes() for f in forms)
    ]
    assert holding == []
