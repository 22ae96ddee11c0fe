"""A process's first load of a large SQLite palace (``warm_vectors.first_load``):
where the vectors file beside the palace matches it, the rows are read
without their float blobs and the file's rows are mapped (only rows written
since are read whole); a stale, damaged or untrusted file is not used, and
either way a recall answers exactly as a palace without the file does.
Thresholds are lowered so that small palaces are compact (no timing)."""

from __future__ import annotations

import json
import os
import random
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from tests.retrieval.test_compact import WORDS

from mindpalace import Palace
from mindpalace.config import Settings
from mindpalace.embed import HashingEmbedder
from mindpalace.models import Hit
from mindpalace.retrieval import dense, warm_cache, warm_vectors
from mindpalace.retrieval.dense import DenseIndex
from mindpalace.store.sqlite import SQLiteStore

QUERIES = [
    "kafka latency incident",
    "postgres migration rollback plan",
    "budget hiring roadmap",
    "the vault by the north door",
    "zebra quartz nebula",
]
LATE = "zebra quartz nebula, written after the vectors file"


@pytest.fixture(autouse=True)
def _small(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dense, "COMPACT_ROWS", 100)
    monkeypatch.setattr(warm_cache, "SAVE_ROWS", 100)


def _open(path: Path) -> Palace:
    return Palace(
        store=SQLiteStore(path),
        settings=Settings(signals=False, ann_rows=0, agent_id="alice"),
        embedder=HashingEmbedder(),
        agent_id="alice",
    )


def _file(path: Path) -> Path:
    return Path(str(path) + warm_cache.SUFFIX) / warm_cache.VECTORS


def _palace(tmp_path: Path, rows: int = 300) -> Path:
    """A palace of ``rows`` memories whose vectors file is saved (a second
    recall maps the vectors, writing the file first)."""
    path = tmp_path / "memories.db"
    rng = random.Random(5)
    with _open(path) as palace:
        palace.remember_many(
            [
                {
                    "content": " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 14))),
                    "visibility": rng.choice(["isolated", "shared"]),
                }
                for _ in range(rows)
            ]
        )
        palace.recall("warm up")
        palace.recall("warm up")
    assert _file(path).is_file()
    return path


def _hits(hits: list[Hit]) -> list[tuple[str, float]]:
    return [(h.memory.id, h.score) for h in hits]


def _first(path: Path) -> DenseIndex:
    """A fresh process's first load of ``path`` (what its first recall
    loads; a second would write a new file where none matches)."""
    with _open(path) as palace:
        index = palace.engine.semantic.dense()
        assert index is not None
        return index


def _answers(path: Path) -> list[list[tuple[str, float]]]:
    """Each query's hits from a process's first recall of ``path`` (the
    only one: the file beside it stays as it is)."""
    answers = []
    for query in QUERIES:
        with _open(path) as palace:
            answers.append(_hits(palace.recall(query, limit=8)))
    return answers


def _without_file(path: Path, tmp_path: Path) -> Path:
    """A copy of the palace with no warm folder beside it."""
    copy = tmp_path / "plain" / path.name
    copy.parent.mkdir()
    for suffix in ("", "-wal", "-shm"):
        if Path(str(path) + suffix).exists():
            shutil.copy2(Path(str(path) + suffix), Path(str(copy) + suffix))
    return copy


def _same(got: list[list[tuple[str, float]]], want: list[list[tuple[str, float]]]) -> None:
    assert [[i for i, _ in hits] for hits in got] == [[i for i, _ in hits] for hits in want]
    for hits, expected in zip(got, want, strict=True):
        assert [s for _, s in hits] == pytest.approx([s for _, s in expected], abs=1e-6)


def _mapped(index: DenseIndex) -> bool:
    assert index.compact is not None
    base = index.compact.parts[0]
    return all(isinstance(a, np.memmap) for a in (base.floats, base.codes, base.scales))


@pytest.mark.parametrize("later", [0, 20])
def test_the_first_load_maps_the_file_and_reads_no_float_of_its_rows(
    tmp_path: Path, later: int
) -> None:
    path = _palace(tmp_path)
    if later:
        with _open(path) as palace:
            palace.remember_many([{"content": f"{LATE} {n}"} for n in range(later)])
    written = _file(path).stat().st_mtime_ns
    index = _first(path)
    assert index.table.matrix.shape == (len(index), 0)  # no float blob in the rows read
    assert _mapped(index) and index.compact is not None
    parts = index.compact.parts
    assert len(parts[0]) == 300  # the file's rows, mapped
    assert sum(len(p) for p in parts[1:]) == later  # only the later rows read whole
    assert not any(isinstance(p.floats, np.memmap) for p in parts[1:])
    store = SQLiteStore(path)
    try:
        whole = store.load_vectors(index.model)
    finally:
        store.close()
    assert np.array_equal(index.compact.all_floats(), whole.matrix)
    assert np.array_equal(index.embedded, whole.embedded)
    answers = _answers(path)
    _same(answers, _answers(_without_file(path, tmp_path)))
    if later:
        assert LATE in _open_get(path, answers[-1][0][0])  # a later row is found
    assert _file(path).stat().st_mtime_ns == written  # mapped, not rewritten


