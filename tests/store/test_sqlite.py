"""SQLite specifics: migrations from an empty file, WAL, refusal of newer schemas."""

from __future__ import annotations

import shutil
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from mindpalace import Palace
from mindpalace.config import Settings
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
    assert {"memories", "memory_tags", "memories_fts_scoped", "schema_migrations"} <= tables
    assert "memories_fts" not in tables  # one keyword index, partitioned by scope
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


def _in_the_file_alone(path: Path, copy: Path, text: str) -> bool:
    """Whether a copy of the database file without its log holds ``text``
    (what a checkpoint copied into the file, not what only the log holds)."""
    shutil.copyfile(path, copy)
    con = sqlite3.connect(copy)
    try:
        found = con.execute("SELECT COUNT(*) FROM memories WHERE content = ?", (text,))
        return int(found.fetchone()[0]) == 1
    except sqlite3.DatabaseError:  # not even the tables in the file yet, or a copy torn mid-write
        return False
    finally:
        con.close()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{copy}{suffix}").unlink(missing_ok=True)


def _wait_until_in_the_file_alone(path: Path, copy: Path, text: str) -> None:
    deadline = time.monotonic() + 30
    while not _in_the_file_alone(path, copy, text):
        assert time.monotonic() < deadline, "the background copy never came"
        time.sleep(0.01)


def test_the_log_is_copied_into_the_file_beside_the_writer(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    reader = sqlite3.connect(path)  # another connection: closing is not the last
    palace = Palace(path, settings=Settings(embedder="hashing"))
    try:
        # The writer's commits never copy the log themselves.
        assert palace.store._conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
        palace.remember("The boiler was serviced on Monday")
        _wait_until_in_the_file_alone(
            path, tmp_path / "copy.db", "The boiler was serviced on Monday"
        )
        checkpoints = palace.store._checkpoints
        assert checkpoints is not None and checkpoints.copies >= 1
    finally:
        palace.close()
        reader.close()


def test_closing_copies_what_the_thread_had_not_and_stops_it(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    palace = Palace(path, settings=Settings(embedder="hashing"))
    reader = sqlite3.connect(path)  # has the file open (read once, holding nothing)
    reader.execute("SELECT COUNT(*) FROM sqlite_master").fetchall()
    checkpoints = palace.store._checkpoints
    assert checkpoints is not None
    text = "The gate code changed in spring"
    with checkpoints.exclusive():  # the thread cannot copy before the close
        copied = checkpoints.copies  # the schema's writes may have been copied already
        palace.remember(text)
        thread = checkpoints._thread
        assert thread is not None and thread.is_alive()
        assert not _in_the_file_alone(path, tmp_path / "copy.db", text)
        closing = threading.Thread(target=palace.close)
        closing.start()
        deadline = time.monotonic() + 30
        while not checkpoints._stop.is_set():  # the close has begun
            assert time.monotonic() < deadline
            time.sleep(0.01)
    closing.join(timeout=30)
    assert not closing.is_alive() and not thread.is_alive()
    assert checkpoints.copies == copied  # the thread, stopped, copied nothing more
    # Another connection still has the file open, so SQLite itself did not
    # copy the log at the close: the store did.
    assert _in_the_file_alone(path, tmp_path / "copy.db", text)
    reader.close()


def test_a_store_that_only_reads_starts_no_thread(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    SQLiteStore(path).close()
    store = SQLiteStore(path)
    try:
        checkpoints = store._checkpoints
        assert checkpoints is not None and checkpoints._thread is None
        store.schema_version()
        assert checkpoints._thread is None
    finally:
        store.close()
    store.close()  # idempotent


def test_the_log_is_copied_into_the_same_file_after_a_change_of_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    palace = Palace("p.db", settings=Settings(embedder="hashing"))  # a relative path
    try:
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        monkeypatch.chdir(elsewhere)
        text = "The shed key hangs by the door"
        palace.remember(text)
        _wait_until_in_the_file_alone(tmp_path / "p.db", tmp_path / "copy.db", text)
        assert list(elsewhere.iterdir()) == []  # no palace opened in the new folder
    finally:
        palace.close()


def test_a_palace_removed_while_open_is_not_made_again(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    Palace(path, settings=Settings(embedder="hashing")).close()
    palace = Palace(path, settings=Settings(embedder="hashing"))
    try:
        checkpoints = palace.store._checkpoints
        assert checkpoints is not None and checkpoints._thread is None  # nothing written yet
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        palace.remember("The attic light is on a timer")  # into the removed file
        thread = checkpoints._thread
        assert thread is not None
        thread.join(timeout=30)  # it found no file to open, and ended
        assert not thread.is_alive()
        assert not path.exists()
    finally:
        palace.close()
    assert not path.exists()


def test_an_open_store_as_the_path_is_refused_naming_what_is_accepted(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "p.db")
    try:
        with pytest.raises(ConfigError, match=r"postgresql:// URL.*store=") as exc:
            Palace(store, settings=Settings(embedder="hashing"))  # type: ignore[arg-type]
        assert "SQLiteStore" in str(exc.value)
        assert not any("SQLiteStore object" in p.name for p in Path.cwd().iterdir())
    finally:
        store.close()
