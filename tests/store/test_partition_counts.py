"""SQLite's keyword search sums each text partition's rows and tokens,
which the triggers keep on every write (and a migration counts for an
older palace), instead of scanning every row the caller sees: the counts
always equal a recount, and searches score as with counting."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.conversations import Message
from mindpalace.embed import HashingEmbedder
from mindpalace.models import RecallFilters, Scope
from mindpalace.retrieval.sparse import query_terms
from mindpalace.store import core
from mindpalace.store.fts5_bm25 import tokens_in
from mindpalace.store.migrations import Migration
from mindpalace.store.sqlite import SQLiteStore

SCOPE = "agent_id, visibility, group_name, channel"


def _counts(path: Path) -> dict[tuple[str, ...], tuple[int, int]]:
    """Each partition's kept (rows, tokens), those with a row."""
    db = sqlite3.connect(path)
    try:
        return {
            tuple(row[:4]): (int(row[4]), int(row[5]))
            for row in db.execute(f"SELECT {SCOPE}, row_count, token_count FROM memories_fts_parts")
            if row[4]
        }
    finally:
        db.close()


def _recount(path: Path) -> dict[tuple[str, ...], tuple[int, int]]:
    """Each partition's rows and tokens, counted from the rows and the index."""
    db = sqlite3.connect(path)
    try:
        found: dict[tuple[str, ...], list[bytes]] = {}
        for *key, size in db.execute(
            f"SELECT {', '.join('m.' + c for c in SCOPE.split(', '))}, d.sz FROM memories m"
            " JOIN memories_fts_scoped_docsize d ON d.id = m.seq"
        ):
            found.setdefault(tuple(key), []).append(bytes(size))
        return {key: (len(sizes), tokens_in(sizes)) for key, sizes in found.items()}
    finally:
        db.close()


def _palace(path: Path, agent: str, **kwargs: object) -> Palace:
    return Palace(
        store=SQLiteStore(path),
        settings=Settings(agent_id=agent, signals=False),
        embedder=HashingEmbedder(dimensions=32),
        agent_id=agent,
        **kwargs,  # type: ignore[arg-type]
    )


def _writes(path: Path) -> None:
    """Writes of every kind that adds, changes or removes rows."""
    with _palace(path, "ann") as ann, _palace(path, "bob", groups=["ops"]) as bob:
        kept = ann.remember_many(
            [
                {"content": f"kiwi harvest note {i} in the orchard", "visibility": v}
                for i, v in enumerate(["isolated", "shared", "isolated", "shared"])
            ]
        )
        bob.remember(
            "Ops rotation: plum team, Ünïcode wörds and 日本語", visibility="group", group="ops"
        )
        bob.remember("a private plum list", title="Plums", tags=["fruit", "list"])
        ann.add_messages(
            [Message(content="kiwi question about the orchard", role="user", session="s1")]
        )
        ann.update(kept[0].id, content="kiwi harvest note, corrected and much longer than before")
        ann.forget(kept[1].id)  # archived: still counted (the index holds it)
        ann.forget(kept[2].id, hard=True)  # gone, with its older versions
        ann.for_agent("ann", channel="peer-1").remember("kiwi for the peer channel")


def test_the_counts_follow_every_write(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    _writes(path)
    assert _counts(path) == _recount(path)
    assert len(_counts(path)) >= 4  # several partitions: the test can fail


def test_searches_score_as_with_counting_the_rows(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    _writes(path)
    store = SQLiteStore(path)
    try:
        for scope in (Scope(agent_id="ann"), Scope(agent_id="bob", groups=("ops",))):
            with store._read() as cur:
                total, _, seen, tokens = store._scope_figures(cur, scope)
            db = sqlite3.connect(path)
            try:
                want_total = db.execute("SELECT COUNT(*) FROM memories").fetchone()[0]
            finally:
                db.close()
            assert total == want_total and 0 < seen < total and tokens > seen
            found = store.search_text(
                query_terms("kiwi orchard plum"), scope, RecallFilters(), limit=10
            )
            assert found  # scored through the scope's figures
    finally:
        store.close()


def test_an_older_palace_is_counted_when_opened(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    older_migrations: Callable[[int], tuple[Migration, ...]],
) -> None:
    path = tmp_path / "p.db"
    before = older_migrations(23)
    with monkeypatch.context() as old:
        old.setattr(core, "MIGRATIONS", tuple(before))
        old.setattr(core, "latest_version", lambda: before[-1].version)
        with _palace(path, "ann") as ann:
            ann.remember_many(
                [{"content": f"pear note {i}", "visibility": "shared"} for i in range(5)]
            )
            ann.remember("a private pear", title="Pear")
        db = sqlite3.connect(path)
        try:
            columns = [r[1] for r in db.execute("PRAGMA table_info(memories_fts_parts)")]
        finally:
            db.close()
        assert "row_count" not in columns
    SQLiteStore(path).close()  # opened by this version: migrated
    assert _counts(path) == _recount(path)
    assert sum(rows for rows, _ in _counts(path).values()) == 6
