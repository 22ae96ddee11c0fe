"""The rows' file beside a large SQLite palace (``warm_table``): a process's
first load takes the saved rows' columns from it and reads from the store
only the rows written since and the flags changed since, to the same table
as a full read; a file of another state of the palace, a damaged or
foreign one is not used; an erasure removes it. Thresholds are lowered so
that small palaces keep the files (no timing)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.retrieval.test_first_load import (
    _answers,
    _first,
    _open,
    _palace,
    _same,
    _without_file,
)

from mindpalace.retrieval import dense, warm_cache, warm_table
from mindpalace.store.sqlite import SQLiteStore
from mindpalace.store.vector_rows import CODED_COLUMNS, VectorTable


@pytest.fixture(autouse=True)
def _small(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dense, "COMPACT_ROWS", 100)
    monkeypatch.setattr(warm_cache, "SAVE_ROWS", 100)


def _table_file(path: Path) -> Path:
    return Path(str(path) + warm_cache.SUFFIX) / warm_cache.TABLE


def _columns(table: VectorTable) -> dict[str, list[Any]]:
    """Every column as plain values, codes as their names."""
    out: dict[str, list[Any]] = {
        column: getattr(table, column).tolist()
        for column in ("ids", "archived", "superseded", "created_at", "seq", "embedded", "length")
    }
    for column in CODED_COLUMNS:
        names = getattr(table, f"{column}_names")
        out[column] = [names[code] for code in getattr(table, column).tolist()]
    return out


def _fresh(path: Path, model: str) -> VectorTable:
    store = SQLiteStore(path)
    try:
        return store.load_vectors(model, floats=False)
    finally:
        store.close()


class _Reads:
    """The ``after_seq`` of every ``load_vectors`` a store is asked for."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.after: list[int] = []
        load = SQLiteStore.load_vectors

        def counted(store: SQLiteStore, model: str, **kwargs: Any) -> VectorTable:
            self.after.append(int(kwargs.get("after_seq", 0)))
            return load(store, model, **kwargs)

        monkeypatch.setattr(SQLiteStore, "load_vectors", counted)


def _read_whole(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A first load of ``path`` reads every row from the store (the file is
    not used), to the same table as a full read."""
    reads = _Reads(monkeypatch)
    index = _first(path)
    assert 0 in reads.after
    assert _columns(index.table) == _columns(_fresh(path, index.model))


def test_the_first_load_reads_only_the_rows_written_since(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _palace(tmp_path)
    assert _table_file(path).is_file()  # saved with the vectors
    with _open(path) as palace:
        # After the save: rows written, one archived, one replaced by an update.
        late = palace.remember_many([{"content": f"kafka zebra late note {n}"} for n in range(7)])
        first = palace.recall("kafka latency incident", limit=2)
        palace.forget(first[0].memory.id)
        palace.update(first[1].memory.id, content="kafka latency incident, now resolved")
    reads = _Reads(monkeypatch)
    index = _first(path)
    saved_rows = 300
    assert reads.after and min(reads.after) > 0  # no read from the first row
    assert len(index) == saved_rows + len(late) + 1
    assert _columns(index.table) == _columns(_fresh(path, index.model))
    monkeypatch.undo()
    _same(_answers(path), _answers(_without_file(path, tmp_path)))


def test_a_changed_palace_is_read_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _palace(tmp_path)
    with _open(path) as palace:
        store = palace.engine.store
        with store._mutate(structural=True):  # type: ignore[attr-defined]
            pass  # what a delete or a re-embedding does to the counters
    _read_whole(path, monkeypatch)


def test_another_palace_under_the_same_name_is_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _palace(tmp_path)
    (tmp_path / "other").mkdir()
    other = _palace(tmp_path / "other")
    folder = Path(str(path) + warm_cache.SUFFIX)
    shutil.copy2(_table_file(path), tmp_path / "kept.bin")
    path.unlink()
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    shutil.copy2(other, path)  # same counters, same row count: other ids
    shutil.copy2(tmp_path / "kept.bin", folder / warm_cache.TABLE)
    _read_whole(path, monkeypatch)


def _flip_byte(file: Path) -> None:
    """A byte of the saved write sequences changed (their checksum not)."""
    data = bytearray(file.read_bytes())
    length = int.from_bytes(data[8:16], "little")
    entry = json.loads(data[16 : 16 + length])["arrays"]["seq"]
    base = -(-(16 + length) // 64) * 64
    data[base + entry["offset"] + 8] ^= 0x01
    file.write_bytes(bytes(data))


def _truncate(file: Path) -> None:
    data = file.read_bytes()
    file.write_bytes(data[: len(data) // 2])


def _writable_by_others(file: Path) -> None:
    file.chmod(0o660)


@pytest.mark.parametrize("damage", [_flip_byte, _truncate, _writable_by_others])
def test_a_damaged_or_untrusted_file_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: Any
) -> None:
    path = _palace(tmp_path)
    damage(_table_file(path))
    _read_whole(path, monkeypatch)


def test_the_file_is_saved_again_once_it_lags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(warm_cache, "RESAVE_ROWS", 10)
    path = _palace(tmp_path)
    with _open(path) as palace:
        palace.remember_many([{"content": f"queue audit note {n}"} for n in range(12)])
        index = palace.engine.semantic.dense()
        assert index is not None and warm_table.stale(palace.engine.store, index)
    with _open(path) as palace:  # a process that recalls twice maps, then saves
        palace.recall("queue audit")
        palace.recall("queue audit")
        index = palace.engine.semantic.dense()
        assert index is not None and not warm_table.stale(palace.engine.store, index)
    reads = _Reads(monkeypatch)
    assert len(_first(path)) == 312
    assert min(reads.after) > 0


def test_an_erasure_removes_the_file(tmp_path: Path) -> None:
    path = _palace(tmp_path)
    with _open(path) as palace:
        victim = palace.recall("kafka latency incident", limit=1)[0].memory.id
        palace.forget(victim, hard=True)
    assert not _table_file(path).exists()
    index = _first(path)
    assert index.row_of(victim) is None
    assert _columns(index.table) == _columns(_fresh(path, index.model))
    assert np.array_equal(index.table.seq, _fresh(path, index.model).seq)