def _open_get(path: Path, memory_id: str) -> str:
    with _open(path) as palace:
        return palace.get(memory_id).content


def test_the_second_recall_keeps_the_mapped_vectors(tmp_path: Path) -> None:
    path = _palace(tmp_path)
    with _open(path) as palace:
        first = palace.engine.semantic.dense()
        palace.recall(QUERIES[0])
        again = palace.engine.semantic.dense()
        assert first is not None and again is not None and _mapped(again)
        assert first.compact is not None and again.compact is not None
        assert again.compact.parts[0] is first.compact.parts[0]


def test_an_archive_keeps_the_file(tmp_path: Path) -> None:
    path = _palace(tmp_path)
    with _open(path) as palace:
        victim = palace.recall(QUERIES[1], limit=1)[0].memory.id
        palace.forget(victim)  # archived: a flag, read from the store; same rows
    assert _file(path).is_file()
    answers = _answers(path)
    assert victim not in [i for hits in answers for i, _ in hits]
    _same(answers, _answers(_without_file(path, tmp_path)))
    assert _mapped(_first(path))


def test_a_write_that_changes_rows_makes_the_file_stale(tmp_path: Path) -> None:
    path = _palace(tmp_path)
    with _open(path) as palace:
        store = palace.engine.store
        # what a delete or a re-embedding does to the counters: the epoch moves on
        with store._mutate(structural=True):  # type: ignore[attr-defined]
            pass
    assert _file(path).is_file()
    _same(_answers(path), _answers(_without_file(path, tmp_path)))
    assert not _mapped(_first(path))  # loaded as before: every float from the store


def test_an_erasure_is_never_undone_by_an_old_file(tmp_path: Path) -> None:
    path = _palace(tmp_path)
    _file(path).unlink()
    with _open(path) as palace:  # the file saved again, with the secret in it
        secret = palace.remember("Qxvaultword zebra quartz nebula secret")
        palace.recall("zebra quartz")
        palace.recall("zebra quartz")
    held = _file(path).read_bytes()  # a copy from before the erasure (a backup, say)
    assert json.loads(held[16 : 16 + int.from_bytes(held[8:16], "little")])["rows"] == 301
    with _open(path) as palace:
        palace.forget(secret.id, hard=True)
    assert not _file(path).exists()
    _file(path).write_bytes(held)
    os.chmod(_file(path), 0o600)
    with _open(path) as palace:
        assert secret.id not in [h.memory.id for h in palace.recall("zebra quartz nebula")]
    index = _first(path)
    assert not _mapped(index) and index.row_of(secret.id) is None


def _truncate(file: Path) -> None:
    os.truncate(file, file.stat().st_size // 2)


def _bad_magic(file: Path) -> None:
    data = bytearray(file.read_bytes())
    data[:8] = b"NOTVECS!"
    file.write_bytes(bytes(data))


def _bad_header(file: Path) -> None:
    data = bytearray(file.read_bytes())
    data[16:20] = b"{{{{"
    file.write_bytes(bytes(data))


def _other_fingerprint(file: Path) -> None:
    data = file.read_bytes()
    length = int.from_bytes(data[8:16], "little")
    meta = json.loads(data[16 : 16 + length])
    meta["fingerprint"] = "0" * len(meta["fingerprint"])
    header = json.dumps(meta).encode("utf-8")
    assert len(header) == length
    file.write_bytes(data[:16] + header + data[16 + length :])


def _writable_by_others(file: Path) -> None:
    file.chmod(0o660)  # group-writable: another user could have planted it


@pytest.mark.parametrize(
    "damage",
    [_truncate, _bad_magic, _bad_header, _other_fingerprint, _writable_by_others],
    ids=lambda f: f.__name__.strip("_"),
)
def test_a_damaged_or_untrusted_file_is_not_used(
    tmp_path: Path, damage: Callable[[Path], None]
) -> None:
    path = _palace(tmp_path)
    damage(_file(path))
    _same(_answers(path), _answers(_without_file(path, tmp_path)))
    index = _first(path)
    assert not _mapped(index)
    assert index.table.matrix.shape[1] == 0 and index.compact is not None  # compact, in memory


def test_a_palace_below_the_compact_size_loads_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _palace(tmp_path)
    monkeypatch.setattr(dense, "COMPACT_ROWS", 1_000)
    index = _first(path)
    assert index.compact is None and index.table.matrix.shape[1] > 0
    store = SQLiteStore(path)
    try:
        epoch = store.change_counters()[1]
        assert warm_vectors.first_load(store, index.model, epoch=epoch) is None
        monkeypatch.setattr(dense, "COMPACT_ROWS", 100)
        assert warm_vectors.first_load(store, index.model, epoch=epoch) is not None
        assert warm_vectors.first_load(store, index.model, epoch=epoch + 1) is None
        assert warm_vectors.first_load(store, "other/model/64", epoch=epoch) is None
    finally:
        store.close()
