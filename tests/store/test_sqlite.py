"""SQLite specifics: migrations from an empty file, WAL, refusal of newer schemas."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from mindpalace.errors import ConfigError, StorageError
from mindpalace.store.migrations import MIGRATIONS, latest_version
from mindpalace.store.sqlite import SQLiteStore


def test_migrates_an_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    store = SQLiteStore(path)
    assert store.schema_version() == latest_version()
    store.close()
    con = sqlite3.connect(path)
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"memories", "memory_tags", "memories_fts", "schema_migrations"} <= tables
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    versions = [r[0] for r in con.execute("SELECT version FROM schema_migrations ORDER BY 1")]
    assert versions == [m.version for m in MIGRATIONS]  # every step, in order
    con.close()


def test_reopening_does_not_reapply(tmp_path: Path) -> None:
    path = tmp_path / "again.db"
    SQLiteStore(path).close()
    SQLiteStore(path).close()
    con = sqlite3.connect(path)
    assert con.execute("SELECT COUNT(*) FROM schema_migrations").fetchone()[0] == len(MIGRATIONS)


def test_refuses_a_newer_schema(tmp_path: Path) -> None:
    path = tmp_path / "future.db"
    SQLiteStore(path).close()
    con = sqlite3.connect(path)
    con.execute("INSERT INTO schema_migrations VALUES (999, 'future', 0)")
    con.commit()
    con.close()
    with pytest.raises(StorageError, match="newer"):
        SQLiteStore(path)


def test_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "junk.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StorageError, match="cannot use"):
        SQLiteStore(path)


def test_creates_parent_directories_only_when_told(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "palace.db"
    with pytest.raises(ConfigError, match=f"the folder {tmp_path / 'a' / 'b'} does not exist"):
        SQLiteStore(path)
    assert not (tmp_path / "a").exists()
    SQLiteStore(path, create_folder=True).close()  # the per-user default palace
    assert path.exists()


def test_integrity_check_ok(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "ok.db")
    assert store.integrity_check() == "ok"
    store.close()
